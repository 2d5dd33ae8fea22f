// Throughput of timing-only runs (docs/performance.md): a 3-operand kernel (2 inputs, 1 output, (8, 128) f32
// blocks, double-buffered) over a 2^20-step grid, its body charging an (8, 128) add. Reported as
// grid steps per second (items_per_second): pallas_call::predict (no data at all) with the
// steady-state fast lane (the default) and without it (every op simulated), a reduction-axis
// matmul (its pattern repeats every 16 steps) at 16,384 and 262,144 steps, the 3-operand kernel
// on v5p's two TensorCores, the 3-operand kernel at 65,536 steps with the timeline recorded (fast
// lane on and off), the timing model alone on the same op stream, and the kernels whose steps the
// body drives: inner pipelines (emit_pipeline: 256 outer steps of 256 inner ones, on one core and
// on v5p's two, and one gridless
// outer step running 65,536, without and with folded per-step rows) and a pipeline written by hand with
// async copies and DMA semaphores (on one core and split over v5p's two, run at every step or
// declared steady, and on two cores meeting at a barrier every step), reported per inner (or
// grid) step; and calibrate fitting three fields to a table of twelve measured kernels (each of
// its model evaluations predicts every row), reported per prediction.
#include <benchmark/benchmark.h>

#include <ptpu/calibrate/fit.hpp>
#include <ptpu/ptpu.hpp>

#include <optional>
#include <vector>

#include "calibrate/synthetic_table.hpp"
#include "sim/hand_pipeline.hpp"

using namespace ptpu;

