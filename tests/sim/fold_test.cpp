// Tests the model's folded repeats (stream::op_kind::repeat, docs/model.md §11): a repeat op
// stands for more repetitions of the ops after it, their DMA ids advanced each time. Each
// stream here is an inner pipeline's steps inside one step of the kernel, written out in full
// and folded (its steady middle as one repeat op and one repetition). The folded stream must
// time exactly as the full one: op by op (the repetitions made again) to the last digit, and with
// the steady state on (whole periods of repetitions skipped) to 1e-9, while skipping most ops.
// Malformed repeat ops are SIM2.
#include <gtest/gtest.h>

#include <ptpu/core/error.hpp>
#include <ptpu/hw/presets.hpp>
#include <ptpu/sim/engine.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// An inner pipeline of `n` steps as a runner writes it, every op in the kernel's step `outer`:
// `buffers` input windows (fetched `buffers - 1` steps ahead), one output written at the end of
// each run of `k` steps and waited one run later. steps[s] holds inner step s's ops.
struct inner_pipeline {
    int n = 4000;
    int k = 1;
    int buffers = 2;
    std::int64_t in_bytes = 64 << 10;
    std::int64_t out_bytes = 64 << 10;
    double compute = 0.3 * us;
    std::uint32_t outer = 0;
    bool rows = false;  // each step its own inner row (op::sub = s + 1), none past max_inner_rows

    [[nodiscard]] std::vector<std::vector<op>> steps() const {
        std::vector<std::vector<op>> v(static_cast<std::size_t>(n));
        std::uint32_t id = 0;
        std::vector<std::uint32_t> fetch(static_cast<std::size_t>(n));
        const auto start = [&](std::vector<op>& to, std::int64_t bytes) {
            to.push_back({.kind = op_kind::dma_start, .dma = id, .bytes = bytes, .step = outer});
            return id++;
        };
        for (int s = 0; s < buffers - 1 && s < n; ++s)
            fetch[static_cast<std::size_t>(s)] = start(v[0], in_bytes);
        std::uint32_t write = 0;
        bool pending = false;
        const std::uint32_t w = work_of(compute);
        for (int s = 0; s < n; ++s) {
            std::vector<op>& o = v[static_cast<std::size_t>(s)];
            o.push_back({.kind = op_kind::overhead, .step = outer});
            const int ahead = s + buffers - 1;
            if (ahead < n) fetch[static_cast<std::size_t>(ahead)] = start(o, in_bytes);
            o.push_back(
                {.kind = op_kind::dma_wait, .dma = fetch[static_cast<std::size_t>(s)], .step = outer});
            o.push_back({.kind = op_kind::compute, .work = w, .step = outer});
            if (s % k == 0 && pending) {
                o.push_back({.kind = op_kind::dma_wait, .dma = write, .step = outer});
                pending = false;
            }
            if (s % k == k - 1 || s + 1 == n) {
                write = start(o, out_bytes);
                pending = true;
            }
        }
        if (pending) v.back().push_back({.kind = op_kind::dma_wait, .dma = write, .step = outer});
        for (std::size_t s = 0; rows && s < v.size(); ++s)
            for (op& o : v[s])
                o.sub = s + 1 <= ptpu::stream::max_inner_rows ? static_cast<std::uint16_t>(s + 1) : 0;
        return v;
    }
};

std::uint32_t starts_in(const std::vector<op>& v) {
    std::uint32_t n = 0;
    for (const op& o : v) n += o.kind == op_kind::dma_start ? 1u : 0u;
    return n;
}

