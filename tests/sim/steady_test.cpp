// Tests the engine's steady-state fast lane (sim::options::steady_state, docs/model.md "Steady
// state"): every stream is simulated twice, op by op and with the fast lane, and the two results
// must agree (times to 1e-9 relative, counts exactly), while the fast lane skips what it should:
// period-1 and longer periods (a reduction axis), a pattern that changes midway, a stream that
// never repeats, a stream ending mid-period, steps too long to record, copies into semaphores, megacore (two
// running cores: periods of both, in and out of phase, uneven splits, copies into each core's own
// semaphores; one core left: skipped alone; cores meeting at a barrier, also taking turns as on
// data, a core blocked on the host), and malformed ops after the steady state (still SIM1/SIM2).
#include <gtest/gtest.h>

#include <ptpu/hw/presets.hpp>
#include <ptpu/sim/engine.hpp>
#include <ptpu/sim/steady.hpp>  // (the lane's bounds)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "explicit_streams.hpp"

namespace {

using ptpu::sim::op;
using ptpu::sim::op_kind;
using ptpu::sim::options;
using ptpu::sim::result;
namespace tpu = ptpu::tpu;
using stream_test::vec_source;
using stream_test::work_of;
using stream_test::works;

constexpr double us = 1e-6;

// Chip `c` with a step overhead of `o` (an overhead op's time is the chip's).
ptpu::chip with_overhead(const ptpu::chip& c, double o) {
    ptpu::chip k = c;
    k.step_overhead_s = o;
    return k;
}

// A pipeline over `n` steps of a reduction-style kernel as the executor emits it: two inputs
// double-buffered (fetched every step), one output whose block changes every `k` steps (written
// at the last step of each run, waited one run later). Ids count starts, as the executor's do.
// `compute(s)` gives step s's body time.
struct pipeline {
    int n = 1000;
    int k = 1;
    std::int64_t in_bytes = 4096;
    std::int64_t out_bytes = 4096;
    std::function<double(int)> compute = [](int) { return 0.2 * us; };
    double overhead = 0.35 * us;
    int cores = 1;        // the same stream on each core
    int short_core1 = 0;  // core 1 runs only this many steps (0: n)
    std::vector<int> steps_of;            // per core: its step count, overriding n and short_core1
    std::function<double(int)> compute1;  // core 1's body time (empty: compute)
    std::int64_t in_bytes1 = 0;           // core 1's input bytes (0: in_bytes)
    // The first `merged` steps' ops are those of one step (an inner pipeline's steps in one step
    // of the kernel): step s is numbered max(0, s - merged + 1).
    int merged = 0;
    int group = 1;  // then every `group` steps' ops are those of one step
    // The DMAs complete into DMA semaphores, as a body's async copies do (S58): the inputs of
    // step s into semaphore 1 + s % 2, waited for together; the output into semaphore 3.
    bool semaphores = false;
    bool signal_core1 = false;  // core 0 signals core 1's semaphore 4 every step
    // Every core signals each other core's semaphore 5 after its compute, then waits on its own
    // for the others' signals: the cores meet at a barrier every step.
    bool barrier = false;
    bool across = false;  // options::signals_across_cores

