// The steady-state fast lane with the timeline recorded (docs/model.md, "Steady state"): skipped
// periods record their cycle's spans moved in time, steps and DMA ids, labelled as the ops they
// stand for, so that the timeline equals every-op simulation's event for event.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "quad_chip.hpp"

using namespace ptpu;

namespace {

bool same_dma_note(const dma_note& a, const dma_note& b) {
    return a.kind == b.kind && a.core == b.core && a.op == b.op && a.slot == b.slot &&
           a.pipeline == b.pipeline && a.block_step == b.block_step && a.block == b.block;
}
// Spans x of report r and y of report q stand for the same DMA (or neither for one).
bool same_note(const report& r, const sim::span& x, const report& q, const sim::span& y) {
    const bool dma = x.kind == stream::op_kind::dma_start || x.kind == stream::op_kind::dma_wait;
    if (!dma || r.notes.empty()) return x.label == y.label;
    return x.label < r.notes.size() && y.label < q.notes.size() &&
           same_dma_note(r.notes[x.label], q.notes[y.label]);
}

// The fast lane's timeline and every-op simulation's: the same spans in the same order, times
// within 1e-9 relative, everything else exact; the notes they point to equal. Returns the fast
// lane's report. The cores' runners number their notes as the model pulls their ops; with more
// than two cores the lane pulls them in another order than every-op simulation, so there
// (`same_numbers` false) a span's label is checked through the note it points to.
template <class K, class Body>
report timelines_agree(const Body& body, const std::string& what, bool same_numbers = true) {
    K k{};
    k.options.timeline = true;
    const report fast = k.predict(body);
    k.options.steady_state = false;
    const report exact = k.predict(body);
    EXPECT_EQ(exact.steady_ops, 0) << what;
    EXPECT_GT(fast.steady_ops, fast.ops / 2) << what << ": the lane ran with the timeline on";
    EXPECT_EQ(fast.ops, exact.ops) << what;
    EXPECT_NEAR(fast.device_time, exact.device_time, 1e-9 * exact.device_time) << what;
    EXPECT_EQ(fast.timeline.size(), exact.timeline.size()) << what;
    // Per core: its stream's spans in order, its DMAs' by id. (Spans of different cores and
    // tracks ending at one instant may come in either order: which event the model handles
    // first at equal times can turn on a rounding error of a clock summed two ways.)
    const auto group = [](const report& r, int core, int tr) {  // tr: 0 stream, 1 DMAs
        std::vector<sim::span> v;
        for (const sim::span& s : r.timeline)
            if (s.core == core && static_cast<int>(s.track) == tr) v.push_back(s);
        if (tr == 1)
            std::stable_sort(v.begin(), v.end(), [](const sim::span& a, const sim::span& b) { return a.dma < b.dma; });
        return v;
    };
    const double tol = 1e-9 * exact.device_time;
    int bad = 0;
    for (int c = 0; c < exact.cores; ++c)
        for (const int tr : {0, 1}) {
            const std::vector<sim::span> fx = group(fast, c, tr);
            const std::vector<sim::span> ex = group(exact, c, tr);
            EXPECT_EQ(fx.size(), ex.size()) << what << " core " << c << " track " << tr;
            for (std::size_t i = 0; i < std::min(fx.size(), ex.size()) && bad < 5; ++i) {
                const sim::span& x = fx[i];
                const sim::span& y = ex[i];
                const bool same_label = same_numbers ? x.label == y.label : same_note(fast, x, exact, y);
                if (x.kind == y.kind && same_label && x.step == y.step && x.dma == y.dma &&
                    x.bytes == y.bytes && x.far == y.far && std::abs(x.begin - y.begin) <= tol &&
                    std::abs(x.end - y.end) <= tol)
                    continue;
                ++bad;
                ADD_FAILURE() << what << ": core " << c << " track " << tr << " span " << i
                              << " kind " << static_cast<int>(x.kind) << "/" << static_cast<int>(y.kind) << " label "
                              << x.label << "/" << y.label << " step " << x.step << "/" << y.step << " dma " << x.dma
                              << "/" << y.dma << " begin " << x.begin << "/" << y.begin << " end " << x.end << "/"
                              << y.end;
            }
        }
    // The labels point at the same DMAs (the notes are the runner's, the same in both runs).
    EXPECT_EQ(fast.notes.size(), exact.notes.size()) << what;
    for (std::size_t i = 0; same_numbers && i < std::min(fast.notes.size(), exact.notes.size()); ++i) {
        const dma_note& a = fast.notes[i];
        const dma_note& b = exact.notes[i];
        if (a.kind != b.kind || a.op != b.op || a.slot != b.slot || a.block_step != b.block_step) {
            ADD_FAILURE() << what << ": note " << i;
            break;
        }
    }
    return fast;
}

constexpr index_t n_steps = 2048;
using Vec = Array<float, n_steps * 8, 128>;
using RowBlk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
constexpr auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };

}  // namespace

