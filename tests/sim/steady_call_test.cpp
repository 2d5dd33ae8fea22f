// Steady periods on whole pallas_calls: the timing model's fast lane (sim::options::steady_state)
// and the executor's repeated steps (timing-only runs make a step from the last one) must not
// change a prediction. Each kernel runs three ways, all with the per-step breakdown off:
//   exact   timing-only, steady_state off: every op simulated;
//   fast    timing-only, steady_state on (the default): repeated steps, fast-forwarded periods;
//   full    on real data, steady_state on: every op made by the schedule, fast-forwarded;
// and fast and full must agree exactly, and with exact to 1e-9 of the device time, on times and
// on everything counted (DMAs, bytes, charged work, bodies run).
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cmath>
#include <utility>

#include "hand_pipeline.hpp"
#include "memo_support.hpp"
#include "quad_chip.hpp"

using namespace ptpu;
using memo_test::expect_same_counts;

namespace {

template <class K, class Body, class... Args>
report run(const Body& body, bool timing_only_run, bool steady, const Args&... args) {
    K k{};
    k.options.timing_only = timing_only_run;
    k.options.per_step = per_step_rows::never;
    k.options.steady_state = steady;
    auto result = k(body, args...);
    return std::get<std::tuple_size_v<decltype(result)> - 1>(result);
}


void expect_close_times(const report& a, const report& b) {
    const double tol = 1e-9 * b.device_time;
    EXPECT_NEAR(a.device_time, b.device_time, tol);
    EXPECT_NEAR(a.exposed_dma, b.exposed_dma, tol);
    for (int c = 0; c < b.cores; ++c) {
        const auto u = static_cast<std::size_t>(c);
        EXPECT_NEAR(a.core[u].time, b.core[u].time, tol);
        EXPECT_NEAR(a.core[u].overhead, b.core[u].overhead, tol);
        EXPECT_NEAR(a.core[u].compute, b.core[u].compute, tol);
        EXPECT_NEAR(a.core[u].exposed_dma, b.core[u].exposed_dma, tol);
    }
}

// The three runs of a kernel; returns the fast one.
template <class K, class Body, class... Args>
report three_ways(const Body& body, const Args&... args) {
    const report exact = run<K>(body, true, false, args...);
    const report fast = run<K>(body, true, true, args...);
    const report full = run<K>(body, false, true, args...);
    EXPECT_EQ(exact.steady_ops, 0);
    expect_same_counts(fast, exact);
    expect_same_counts(full, exact);
    expect_close_times(fast, exact);
    EXPECT_EQ(fast.device_time, full.device_time);  // the same op stream, the same decisions
    EXPECT_EQ(fast.steady_ops, full.steady_ops);
    return fast;
}

// ---- An elementwise kernel: two inputs, one output, (8, 128) blocks -------------------------------

constexpr index_t add_steps = 4096;
using Vec = Array<float, add_steps * 8, 128>;
using RowBlk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<add_steps>, In<Arg<Vec, RowBlk>, Arg<Vec, RowBlk>>, Out<Arg<Vec, RowBlk>>,
                        Chip<tpu::v5e>>;

// Kernel K adding b (all `plus`) to a, three ways: mostly fast-forwarded; and its real run still
// computed every block (every `stride`-th element checked), at the same predicted time.
template <class K, class X, class Body>
report fast_and_computed(const Body& body, const host_array<X>& a, const host_array<X>& b, float plus,
                         std::size_t stride) {
    const report r = three_ways<K>(body, a, b);
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);
    K k{};
    k.options.per_step = per_step_rows::never;
    auto [z, rep] = k(body, a, b);
    for (std::size_t i = 0; i < z.size(); i += stride) EXPECT_EQ(z.vector()[i], a.vector()[i] + plus);
    EXPECT_EQ(rep.device_time, r.device_time);
    return r;
}

TEST(SteadyCall, ElementwiseKernelIsFastForwardedAndExact) {
    host_array<Vec> a, b;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<float>(i % 97), b.vector()[i] = 1;
    const auto body = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    fast_and_computed<Add>(body, a, b, 1.0f, 4093);
}

