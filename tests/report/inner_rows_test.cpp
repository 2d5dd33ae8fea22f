// Inner rows of the per-step breakdown (report::inner_steps): each step of a pipeline a body runs
// (emit_pipeline) is a row of its own, labelled by the pipeline and its step, and part of its
// outer step's row; the steady-state fast lane replicates them exactly as every-op simulation
// records them.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

using namespace ptpu;

namespace {

using X = Array<float, 32, 128>;
using AnyFull = BlockSpec<Full, zero_map, any>;
using Rows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
constexpr auto body = [](auto in, auto out) { store(out, load(in) * 2.0f); };

host_array<X> ramp() {
    host_array<X> x;
    std::iota(x.begin(), x.end(), 0.0f);
    return x;
}

// Rows equal: everything exact but times, within 1e-9 of `scale`.
::testing::AssertionResult same_row(const sim::step_times& x, const sim::step_times& y, double scale,
                                    double shift = 0) {
    const double tol = 1e-9 * scale;
    const auto near = [tol](double a, double b) { return std::abs(a - b) <= tol; };
    if (x.core == y.core && x.step == y.step && x.sub == y.sub && x.waited_on == y.waited_on &&
        near(x.begin, y.begin + shift) && near(x.end, y.end + shift) && near(x.overhead, y.overhead) &&
        near(x.issue, y.issue) && near(x.compute, y.compute) && near(x.wait, y.wait) && near(x.sem_wait, y.sem_wait))
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "core " << x.core << "/" << y.core << " step " << x.step << "/" << y.step << " sub " << x.sub << "/"
           << y.sub << " begin " << x.begin << "/" << y.begin + shift << " end " << x.end << "/" << y.end + shift
           << " overhead " << x.overhead << "/" << y.overhead << " issue " << x.issue << "/" << y.issue << " compute "
           << x.compute << "/" << y.compute << " wait " << x.wait << "/" << y.wait << " bits " << x.waited_on << "/"
           << y.waited_on;
}

// Each outer row is its own ops plus its inner rows: `own` is what the outer step's ops other
// than the inner pipelines' did (here the step's overhead and nothing else).
void expect_sums(const report& r, double own_overhead) {
    for (const sim::step_times& s : r.steps) {
        sim::step_times sum{};
        int n = 0;
        for (const sim::step_times& i : r.inner_steps) {
            if (i.core != s.core || i.step != s.step) continue;
            ++n;
            sum.overhead += i.overhead;
            sum.issue += i.issue;
            sum.compute += i.compute;
            sum.wait += i.wait;
            EXPECT_GE(i.begin, s.begin);
            EXPECT_LE(i.end, s.end);
        }
        EXPECT_GT(n, 0) << "step " << s.step;
        EXPECT_NEAR(s.overhead, own_overhead + sum.overhead, 1e-15) << s.step;
        EXPECT_NEAR(s.issue, sum.issue, 1e-15) << s.step;
        EXPECT_NEAR(s.compute, sum.compute, 1e-15) << s.step;
        EXPECT_NEAR(s.wait, sum.wait, 1e-15) << s.step;
    }
}

}  // namespace

