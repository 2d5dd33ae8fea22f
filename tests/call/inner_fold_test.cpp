// Inner pipelines folded in timing-only runs (docs/model.md §11, "Folded inner steps"): without
// per-step rows (or with them and run_options::fold_inner_rows) on a one-core chip, an inner
// pipeline memoizes its bodies as the call's runner does, and the steps it makes in bulk are
// handed on as one repeat op and one step, which the model makes again or skips. A prediction
// must be the one made by running every inner step (run_options::memoize_body = false): counts
// exactly, times to 1e-9, and op by op (steady_state = false) to the last digit; a real run is
// unchanged.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "../sim/memo_support.hpp"

using namespace ptpu;

namespace {

constexpr index_t inner = 2048;  // inner steps per invocation
using X = Array<float, 4 * inner * 8, 128>;
using AnyX = BlockSpec<Full, zero_map, any>;
using Tile = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
using Tile3 = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<3>>;
using Tile4 = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<4>>;
using Tile5 = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<5>>;
using Tile7 = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<7>>;
// (2-D inner grid: rows i of the input, summed over j into output row block i / 4.)
using Row = BlockSpec<Block<8, 128>, [](index_t i, index_t j) { return idx(i * 4 + j, 0); }>;
using Sum = BlockSpec<Block<8, 128>, [](index_t i, index_t) { return idx(i, 0); }>;

using Once = pallas_call<Grid<>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
using Four = pallas_call<Grid<4>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
using FourMegacore = pallas_call<Grid<4>, Semantics<parallel>, In<Arg<X, AnyX>, Arg<X, AnyX>>,
                                 Out<Arg<X, AnyX>>, Chip<tpu::v5p>>;

int runs = 0;  // inner body runs (a global: a capturing body would be keyed by its state)

// K's prediction of `body` with per-step rows off, the body memo (and so the folding) on or off,
// the steady state on or off.
template <class K, class Body>
report predict(const Body& body, bool memo, bool steady = true) {
    K k{};
    k.options.per_step = per_step_rows::never;
    k.options.memoize_body = memo;
    k.options.steady_state = steady;
    runs = 0;
    return k.predict(body);
}

using memo_test::expect_same_counts;

// Folded and skipped, folded and made op by op, every step: the same prediction. Returns the
// folded, skipping one and the inner body runs it took, and those with the memo off.
struct folded_run {
    report r;
    int runs = 0, every_runs = 0;
};
template <class K, class Body>
folded_run expect_folds_like_every_step(const Body& body) {
    const report every = predict<K>(body, false, false);
    const int every_runs = runs;
    const report made = predict<K>(body, true, false);
    expect_same_counts(made, every);
    EXPECT_EQ(made.device_time, every.device_time);  // the same ops, made again
    for (int c = 0; c < every.cores; ++c) {
        const auto u = static_cast<std::size_t>(c);
        EXPECT_EQ(made.core[u].time, every.core[u].time);
        EXPECT_EQ(made.core[u].compute, every.core[u].compute);
        EXPECT_EQ(made.core[u].exposed_dma, every.core[u].exposed_dma);
    }
    const report fast = predict<K>(body, true, true);
    const int fast_runs = runs;
    expect_same_counts(fast, every);
    const double T = every.device_time;
    EXPECT_LE(std::abs(fast.device_time - T), 1e-9 * T);
    EXPECT_LE(std::abs(fast.exposed_dma - every.exposed_dma), 1e-9 * T);
    EXPECT_LE(std::abs(fast.body_exposed_dma - every.body_exposed_dma), 1e-9 * T);
    for (int c = 0; c < every.cores; ++c) {
        const auto u = static_cast<std::size_t>(c);
        EXPECT_LE(std::abs(fast.core[u].time - every.core[u].time), 1e-9 * T);
        EXPECT_LE(std::abs(fast.core[u].compute - every.core[u].compute), 1e-9 * T);
    }
    return {fast, fast_runs, every_runs};
}

// A difference of two inputs windowed by specs A and B (their rings of buffers).
template <class A, class B>
const auto rings = [](auto a, auto b, auto c) {
    emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) - load(y)); }, {inner}, in_specs<A, B>,
                  out_specs<Tile>)(a.at(ds(0, inner * 8), ds(0, 128)), b.at(ds(0, inner * 8), ds(0, 128)),
                                   c.at(ds(0, inner * 8), ds(0, 128)));
};