TEST(SteadyCall, PredictWithoutDataAgrees) {
    const auto body = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    Add k{};
    k.options.per_step = per_step_rows::never;
    const report p = k.predict(body);
    k.options.steady_state = false;
    const report e = k.predict(body);
    expect_same_counts(p, e);
    expect_close_times(p, e);
    EXPECT_GT(p.steady_ops, 0);
}

TEST(SteadyCall, ChargesVaryingWithTheStepFormLongerPeriods) {
    // Every third step charges more: a period of 3 steps.
    const auto body = [](auto, auto, auto) {
        charge(work{.explicit_seconds = program_id(0) % 3 == 0 ? 2e-6 : 0.5e-6});
    };
    const report r = three_ways<Add>(body, host_array<Vec>{}, host_array<Vec>{});
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);
}

TEST(SteadyCall, ChargesThatNeverRepeatAreSimulatedOpByOp) {
    const auto body = [](auto, auto, auto) {
        charge(work{.explicit_seconds = 1e-7 * static_cast<double>(1 + program_id(0) % 1009)});
    };
    const report r = three_ways<Add>(body, host_array<Vec>{}, host_array<Vec>{});
    EXPECT_EQ(r.steady_ops, 0);
}

// ---- A blocked matmul with a reduction axis: the output is written every K steps -----------------

constexpr index_t M = 256, N = 256, Kd = 2048, bm = 128, bn = 128, bk = 128;
using A = Array<float, M, Kd>;
using B = Array<float, Kd, N>;
using O = Array<float, M, N>;
using Matmul =
    pallas_call<Grid<M / bm, N / bn, Kd / bk>, Semantics<parallel, parallel, arbitrary>,
                In<Arg<A, BlockSpec<Block<bm, bk>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<B, BlockSpec<Block<bk, bn>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<O, BlockSpec<Block<bm, bn>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Chip<tpu::v5e>>;

TEST(SteadyCall, ReductionAxisMatmulIsExact) {
    host_array<A> a;
    host_array<B> b;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<float>(i % 7) - 3;
    for (std::size_t i = 0; i < b.size(); ++i) b.vector()[i] = static_cast<float>(i % 5) - 2;
    const auto body = [](auto x, auto w, auto o) {
        when(program_id(2) == 0, [&] { store(o, zeros<float>(bm, bn)); });  // k == 0 charges more
        store(o, load(o) + dot(load(x), load(w)));
    };
    const report r = three_ways<Matmul>(body, a, b);
    EXPECT_GT(r.steady_ops, 0);
}

namespace {
// 64 reduction steps per output block: a period of 64 steps, the longest the lane looks for.
using A64 = Array<float, 4 * 128, 64 * 128>;
using B64 = Array<float, 64 * 128, 4 * 128>;
using O64 = Array<float, 4 * 128, 4 * 128>;
using Mm64 = pallas_call<Grid<4, 4, 64>, Semantics<parallel, parallel, arbitrary>,
                         In<Arg<A64, BlockSpec<Block<128, 128>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                            Arg<B64, BlockSpec<Block<128, 128>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                         Out<Arg<O64, BlockSpec<Block<128, 128>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                         Chip<tpu::v5e>>;
constexpr auto mm64_body = [](auto x, auto w, auto o) {
    when(program_id(2) == 0, [&] { store(o, zeros<float>(bm, bn)); });
    store(o, load(o) + dot(load(x), load(w)));
};
}  // namespace

TEST(SteadyCall, ReductionAxisOf64StepsIsFastForwarded) {
    const report r = three_ways<Mm64>(mm64_body, host_array<A64>{}, host_array<B64>{});
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);  // 1024 steps: two periods seen, the rest skipped
}

TEST(SteadyCall, MegacoreAgrees) {
    using Mc = pallas_call<
        Grid<64, 16>, Semantics<parallel, arbitrary>,
        In<Arg<Array<float, 64 * 8, 16 * 128>,
               BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j); }>>>,
        Out<Arg<Array<float, 64 * 8, 128>, BlockSpec<Block<8, 128>, [](auto i, auto) { return idx(i, 0); }>>>,
        Chip<tpu::v5p>>;
    static_assert(Mc::info.cores == 2);
    const auto body = [](auto x, auto o) {
        when(program_id(1) == 0, [&] { store(o, zeros<float>(8, 128)); });
        store(o, load(o) + load(x));
    };
    const report r = three_ways<Mc>(body, host_array<Array<float, 64 * 8, 16 * 128>>{});
    EXPECT_EQ(r.cores, 2);
    EXPECT_GT(r.steady_ops, r.ops / 2);  // both cores running: the lane takes both
}