// A gridded call whose body runs a 4-step inner pipeline: every outer step has 4 inner rows, and
// they are exactly the rows of the same pipeline as pallas_call<Grid<4>> (its ops are the same
// ops: a gridless call running a 4-step inner pipeline costs one grid step's
// overhead more), moved by where the inner pipeline starts: after the outer step's overhead.
TEST(InnerRows, AGriddedCallShowsEachInnerStepExactly) {
    const host_array<X> x = ramp();
    auto [o, rep] = pallas_call<Grid<3>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>{}(
        [](auto x_hbm, auto o_hbm) { emit_pipeline(body, {4}, in_specs<Rows>, out_specs<Rows>)(x_hbm, o_hbm); }, x);
    auto [p, piped] = pallas_call<Grid<4>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>, Chip<tpu::v5e>>{}(body, x);
    EXPECT_TRUE(std::ranges::equal(o, p));
    ASSERT_EQ(rep.steps.size(), 3u);
    ASSERT_EQ(rep.inner_steps.size(), 12u);
    ASSERT_EQ(piped.steps.size(), 4u);
    // Rows 1..4 of the runner's numbering: steps 0..3 of the body's first (only) pipeline.
    ASSERT_EQ(rep.inner_rows[0].size(), 4u);
    for (std::uint32_t k = 0; k < 4; ++k) {
        EXPECT_EQ(rep.inner_rows[0][k].call, 0u);
        EXPECT_EQ(rep.inner_rows[0][k].step, k);
        EXPECT_EQ(rep.inner_rows[0][k].depth, 1);
    }
    const double ovh = tpu::v5e.step_overhead_s;
    for (std::uint32_t g = 0; g < 3; ++g) {
        const sim::step_times& s = rep.steps[g];
        EXPECT_EQ(s.step, g);
        EXPECT_EQ(s.sub, 0u);
        for (std::uint32_t k = 0; k < 4; ++k) {
            sim::step_times i = rep.inner_steps[4 * g + k];
            EXPECT_EQ(i.step, g);
            EXPECT_EQ(i.sub, k + 1);
            // The pallas_call's waits are on its operands (bits 1, 2); the inner pipeline's on
            // its own (bits 1, 2 of its rows): the same waits.
            sim::step_times q = piped.steps[k];
            q.step = g;
            q.sub = k + 1;
            EXPECT_TRUE(same_row(i, q, rep.device_time, s.begin + ovh)) << g << " " << k;
        }
        // The outer step ends with the inner pipeline (its body charges nothing after it).
        EXPECT_NEAR(s.end - s.begin, ovh + piped.device_time, 1e-12);
        // Its waits on the inner pipeline's DMAs are body copies to it.
        EXPECT_EQ(s.waited_on, 1u) << g;
    }
    expect_sums(rep, ovh);
    EXPECT_NEAR(rep.device_time, 3 * (ovh + piped.device_time), 1e-12);
}

// Two pipelines in one body: rows p0.S then p1.S under each outer step; print_steps indents them.
TEST(InnerRows, TwoPipelinesPerBodyArePrintedUnderTheirStep) {
    const host_array<X> x = ramp();
    using Two = BlockSpec<Block<16, 128>, [](index_t i) { return idx(i, 0); }>;
    auto [o, rep] = pallas_call<Grid<2>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>{}(
        [](auto x_hbm, auto o_hbm) {
            emit_pipeline(body, {4}, in_specs<Rows>, out_specs<Rows>)(x_hbm, o_hbm);
            charge(work{.explicit_seconds = 1e-6});  // the outer body's own compute, between them
            emit_pipeline([](auto in, auto out) { store(out, load(in) + 1.0f); }, {2}, in_specs<Two>,
                          out_specs<Two>)(o_hbm, o_hbm);
        },
        x);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], 2.0f * x.vector()[k] + 1.0f);
    ASSERT_EQ(rep.steps.size(), 2u);
    ASSERT_EQ(rep.inner_steps.size(), 12u);
    ASSERT_EQ(rep.inner_rows[0].size(), 6u);
    EXPECT_EQ(rep.inner_rows[0][4].call, 1u);
    EXPECT_EQ(rep.inner_rows[0][5].step, 1u);
    // The outer row: its overhead and the 1 us between the pipelines, plus its inner rows.
    for (const sim::step_times& s : rep.steps) {
        double compute = 0;
        for (const sim::step_times& i : rep.inner_steps)
            if (i.step == s.step) compute += i.compute;
        EXPECT_NEAR(s.compute, compute + 1e-6, 1e-15);
    }
    std::ostringstream out;
    print_steps(out, rep);
    std::istringstream in(out.str());
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    ASSERT_EQ(lines.size(), 1u + 2u + 12u + 1u);  // heading, 2 steps, 12 inner rows, the legend
    EXPECT_EQ(lines[1].substr(0, 8), "       0");
    const char* labels[] = {"p0.0", "p0.1", "p0.2", "p0.3", "p1.0", "p1.1"};
    for (int g = 0; g < 2; ++g) {
        EXPECT_EQ(lines[static_cast<std::size_t>(1 + 7 * g)].substr(0, 8), "       " + std::to_string(g));
        for (int k = 0; k < 6; ++k)
            EXPECT_EQ(lines[static_cast<std::size_t>(2 + 7 * g + k)].substr(0, 8), std::string("  ") + labels[k] + "  ")
                << lines[static_cast<std::size_t>(2 + 7 * g + k)];
    }
    EXPECT_NE(lines.back().find("pK.S: step S of the K-th pipeline"), std::string::npos);
    // Cut at 5 rows: the count says what is left, inner rows included.
    std::ostringstream cut;
    print_steps(cut, rep, 5);
    EXPECT_NE(cut.str().find("… 9 more rows"), std::string::npos) << cut.str();
}

