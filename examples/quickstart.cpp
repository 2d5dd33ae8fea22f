// The README's first example, verbatim: a double-buffered add, checked at compile time, run on
// real data, timed on a v5e.
#include <ptpu/ptpu.hpp>

#include <iostream>

using namespace ptpu;

using X = Array<float, 1024, 512>;                                         // an HBM operand
using Blk = BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>;  // VMEM, Buffered<2>
using Add = pallas_call<Grid<4>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

static_assert(Add::dma_count() == 12);                     // the schedule is a constant
static_assert(Add::info.vmem_bytes == 6 * 256 * 512 * 4);  // 3 operands x 2 slots

int main() {
    host_array<X> x, y;
    for (std::size_t i = 0; i < x.size(); ++i) x.vector()[i] = y.vector()[i] = static_cast<float>(i);

    auto [z, report] = Add{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);

    std::cout << report;  // predicted time, where it went, roofline
    for (std::size_t i = 0; i < z.size(); ++i)
        if (z.vector()[i] != 2.0f * static_cast<float>(i)) return 1;
    return 0;
}