// The sum of the first n row blocks of a and b into c, by a pipeline of n steps (its bodies
// counted in `runs`).
const auto add_over = [](auto a, auto b, auto c, index_t n) {
    emit_pipeline(
        [](auto x, auto y, auto z) {
            ++runs;
            store(z, load(x) + load(y));
        },
        {n}, in_specs<Tile, Tile>, out_specs<Tile>)(
        a.at(ds(0, n * 8), ds(0, 128)), b.at(ds(0, n * 8), ds(0, 128)), c.at(ds(0, n * 8), ds(0, 128)));
};
const auto add = [](auto a, auto b, auto c) { add_over(a, b, c, inner); };

// The add's pipeline configured by values (dynamic_pipeline): inner steps of (8, 128) blocks.
using values_add = dynamic_pipeline<In<Operand<float, 2>, Operand<float, 2>>, Out<Operand<float, 2>>>;
values_add add_by_values() {
    values_add cfg;
    cfg.grid = {inner};
    constexpr auto row_map = [](index_t j) { return idx(j, 0); };
    cfg.in[0] = {.block = {8, 128}, .index_map = row_map};
    cfg.in[1] = {.block = {8, 128}, .index_map = row_map};
    cfg.out[0] = {.block = {8, 128}, .index_map = row_map};
    return cfg;
}

// Row blocks of a summed 4 at a time into c: a 2-D inner grid whose output block changes every
// 4 steps (written at the first, accumulated at the others).
const auto reduce = [](auto a, auto, auto c) {
    emit_pipeline(
        [](auto x, auto z) {
            ++runs;
            if (pipeline_index(1) == 0)
                store(z, load(x));
            else
                store(z, load(z) + load(x));
        },
        {inner / 4, 4}, in_specs<Row>,
        out_specs<Sum>)(a.at(ds(0, inner * 8), ds(0, 128)), c.at(ds(0, inner * 2), ds(0, 128)));
};

// Each step of the kernel runs the pipeline over its own rows.
const auto rows = [](auto a, auto b, auto c) {
    const index_t i = program_id(0);
    emit_pipeline(
        [](auto x, auto y, auto z) {
            ++runs;
            store(z, load(x) + load(y));
        },
        {inner}, in_specs<Tile, Tile>, out_specs<Tile>)(a.at(ds(i * inner * 8, inner * 8), ds(0, 128)),
                                                        b.at(ds(i * inner * 8, inner * 8), ds(0, 128)),
                                                        c.at(ds(i * inner * 8, inner * 8), ds(0, 128)));
};

// A pipeline of 4 steps over whole arrays in HBM, whose body runs a pipeline of inner / 4
// steps over its step's rows.
using HbmFull = BlockSpec<Full, zero_map, hbm>;
const auto twice = [](auto a, auto b, auto c) {
    emit_pipeline(
        [](auto x, auto y, auto z) {
            const index_t j = pipeline_index(0);
            emit_pipeline(
                [](auto u, auto v, auto w) {
                    ++runs;
                    store(w, load(u) + load(v));
                },
                {inner / 4}, in_specs<Tile, Tile>,
                out_specs<Tile>)(x.at(ds(j * inner * 2, inner * 2), ds(0, 128)),
                                 y.at(ds(j * inner * 2, inner * 2), ds(0, 128)),
                                 z.at(ds(j * inner * 2, inner * 2), ds(0, 128)));
        },
        {4}, in_specs<HbmFull, HbmFull>, out_specs<HbmFull>)(a, b, c);
};

TEST(InnerFold, AnInnerPipelineIsFoldedSkippedAndPredictsAsEveryStep) {
    const auto [r, body_runs, every_runs] = expect_folds_like_every_step<Once>(add);
    EXPECT_EQ(r.stats.inner_steps, inner);
    EXPECT_EQ(every_runs, inner);             // memo off: every inner body runs
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);  // the model skipped most inner steps
    EXPECT_LE(body_runs, 32);                 // the body memo's runs and checks (1, 2, 4, ...)
}

