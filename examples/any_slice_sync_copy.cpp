// Seed: an input left in ANY (HBM) memory, sliced into a VMEM scratch buffer with sync_copy.
// The pipeline copies nothing for an ANY operand (S47): the body moves exactly what it needs.
#include <ptpu/ptpu.hpp>

#include <iostream>

using namespace ptpu;

using X = Array<float, 64, 256>;
using Call = pallas_call<Grid<8>, In<Arg<X, BlockSpec<Full, zero_map, any>>>,
                         Out<Arg<X, BlockSpec<Block<8, 256>, [](auto i) { return idx(i, 0); }>>>,
                         Scratch<vmem, float, 8, 256>, Chip<tpu::v5e>>;

int main() {
    host_array<X> x;
    for (std::size_t i = 0; i < x.size(); ++i) x.vector()[i] = static_cast<float>(i % 1000) * 0.5f;

    auto [y, rep] = Call{}(
        [](auto x_any, auto y_blk, auto buf) {
            // Copy rows [8i, 8i+8) of the HBM array into VMEM, then compute on the VMEM copy.
            sync_copy(x_any.at(ds(program_id(0) * 8, 8), ds(0, 256)), buf);
            store(y_blk, load(buf) * 3.0f + 1.0f);
        },
        x);

    for (std::size_t i = 0; i < x.size(); ++i)
        if (y.vector()[i] != x.vector()[i] * 3.0f + 1.0f) {
            std::cerr << "mismatch at " << i << "\n";
            return 1;
        }
    std::cout << "any_slice_sync_copy: ok; the body issued " << rep.stats.body_dmas << " sync_copy DMAs ("
              << rep.stats.body_dma_bytes << " bytes), the pipeline " << rep.stats.dma_in << " fetches and "
              << rep.stats.dma_out << " write-backs\n";
    return 0;
}