// Megacore elementwise kernels on v4 and v5p: an even split, and an odd parallel extent (core 0
// gets one step more, then runs alone).
using McRow = BlockSpec<Block<8, 512>, [](auto i) { return idx(i, 0); }>;
using McVec = Array<float, 2048 * 8, 512>;
using McOdd = Array<float, 2047 * 8, 512>;
using McAddV5p = pallas_call<Grid<2048>, Semantics<parallel>, In<Arg<McVec, McRow>, Arg<McVec, McRow>>,
                             Out<Arg<McVec, McRow>>, Chip<tpu::v5p>>;
using McAddV4 = pallas_call<Grid<2048>, Semantics<parallel>, In<Arg<McVec, McRow>, Arg<McVec, McRow>>,
                            Out<Arg<McVec, McRow>>, Chip<tpu::v4>>;
using McAddOdd = pallas_call<Grid<2047>, Semantics<parallel>, In<Arg<McOdd, McRow>, Arg<McOdd, McRow>>,
                             Out<Arg<McOdd, McRow>>, Chip<tpu::v5p>>;

template <class K, class V>
void megacore_add_agrees() {
    static_assert(K::info.cores == 2);
    const auto body = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    const report r = three_ways<K>(body, host_array<V>{}, host_array<V>{});
    EXPECT_EQ(r.cores, 2);
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);
}

TEST(SteadyCall, MegacoreElementwiseOnV4AndV5pAgree) {
    megacore_add_agrees<McAddV5p, McVec>();
    megacore_add_agrees<McAddV4, McVec>();
    megacore_add_agrees<McAddOdd, McOdd>();  // uneven: 1024 + 1023 steps
}

TEST(SteadyCall, HistoryKeptFromOnePredictionToTheNextChangesNothing) {
    // The lanes' histories are reused from one prediction to the next on a thread: predictions
    // made after others, of other kernels and core counts, equal the same prediction made first.
    Mm64 mm{};
    mm.options.per_step = per_step_rows::always;
    const report first = mm.predict(mm64_body);
    const auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    const report add_first = McAddOdd{}.predict(add);
    (void)Add{}.predict(add);
    const report again = mm.predict(mm64_body);
    const report add_again = McAddOdd{}.predict(add);
    for (const auto& [a, b] : {std::pair{&first, &again}, std::pair{&add_first, &add_again}}) {
        EXPECT_EQ(a->device_time, b->device_time);
        EXPECT_EQ(a->exposed_dma, b->exposed_dma);
        EXPECT_EQ(a->steady_ops, b->steady_ops);
        expect_same_counts(*a, *b);
        ASSERT_EQ(a->steps.size(), b->steps.size());
        for (std::size_t i = 0; i < a->steps.size(); ++i) EXPECT_EQ(a->steps[i].end, b->steps[i].end) << i;
    }
    EXPECT_GT(first.steady_ops, first.ops / 2);
    EXPECT_GT(add_first.steady_ops, add_first.ops / 2);
}

TEST(SteadyCall, MegacoreReductionMatmulAgrees) {
    // The reduction-axis matmul with its parallel i axis split over v5p's two cores.
    using Mm = pallas_call<Grid<M / bm, N / bn, Kd / bk>, Semantics<parallel, parallel, arbitrary>,
                           In<Arg<A, BlockSpec<Block<bm, bk>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                              Arg<B, BlockSpec<Block<bk, bn>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                           Out<Arg<O, BlockSpec<Block<bm, bn>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                           Chip<tpu::v5p>>;
    static_assert(Mm::info.cores == 2);
    host_array<A> a;
    host_array<B> b;
    const auto body = [](auto x, auto w, auto o) {
        when(program_id(2) == 0, [&] { store(o, zeros<float>(bm, bn)); });
        store(o, load(o) + dot(load(x), load(w)));
    };
    const report r = three_ways<Mm>(body, a, b);
    EXPECT_GT(r.steady_ops, 0);
}

