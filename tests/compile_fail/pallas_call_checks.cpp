// Every compile-time check of a pallas_call (docs/rules.md: 1–5, 7, 10–21, 24, 25, and
// S34, S39, S44, MC1, SMEM1, V3): each variant must fail with its rule id, and the file as it is must
// compile (the ok twin).
//! ko 1 1
//! ko 2 2
//! ko 3 2
//! ko 4 3
//! ko 5 4
//! ko 6 5
//! ko 7 7 unsupported block dimension type. input 0, dim 0. allowed are
//! ko 8 10
//! ko 9 11
//! ko 10 12
//! ko 11 13
//! ko 12 14
//! ko 13 15 input 0, dim 0: block 4, array dim 32. pick
//! ko 14 16
//! ko 15 17
//! ko 16 18
//! ko 17 18
//! ko 18 19
//! ko 19 19
//! ko 20 19
//! ko 21 20
//! ko 22 S3
//! ko 23 S4
//! ko 24 24 input 0: 2 x 16777216 bytes . VMEM scratch: 0 bytes = 33554432 bytes > limit 16777216. use smaller blocks
//! ko 25 25
//! ko 26 S34 input 0, dim 0: block .4, 0. at iteration .3.. make the index map
//! ko 27 S39 output 0: block .0, 0. revisited in iteration .1, 0, 0. after iterations
//! ko 28 S39
//! ko 29 S44
//! ko 30 MC1
//! ko 31 SMEM1
//! ko 32 S5 semaphore. scratch 0. HBM/ANY scratch
//! ko 33 29
//! ko 34 11 input 0 and output 0: the shapes differ at dim 0 .32 vs 64.. alias an input
//! ko 35 ARG1 2 arguments given, the call takes 0 scalar-prefetch and 1 input
//! ko 36 PRED1
//! ko 37 24
//! ko 38 16
//! ko 39 ARG1
//! ko 40 V3
//! ko 41 V3
#include <ptpu/ptpu.hpp>

using namespace ptpu;

using X = Array<float, 32, 128>;
constexpr auto row = [](auto i) { return idx(i, 0); };
using Blk = BlockSpec<Block<8, 128>, row>;
[[maybe_unused]] constexpr auto copy = [](auto a, auto b) { store(b, load(a)); };

#if !defined(PTPU_KO)
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 1   // block rank 1 on a rank-2 array
using K =
    pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<128>, [](auto i) { return idx(i); }>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 2   // the index map returns one entry for a rank-2 block
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return idx(i); }>>>,
                      Out<Arg<X, Blk>>>;
#elif PTPU_KO == 3   // the index map takes two grid indices on a rank-1 grid
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j); }>>>,
                      Out<Arg<X, Blk>>>;
#elif PTPU_KO == 4   // the index map returns an int, not idx(...)
using K =
    pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return i; }>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 5   // a bounded_slice dim needs ds(start, size)
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<bounded_slice{8}, 128>, row>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 6   // a blocked dim given a ds slice
using K =
    pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return idx(ds(i * 8, 8), 0); }>>>,
                Out<Arg<X, Blk>>>;
#elif PTPU_KO == 7   // a block dimension of an unsupported type (bool)
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<true, 128>, row>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 8   // Grid given twice
using K = pallas_call<Grid<4>, Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 9   // an alias to an output that does not exist
using K = pallas_call<Grid<4>, Alias<0, 3>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 10  // the body returns a value
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
void run() {
    (void)K{}([](auto, auto) { return 1; }, host_array<X>{});
}
#elif PTPU_KO == 11  // a rank-0 block
using K = pallas_call<Grid<4>, In<Arg<Array<float>, BlockSpec<>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 12  // an any operand with a window
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, any>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 13  // (4, 128) blocks break the (8, 128) tiling
using K = pallas_call<Grid<8>, In<Arg<X, BlockSpec<Block<4, 128>, row>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 14  // a rank-1 block of 100
using V = Array<float, 1000>;
using K = pallas_call<Grid<10>, In<Arg<V, BlockSpec<Block<100>, [](auto i) { return idx(i); }>>>>;
#elif PTPU_KO == 15  // a grid-free call with a real window
using K = pallas_call<Grid<>, In<Arg<X, BlockSpec<Block<8, 128>, []() { return idx(1, 0); }>>>>;
#elif PTPU_KO == 16  // BoundedSlice is emit_pipeline-only
using K = pallas_call<
    Grid<4>, In<Arg<X, BlockSpec<Block<bounded_slice{8}, 128>, [](auto i) { return idx(ds(i * 8, 8), 0); }>>>,
    Out<Arg<X, Blk>>>;
#elif PTPU_KO == 17  // element and blocked dims mixed
using K =
    pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<element{8}, 128>, [](auto i) { return idx(i * 8, 0); }>>>,
                Out<Arg<X, Blk>>>;
#elif PTPU_KO == 18  // three buffers
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, Buffered<3>>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 19  // lookahead at the top level
using K =
    pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, Buffered<2, true>>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 20  // revisit_any with double buffering
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, BlockSpec<Block<8, 128>, row, revisit_any>>>>;
#elif PTPU_KO == 21  // one semantics value for a rank-2 grid
using K = pallas_call<Grid<4, 1>, Semantics<parallel>,
                      In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, auto) { return idx(i, 0); }>>>>;
