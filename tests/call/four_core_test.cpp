// Four TensorCores on a synthetic chip (no preset has more than two): the megacore split (S44),
// the run on data, cross-core semaphores, the race checks (MC1, MC2) and the prediction all take
// the chip's core count, up to max_cores; nothing assumes two.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "../sim/quad_chip.hpp"

using namespace ptpu;

namespace {

using quad_test::quad;

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const error& e) {
        return e.what();
    }
    return "no error";
}
bool has(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

using M = Array<float, 1024, 256>;
using Rows = BlockSpec<Block<128, 256>, [](auto i) { return idx(i, 0); }>;
using QuadAdd =
    pallas_call<Grid<8>, Semantics<parallel>, Chip<quad>, In<Arg<M, Rows>, Arg<M, Rows>>, Out<Arg<M, Rows>>>;
// The same kernel on one core of the same chip (an arbitrary axis is not split).
using OneAdd =
    pallas_call<Grid<8>, Semantics<arbitrary>, Chip<quad>, In<Arg<M, Rows>, Arg<M, Rows>>, Out<Arg<M, Rows>>>;
constexpr auto add_body = [](auto a, auto b, auto c) { store(c, load(a) + load(b)); };

// S44: each core takes ceil(8 / 4) = 2 consecutive parallel points.
static_assert(QuadAdd::info.cores == 4);
static_assert(QuadAdd::info.core_begin == per_core<index_t>{0, 2, 4, 6});
static_assert(QuadAdd::info.core_end == per_core<index_t>{2, 4, 6, 8});

host_array<M> filled(float scale) {
    host_array<M> x;
    for (std::size_t i = 0; i < x.size(); ++i) x.vector()[i] = scale * static_cast<float>(i % 1000);
    return x;
}

using F2 = Operand<float, 2>;
using DynAdd = dynamic_call<In<F2, F2>, Out<F2>>;
DynAdd dyn_add(index_t steps, chip hw) {
    DynAdd d;
    d.grid = {steps};
    d.semantics = {parallel};
    d.chip = hw;
    d.in[0] = {
        .shape = {1024, 256}, .block = {1024 / steps, 256}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.in[1] = d.in[0];
    d.out[0] = d.in[0];
    return d;
}

}  // namespace

// Every core's schedule is a pipeline of its own over its two steps: a prologue fetch of both
// inputs' first block, then the double-buffered steps and its own epilogue.
TEST(FourCores, EachCoreRunsItsOwnPipeline) {
    per_core<int> fetches{}, writes{}, steps{};
    per_core<std::uint32_t> first_fetch = each_core(~0u);
    for (const event& e : QuadAdd::events) {
        ASSERT_LT(e.core, 4);
        const auto c = static_cast<std::size_t>(e.core);
        if (e.kind == event_kind::fetch) {
            ++fetches[c];
            first_fetch[c] = std::min(first_fetch[c], e.block_step);
        }
        if (e.kind == event_kind::write) ++writes[c];
        if (e.kind == event_kind::step) ++steps[c];
    }
    for (std::size_t c = 0; c < 4; ++c) {
        EXPECT_EQ(fetches[c], 4) << "core " << c;  // two inputs x two blocks
        EXPECT_EQ(writes[c], 2) << "core " << c;
        EXPECT_EQ(steps[c], 2) << "core " << c;
        EXPECT_EQ(first_fetch[c], 2 * c) << "core " << c;
    }
    // A run-time configuration on the same chip plans the same events.
    const DynAdd d = dyn_add(8, quad);
    EXPECT_EQ(d.info().cores, 4);
    EXPECT_EQ(d.events(), std::vector<event>(QuadAdd::events.begin(), QuadAdd::events.end()));
}

TEST(FourCores, RunOnDataAndPrediction) {
    const host_array<M> x = filled(1.0f), y = filled(-0.5f);
    auto [z, rep] = QuadAdd{}(add_body, x, y);
    for (std::size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z.vector()[i], x.vector()[i] + y.vector()[i]) << i;
    ASSERT_EQ(rep.cores, 4);
    EXPECT_EQ(rep.stats.steps, 8);
    for (std::size_t c = 0; c < 4; ++c) {
        const core_report& k = rep.core[c];
        EXPECT_EQ(rep.stats.core_steps[c], 2) << c;
        EXPECT_EQ(k.steps, 2) << c;
        // Each core pays the chip's step overhead for each of its steps, and its time is the
        // sum of what it did and waited for.
        EXPECT_DOUBLE_EQ(k.overhead, 2 * quad.step_overhead_s) << c;
        EXPECT_NEAR(k.time, k.overhead + k.dma_issue + k.compute + k.exposed_dma + k.semaphore_stall, 1e-12)
            << c;
        EXPECT_EQ(k.compute, rep.core[0].compute) << c;  // equal work on every core
    }
    EXPECT_GE(rep.device_time, rep.core[3].time);
    // The dynamic configuration predicts the same time and computes the same output.
    auto [dz, drep] = dyn_add(8, quad)(add_body, x, y);
    EXPECT_EQ(dz, z.vector());
    EXPECT_EQ(drep.device_time, rep.device_time);
    // An add is HBM-bound: four cores share the HBM a single core would have to itself, so they
    // gain little over one core; the HBM moves every byte either way.
    auto [z1, one] = OneAdd{}(add_body, x, y);
    EXPECT_EQ(one.cores, 1);
    EXPECT_EQ(z1.vector(), z.vector());
    EXPECT_EQ(one.stats.core_steps[0], 8);
    EXPECT_LT(rep.device_time, one.device_time);
    EXPECT_GT(rep.device_time, 0.5 * one.device_time);
}

// The report, its per-step table, the SVG timeline and the Chrome trace show all four cores.
TEST(FourCores, ReportsShowEveryCore) {
    QuadAdd call;
    call.options.timeline = true;
    call.options.per_step = per_step_rows::always;
    const report rep = call.predict(add_body);
    ASSERT_EQ(rep.steps.size(), 8u);
    per_core<int> rows{};
    for (const auto& s : rep.steps) ++rows[static_cast<std::size_t>(s.core)];
    EXPECT_EQ(rows, (per_core<int>{2, 2, 2, 2}));
    std::ostringstream text, steps;
    text << rep;
    print_steps(steps, rep, 100);
    EXPECT_TRUE(has(text.str(), "quad, 4 cores")) << text.str();
    EXPECT_TRUE(has(text.str(), "core 3 ")) << text.str();
    int core3_rows = 0;
    std::istringstream lines(steps.str());
    for (std::string line; std::getline(lines, line);) {
        std::istringstream f(line);
        std::string step, core;
        f >> step >> core;
        core3_rows += core == "3";
    }
    EXPECT_EQ(core3_rows, 2) << steps.str();
    EXPECT_TRUE(has(to_svg(rep), "core 3 stream"));
    EXPECT_TRUE(has(to_chrome_trace(rep), "TensorCore 3 (quad)"));
}

TEST(FourCores, ComputeBoundKernelScalesWithTheCores) {
    // Sixteen 128 x 128 x 128 products per step: compute-bound, so four cores take about a
    // quarter of one core's time.
    using Sq = Array<float, 2048, 128>;
    using B = BlockSpec<Block<128, 128>, [](auto i) { return idx(i, 0); }>;
    using W = BlockSpec<Block<128, 128>, [](auto) { return idx(0, 0); }>;
    using Ws = Array<float, 128, 128>;
    const auto body = [](auto a, auto w, auto o) {
        auto v = load(a);
        for (int k = 0; k < 16; ++k) v = dot(v, load(w));
        store(o, v);
    };
    using Q =
        pallas_call<Grid<16>, Semantics<parallel>, Chip<quad>, In<Arg<Sq, B>, Arg<Ws, W>>, Out<Arg<Sq, B>>>;
    using One =
        pallas_call<Grid<16>, Semantics<arbitrary>, Chip<quad>, In<Arg<Sq, B>, Arg<Ws, W>>, Out<Arg<Sq, B>>>;
    const report four = Q{}.predict(body);
    const report one = One{}.predict(body);
    ASSERT_EQ(four.cores, 4);
    const double speedup = one.device_time / four.device_time;
    EXPECT_GT(speedup, 3.5);
    EXPECT_LE(speedup, 4.0 + 1e-9);
    for (std::size_t c = 0; c < 4; ++c) EXPECT_DOUBLE_EQ(four.core[c].compute, one.core[0].compute / 4) << c;
}

// S44 with fewer parallel points than ceil-sized chunks: 6 points in chunks of 2 leave core 3
// with nothing to do, and it runs no step.
TEST(FourCores, UnevenSplitLeavesACoreIdle) {
    DynAdd d = dyn_add(8, quad);
    d.grid = {6};
    for (auto* o : {&d.in[0], &d.in[1], &d.out[0]}) o->shape = {768, 256};
    const plan_info info = d.info();
    ASSERT_EQ(info.cores, 4);
    EXPECT_EQ(info.core_begin, (per_core<index_t>{0, 2, 4, 6}));
    EXPECT_EQ(info.core_end, (per_core<index_t>{2, 4, 6, 6}));
    std::vector<float> x(768 * 256), y(768 * 256);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(i % 977);
        y[i] = 0.25f * static_cast<float>(i % 31);
    }
    auto [z, rep] = d(add_body, x, y);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(z.vector()[i], x[i] + y[i]) << i;
    EXPECT_EQ(rep.stats.core_steps, (per_core<index_t>{2, 2, 2, 0}));
    EXPECT_EQ(rep.core[3].steps, 0);
    EXPECT_EQ(rep.core[3].time, 0.0);
}