TEST(SteadyCall, MegacoreCoresOutOfPhaseAgree) {
    // Core 1's blocks charge more (program ids of its half): the cores drift apart.
    const auto body = [](auto, auto, auto) {
        charge(work{.explicit_seconds = program_id(0) < 1024 ? 0.5e-6 : 0.8e-6});
    };
    const report r = three_ways<McAddV5p>(body, host_array<McVec>{}, host_array<McVec>{});
    EXPECT_GT(r.core[0].time, 0.0);
}

// ---- A body that issues its own DMAs on some steps (spliced into a repeated step) ----------------

using Src = Array<float, 512, 256>;
using Sliced = pallas_call<Grid<64>, In<Arg<Src, BlockSpec<Full, zero_map, any>>>,
                           Out<Arg<Src, BlockSpec<Block<8, 256>, [](auto i) { return idx(i, 0); }>>>,
                           Scratch<vmem, float, 8, 256>, Chip<tpu::v5e>>;

TEST(SteadyCall, BodyDmasOnSomeStepsAreExact) {
    host_array<Src> x;
    for (std::size_t i = 0; i < x.size(); ++i) x.vector()[i] = static_cast<float>(i);
    const auto body = [](auto x_any, auto y, auto buf) {
        if (program_id(0) % 5 != 4) sync_copy(x_any.at(ds(program_id(0) * 8, 8), ds(0, 256)), buf);
        store(y, load(buf) * 2.0f);
    };
    const report r = three_ways<Sliced>(body, x);
    EXPECT_EQ(r.stats.body_dmas, 64 - 12);
}

}  // namespace

// ---- Per-step rows with the fast lane (per_step on: the default up to 65,536 steps) ------------

namespace {

// The rows of `steady` and of every-op simulation, per core in stream order, equal.
template <class K, class Body, class... Args>
report rows_agree(const Body& body, const Args&... args) {
    K k{};
    k.options.timing_only = true;
    k.options.per_step = per_step_rows::always;
    auto fast_t = k(body, args...);
    k.options.steady_state = false;
    auto exact_t = k(body, args...);
    const report fast = std::get<std::tuple_size_v<decltype(fast_t)> - 1>(fast_t);
    const report exact = std::get<std::tuple_size_v<decltype(exact_t)> - 1>(exact_t);
    expect_close_times(fast, exact);
    EXPECT_EQ(fast.steps.size(), exact.steps.size());
    const auto per_core = [](std::vector<sim::step_times> v) {
        std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.core < b.core; });
        return v;
    };
    const auto x = per_core(fast.steps);
    const auto y = per_core(exact.steps);
    const double tol = 1e-9 * exact.device_time;
    int bad = 0;
    for (std::size_t i = 0; i < std::min(x.size(), y.size()) && bad < 5; ++i) {
        const bool same = x[i].core == y[i].core && x[i].step == y[i].step && x[i].waited_on == y[i].waited_on &&
                          std::abs(x[i].begin - y[i].begin) <= tol && std::abs(x[i].end - y[i].end) <= tol &&
                          std::abs(x[i].overhead - y[i].overhead) <= tol && std::abs(x[i].issue - y[i].issue) <= tol &&
                          std::abs(x[i].compute - y[i].compute) <= tol && std::abs(x[i].wait - y[i].wait) <= tol;
        if (!same)
            ADD_FAILURE() << "row " << i << " (core " << x[i].core << ", step " << x[i].step << "/" << y[i].step
                          << "): begin " << x[i].begin << "/" << y[i].begin << " end " << x[i].end << "/" << y[i].end
                          << " overhead " << x[i].overhead << "/" << y[i].overhead << " issue " << x[i].issue << "/"
                          << y[i].issue << " compute " << x[i].compute << "/" << y[i].compute << " wait " << x[i].wait
                          << "/" << y[i].wait << " bits " << x[i].waited_on << "/" << y[i].waited_on,
                ++bad;
    }
    return fast;
}

}  // namespace

