// The static test binary: every file in tests/static is a set of static_asserts; this is its main.
int main() {
    return 0;
}
