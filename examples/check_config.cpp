// Asking whether a configuration is valid without failing the build: check_call gives the rule
// a pallas_call would report, valid_call is the same as a concept.
#include <ptpu/ptpu.hpp>

#include <iostream>

using namespace ptpu;

using X = Array<float, 4096, 2048>;
constexpr auto row = [](auto i) { return idx(i, 0); };
template <index_t R>  // a copy through row blocks of R on v5e (16 MiB of scoped VMEM)
using Copy = pallas_call<Grid<4096 / R>, Chip<tpu::v5e>, In<Arg<X, BlockSpec<Block<R, 2048>, row>>>,
                         Out<Arg<X, BlockSpec<Block<R, 2048>, row>>>>;

static_assert(valid_call<Copy<256>>);
static_assert(check_call<Copy<4>>().rule() == "15");     // (8, 128) tiling; Copy<4>{} would not compile
static_assert(check_call<Copy<1024>>().rule() == "24");  // 2 x 2 windows of 8 MiB > 16 MiB

// A constrained front end: invalid configurations are a substitution failure, never an error.
template <class Call>
    requires valid_call<Call>
report copy_time() {
    return Call{}.predict([](auto x, auto y) { store(y, load(x)); });
}
template <class Call>
concept timeable = requires { copy_time<Call>(); };
static_assert(timeable<Copy<512>> && !timeable<Copy<1024>>);

template <index_t R>
void show() {
    if constexpr (constexpr verdict v = check_call<Copy<R>>(); v.ok())
        std::cout << R << " rows: " << copy_time<Copy<R>>().device_time * 1e6 << " us\n";
    else
        std::cout << R << " rows: " << v.message() << "\n";
}

int main() {
    show<4>();
    show<64>();
    show<512>();
    show<1024>();
}
