// Seed: matrix add over Grid<2> with a parallel dimension on a megacore chip (v5p): each of the
// two TensorCores runs its own pipeline over one half (S44), against shared HBM.
#include <ptpu/ptpu.hpp>

#include <iostream>

using namespace ptpu;

using M = Array<float, 1024, 1024>;
using Half = BlockSpec<Block<512, 1024>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<2>, Semantics<parallel>, Chip<tpu::v5p>, In<Arg<M, Half>, Arg<M, Half>>,
                        Out<Arg<M, Half>>>;

// The schedule is a constant: 2 fetches of each input and 2 write-backs, one step per core.
static_assert(Add::dma_count() == 6);
static_assert(Add::info.cores == 2 && Add::info.core_end[0] == 1);

int main() {
    host_array<M> x, y;
    for (std::size_t i = 0; i < x.size(); ++i) {
        x.vector()[i] = static_cast<float>(i % 4096);
        y.vector()[i] = 1.0f - static_cast<float>(i % 17);
    }
    auto [z, rep] = Add{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);
    for (std::size_t i = 0; i < z.size(); ++i)
        if (z.vector()[i] != x.vector()[i] + y.vector()[i]) {
            std::cerr << "mismatch at " << i << "\n";
            return 1;
        }
    std::cout << "megacore_add: ok; core 0 ran " << rep.stats.core_steps[0] << " step, core 1 ran "
              << rep.stats.core_steps[1] << " step; " << rep.stats.bytes_in + rep.stats.bytes_out
              << " bytes moved\n";
    return 0;
}