TEST(InnerFold, DeepWindowsAndReductionsAreFoldedAndPredictAsEveryStep) {
    const auto deep = [](auto a, auto b, auto c) {
        emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) * load(y)); }, {inner},
                      in_specs<Tile3, Tile3>,
                      out_specs<Tile>)(a.at(ds(0, inner * 8), ds(0, 128)), b.at(ds(0, inner * 8), ds(0, 128)),
                                       c.at(ds(0, inner * 8), ds(0, 128)));
    };
    const report r1 = expect_folds_like_every_step<Once>(deep).r;
    EXPECT_GT(r1.steady_ops, r1.ops * 9 / 10);
    // Lengths where the last fold ends right before the steps that fetch nothing ahead, which
    // the runner makes in full: they wait on the fetches the skipped steps started into every
    // slot of the 3-deep rings (the runner carries each slot's DMA over the skip).
    for (index_t n = inner - 8; n < inner; ++n) {
        const auto deep_n = [n](auto a, auto b, auto c) {
            emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) * load(y)); }, {n},
                          in_specs<Tile3, Tile3>,
                          out_specs<Tile>)(a.at(ds(0, n * 8), ds(0, 128)), b.at(ds(0, n * 8), ds(0, 128)),
                                           c.at(ds(0, n * 8), ds(0, 128)));
        };
        const report r = expect_folds_like_every_step<Once>(deep_n).r;
        EXPECT_GT(r.steady_ops, r.ops * 9 / 10) << n;
    }
    // Rings of 3 and 4 buffers turn together every 12 steps: folded once 12 steps repeat. Of 5
    // and 7, every 70: more than the folder holds, so the steps are handed on one by one.
    const auto mixed = rings<Tile3, Tile4>;
    const report r3 = expect_folds_like_every_step<Once>(mixed).r;
    EXPECT_GT(r3.steady_ops, r3.ops * 9 / 10);
    const auto wide = rings<Tile5, Tile7>;
    const report r4 = expect_folds_like_every_step<Once>(wide).r;
    EXPECT_EQ(r4.steady_ops, 0);
    // The output's block changes every 4 steps (written then, accumulated in between): the
    // steps repeat with a period of 4, which the model finds among the folded repetitions.
    const report r2 = expect_folds_like_every_step<Once>(reduce).r;
    EXPECT_EQ(r2.stats.inner_steps, inner);
    EXPECT_GT(r2.steady_ops, r2.ops / 2);
}

TEST(InnerFold, InvocationsInEveryStepOfTheKernelAreFoldedAndKept) {
    // The kernel's 4 steps each run the pipeline over their own rows: the invocation memo keeps
    // the folded ops and hands them on again.
    const auto [r, body_runs, every_runs] = expect_folds_like_every_step<Four>(rows);
    EXPECT_EQ(r.stats.inner_steps, 4 * inner);
    EXPECT_EQ(every_runs, 4 * inner);
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);
    EXPECT_LE(body_runs, 64);
}

TEST(InnerFold, KernelStepsMadeFromTheLastOnesCarryTheirFoldedDmas) {
    // 64 kernel steps, each running the same 256-step pipeline over its own rows: the kernel's
    // runner makes most steps from the last one's ops (a kept invocation handed on again), whose
    // DMA ids advance by the DMAs its repeat ops stand for too.
    constexpr index_t short_inner = 256;
    using X64 = Array<float, 64 * short_inner * 8, 128>;
    using Many =
        pallas_call<Grid<64>, In<Arg<X64, AnyX>, Arg<X64, AnyX>>, Out<Arg<X64, AnyX>>, Chip<tpu::v5e>>;
    const auto rows64 = [](auto a, auto b, auto c) {
        const index_t i = program_id(0);
        emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, {short_inner},
                      in_specs<Tile, Tile>,
                      out_specs<Tile>)(a.at(ds(i * short_inner * 8, short_inner * 8), ds(0, 128)),
                                       b.at(ds(i * short_inner * 8, short_inner * 8), ds(0, 128)),
                                       c.at(ds(i * short_inner * 8, short_inner * 8), ds(0, 128)));
    };
    const report r = expect_folds_like_every_step<Many>(rows64).r;
    EXPECT_EQ(r.stats.inner_steps, 64 * short_inner);
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);
}