// Steps [from, from + len) as one repetition, folded with as many more as fit before the last
// `tail` steps: the steps folded must be that repetition again, ids advanced (and, with `rows`,
// inner rows by len; checked, so that the folding is the full stream's). None fit: nothing folded.
std::vector<op> folded(const std::vector<std::vector<op>>& steps, int from, int len, int tail,
                       bool rows = false) {
    const int times = std::max(0, (static_cast<int>(steps.size()) - tail - from) / len - 1);
    std::vector<op> v, rep;
    for (int s = 0; s < from; ++s)
        v.insert(v.end(), steps[static_cast<std::size_t>(s)].begin(),
                 steps[static_cast<std::size_t>(s)].end());
    for (int s = from; s < from + len; ++s)
        rep.insert(rep.end(), steps[static_cast<std::size_t>(s)].begin(),
                   steps[static_cast<std::size_t>(s)].end());
    const std::uint32_t ids = starts_in(rep);
    if (times > 0)
        v.push_back({.kind = op_kind::repeat,
                     .dma = ids,
                     .bytes = times,
                     .sub = static_cast<std::uint16_t>(rows ? len : 0),
                     .sem = static_cast<std::uint32_t>(rep.size()),
                     .step = rep.front().step});
    v.insert(v.end(), rep.begin(), rep.end());
    int s = from + len;
    for (int r = 1; r <= times; ++r) {
        std::size_t at = 0;
        for (int j = 0; j < len; ++j, ++s)
            for (op o : steps[static_cast<std::size_t>(s)]) {
                op want = rep[at++];
                if (want.kind == op_kind::dma_start || want.kind == op_kind::dma_wait)
                    want.dma += static_cast<std::uint32_t>(r) * ids;
                if (rows && want.sub != 0) {
                    const int sub = want.sub + r * len;
                    want.sub = sub <= static_cast<int>(ptpu::stream::max_inner_rows)
                                   ? static_cast<std::uint16_t>(sub)
                                   : 0;
                }
                EXPECT_EQ(o, want) << "the folded steps are not the repetition again (step " << s << ")";
            }
    }
    for (; s < static_cast<int>(steps.size()); ++s)
        v.insert(v.end(), steps[static_cast<std::size_t>(s)].begin(),
                 steps[static_cast<std::size_t>(s)].end());
    return v;
}
std::vector<op> whole(const std::vector<std::vector<op>>& steps) {
    return folded(steps, 0, 1, static_cast<int>(steps.size()));
}

result simulate(std::vector<op> core0, bool steady, std::vector<op> core1 = {}, int cores = 1,
                const ptpu::chip& c = tpu::v5e, bool rows = false) {
    vec_source src;
    src.ops[0] = std::move(core0);
    src.ops[1] = std::move(core1);
    options o;
    o.steady_state = steady;
    o.per_step = rows;
    o.works = &works();
    return ptpu::sim::simulate(c, cores, src, o);
}

// a's times within rel of b's (rel = 0: equal to the last digit), its counts equal.
void expect_times(const result& a, const result& b, double rel) {
    const double T = b.device_time;
    const auto near = [&](double x, double y) { EXPECT_LE(std::abs(x - y), rel * T) << x << " vs " << y; };
    EXPECT_EQ(a.op_count, b.op_count);
    EXPECT_EQ(a.dma_count, b.dma_count);
    EXPECT_EQ(a.hbm_bytes, b.hbm_bytes);
    EXPECT_EQ(a.dangling_dmas, b.dangling_dmas);
    near(a.device_time, b.device_time);
    near(a.hbm_busy_time, b.hbm_busy_time);
    for (int k = 0; k < a.cores; ++k) {
        near(a.core_time[k], b.core_time[k]);
        near(a.busy_overhead[k], b.busy_overhead[k]);
        near(a.busy_compute[k], b.busy_compute[k]);
        near(a.busy_issue[k], b.busy_issue[k]);
        near(a.wait_dma[k], b.wait_dma[k]);
    }
    ASSERT_EQ(a.wait_by_operand.size(), b.wait_by_operand.size());
    for (std::size_t w = 0; w < a.wait_by_operand.size(); ++w)
        near(a.wait_by_operand[w], b.wait_by_operand[w]);
}

// a's per-step and inner rows: b's, their times within rel of b's device time.
void expect_rows(const result& a, const result& b, double rel) {
    const double tol = rel * b.device_time;
    const auto same = [tol](const std::vector<ptpu::sim::step_times>& x,
                            const std::vector<ptpu::sim::step_times>& y) {
        ASSERT_EQ(x.size(), y.size());
        const auto near = [tol](double u, double v) { return std::abs(u - v) <= tol; };
        for (std::size_t i = 0; i < x.size(); ++i) {
            EXPECT_EQ(x[i].step, y[i].step) << i;
            EXPECT_EQ(x[i].sub, y[i].sub) << i;
            EXPECT_EQ(x[i].waited_on, y[i].waited_on) << i;
            EXPECT_TRUE(near(x[i].begin, y[i].begin) && near(x[i].end, y[i].end) &&
                        near(x[i].overhead, y[i].overhead) && near(x[i].issue, y[i].issue) &&
                        near(x[i].compute, y[i].compute) && near(x[i].wait, y[i].wait))
                << "row " << i << " (inner row " << x[i].sub << ")";
        }
    };
    same(a.steps, b.steps);
    same(a.inner_steps, b.inner_steps);
}

