// Throughput of timing-only runs (docs/performance.md): a 3-operand kernel (2 inputs, 1 output, (8, 128) f32
// blocks, double-buffered) over a 2^20-step grid, its body charging an (8, 128) add. Reported as
// grid steps per second (items_per_second): pallas_call::predict (no data at all) with the
// steady-state fast lane (the default) and without it (every op simulated), a reduction-axis
// matmul (its pattern repeats every 16 steps) at 16,384 and 262,144 steps, the 3-operand kernel
// on v5p's two TensorCores, the 3-operand kernel at 65,536 steps with the timeline recorded (fast
// lane on and off), and the timing model alone on the same op stream.
#include <benchmark/benchmark.h>

#include <ptpu/ptpu.hpp>

using namespace ptpu;

namespace {
constexpr index_t steps = 1 << 20;
using X = Array<float, steps * 8, 128>;
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<steps>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

// What an (8,128) f32 add costs: 2 vreg loads, 1 VPU op, 1 store.
constexpr work add_work{.vreg_cheap = 1, .vector_loads = 2, .vector_stores = 1};

void BM_Predict(benchmark::State& st) {
    const Add call{{.per_step = 0}};
    for (auto _ : st) {
        auto rep = call.predict([](auto, auto, auto) { charge(add_work); });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}

void BM_PredictWithOps(benchmark::State& st) {
    const Add call{{.per_step = 0}};
    for (auto _ : st) {
        auto rep = call.predict([](auto a, auto b, auto c) { store(c, load(a) + load(b)); });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}

void BM_PredictEveryOp(benchmark::State& st) {
    const Add call{{.per_step = 0, .steady_state = false}};
    for (auto _ : st) {
        auto rep = call.predict([](auto a, auto b, auto c) { store(c, load(a) + load(b)); });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}

// A matmul with a reduction axis: grid (32, 32, 16) of (128, 128) f32 blocks, 16384 steps; the
// output is written every 16 steps.
using A = Array<float, 32 * 128, 16 * 128>;
using B = Array<float, 16 * 128, 32 * 128>;
using O = Array<float, 32 * 128, 32 * 128>;
using Matmul =
    pallas_call<Grid<32, 32, 16>, Semantics<parallel, parallel, arbitrary>,
                In<Arg<A, BlockSpec<Block<128, 128>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<B, BlockSpec<Block<128, 128>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<O, BlockSpec<Block<128, 128>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Chip<tpu::v5e>>;

void BM_PredictMatmul(benchmark::State& st) {
    const Matmul call{{.per_step = 0}};
    for (auto _ : st) {
        auto rep = call.predict([](auto x, auto w, auto o) {
            when(program_id(2) == 0, [&] { store(o, zeros<float>(128, 128)); });
            store(o, load(o) + dot(load(x), load(w)));
        });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * Matmul::desc.steps());
}

// The same matmul at 262,144 steps, grid (64, 64, 64) of (128, 128) f32 blocks (the target: one
// prediction in at most 10 ms).
using A2 = Array<float, 64 * 128, 64 * 128>;
using Matmul262k =
    pallas_call<Grid<64, 64, 64>, Semantics<parallel, parallel, arbitrary>,
                In<Arg<A2, BlockSpec<Block<128, 128>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<A2, BlockSpec<Block<128, 128>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<A2, BlockSpec<Block<128, 128>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Chip<tpu::v5e>>;

void BM_PredictMatmul262k(benchmark::State& st) {
    const Matmul262k call{{.per_step = 0}};
    for (auto _ : st) {
        auto rep = call.predict([](auto x, auto w, auto o) {
            when(program_id(2) == 0, [&] { store(o, zeros<float>(128, 128)); });
            store(o, load(o) + dot(load(x), load(w)));
        });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * Matmul262k::desc.steps());
}

// The 3-operand kernel on v5p's two TensorCores (its parallel axis split in halves).
using AddMc = pallas_call<Grid<steps>, Semantics<parallel>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>,
                          Chip<tpu::v5p>>;

void BM_PredictMegacore(benchmark::State& st) {
    const AddMc call{{.per_step = 0}};
    for (auto _ : st) {
        auto rep = call.predict([](auto a, auto b, auto c) { store(c, load(a) + load(b)); });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}

// The timing model alone, fed the same per-step op stream from a trivial source.
struct replay {
    std::int64_t step = 0, k = 0;
    std::uint32_t id = 0;
    bool next(int, sim::op& o) {
        if (step == steps) return false;
        static constexpr sim::op_kind pattern[] = {
            sim::op_kind::overhead, sim::op_kind::dma_start, sim::op_kind::dma_start, sim::op_kind::dma_wait,
            sim::op_kind::dma_wait, sim::op_kind::compute,   sim::op_kind::dma_start, sim::op_kind::dma_wait};
        o = sim::op{};
        o.kind = pattern[k];
        o.step = static_cast<std::uint32_t>(step);
        switch (k) {
            case 1:
            case 2:
            case 6:
                o.dma = id++;
                o.bytes = 4096;
                break;
            case 3:
            case 4:
                o.dma = id - (k == 3 ? 2 : 1);
                break;
            case 5:
                o.work = 1;  // 1 ns (BM_ModelOnly's table)
                break;
            case 7:
                o.dma = id - 1;
                break;
        }
        if (++k == 8) k = 0, ++step;
        return true;
    }
};

// The 3-operand kernel over 65,536 steps with the timeline recorded (the trace and SVG exporters'
// input, ~8 spans a step): with the fast lane (skipped periods replicate their spans) and with
// every op simulated (what the timeline cost before the lane ran with it).
constexpr index_t tl_steps = 1 << 16;
using XT = Array<float, tl_steps * 8, 128>;
using AddT = pallas_call<Grid<tl_steps>, In<Arg<XT, Blk>, Arg<XT, Blk>>, Out<Arg<XT, Blk>>, Chip<tpu::v5e>>;

void BM_PredictTimeline(benchmark::State& st) {
    AddT call{};
    call.options.per_step = 0;
    call.options.timeline = true;
    call.options.steady_state = st.range(0) != 0;
    for (auto _ : st) {
        auto rep = call.predict([](auto a, auto b, auto c) { store(c, load(a) + load(b)); });
        benchmark::DoNotOptimize(rep.timeline.data());
    }
    st.SetItemsProcessed(st.iterations() * tl_steps);
}

void BM_ModelOnly(benchmark::State& st) {
    stream::work_table works;
    works.number(work{.explicit_seconds = 1e-9});
    for (auto _ : st) {
        replay r;
        auto res = sim::simulate(tpu::v5e, 1, r, sim::options{.works = &works});
        benchmark::DoNotOptimize(res.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}
}  // namespace

BENCHMARK(BM_Predict)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictWithOps)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictEveryOp)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictMatmul)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictMatmul262k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictMegacore)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictTimeline)->ArgName("fast_lane")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ModelOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_MAIN();