    std::vector<op> stream(int steps, int core = 0) const {
        const auto& compute = core == 1 && compute1 ? compute1 : this->compute;
        const std::int64_t in_bytes = core == 1 && in_bytes1 > 0 ? in_bytes1 : this->in_bytes;
        std::vector<op> v;
        std::uint32_t id = 0;
        const int m = merged, g = group;
        const auto u = [m, g](int s) {
            return static_cast<std::uint32_t>((m > 0 ? std::max(0, s - m + 1) : s) / g);
        };
        const bool sems = semaphores;
        const auto in_sem = [](int s) { return static_cast<std::uint32_t>(1 + s % 2); };
        auto start = [&](std::int64_t bytes, int s, std::uint32_t sem) {
            v.push_back(
                {.kind = op_kind::dma_start, .dma = id, .bytes = bytes, .sem = sems ? sem : 0, .step = u(s)});
            return id++;
        };
        auto wait = [&](std::uint32_t d, int s) {
            v.push_back({.kind = op_kind::dma_wait, .dma = d, .step = u(s)});
        };
        auto wait_sem = [&](std::uint32_t sem, std::int64_t bytes, int s) {
            v.push_back(
                {.kind = op_kind::sem_wait, .dma_sem = true, .bytes = bytes, .sem = sem, .step = u(s)});
        };
        std::uint32_t in_flight[2] = {};
        in_flight[0] = start(in_bytes, 0, in_sem(0));
        in_flight[1] = start(in_bytes, 0, in_sem(0));
        std::uint32_t write = 0;
        bool write_pending = false;
        auto wait_write = [&](int s) {
            if (sems)  // (counted as a semaphore wait, not a DMA's: wait_sem)
                v.push_back({.kind = op_kind::sem_wait, .bytes = out_bytes, .sem = 3, .step = u(s)});
            else
                wait(write, s);
        };
        for (int s = 0; s < steps; ++s) {
            v.push_back({.kind = op_kind::overhead, .step = u(s)});  // (the chip's, `overhead`)
            std::uint32_t next[2] = {};
            if (s + 1 < steps)
                for (auto& d : next) d = start(in_bytes, s, in_sem(s + 1));
            if (sems) {
                wait_sem(in_sem(s), 2 * in_bytes, s);
            } else {
                wait(in_flight[0], s);
                wait(in_flight[1], s);
            }
            in_flight[0] = next[0];
            in_flight[1] = next[1];
            v.push_back({.kind = op_kind::compute, .work = work_of(compute(s)), .step = u(s)});
            if (signal_core1 && core == 0)
                v.push_back({.kind = op_kind::sem_signal, .core = 1, .bytes = 1, .sem = 4, .step = u(s)});
            if (barrier) {
                for (int other = 0; other < cores; ++other)
                    if (other != core)
                        v.push_back({.kind = op_kind::sem_signal,
                                     .core = static_cast<std::uint8_t>(other),
                                     .bytes = 1,
                                     .sem = 5,
                                     .step = u(s)});
                v.push_back({.kind = op_kind::sem_wait, .bytes = cores - 1, .sem = 5, .step = u(s)});
            }
            if (s % k == 0 && write_pending) {  // the previous run's write (S23.5)
                wait_write(s);
                write_pending = false;
            }
            if (s % k == k - 1 || s + 1 == steps) {
                write = start(out_bytes, s, 3);
                write_pending = true;
            }
        }
        if (write_pending) wait_write(steps - 1);
        return v;
    }
};

result simulate(const pipeline& p, bool steady, const ptpu::chip& c = tpu::v5e, bool rows = false) {
    vec_source src;
    for (int k = 0; k < p.cores; ++k) {
        const auto u = static_cast<std::size_t>(k);
        const int steps = u < p.steps_of.size()         ? p.steps_of[u]
                          : k == 1 && p.short_core1 > 0 ? p.short_core1
                                                        : p.n;
        src.ops[u] = p.stream(steps, k);
    }
    options o;
    o.steady_state = steady;
    o.semaphores = p.semaphores;
    o.signals_across_cores = p.across;
    o.per_step = rows;
    o.works = &works();
    return ptpu::sim::simulate(with_overhead(c, p.overhead), p.cores, src, o);
}

void expect_near_rel(double a, double b, double scale) {
    EXPECT_LE(std::abs(a - b), 1e-9 * scale) << a << " vs " << b;
}

// Op by op and fast-laned agree: counts exactly, times to 1e-9 of the device time.
result expect_same(const pipeline& p, const ptpu::chip& c = tpu::v5e) {
    const result exact = simulate(p, false, c);
    const result fast = simulate(p, true, c);
    EXPECT_EQ(exact.steady_ops, 0);
    EXPECT_EQ(fast.op_count, exact.op_count);
    EXPECT_EQ(fast.dma_count, exact.dma_count);
    EXPECT_EQ(fast.hbm_bytes, exact.hbm_bytes);
    EXPECT_EQ(fast.onchip_bytes, exact.onchip_bytes);
    EXPECT_EQ(fast.dangling_dmas, exact.dangling_dmas);
    const double T = exact.device_time;
    expect_near_rel(fast.device_time, T, T);
    expect_near_rel(fast.hbm_busy_time, exact.hbm_busy_time, T);
    for (int k = 0; k < p.cores; ++k) {
        expect_near_rel(fast.core_time[k], exact.core_time[k], T);
        expect_near_rel(fast.busy_overhead[k], exact.busy_overhead[k], T);
        expect_near_rel(fast.busy_issue[k], exact.busy_issue[k], T);
        expect_near_rel(fast.busy_compute[k], exact.busy_compute[k], T);
        expect_near_rel(fast.wait_dma[k], exact.wait_dma[k], T);
        expect_near_rel(fast.wait_sem[k], exact.wait_sem[k], T);
    }
    for (std::size_t w = 0; w < exact.wait_by_operand.size(); ++w)
        expect_near_rel(fast.wait_by_operand[w], exact.wait_by_operand[w], T);
    return fast;
}

TEST(SimSteady, DmaBoundPeriodOneIsSkippedAndExact) {
    pipeline p;
    p.n = 20000;
    p.in_bytes = 1 << 20;  // DMA-bound: the core waits every step
    const result r = expect_same(p);
    EXPECT_GT(r.steady_ops, r.op_count * 95 / 100);
    EXPECT_GT(r.wait_dma[0], 0.5 * r.device_time);
}

TEST(SimSteady, ComputeBoundPeriodOneIsSkippedAndExact) {
    pipeline p;
    p.n = 20000;
    p.compute = [](int) { return 5 * us; };
    const result r = expect_same(p);
    EXPECT_GT(r.steady_ops, r.op_count * 95 / 100);
    EXPECT_LT(r.wait_dma[0], 0.01 * r.device_time);
}

TEST(SimSteady, ReductionAxisPeriodsAreSkipped) {
    // Output written every k steps: the stream repeats with period k (here 4, 7 and 10).
    for (const int k : {4, 7, 10}) {
        pipeline p;
        p.n = 20000;
        p.k = k;
        p.out_bytes = 1 << 20;  // large enough to matter
        const result r = expect_same(p);
        EXPECT_GT(r.steady_ops, r.op_count * 90 / 100) << "k = " << k;
    }
}

TEST(SimSteady, PatternChangingMidwayIsSkippedOnBothSides) {
    pipeline p;
    p.n = 20000;
    p.compute = [](int s) { return s < 10000 ? 0.2 * us : 3 * us; };
    const result r = expect_same(p);
    EXPECT_GT(r.steady_ops, r.op_count * 90 / 100);
}

TEST(SimSteady, StreamThatNeverRepeatsIsSimulatedOpByOp) {
    pipeline p;
    p.n = 3000;
    p.compute = [](int s) { return (1 + s % 97) * 0.01 * us + s * 1e-12; };  // a new time every step
    const result r = expect_same(p);
    EXPECT_EQ(r.steady_ops, 0);
}

TEST(SimSteady, StreamEndingMidPeriodIsExact) {
    for (const int n : {1001, 1002, 1003, 1005, 1008}) {
        pipeline p;
        p.n = n;
        p.k = 8;
        expect_same(p);
    }
}

TEST(SimSteady, ShortStreamsAreExact) {
    for (int n = 1; n < 40; ++n) {
        pipeline p;
        p.n = n;
        p.k = 3;
        expect_same(p);
    }
}

TEST(SimSteady, StepsTooLongToRecordAreSimulatedThenTheLaneResumes) {
    // 20,000 steps of ~7 ops in one step: past sim::detail::max_recorded_ops, so no period goes through
    // it; the 4,000 steps after it are skipped as usual. Exact either way.
    pipeline p;
    p.n = 24000;
    p.merged = 20000;
    const result r = expect_same(p);
    static_assert(ptpu::sim::detail::max_recorded_ops < 20000 * 6);
    const result tail = [&] {
        pipeline q;
        q.n = 4000;
        return simulate(q, false);
    }();
    EXPECT_GT(r.steady_ops, tail.op_count * 9 / 10);  // the steps after the long one
    EXPECT_LT(r.steady_ops, tail.op_count);           // none of the long one's
    p.n = 20000;                                      // the long step alone: nothing to skip
    EXPECT_EQ(expect_same(p).steady_ops, 0);
    // Long steps that repeat: skipped while recorded (1,000 steps of the pipeline in each),
    // simulated op by op past the bound (12,000 in each).
    p.merged = 0;
    p.n = 60000;
    p.group = 1000;
    EXPECT_GT(expect_same(p).steady_ops, 0);
    p.group = 12000;
    EXPECT_EQ(expect_same(p).steady_ops, 0);
}

TEST(SimSteady, DmasIntoSemaphoresAreSkippedAndExact) {
    // A body's async copies: the semaphores' values and the copies in flight into them are part
    // of the state a period must repeat.
    pipeline p;
    p.n = 20000;
    p.semaphores = true;
    for (const std::int64_t in : {std::int64_t{4096}, std::int64_t{1} << 20}) {
        p.in_bytes = in;
        for (const int k : {1, 4}) {
            p.k = k;
            p.out_bytes = 1 << 20;  // the write's wait is a semaphore wait of its own (wait_sem)
            const result r = expect_same(p);
            EXPECT_GT(r.steady_ops, r.op_count * 9 / 10) << in << " " << k;
            if (k == 4) {  // (skipped periods add it too)
                EXPECT_GT(r.wait_sem[0], 0.005 * r.device_time);
            }
        }
    }
}

TEST(SimSteady, SemaphoreStreamsOnTwoCoresAreSkippedTogether) {
    // Megacore with semaphores that stay on their core (copies into its own DMA semaphores): the
    // lane follows both cores (each core's semaphores and a core blocked on one are part of the
    // state), then the core left once the other's stream and its copies have ended.
    pipeline p;
    p.n = 8000;
    p.cores = 2;
    p.semaphores = true;
    for (const std::int64_t in : {std::int64_t{4096}, std::int64_t{1} << 20}) {
        for (const int k : {1, 4}) {
            p.in_bytes = in;  // 1 MiB: DMA-bound, the cores blocked on their semaphores by turns
            p.k = k;
            p.out_bytes = 1 << 20;
            p.short_core1 = 8000;
            const result both = expect_same(p, tpu::v5p);
            EXPECT_GT(both.steady_ops, both.op_count * 9 / 10) << in << " " << k;
            EXPECT_GT(both.wait_sem[0] + both.wait_sem[1] + both.wait_dma[0] + both.wait_dma[1], 0.0);
            p.short_core1 = 1000;
            const result r = expect_same(p, tpu::v5p);
            EXPECT_GT(r.steady_ops, r.op_count * 8 / 10) << in << " " << k;
        }
    }
    // Core 1 out of phase (shorter steps): whatever the lane finds, the op-by-op prediction.
    p.in_bytes = 4096;
    p.k = 1;
    p.short_core1 = 0;
    p.compute = [](int) { return 1.0 * us; };
    p.compute1 = [](int) { return 0.7 * us; };
    expect_same(p, tpu::v5p);
    // Core 0 signalling core 1 every step: without options::signals_across_cores a signal
    // crossing cores is never part of a period.
    p.compute1 = {};
    p.signal_core1 = true;
    EXPECT_EQ(expect_same(p, tpu::v5p).steady_ops, 0);
    p.short_core1 = 1000;
    EXPECT_EQ(expect_same(p, tpu::v5p).steady_ops, 0);
}

// ---- Megacore: the lane of both cores running on one HBM ----------------------------------------

TEST(SimSteady, TwoRunningCoresAreSkippedJointlyAndExact) {
    for (const ptpu::chip* c : {&tpu::v5p, &tpu::v4}) {
        pipeline p;
        p.n = 4000;
        p.cores = 2;
        const result r = expect_same(p, *c);  // the two streams in lockstep
        EXPECT_GT(r.steady_ops, r.op_count * 9 / 10);
        p.in_bytes = 1 << 20;  // DMA-bound: the cores share HBM's bandwidth every step
        const result d = expect_same(p, *c);
        EXPECT_GT(d.steady_ops, d.op_count * 9 / 10);
        EXPECT_GT(d.wait_dma[0] + d.wait_dma[1], d.device_time);
        p.in_bytes = 4096;
        p.compute = [](int) { return 5 * us; };  // compute-bound
        const result b = expect_same(p, *c);
        EXPECT_GT(b.steady_ops, b.op_count * 9 / 10);
    }
}

TEST(SimSteady, TwoCoresWithReductionAxesAreSkippedJointly) {
    for (const int k : {4, 7}) {
        pipeline p;
        p.n = 6000;
        p.k = k;
        p.cores = 2;
        p.out_bytes = 1 << 20;
        const result r = expect_same(p, tpu::v5p);
        EXPECT_GT(r.steady_ops, r.op_count * 8 / 10) << "k = " << k;
    }
}

TEST(SimSteady, UnevenSplitIsSkippedJointlyThenAlone) {
    // Core 1 has fewer steps (an odd parallel extent, or a shorter share): joint periods while
    // both run, the lane of core 0 alone once core 1's stream and DMAs have ended.
    for (const int n1 : {2500, 3999, 3001}) {
        pipeline p;
        p.n = 4000;
        p.cores = 2;
        p.short_core1 = n1;
        const result r = expect_same(p, tpu::v5p);
        EXPECT_GT(r.steady_ops, r.op_count * 9 / 10) << n1;
    }
}

TEST(SimSteady, JointStepsTooLongToRecordAreSimulatedThenTheLaneResumes) {
    // As on one core: both cores run the long step, then 2,000 steps in lockstep.
    pipeline p;
    p.n = 22000;
    p.merged = 20000;
    p.cores = 2;
    const result r = expect_same(p, tpu::v5p);
    pipeline q;
    q.n = 2000;
    q.cores = 2;
    const result tail = simulate(q, false, tpu::v5p);
    EXPECT_GT(r.steady_ops, tail.op_count * 8 / 10);
    EXPECT_LT(r.steady_ops, tail.op_count);
    p.merged = 0;  // long steps that repeat: skipped jointly while recorded, not past the bound
    p.n = 60000;
    p.group = 1000;
    EXPECT_GT(expect_same(p, tpu::v5p).steady_ops, 0);
    p.group = 12000;
    EXPECT_EQ(expect_same(p, tpu::v5p).steady_ops, 0);
}

TEST(SimSteady, CoresOutOfPhaseAreExact) {
    // Core 1's steps are shorter: it drifts ahead of core 0 by a step's fraction every step
    // while HBM is barely shared (compute-bound), and the two streams' interleaving never
    // repeats until they are locked by a shared DMA bottleneck, if ever. Whatever the lane
    // finds, the prediction must be the op-by-op one.
    pipeline p;
    p.n = 3000;
    p.cores = 2;
    p.compute = [](int) { return 1.0 * us; };
    p.compute1 = [](int) { return 0.7 * us; };
    expect_same(p, tpu::v5p);
    p.in_bytes = 1 << 19;  // DMA-bound on core 0, less on core 1
    p.in_bytes1 = 3 << 17;
    expect_same(p, tpu::v5p);
    // Core 1 changes pace midway: the joint period breaks and is found again.
    pipeline q;
    q.n = 6000;
    q.cores = 2;
    q.compute1 = [](int s) { return s < 2500 ? 0.2 * us : 0.9 * us; };
    const result r = expect_same(q, tpu::v5p);
    // Before the change both cores run in lockstep (joint periods); after it they drift apart
    // (no joint period) until core 0 ends and core 1 runs alone.
    EXPECT_GT(r.steady_ops, r.op_count / 2);
    // Phases that never repeat on core 1: no joint period, every op simulated.
    pipeline u;
    u.n = 2000;
    u.cores = 2;
    u.compute1 = [](int s) { return (1 + s % 97) * 0.01 * us + s * 1e-12; };
    const result v = expect_same(u, tpu::v5p);
    EXPECT_EQ(v.steady_ops, 0);
}

// A synthetic chip with four TensorCores (nothing in the lane assumes two).
ptpu::chip four_cores(ptpu::chip c) {
    c.cores_per_chip = 4;
    c.megacore = true;
    return c;
}

TEST(SimSteady, CoresLeftAfterOthersEndAreSkippedTogether) {
    // Four cores with parts of different lengths: the lane follows every core while all run,
    // then the cores still running once the others' streams and DMAs have ended, led by the
    // lowest-numbered of them (core 0, or core 1 when core 0 ends first).
    const ptpu::chip c = four_cores(tpu::v5p);
    const std::vector<std::vector<int>> splits = {
        {4000, 4000, 1000, 2500},  // cores 2 and 3 end: then 0 and 1 together
        {1000, 4000, 4000, 4000},  // core 0 ends: then 1, 2 and 3, led by core 1
        {1500, 4000, 1500, 4000},  // cores 0 and 2 end at once: then 1 and 3
    };
    for (const auto& split : splits) {
        for (const std::int64_t bytes : {std::int64_t{4096}, std::int64_t{1} << 19}) {
            pipeline p;
            p.n = 4000;
            p.cores = 4;
            p.steps_of = split;
            p.in_bytes = bytes;  // 512 KiB: the running cores share HBM's bandwidth
            const result r = expect_same(p, c);
            // With only the cores' joint stretch and the last core's alone skipped, the first
            // split would skip at most 1000 of its 11,500 steps on all four cores and the
            // second 1000 of 13,000 (its last three cores end together).
            EXPECT_GT(r.steady_ops, r.op_count * 9 / 10) << split[0] << " " << split[2] << " " << bytes;
        }
    }
}

TEST(SimSteady, TwoCoresEndingMidPeriodAreExact) {
    for (const int n : {1001, 1003, 1008}) {
        for (const int n1 : {0, 997, 1002}) {
            pipeline p;
            p.n = n;
            p.k = 8;
            p.cores = 2;
            p.short_core1 = n1;
            expect_same(p, tpu::v5p);
        }
    }
    for (int n = 1; n < 30; ++n) {  // shorter than any period
        pipeline p;
        p.n = n;
        p.k = 3;
        p.cores = 2;
        expect_same(p, tpu::v5p);
    }
}

// With the timeline: skipped periods record their cycle's spans, moved, and labelled as the ops
// they stand for. Every op here has a label of its own (its place in the stream), so no period's
// ops equal another's with labels: the lane compares ops without them.
TEST(SimSteady, OnWithTimeline) {
    for (const int cores : {1, 2}) {
        pipeline p;
        p.n = 2000;
        p.k = 4;
        p.cores = cores;
        p.short_core1 = 1500;  // core 1 ends first: the lane of both cores, then of core 0 alone
        vec_source src[2];
        for (vec_source& v : src) {
            v.ops[0] = p.stream(p.n);
            if (cores == 2) v.ops[1] = p.stream(p.short_core1, 1);
            for (auto& ops : v.ops)
                for (std::size_t i = 0; i < ops.size(); ++i) ops[i].label = static_cast<std::uint32_t>(1000000 * i + 7);
        }
        const ptpu::chip chip = with_overhead(cores == 1 ? tpu::v5e : tpu::v5p, p.overhead);
        const result fast = ptpu::sim::simulate(chip, cores, src[0], options{.timeline = true, .works = &works()});
        const result exact = ptpu::sim::simulate(chip, cores, src[1],
                                                 options{.timeline = true, .steady_state = false, .works = &works()});
        EXPECT_GT(fast.steady_ops, fast.op_count / 2) << cores;
        EXPECT_EQ(exact.steady_ops, 0);
        ASSERT_EQ(fast.timeline.size(), exact.timeline.size()) << cores;
        // Per core and track (spans of two cores ending at one instant may come in either order).
        for (int c = 0; c < cores; ++c)
            for (const auto tr : {0, 1}) {
                const auto pick = [&](const result& r) {
                    std::vector<ptpu::sim::span> v;
                    for (const auto& x : r.timeline)
                        if (x.core == c && static_cast<int>(x.track) == tr) v.push_back(x);
                    if (tr == 1) std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.dma < b.dma; });
                    return v;
                };
                const auto x = pick(fast);
                const auto y = pick(exact);
                ASSERT_EQ(x.size(), y.size());
                for (std::size_t i = 0; i < x.size(); ++i) {
                    ASSERT_TRUE(x[i].kind == y[i].kind && x[i].label == y[i].label && x[i].step == y[i].step &&
                                x[i].dma == y[i].dma && x[i].bytes == y[i].bytes)
                        << cores << " core " << c << " track " << tr << " span " << i << " label " << x[i].label
                        << "/" << y[i].label << " step " << x[i].step << "/" << y[i].step;
                    expect_near_rel(x[i].begin, y[i].begin, exact.device_time);
                    expect_near_rel(x[i].end, y[i].end, exact.device_time);
                }
            }
    }
}