TEST(InnerFold, AllocationsAndPipelinesConfiguredByValuesAreFoldedToo) {
    // emit_pipeline_with_allocations: the windows laid out in the kernel's scratch (as many bytes
    // for any grid: a short one keeps the compile-time plan short).
    using Sched = emit_pipeline_schedule<Grid<8>, In<Arg<X, Tile>, Arg<X, Tile>>, Out<Arg<X, Tile>>>;
    using WithScratch = pallas_call<Grid<>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>,
                                    Scratch<vmem, std::uint8_t, Sched::allocation_bytes()>, Chip<tpu::v5e>>;
    const auto first = [](auto r) { return r.at(ds(0, inner * 8), ds(0, 128)); };
    const auto with_allocs = [first](auto a, auto b, auto c, auto buf) {
        auto [pipe, make_allocations] = emit_pipeline_with_allocations(
            [](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, {inner}, in_specs<Tile, Tile>, out_specs<Tile>);
        auto allocs = make_allocations(buf, first(a), first(b), first(c));
        pipe(first(a), first(b), first(c), allocs);
    };
    const report r1 = expect_folds_like_every_step<WithScratch>(with_allocs).r;
    EXPECT_GT(r1.steady_ops, r1.ops * 9 / 10);
    // dynamic_pipeline: the same pipeline configured by values (its maps called through the
    // planner's function pointers).
    const values_add cfg = add_by_values();
    const auto by_values = [&cfg, first](auto a, auto b, auto c) {
        emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, cfg)(first(a), first(b), first(c));
    };
    const report r2 = expect_folds_like_every_step<Once>(by_values).r;
    EXPECT_GT(r2.steady_ops, r2.ops * 9 / 10);
    EXPECT_LE(std::abs(r2.device_time - r1.device_time), 1e-9 * r1.device_time);
}

TEST(InnerFold, PipelinesTwoLevelsInAreFoldedAndPredictAsEveryStep) {
    // The innermost pipeline of `twice` is folded, and its repeat ops go through the middle
    // pipeline's runner (whose body, running a pipeline, is not memoized).
    const auto [r, body_runs, every_runs] = expect_folds_like_every_step<Once>(twice);
    EXPECT_EQ(r.stats.inner_steps, 4 + inner);
    EXPECT_EQ(every_runs, inner);
    EXPECT_GT(r.steady_ops, r.ops * 3 / 4);
    EXPECT_LE(body_runs, 4 * 16);
}

TEST(InnerFold, AMegacoreCallHandsItsInnerStepsOnOneByOne) {
    // Two cores running together: no folding (the model's lane does not follow folds on several cores), so
    // every inner body runs, and the prediction is the one with the memo off.
    const report every = predict<FourMegacore>(rows, false);
    const report memo = predict<FourMegacore>(rows, true);
    expect_same_counts(memo, every);
    EXPECT_EQ(memo.device_time, every.device_time);
}

// Two reports' per-step and inner rows, and what each inner row is: equal, their times within
// rel of the first's device time (rel = 0: to the last digit).
void expect_same_rows(const report& a, const report& b, double rel) {
    const double tol = rel * b.device_time;
    const auto same = [tol](const std::vector<sim::step_times>& x, const std::vector<sim::step_times>& y) {
        ASSERT_EQ(x.size(), y.size());
        const auto near = [tol](double u, double v) { return std::abs(u - v) <= tol; };
        for (std::size_t i = 0; i < x.size(); ++i) {
            const sim::step_times& u = x[i];
            const sim::step_times& v = y[i];
            EXPECT_EQ(u.core, v.core) << i;
            EXPECT_EQ(u.step, v.step) << i;
            EXPECT_EQ(u.sub, v.sub) << i;
            EXPECT_EQ(u.waited_on, v.waited_on) << i;
            EXPECT_EQ(u.bound, v.bound) << i;
            EXPECT_TRUE(near(u.begin, v.begin) && near(u.end, v.end) && near(u.overhead, v.overhead) &&
                        near(u.issue, v.issue) && near(u.compute, v.compute) && near(u.wait, v.wait) &&
                        near(u.sem_wait, v.sem_wait))
                << "row " << i << " (step " << u.step << ", inner row " << u.sub << ")";
        }
    };
    same(a.steps, b.steps);
    same(a.inner_steps, b.inner_steps);
    for (std::size_t c = 0; c < a.inner_rows.size(); ++c) {
        const auto& x = a.inner_rows[c];
        const auto& y = b.inner_rows[c];
        ASSERT_EQ(x.size(), y.size()) << c;
        for (std::size_t k = 0; k < x.size(); ++k) {
            EXPECT_EQ(x[k].call, y[k].call) << k;
            EXPECT_EQ(x[k].step, y[k].step) << k;
            EXPECT_EQ(x[k].depth, y[k].depth) << k;
            EXPECT_EQ(x[k].inputs, y[k].inputs) << k;
            EXPECT_EQ(x[k].parent, y[k].parent) << k;
        }
    }
}