// ---- The fast lane with inner rows ----------------------------------------------------------

namespace {

// The rows (steps and inner steps) of the fast lane and of every-op simulation agree, per core in
// stream order; returns the fast lane's report.
template <class K, class Body>
report rows_agree(const Body& b) {
    K k{};
    k.options.timing_only = true;
    k.options.per_step = per_step_rows::always;
    const report fast = k.predict(b);
    k.options.steady_state = false;
    const report exact = k.predict(b);
    EXPECT_EQ(exact.steady_ops, 0);
    EXPECT_NEAR(fast.device_time, exact.device_time, 1e-9 * exact.device_time);
    EXPECT_EQ(fast.ops, exact.ops);
    const auto per_core = [](std::vector<sim::step_times> v) {
        std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.core < b.core; });
        return v;
    };
    for (const bool inner : {false, true}) {
        const auto x = per_core(inner ? fast.inner_steps : fast.steps);
        const auto y = per_core(inner ? exact.inner_steps : exact.steps);
        EXPECT_EQ(x.size(), y.size()) << inner;
        int bad = 0;
        for (std::size_t i = 0; i < std::min(x.size(), y.size()) && bad < 5; ++i)
            if (!same_row(x[i], y[i], exact.device_time)) ADD_FAILURE() << (inner ? "inner " : "") << "row " << i << ": " << same_row(x[i], y[i], exact.device_time).message(), ++bad;
    }
    EXPECT_EQ(fast.inner_rows[0].size(), exact.inner_rows[0].size());
    return fast;
}

using Long = Array<float, 64, 128>;
using LongRows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;

}  // namespace

TEST(InnerRows, FastLaneReplicatesInnerRowsOfOneCore) {
    using K = pallas_call<Grid<256>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Chip<tpu::v5e>>;
    const report r = rows_agree<K>([](auto x_hbm, auto o_hbm) {
        emit_pipeline(body, {4}, in_specs<LongRows>, out_specs<LongRows>)(x_hbm, o_hbm);
    });
    EXPECT_EQ(r.steps.size(), 256u);
    EXPECT_EQ(r.inner_steps.size(), 256u * 4u);
    EXPECT_GT(r.steady_ops, r.ops / 2);  // the lane ran, and rows came out right
    expect_sums(r, tpu::v5e.step_overhead_s);
}

// Compute that varies with the outer step (a period of 3) and an inner pipeline whose own step
// count varies with it (8 or 4 steps): longer periods, inner rows of differing count.
TEST(InnerRows, FastLaneWithVaryingInnerPipelines) {
    using K = pallas_call<Grid<300>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Chip<tpu::v5e>>;
    const report r = rows_agree<K>([](auto x_hbm, auto o_hbm) {
        const index_t g = program_id(0) % 3;
        charge(work{.explicit_seconds = 0.2e-6 * static_cast<double>(g)});
        emit_pipeline(body, {g == 1 ? 4 : 8}, in_specs<LongRows>, out_specs<LongRows>)(x_hbm, o_hbm);
    });
    EXPECT_EQ(r.inner_steps.size(), 100u * (8 + 4 + 8));
    EXPECT_GT(r.steady_ops, r.ops / 2);
}