// The pipeline's steps [from, n - tail) folded into repetitions of `len` steps: timed as the
// full stream (exactly op by op; to 1e-9 with repetitions skipped). Returns the skipping result.
result expect_folds_like_whole(const inner_pipeline& p, int from, int len, int tail) {
    const auto steps = p.steps();
    const std::vector<op> f = folded(steps, from, len, tail);
    EXPECT_LT(f.size() * 20, whole(steps).size()) << "the fold stands for most of the stream";
    const result every = simulate(whole(steps), false);
    expect_times(simulate(f, false), every, 0);  // the same ops, made again
    const result fast = simulate(f, true);
    expect_times(fast, every, 1e-9);
    return fast;
}

TEST(SimFold, DmaBoundRepetitionsAreSkippedAndExact) {
    inner_pipeline p;
    p.in_bytes = 1 << 20;  // the core waits for its input every step
    const result r = expect_folds_like_whole(p, 3, 1, 2);
    EXPECT_GT(r.steady_ops, r.op_count * 9 / 10);
    EXPECT_GT(r.wait_dma[0], 0.5 * r.device_time);
}

TEST(SimFold, ComputeBoundRepetitionsAreSkippedAndExact) {
    inner_pipeline p;
    p.compute = 8 * us;
    const result r = expect_folds_like_whole(p, 3, 1, 2);
    EXPECT_GT(r.steady_ops, r.op_count * 9 / 10);
    EXPECT_GT(r.busy_compute[0], 0.9 * r.device_time);
}

TEST(SimFold, RepetitionsOfSeveralStepsAndDeepWindowsAreSkippedAndExact) {
    inner_pipeline p;
    p.k = 4;  // the output is written every 4 steps: a repetition is 4 steps
    p.buffers = 3;
    p.n = 4000;
    const result r = expect_folds_like_whole(p, 4, 4, 4);
    EXPECT_GT(r.steady_ops, r.op_count * 9 / 10);
}

TEST(SimFold, InnerRowsOfFoldedStepsAreMadeAndSkippedUpToTheLastNumbered) {
    // With per-step rows each inner step has its row (op::sub = step + 1), and a repeat op
    // advances its repetitions' rows by the steps it repeats: made again exactly, and skipped
    // whole periods at a time, as long as the rows they make stay numbered. The fold of 40,000
    // steps goes on past stream::max_inner_rows, where steps have no row of their own.
    inner_pipeline p;
    p.n = 40000;
    p.k = 4;
    p.rows = true;
    const auto steps = p.steps();
    const std::vector<op> f = folded(steps, 4, 4, 4, true);
    const result every = simulate(whole(steps), false, {}, 1, tpu::v5e, true);
    const result made = simulate(f, false, {}, 1, tpu::v5e, true);
    expect_times(made, every, 0);
    expect_rows(made, every, 0);
    const result fast = simulate(f, true, {}, 1, tpu::v5e, true);
    expect_times(fast, every, 1e-9);
    expect_rows(fast, every, 1e-9);
    EXPECT_GT(fast.steady_ops, fast.op_count * 9 / 10);
    EXPECT_EQ(fast.inner_steps.size(), ptpu::stream::max_inner_rows);
    // Without rows advancing (a repeat op of sub 0) the repetitions add to the same rows: made
    // op by op, never skipped.
    std::vector<op> same_rows = f;
    for (op& o : same_rows)
        if (o.kind == op_kind::repeat) o.sub = 0;
    const result again = simulate(same_rows, true, {}, 1, tpu::v5e, true);
    EXPECT_EQ(again.steady_ops, 0);
    EXPECT_EQ(again.inner_steps.size(), std::size_t{4 + 4});  // (the last 4 steps' are past the last)
}