// ---- Per-step rows: fast-forwarded steps get their rows by replication -------------------------

// Each core's rows in stream order (result::steps' order; the two cores' rows interleave by
// creation time, and rows created at the same instant on both cores may come in either order
// once rounding moved one core's clock by an ulp).
std::vector<ptpu::sim::step_times> by_core(const result& r) {
    std::vector<ptpu::sim::step_times> v = r.steps;
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.core < b.core; });
    return v;
}

// The rows with the fast lane equal the op-by-op ones row by row: the same (core, step) in the
// same order on each core, bits exactly, times to 1e-9 of the device time.
result expect_same_rows(const pipeline& p, const ptpu::chip& c = tpu::v5e) {
    const result exact_r = simulate(p, false, c, true);
    const result fast_r = simulate(p, true, c, true);
    result exact = exact_r, fast = fast_r;
    exact.steps = by_core(exact_r);
    fast.steps = by_core(fast_r);
    EXPECT_EQ(fast.op_count, exact.op_count);
    const double T = exact.device_time;
    expect_near_rel(fast.device_time, T, T);
    for (int k = 0; k < p.cores; ++k) expect_near_rel(fast.core_time[k], exact.core_time[k], T);
    EXPECT_EQ(fast.steps.size(), exact.steps.size());
    int bad = 0;
    for (std::size_t i = 0; i < std::min(fast.steps.size(), exact.steps.size()) && bad < 5; ++i) {
        const auto& x = fast.steps[i];
        const auto& y = exact.steps[i];
        const double tol = 1e-9 * T;
        const bool same = x.core == y.core && x.step == y.step && x.waited_on == y.waited_on &&
                          std::abs(x.begin - y.begin) <= tol && std::abs(x.end - y.end) <= tol &&
                          std::abs(x.overhead - y.overhead) <= tol && std::abs(x.issue - y.issue) <= tol &&
                          std::abs(x.compute - y.compute) <= tol && std::abs(x.wait - y.wait) <= tol &&
                          std::abs(x.sem_wait - y.sem_wait) <= tol;
        if (!same) {
            ++bad;
            ADD_FAILURE() << "row " << i << ": core " << x.core << "/" << y.core << " step " << x.step << "/"
                          << y.step << " begin " << x.begin << "/" << y.begin << " end " << x.end << "/" << y.end
                          << " wait " << x.wait << "/" << y.wait << " bits " << x.waited_on << "/" << y.waited_on;
        }
    }
    return fast_r;
}