namespace {
// An output block chosen by a prefetched table: the planner finds cores writing one block.
using Table = Array<std::int32_t, 4>;
using Race =
    pallas_call<Grid<4>, Semantics<parallel>, Chip<quad>, ScalarPrefetch<Table>,
                Out<Arg<Array<float, 32, 128>,
                        BlockSpec<Block<8, 128>, [](auto i, const auto& s) { return idx(s[i], 0); }>>>>;
}  // namespace

TEST(FourCores, OutputWrittenByCoresZeroAndThreeIsMC1) {
    const std::vector<std::int32_t> shared = {0, 1, 2, 0};
    const std::string e =
        error_of([&] { (void)Race{}([](auto, auto o) { store(o, full_like(o, 1.0f)); }, shared); });
    EXPECT_TRUE(has(e, "ptpu[MC1]")) << e;
    EXPECT_TRUE(has(e, "written by core 0 in iterations (0) through (0) and by core 3 from iteration (3)"))
        << e;
    const std::vector<std::int32_t> distinct = {3, 2, 1, 0};
    auto [o, rep] = Race{}([](auto, auto orf) { store(orf, full_like(orf, program_id(0) + 1)); }, distinct);
    for (index_t r = 0; r < 32; ++r)
        EXPECT_EQ(o.vector()[static_cast<std::size_t>(r * 128)], static_cast<float>(4 - r / 8)) << r;
}

