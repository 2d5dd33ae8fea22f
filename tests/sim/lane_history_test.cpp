// The steady-state lane's period detector on its own (sim/lane_history.hpp): boundaries recorded
// by hand, the ops between them, the period found, the cycle it becomes and the history rebuilt
// after a skip. No engine: the state a boundary holds is written here as
// period_skip::record would write it.
#include <gtest/gtest.h>

#include <ptpu/sim/lane_history.hpp>

#include <cstdint>
#include <vector>

namespace {

using ptpu::sim::detail::boundary;
using ptpu::sim::detail::core_set;
using ptpu::sim::detail::cycle;
using ptpu::sim::detail::lane_history;
using ptpu::sim::detail::max_period;
using ptpu::sim::detail::op;
using ptpu::sim::detail::op_kind;
using ptpu::sim::detail::row_mark;

constexpr double dt = 1e-6;  // the lead's time per step

// One core's history, recorded as a pipeline whose ops repeat every `p` steps gives it: step s
// starts one DMA (ids count starts) and computes work 1 + s % p; its state is the same at every
// boundary, relative to its clock.
struct one_core {
    lane_history h;
    std::uint32_t step = 0;
    std::uint32_t starts = 0;
    std::uint64_t ran = 0;
    int p = 1;
    ptpu::per_core<std::uint32_t> last{};