TEST(SimSteady, PerStepRowsAreReplicatedOnOneCore) {
    pipeline p;
    p.n = 20000;
    p.in_bytes = 1 << 20;  // DMA-bound: every row has a wait
    const result d = expect_same_rows(p);
    EXPECT_GT(d.steady_ops, d.op_count * 9 / 10);
    EXPECT_EQ(d.steps.size(), 20000u);
    pipeline q;
    q.n = 20000;
    q.compute = [](int s) { return s < 10000 ? 0.2 * us : 3 * us; };  // a change midway
    const result e = expect_same_rows(q);
    EXPECT_GT(e.steady_ops, e.op_count * 9 / 10);
    for (const int k : {4, 7}) {  // reduction axes
        pipeline r;
        r.n = 10000;
        r.k = k;
        r.out_bytes = 1 << 20;
        const result f = expect_same_rows(r);
        EXPECT_GT(f.steady_ops, f.op_count * 8 / 10) << "k = " << k;
    }
    for (const int n : {1001, 1003, 1008}) {  // ending mid-period
        pipeline t;
        t.n = n;
        t.k = 8;
        expect_same_rows(t);
    }
}

TEST(SimSteady, PerStepRowsAreReplicatedOnTwoCores) {
    pipeline p;
    p.n = 6000;
    p.cores = 2;
    const result r = expect_same_rows(p, tpu::v5p);
    EXPECT_GT(r.steady_ops, r.op_count * 9 / 10);
    EXPECT_EQ(r.steps.size(), 12000u);
    p.in_bytes = 1 << 20;  // DMA-bound, HBM shared
    const result d = expect_same_rows(p, tpu::v5p);
    EXPECT_GT(d.steady_ops, d.op_count * 9 / 10);
    p.k = 7;  // a reduction axis
    p.out_bytes = 1 << 20;
    expect_same_rows(p, tpu::v5p);
    pipeline u;  // uneven, then core 0 alone
    u.n = 4000;
    u.cores = 2;
    u.short_core1 = 2500;
    const result v = expect_same_rows(u, tpu::v5p);
    EXPECT_GT(v.steady_ops, v.op_count * 9 / 10);
    pipeline w;  // out of phase
    w.n = 3000;
    w.cores = 2;
    w.compute1 = [](int s) { return s < 1500 ? 0.2 * us : 0.9 * us; };
    expect_same_rows(w, tpu::v5p);
}