namespace {
// One grid step per core, the data in HBM (any), a VMEM tile and semaphores.
using Slab = Array<float, 32, 128>;
using AnySlab = BlockSpec<Full, zero_map, any>;
using Tile = Scratch<vmem, float, 8, 128>;
using DmaSem = Scratch<semaphore, dma_semaphore, 2>;
using RegSem = Scratch<semaphore, regular_semaphore, 1>;
using Ring = pallas_call<Grid<4>, In<Arg<Slab, AnySlab>>, Out<Arg<Slab, AnySlab>>, Tile, DmaSem, RegSem,
                         Semantics<parallel>, Chip<quad>>;

host_array<Slab> slab() {
    host_array<Slab> x;
    std::iota(x.begin(), x.end(), 1.0f);
    return x;
}

// A token around the cores: core 0 writes 2x (rows 0-7 of x) to rows 0-7 and signals core 1;
// core k waits, reads rows 8(k-1).. that core k-1 wrote, adds 1, writes rows 8k.. and signals
// core k + 1.
struct token_ring {
    template <class X, class O, class Buf, class D, class S>
    void operator()(X x, O o, Buf buf, D dsem, S sem) const {
        const auto k = static_cast<int>(program_id(0));
        if (k == 0) {
            sync_copy(x.at(ds(0, 8), ds(0, 128)), buf);
            store(buf, load(buf) * 2.0f);
        } else {
            semaphore_wait(sem.at(0), 1);
            auto in = async_copy(o.at(ds(8 * (k - 1), 8), ds(0, 128)), buf, dsem.at(0));
            in.wait();
            store(buf, load(buf) + 1.0f);
        }
        auto out = async_copy(buf, o.at(ds(8 * k, 8), ds(0, 128)), dsem.at(1));
        out.wait();
        if (k < 3) semaphore_signal(sem.at(0), 1, k + 1);
    }
};
}  // namespace