// Both cores of a v5p running (the lane takes both), each outer step an inner pipeline.
TEST(InnerRows, FastLaneReplicatesInnerRowsOfBothCores) {
    using K = pallas_call<Grid<256>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Semantics<parallel>,
                          Chip<tpu::v5p>>;
    // Each core's steps walk its own half of the array (no two cores write one region).
    using Half = BlockSpec<Block<8, 128>, [](index_t i) { return idx(program_id(0) / 128 * 4 + i, 0); }>;
    const report r = rows_agree<K>([](auto x_hbm, auto o_hbm) {
        emit_pipeline(body, {4}, in_specs<Half>, out_specs<Half>)(x_hbm, o_hbm);
    });
    EXPECT_EQ(r.cores, 2);
    EXPECT_EQ(r.inner_steps.size(), 256u * 4u);
    EXPECT_EQ(r.inner_rows[1].size(), 4u);
    EXPECT_GT(r.steady_ops, r.ops / 2);
}

// ---- Pipelines nested in inner pipelines' bodies ---------------------------------------------

namespace {

// A view of the whole array in HBM (no window, no DMA): what the middle pipeline hands its body.
using HbmFull = BlockSpec<Full, zero_map, hbm>;

// The middle level: a body charging 1 us, then running the 4-step pipeline over its refs.
constexpr auto mid = [](auto x_ref, auto o_ref) {
    charge(work{.explicit_seconds = 1e-6});
    emit_pipeline(body, {4}, in_specs<Rows>, out_specs<Rows>)(x_ref, o_ref);
};

// The depth of inner row `s` (1: run by the kernel's body).
int depth_of(const report& r, const sim::step_times& s) {
    return r.inner_rows[static_cast<std::size_t>(s.core)][s.sub - 1].depth;
}

// Each inner row of depth d is its own ops plus its children (rows of depth d + 1 naming it as
// parent in the same core and step): `own_compute` is what its own ops computed.
void expect_parent_sums(const report& r, int d, double own_overhead, double own_compute) {
    int parents = 0;
    for (const sim::step_times& p : r.inner_steps) {
        if (depth_of(r, p) != d) continue;
        ++parents;
        sim::step_times sum{};
        int n = 0;
        for (const sim::step_times& i : r.inner_steps) {
            if (i.core != p.core || i.step != p.step || r.inner_rows[static_cast<std::size_t>(i.core)][i.sub - 1].parent != p.sub)
                continue;
            ++n;
            EXPECT_EQ(depth_of(r, i), d + 1);
            sum.overhead += i.overhead;
            sum.issue += i.issue;
            sum.compute += i.compute;
            sum.wait += i.wait;
            EXPECT_GE(i.begin, p.begin);
            EXPECT_LE(i.end, p.end);
        }
        EXPECT_GT(n, 0) << p.step << " " << p.sub;
        EXPECT_NEAR(p.overhead, own_overhead + sum.overhead, 1e-15) << p.sub;
        EXPECT_NEAR(p.issue, sum.issue, 1e-15) << p.sub;
        EXPECT_NEAR(p.compute, own_compute + sum.compute, 1e-15) << p.sub;
        EXPECT_NEAR(p.wait, sum.wait, 1e-15) << p.sub;
    }
    EXPECT_GT(parents, 0);
}

}  // namespace