TEST(SimSteady, MalformedOpsAfterTheSteadyStateStillRaise) {
    pipeline p;
    p.n = 5000;
    // A wait on a DMA that is not in flight, deep into the steady state: SIM1.
    vec_source src;
    src.ops[0] = p.stream(p.n);
    for (std::size_t i = src.ops[0].size() / 2; i < src.ops[0].size(); ++i)
        if (src.ops[0][i].kind == op_kind::dma_wait) {
            src.ops[0][i].dma += 1000;
            break;
        }
    try {
        ptpu::sim::simulate(with_overhead(tpu::v5e, p.overhead), 1, src, options{.works = &works()});
        ADD_FAILURE() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "SIM1");
    }
    // A negative compute time (malformed work): SIM2.
    src = {};
    src.ops[0] = p.stream(p.n);
    for (std::size_t i = src.ops[0].size() / 2; i < src.ops[0].size(); ++i)
        if (src.ops[0][i].kind == op_kind::compute) {
            src.ops[0][i].work = work_of(-1);
            break;
        }
    try {
        ptpu::sim::simulate(with_overhead(tpu::v5e, p.overhead), 1, src, options{.works = &works()});
        ADD_FAILURE() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "SIM2");
    }
}

// Cores meeting at a barrier every step (each signals the others' semaphores and waits for their
// signals): with options::signals_across_cores the lane follows them through the signals, since
// every core's semaphores are part of the state it compares; without, every op is simulated.
// Both ways the prediction is simulating every op's, also with core 1's steps shorter (core 1
// waits at each barrier), DMA-bound, and on four cores.
TEST(SimSteady, CoresMeetingAtABarrierAreSkippedTogetherWhenSignalsMayCrossPeriods) {
    pipeline p;
    p.n = 4000;
    p.cores = 2;
    p.semaphores = true;
    p.barrier = true;
    for (const std::int64_t in : {std::int64_t{4096}, std::int64_t{1} << 20}) {
        for (const bool shorter : {false, true}) {
            SCOPED_TRACE(in);
            SCOPED_TRACE(shorter);
            p.in_bytes = in;
            p.compute1 = shorter ? std::function<double(int)>([](int) { return 0.1 * us; }) : nullptr;
            p.across = false;
            EXPECT_EQ(expect_same(p, tpu::v5p).steady_ops, 0);
            p.across = true;
            const result r = expect_same(p, tpu::v5p);
            EXPECT_GT(r.steady_ops, r.op_count * 9 / 10);
            if (shorter && in == 4096) {
                EXPECT_GT(r.wait_sem[1], 0.1 * r.device_time);  // core 1 waits for core 0 each step
            }
            const result rows = expect_same_rows(p, tpu::v5p);
            EXPECT_GT(rows.steady_ops, rows.op_count * 9 / 10);
        }
    }
    p.compute1 = nullptr;
    p.in_bytes = 4096;
    p.cores = 4;
    ptpu::chip four_cores = tpu::v5p;  // a synthetic chip: v5p with four TensorCores
    four_cores.cores_per_chip = 4;
    const result four = expect_same(p, four_cores);
    EXPECT_GT(four.steady_ops, four.op_count * 9 / 10);
}

