// The program of the package tests' consumers that ask for the sweep (main.cpp there): a kernel
// run at each block height of a compile-time space (Boost.Hana), and a run-time space filtered
// by a predicate, against ptpu::runtime and ptpu::sweep.
#include <ptpu/ptpu.hpp>
#include <ptpu/sweep/space.hpp>
#include <ptpu/sweep/static_space.hpp>

#include <iostream>

using namespace ptpu;

using X = Array<float, 64, 128>;
constexpr auto row = [](auto i) { return idx(i, 0); };

template <class Rows>  // z = x + y through blocks of Rows::value rows
struct add {
    using Blk = BlockSpec<Block<Rows::value, 128>, row>;
    using call = pallas_call<Grid<64 / Rows::value>, In<Arg<X, Blk, "x">, Arg<X, Blk, "y">>, Out<Arg<X, Blk, "z">>,
                             Chip<tpu::v5e>>;
};

int main() {
    host_array<X> x, y;
    for (long i = 0; i < 64; ++i)
        for (long j = 0; j < 128; ++j) {
            x(i, j) = static_cast<float>(i * 128 + j);
            y(i, j) = 1.0f;
        }
    constexpr auto heights = sweep::product(sweep::values<8, 32>);
    static_assert(sweep::size(heights) == 2);
    int ran = 0;
    sweep::for_each<add>(heights, [&](auto t) {
        using K = typename decltype(t)::type;
        auto [z, report] = typename K::call{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);
        bool same = report.device_time > 0;
        for (long i = 0; i < 64; ++i)
            for (long j = 0; j < 128; ++j) same = same && z(i, j) == x(i, j) + 1.0f;
        ran += same ? 1 : 0;
    });
    const sweep::space<int, int> r{{1, 2, 3}, {10, 20}};
    int kept = 0;
    for ([[maybe_unused]] const auto& p : r.where([](int a, int b) { return a * b > 20; })) ++kept;
    if (ran != 2 || kept != 3) return 1;
#ifdef PTPU_SEPARATE_RUNTIME
    std::cout << "consumer sweep with the compiled runtime: ok (2 kernels)\n";
#else
    std::cout << "consumer sweep, header-only: ok (2 kernels)\n";
#endif
    return 0;
}
