// Compile-fail cases of emit_pipeline: a static inner schedule breaking a rule gives that rule's
// message; a wrong number of refs; the memory spaces of S56 (check 29): a VMEM source is aliased
// when the spec is in VMEM too (the ok twin), but an HBM spec over it, a spec in ANY, a copy
// between VMEM and SMEM, and Element padding on an aliased operand (30) do not compile; nor do a
// prefetched input (S55) without allocations to hold its prefilled slots (28), prefetched_count
// in a pallas_call (19), and a prefetched_count not below the buffer count (28). The static
// schedule (emit_pipeline_schedule) checks the same spaces against a source stated with
// Source<space, X>: an HBM spec over a VMEM source (29), an SMEM source under a VMEM spec (M1).
// The entry kinds of a run-time pipeline's index maps are read from idx(...)'s type: an integer on
// a bounded_slice dim is check 4, a ds on a blocked dim check 5, both at compile time (a map
// declared to return a plain index_tuple is left to the run-time check, the ok twin). A static
// schedule over a zero inner grid dim is 25 in emit_pipeline's words. The buffer counts of the
// specs are checked at compile time too: no buffer (27), three output buffers (27), lookahead on
// an output (27), nine input buffers (BUF1), one buffer with lookahead (Q1).
//! ko 1 S34
//! ko 2 ARG1
//! ko 3 29
//! ko 4 29
//! ko 5 M1 source SMEM, spec VMEM. give the spec
//! ko 6 30
//! ko 7 28
//! ko 8 19
//! ko 9 28
//! ko 10 29
//! ko 11 M1
//! ko 12 4
//! ko 13 5
//! ko 14 25
//! ko 15 27 input 0: Buffered<0>
//! ko 16 27 output 0: Buffered<3>
//! ko 17 27 output 0
//! ko 18 BUF1 input 0: Buffered<9>
//! ko 19 Q1 input 0
#include <ptpu/ptpu.hpp>

using namespace ptpu;

using X = Array<float, 32, 128>;
using Rows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
using Past = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i + 4, 0); }>;
using HbmRows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, hbm>;
using AnyRows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, any>;
using PadRows = BlockSpec<Block<element{8, 1, 1}, 128>, [](index_t i) { return idx(8 * i, 0); }>;

using Slices = BlockSpec<Block<bounded_slice{8}, 128>, [](index_t i) { return idx(ds(8 * i, 8), 0); }>;
using ScalarOnSlice = BlockSpec<Block<bounded_slice{8}, 128>, [](index_t i) { return idx(8 * i, 0); }>;
using SliceOnBlocked = BlockSpec<Block<8, 128>, [](index_t i) { return idx(ds(8 * i, 8), 0); }>;
using Untyped = BlockSpec<Block<bounded_slice{8}, 128>, [](index_t i) -> index_tuple<2> { return idx(8 * i, 0); }>;

using PfRows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<2, false, 1>>;
using Pf2Rows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<2, false, 2>>;
template <class Mode>
using Buf = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Mode>;

#if !defined(PTPU_KO)
static_assert(emit_pipeline_schedule<Grid<4>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>>::dma_count() == 8);
static_assert(emit_pipeline_schedule<Grid<4>, In<Arg<X, PfRows>>, Out<Arg<X, Rows>>>::dma_count() == 7);
static_assert(emit_pipeline_schedule<Grid<4>, In<Arg<Source<vmem, X>, Rows>>, Out<Arg<X, Rows>>>::dma_count() == 4);
#elif PTPU_KO == 10
constexpr std::size_t n = emit_pipeline_schedule<Grid<4>, In<Arg<Source<vmem, X>, HbmRows>>, Out<Arg<X, Rows>>>::info.events;
#elif PTPU_KO == 11
constexpr std::size_t n = emit_pipeline_schedule<Grid<4>, In<Arg<Source<smem, X>, Rows>>, Out<Arg<X, Rows>>>::info.events;
#elif PTPU_KO == 8
using K = pallas_call<Grid<4>, In<Arg<X, PfRows>>, Out<Arg<X, Rows>>>;
static_assert(K::valid || true);  // instantiates the checks: 19 reports itself
#elif PTPU_KO == 9
constexpr std::size_t n = emit_pipeline_schedule<Grid<4>, In<Arg<X, Pf2Rows>>, Out<Arg<X, Rows>>>::info.events;
#elif PTPU_KO == 1
constexpr std::size_t n = emit_pipeline_schedule<Grid<4>, In<Arg<X, Past>>, Out<Arg<X, Rows>>>::info.events;  // S34
#elif PTPU_KO == 14  // a zero inner grid dim: 25, as emit_pipeline's own message
constexpr std::size_t n = emit_pipeline_schedule<Grid<0>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>>::info.events;
#endif

void body([[maybe_unused]] ref<float, any, 2> x, [[maybe_unused]] ref<float, any, 2> o,
          [[maybe_unused]] ref<float, vmem, 2> v, [[maybe_unused]] ref<float, smem, 2> s) {
    [[maybe_unused]] auto pipe =
        emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>, out_specs<Rows>);
#if !defined(PTPU_KO)
    pipe(x, o);
    pipe(v, o);  // S56: a VMEM source under a VMEM spec is aliased, not copied
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Slices>, out_specs<Rows>)(x, o);
    if (o.shape()[0] < 0)  // compiled, never run: its check 4 is the planner's, at run time
        emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Untyped>, out_specs<Rows>)(x, o);
    // The ok twin of 15-19: deep input buffering with lookahead, two output buffers.
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Buf<Buffered<8, true>>>,
                  out_specs<Buf<Buffered<2>>>)(x, o);
#elif PTPU_KO == 2
    pipe(x);  // ARG1: one ref per spec
#elif PTPU_KO == 3
    emit_pipeline([](auto, auto out) { store(out, zeros<float>(c<8>, c<128>)); }, {4}, in_specs<HbmRows>,
                  out_specs<Rows>)(v, o);  // 29: an HBM spec over a VMEM source
#elif PTPU_KO == 4
    emit_pipeline([](auto, auto out) { store(out, zeros<float>(c<8>, c<128>)); }, {4}, in_specs<AnyRows>,
                  out_specs<Rows>)(x, o);  // 29: a buffer in ANY
#elif PTPU_KO == 5
    pipe(s, o);  // M1: SMEM into a VMEM window is no DMA path
#elif PTPU_KO == 6
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<PadRows>, out_specs<Rows>)(v, o);
#elif PTPU_KO == 7
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<PfRows>, out_specs<Rows>)(x, o);
#elif PTPU_KO == 12
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<ScalarOnSlice>, out_specs<Rows>)(x, o);
#elif PTPU_KO == 13
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>, out_specs<SliceOnBlocked>)(x, o);
#elif PTPU_KO == 15
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Buf<Buffered<0>>>, out_specs<Rows>)(x, o);
#elif PTPU_KO == 16
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>, out_specs<Buf<Buffered<3>>>)(x, o);
#elif PTPU_KO == 17
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>,
                  out_specs<Buf<Buffered<2, true>>>)(x, o);
#elif PTPU_KO == 18
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Buf<Buffered<9>>>, out_specs<Rows>)(x, o);
#elif PTPU_KO == 19
    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Buf<Buffered<1, true>>>,
                  out_specs<Rows>)(x, o);
#endif
}

int main() {}
