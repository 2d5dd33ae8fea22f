#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <iostream>
#include <numeric>

using namespace ptpu;

using X = Array<float, 1024, 512>;                                         // an HBM operand
using Blk = BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>;  // VMEM, Buffered<2>
using Add = pallas_call<Grid<4>, In<Arg<X, Blk, "x">, Arg<X, Blk, "y">>, Out<Arg<X, Blk, "z">>, Chip<tpu::v5e>>;

static_assert(Add::dma_count() == 12);                     // the schedule is a constant
static_assert(Add::info.vmem_bytes == 6 * 256 * 512 * 4);  // 3 operands x 2 slots

int main() {
    host_array<X> x, y;                   // zero-initialized, row-major
    std::iota(x.begin(), x.end(), 0.0f);  // x(i, j) = 512 i + j
    std::ranges::fill(y, 1.0f);

    auto [z, report] = Add{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);

    std::cout << report;  // predicted time, where it went, roofline
    return std::ranges::equal(z, x, [](float s, float a) { return s == a + 1.0f; }) ? 0 : 1;
}