TEST(SimFold, AFoldShorterThanItsPeriodIsMadeOpByOp) {
    inner_pipeline p;
    p.n = 12;
    const auto steps = p.steps();
    const std::vector<op> f = folded(steps, 3, 1, 7);  // one repetition more: no period to see
    ASSERT_EQ(f.size(), whole(steps).size() - steps[4].size() + 1);
    const result every = simulate(whole(steps), false);
    const result fast = simulate(f, true);
    expect_times(fast, every, 0);
    EXPECT_EQ(fast.steady_ops, 0);
}

TEST(SimFold, FoldsAfterOtherStepsOfTheKernelAreSkippedAndExact) {
    // Kernel steps 0..9, each an inner pipeline of 600 steps: a fold in each.
    std::vector<op> all, full;
    for (std::uint32_t g = 0; g < 10; ++g) {
        inner_pipeline p;
        p.n = 600;
        p.outer = g;
        auto steps = p.steps();
        // (Each kernel step's ids follow the last one's.)
        const std::uint32_t base = starts_in(full);
        for (auto& s : steps)
            for (op& o : s)
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += base;
        const auto f = folded(steps, 3, 1, 2);
        const auto w = whole(steps);
        all.insert(all.end(), f.begin(), f.end());
        full.insert(full.end(), w.begin(), w.end());
    }
    const result every = simulate(full, false);
    expect_times(simulate(all, false), every, 0);
    const result fast = simulate(all, true);
    expect_times(fast, every, 1e-9);
    EXPECT_GT(fast.steady_ops, fast.op_count * 9 / 10);
}

TEST(SimFold, TwoRunningCoresMakeTheirFoldsOpByOp) {
    // On two cores running together a fold is made op by op (the lane stays off), and
    // skipped once the other core's stream has ended.
    inner_pipeline a, b;
    b.n = 800;
    b.compute = 0.5 * us;
    const auto sa = a.steps(), sb = b.steps();
    const result every = simulate(whole(sa), false, whole(sb), 2, tpu::v5p);
    const result folds = simulate(folded(sa, 3, 1, 2), true, folded(sb, 3, 1, 2), 2, tpu::v5p);
    expect_times(folds, every, 1e-9);
    EXPECT_GT(folds.steady_ops, 0);  // core 0's fold once core 1 has ended
    EXPECT_LT(folds.steady_ops, folds.op_count * 9 / 10);
    expect_times(simulate(folded(sa, 3, 1, 2), false, folded(sb, 3, 1, 2), 2, tpu::v5p), every, 0);
}

TEST(SimFold, MalformedRepeatOpsAreSim2) {
    inner_pipeline p;
    p.n = 50;
    const auto steps = p.steps();
    const auto sim2 = [](std::vector<op> v, const char* what) {
        for (const bool steady : {false, true}) {
            try {
                (void)simulate(v, steady);
                ADD_FAILURE() << what << ": no error";
            } catch (const ptpu::error& e) {
                EXPECT_EQ(e.rule(), "SIM2") << what << ": " << e.what();
            }
        }
    };
    std::vector<op> f = folded(steps, 3, 1, 6);
    const auto rep = std::find_if(f.begin(), f.end(), [](const op& o) { return o.kind == op_kind::repeat; });
    ASSERT_NE(rep, f.end());
    const auto at = static_cast<std::size_t>(rep - f.begin());
    {
        auto v = f;
        v[at].sem = 0;
        sim2(v, "no ops to repeat");
    }
    {
        auto v = f;
        v[at].bytes = 0;
        sim2(v, "no more repetitions");
    }
    {
        auto v = f;
        v[at].dma += 1;
        sim2(v, "ids advanced by more than the repetition starts");
    }
    {
        auto v = f;
        v[at + 1].step = 7;
        sim2(v, "a repetition crossing steps");
    }
    {
        auto v = f;
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at + 1), v[at]);
        v[at].sem += 1;
        sim2(v, "a repeat op within a repetition");
    }
    {
        auto v = f;
        v.resize(at + 2);
        sim2(v, "a stream ending within a repetition");
    }
}

}  // namespace