TEST(SteadyCall, PerStepRowsWithTheFastLaneAgree) {
    const auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    const report a = rows_agree<Add>(add, host_array<Vec>{}, host_array<Vec>{});
    EXPECT_EQ(a.steps.size(), static_cast<std::size_t>(add_steps));
    EXPECT_GT(a.steady_ops, a.ops * 9 / 10);
    const report m = rows_agree<McAddV5p>(add, host_array<McVec>{}, host_array<McVec>{});
    EXPECT_EQ(m.steps.size(), 2048u);
    EXPECT_GT(m.steady_ops, m.ops * 9 / 10);
    const auto mm = [](auto x, auto w, auto o) {
        when(program_id(2) == 0, [&] { store(o, zeros<float>(bm, bn)); });
        store(o, load(o) + dot(load(x), load(w)));
    };
    const report r = rows_agree<Matmul>(mm, host_array<A>{}, host_array<B>{});
    EXPECT_GT(r.steady_ops, 0);
}

// ---- A pipeline written by hand with async copies and DMA semaphores (hand_pipeline.hpp) --------
// The semaphores' values and the copies in flight into them are part of the state a skipped
// period repeats.

constexpr index_t hand_steps = 512;
using Hand = hand_test::hand_add<hand_steps>::call;
using HandX = hand_test::hand_add<hand_steps>::X;
constexpr auto hand_add = hand_test::hand_add_body;

TEST(SteadyCall, AsyncCopiesIntoSemaphoresAreFastForwardedAndExact) {
    host_array<HandX> a, b;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<float>(i % 89), b.vector()[i] = 2;
    const report r = fast_and_computed<Hand>(hand_add, a, b, 2.0f, 1021);
    Hand k{};
    k.options.per_step = per_step_rows::never;
    const report p = k.predict(hand_add);  // without data: the same
    EXPECT_EQ(p.device_time, r.device_time);
    // What the bodies charged: one step's add at every step (the runs of equal works the runner
    // sums go on past the copies and waits between them, which charge nothing).
    const report one = hand_test::hand_add<1>::call{{.per_step = per_step_rows::never}}.predict(hand_add);
    EXPECT_GT(one.stats.total_work.vreg_cheap, 0);
    EXPECT_EQ(r.stats.total_work, one.stats.total_work.scaled(static_cast<double>(hand_steps)));
    // Per-step rows, their semaphore waits among them, as every-op simulation makes them.
    const report rows = rows_agree<Hand>(hand_add, a, b);
    EXPECT_EQ(rows.steps.size(), static_cast<std::size_t>(hand_steps));
    EXPECT_GT(rows.steady_ops, rows.ops * 9 / 10);
}

// The same pipeline split over v5p's two cores (the parallel axis picks each core's half of the
// rows): each core's copies complete into its own semaphores, and the model's lane follows both
// cores (their semaphores part of the state), as it does on one core.
constexpr index_t mc_hand_half = 256;
using McHand = hand_test::hand_add_parts<2, mc_hand_half>::call;
using McHandX = hand_test::hand_add_parts<2, mc_hand_half>::X;
constexpr auto mc_hand_add = hand_test::hand_add_parts_body;

TEST(SteadyCall, AsyncCopiesOnTwoCoresAreFastForwardedTogetherAndExact) {
    static_assert(McHand::info.cores == 2);
    host_array<McHandX> a, b;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<float>(i % 83), b.vector()[i] = 3;
    const report r = fast_and_computed<McHand>(mc_hand_add, a, b, 3.0f, 997);
    EXPECT_EQ(r.cores, 2);
    EXPECT_EQ(r.stats.body_dmas, 3 * 2 * mc_hand_half);  // two fetches and a write per step
    // Per-step rows, both cores' semaphore waits among them, as every-op simulation makes them.
    const report rows = rows_agree<McHand>(mc_hand_add, a, b);
    EXPECT_EQ(rows.steps.size(), static_cast<std::size_t>(2 * mc_hand_half));
    EXPECT_GT(rows.steady_ops, rows.ops * 9 / 10);
}

// ---- The body memo of timing-only runs (run_options::memoize_body, runner.hpp "Body memo") --------
// A timing-only run runs the body once per distinct set of answers to what it asks (program_id,
// core_index, valid_extent), plus a check at the 1st, 2nd, 4th... reuse, and must predict exactly
// what running it at every step predicts.

using memo_test::checks;
using memo_test::predict_memo;