#elif PTPU_KO == 22  // loading an ANY ref in the body
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Full, zero_map, any>>>, Out<Arg<X, Blk>>>;
void run() {
    (void)K{}([](auto a, auto b) { store(b, load(a)); }, host_array<X>{});
}
#elif PTPU_KO == 23  // a vector load from an SMEM window
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, smem>>>, Out<Arg<X, Blk>>>;
void run() {
    (void)K{}(copy, host_array<X>{});
}
#elif PTPU_KO == 24  // 2 × 16 MiB windows on v5e's 16 MiB scoped VMEM
using Big = Array<float, 4096, 2048>;
using K = pallas_call<Grid<2>, In<Arg<Big, BlockSpec<Block<2048, 2048>, row>>>>;
#elif PTPU_KO == 25  // a zero grid dimension
using K = pallas_call<Grid<0>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 26  // block 4 of a 4-block array
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return idx(i + 1, 0); }>>>,
                      Out<Arg<X, Blk>>>;
#elif PTPU_KO == 27  // A5's incorrect reduction: out (j, k) revisited across i
using K = pallas_call<
    Grid<8, 4, 4>,
    In<Arg<Array<float, 8, 1024, 1024>,
           BlockSpec<Block<squeezed, 256, 256>, [](auto i, auto j, auto k) { return idx(i, j, k); }>>>,
    Out<Arg<Array<float, 1024, 1024>,
            BlockSpec<Block<256, 256>, [](auto, auto j, auto k) { return idx(j, k); }>>>>;
#elif PTPU_KO == 28  // A6: out1 (j/2, i%2) revisits block (0, 0) at iteration (2, 0)
using K = pallas_call<
    Grid<4, 4>,
    Out<Arg<Array<float, 32, 256>, BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j / 2); }>>,
        Arg<Array<float, 16, 256>,
            BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(j / 2, i % 2); }>>>>;
#elif PTPU_KO == 29  // parallel after arbitrary
using K = pallas_call<Grid<4, 1>, Semantics<arbitrary, parallel>,
                      In<Arg<X, BlockSpec<Block<8, 128>, [](auto i, auto) { return idx(i, 0); }>>>>;
#elif PTPU_KO == 30  // both cores of a v5p write block 0
using K =
    pallas_call<Grid<2>, Semantics<parallel>, Chip<tpu::v5p>, In<Arg<X, Blk>>,
                Out<Arg<Array<float, 8, 128>, BlockSpec<Block<8, 128>, [](auto) { return idx(0, 0); }>>>>;
#elif PTPU_KO == 31  // 1.2 MB of SMEM scratch
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<smem, std::int32_t, 300000>>;
#elif PTPU_KO == 32  // HBM scratch
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<hbm, float, 8, 128>>;
#elif PTPU_KO == 33  // a block buffer in a space that cannot hold one
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, vmem_shared>>>, Out<Arg<X, Blk>>>;
#elif PTPU_KO == 34  // an alias between operands of different shapes
using K = pallas_call<Grid<4>, Alias<0, 0>, In<Arg<X, Blk>>, Out<Arg<Array<float, 64, 128>, Blk>>>;
#elif PTPU_KO == 35  // one input too many
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
void run() {
    (void)K{}(copy, host_array<X>{}, host_array<X>{});
}
#elif PTPU_KO == 36  // predict() cannot stand in for SMEM data
using K = pallas_call<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, row, smem>>>, Out<Arg<X, Blk>>>;
void run() {
    (void)K{}.predict([](auto, auto) {});
}
#elif PTPU_KO == 37  // bool blocks take 4 bytes each in VMEM: 2 x 1 MiB over a 1.5 MiB limit
using K = pallas_call<Grid<4>, VmemLimit<3 << 19>,
                      In<Arg<Array<bool, 1024, 1024>, BlockSpec<Block<256, 1024>, row>>>>;
#elif PTPU_KO == 38  // a rank-1 bool block of 64 (bool counts as 32-bit: at least 128)
using V = Array<bool, 1024>;
using K = pallas_call<Grid<16>, In<Arg<V, BlockSpec<Block<64>, [](auto i) { return idx(i); }>>>>;
#elif PTPU_KO == 39  // into() with an owning output buffer held by value: the results would be lost
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>>;
void run() {
    std::vector<float> z(32 * 128);
    (void)K{}.into(std::tuple{z}, copy, host_array<X>{});
}
#elif PTPU_KO == 40  // a static grid of 2^66 steps
using K = pallas_call<Grid<1 << 22, 1 << 22, 1 << 22>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto, auto, auto) {
                                                          return idx(0, 0);
                                                      }>>>>;
#elif PTPU_KO == 41  // a scratch buffer of 2^64 bytes
using K = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Scratch<vmem, float, index_t{1} << 31, index_t{1} << 31>>;
#endif

static_assert(K::valid || true);  // instantiates the checks; a broken rule reports itself

int main() {}