// pallas_call<Grid<2>> -> a 3-step pipeline over the whole arrays -> the 4-step pipeline: every
// level has rows. They are exactly the rows of pallas_call<Grid<3>> running `mid` (whose ops
// are the same ops), moved by where the 3-step pipeline starts: its depth-1 rows that call's
// step rows, its depth-2 rows that call's inner rows.
TEST(InnerRows, ThreeLevelsShowEveryLevelsStepsExactly) {
    const host_array<X> x = ramp();
    auto [o, rep] = pallas_call<Grid<2>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>{}(
        [](auto x_hbm, auto o_hbm) { emit_pipeline(mid, {3}, in_specs<HbmFull>, out_specs<HbmFull>)(x_hbm, o_hbm); },
        x);
    auto [p, flat] = pallas_call<Grid<3>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>{}(mid, x);
    EXPECT_TRUE(std::ranges::equal(o, p));
    ASSERT_EQ(rep.steps.size(), 2u);
    ASSERT_EQ(flat.steps.size(), 3u);
    ASSERT_EQ(flat.inner_steps.size(), 12u);
    ASSERT_EQ(rep.inner_steps.size(), 2u * (3u + 12u));
    // Numbered on first sight, parents first: p0.0, its p0.0 .. p0.3, p0.1, ...
    const auto& t = rep.inner_rows[0];
    ASSERT_EQ(t.size(), 15u);
    for (std::uint32_t s = 0; s < 3; ++s) {
        const stream::inner_row& w = t[5 * s];
        EXPECT_EQ(w.call, 0u);
        EXPECT_EQ(w.step, s);
        EXPECT_EQ(w.depth, 1);
        EXPECT_EQ(w.parent, 0);
        for (std::uint32_t k = 0; k < 4; ++k) {
            const stream::inner_row& v = t[5 * s + 1 + k];
            EXPECT_EQ(v.call, 0u);
            EXPECT_EQ(v.step, k);
            EXPECT_EQ(v.depth, 2);
            EXPECT_EQ(v.parent, 5 * s + 1);
        }
    }
    const double ovh = tpu::v5e.step_overhead_s;
    for (std::uint32_t g = 0; g < 2; ++g) {
        const sim::step_times& s = rep.steps[g];
        const double shift = s.begin + ovh;
        for (std::uint32_t m = 0; m < 3; ++m) {
            // Rows come parent first, then its children.
            sim::step_times i = rep.inner_steps[15 * g + 5 * m];
            sim::step_times q = flat.steps[m];
            EXPECT_EQ(i.step, g);
            EXPECT_EQ(i.sub, 5 * m + 1);
            q.step = g;
            q.sub = i.sub;
            EXPECT_TRUE(same_row(i, q, rep.device_time, shift)) << g << " " << m;
            for (std::uint32_t k = 0; k < 4; ++k) {
                sim::step_times j = rep.inner_steps[15 * g + 5 * m + 1 + k];
                sim::step_times f = flat.inner_steps[4 * m + k];
                EXPECT_EQ(j.sub, 5 * m + 2 + k);
                f.step = g;
                f.sub = j.sub;
                EXPECT_TRUE(same_row(j, f, rep.device_time, shift)) << g << " " << m << " " << k;
            }
        }
        EXPECT_NEAR(s.end - s.begin, ovh + flat.device_time, 1e-12);
    }
    // Each outer row: its overhead plus its depth-1 rows; each depth-1 row: its own overhead and
    // 1 us plus its depth-2 rows.
    for (const sim::step_times& s : rep.steps) {
        double compute = 0, overhead = 0;
        for (const sim::step_times& i : rep.inner_steps)
            if (i.step == s.step && depth_of(rep, i) == 1) compute += i.compute, overhead += i.overhead;
        EXPECT_NEAR(s.compute, compute, 1e-15);
        EXPECT_NEAR(s.overhead, ovh + overhead, 1e-15);
    }
    expect_parent_sums(rep, 1, ovh, 1e-6);
    EXPECT_NEAR(rep.device_time, 2 * (ovh + flat.device_time), 1e-12);

    // print_steps: depth-2 rows indented two columns more, under their depth-1 row.
    std::ostringstream out;
    print_steps(out, rep, 100);
    std::istringstream in(out.str());
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    ASSERT_EQ(lines.size(), 1u + 2u + 30u + 1u);
    for (int g = 0; g < 2; ++g) {
        const std::size_t at = static_cast<std::size_t>(1 + 16 * g);
        EXPECT_EQ(lines[at].substr(0, 14), "       " + std::to_string(g) + "     0") << lines[at];
        for (int m = 0; m < 3; ++m) {
            const std::size_t pm = at + 1 + 5 * static_cast<std::size_t>(m);
            EXPECT_EQ(lines[pm].substr(0, 14), "  p0." + std::to_string(m) + "       0") << lines[pm];
            for (int k = 0; k < 4; ++k)
                EXPECT_EQ(lines[pm + 1 + static_cast<std::size_t>(k)].substr(0, 14),
                          "    p0." + std::to_string(k) + "     0")
                    << lines[pm + 1 + static_cast<std::size_t>(k)];
        }
    }
    EXPECT_EQ(lines.back(),
              "  (pK.S: step S of the K-th pipeline its step's body ran, emit_pipeline; part of that step's row; "
              "indented further: run by the body of the inner step above, part of its row)");

    // Waits are named by the pipeline whose DMA they wait on: the 4-step pipeline waits for its
    // first input block and its last output block (flat: bits 1 = in0 and 2 = out0 of that
    // pipeline's rows); nested, the same bits in the depth-2 rows, named under their parent
    // pipeline, and a body copy (bit 0) to the depth-1 rows and the outer rows.
    ASSERT_EQ(flat.inner_steps[0].waited_on, 2u);
    ASSERT_EQ(flat.inner_steps[3].waited_on, 4u);
    const auto ends_with = [](const std::string& l, const std::string& e) {
        return l.size() >= e.size() && l.compare(l.size() - e.size(), e.size(), e) == 0;
    };
    for (int g = 0; g < 2; ++g) {
        const std::size_t at = static_cast<std::size_t>(1 + 16 * g);
        EXPECT_TRUE(ends_with(lines[at], "  (body)")) << lines[at];
        EXPECT_EQ(rep.steps[static_cast<std::size_t>(g)].waited_on, 1u);
        for (int m = 0; m < 3; ++m) {
            const std::size_t pm = at + 1 + 5 * static_cast<std::size_t>(m);
            EXPECT_EQ(rep.inner_steps[pm - 2 - static_cast<std::size_t>(g)].waited_on, 1u) << pm;
            EXPECT_TRUE(ends_with(lines[pm], "  (body)")) << lines[pm];
            EXPECT_TRUE(ends_with(lines[pm + 1], "  p0/p0:in0")) << lines[pm + 1];
            EXPECT_TRUE(ends_with(lines[pm + 4], "  p0/p0:out0")) << lines[pm + 4];
        }
    }
    std::ostringstream flat_out;
    print_steps(flat_out, flat, 100);
    EXPECT_NE(flat_out.str().find("\n  p0.0       0      "), std::string::npos);
    std::istringstream flat_in(flat_out.str());
    std::vector<std::string> flat_lines;
    for (std::string l; std::getline(flat_in, l);) flat_lines.push_back(l);
    ASSERT_GE(flat_lines.size(), 6u);
    EXPECT_TRUE(ends_with(flat_lines[2], "  p0:in0")) << flat_lines[2];
    EXPECT_TRUE(ends_with(flat_lines[5], "  p0:out0")) << flat_lines[5];
}