// K's prediction of `body` with per-step rows, folded (run_options::fold_inner_rows), against
// every inner step run (the memo off): the same counts and rows, times to the last digit when
// the model makes every folded step (steady_state off), to 1e-9 when it skips. Returns the
// skipping one and the inner body runs of it and of the memo-off run.
template <class K, class Body>
folded_run expect_rows_like_every_step(const Body& body) {
    K k{};
    k.options.per_step = per_step_rows::always;
    k.options.fold_inner_rows = true;
    k.options.memoize_body = false;
    k.options.steady_state = false;
    runs = 0;
    const report every = k.predict(body);
    const int every_runs = runs;
    k.options.memoize_body = true;
    const report made = k.predict(body);
    expect_same_counts(made, every);
    EXPECT_EQ(made.device_time, every.device_time);
    expect_same_rows(made, every, 0);
    k.options.steady_state = true;
    runs = 0;
    const report fast = k.predict(body);
    expect_same_counts(fast, every);
    EXPECT_LE(std::abs(fast.device_time - every.device_time), 1e-9 * every.device_time);
    expect_same_rows(fast, every, 1e-9);
    return {fast, runs, every_runs};
}

TEST(InnerFold, WithPerStepRowsStepsAreFoldedOnlyWhenAsked) {
    // By default, with rows, every inner step is run and simulated as it comes: its body runs,
    // and the prediction is the one with the memo off to the last digit.
    Once k{};
    k.options.per_step = per_step_rows::always;
    runs = 0;
    const report r = k.predict(add);
    EXPECT_EQ(runs, inner);
    EXPECT_EQ(static_cast<index_t>(r.inner_steps.size()), inner);
    k.options.memoize_body = false;
    const report every = k.predict(add);
    EXPECT_EQ(r.device_time, every.device_time);
    expect_same_rows(r, every, 0);
}

TEST(InnerFold, WithPerStepRowsEveryFoldedStepGetsItsRow) {
    // Asked to (run_options::fold_inner_rows), a pipeline the kernel's body runs is folded with
    // rows too: the kernel's runner numbers the folded steps' rows, which the model gives their
    // ops as it makes them again.
    const auto [r, body_runs, every_runs] = expect_rows_like_every_step<Once>(add);
    EXPECT_EQ(static_cast<index_t>(r.inner_steps.size()), inner);
    EXPECT_EQ(every_runs, inner);
    EXPECT_LE(body_runs, 32);
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);  // the model made most rows in bulk
    // Rows are the same with deep windows and reductions (repetitions of 4 steps), in every
    // step of the kernel (invocations kept and handed on again), and two levels in (only the
    // kernel body's pipelines are folded with rows: a deeper one's steps are rows under rows).
    const auto deep = rings<Tile3, Tile3>;
    EXPECT_LT(expect_rows_like_every_step<Once>(deep).runs, inner);
    EXPECT_LT(expect_rows_like_every_step<Once>(reduce).runs, inner / 4);
    const auto four = expect_rows_like_every_step<Four>(rows);
    EXPECT_EQ(static_cast<index_t>(four.r.inner_steps.size()), 4 * inner);
    EXPECT_LE(four.runs, 64);
    EXPECT_EQ(expect_rows_like_every_step<Once>(twice).runs, inner);
    // The same pipeline configured by values.
    const values_add cfg = add_by_values();
    const auto by_values = [&cfg](auto a, auto b, auto c) {
        emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, cfg)(
            a.at(ds(0, inner * 8), ds(0, 128)), b.at(ds(0, inner * 8), ds(0, 128)),
            c.at(ds(0, inner * 8), ds(0, 128)));
    };
    const report v = expect_rows_like_every_step<Once>(by_values).r;
    EXPECT_GT(v.steady_ops, v.ops * 9 / 10);
    EXPECT_EQ(static_cast<index_t>(v.inner_steps.size()), inner);
}