namespace {
constexpr index_t steps = 1 << 20;
using X = Array<float, steps * 8, 128>;
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<steps>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

// What an (8,128) f32 add costs: 2 vreg loads, 1 VPU op, 1 store.
constexpr work add_work{.vreg_cheap = 1, .vector_loads = 2, .vector_stores = 1};

void BM_Predict(benchmark::State& st) {
    const Add call{{.per_step = per_step_rows::never}};
    for (auto _ : st) {
        auto rep = call.predict([](auto, auto, auto) { charge(add_work); });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}

void BM_PredictWithOps(benchmark::State& st) {
    const Add call{{.per_step = per_step_rows::never}};
    for (auto _ : st) {
        auto rep = call.predict([](auto a, auto b, auto c) { store(c, load(a) + load(b)); });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}

void BM_PredictEveryOp(benchmark::State& st) {
    const Add call{{.per_step = per_step_rows::never, .steady_state = false}};
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
    const Matmul call{{.per_step = per_step_rows::never}};
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
    const Matmul262k call{{.per_step = per_step_rows::never}};
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
    const AddMc call{{.per_step = per_step_rows::never}};
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
    call.options.per_step = per_step_rows::never;
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

// Inner pipelines: the 3-operand add's (8, 128) f32 tiles, 65,536 inner steps in all.
constexpr index_t inner_steps = 1 << 16;
using XI = Array<float, inner_steps * 8, 128>;
using AnyXI = BlockSpec<Full, zero_map, any>;
using Tile = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
using OuterGrid = pallas_call<Grid<256>, In<Arg<XI, AnyXI>, Arg<XI, AnyXI>>, Out<Arg<XI, AnyXI>>, Chip<tpu::v5e>>;
using OuterOnce = pallas_call<Grid<>, In<Arg<XI, AnyXI>, Arg<XI, AnyXI>>, Out<Arg<XI, AnyXI>>, Chip<tpu::v5e>>;

// The same on v5p's two TensorCores: the outer grid split between them (both cores' history
// of step boundaries is kept jointly).
using OuterMegacore = pallas_call<Grid<256>, Semantics<parallel>, In<Arg<XI, AnyXI>, Arg<XI, AnyXI>>,
                                  Out<Arg<XI, AnyXI>>, Chip<tpu::v5p>>;

// 256 outer steps, each running an inner pipeline over its 2,048 rows.
template <class Outer>
void predict_nested(benchmark::State& st) {
    const Outer call{{.per_step = per_step_rows::never}};
    for (auto _ : st) {
        auto rep = call.predict([](auto a, auto b, auto c) {
            const index_t i = program_id(0);
            emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, {256},
                          in_specs<Tile, Tile>, out_specs<Tile>)(a.at(ds(i * 2048, 2048), ds(0, 128)),
                                                                 b.at(ds(i * 2048, 2048), ds(0, 128)),
                                                                 c.at(ds(i * 2048, 2048), ds(0, 128)));
        });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * inner_steps);
}

void BM_PredictNested(benchmark::State& st) {
    predict_nested<OuterGrid>(st);
}
void BM_PredictNestedMegacore(benchmark::State& st) {
    predict_nested<OuterMegacore>(st);
}

// One gridless step running a 65,536-step inner pipeline, predicted with `opt`.
void predict_once(benchmark::State& st, const run_options& opt) {
    const OuterOnce call{opt};
    for (auto _ : st) {
        auto rep = call.predict([](auto a, auto b, auto c) {
            emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, {inner_steps},
                          in_specs<Tile, Tile>, out_specs<Tile>)(a, b, c);
        });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * inner_steps);
}

void BM_PredictNestedOnce(benchmark::State& st) {
    predict_once(st, {.per_step = per_step_rows::never});
}

// The same with per-step rows (the default for this grid) for the one grid step and each of its
// inner steps (the first 32,767; the rest count in the grid step's row), folded all the same.
void BM_PredictNestedOnceRows(benchmark::State& st) {
    predict_once(st, {.fold_inner_rows = true});
}

// The add as a pipeline written by hand (tests/sim/hand_pipeline.hpp): both inputs stay in HBM,
// each step starts the next step's two copies before waiting for its own, and writes its result
// back asynchronously, waiting for it one step later (examples/async_pipeline.cpp's pattern).
void BM_PredictAsyncCopies(benchmark::State& st) {
    const hand_test::hand_add<inner_steps>::call call{{.per_step = per_step_rows::never}};
    for (auto _ : st) {
        auto rep = call.predict(hand_test::hand_add_body);
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * inner_steps);
}

// The same kernel declared steady (run_options::steady_body): its copies and waits repeat with
// the step's parity, except at the first step (the first fetch) and the last (the last drain).
void BM_PredictAsyncCopiesSteady(benchmark::State& st) {
    const hand_test::hand_add<inner_steps>::call call{
        {.per_step = per_step_rows::never, .steady_body = body_edges{.first = 1, .last = 1}}};
    for (auto _ : st) {
        auto rep = call.predict(hand_test::hand_add_body);
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * inner_steps);
}

// The same split over v5p's two TensorCores (each core its half of the rows, a pipeline of its
// own), every step and declared steady: the model's lane follows both cores' copies into their
// own semaphores, and each core's runner skips its part's periods. The cores' runners take turns
// on threads of their own (runtime/cores.hpp): timed by the clock, not by this thread's CPU.
void predict_async_megacore(benchmark::State& st, std::optional<body_edges> edges) {
    const hand_test::hand_add_parts<2, inner_steps / 2>::call call{
        {.per_step = per_step_rows::never, .steady_body = edges}};
    for (auto _ : st) {
        auto rep = call.predict(hand_test::hand_add_parts_body);
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * inner_steps);
}
void BM_PredictAsyncCopiesMegacore(benchmark::State& st) {
    predict_async_megacore(st, std::nullopt);
}
void BM_PredictAsyncCopiesMegacoreSteady(benchmark::State& st) {
    predict_async_megacore(st, body_edges{});
}

// The two-core pipeline with a barrier at the end of every step: each core signals the other's
// semaphore and waits for the other's signal, every step and declared steady. Each core's wait
// depends on the other core, yet the prediction runs both on the calling thread: a wait takes on
// credit what the other core signals later, the model blocks the core until the signal, and its
// lane follows both cores through the signals (call/run_impl.hpp, run_call).
void predict_barrier(benchmark::State& st, std::optional<body_edges> edges) {
    using parts = hand_test::hand_add_parts<2, inner_steps / 2>;
    using Met = Scratch<semaphore, regular_semaphore, 1>;
    using Any = Arg<parts::X, parts::AnyX>;
    const pallas_call<Grid<2, inner_steps / 2>, Semantics<parallel, arbitrary>, In<Any, Any>, Out<Any>,
                      parts::Slots, parts::Slots, parts::Slots, parts::Sems, parts::Sems, Met, Chip<tpu::v5p>>
        call{{.per_step = per_step_rows::never, .steady_body = edges}};
    for (auto _ : st) {
        auto rep = call.predict(
            [](auto a, auto b, auto o, auto abuf, auto bbuf, auto obuf, auto in_sem, auto out_sem, auto met) {
                hand_test::hand_add_parts_body(a, b, o, abuf, bbuf, obuf, in_sem, out_sem);
                semaphore_signal(met.at(0), 1, 1 - static_cast<int>(program_id(0)));
                semaphore_wait(met.at(0), 1);
            });
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * inner_steps);
}
void BM_PredictAsyncCopiesBarrier(benchmark::State& st) {
    predict_barrier(st, std::nullopt);
}
void BM_PredictAsyncCopiesBarrierSteady(benchmark::State& st) {
    predict_barrier(st, body_edges{});
}

// calibrate on tests/calibrate's synthetic table (copies and matmuls of 8 to 512 steps). The
// double-buffered copies' states never repeat exactly (their copies in and out share the HBM
// channel and drift in phase), so the fast lane looks for a period at each of their steps and
// finds none.
void BM_Calibrate(benchmark::State& st) {
    const std::vector<calibration::measurement> table =
        calibration_test::measured_by(calibration_test::truth, calibration_test::shapes());
    std::int64_t predictions = 0;
    for (auto _ : st) {
        const calibration::result r = calibration::calibrate(tpu::v5e, table);
        benchmark::DoNotOptimize(r.fitted.step_overhead_s);
        predictions += static_cast<std::int64_t>(table.size()) * (r.evaluations + 2);  // before and after too
    }
    st.SetItemsProcessed(predictions);
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
BENCHMARK(BM_PredictNested)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictNestedMegacore)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictNestedOnce)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictNestedOnceRows)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictAsyncCopies)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictAsyncCopiesSteady)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PredictAsyncCopiesMegacore)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_PredictAsyncCopiesMegacoreSteady)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_PredictAsyncCopiesBarrier)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_PredictAsyncCopiesBarrierSteady)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_Calibrate)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_MAIN();