    // `across`: periods may hold a signal to another core the lane follows.
    explicit one_core(int period, bool across = false) : p(period) {
        h.open(2, across);
        h.follow(true, core_set::one(0), 1);
    }
    // The boundary before step `step`, as the engine records it; the period found there (0:
    // none; -1: no search, cooling down).
    int boundary_here() {
        boundary& b = h.next();
        b = boundary{};
        b.t = dt * step;
        b.starts[0] = starts;
        b.ord[0] = ran;
        b.sum.ops = static_cast<std::int64_t>(ran);
        if (!h.close_boundary(step, last)) return -1;
        return h.find_period([](const boundary&, const boundary&, const auto&) { return true; });
    }
    // Step `step`'s ops, and `extra` (of that step) among them if given.
    void ops(const op* extra = nullptr) {
        const auto rec = [&](const op& o) {
            h.record(0, o, false, [](op&) {});
            ++ran;
        };
        rec({.kind = op_kind::overhead, .step = step});
        rec({.kind = op_kind::dma_start, .dma = starts++, .bytes = 4096, .step = step});
        rec({.kind = op_kind::compute, .work = 1 + step % static_cast<std::uint32_t>(p), .step = step});
        if (extra != nullptr) {
            op x = *extra;
            x.step = step;
            rec(x);
        }
        last[0] = step;
        ++step;
    }
    // A boundary, and the step's ops unless a period was found there (the lane holds them).
    int next(const op* extra = nullptr) {
        const int found = boundary_here();
        if (found <= 0) ops(extra);
        return found;
    }
};

TEST(LaneHistory, FindsTheShortestPeriodOnceTwoRepetitionsAgree) {
    for (const int p : {1, 2, 3, 7}) {
        one_core k(p);
        int first = 0;
        int at = -1;
        for (int s = 0; s < 4 * p + 4 && first == 0; ++s) {
            first = k.next();
            at = s;
        }
        EXPECT_EQ(first, p);
        // The state at a boundary must equal the one p earlier, and the last p boundaries' ops
        // the p before: two periods of ops, then the boundary ending them.
        EXPECT_EQ(at, 2 * p) << p;
    }
}

TEST(LaneHistory, TheCycleIsThePeriodRelativeToItsStart) {
    one_core k(2);
    while (k.next() != 2) {
    }
    k.h.take_cycle(2);
    const cycle& c = k.h.found();
    EXPECT_EQ(c.period, 2);
    EXPECT_EQ(c.starts[0], 2u);
    EXPECT_EQ(c.steps[0], 2u);
    EXPECT_EQ(c.runs[0], 6u);
    EXPECT_DOUBLE_EQ(c.dt, 2 * dt);
    EXPECT_EQ(c.sum.ops, 6);
    ASSERT_EQ(c.ops[0].size(), 6u);
    // Ids relative to the period's first start, steps to its first step.
    EXPECT_EQ(c.ops[0][1].dma, 0u);
    EXPECT_EQ(c.ops[0][4].dma, 1u);
    EXPECT_EQ(c.ops[0][3].step, 1u);
    EXPECT_EQ(c.ops[0][2].work, c.ops[0][5].work - 1);
}

TEST(LaneHistory, AStepSignallingAnotherCoreIsNeverPartOfAPeriod) {
    one_core k(1);
    const op signal{.kind = op_kind::sem_signal, .core = 1, .bytes = 1, .sem = 1};
    for (int s = 0; s < 3 * max_period; ++s) EXPECT_LE(k.next(&signal), 0) << s;
    // A signal to its own core is an op like another.
    one_core own(1);
    const op to_self{.kind = op_kind::sem_signal, .core = 0, .bytes = 1, .sem = 1};
    int found = 0;
    for (int s = 0; s < 8 && found <= 0; ++s) found = own.next(&to_self);
    EXPECT_EQ(found, 1);
}

// With signals across cores (options::signals_across_cores), a step signalling another core is
// part of a period when the lane follows that core too (its semaphores are in the state
// compared), and never when it does not.
TEST(LaneHistory, WithSignalsAcrossCoresASignalToACoreTheLaneFollowsIsPartOfAPeriod) {
    const op signal{.kind = op_kind::sem_signal, .core = 1, .bytes = 1, .sem = 1};
    one_core alone(1, true);  // the lane follows core 0 alone
    for (int s = 0; s < 3 * max_period; ++s) EXPECT_LE(alone.next(&signal), 0) << s;
    one_core both(1, true);
    core_set two = core_set::one(0);
    two.at[1] = 1;
    two.n = 2;
    both.h.follow(true, two, 3);  // core 1 brings no ops of its own here
    int found = 0;
    for (int s = 0; s < 8 && found <= 0; ++s) found = both.next(&signal);
    EXPECT_EQ(found, 1);
}

TEST(LaneHistory, ACycleThatDidNotRepeatCoolsTheSearchDown) {
    one_core k(2);
    while (k.next() != 2) {
    }
    k.h.take_cycle(2);
    k.h.cool_down();  // the lane matched no whole period: no search for a period's boundaries
    k.ops();
    EXPECT_EQ(k.boundary_here(), -1);
    k.ops();
    EXPECT_EQ(k.boundary_here(), -1);
    k.ops();
    EXPECT_EQ(k.boundary_here(), 2);
}

TEST(LaneHistory, AStepTooLongToRecordBreaksTheHistory) {
    one_core k(1);
    for (int s = 0; s < 2; ++s) (void)k.next();
    // A step of max_recorded_ops ops and more (an inner pipeline's thousands of steps in one).
    (void)k.boundary_here();
    for (std::size_t i = 0; i <= ptpu::sim::detail::max_recorded_ops; ++i)
        k.h.record(0, {.kind = op_kind::overhead, .step = k.step}, false, [](op&) {});
    k.last[0] = k.step++;
    EXPECT_EQ(k.h.at(2).batch[0].size(), ptpu::sim::detail::max_recorded_ops);  // recorded up to the bound
    // No period through it: the history starts again at the next boundary, and finds the
    // period two periods after it.
    int found = 0;
    int at = 0;
    for (; at < 8 && found <= 0; ++at) found = k.next();
    EXPECT_EQ(found, 1);
    EXPECT_EQ(at, 3);
}

TEST(LaneHistory, OtherCoresStartAnotherHistory) {
    one_core k(1);
    for (int s = 0; s < 5; ++s) (void)k.next();
    EXPECT_EQ(k.h.count(), 5);
    k.h.follow(true, core_set::one(0), 1);  // the same cores: kept
    EXPECT_EQ(k.h.count(), 5);
    core_set two = core_set::one(0);
    two.at[1] = 1;
    two.n = 2;
    k.h.follow(true, two, 3);
    EXPECT_EQ(k.h.count(), 0);
    EXPECT_EQ(k.h.cores().n, 2);
    k.h.follow(false, two, 3);  // no lane
    EXPECT_EQ(k.h.count(), 0);
}

TEST(LaneHistory, AfterASkipTheHistoryIsAsIfThePeriodsHadBeenRecorded) {
    one_core k(3);
    while (k.next() != 3) {
    }
    EXPECT_EQ(k.step, 6u);  // the boundary before step 6 ends the second period
    k.h.take_cycle(3);
    const std::int64_t j = k.h.count() - 1;
    const boundary then = k.h.at(j);
    constexpr std::int64_t m = 100;
    k.h.skipped(m, row_mark{},
                [](const row_mark& x, const row_mark&, const row_mark&, std::int64_t) { return x; });
    // The boundary the lane leaves at: m periods of 3 steps on.
    EXPECT_EQ(k.h.count(), j + m * 3 + 1);
    const boundary& now = k.h.at(k.h.count() - 1);
    EXPECT_DOUBLE_EQ(now.t, then.t + m * 3 * dt);
    EXPECT_EQ(now.step[0], then.step[0] + m * 3);
    EXPECT_EQ(now.starts[0], then.starts[0] + m * 3);
    EXPECT_EQ(now.ord[0], then.ord[0] + m * 9);
    EXPECT_EQ(now.sum.ops, then.sum.ops + m * 9);
    // A boundary a period and a half back stands for the one as far back in the cycle.
    const boundary& back = k.h.at(k.h.count() - 1 - 4);
    EXPECT_DOUBLE_EQ(back.t, now.t - 4 * dt);
    EXPECT_EQ(back.step[0], now.step[0] - 4);
    // The core goes on from there (its ops simulated again), and the next boundary finds the
    // period at once: the history is that of the periods skipped.
    k.step += static_cast<std::uint32_t>(m * 3);
    k.starts += static_cast<std::uint32_t>(m * 3);
    k.ran += static_cast<std::uint64_t>(m * 9);
    k.last[0] += static_cast<std::uint32_t>(m * 3);
    k.h.restart_lead_at(k.step);
    k.ops();
    EXPECT_EQ(k.boundary_here(), 3);
}

}  // namespace