TEST(InnerFold, WithPerStepRowsStepsNumberedOutOfOrderAreHandedOnOneByOne) {
    // Rows are numbered on first sight, per invocation number and inner step: the kernel's first
    // step numbers 100 steps of its first pipeline, then 50 of its second; the second step's
    // first pipeline, of 300 steps, numbers its steps 100 on after those. A fold over step 100
    // would not give them rows that follow the repetition's, so the kernel's runner hands such
    // repetitions on op by op, with their rows.
    using Two = pallas_call<Grid<2>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
    const auto uneven = [](auto a, auto b, auto c) {
        if (program_id(0) == 0) {
            add_over(a, b, c, 100);
            add_over(a, b, c, 50);
        } else {
            add_over(a, b, c, 300);
        }
    };
    const auto [r, body_runs, every_runs] = expect_rows_like_every_step<Two>(uneven);
    EXPECT_EQ(every_runs, 450);
    EXPECT_LT(body_runs, 100);  // still folded by the pipelines' runners
    EXPECT_EQ(static_cast<index_t>(r.inner_steps.size()), 450);
}

TEST(InnerFold, WithPerStepRowsStepsPastTheRowsNumberedHaveNone) {
    // Past stream::max_inner_rows an inner step has no row of its own and counts in its kernel
    // step's row only, folded or not; the fold of this invocation goes on past it.
    constexpr index_t n = 40000;
    using XL = Array<float, n * 8, 128>;
    using Long = pallas_call<Grid<>, In<Arg<XL, AnyX>, Arg<XL, AnyX>>, Out<Arg<XL, AnyX>>, Chip<tpu::v5e>>;
    const auto along = [](auto a, auto b, auto c) { add_over(a, b, c, n); };
    const auto [r, body_runs, every_runs] = expect_rows_like_every_step<Long>(along);
    EXPECT_EQ(every_runs, n);
    EXPECT_LE(body_runs, 40);
    EXPECT_EQ(r.inner_steps.size(), stream::max_inner_rows);
}

TEST(InnerFold, AFoldedInnerBodyDependingOnHostStateIsK2) {
    int calls = 0;
    const auto body = [&calls](auto a, auto b, auto c) {
        emit_pipeline(
            [&calls](auto x, auto y, auto z) {
                ++calls;
                store(z, load(x) + load(y));
                charge(work{.explicit_seconds = 1e-9 * (calls % 3)});
            },
            {inner}, in_specs<Tile, Tile>,
            out_specs<Tile>)(a.at(ds(0, inner * 8), ds(0, 128)), b.at(ds(0, inner * 8), ds(0, 128)),
                             c.at(ds(0, inner * 8), ds(0, 128)));
    };
    try {
        (void)predict<Once>(body, true);
        ADD_FAILURE() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "K2");
        const std::string m = e.what();
        EXPECT_NE(m.find("memoize_body = false"), std::string::npos) << m;
    }
    calls = 0;
    EXPECT_GT(predict<Once>(body, false).device_time, 0);  // off: every inner body runs
}

TEST(InnerFold, ARealRunComputesEveryInnerStep) {
    host_array<X> a, b;
    for (std::size_t i = 0; i < a.size(); ++i) {
        a.vector()[i] = static_cast<float>(i % 97);
        b.vector()[i] = static_cast<float>(i % 13);
    }
    Once k{};
    k.options.per_step = per_step_rows::never;
    runs = 0;
    auto [c, rep] = k(add, a, b);
    EXPECT_EQ(runs, inner);
    EXPECT_EQ(rep.stats.inner_steps, inner);
    for (std::size_t i = 0; i < static_cast<std::size_t>(inner * 8 * 128); ++i)
        ASSERT_EQ(c.vector()[i], a.vector()[i] + b.vector()[i]) << i;
}

}  // namespace