TEST(BodyMemo, ReductionMatmulRunsOncePerReductionStepAndPredictsTheSame) {
    // The body asks program_id(2) only: one run per value of k (16), then reuses.
    int runs = 0;
    const auto body = [&runs](auto x, auto w, auto o) {
        ++runs;
        when(program_id(2) == 0, [&] { store(o, zeros<float>(bm, bn)); });
        store(o, load(o) + dot(load(x), load(w)));
    };
    const report every = predict_memo<Matmul>(body, false);
    EXPECT_EQ(runs, 4 * 16);
    runs = 0;
    const report memo = predict_memo<Matmul>(body, true);
    EXPECT_EQ(runs, 16 + checks(64 - 16));
    EXPECT_EQ(memo.device_time, every.device_time);
    EXPECT_EQ(memo.exposed_dma, every.exposed_dma);
    expect_same_counts(memo, every);
    ASSERT_EQ(memo.steps.size(), every.steps.size());
    for (std::size_t i = 0; i < memo.steps.size(); ++i) EXPECT_EQ(memo.steps[i].compute, every.steps[i].compute);
    // With data the body runs at every step whatever the option says.
    runs = 0;
    Matmul k{};
    (void)k(body, host_array<A>{}, host_array<B>{});
    EXPECT_EQ(runs, 64);
}

TEST(BodyMemo, BodyAskingNothingRunsOnceAndChecksLogarithmically) {
    int runs = 0;
    const auto body = [&runs](auto x, auto y, auto z) {
        ++runs;
        store(z, load(x) + load(y));
    };
    const report memo = predict_memo<Add>(body, true);
    EXPECT_EQ(runs, 1 + checks(add_steps - 1));
    runs = 0;
    const report every = predict_memo<Add>(body, false);
    EXPECT_EQ(runs, add_steps);
    EXPECT_EQ(memo.device_time, every.device_time);
    expect_same_counts(memo, every);
}

TEST(BodyMemo, CoreIndexAndEdgeBlocksAreQuestionsToo) {
    // Megacore: the work depends on the core; edge blocks: on the valid rows of the last block.
    using X = Array<float, 300, 8 * 128>;
    using Blk = BlockSpec<Block<128, 128>, [](auto i, auto j) { return idx(i, j); }>;
    using Edge = pallas_call<Grid<3, 8>, Semantics<parallel, arbitrary>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>,
                             Chip<tpu::v5p>>;
    static_assert(Edge::info.cores == 2);
    int runs = 0;
    const auto body = [&runs](auto, auto) {
        ++runs;
        const double rows = static_cast<double>(valid_extent(0, 0));
        charge(work{.vreg_cheap = rows * (core_index() + 1)});
    };
    const report every = predict_memo<Edge>(body, false);
    EXPECT_EQ(runs, 24);
    runs = 0;
    const report memo = predict_memo<Edge>(body, true);
    EXPECT_LT(runs, 24);
    EXPECT_EQ(memo.device_time, every.device_time);
    for (int c = 0; c < 2; ++c) EXPECT_EQ(memo.core[static_cast<std::size_t>(c)].compute, every.core[static_cast<std::size_t>(c)].compute);
    expect_same_counts(memo, every);
}

TEST(BodyMemo, ScalarMemoryRunsTheBodyEveryStep) {
    // A body reading SMEM: its value may differ at every step, so nothing is reused.
    using Idx = Array<std::int32_t, 64>;
    using SpBlk = BlockSpec<Block<8, 128>, [](auto i, const auto&) { return idx(i, 0); }>;
    using Sp = pallas_call<Grid<64>, ScalarPrefetch<Idx>, In<Arg<Vec, SpBlk>>, Out<Arg<Vec, SpBlk>>, Chip<tpu::v5e>>;
    int runs = 0;
    const auto body = [&runs](auto s, auto x, auto y) {
        ++runs;
        charge(work{.vreg_cheap = static_cast<double>(sload(s, program_id(0)))});
        store(y, load(x));
    };
    std::vector<std::int32_t> cost(64);
    for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = static_cast<std::int32_t>(i % 5);
    Sp k{};
    k.options.timing_only = true;
    auto [y, rep] = k(body, cost, host_array<Vec>{});
    EXPECT_EQ(runs, 64);
    k.options.memoize_body = false;
    runs = 0;
    auto [y2, rep2] = k(body, cost, host_array<Vec>{});
    EXPECT_EQ(rep.device_time, rep2.device_time);
}