// Each core's ops handed out as a megacore run on data does when its cores take turns
// (runtime/cores.hpp): a step at a time, but a core whose barrier wait finds its host semaphore
// short hands out its ops up to that wait, and then, until another core's signal has been handed
// out, blocked batches (no ops, the stream going on).
struct turn_source {
    std::vector<op> ops[ptpu::max_cores];
    std::size_t pos[ptpu::max_cores] = {};
    std::int64_t held[ptpu::max_cores] = {};  // semaphore 5 on the host: signals handed out, less waits
    bool waiting[ptpu::max_cores] = {};       // its last batch ended at a wait the host could not pay
    std::vector<op> out[ptpu::max_cores];
    int blocked = 0;  // blocked batches handed out
    ptpu::sim::batch next_batch(int c, bool) {
        const auto u = static_cast<std::size_t>(c);
        const std::vector<op>& v = ops[u];
        std::size_t& k = pos[u];
        out[u].clear();
        const bool resumed = waiting[u];
        if (waiting[u]) {
            if (held[u] < v[k - 1].bytes) {
                ++blocked;
                ptpu::sim::batch none;
                none.blocked = true;
                return none;
            }
            held[u] -= v[k - 1].bytes;
            waiting[u] = false;
        }
        if (k == v.size()) return {};
        const std::uint32_t step = v[k].step;
        while (k < v.size() && v[k].step == step && !waiting[u]) {
            const op& x = v[k++];
            out[u].push_back(x);
            if (x.kind == op_kind::sem_signal) held[x.core] += x.bytes;
            if (x.kind != op_kind::sem_wait || x.dma_sem || x.sem != 5) continue;
            if (held[u] < x.bytes)
                waiting[u] = true;
            else
                held[u] -= x.bytes;
        }
        return {.ops = out[u], .whole_step = !resumed && !waiting[u]};
    }
};