TEST(TimelineLane, OneCoreElementwise) {
    using K = pallas_call<Grid<n_steps>, In<Arg<Vec, RowBlk>, Arg<Vec, RowBlk>>, Out<Arg<Vec, RowBlk>>,
                          Chip<tpu::v5e>>;
    const report r = timelines_agree<K>(add, "elementwise");
    EXPECT_GT(r.timeline.size(), 5u * n_steps);
}

// The output written every K steps: a period of K steps, its DMAs of several kinds.
TEST(TimelineLane, ReductionAxisMatmul) {
    constexpr index_t M = 256, N = 256, Kd = 2048, bm = 128, bn = 128, bk = 128;
    using A = Array<float, M, Kd>;
    using B = Array<float, Kd, N>;
    using O = Array<float, M, N>;
    using K = pallas_call<Grid<M / bm, N / bn, Kd / bk>, Semantics<parallel, parallel, arbitrary>,
                          In<Arg<A, BlockSpec<Block<bm, bk>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                             Arg<B, BlockSpec<Block<bk, bn>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                          Out<Arg<O, BlockSpec<Block<bm, bn>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                          Chip<tpu::v5e>>;
    timelines_agree<K>(
        [](auto a, auto b, auto o) {
            when(program_id(2) == 0, [&] { store(o, zeros<float>(bm, bn)); });
            store(o, load(o) + dot(load(a), load(b)));
        },
        "matmul");
}

// Both TensorCores of a v5p running: the lane takes both.
TEST(TimelineLane, MegacoreBothCores) {
    using K = pallas_call<Grid<n_steps>, In<Arg<Vec, RowBlk>, Arg<Vec, RowBlk>>, Out<Arg<Vec, RowBlk>>,
                          Semantics<parallel>, Chip<tpu::v5p>>;
    const report r = timelines_agree<K>(add, "megacore");
    EXPECT_EQ(r.cores, 2);
    EXPECT_TRUE(std::ranges::any_of(r.timeline, [](const sim::span& s) { return s.core == 1; }));
}

// Four TensorCores of a synthetic chip running: the lane takes every core.
TEST(TimelineLane, FourCores) {
    using K = pallas_call<Grid<n_steps>, In<Arg<Vec, RowBlk>, Arg<Vec, RowBlk>>, Out<Arg<Vec, RowBlk>>,
                          Semantics<parallel>, Chip<quad_test::quad>>;
    const report r = timelines_agree<K>(add, "four cores", false);
    EXPECT_EQ(r.cores, 4);
    EXPECT_TRUE(std::ranges::any_of(r.timeline, [](const sim::span& s) { return s.core == 3; }));
}

// A period of 3 steps (charges varying with the step) in a stream of 1000: it ends mid-period,
// and the lane gives the unfinished period back to be simulated, labels and all.
TEST(TimelineLane, StreamEndingMidPeriod) {
    using Short = Array<float, 1000 * 8, 128>;
    using K = pallas_call<Grid<1000>, In<Arg<Short, RowBlk>, Arg<Short, RowBlk>>, Out<Arg<Short, RowBlk>>,
                          Chip<tpu::v5e>>;
    timelines_agree<K>(
        [](auto, auto, auto) { charge(work{.explicit_seconds = program_id(0) % 3 == 0 ? 2e-6 : 0.5e-6}); },
        "period 3");
}

// An inner pipeline per step: its DMAs labelled by their notes (pipeline 1), replicated too.
TEST(TimelineLane, InnerPipelines) {
    using X = Array<float, 64, 128>;
    using AnyFull = BlockSpec<Full, zero_map, any>;
    using Rows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
    using K = pallas_call<Grid<256>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>;
    const report r = timelines_agree<K>(
        [](auto x, auto o) {
            emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>, out_specs<Rows>)(x, o);
        },
        "inner");
    EXPECT_TRUE(std::ranges::any_of(r.timeline, [&](const sim::span& s) {
        return s.track == sim::span::track::dma && r.notes[s.label].pipeline == 1;
    }));
}