// The waits of two pipelines of one body name each one's operands, an input's and an output's by
// their place among the pipeline's inputs and outputs.
TEST(InnerRows, WaitsNameTheInnerPipelinesOperands) {
    const host_array<X> x = ramp();
    using Two = BlockSpec<Block<16, 128>, [](index_t i) { return idx(i, 0); }>;
    auto [o, rep] = pallas_call<Grid<1>, In<Arg<X, AnyFull>, Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>{}(
        [](auto x_hbm, auto y_hbm, auto o_hbm) {
            emit_pipeline(body, {4}, in_specs<Rows>, out_specs<Rows>)(x_hbm, o_hbm);
            emit_pipeline([](auto a, auto b, auto w) { store(w, load(a) + load(b)); }, {2}, in_specs<Two, Two>,
                          out_specs<Two>)(o_hbm, y_hbm, o_hbm);
        },
        x, x);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], 3.0f * x.vector()[k]);
    ASSERT_EQ(rep.inner_steps.size(), 6u);
    // p1's first step waits for both its inputs (bits 1, 2), its last for its output (bit 3).
    EXPECT_EQ(rep.inner_steps[4].waited_on, 6u);
    EXPECT_EQ(rep.inner_steps[5].waited_on, 8u);
    EXPECT_EQ(rep.steps[0].waited_on, 1u);  // to the call: body copies
    std::ostringstream out;
    print_steps(out, rep);
    const std::string s = out.str();
    EXPECT_NE(s.find("  p0:in0\n"), std::string::npos) << s;
    EXPECT_NE(s.find("  p1:in0 p1:in1\n"), std::string::npos) << s;
    EXPECT_NE(s.find("  p1:out0\n"), std::string::npos) << s;
    // The per-operand table still counts them as body copies (see docs/model.md).
    EXPECT_EQ(rep.operands[0].exposed_dma, 0);
    EXPECT_GT(rep.body_exposed_dma, 0);
}

