// Timing-only runs (predict) of a configuration given at run time (dynamic_call) against the equal
// static pallas_call, side by side: the quickstart add (4 steps: the per-call cost of describing
// and planning dominates), a 3-axis matmul (16384 steps) and a 2^20-step add (the planner's grid
// walk and the runner dominate). Items are grid steps; docs/performance.md reports dynamic / static
// times.
#include <benchmark/benchmark.h>

#include <ptpu/ptpu.hpp>

using namespace ptpu;

namespace {
using F2 = Operand<float, 2>;
using DynAdd = dynamic_call<In<F2, F2>, Out<F2>>;
constexpr work add_work{.vreg_cheap = 1, .vector_loads = 2, .vector_stores = 1};
constexpr auto add_body = [](auto a, auto b, auto c) { store(c, load(a) + load(b)); };

DynAdd dyn_add(index_t rows, index_t cols, index_t block_rows) {
    DynAdd d{.grid = {rows / block_rows}, .chip = tpu::v5e, .options = {.per_step = per_step_rows::never}};
    d.in[0] = {.shape = {rows, cols}, .block = {block_rows, cols}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.in[1] = d.out[0] = d.in[0];
    return d;
}

// examples/quickstart.cpp's call.
using X = Array<float, 1024, 512>;
using Blk = BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<4>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

void BM_QuickstartStatic(benchmark::State& st) {
    const Add call{{.per_step = per_step_rows::never}};
    for (auto _ : st) benchmark::DoNotOptimize(call.predict(add_body).device_time);
    st.SetItemsProcessed(st.iterations() * 4);
}
void BM_QuickstartDynamic(benchmark::State& st) {
    const DynAdd call = dyn_add(1024, 512, 256);
    for (auto _ : st) benchmark::DoNotOptimize(call.predict(add_body).device_time);
    st.SetItemsProcessed(st.iterations() * 4);
}

// A (32, 32, 16) grid of (128, 128) f32 blocks with a reduction axis.
using A = Array<float, 32 * 128, 16 * 128>;
using B = Array<float, 16 * 128, 32 * 128>;
using O = Array<float, 32 * 128, 32 * 128>;
using Matmul =
    pallas_call<Grid<32, 32, 16>, Semantics<parallel, parallel, arbitrary>,
                In<Arg<A, BlockSpec<Block<128, 128>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<B, BlockSpec<Block<128, 128>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<O, BlockSpec<Block<128, 128>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Chip<tpu::v5e>>;
constexpr auto matmul_body = [](auto x, auto w, auto o) {
    when(program_id(2) == 0, [&] { store(o, zeros<float>(128, 128)); });
    store(o, load(o) + dot(load(x), load(w)));
};

void BM_MatmulStatic(benchmark::State& st) {
    const Matmul call{{.per_step = per_step_rows::never}};
    for (auto _ : st) benchmark::DoNotOptimize(call.predict(matmul_body).device_time);
    st.SetItemsProcessed(st.iterations() * Matmul::desc.steps());
}
void BM_MatmulDynamic(benchmark::State& st) {
    using DynMatmul = dynamic_call<In<F2, F2>, Out<F2>>;
    DynMatmul call{.grid = {32, 32, 16},
                   .semantics = {parallel, parallel, arbitrary},
                   .chip = tpu::v5e,
                   .options = {.per_step = per_step_rows::never}};
    call.in[0] = {.shape = {32 * 128, 16 * 128},
                  .block = {128, 128},
                  .index_map = [](index_t i, index_t, index_t k) { return idx(i, k); }};
    call.in[1] = {.shape = {16 * 128, 32 * 128},
                  .block = {128, 128},
                  .index_map = [](index_t, index_t j, index_t k) { return idx(k, j); }};
    call.out[0] = {.shape = {32 * 128, 32 * 128},
                   .block = {128, 128},
                   .index_map = [](index_t i, index_t j, index_t) { return idx(i, j); }};
    for (auto _ : st) benchmark::DoNotOptimize(call.predict(matmul_body).device_time);
    st.SetItemsProcessed(st.iterations() * 32 * 32 * 16);
}

// timing_only_bench.cpp's 2^20-step add, its body charging an (8, 128) add.
constexpr index_t steps = 1 << 20;
using Long = Array<float, steps * 8, 128>;
using LongBlk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using LongAdd = pallas_call<Grid<steps>, In<Arg<Long, LongBlk>, Arg<Long, LongBlk>>, Out<Arg<Long, LongBlk>>,
                            Chip<tpu::v5e>>;

void BM_LongAddStatic(benchmark::State& st) {
    const LongAdd call{{.per_step = per_step_rows::never}};
    for (auto _ : st) benchmark::DoNotOptimize(call.predict([](auto, auto, auto) { charge(add_work); }).device_time);
    st.SetItemsProcessed(st.iterations() * steps);
}
void BM_LongAddDynamic(benchmark::State& st) {
    const DynAdd call = dyn_add(steps * 8, 128, 8);
    for (auto _ : st) benchmark::DoNotOptimize(call.predict([](auto, auto, auto) { charge(add_work); }).device_time);
    st.SetItemsProcessed(st.iterations() * steps);
}
}  // namespace

BENCHMARK(BM_QuickstartStatic)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_QuickstartDynamic)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_MatmulStatic)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_MatmulDynamic)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_LongAddStatic)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_LongAddDynamic)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_MAIN();