TEST(BodyMemo, BodyDependingOnHostStateIsK2) {
    // Charges that change with a host counter, not with anything the body asks: caught by the
    // check at the first reuse.
    int runs = 0;
    const auto body = [&runs](auto, auto, auto) { charge(work{.explicit_seconds = 1e-6 * (++runs % 3)}); };
    try {
        (void)predict_memo<Add>(body, true);
        ADD_FAILURE() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "K2");
        EXPECT_NE(std::string(e.what()).find("step 1"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("memoize_body = false"), std::string::npos) << e.what();
    }
    // Off, the same body runs every step and is predicted.
    runs = 0;
    EXPECT_GT(predict_memo<Add>(body, false).device_time, 0);
    // Asking another question than an earlier run with the same answers is K2 too.
    runs = 0;
    using G = Array<float, 16, 256>;
    using Gb = BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j); }>;
    using Two = pallas_call<Grid<2, 2>, In<Arg<G, Gb>>, Out<Arg<G, Gb>>, Chip<tpu::v5e>>;
    const auto fickle = [&runs](auto, auto) {
        const index_t v = runs++ % 2 == 0 ? program_id(1) : program_id(0);
        charge(work{.vreg_cheap = static_cast<double>(v)});
    };
    Two t{};
    EXPECT_EQ([&] {
        try {
            (void)t.predict(fickle);
        } catch (const ptpu::error& e) {
            return e.rule();
        }
        return std::string("no error");
    }(),
              "K2");
}

// ---- Skipped periods (runner.hpp "Skipped periods") ---------------------------------------------
// In a timing-only run with the body memo, the runner makes whole periods in bulk when it can show
// they repeat the last one (report.stats.skipped_steps counts their steps). rows_agree compares
// those runs, per-step rows included, with every op simulated (no fast lane, so nothing skipped).

TEST(SkippedPeriods, TheReductionMatmulSkipsWholePeriodsBetweenMemoChecks) {
    const report r = rows_agree<Mm64>(mm64_body, host_array<A64>{}, host_array<B64>{});
    // The body asks program_id(2), whose cycle (the reduction) is the period: skips are limited
    // only by the memo's checks at powers of two (here the 128th, 256th and 512th reuse, each
    // run in a pulled period): half of the 1024 steps, in whole periods of 64.
    EXPECT_GE(r.stats.skipped_steps, r.stats.steps / 2);
    EXPECT_EQ(r.stats.skipped_steps % 64, 0);
    Mm64 k{};
    k.options.memoize_body = false;  // the body runs every step: nothing is skipped
    EXPECT_EQ(k.predict(mm64_body).stats.skipped_steps, 0);
}

namespace {
// Program id 0 changes every 40 steps, and the body's work with it: a skip never crosses a row.
using Wide = Array<float, 6 * 8, 40 * 128>;
using WideBlk = BlockSpec<Block<8, 128>, [](auto i, auto j) { return idx(i, j); }>;
using Rows = pallas_call<Grid<6, 40>, In<Arg<Wide, WideBlk>>, Out<Arg<Wide, WideBlk>>, Chip<tpu::v5e>>;
// Irregular changes (the first input's block moves every 3 steps, and at 91 and 92 too), and
// rings of two slots that a period of one step turns half-way: skips of an even number of periods.
constexpr index_t odd_steps = 200;
using Few = Array<float, 70 * 8, 128>;
using Many = Array<float, odd_steps * 8, 128>;
using Odd = pallas_call<Grid<odd_steps>,
                        In<Arg<Few, BlockSpec<Block<8, 128>, [](auto i) { return idx(i / 3 + i / 91, 0); }>>,
                           Arg<Many, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>,
                        Out<Arg<Many, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>, Chip<tpu::v5e>>;
}  // namespace

TEST(SkippedPeriods, AProgramIdTheBodyAsksBoundsEachSkip) {
    const auto body = [](auto, auto) { charge(work{.vreg_cheap = 512.0 * static_cast<double>(program_id(0) + 1)}); };
    const report r = rows_agree<Rows>(body, host_array<Wide>{});
    ASSERT_EQ(r.steps.size(), 240u);
    for (int i = 0; i < 6; ++i)  // each row's compute is its own (a skip across rows would mix them)
        EXPECT_EQ(r.steps[static_cast<std::size_t>(i * 40 + 20)].compute, r.steps[static_cast<std::size_t>(i * 40 + 39)].compute);
    EXPECT_LT(r.steps[20].compute, r.steps[60].compute);
    EXPECT_GT(r.stats.skipped_steps, 0);
    EXPECT_LT(r.stats.skipped_steps, 240);
    // A body asking nothing skips across the rows.
    const report all = rows_agree<Rows>([](auto, auto) { charge(work{.vreg_cheap = 512}); }, host_array<Wide>{});
    EXPECT_GT(all.stats.skipped_steps, r.stats.skipped_steps);
}

