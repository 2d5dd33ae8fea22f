# Sourced by tools/demo and tools/test: installs the Debian packages ptpu needs, when missing.
# Says what it installs; uses sudo when not root.
ptpu_packages=(git cmake ninja-build g++ clang libgtest-dev libgmock-dev libbenchmark-dev
               libboost-dev libeigen3-dev nlohmann-json3-dev)
# Only the tests need these (tools/test passes them): chromium opens the demo's HTML report in a
# real, headless browser (examples/CMakeLists.txt, example.demo.html_in_browser).
ptpu_test_packages=(chromium)

# ptpu_install_deps [EXTRA_PACKAGE...]: ptpu_packages and the extra ones.
ptpu_install_deps() {
    local missing=() p
    for p in "${ptpu_packages[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        echo "ptpu: all needed Debian packages are installed"
        return 0
    fi
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "ptpu: installing missing Debian packages: ${missing[*]}"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
}
