// Steady bodies (run_options::steady_body, runtime/runner.hpp "Steady bodies"): a timing-only
// run of a body declared steady skips whole periods of its steps once the model finds them
// repeating, runs the body a period after each stretch to check it, and must predict what running
// it at every step predicts.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "hand_pipeline.hpp"
#include "memo_support.hpp"

namespace {

using namespace ptpu;
using memo_test::expect_same_counts;

constexpr index_t steps = 4096;
using Hand = hand_test::hand_add<steps>::call;

// The hand-written pipeline's body (two async fetches a step ahead, an async write waited a step
// later), counting its runs; `extra(i)` adds a charge at step i where it says so.
struct counted {
    int* runs;
    bool (*extra)(index_t) = nullptr;
    template <class... A>
    void operator()(A... a) const {
        ++*runs;
        hand_test::hand_add_body(a...);
        if (extra != nullptr && extra(program_id(0))) charge(work{.explicit_seconds = 1e-7});
    }
};

report predict(const counted& body, std::optional<body_edges> edges,
               per_step_rows rows = per_step_rows::never) {
    Hand k{};
    k.options.per_step = rows;
    k.options.steady_body = edges;
    return k.predict(body);
}

// Same prediction: times within 1e-9 (the skipped periods add their durations at once), every
// count exact.
void expect_same_prediction(const report& a, const report& b) {
    EXPECT_NEAR(a.device_time, b.device_time, 1e-9 * b.device_time);
    EXPECT_NEAR(a.exposed_dma, b.exposed_dma, 1e-9 * b.device_time);
    expect_same_counts(a, b);
    EXPECT_EQ(a.stats.body_dma_bytes, b.stats.body_dma_bytes);
    EXPECT_EQ(a.stats.sem_signals, b.stats.sem_signals);
    EXPECT_EQ(a.stats.sem_waits, b.stats.sem_waits);
}

// `predict_it()` raises rule `rule` with `needle` in its message.
template <class F>
void expect_rule(F predict_it, const std::string& rule, const std::string& needle) {
    try {
        (void)predict_it();
        ADD_FAILURE() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), rule);
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST(SteadyBody, AsyncCopiesAreSkippedByWholePeriodsAndPredictTheSame) {
    int runs = 0;
    const counted body{&runs};
    const report every = predict(body, std::nullopt);
    EXPECT_EQ(runs, steps);
    EXPECT_EQ(every.stats.body_dmas, 3 * steps);
    runs = 0;
    const report steady = predict(body, body_edges{});
    expect_same_prediction(steady, every);
    // The period is 2 steps (the semaphores alternate): a stretch as long as all before it (16
    // steps at first), a checked period after each, the first periods and the last steps run:
    // about log2(steps) periods of body runs (28 runs here).
    EXPECT_LT(runs, 64) << runs;
    EXPECT_GT(steady.steady_ops, steady.ops * 9 / 10);
}

TEST(SteadyBody, PerStepRowsOfSkippedStepsAreThoseOfEveryStep) {
    int runs = 0;
    const counted body{&runs};
    const report every = predict(body, std::nullopt, per_step_rows::always);
    runs = 0;
    const report steady = predict(body, body_edges{}, per_step_rows::always);
    EXPECT_LT(runs, 64) << runs;
    expect_same_prediction(steady, every);
    ASSERT_EQ(steady.steps.size(), every.steps.size());
    for (std::size_t i = 0; i < every.steps.size(); ++i) {
        const double tol = 1e-9 * every.device_time;
        EXPECT_EQ(steady.steps[i].step, every.steps[i].step) << i;
        EXPECT_NEAR(steady.steps[i].begin, every.steps[i].begin, tol) << i;
        EXPECT_NEAR(steady.steps[i].end, every.steps[i].end, tol) << i;
        EXPECT_NEAR(steady.steps[i].issue, every.steps[i].issue, tol) << i;
        EXPECT_NEAR(steady.steps[i].compute, every.steps[i].compute, tol) << i;
        EXPECT_NEAR(steady.steps[i].wait, every.steps[i].wait, tol) << i;
        EXPECT_EQ(steady.steps[i].waited_on, every.steps[i].waited_on) << i;
    }
}

TEST(SteadyBody, EdgesAsWideAsTheBodyDiffersThereArePredictedExactly) {
    // Three more charges over the last three steps (say, a drain a lookahead of 3 would make):
    // edges of 3 steps leave them to the body.
    int runs = 0;
    const counted body{&runs, [](index_t i) { return i >= steps - 3; }};
    const report every = predict(body, std::nullopt);
    runs = 0;
    const report steady = predict(body, body_edges{.first = 1, .last = 3});
    expect_same_prediction(steady, every);
    EXPECT_LT(runs, 64) << runs;
    // And at the start: the first five steps charge more.
    const counted early{&runs, [](index_t i) { return i < 5; }};
    const report every_early = predict(early, std::nullopt);
    runs = 0;
    expect_same_prediction(predict(early, body_edges{.first = 5, .last = 1}), every_early);
    EXPECT_LT(runs, 64) << runs;
}

TEST(SteadyBody, ABodyThatChangesInsideTheEdgesIsK4) {
    // From step 3000 on the body charges more at every step: a stretch skips over step 3000 with
    // the old period, and the period run after it differs.
    int runs = 0;
    const counted body{&runs, [](index_t i) { return i >= 3000; }};
    expect_rule([&] { return predict(body, body_edges{}); }, "K4", "steady_body");
    // Unset, it runs at every step.
    runs = 0;
    EXPECT_GT(predict(body, std::nullopt).device_time, 0);
    EXPECT_EQ(runs, steps);
    // Negative edges are K4 too, before anything runs.
    runs = 0;
    for (const body_edges e : {body_edges{.first = -1}, body_edges{.last = -2}})
        expect_rule([&] { return predict(body, e); }, "K4", "negative");
    EXPECT_EQ(runs, 0);
}

TEST(SteadyBody, RunsEveryStepWhereItCannotSkip) {
    int runs = 0;
    const counted body{&runs};
    // With data: the copies move bytes.
    host_array<hand_test::hand_add<steps>::X> a, b;
    Hand k{};
    k.options.per_step = per_step_rows::never;
    k.options.steady_body = body_edges{};
    (void)k(body, a, b);
    EXPECT_EQ(runs, steps);
    // With race detection, or a timeline: every access and every op is recorded.
    for (const bool races : {true, false}) {
        runs = 0;
        Hand t{};
        t.options.per_step = per_step_rows::never;
        t.options.steady_body = body_edges{};
        t.options.detect_races = races;
        t.options.timeline = !races;
        (void)t.predict(body);
        EXPECT_EQ(runs, steps) << races;
    }
    // Edges that cover the grid leave nothing to skip, up to the largest a user can give.
    runs = 0;
    (void)predict(body, body_edges{.first = steps / 2, .last = steps / 2});
    EXPECT_EQ(runs, steps);
    runs = 0;
    (void)predict(body, body_edges{.first = 1, .last = std::numeric_limits<index_t>::max()});
    EXPECT_EQ(runs, steps);
}

// The notes of `r` that advise run_options::steady_body.
int advice(const report& r) {
    int n = 0;
    for (const std::string& l : r.lints) n += l.find("run_options::steady_body") != std::string::npos ? 1 : 0;
    return n;
}

// Any call, a type or values: its notes advise the declaration undeclared, and not declared.
template <class Call, class Body>
std::pair<int, int> advice_undeclared_and_declared(Call k, const Body& body) {
    k.options.per_step = per_step_rows::never;
    k.options.steady_body.reset();
    const int undeclared = advice(k.predict(body));
    k.options.steady_body = body_edges{};
    return {undeclared, advice(k.predict(body))};
}

// A prediction that runs an undeclared body at every step while the model finds its ops
// repeating says how to skip them (report::lints), and only then.
TEST(SteadyBody, AnUndeclaredBodyThatRepeatsIsAdvisedToDeclareIt) {
    int runs = 0;
    const report every = predict(counted{&runs}, std::nullopt);
    ASSERT_EQ(advice(every), 1);
    const std::string& l = every.lints.back();
    EXPECT_NE(l.find("each of its 4096 steps"), std::string::npos) << l;
    EXPECT_NE(l.find("99% of the ops"), std::string::npos) << l;
    // Declared, it skips: no advice.
    EXPECT_EQ(advice(predict(counted{&runs}, body_edges{})), 0);
    // A body whose charges follow no period (the Thue-Morse sequence of the step's bits): the
    // model finds nothing repeating, so a declaration would skip nothing either.
    const counted aperiodic{&runs,
                            [](index_t i) { return std::popcount(static_cast<std::uint64_t>(i)) % 2 == 1; }};
    const report drift = predict(aperiodic, std::nullopt);
    EXPECT_EQ(drift.steady_ops, 0);
    EXPECT_EQ(advice(drift), 0);
    // A body with no copy or semaphore op (the call's semaphores unused) runs every step too,
    // but its ops are the schedule's own: nothing to declare.
    const report plain =
        Hand{{.per_step = per_step_rows::never}}.predict([](auto...) { charge(work{.vreg_cheap = 4}); });
    EXPECT_EQ(plain.stats.body_dmas + plain.stats.sem_waits, 0);
    EXPECT_EQ(advice(plain), 0);
    // Where a declaration would not skip (a timeline), and on a short grid: none.
    Hand t{{.per_step = per_step_rows::never}};
    t.options.timeline = true;
    EXPECT_EQ(advice(t.predict(counted{&runs})), 0);
    EXPECT_EQ(
        advice(hand_test::hand_add<512>::call{{.per_step = per_step_rows::never}}.predict(counted{&runs})),
        0);
    EXPECT_EQ(
        advice(hand_test::hand_add<1024>::call{{.per_step = per_step_rows::never}}.predict(counted{&runs})),
        1);
    // Through generic code, for a call configured as a type and one configured by values on two
    // cores (each core's part a pipeline of its own).
    EXPECT_EQ(advice_undeclared_and_declared(Hand{}, counted{&runs}), std::pair(1, 0));
    EXPECT_EQ(advice_undeclared_and_declared(hand_test::dyn_add_parts(2, 1024, tpu::v5p),
                                             hand_test::hand_add_parts_body),
              std::pair(1, 0));
}

// The declaration through generic code: any call type, edges as values.
template <class Call, class Body>
report predict_declared(const Body& body, index_t first, index_t last) {
    Call k{};
    k.options.per_step = per_step_rows::never;
    k.options.steady_body = body_edges{.first = first, .last = last};
    return k.predict(body);
}

TEST(SteadyBody, DeclaredThroughAFunctionTemplate) {
    int runs = 0;
    const report every = predict(counted{&runs}, std::nullopt);
    runs = 0;
    const report steady = predict_declared<Hand>(counted{&runs}, std::numeric_limits<index_t>::max(), 1);
    EXPECT_EQ(runs, steps);  // a first edge past the grid: nothing skipped
    expect_same_prediction(steady, every);
    runs = 0;
    expect_same_prediction(predict_declared<Hand>(counted{&runs}, 2, 2), every);
    EXPECT_LT(runs, 64) << runs;
}

TEST(SteadyBody, SyncCopiesAreSkippedButNotABodyReadingScalarMemory) {
    // A body of blocking copies (no semaphores), which may read an SMEM scalar.
    constexpr index_t n = 1024;
    using X = Array<float, n * 8, 128>;
    using AnyX = BlockSpec<Full, zero_map, any>;
    using K = pallas_call<Grid<n>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Scratch<vmem, float, 8, 128>,
                          Scratch<smem, std::int32_t, 1>, Chip<tpu::v5e>>;
    int runs = 0;
    bool reads = false;
    const auto body = [&](auto x, auto o, auto buf, auto s) {
        ++runs;
        const index_t i = program_id(0);
        sync_copy(x.at(ds(i * 8, 8), ds(0, 128)), buf);
        store(buf, load(buf) + 1.0f);
        if (reads && s[0] != 0) charge(work{.explicit_seconds = 1e-7});
        sync_copy(buf, o.at(ds(i * 8, 8), ds(0, 128)));
    };
    auto run = [&](bool steady) {
        runs = 0;
        K k{};
        k.options.per_step = per_step_rows::never;
        if (steady) k.options.steady_body = body_edges{.first = 0, .last = 0};
        return k.predict(body);
    };
    const report every = run(false);
    EXPECT_EQ(runs, n);
    const report steady = run(true);
    EXPECT_LT(runs, 64) << runs;
    expect_same_prediction(steady, every);
    EXPECT_EQ(steady.stats.body_dmas, 2 * n);
    reads = true;
    (void)run(true);
    EXPECT_EQ(runs, n);
}

TEST(SteadyBody, ABodyRunningAnInnerPipelineRunsEveryStep) {
    // Its inner pipeline's ops are not the body's own copies: the body memo and the invocation
    // memo handle it, a steady declaration changes nothing.
    using X = Array<float, 64 * 8, 128>;
    using AnyX = BlockSpec<Full, zero_map, any>;
    using Tile = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
    using K = pallas_call<Grid<64>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
    int runs = 0;
    const auto body = [&](auto x, auto o) {
        ++runs;
        const index_t i = program_id(0);
        emit_pipeline([](auto a, auto b) { store(b, load(a) * 2.0f); }, {1}, in_specs<Tile>, out_specs<Tile>)(
            x.at(ds(i * 8, 8), ds(0, 128)), o.at(ds(i * 8, 8), ds(0, 128)));
    };
    auto run = [&](bool steady) {
        runs = 0;
        K k{};
        k.options.per_step = per_step_rows::never;
        if (steady) k.options.steady_body = body_edges{};
        return k.predict(body);
    };
    const report every = run(false);
    EXPECT_EQ(runs, 64);
    const report steady = run(true);
    EXPECT_EQ(runs, 64);
    EXPECT_EQ(steady.device_time, every.device_time);
    expect_same_counts(steady, every);
}

// ---- Two running cores: each core's part of the grid, its edges at the part's ends ------------

constexpr index_t part_steps = 2048;
using HandParts = hand_test::hand_add_parts<2, part_steps>::call;

// The pipeline over v5p's two cores (a part of the rows each), counting its runs; `extra(part, i)`
// adds a charge at step i of a part where it says so.
struct counted_parts {
    int* runs;
    bool (*extra)(index_t, index_t) = nullptr;
    template <class... A>
    void operator()(A... a) const {
        ++*runs;
        hand_test::hand_add_parts_body(a...);
        if (extra != nullptr && extra(program_id(0), program_id(1))) charge(work{.explicit_seconds = 1e-7});
    }
};

report predict_parts(const counted_parts& body, std::optional<body_edges> edges) {
    HandParts k{};
    k.options.per_step = per_step_rows::never;
    k.options.steady_body = edges;
    return k.predict(body);
}

TEST(SteadyBody, TwoRunningCoresSkipTheirPartsTogether) {
    static_assert(HandParts::info.cores == 2);
    int runs = 0;
    const counted_parts body{&runs};
    const report every = predict_parts(body, std::nullopt);
    EXPECT_EQ(runs, 2 * part_steps);
    runs = 0;
    const report steady = predict_parts(body, body_edges{});
    expect_same_prediction(steady, every);
    EXPECT_LT(runs, 2 * 64) << runs;  // about log2(steps) periods a core
    EXPECT_GT(steady.steady_ops, steady.ops * 9 / 10);
    // The edges are at each part's ends: core 0's last three steps (mid-grid) charge more, edges of 3.
    const counted_parts tail{&runs, [](index_t part, index_t i) { return part == 0 && i >= part_steps - 3; }};
    const report every_tail = predict_parts(tail, std::nullopt);
    runs = 0;
    expect_same_prediction(predict_parts(tail, body_edges{.first = 1, .last = 3}), every_tail);
    EXPECT_LT(runs, 2 * 64) << runs;
    // And at the start of core 1's part (the middle of the grid): steps 50 to 59 charge more,
    // first edges of 64 steps.
    const counted_parts head{&runs, [](index_t part, index_t i) { return part == 1 && i >= 50 && i < 60; }};
    const report every_head = predict_parts(head, std::nullopt);
    runs = 0;
    expect_same_prediction(predict_parts(head, body_edges{.first = 64, .last = 1}), every_head);
    EXPECT_LT(runs, 2 * 64 + 64) << runs;
    // With the default edges core 0's tail is K4, naming the core.
    expect_rule([&] { return predict_parts(tail, body_edges{}); }, "K4", "core 0, step");
}

// The same with core 1 held in a wait at step `held_at` of its part until core 0's last step
// signals it: the model finds core 0's periods while core 1's body waits inside a step, and
// core 1 skips its own once core 0 has ended.
using Parts = hand_test::hand_add_parts<2, part_steps>;
using HeldParts =
    pallas_call<Grid<2, part_steps>, Semantics<parallel, arbitrary>,
                In<Arg<Parts::X, Parts::AnyX>, Arg<Parts::X, Parts::AnyX>>, Out<Arg<Parts::X, Parts::AnyX>>,
                Parts::Slots, Parts::Slots, Parts::Slots, Parts::Sems, Parts::Sems,
                Scratch<semaphore, regular_semaphore, 1>, Chip<tpu::v5p>>;

struct held_parts {
    std::array<int, 2>* runs;  // per part (core)
    index_t held_at = 0;
    template <class A, class B, class O, class AB, class BB, class OB, class IS, class OS, class S>
    void operator()(A a, B b, O o, AB abuf, BB bbuf, OB obuf, IS in_sem, OS out_sem, S held) const {
        const index_t part = program_id(0), i = program_id(1), n = num_programs(1);
        ++(*runs)[static_cast<std::size_t>(part)];
        if (part == 1 && i == held_at) semaphore_wait(held.at(0), 1);
        hand_test::hand_add_step(part * n, i, n, a, b, o, abuf, bbuf, obuf, in_sem, out_sem);
        if (part == 0 && i == n - 1) semaphore_signal(held.at(0), 1, 1);
    }
};

report predict_held(std::array<int, 2>& runs, index_t held_at, std::optional<body_edges> edges) {
    HeldParts k{};
    k.options.per_step = per_step_rows::never;
    k.options.steady_body = edges;
    return k.predict(held_parts{&runs, held_at});
}

// (A timing-only megacore run takes core 1's wait on credit, on one thread: the model holds
// core 1 at the wait's op until core 0's signal.)
TEST(SteadyBody, ACoreHeldInAWaitWhileTheOtherRunsPredictsWhatEveryStepDoes) {
    // Held from its first step (an edge), and from step 110 with first edges of 128 steps.
    for (const auto& [at, first] : {std::pair<index_t, index_t>{0, 1}, {110, 128}}) {
        SCOPED_TRACE(at);
        std::array<int, 2> runs{};
        const report every = predict_held(runs, at, std::nullopt);
        EXPECT_GE(runs[0], part_steps);
        EXPECT_GE(runs[1], part_steps);
        runs = {};
        const report steady = predict_held(runs, at, body_edges{.first = first, .last = 1});
        expect_same_prediction(steady, every);
        EXPECT_EQ(steady.stats.sem_signals, 1);
        // Core 1 runs its steps from `at` on once core 0 has ended (each about as long as core 0's).
        const double step = steady.core[0].time / static_cast<double>(part_steps);
        EXPECT_GT(steady.core[1].time,
                  steady.core[0].time + 0.9 * step * static_cast<double>(part_steps - at));
        // Core 0 runs every step; core 1 its steps up to the wait (twice) and about log2(steps)
        // periods after the edge.
        EXPECT_GE(runs[0], part_steps);
        EXPECT_LT(runs[1], 2 * (at + 1) + first + 64) << runs[1];
        EXPECT_GT(steady.steady_ops, steady.ops / 4);
    }
}

// Cores meeting at a barrier at the end of every step (each signals the other's semaphore, then
// waits for the other's signal): the model's lane follows both cores through the signals, whose
// semaphores are part of the state it compares, and declared steady each core's runner skips its
// part's periods in the stretches the lane finds. Both predict what every op simulated predicts,
// per-step rows included.
struct barrier_parts {
    int* runs;
    template <class A, class B, class O, class AB, class BB, class OB, class IS, class OS, class S>
    void operator()(A a, B b, O o, AB abuf, BB bbuf, OB obuf, IS in_sem, OS out_sem, S met) const {
        const index_t part = program_id(0), i = program_id(1), n = num_programs(1);
        ++*runs;
        hand_test::hand_add_step(part * n, i, n, a, b, o, abuf, bbuf, obuf, in_sem, out_sem);
        semaphore_signal(met.at(0), 1, 1 - static_cast<int>(part));
        semaphore_wait(met.at(0), 1);
    }
};

TEST(SteadyBody, CoresMeetingAtABarrierEveryStepSkipTheirPeriodsTogether) {
    int runs = 0;
    auto predict_barrier = [&](bool lane, std::optional<body_edges> edges) {
        HeldParts k{};
        k.options.per_step = per_step_rows::always;
        k.options.steady_state = lane;
        k.options.steady_body = edges;
        runs = 0;
        return k.predict(barrier_parts{&runs});
    };
    const report every = predict_barrier(false, std::nullopt);
    EXPECT_EQ(every.steady_ops, 0);
    EXPECT_EQ(every.stats.sem_signals, 2 * part_steps);
    for (const std::optional<body_edges> edges : {std::optional<body_edges>{}, std::optional{body_edges{}}}) {
        SCOPED_TRACE(edges.has_value());
        const report r = predict_barrier(true, edges);
        expect_same_prediction(r, every);
        EXPECT_GT(r.steady_ops, r.ops * 9 / 10);
        if (edges)
            EXPECT_LT(runs, 2 * 64) << runs;  // about log2(steps) periods a core
        else
            EXPECT_EQ(runs, 2 * part_steps);
        ASSERT_EQ(r.steps.size(), every.steps.size());
        for (std::size_t i = 0; i < every.steps.size(); ++i) {
            const double tol = 1e-9 * every.device_time;
            EXPECT_EQ(r.steps[i].step, every.steps[i].step) << i;
            EXPECT_EQ(r.steps[i].core, every.steps[i].core) << i;
            EXPECT_NEAR(r.steps[i].begin, every.steps[i].begin, tol) << i;
            EXPECT_NEAR(r.steps[i].end, every.steps[i].end, tol) << i;
            EXPECT_NEAR(r.steps[i].sem_wait, every.steps[i].sem_wait, tol) << i;
        }
    }
}

// The barrier kernel configured by values (dynamic_call, its barrier semaphore an
// Operand<regular_semaphore, 1, semaphore> scratch): the same prediction as the static call,
// every step and declared steady, with its periods skipped both ways.
TEST(SteadyBody, ADynamicCallWithABarrierPredictsWhatTheStaticCallDoes) {
    using Met = Operand<regular_semaphore, 1, semaphore>;
    using dyn_barrier =
        dynamic_call<In<hand_test::DynAny, hand_test::DynAny>, Out<hand_test::DynAny>,
                     ScratchShapes<hand_test::DynSlots, hand_test::DynSlots, hand_test::DynSlots,
                                   hand_test::DynSems, hand_test::DynSems, Met>>;
    const hand_test::dyn_add_parts_call base = hand_test::dyn_add_parts(2, part_steps, tpu::v5p);
    dyn_barrier d;
    d.grid = base.grid;
    d.semantics = base.semantics;
    d.chip = base.chip;
    d.in = base.in;
    d.out = base.out;
    for (std::size_t k = 0; k < 5; ++k) d.scratch[k] = base.scratch[k];
    d.scratch[5] = {1};
    d.options.per_step = per_step_rows::never;
    int runs = 0;
    for (const std::optional<body_edges> edges : {std::optional<body_edges>{}, std::optional{body_edges{}}}) {
        SCOPED_TRACE(edges.has_value());
        HeldParts k{};
        k.options.per_step = per_step_rows::never;
        k.options.steady_body = edges;
        const report fixed = k.predict(barrier_parts{&runs});
        d.options.steady_body = edges;
        runs = 0;
        const report r = d.predict(barrier_parts{&runs});
        expect_same_prediction(r, fixed);
        EXPECT_GT(r.steady_ops, r.ops * 9 / 10);
        if (edges)
            EXPECT_LT(runs, 2 * 64) << runs;
        else
            EXPECT_EQ(runs, 2 * part_steps);
    }
}

// Declared steady with edges that leave step 100's wait inside a skipped stretch, the wait is
// skipped: the semaphore core 0 signals is left raised, which is 39 at exit, and the message
// says that steps of a body declared steady were made without running it.
TEST(SteadyBody, AWaitSkippedInsideTheEdgesIs39NamingTheDeclaration) {
    std::array<int, 2> runs{};
    expect_rule([&] { return predict_held(runs, 100, body_edges{}); }, "39", "declared steady");
    expect_rule([&] { return predict_held(runs, 100, body_edges{}); }, "39", "widen body_edges");
    // Edges over the wait: the same kernel predicts.
    EXPECT_EQ(predict_held(runs, 100, body_edges{.first = 128, .last = 1}).device_time,
              predict_held(runs, 100, std::nullopt).device_time);
}

// The same pipeline as a dynamic_call (its DMA semaphores are Operand<dma_semaphore, 1,
// semaphore> scratch): declared steady through its run_options, it predicts what the static call
// predicts, both ways.
TEST(SteadyBody, ADynamicCallOnTwoCoresSkipsItsPartsToo) {
    auto d = hand_test::dyn_add_parts(2, part_steps, tpu::v5p);
    d.options.per_step = per_step_rows::never;
    int runs = 0;
    const counted_parts body{&runs};
    const report every = d.predict(body);
    EXPECT_EQ(runs, 2 * part_steps);
    const report every_static = predict_parts(body, std::nullopt);
    EXPECT_EQ(every.device_time, every_static.device_time);
    expect_same_counts(every, every_static);
    runs = 0;
    d.options.steady_body = body_edges{};
    const report steady = d.predict(body);
    expect_same_prediction(steady, every);
    EXPECT_LT(runs, 2 * 64) << runs;
    EXPECT_GT(steady.steady_ops, steady.ops * 9 / 10);
    // And on data: the sum, computed by the body's copies on each core.
    const auto n = static_cast<std::size_t>(2 * part_steps * 8 * 128);
    std::vector<float> a(n), b(n), sum(n);
    for (std::size_t k = 0; k < n; ++k) {
        a[k] = static_cast<float>(k % 29) - 14.0f;
        b[k] = static_cast<float>(k % 17) * 0.5f;
        sum[k] = a[k] + b[k];
    }
    d.options.steady_body.reset();
    auto [out, rep] = d(hand_test::hand_add_parts_body, a, b);
    EXPECT_EQ(out.vector(), sum);
    EXPECT_EQ(rep.device_time, every.device_time);
}

}  // namespace
