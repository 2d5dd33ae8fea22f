// The five mistakes a newcomer to Pallas TPU makes first, each as ptpu reports it. Beyond the
// rule id, the regex after each ko line pins the first line of g++'s error: it names the operand
// by its Arg name ("weights", "out"), says what is wrong with it (the dim and the values, the
// spaces, the cores, the bytes) and gives the fix. The file as it is compiles (the ok twin): the
// same kernel written right.
//! ko 1 M1 from .weights. .SMEM. to VMEM. copy between HBM/ANY and VMEM/SMEM
//! ko 2 15 input .weights., dim 1: block 100, array dim 512. pick .8k, 128m. blocks
//! ko 3 S4 .weights. is in SMEM. read s.i. one scalar at a time, or keep vector data in VMEM
//! ko 4 MC1 output .out.: block .0, 0. is written by core 0 .* and by core 1 .*include every parallel grid index
//! ko 5 24 input .weights.: 2 x 16777216 bytes .* limit 16777216. use smaller blocks
#include <ptpu/ptpu.hpp>

using namespace ptpu;

using X = Array<float, 256, 512>;
constexpr auto rows = [](auto i) { return idx(i, 0); };
using Rows = BlockSpec<Block<8, 512>, rows>;
using SmemRows = BlockSpec<Block<8, 512>, rows, smem>;

#if !defined(PTPU_KO) || PTPU_KO == 1 || PTPU_KO == 3
// The weights' block is read scalar by scalar from SMEM (a per-row scale), the input x in VMEM.
using K = pallas_call<Grid<32>, Chip<tpu::v5e>, In<Arg<X, Rows, "x">, Arg<X, SmemRows, "weights">>,
                      Out<Arg<X, Rows, "out">>, Scratch<vmem, float, 8, 512>>;

void run() {
    host_array<X> x, w;
    (void)K{}(
        [](auto xs, auto weights, auto out, auto buf) {
#if PTPU_KO == 1
            // (a) a DMA between spaces with no DMA path: SMEM is not copied into VMEM
            sync_copy(weights, buf);
            store(out, load(xs) * load(buf));
#elif PTPU_KO == 3
            // (c) a vector load of an SMEM ref: SMEM holds scalars
            store(out, load(xs) * load(weights));
#else
            store(buf, load(xs) * weights(0, 0));
            store(out, load(buf));
#endif
        },
        x, w);
}
#elif PTPU_KO == 2
// (b) a block that breaks TPU tiling: its last dim is neither a multiple of 128 nor the array's
using K = pallas_call<Grid<32>, Chip<tpu::v5e>,
                      In<Arg<X, BlockSpec<Block<8, 100>, rows>, "weights">>, Out<Arg<X, Rows, "out">>>;
static_assert(K::valid || true);
#elif PTPU_KO == 4
// (d) a megacore output race: on v5p the parallel grid dim is split over both TensorCores, and
// the output's index map ignores it, so both cores write block (0, 0)
using Sum = Array<float, 8, 512>;
using K = pallas_call<Grid<32>, Semantics<parallel>, Chip<tpu::v5p>, In<Arg<X, Rows, "x">>,
                      Out<Arg<Sum, BlockSpec<Block<8, 512>, [](auto) { return idx(0, 0); }>, "out">>>;
static_assert(K::valid || true);
#elif PTPU_KO == 5
// (e) VMEM overflow on the chosen chip: two buffers of a 16 MiB block over v5e's 16 MiB scoped
// VMEM limit
using Big = Array<float, 4096, 2048>;
using K = pallas_call<Grid<2>, Chip<tpu::v5e>, In<Arg<Big, BlockSpec<Block<2048, 2048>, rows>, "weights">>,
                      Out<Arg<X, BlockSpec<Block<128, 512>, rows>, "out">>>;
static_assert(K::valid || true);
#endif

int main() {}