TEST(FourCores, SemaphoreTokenRingAcrossFourCores) {
    const host_array<Slab> x = slab();
    Ring call;
    call.options.detect_races = true;  // each read is ordered after the write it reads (no MC2)
    auto [o, rep] = call(token_ring{}, x);
    for (index_t k = 0; k < 4; ++k)
        for (index_t r = 0; r < 8; ++r)
            for (index_t c = 0; c < 128; ++c) {
                const float v = x.vector()[static_cast<std::size_t>(r * 128 + c)];
                ASSERT_EQ(o.vector()[static_cast<std::size_t>((8 * k + r) * 128 + c)],
                          2.0f * v + static_cast<float>(k))
                    << k << " " << r << " " << c;
            }
    ASSERT_EQ(rep.cores, 4);
    EXPECT_EQ(rep.stats.sem_signals, 3);
    // Each core waits for the one before it: the later in the ring, the longer the stall.
    EXPECT_EQ(rep.core[0].semaphore_stall, 0.0);
    for (std::size_t c = 1; c < 4; ++c)
        EXPECT_GT(rep.core[c].semaphore_stall, rep.core[c - 1].semaphore_stall) << c;
    // Core 3 never signalled: core 0 waiting for it is a deadlock, reported at once.
    const std::string e = error_of([&] {
        (void)Ring{}(
            [](auto, auto, auto, auto, auto sem) {
                const auto k = static_cast<int>(program_id(0));
                if (k == 0) semaphore_wait(sem.at(0), 1);
            },
            x);
    });
    EXPECT_TRUE(has(e, "ptpu[39]")) << e;
    EXPECT_TRUE(has(e, "core 0, step 0")) << e;
}

// MC2 with detect_races: cores 0 and 3 write the same HBM rows. Unordered, that is a race (the
// result depends on which core writes last); ordered through core 1 (0 signals 1, 1 signals 3),
// it is not: the happens-before order is transitive across the cores.
TEST(FourCores, CrossCoreRaceIsMC2UnlessOrdered) {
    const host_array<Slab> x = slab();
    const auto write_rows0 = [](auto o, auto buf, auto dsem) {
        store(buf, full_like(buf, static_cast<float>(program_id(0))));
        auto out = async_copy(buf, o.at(ds(0, 8), ds(0, 128)), dsem.at(1));
        out.wait();
    };
    Ring racy;
    racy.options.detect_races = true;
    const std::string e = error_of([&] {
        (void)racy(
            [&](auto, auto o, auto buf, auto dsem, auto) {
                const auto k = program_id(0);
                if (k == 0 || k == 3) write_rows0(o, buf, dsem);
            },
            x);
    });
    EXPECT_TRUE(has(e, "ptpu[MC2]")) << e;
    EXPECT_TRUE(has(e, "core 3")) << e;
    EXPECT_TRUE(has(e, "core 0")) << e;

    Ring ordered;
    ordered.options.detect_races = true;
    auto [o, rep] = ordered(
        [&](auto, auto out, auto buf, auto dsem, auto sem) {
            const auto k = static_cast<int>(program_id(0));
            if (k == 0) {
                write_rows0(out, buf, dsem);
                semaphore_signal(sem.at(0), 1, 1);
            } else if (k == 1) {
                semaphore_wait(sem.at(0), 1);
                semaphore_signal(sem.at(0), 1, 3);
            } else if (k == 3) {
                semaphore_wait(sem.at(0), 1);
                write_rows0(out, buf, dsem);
            }
        },
        x);
    EXPECT_EQ(o.vector()[0], 3.0f);  // core 3 wrote last
    EXPECT_EQ(rep.stats.sem_signals, 2);
}

// The run-time configured deep-buffering pattern (one inner pipeline split by core_axis over
// the outer call's cores) splits over four.
TEST(FourCores, CustomBufferedSplitsOverFourCores) {
    DynAdd d = dyn_add(16, quad);
    d.custom_buffered = true;
    d.in[1].buffer_count = 3;
    const host_array<M> x = filled(1.0f), y = filled(3.0f);
    auto [z, rep] = d(add_body, x, y);
    for (std::size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z.vector()[i], x.vector()[i] + y.vector()[i]) << i;
    ASSERT_EQ(rep.cores, 4);
    for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(rep.stats.core_steps[c], 1) << c;  // one outer step each
    EXPECT_EQ(rep.stats.inner_steps, 16);
    EXPECT_EQ(d.predict(add_body).device_time, rep.device_time);
}