// The fast lane replicates nested rows as every-op simulation records them (one core, then both
// cores of a v5p), and the rows keep adding up.
TEST(InnerRows, FastLaneReplicatesNestedRowsOfOneCore) {
    using K = pallas_call<Grid<256>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Chip<tpu::v5e>>;
    const report r = rows_agree<K>([](auto x_hbm, auto o_hbm) {
        emit_pipeline(
            [](auto x_ref, auto o_ref) {
                charge(work{.explicit_seconds = 1e-6});
                emit_pipeline(body, {4}, in_specs<LongRows>, out_specs<LongRows>)(x_ref, o_ref);
            },
            {2}, in_specs<HbmFull>, out_specs<HbmFull>)(x_hbm, o_hbm);
    });
    EXPECT_EQ(r.steps.size(), 256u);
    EXPECT_EQ(r.inner_steps.size(), 256u * (2u + 8u));
    EXPECT_EQ(r.inner_rows[0].size(), 10u);
    EXPECT_GT(r.steady_ops, r.ops / 2);
    expect_parent_sums(r, 1, tpu::v5e.step_overhead_s, 1e-6);
}

TEST(InnerRows, FastLaneReplicatesNestedRowsOfBothCores) {
    using K = pallas_call<Grid<256>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Semantics<parallel>,
                          Chip<tpu::v5p>>;
    using Half = BlockSpec<Block<8, 128>, [](index_t i) { return idx(program_id(0) / 128 * 4 + i, 0); }>;
    const report r = rows_agree<K>([](auto x_hbm, auto o_hbm) {
        emit_pipeline(
            [](auto x_ref, auto o_ref) {
                charge(work{.explicit_seconds = 0.5e-6});
                emit_pipeline(body, {4}, in_specs<Half>, out_specs<Half>)(x_ref, o_ref);
            },
            {2}, in_specs<HbmFull>, out_specs<HbmFull>)(x_hbm, o_hbm);
    });
    EXPECT_EQ(r.cores, 2);
    EXPECT_EQ(r.inner_steps.size(), 256u * (2u + 8u));
    EXPECT_EQ(r.inner_rows[1].size(), 10u);
    EXPECT_GT(r.steady_ops, r.ops / 2);
    expect_parent_sums(r, 1, tpu::v5p.step_overhead_s, 0.5e-6);
}