// The lane pulls a period of each core ahead of the model. A core taking turns may then be
// blocked in a wait for another core whose ops are still to pull: that is not its stream's end
// (which would leave the other core waiting for its signal for ever, a false deadlock), only
// where the lane stops matching. With signals across cores, the barrier predicts what every op
// simulated does, on two cores and four.
TEST(SimSteady, ACoreBlockedOnTheHostIsNotAStreamsEnd) {
    pipeline p;
    p.n = 600;
    p.semaphores = true;
    p.barrier = true;
    for (const int cores : {2, 4}) {
        for (const bool shorter : {false, true}) {
            SCOPED_TRACE(cores);
            SCOPED_TRACE(shorter);
            p.cores = cores;
            p.compute1 = shorter ? std::function<double(int)>([](int) { return 0.1 * us; }) : nullptr;
            ptpu::chip c = with_overhead(tpu::v5p, p.overhead);
            c.cores_per_chip = cores;
            options o;
            o.semaphores = true;
            o.works = &works();
            o.steady_state = false;
            vec_source every;
            for (int k = 0; k < cores; ++k) every.ops[k] = p.stream(p.n, k);
            const result exact = ptpu::sim::simulate(c, cores, every, o);
            ASSERT_LT(exact.deadlock.core, 0);
            for (const bool steady : {false, true}) {
                SCOPED_TRACE(steady);
                turn_source turns;
                for (int k = 0; k < cores; ++k) turns.ops[k] = p.stream(p.n, k);
                o.steady_state = steady;
                o.signals_across_cores = steady;
                const result r = ptpu::sim::simulate(c, cores, turns, o);
                if (steady) {
                    EXPECT_GT(turns.blocked, 0);  // (only the lane pulls ahead)
                }
                EXPECT_LT(r.deadlock.core, 0);
                EXPECT_EQ(r.op_count, exact.op_count);
                EXPECT_EQ(r.dma_count, exact.dma_count);
                EXPECT_EQ(r.hbm_bytes, exact.hbm_bytes);
                if (!steady) {
                    EXPECT_EQ(r.device_time, exact.device_time);
                }
                expect_near_rel(r.device_time, exact.device_time, exact.device_time);
                for (int k = 0; k < cores; ++k) {
                    expect_near_rel(r.core_time[k], exact.core_time[k], exact.device_time);
                    expect_near_rel(r.wait_sem[k], exact.wait_sem[k], exact.device_time);
                }
            }
        }
    }
}

}  // namespace