TEST(SkippedPeriods, IrregularChangesAndHalfTurnedRingsAgree) {
    const auto body = [](auto a, auto b, auto c) { store(c, load(a) + load(b)); };
    const report r = rows_agree<Odd>(body, host_array<Few>{}, host_array<Many>{});
    EXPECT_EQ(r.steps.size(), static_cast<std::size_t>(odd_steps));
    EXPECT_GT(r.stats.skipped_steps, 0);
    // And on data (no skipping: the body runs, the schedule moves blocks) the same times.
    Odd k{};
    k.options.per_step = per_step_rows::never;
    const auto [c, full] = k(body, host_array<Few>{}, host_array<Many>{});
    (void)c;
    EXPECT_EQ(full.stats.skipped_steps, 0);
    expect_same_counts(full, r);
    expect_close_times(full, r);
}

TEST(SkippedPeriods, BothCoresOfAMegacoreChipSkipTogether) {
    const auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    const report m = rows_agree<McAddV5p>(add, host_array<McVec>{}, host_array<McVec>{});
    EXPECT_GT(m.stats.skipped_steps, m.stats.steps / 2);
    EXPECT_EQ(m.stats.core_steps[0] + m.stats.core_steps[1], m.stats.steps);
}

// ---- Four cores (a synthetic chip): the lane takes every core ------------------------------------

namespace {
using quad_test::quad;
using QuadAdd = pallas_call<Grid<2048>, Semantics<parallel>, In<Arg<McVec, McRow>, Arg<McVec, McRow>>,
                            Out<Arg<McVec, McRow>>, Chip<quad>>;
// 2047 steps: cores 0-2 take 512 each, core 3 takes 511 and ends first.
using QuadOdd = pallas_call<Grid<2047>, Semantics<parallel>, In<Arg<McOdd, McRow>, Arg<McOdd, McRow>>,
                            Out<Arg<McOdd, McRow>>, Chip<quad>>;
static_assert(QuadAdd::info.cores == 4 && QuadOdd::info.core_end[3] - QuadOdd::info.core_begin[3] == 511);
}  // namespace

TEST(SteadyCall, FourCoresFastForwardTogether) {
    const auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    const report r = three_ways<QuadAdd>(add, host_array<McVec>{}, host_array<McVec>{});
    EXPECT_EQ(r.cores, 4);
    EXPECT_GT(r.steady_ops, r.ops * 9 / 10);  // all four running: the lane skips them together
    const report odd = three_ways<QuadOdd>(add, host_array<McOdd>{}, host_array<McOdd>{});
    EXPECT_GT(odd.steady_ops, odd.ops * 9 / 10);
    EXPECT_EQ(odd.stats.core_steps, (per_core<index_t>{512, 512, 512, 511}));
}

TEST(SteadyCall, FourCoresOutOfPhaseAgree) {
    // Each core's blocks charge differently (program ids of its quarter): the cores drift apart,
    // and a core blocked in a wait when the period repeats goes on in its image.
    const auto body = [](auto, auto, auto) {
        charge(work{.explicit_seconds = 0.4e-6 + 0.1e-6 * static_cast<double>(program_id(0) / 512)});
    };
    const report r = three_ways<QuadAdd>(body, host_array<McVec>{}, host_array<McVec>{});
    EXPECT_LT(r.core[0].time, r.core[3].time);
}

TEST(SkippedPeriods, AllFourCoresSkipTogether) {
    const auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
    const report m = rows_agree<QuadAdd>(add, host_array<McVec>{}, host_array<McVec>{});
    EXPECT_GT(m.stats.skipped_steps, m.stats.steps / 2);
    EXPECT_EQ(m.stats.core_steps, (per_core<index_t>{512, 512, 512, 512}));
    EXPECT_EQ(m.steps.size(), 2048u);
}
