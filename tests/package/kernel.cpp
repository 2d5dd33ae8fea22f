// The program of the package tests' consumer projects (main.cpp there): a project outside ptpu's
// tree that runs a kernel. Each way of getting ptpu (installed package, add_subdirectory,
// FetchContent, a plain compiler command) builds it against ptpu::runtime or its equivalent, so
// it says whether PTPU_SEPARATE_RUNTIME reached it.
#include <ptpu/ptpu.hpp>

#include <iostream>

using namespace ptpu;

static_assert(tpu::v5e.megacore == false && tpu::v5p.megacore);

using X = Array<float, 64, 128>;
using Blk = BlockSpec<Block<16, 128>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<4>, In<Arg<X, Blk, "x">, Arg<X, Blk, "y">>, Out<Arg<X, Blk, "z">>, Chip<tpu::v5e>>;

#ifdef PTPU_SEPARATE_RUNTIME
constexpr const char* way = "consumer with the compiled runtime";
#else
constexpr const char* way = "consumer, header-only";
#endif

int main() {
    host_array<X> x, y;
    for (long i = 0; i < 64; ++i)
        for (long j = 0; j < 128; ++j) {
            x(i, j) = static_cast<float>(i * 128 + j);
            y(i, j) = 1.0f;
        }
    auto [z, report] = Add{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);
    for (long i = 0; i < 64; ++i)
        for (long j = 0; j < 128; ++j)
            if (z(i, j) != x(i, j) + 1.0f) return 1;
    if (!(report.device_time > 0)) return 2;
    std::cout << way << ": ok (" << tpu::v5e.name << ", " << report.device_time * 1e6 << " us)\n";
    return 0;
}
