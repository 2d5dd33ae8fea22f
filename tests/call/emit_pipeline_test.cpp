// emit_pipeline (docs/guide.md, "emit_pipeline"): inner pipelines inside a
// pallas_call body run the exact schedule (A1 event for event, deep buffering, A3's lookahead),
// move real data, nest, read the enclosing program ids and SMEM values, split over cores as
// upstream's _partition_grid (A11), take VMEM from the core (24), and cost what their ops cost.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

using namespace ptpu;

namespace {

using X = Array<float, 32, 128>;
using AnyFull = BlockSpec<Full, zero_map, any>;
using Outer = pallas_call<Grid<>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>;
using Rows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;

// The acceptance cases' notation: "P: in0@0 | s0: in1@1 wait0@0 BODY out0@0 | ...", blocks by the map i -> i / d.
std::string render(const std::vector<event>& events, index_t div = 1) {
    std::string s = "P:";
    for (const event& e : events) {
        const index_t b = static_cast<index_t>(e.block_step) / div;
        switch (e.kind) {
            case event_kind::step:
                s += " | s" + std::to_string(e.step) + ":";
                break;
            case event_kind::fetch:
                s += " in" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            case event_kind::wait_in:
                s += " wait" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            case event_kind::body:
                s += " BODY";
                break;
            case event_kind::write:
                s += " out" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            case event_kind::wait_out:
                s += " wout" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            default:
                s += " ?";
        }
    }
    return s;
}

host_array<X> ramp() {
    host_array<X> x;
    std::iota(x.begin(), x.end(), 0.0f);
    return x;
}

}  // namespace

// A1: the double-buffered copy, as emit_pipeline inside pallas_call(ANY in, ANY out).
TEST(EmitPipeline, A1DoubleBufferedCopy) {
    const host_array<X> x = ramp();
    std::vector<event> trace;
    auto [o, rep] = Outer{}(
        [&](auto x_hbm, auto o_hbm) {
            emit_pipeline([](auto in, auto out) { store(out, load(in) * 2.0f); }, {4}, in_specs<Rows>, out_specs<Rows>,
                          {.trace = &trace})(x_hbm, o_hbm);
        },
        x);
    EXPECT_EQ(render(trace),
              "P: in0@0 | s0: in1@1 wait0@0 BODY out0@0 | s1: in2@0 wait1@1 BODY out1@1 wout0@0 | s2: in3@1 "
              "wait2@0 BODY out2@0 wout1@1 | s3: wait3@1 BODY out3@1 wout2@0 wout3@1");
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], 2.0f * x.vector()[k]) << k;
    EXPECT_EQ(rep.stats.inner_steps, 4);
    EXPECT_EQ(rep.stats.inner_dmas, 8);
    EXPECT_EQ(rep.stats.inner_bytes, 2 * 32 * 128 * 4);
    EXPECT_EQ(rep.stats.dma_in + rep.stats.dma_out, 0);  // the outer pipeline copies nothing (S47)
}

// The inner pipeline's ops are the pallas_call pipeline's ops: the same kernel as a pallas_call
// with a grid of 4 takes exactly one grid step's overhead less (the outer, gridless call's).
TEST(EmitPipeline, CostsWhatThePallasCallPipelineCosts) {
    const host_array<X> x = ramp();
    auto body = [](auto in, auto out) { store(out, load(in) * 2.0f); };
    auto [o, inner] = Outer{}(
        [&](auto x_hbm, auto o_hbm) { emit_pipeline(body, {4}, in_specs<Rows>, out_specs<Rows>)(x_hbm, o_hbm); }, x);
    auto [p, piped] = pallas_call<Grid<4>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>, Chip<tpu::v5e>>{}(body, x);
    EXPECT_TRUE(std::ranges::equal(o, p));
    EXPECT_NEAR(inner.device_time - piped.device_time, tpu::v5e.step_overhead_s, 1e-12);
}

// S30 and S32 through emit_pipeline: three buffers run two steps ahead; with lookahead over
// block indices 0,0,0,0,1,1,1,1 block 1 is fetched at step 0 (at step 3 without).
TEST(EmitPipeline, DeepBufferingAndLookahead) {
    const host_array<X> x = ramp();
    std::vector<event> t3;
    auto [o3, r3] = Outer{}(
        [&](auto x_hbm, auto o_hbm) {
            emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4},
                          in_specs<BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<3>>>,
                          out_specs<Rows>, {.trace = &t3})(x_hbm, o_hbm);
        },
        x);
    EXPECT_TRUE(std::ranges::equal(o3, x));
    EXPECT_EQ(render(t3).substr(0, 40), "P: in0@0 in1@1 | s0: in2@2 wait0@0 BODY ");
    using Y = Array<float, 16, 128>;
    using Both = pallas_call<Grid<>, In<Arg<Y, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>;
    host_array<Y> y;
    std::iota(y.begin(), y.end(), 1.0f);
    for (const bool look : {true, false}) {
        std::vector<event> t;
        auto run = [&]<bool L>(std::bool_constant<L>) {
            return Both{}(
                [&](auto y_hbm, auto o_hbm) {
                    emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4},
                                  in_specs<BlockSpec<Block<8, 128>, [](index_t i) { return idx(i / 2, 0); },
                                                     Buffered<2, L>>>,
                                  out_specs<Rows>, {.trace = &t})(y_hbm, o_hbm);
                },
                y);
        };
        auto [o, rep] = look ? run(std::true_type{}) : run(std::false_type{});
        std::vector<std::uint32_t> fetch_steps;
        for (const event& e : t)
            if (e.kind == event_kind::fetch && e.op == 0) fetch_steps.push_back(e.step);
        EXPECT_EQ(fetch_steps, (std::vector<std::uint32_t>{0, look ? 0u : 1u})) << look;
        for (index_t r = 0; r < 32; ++r)
            for (index_t c = 0; c < 128; ++c) ASSERT_EQ(o(r, c), y((r / 8) / 2 * 8 + r % 8, c));
    }
}

// S53: an outer grid step runs a whole inner pipeline, whose index maps read the outer program
// id; A11's megacore split over core_axis 0 on v5p (the seed's template).
TEST(EmitPipeline, NestedInAGridAndSplitOverCores) {
    using Z = Array<float, 64, 512>;
    const auto z = [] {
        host_array<Z> a;
        std::iota(a.begin(), a.end(), 0.0f);
        return a;
    }();
    // Outer grid over row halves; the inner pipeline walks the 4 column blocks of its half.
    using Half = BlockSpec<Block<32, 128>, [](index_t j) { return idx(program_id(0), j); }>;
    auto [a, ra] = pallas_call<Grid<2>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>, Chip<tpu::v5e>>{}(
        [](auto x, auto o) { emit_pipeline([](auto i, auto w) { store(w, load(i) + 1.0f); }, {4}, in_specs<Half>, out_specs<Half>)(x, o); },
        z);
    for (std::size_t k = 0; k < z.size(); ++k) ASSERT_EQ(a.vector()[k], z.vector()[k] + 1.0f);
    EXPECT_EQ(ra.stats.inner_steps, 8);
    // The seed's megacore template: grid (num_cores,), parallel; inner grid (4, 4) split on its
    // parallel dim 0 by core_axis 0: core c runs rows 2c, 2c + 1.
    using Tile = BlockSpec<Block<16, 128>, [](index_t i, index_t j) { return idx(i, j); }>;

    auto [m, rm] = pallas_call<Grid<2>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>, Semantics<parallel>,
                               Chip<tpu::v5p>>{}(
        [](auto x, auto o) {
            emit_pipeline([](auto i, auto w) { store(w, load(i) * 2.0f); }, {4, 4}, in_specs<Tile>, out_specs<Tile>,
                          {.semantics = {parallel, arbitrary}, .core_axis = 0})(x, o);
        },
        z);
    for (std::size_t k = 0; k < z.size(); ++k) ASSERT_EQ(m.vector()[k], 2.0f * z.vector()[k]);
    EXPECT_EQ(rm.cores, 2);
    EXPECT_EQ(rm.stats.inner_steps, 16);  // 8 per core
    EXPECT_GT(rm.core[1].compute, 0.0);
    EXPECT_NEAR(rm.core[0].compute, rm.core[1].compute, 1e-12);
}

// A timing-only run makes a step from the last one's ops when the steps repeat; a body that runs
// an inner pipeline at one such step only has that pipeline's ops spliced into the step. The
// prediction equals the run on data (which makes every step in full): the same device time,
// breakdown, inner steps and DMAs, and the per-step rows.
TEST(EmitPipeline, InnerPipelineAtOneRepeatedStep) {
    using Y = Array<float, 64, 128>;
    using Blk = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
    using Call = pallas_call<Grid<8>, In<Arg<Y, Blk>, Arg<Y, AnyFull>>, Out<Arg<Y, Blk>, Arg<Y, AnyFull>>,
                             Chip<tpu::v5e>>;
    const auto body = [](auto x, auto yh, auto o, auto zh) {
        store(o, load(x) * 2.0f);
        if (program_id(0) == 5)
            emit_pipeline([](auto a, auto b) { store(b, load(a) + 1.0f); }, {8}, in_specs<Blk>,
                          out_specs<Blk>)(yh, zh);
    };
    host_array<Y> x, y;
    std::iota(x.begin(), x.end(), 0.0f);
    std::iota(y.begin(), y.end(), 100.0f);
    Call call;
    call.options.per_step = per_step_rows::always;
    auto [o, z, rep] = call(body, x, y);
    for (std::size_t k = 0; k < x.size(); ++k) {
        ASSERT_EQ(o.vector()[k], 2.0f * x.vector()[k]);
        ASSERT_EQ(z.vector()[k], y.vector()[k] + 1.0f);
    }
    const report pred = call.predict(body);
    EXPECT_EQ(rep.stats.inner_steps, 8);
    EXPECT_EQ(pred.stats.inner_steps, 8);
    EXPECT_EQ(pred.stats.inner_dmas, rep.stats.inner_dmas);
    EXPECT_EQ(pred.stats.dma_in, rep.stats.dma_in);
    EXPECT_EQ(pred.stats.dma_out, rep.stats.dma_out);
    EXPECT_EQ(pred.device_time, rep.device_time);
    EXPECT_EQ(pred.core[0].compute, rep.core[0].compute);
    EXPECT_EQ(pred.core[0].exposed_dma, rep.core[0].exposed_dma);
    ASSERT_EQ(pred.steps.size(), rep.steps.size());
    for (std::size_t k = 0; k < rep.steps.size(); ++k)
        EXPECT_EQ(pred.steps[k].end, rep.steps[k].end) << "step " << k;
    ASSERT_EQ(pred.inner_steps.size(), 8u);
    EXPECT_EQ(pred.inner_steps.size(), rep.inner_steps.size());
}

// In an inner body, program_id and num_programs would be the enclosing kernel's (as in Pallas),
// which code ported from a kernel body reads as the inner grid's: K3. pipeline_index and
// pipeline_size are the inner grid's; outer_program_id and outer_num_programs the kernel's.
// Index maps of the inner pipeline keep program_id (the kernel's, as in Pallas).
TEST(EmitPipeline, ProgramIdInAnInnerBodyIsK3) {
    using Z = Array<float, 64, 512>;
    host_array<Z> z;
    std::iota(z.begin(), z.end(), 0.0f);
    using Half = BlockSpec<Block<32, 128>, [](index_t j) { return idx(program_id(0), j); }>;
    using Call = pallas_call<Grid<2>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>, Chip<tpu::v5e>>;
    auto message_of = [](auto&& f) {
        try {
            f();
        } catch (const error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // The ported mistake: the inner body asks program_id for its column block.
    const std::string m = message_of([&] {
        (void)Call{}(
            [](auto x, auto o) {
                emit_pipeline([](auto i, auto w) { store(w, load(i) + static_cast<float>(program_id(0))); }, {4},
                              in_specs<Half>, out_specs<Half>)(x, o);
            },
            z);
    });
    EXPECT_EQ(m.rfind("ptpu[K3] program_id in an emit_pipeline body (pipeline 1): ", 0), 0u) << m;
    EXPECT_NE(m.find("use pipeline_index(axis) for this pipeline's grid, or outer_program_id(axis)"),
              std::string::npos)
        << m;
    const std::string n = message_of([&] {
        (void)Call{}.predict([](auto x, auto o) {
            emit_pipeline([](auto i, auto w) { store(w, load(i) * static_cast<float>(num_programs(0))); }, {4},
                          in_specs<Half>, out_specs<Half>)(x, o);
        });
    });
    EXPECT_EQ(n.rfind("ptpu[K3] num_programs in an emit_pipeline body (pipeline 1): ", 0), 0u) << n;
    EXPECT_NE(n.find("use pipeline_size(axis)"), std::string::npos) << n;
    // The explicit spellings: each element + 1000 x the kernel's row half + 100 x the inner
    // column block + 10 x the kernel's grid size + the inner grid size.
    auto [a, ra] = Call{}(
        [](auto x, auto o) {
            const index_t outside = program_id(0);  // the kernel's body itself: program_id as ever
            emit_pipeline(
                [outside](auto i, auto w) {
                    EXPECT_EQ(outer_program_id(0), outside);
                    const auto tag = static_cast<float>(1000 * outer_program_id(0) + 100 * pipeline_index(0) +
                                                        10 * outer_num_programs(0) + pipeline_size(0));
                    store(w, load(i) + tag);
                },
                {4}, in_specs<Half>, out_specs<Half>)(x, o);
        },
        z);
    for (index_t r = 0; r < 64; r += 5)
        for (index_t c = 0; c < 512; c += 37)
            ASSERT_EQ(a(r, c), z(r, c) + static_cast<float>(1000 * (r / 32) + 100 * (c / 128) + 10 * 2 + 4))
                << r << ", " << c;
    EXPECT_EQ(ra.stats.inner_steps, 8);
    // A prediction takes the explicit spellings too (the body memo keys on them as on
    // program_id), at the run's time (the same work per step).
    const report p = Call{}.predict([](auto x, auto o) {
        emit_pipeline(
            [](auto i, auto w) {
                store(w, load(i) + static_cast<float>(outer_program_id(0) + pipeline_index(0)));
            },
            {4}, in_specs<Half>, out_specs<Half>)(x, o);
    });
    EXPECT_NEAR(p.device_time, ra.device_time, 1e-12 * ra.device_time);
}

// A11's table: per-core step counts of _partition_grid with 2 cores.
TEST(EmitPipeline, A11PartitionTable) {
    struct row {
        std::vector<index_t> grid;
        semantics_list sem;
        index_t c0, c1;
    };
    const std::vector<row> rows = {
        {{8}, {parallel}, 4, 4},
        {{5}, {parallel}, 3, 2},
        {{8, 3}, {parallel, arbitrary}, 12, 12},
        {{5, 3}, {parallel, arbitrary}, 9, 6},
        {{2, 7}, {arbitrary, parallel}, 8, 6},
        {{8, 8}, {parallel, parallel}, 32, 32},
        {{5, 7}, {parallel, parallel}, 20, 15},
        {{1, 1}, {parallel, parallel}, 1, 0},
        {{4, 4}, {arbitrary, parallel}, 8, 8},
    };
    for (const row& r : rows) {
        index_t steps[2] = {1, 1};
        for (index_t c = 0; c < 2; ++c) {
            const auto p = detail::partition_grid(r.grid.data(), static_cast<int>(r.grid.size()), r.sem, c, 2);
            for (std::size_t d = 0; d < r.grid.size(); ++d) steps[c] *= p.grid[d];
        }
        EXPECT_EQ(steps[0], r.c0);
        EXPECT_EQ(steps[1], r.c1);
    }
    // (5, 7) P, P splits dim 1 (the largest: neither divides by 2): core 1 starts at j = 4.
    const index_t g57[] = {5, 7};
    const auto p = detail::partition_grid(g57, 2, {parallel, parallel}, 1, 2);
    EXPECT_EQ(p.offset[1], 4);
    EXPECT_EQ(p.grid[1], 3);
    const index_t g4[] = {4};
    auto rule_of = [](auto&& f) {
        try {
            f();
        } catch (const error& e) {
            return e.rule();
        }
        return std::string("none");
    };
    EXPECT_EQ(rule_of([&] { (void)detail::partition_grid(g4, 1, {arbitrary}, 0, 2); }), "32");  // no parallel dim
    EXPECT_EQ(rule_of([&] { (void)detail::partition_grid(g4, 1, {}, 0, 2); }), "32");           // semantics length
    // Inner-pipeline queries outside an emit_pipeline body are 22.
    const host_array<X> x = ramp();
    EXPECT_EQ(rule_of([&] { (void)Outer{}([](auto, auto) { (void)pipeline_index(0); }, x); }), "22");
    EXPECT_EQ(rule_of([&] {
                  (void)Outer{}(
                      [](auto xh, auto oh) {
                          emit_pipeline([](auto i, auto o) { store(o, load(i)); (void)pipeline_index(1); }, {4},
                                        in_specs<Rows>, out_specs<Rows>)(xh, oh);
                      },
                      x);
              }),
              "22");  // an axis the inner grid does not have
}

// 24: the inner windows take VMEM from what the core has left.
TEST(EmitPipeline, VmemOverflowIsAnError) {
    using Big = Array<float, 4096, 1024>;
    using BigBlk = BlockSpec<Block<2048, 1024>, [](index_t i) { return idx(i, 0); }>;
    try {
        (void)pallas_call<Grid<>, In<Arg<Big, AnyFull>>, Out<Arg<Big, AnyFull>>, Chip<tpu::v5e>>{}.predict(
            [](auto x, auto o) {
                emit_pipeline([](auto i, auto w) { store(w, load(i)); }, {2}, in_specs<BigBlk>, out_specs<BigBlk>)(x, o);
            });
        FAIL() << "no error";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "24");
        EXPECT_NE(std::string(e.what()).find("emit_pipeline (pipeline 1)"), std::string::npos) << e.what();
    }
}

// A2: the matmul with accumulation over grid (2, 2, 2): 8 fetches each of x and y, o copied out
// at steps 1, 3, 5, 7 and waited one step later, o's slots 0, 0, 1, 1, 0, 0, 1, 1; z == x @ y.
TEST(EmitPipeline, A2MatmulTraceAndResult) {
    using A = Array<float, 256, 256>;
    using Mm = pallas_call<Grid<>, In<Arg<A, AnyFull>, Arg<A, AnyFull>>, Out<Arg<A, AnyFull>>,
                           Scratch<vmem, float, 128, 128>, Chip<tpu::v5e>>;
    host_array<A> x, y;
    for (index_t i = 0; i < 256; ++i)
        for (index_t j = 0; j < 256; ++j) x(i, j) = static_cast<float>((i + j) % 5 - 2), y(i, j) = static_cast<float>((i * j) % 3 - 1);
    using XS = BlockSpec<Block<128, 128>, [](index_t i, index_t, index_t k) { return idx(i, k); }>;
    using YS = BlockSpec<Block<128, 128>, [](index_t, index_t j, index_t k) { return idx(k, j); }>;
    using OS = BlockSpec<Block<128, 128>, [](index_t i, index_t j, index_t) { return idx(i, j); }>;
    std::vector<event> t;
    auto [z, rep] = Mm{}(
        [&](auto xh, auto yh, auto zh, auto acc) {
            emit_pipeline(
                [&](auto a, auto b, auto o) {
                    if (pipeline_index(2) == 0) store(acc, zeros<float>(c<128>, c<128>));
                    store(acc, load(acc) + dot(load(a), load(b)));
                    if (pipeline_index(2) == 1) store(o, load(acc));
                },
                {2, 2, 2}, in_specs<XS, YS>, out_specs<OS>, {.trace = &t})(xh, yh, zh);
        },
        x, y);
    int fx = 0, fy = 0;
    std::vector<std::uint32_t> writes, waits;
    for (const event& e : t) {
        fx += e.kind == event_kind::fetch && e.op == 0;
        fy += e.kind == event_kind::fetch && e.op == 1;
        if (e.kind == event_kind::write) writes.push_back(e.step * 10 + e.slot);
        if (e.kind == event_kind::wait_out) waits.push_back(e.step);
    }
    EXPECT_EQ(fx, 8);
    EXPECT_EQ(fy, 8);
    EXPECT_EQ(writes, (std::vector<std::uint32_t>{10, 31, 50, 71}));  // step * 10 + slot
    EXPECT_EQ(waits, (std::vector<std::uint32_t>{2, 4, 6, 7}));  // the next step; the last in the epilogue
    for (index_t i = 0; i < 256; ++i)
        for (index_t j = 0; j < 256; ++j) {
            float s = 0;
            for (index_t k = 0; k < 256; ++k) s += x(i, k) * y(k, j);
            ASSERT_EQ(z(i, j), s) << i << "," << j;
        }
}

// A3 exactly: grid (8,), block indices 0,0,0,0,1,1,1,1, bc = 2: block 1 fetched at step 0 with
// lookahead and at step 3 without, waited at step 4 in both; the body sees slot 0 then slot 1.
TEST(EmitPipeline, A3LookaheadVsStandard) {
    using Y = Array<float, 16, 128>;
    using Call = pallas_call<Grid<>, In<Arg<Y, AnyFull>>, Out<Arg<Array<float, 64, 128>, AnyFull>>, Chip<tpu::v5e>>;
    host_array<Y> y;
    std::iota(y.begin(), y.end(), 0.0f);
    auto run = [&]<bool L>(std::bool_constant<L>, std::vector<event>& t) {
        using In4 = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i / 4, 0); }, Buffered<2, L>>;
        return Call{}(
            [&](auto yh, auto oh) {
                emit_pipeline([](auto a, auto o) { store(o, load(a)); }, {8}, in_specs<In4>, out_specs<Rows>,
                              {.trace = &t})(yh, oh);
            },
            y);
    };
    for (const bool look : {true, false}) {
        std::vector<event> t;
        auto [o, rep] = look ? run(std::true_type{}, t) : run(std::false_type{}, t);
        std::vector<std::uint32_t> fetch, wait_steps, slots;
        for (const event& e : t) {
            if (e.kind == event_kind::fetch && e.op == 0) fetch.push_back(e.step);
            if (e.kind == event_kind::wait_in && e.op == 0) wait_steps.push_back(e.step), slots.push_back(e.slot);
        }
        EXPECT_EQ(fetch, (std::vector<std::uint32_t>{0, look ? 0u : 3u})) << look;
        EXPECT_EQ(wait_steps, (std::vector<std::uint32_t>{0, 4})) << look;
        EXPECT_EQ(slots, (std::vector<std::uint32_t>{0, 1})) << look;
        for (index_t r = 0; r < 64; ++r)
            for (index_t cc = 0; cc < 128; ++cc) ASSERT_EQ(o(r, cc), y((r / 8) / 4 * 8 + r % 8, cc));
    }
}

// A4: the block gather with indices in SMEM; bc 2 and 4, lookahead on and off; one input DMA
// per run of equal consecutive indices.
TEST(EmitPipeline, A4BlockGather) {
    using Xg = Array<std::int32_t, 1024, 128>;
    using Idx = Array<std::int32_t, 10>;
    using Og = Array<std::int32_t, 1280, 128>;
    using Call = pallas_call<Grid<>, In<Arg<Xg, AnyFull>, Arg<Idx, AnyFull>>, Out<Arg<Og, AnyFull>>,
                             Scratch<smem, std::int32_t, 10>, Chip<tpu::v5e>>;
    host_array<Xg> x;
    std::iota(x.begin(), x.end(), 0);
    using OutRows = BlockSpec<Block<128, 128>, [](index_t i, const auto&) { return idx(i, 0); }>;
    const std::vector<std::vector<std::int32_t>> seqs = {
        {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {0, 0, 2, 3, 3, 3, 1, 7, 6, 6}, {3, 3, 3, 3, 3, 3, 3, 7, 6, 6}, {0, 1, 2, 3, 4, 5, 0, 1, 2, 3}};
    auto gather = [&]<int B, bool L>(std::integral_constant<int, B>, std::bool_constant<L>, const host_array<Idx>& ix) {
        using G4 = BlockSpec<Block<128, 128>, [](index_t i, const auto& s) { return idx(s(i), 0); }, Buffered<B, L>>;
        return Call{}(
            [](auto xh, auto ih, auto oh, auto is) {
                sync_copy(ih, is);
                emit_pipeline([](auto a, auto o) { store(o, load(a)); }, {10}, in_specs<G4>, out_specs<OutRows>, {}, is)(xh, oh);
            },
            x, ix);
    };
    for (const auto& s : seqs) {
        host_array<Idx> ix;
        std::copy(s.begin(), s.end(), ix.begin());
        index_t runs = 1;
        for (std::size_t k = 1; k < s.size(); ++k) runs += s[k] != s[k - 1];
        auto check = [&](const auto& res) {
            const auto& [o, rep] = res;
            for (index_t i = 0; i < 10; ++i)
                for (index_t r = 0; r < 128; ++r)
                    ASSERT_EQ(o(i * 128 + r, 5), x(s[static_cast<std::size_t>(i)] * 128 + r, 5));
            EXPECT_EQ(rep.stats.inner_dmas, runs + 10);  // the gathers, then the 10 write-backs
        };
        check(gather(std::integral_constant<int, 2>{}, std::false_type{}, ix));
        check(gather(std::integral_constant<int, 2>{}, std::true_type{}, ix));
        check(gather(std::integral_constant<int, 4>{}, std::false_type{}, ix));
        check(gather(std::integral_constant<int, 4>{}, std::true_type{}, ix));
    }
}

// A10: BoundedSlice blocks chosen at run time from SMEM; a non-ds map on a bounded dim is 4.
TEST(EmitPipeline, A10BoundedSliceDynamic) {
    using Xb = Array<std::int32_t, 16, 8, 128>;
    using Sl = Array<std::int32_t, 4, 2>;
    using Call = pallas_call<Grid<>, In<Arg<Xb, AnyFull>, Arg<Sl, AnyFull>>, Out<Arg<Xb, AnyFull>>,
                             Scratch<smem, std::int32_t, 4, 2>, Chip<tpu::v5e>>;
    host_array<Xb> x;
    std::iota(x.begin(), x.end(), 0);
    host_array<Sl> sl;
    const std::int32_t v[] = {11, 16, 8, 11, 3, 8, 0, 3};
    std::copy(v, v + 8, sl.begin());
    using Bs = BlockSpec<Block<bounded_slice{16}, 8, 128>,
                         [](index_t i, const auto& s) { return idx(ds(s(i, 0), s(i, 1) - s(i, 0)), 0, 0); }>;
    auto [o, rep] = Call{}(
        [](auto xh, auto sh, auto oh, auto ss) {
            sync_copy(sh, ss);
            emit_pipeline([](auto a, auto w) { store(w, load(a)); }, {4}, in_specs<Bs>, out_specs<Bs>, {}, ss)(xh, oh);
        },
        x, sl);
    EXPECT_TRUE(std::ranges::equal(o, x));
    EXPECT_EQ(rep.stats.inner_bytes, 2 * 16 * 8 * 128 * 4);
    // A map declared to return a plain index_tuple carries no slice mask: check 4 at run time (with
    // idx(0, 0, 0)'s own type it is a compile error, tests/compile_fail/emit_pipeline_rules.cpp ko 12).
    using NotDs = BlockSpec<Block<bounded_slice{16}, 8, 128>,
                            [](index_t, const auto&) -> index_tuple<3> { return idx(0, 0, 0); }>;
    try {
        (void)Call{}(
            [](auto xh, auto sh, auto oh, auto ss) {
                sync_copy(sh, ss);
                emit_pipeline([](auto a, auto w) { store(w, load(a)); }, {4}, in_specs<NotDs>, out_specs<Bs>, {}, ss)(xh, oh);
            },
            x, sl);
        FAIL() << "no error";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "4") << e.what();
    }
}

// The predicate behind that compile error (checks 4, 5 from idx(...)'s slice mask): the first dim
// whose entry kind disagrees with its block dim, or -1; -1 too for a map without a mask.
using SliceThenRow = Block<bounded_slice{16}, 8, 128>;
template <auto Map>
constexpr int mismatch = detail::kind_mismatch<BlockSpec<SliceThenRow, Map>, 1, void>(3);
static_assert(mismatch<[](index_t i) { return idx(ds(i, 4), 0, 0); }> == -1);
static_assert(mismatch<[](index_t i) { return idx(i, 0, 0); }> == 0);
static_assert(mismatch<[](index_t i) { return idx(ds(i, 4), 0, ds(0, 128)); }> == 2);
static_assert(mismatch<[](index_t i) -> index_tuple<3> { return idx(i, 0, 0); }> == -1);
static_assert(decltype(idx(1, ds(2, 3), ds(c<8>)))::slice_mask == 0b110);

// Static inner specs give a constexpr schedule, as pallas_call's: A1 and S30 at compile time.
using A1Schedule = emit_pipeline_schedule<Grid<4>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>>;
static_assert(A1Schedule::dma_count() == 8);
static_assert(A1Schedule::count(event_kind::fetch) == 4 && A1Schedule::count(event_kind::wait_out) == 4);
static_assert(A1Schedule::events[0].kind == event_kind::fetch && A1Schedule::events[1].kind == event_kind::step);
using Deep = emit_pipeline_schedule<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }, Buffered<3>>>>,
                                    Out<Arg<X, Rows>>>;
static_assert(Deep::info.ops[0].buffers == 3);  // pallas_call would reject it (19)
static_assert(Deep::events[1].kind == event_kind::fetch && Deep::events[1].slot == 1);  // two ahead (S30)

TEST(EmitPipeline, StaticScheduleEqualsTheRunTimeTrace) {
    const host_array<X> x = ramp();
    std::vector<event> trace;
    (void)Outer{}(
        [&](auto x_hbm, auto o_hbm) {
            emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>, out_specs<Rows>,
                          {.trace = &trace})(x_hbm, o_hbm);
        },
        x);
    ASSERT_EQ(trace.size(), A1Schedule::events.size());
    for (std::size_t k = 0; k < trace.size(); ++k) {
        EXPECT_EQ(trace[k].kind, A1Schedule::events[k].kind) << k;
        EXPECT_EQ(trace[k].slot, A1Schedule::events[k].slot) << k;
        EXPECT_EQ(trace[k].block_step, A1Schedule::events[k].block_step) << k;
    }
}

// The valid extent of a BoundedSlice window (its static bound stays 8 rows) and poisoned inner
// windows (interpret mode's uninitialized memory, run_options::poison_buffers).
TEST(EmitPipeline, ValidExtentAndPoison) {
    using Xs = Array<float, 8, 128>;
    using T4 = Array<std::int32_t, 4>;
    using Call = pallas_call<Grid<>, In<Arg<Xs, AnyFull>, Arg<T4, AnyFull>, Arg<T4, AnyFull>>, Out<Arg<Xs, AnyFull>>,
                             Scratch<smem, std::int32_t, 4>, Scratch<smem, std::int32_t, 4>, Chip<tpu::v5e>>;
    using Sl = BlockSpec<Block<bounded_slice{8}, 128>,
                         [](index_t i, const auto& st, const auto& sz) { return idx(ds(st(i), sz(i)), 0); }>;
    host_array<Xs> x;
    std::iota(x.begin(), x.end(), 0.0f);
    host_array<T4> st, sz;
    const std::int32_t a[] = {0, 2, 3, 5}, b[] = {2, 1, 2, 3};
    std::copy(a, a + 4, st.begin());
    std::copy(b, b + 4, sz.begin());
    std::vector<index_t> valid;
    bool poisoned = false;
    Call call;
    call.options.poison_buffers = true;
    auto [o, rep] = call(
        [&](auto xh, auto sh, auto zh, auto oh, auto ss, auto zs) {
            sync_copy(sh, ss);
            sync_copy(zh, zs);
            emit_pipeline(
                [&](auto in, auto out) {
                    valid.push_back(valid_extent(0, 0));
                    // Rows past the slice were never written: poison (NaN) in a fresh window.
                    if (pipeline_index(0) == 0) poisoned = std::isnan(sload(in, 7, 0));
                    store(out, load(in));
                },
                {4}, in_specs<Sl>, out_specs<Sl>, {}, ss, zs)(xh, oh);
        },
        x, st, sz);
    EXPECT_TRUE(std::ranges::equal(o, x));
    EXPECT_EQ(valid, (std::vector<index_t>{2, 1, 2, 3}));
    EXPECT_TRUE(poisoned);
}

// The timeline labels an inner pipeline's DMAs by pipeline.
TEST(EmitPipeline, TimelineNamesThePipeline) {
    const host_array<X> x = ramp();
    Outer call;
    call.options.timeline = true;
    auto [o, rep] = call(
        [](auto x_hbm, auto o_hbm) {
            emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>, out_specs<Rows>)(x_hbm, o_hbm);
        },
        x);
    const std::string trace = to_chrome_trace(rep);
    EXPECT_NE(trace.find("pipeline 1 op0 fetch (1, 0) slot 1"), std::string::npos);
    EXPECT_NE(trace.find("pipeline 1 op1 write (3, 0) slot 1"), std::string::npos);
}

// S54, no_pipelining: every step copies every input block in and every output block out,
// blocking, in slot 0; the accumulating matmul still gives x @ y (A2).
TEST(EmitPipeline, NoPipelining) {
    using A = Array<float, 256, 256>;
    using Mm = pallas_call<Grid<>, In<Arg<A, AnyFull>, Arg<A, AnyFull>>, Out<Arg<A, AnyFull>>,
                           Scratch<vmem, float, 128, 128>, Chip<tpu::v5e>>;
    host_array<A> x, y;
    for (index_t i = 0; i < 256; ++i)
        for (index_t j = 0; j < 256; ++j) x(i, j) = static_cast<float>((i + j) % 5 - 2), y(i, j) = static_cast<float>((i * j) % 3 - 1);
    using XS = BlockSpec<Block<128, 128>, [](index_t i, index_t, index_t k) { return idx(i, k); }>;
    using YS = BlockSpec<Block<128, 128>, [](index_t, index_t j, index_t k) { return idx(k, j); }>;
    using OS = BlockSpec<Block<128, 128>, [](index_t i, index_t j, index_t) { return idx(i, j); }>;
    std::vector<event> t;
    auto [z, rep] = Mm{}(
        [&](auto xh, auto yh, auto zh, auto acc) {
            emit_pipeline(
                [&](auto a, auto b, auto o) {
                    if (pipeline_index(2) == 0) store(acc, zeros<float>(c<128>, c<128>));
                    store(acc, load(acc) + dot(load(a), load(b)));
                    store(o, load(acc));  // every step: the output goes out every step (S54)
                },
                {2, 2, 2}, in_specs<XS, YS>, out_specs<OS>, {.trace = &t, .no_pipelining = true})(xh, yh, zh);
        },
        x, y);
    index_t ins = 0, outs = 0, other = 0;
    for (const event& e : t) {
        ins += e.kind == event_kind::sync_in;
        outs += e.kind == event_kind::sync_out;
        other += e.kind == event_kind::fetch || e.kind == event_kind::write || e.kind == event_kind::wait_in;
        if (e.kind == event_kind::sync_in || e.kind == event_kind::sync_out) {
            EXPECT_EQ(e.slot, 0);
        }
    }
    EXPECT_EQ(ins, 16);   // both inputs, all 8 steps, even unchanged blocks
    EXPECT_EQ(outs, 8);
    EXPECT_EQ(other, 0);
    EXPECT_EQ(rep.stats.inner_dmas, 24);
    for (index_t i = 0; i < 256; ++i)
        for (index_t j = 0; j < 256; ++j) {
            float s = 0;
            for (index_t k = 0; k < 256; ++k) s += x(i, k) * y(k, j);
            ASSERT_EQ(z(i, j), s) << i << "," << j;
        }
}

// A9: mixed block dims over a source already in VMEM. The spec's space is the source's, so
// nothing is copied (S17, S56): the body's refs are views of the source's blocks, rebound every
// step; o = 2x + 1 exactly, with and without no_pipelining, and no inner DMA or copy event.
TEST(EmitPipeline, A9VmemSourceAliased) {
    using X3 = Array<std::int32_t, 2, 16, 512>;
    using Call = pallas_call<Grid<>, In<Arg<X3, BlockSpec<Full>>>, Out<Arg<X3, BlockSpec<Full>>>, Chip<tpu::v5e>>;
    host_array<X3> x;
    std::iota(x.begin(), x.end(), 0);
    using InS = BlockSpec<Block<squeezed, blocked{8}, 256>, [](index_t i, index_t j, index_t k) { return idx(i, j, k); }>;
    using OutS =
        BlockSpec<Block<squeezed, element{8}, 256>, [](index_t i, index_t j, index_t k) { return idx(i, 8 * j, k); }>;
    for (const bool no_pipe : {false, true}) {
        std::vector<event> t;
        std::vector<std::ptrdiff_t> offsets;
        auto [o, rep] = Call{}(
            [&](auto xv, auto ov) {
                emit_pipeline(
                    [&](auto a, auto w) {
                        offsets.push_back(a.data() - xv.data());
                        store(w, load(a) * 2 + 1);
                    },
                    {2, 2, 2}, in_specs<InS>, out_specs<OutS>, {.trace = &t, .no_pipelining = no_pipe})(xv, ov);
            },
            x);
        for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], 2 * x.vector()[k] + 1) << k << " " << no_pipe;
        EXPECT_EQ(rep.stats.inner_steps, 8);
        EXPECT_EQ(rep.stats.inner_dmas, 0);  // aliased: no copy at all
        EXPECT_EQ(rep.stats.inner_bytes, 0);
        EXPECT_EQ(rep.stats.dma_in + rep.stats.dma_out, 2);  // the outer call's own whole-array windows
        std::size_t steps = 0, bodies = 0;
        for (const event& e : t) {
            steps += e.kind == event_kind::step;
            bodies += e.kind == event_kind::body;
        }
        EXPECT_EQ(steps, 8u);
        EXPECT_EQ(bodies, 8u);
        EXPECT_EQ(t.size(), 16u);  // nothing but steps and bodies
        // The views start at the blocks: (i, 8j, 256k) of a (2, 16, 512) array.
        const std::vector<std::ptrdiff_t> want = {0, 256, 8 * 512, 8 * 512 + 256, 16 * 512, 16 * 512 + 256,
                                                  24 * 512, 24 * 512 + 256};
        EXPECT_EQ(offsets, want);
    }
    // An HBM spec over an ANY source aliases too: the body gets the block's HBM view, to copy.
    using Hb = BlockSpec<Block<squeezed, 16, 512>, [](index_t i) { return idx(i, 0, 0); }, hbm>;
    using Call2 = pallas_call<Grid<>, In<Arg<X3, AnyFull>>, Out<Arg<X3, AnyFull>>, Scratch<vmem, std::int32_t, 16, 512>,
                              Chip<tpu::v5e>>;
    auto [o2, rep2] = Call2{}(
        [](auto xh, auto oh, auto buf) {
            emit_pipeline(
                [&](auto a, auto w) {
                    sync_copy(a, buf);
                    store(buf, load(buf) + 1);
                    sync_copy(buf, w);
                },
                {2}, in_specs<Hb>, out_specs<Hb>)(xh, oh);
        },
        x);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o2.vector()[k], x.vector()[k] + 1) << k;
    EXPECT_EQ(rep2.stats.inner_dmas, 0);  // the pipeline copies nothing: the body's 4 copies are its own
    EXPECT_EQ(rep2.stats.body_dmas, 4);
    // Blocks that do not divide an aliased source: the last view would reach past it (S34).
    using Ragged = BlockSpec<Block<squeezed, 16, 384>, [](index_t i, index_t k) { return idx(i, 0, k); }>;
    try {
        (void)Call{}(
            [](auto xv, auto ov) {
                emit_pipeline([](auto a, auto w) { store(w, load(a)); }, {2, 2}, in_specs<Ragged>, out_specs<Ragged>)(xv, ov);
            },
            x);
        FAIL() << "no error";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "S34") << e.what();
        EXPECT_NE(std::string(e.what()).find("emit_pipeline input 0"), std::string::npos) << e.what();
    }
}

// S56 in the static form: input 0's source is stated as already in VMEM (Source<vmem, X>, as
// the run-time pipeline reads it from the ref's type), so its vmem spec aliases it: no window,
// no fetch, no wait, no VMEM; input 1 (an ANY source) and the output are copied as in A1.
namespace {
using MixedSchedule =
    emit_pipeline_schedule<Grid<4>, In<Arg<Source<vmem, X>, Rows>, Arg<X, Rows>>, Out<Arg<X, Rows>>>;
constexpr event ev(event_kind k, int op, int slot, int step, int block) {
    return event{k, 0, static_cast<std::uint8_t>(op), static_cast<std::uint8_t>(slot),
                 static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(block), 0};
}
using K = event_kind;
// A1's schedule for input 1 and the output, and op 0's steps and bodies only.
constexpr std::array<event, 24> mixed_events{
    ev(K::fetch, 1, 0, 0, 0),    ev(K::step, 0, 0, 0, 0),     ev(K::fetch, 1, 1, 0, 1),    ev(K::wait_in, 1, 0, 0, 0),
    ev(K::body, 0, 0, 0, 0),     ev(K::write, 2, 0, 0, 0),    ev(K::step, 0, 0, 1, 1),     ev(K::fetch, 1, 0, 1, 2),
    ev(K::wait_in, 1, 1, 1, 1),  ev(K::body, 0, 0, 1, 1),     ev(K::write, 2, 1, 1, 1),    ev(K::wait_out, 2, 0, 1, 0),
    ev(K::step, 0, 0, 2, 2),     ev(K::fetch, 1, 1, 2, 3),    ev(K::wait_in, 1, 0, 2, 2),  ev(K::body, 0, 0, 2, 2),
    ev(K::write, 2, 0, 2, 2),    ev(K::wait_out, 2, 1, 2, 1), ev(K::step, 0, 0, 3, 3),     ev(K::wait_in, 1, 1, 3, 3),
    ev(K::body, 0, 0, 3, 3),     ev(K::write, 2, 1, 3, 3),    ev(K::wait_out, 2, 0, 3, 2), ev(K::wait_out, 2, 1, 3, 3)};
static_assert(MixedSchedule::events == mixed_events);
static_assert(MixedSchedule::dma_count(0) == 0 && MixedSchedule::dma_count(1) == 4 && MixedSchedule::dma_count() == 8);
static_assert(!MixedSchedule::info.ops[0].windowed && MixedSchedule::info.ops[1].windowed);
static_assert(MixedSchedule::allocation_bytes() == 4 * 8 * 128 * 4);  // input 1's and the output's 2 + 2 slots
// An ANY source (the default) under the same spec is copied: the schedule before S56 applied.
static_assert(emit_pipeline_schedule<Grid<4>, In<Arg<X, Rows>, Arg<X, Rows>>, Out<Arg<X, Rows>>>::dma_count(0) == 4);
// An hbm spec over an ANY source aliases it too; SMEM over SMEM as well.
static_assert(emit_pipeline_schedule<Grid<4>, In<Arg<X, BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, hbm>>>,
                                     Out<Arg<X, Rows>>>::dma_count(0) == 0);
static_assert(emit_pipeline_schedule<Grid<4>, In<Arg<Source<smem, X>, BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, smem>>>,
                                     Out<Arg<X, Rows>>>::dma_count(0) == 0);
}  // namespace

TEST(EmitPipeline, StaticScheduleOfAnAliasedSpecEqualsTheRunTimeTrace) {
    using Call = pallas_call<Grid<>, In<Arg<X, BlockSpec<Full>>, Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>;
    const host_array<X> x = ramp();
    host_array<X> y;
    std::fill(y.begin(), y.end(), 0.5f);
    std::vector<event> trace;
    auto [o, rep] = Call{}(
        [&](auto xv, auto yh, auto oh) {
            emit_pipeline([](auto a, auto b, auto w) { store(w, load(a) + load(b)); }, {4}, in_specs<Rows, Rows>,
                          out_specs<Rows>, {.trace = &trace})(xv, yh, oh);
        },
        x, y);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], x.vector()[k] + 0.5f) << k;
    ASSERT_EQ(trace.size(), MixedSchedule::events.size());
    for (std::size_t k = 0; k < trace.size(); ++k) {
        EXPECT_EQ(trace[k].kind, MixedSchedule::events[k].kind) << k;
        EXPECT_EQ(trace[k].op, MixedSchedule::events[k].op) << k;
        EXPECT_EQ(trace[k].slot, MixedSchedule::events[k].slot) << k;
        EXPECT_EQ(trace[k].step, MixedSchedule::events[k].step) << k;
        EXPECT_EQ(trace[k].block_step, MixedSchedule::events[k].block_step) << k;
    }
    EXPECT_EQ(rep.stats.inner_dmas, MixedSchedule::dma_count());
}

// S53 and S55: emit_pipeline_with_allocations lays the windows out once in a VMEM scratch of the
// enclosing kernel; every invocation reuses them, so the caller may fill the first slot of a
// prefetched input (Buffered<2, false, 1>) before invoking: the prologue skips that fetch and
// step 0 its wait. The scratch is the windows' VMEM, counted once (the high-water equals the
// same pipeline's without allocations).
namespace {
using Z = Array<float, 64, 128>;
using PfRows = BlockSpec<Block<8, 128>, [](index_t j) { return idx(4 * program_id(0) + j, 0); }, Buffered<2, false, 1>>;
using OutRows = BlockSpec<Block<8, 128>, [](index_t j) { return idx(4 * program_id(0) + j, 0); }>;
// The same shapes with static maps, for the bytes the allocations take.
using AllocSched = emit_pipeline_schedule<Grid<4>, In<Arg<Z, BlockSpec<Block<8, 128>, [](index_t j) { return idx(j, 0); }>>>,
                                          Out<Arg<Z, BlockSpec<Block<8, 128>, [](index_t j) { return idx(j, 0); }>>>>;
static_assert(AllocSched::allocation_bytes() == 4 * 8 * 128 * 4);  // 2 + 2 slots of (8, 128) f32
}  // namespace

TEST(EmitPipeline, AllocationsAndPrefetchedCount) {
    host_array<Z> x;
    std::iota(x.begin(), x.end(), 0.0f);
    using WithAlloc = pallas_call<Grid<2>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>,
                                  Scratch<vmem, std::uint8_t, AllocSched::allocation_bytes()>, Chip<tpu::v5e>>;
    std::vector<event> t;
    auto body = [](auto in, auto out) { store(out, load(in) + 1.0f); };
    auto [o, rep] = WithAlloc{}(
        [&](auto xh, auto oh, auto buf) {
            auto [pipe, make_allocations] =
                emit_pipeline_with_allocations(body, {4}, in_specs<PfRows>, out_specs<OutRows>, {.trace = &t});
            auto allocs = make_allocations(buf, xh, oh);
            // S55: the caller fills slot 0 with this invocation's first block.
            sync_copy(xh.at(ds(32 * program_id(0), c<8>), ds(0, c<128>)), allocs.template window<0>(0));
            pipe(xh, oh, allocs);
        },
        x);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], x.vector()[k] + 1.0f) << k;
    std::vector<std::uint32_t> fetched, waited;
    for (const event& e : t) {
        if (e.kind == event_kind::fetch) fetched.push_back(e.block_step);
        if (e.kind == event_kind::wait_in) waited.push_back(e.step);
    }
    // Each of the two invocations fetches blocks 1, 2, 3 (not 0) and waits at steps 1, 2, 3.
    EXPECT_EQ(fetched, (std::vector<std::uint32_t>{1, 2, 3, 1, 2, 3}));
    EXPECT_EQ(waited, (std::vector<std::uint32_t>{1, 2, 3, 1, 2, 3}));
    EXPECT_EQ(rep.stats.inner_dmas, 2 * (3 + 4));
    EXPECT_EQ(rep.stats.body_dmas, 2);  // the caller's prefetches
    // Two of three slots prefilled (Buffered<3, false, 2>): blocks 0 and 1 are the caller's, the
    // pipeline fetches 2 and 3 and waits from step 2 on; step 1's body reads slot 1 although no
    // wait names it.
    {
        using Pf3 = BlockSpec<Block<8, 128>, [](index_t j) { return idx(j, 0); }, Buffered<3, false, 2>>;
        using Rows8 = BlockSpec<Block<8, 128>, [](index_t j) { return idx(j, 0); }>;
        using Call3 = pallas_call<Grid<>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>,
                                  Scratch<vmem, std::uint8_t, 5 * 4096>, Chip<tpu::v5e>>;
        const host_array<X> r = ramp();
        std::vector<event> t3;
        auto [o3, rep3] = Call3{}(
            [&](auto xh, auto oh, auto buf) {
                auto [pipe, make_allocations] =
                    emit_pipeline_with_allocations(body, {4}, in_specs<Pf3>, out_specs<Rows8>, {.trace = &t3});
                auto allocs = make_allocations(buf, xh, oh);
                sync_copy(xh.at(ds(0, c<8>), ds(0, c<128>)), allocs.template window<0>(0));
                sync_copy(xh.at(ds(8, c<8>), ds(0, c<128>)), allocs.template window<0>(1));
                pipe(xh, oh, allocs);
            },
            r);
        for (std::size_t k = 0; k < r.size(); ++k) ASSERT_EQ(o3.vector()[k], r.vector()[k] + 1.0f) << k;
        std::vector<std::uint32_t> f3, w3;
        for (const event& e : t3) {
            if (e.kind == event_kind::fetch) f3.push_back(e.block_step);
            if (e.kind == event_kind::wait_in) w3.push_back(e.step);
        }
        EXPECT_EQ(f3, (std::vector<std::uint32_t>{2, 3}));
        EXPECT_EQ(w3, (std::vector<std::uint32_t>{2, 3}));
        // With lookahead (Buffered<2, true, 1>) over blocks 0, 0, 1, 1: the caller's block 0 in
        // slot 0, the step-0 fill fetches block 1 (the next distinct one, step 2's) into slot 1.
        using PfLook = BlockSpec<Block<8, 128>, [](index_t j) { return idx(j / 2, 0); }, Buffered<2, true, 1>>;
        std::vector<event> t4;
        auto [o4, rep4] = Call3{}(
            [&](auto xh, auto oh, auto buf) {
                auto [pipe, make_allocations] =
                    emit_pipeline_with_allocations(body, {4}, in_specs<PfLook>, out_specs<Rows8>, {.trace = &t4});
                auto allocs = make_allocations(buf, xh, oh);
                sync_copy(xh.at(ds(0, c<8>), ds(0, c<128>)), allocs.template window<0>(0));
                pipe(xh, oh, allocs);
            },
            r);
        for (index_t row = 0; row < 32; ++row)
            for (index_t col = 0; col < 128; ++col) ASSERT_EQ(o4(row, col), r((row / 8) / 2 * 8 + row % 8, col) + 1.0f);
        std::vector<std::uint32_t> f4, w4;
        for (const event& e : t4) {
            if (e.kind == event_kind::fetch) f4.push_back(e.step * 10 + e.block_step);
            if (e.kind == event_kind::wait_in) w4.push_back(e.step);
        }
        EXPECT_EQ(f4, (std::vector<std::uint32_t>{2}));  // issued at step 0, block of step 2
        EXPECT_EQ(w4, (std::vector<std::uint32_t>{2}));
    }
    // Without allocations (and without the prefetch) the windows take the same VMEM, per
    // invocation; with them the scratch is that VMEM, not counted again.
    using Plain = pallas_call<Grid<2>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>, Chip<tpu::v5e>>;
    auto [p, prep] = Plain{}(
        [&](auto xh, auto oh) { emit_pipeline(body, {4}, in_specs<OutRows>, out_specs<OutRows>)(xh, oh); }, x);
    EXPECT_TRUE(std::ranges::equal(o, p));
    EXPECT_EQ(rep.core[0].vmem_high_water, AllocSched::allocation_bytes());
    EXPECT_EQ(prep.core[0].vmem_high_water, AllocSched::allocation_bytes());

    // The windows persist across invocations: what an invocation's body leaves in its input slot
    // is there for the next (a fresh pipeline would hand out garbage).
    using One = BlockSpec<Full, zero_map, Buffered<1, false, 1>>;  // trivially windowed: k >= 1 skips its sync copy
    using Small = Array<float, 8, 128>;
    using Persist = pallas_call<Grid<3>, In<Arg<Small, AnyFull>>, Out<Arg<Small, AnyFull>>,
                                Scratch<vmem, std::uint8_t, 8192>, Chip<tpu::v5e>>;
    host_array<Small> s;
    std::fill(s.begin(), s.end(), 5.0f);
    std::vector<event> t2;
    auto [q, qrep] = Persist{}(
        [&](auto xh, auto oh, auto buf) {
            auto [pipe, make_allocations] = emit_pipeline_with_allocations(
                [](auto acc, auto out) {
                    store(acc, load(acc) + 1.0f);  // the window accumulates across invocations
                    store(out, load(acc));
                },
                {1}, in_specs<One>, out_specs<BlockSpec<Full>>, {.trace = &t2});
            auto allocs = make_allocations(buf, xh, oh);
            if (program_id(0) == 0) sync_copy(xh, allocs.template window<0>(0));
            pipe(xh, oh, allocs);
        },
        s);
    for (float v : q) ASSERT_EQ(v, 8.0f);  // 5 + 1 + 1 + 1
    for (const event& e : t2) EXPECT_NE(e.kind, event_kind::sync_in);
}

// Check 28 (S55): prefetched_count must stay below the buffer count, applies to inputs only;
// 24: a scratch smaller than the windows.
TEST(EmitPipeline, PrefetchedCountRules) {
    const host_array<X> x = ramp();
    using Call = pallas_call<Grid<>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Scratch<vmem, std::uint8_t, 16384>,
                             Chip<tpu::v5e>>;
    auto rule_of = [&]<class In, class Out>(std::type_identity<In>, std::type_identity<Out>) {
        try {
            (void)Call{}(
                [](auto xh, auto oh, auto buf) {
                    auto [pipe, make] = emit_pipeline_with_allocations([](auto a, auto w) { store(w, load(a)); }, {4},
                                                                       in_specs<In>, out_specs<Out>);
                    pipe(xh, oh, make(buf, xh, oh));
                },
                x);
        } catch (const error& e) {
            return e.rule();
        }
        return std::string("none");
    };
    using Pf2 = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<2, false, 2>>;
    using OutPf = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<2, false, 1>>;
    using Big = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }, Buffered<5>>;  // 5*4 KiB + 2*4 KiB
    EXPECT_EQ(rule_of(std::type_identity<Pf2>{}, std::type_identity<Rows>{}), "28");
    EXPECT_EQ(rule_of(std::type_identity<Rows>{}, std::type_identity<OutPf>{}), "28");
    EXPECT_EQ(rule_of(std::type_identity<Big>{}, std::type_identity<Rows>{}), "24");
    EXPECT_EQ(rule_of(std::type_identity<Rows>{}, std::type_identity<Rows>{}), "none");
}

// S35, check 31: with the tiling option, a block that does not divide its array dim is DMA'd
// rounded up to the dim's tile on the last block: (601, 128) f32 in 256-row blocks moves rows
// [512, 608) last (96 rows, not 89); the data is exact. Without tiling the last copy is 89 rows.
// A block that is not a multiple of the tile cannot round (31).
TEST(EmitPipeline, TilingRoundsTheLastBlock) {
    using Odd = Array<float, 601, 128>;
    using Call = pallas_call<Grid<>, In<Arg<Odd, AnyFull>>, Out<Arg<Odd, AnyFull>>, Chip<tpu::v5e>>;
    host_array<Odd> x;
    std::iota(x.begin(), x.end(), 0.0f);
    using B256 = BlockSpec<Block<256, 128>, [](index_t i) { return idx(i, 0); }>;
    for (const bool tiled : {true, false}) {
        auto [o, rep] = Call{}(
            [&](auto xh, auto oh) {
                emit_pipeline([](auto a, auto w) { store(w, load(a) * 3.0f); }, {3}, in_specs<B256>, out_specs<B256>,
                              {.tiling = tiled})(xh, oh);
            },
            x);
        for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], 3.0f * x.vector()[k]) << k;
        const index_t rows = tiled ? 256 + 256 + 96 : 601;
        EXPECT_EQ(rep.stats.inner_bytes, 2 * rows * 128 * 4) << tiled;  // in and out
        // The query gives each DMA's slice: their bytes are what the run moved.
        using S = emit_pipeline_schedule<Grid<3>, In<Arg<Odd, B256>>, Out<Arg<Odd, B256>>>;
        index_t bytes = 0;
        for (int op = 0; op < 2; ++op)
            for (index_t i = 0; i < 3; ++i) bytes += S::slice_of(op, {i}, tiled).bytes;
        EXPECT_EQ(bytes, rep.stats.inner_bytes) << tiled;
    }
    // The last block's slice, a constant: rows [512, 608) with tiling, 89 of them inside the
    // array; [512, 601) without. A whole block is its own slice either way.
    using S = emit_pipeline_schedule<Grid<3>, In<Arg<Odd, B256>>, Out<Arg<Odd, B256>>>;
    constexpr dma_slice last = S::slice_of(0, {2}, true);
    static_assert(last.rank == 2 && last.start[0] == 512 && last.size[0] == 96 && last.inside[0] == 89);
    static_assert(last.start[1] == 0 && last.size[1] == 128 && last.inside[1] == 128 && last.bytes == 96 * 128 * 4);
    constexpr dma_slice plain = S::slice_of(1, {2}, false);
    static_assert(plain.start[0] == 512 && plain.size[0] == 89 && plain.inside[0] == 89 && plain.bytes == 89 * 128 * 4);
    static_assert(S::slice_of(0, {1}, true) == S::slice_of(0, {1}, false) && S::slice_of(0, {1}, true).start[0] == 256 &&
                  S::slice_of(0, {1}, true).size[0] == 256);
    EXPECT_THROW((void)S::slice_of(2, {0}, true), error);     // no operand 2
    EXPECT_THROW((void)S::slice_of(0, {0, 0}, true), error);  // a grid of rank 1
    // dma_slice_of on a description: the pipeline's own tiling flag decides.
    pipeline_desc p = S::desc;
    p.tiling = true;
    EXPECT_EQ(dma_slice_of(p, 0, idx(2, 0), tpu::v5e.generation), last);
    p.tiling = false;
    EXPECT_EQ(dma_slice_of(p, 0, idx(2, 0), tpu::v5e.generation).size[0], 89);
    using B12 = BlockSpec<Block<12, 128>, [](index_t i) { return idx(i, 0); }>;
    try {
        (void)Call{}(
            [](auto xh, auto oh) {
                emit_pipeline([](auto a, auto w) { store(w, load(a)); }, {51}, in_specs<B12>, out_specs<B12>,
                              {.tiling = true})(xh, oh);
            },
            x);
        FAIL() << "no error";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "31") << e.what();
    }
}

// A13, race detection (run_options::detect_races) of the pipeline's own DMAs: a body touching a
// window slot while the pipeline's fetch into it, or its copy out of it, is in flight (DMA2); a
// pipeline fetch starting on a slot an async copy still reads (DMA3); two cores writing one
// HBM region with nothing ordering them (MC2), through a core_axis pipeline or the bodies' own
// copies; and none of them for the correct versions (run with detect_races on by default:
// PTPU_DETECT_RACES_DEFAULT=1 builds this file so every test above checks for false reports).
TEST(EmitPipeline, A13RaceDetection) {
    const host_array<X> x = ramp();
    using Call = pallas_call<Grid<>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Scratch<vmem, std::uint8_t, 16384>,
                             Scratch<vmem, float, 8, 128>, Scratch<semaphore, dma_semaphore, 1>, Chip<tpu::v5e>>;
    // The body reaches other slots through the allocations (a ref kept from another step would
    // do the same): slot k of operand op as a (8, 128) VMEM ref.
    const detail::allocations_base* pipe_allocs = nullptr;
    auto slot = [&](int op, int k) {
        return ref<float, vmem, 2>(reinterpret_cast<float*>(pipe_allocs->slots[static_cast<std::size_t>(op)][static_cast<std::size_t>(k)]),
                                   {8, 128});
    };
    auto run = [&](int mistake, bool detect) {
        Call call;
        call.options.detect_races = detect;
        try {
            (void)call(
                [&](auto xh, auto oh, auto buf, auto tmp, auto sem) {
                    auto [pipe, make] = emit_pipeline_with_allocations(
                        [&](auto in, auto out) {
                            const index_t s = pipeline_index(0);
                            // At step 0 the fetch of block 1 into input slot 1 is in flight.
                            if (mistake == 1 && s == 0) (void)load(slot(0, 1));
                            // At step 1 the copy out of output slot 0 (step 0's) is in flight.
                            if (mistake == 2 && s == 1) store(slot(1, 0), load(in));
                            // An async copy reading input slot 0, left in flight past step 0:
                            // step 1 fetches block 2 into that slot.
                            if (mistake == 3 && s == 0) async_copy(in, tmp, sem.at(0));
                            if (mistake == 3 && s == 1) make_async_copy(in, tmp, sem.at(0)).wait();
                            store(out, load(in));
                        },
                        {4}, in_specs<Rows>, out_specs<Rows>);
                    auto allocs = make(buf, xh, oh);
                    pipe_allocs = &allocs;
                    pipe(xh, oh, allocs);
                },
                x);
        } catch (const error& e) {
            return std::string(e.rule()) + " " + e.what();
        }
        return std::string("none");
    };
    EXPECT_EQ(run(0, true), "none");
    const std::string r1 = run(1, true), r2 = run(2, true), r3 = run(3, true);
    EXPECT_EQ(r1.substr(0, 4), "DMA2") << r1;
    EXPECT_NE(r1.find("reads pipeline 1 input 0 window slot 1 while the pipeline's fetch into it (block of step 1, "
                      "started at step 0)"),
              std::string::npos)
        << r1;
    EXPECT_EQ(r2.substr(0, 4), "DMA2") << r2;
    EXPECT_NE(r2.find("writes pipeline 1 output 0 window slot 0 while the pipeline's copy out of it"), std::string::npos)
        << r2;
    EXPECT_EQ(r3.substr(0, 4), "DMA3") << r3;
    EXPECT_NE(r3.find("pipeline 1 input 0 window slot 0"), std::string::npos) << r3;
    for (int m : {1, 2, 3}) EXPECT_EQ(run(m, false), "none") << m;  // undetected without the option
    // A timing-only run of a long pipeline (whose steps would repeat) reports nothing either.
    {
        using Long = Array<float, 512, 128>;
        pallas_call<Grid<>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Chip<tpu::v5e>> quick;
        quick.options.timing_only = true;
        quick.options.detect_races = true;
        host_array<Long> big;
        EXPECT_NO_THROW((void)quick(
            [](auto xh, auto oh) {
                emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {64}, in_specs<Rows>, out_specs<Rows>)(xh, oh);
            },
            big));
    }

    // Two cores, one HBM output block: the core_axis split gives each core half the inner grid,
    // but the output map folds the split dim (i % 2), so both cores copy out rows 0-31 (MC2). Indexed
    // by the split dim it is fine.
    using Z = Array<float, 64, 512>;
    using TileIn = BlockSpec<Block<16, 128>, [](index_t i, index_t j) { return idx(i, j); }>;
    using Shared = BlockSpec<Block<16, 128>, [](index_t i, index_t j) { return idx(i % 2, j); }>;
    using Mega = pallas_call<Grid<2>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>, Semantics<parallel>, Chip<tpu::v5p>>;
    host_array<Z> z;
    std::iota(z.begin(), z.end(), 0.0f);
    auto mega = [&]<class OutSpec>(std::type_identity<OutSpec>) {
        Mega m;
        m.options.detect_races = true;
        try {
            (void)m(
                [](auto xh, auto oh) {
                    emit_pipeline([](auto i, auto w) { store(w, load(i)); }, {4, 4}, in_specs<TileIn>, out_specs<OutSpec>,
                                  {.semantics = {parallel, arbitrary}, .core_axis = 0})(xh, oh);
                },
                z);
        } catch (const error& e) {
            return std::string(e.rule()) + " " + e.what();
        }
        return std::string("none");
    };
    const std::string mc = mega(std::type_identity<Shared>{});
    EXPECT_EQ(mc.substr(0, 3), "MC2") << mc;
    EXPECT_NE(mc.find("core 1"), std::string::npos) << mc;
    EXPECT_NE(mc.find("core 0 wrote"), std::string::npos) << mc;
    EXPECT_NE(mc.find("pipeline 1 output 0"), std::string::npos) << mc;
    EXPECT_EQ(mega(std::type_identity<TileIn>{}), "none");

    // The bodies' own copies: both cores write the whole output (A13's whole-array output on a
    // parallel grid of 2). Core 1 waiting for core 0's signal first orders them: no race.
    using Pair = pallas_call<Grid<2>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Scratch<vmem, float, 32, 128>,
                             Scratch<semaphore, regular_semaphore, 1>, Semantics<parallel>, Chip<tpu::v5p>>;
    auto pair = [&](bool ordered) {
        Pair p;
        p.options.detect_races = true;
        try {
            (void)p(
                [ordered](auto xh, auto oh, auto buf, auto ready) {
                    if (ordered && core_index() == 1) semaphore_wait(ready.at(0), 1);
                    sync_copy(xh, buf);
                    sync_copy(buf, oh);
                    if (ordered && core_index() == 0) semaphore_signal(ready.at(0), 1, 1);
                },
                x);
        } catch (const error& e) {
            return std::string(e.rule()) + " " + e.what();
        }
        return std::string("none");
    };
    const std::string pr = pair(false);
    EXPECT_EQ(pr.substr(0, 3), "MC2") << pr;
    EXPECT_NE(pr.find("sync_copy to ref of output 0"), std::string::npos) << pr;
    EXPECT_EQ(pair(true), "none");
}

// MC2 for reads (A13): a core reading HBM the other core writes, with nothing ordering the two, in
// both orders (the write found by the later read, the read found by the later write), through a
// core_axis pipeline's fetches or the bodies' own copies; each with its correct twin. A core
// reading blocks the other core never writes (an input), or a region of an array the other core
// writes elsewhere, is no race.
TEST(EmitPipeline, A13ReadWriteRacesAcrossCores) {
    auto outcome = [](auto&& run) {
        try {
            run();
        } catch (const error& e) {
            return std::string(e.rule()) + " " + e.what();
        }
        return std::string("none");
    };
    using Z = Array<float, 64, 512>;
    host_array<Z> z;
    std::iota(z.begin(), z.end(), 0.0f);
    using Own = BlockSpec<Block<16, 128>, [](index_t i, index_t j) { return idx(i, j); }>;
    // Rows 32-63 for core 0's half of the split (i in {0, 1}), rows 0-31 for core 1's.
    using Swapped = BlockSpec<Block<16, 128>, [](index_t i, index_t j) { return idx((i + 2) % 4, j); }>;
    // In place (Alias<0, 0>): the output is the input's buffer, so a core fetching the other
    // core's rows reads what that core copies out.
    using InPlace = pallas_call<Grid<2>, Alias<0, 0>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>, Semantics<parallel>,
                                Chip<tpu::v5p>>;
    using Apart = pallas_call<Grid<2>, In<Arg<Z, AnyFull>>, Out<Arg<Z, AnyFull>>, Semantics<parallel>, Chip<tpu::v5p>>;
    auto pipe = [&]<class Call, class InSpec>(std::type_identity<Call>, std::type_identity<InSpec>) {
        return outcome([&] {
            Call m;
            m.options.detect_races = true;
            auto [o, rep] = m(
                [](auto xh, auto oh) {
                    emit_pipeline([](auto i, auto w) { store(w, load(i) + 1.0f); }, {4, 4}, in_specs<InSpec>,
                                  out_specs<Own>, {.semantics = {parallel, arbitrary}, .core_axis = 0})(xh, oh);
                },
                z);
            if (std::is_same_v<Call, Apart>) {  // o = x + 1 with the halves' rows swapped
                for (index_t r = 0; r < 64; ++r) {
                    ASSERT_EQ(o(r, 7), z((r + 32) % 64, 7) + 1.0f) << r;
                }
            }
        });
    };
    const std::string fetch = pipe(std::type_identity<InPlace>{}, std::type_identity<Swapped>{});
    EXPECT_EQ(fetch.substr(0, 3), "MC2") << fetch;
    EXPECT_NE(fetch.find("pipeline 1 input 0 window slot"), std::string::npos) << fetch;   // the fetch
    EXPECT_NE(fetch.find("pipeline 1 output 0 window slot"), std::string::npos) << fetch;  // the copy out
    EXPECT_NE(fetch.find("core 0"), std::string::npos) << fetch;
    EXPECT_NE(fetch.find("core 1"), std::string::npos) << fetch;
    EXPECT_NE(fetch.find("no semaphore signal and wait orders the two accesses"), std::string::npos) << fetch;
    EXPECT_EQ(pipe(std::type_identity<InPlace>{}, std::type_identity<Own>{}), "none");  // each core its own rows
    EXPECT_EQ(pipe(std::type_identity<Apart>{}, std::type_identity<Swapped>{}), "none");  // the other's rows of an input

    // The bodies' own copies, both orders. Core 0 runs its step first: "write then read" has core 0
    // copy x into o and core 1 read o back (the read finds the write); "read then write" has core 0
    // read o (an async copy) and core 1 write it (the write finds the read). Ordered by core 0's
    // signal and core 1's wait, neither is a race. Core 1 reading rows of o core 0 does not write
    // is none either.
    using Pair = pallas_call<Grid<2>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Scratch<vmem, float, 32, 128>,
                             Scratch<semaphore, regular_semaphore, 1>, Scratch<semaphore, dma_semaphore, 1>,
                             Semantics<parallel>, Chip<tpu::v5p>>;
    const host_array<X> x = ramp();
    enum class order { write_read, read_write, apart };
    auto pair = [&](order ord, bool ordered) {
        return outcome([&] {
            Pair p;
            p.options.detect_races = true;
            (void)p(
                [ord, ordered](auto xh, auto oh, auto buf, auto ready, auto dsem) {
                    const bool first = core_index() == 0;
                    if (ordered && !first) semaphore_wait(ready.at(0), 1);
                    if (ord == order::apart) {  // core 0 writes rows 0-15 of o, core 1 reads rows 16-31
                        if (first) sync_copy(xh.at(ds(0, c<16>), ds(0, c<128>)), oh.at(ds(0, c<16>), ds(0, c<128>)));
                        else sync_copy(oh.at(ds(16, c<16>), ds(0, c<128>)), buf.at(ds(16, c<16>), ds(0, c<128>)));
                    } else if (first == (ord == order::write_read)) {
                        sync_copy(xh, buf);
                        sync_copy(buf, oh);
                    } else {
                        make_async_copy(oh, buf, dsem.at(0)).start();
                        make_async_copy(oh, buf, dsem.at(0)).wait();
                    }
                    if (ordered && first) semaphore_signal(ready.at(0), 1, 1);
                },
                x);
        });
    };
    const std::string wr = pair(order::write_read, false), rw = pair(order::read_write, false);
    EXPECT_EQ(wr.substr(0, 3), "MC2") << wr;
    EXPECT_NE(wr.find("core 1, step 1: async_copy from ref of output 0"), std::string::npos) << wr;
    EXPECT_NE(wr.find("reads HBM that core 0 wrote at its step 0 (sync_copy to ref of output 0)"), std::string::npos)
        << wr;
    EXPECT_EQ(rw.substr(0, 3), "MC2") << rw;
    EXPECT_NE(rw.find("core 1, step 1: sync_copy to ref of output 0"), std::string::npos) << rw;
    EXPECT_NE(rw.find("writes HBM that core 0 read at its step 0 (async_copy from ref of output 0)"), std::string::npos)
        << rw;
    EXPECT_EQ(pair(order::write_read, true), "none");
    EXPECT_EQ(pair(order::read_write, true), "none");
    EXPECT_EQ(pair(order::apart, false), "none");
}

// The two-core log is indexed by address (MC2 checks cost O(log n), not O(n)): a pipeline of
// 16,384 inner steps split over v5p's two cores, every step a fetch and a copy out logged, runs
// with detect_races and computes the right rows; the version whose halves overlap still reports.
// (How long it takes is measured in benchmarks/pallas_call_bench.cpp, BM_RaceLog16k: a wall-clock
// bound here would fail on a loaded machine or under the sanitizers.)
TEST(EmitPipeline, A13RaceLogScalesToLargeGrids) {
    using Long = Array<float, 16384, 128>;
    using Row = BlockSpec<Block<1, 128>, [](index_t i) { return idx(i, 0); }>;
    using Big = pallas_call<Grid<2>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Semantics<parallel>, Chip<tpu::v5p>>;
    host_array<Long> x;
    std::iota(x.begin(), x.end(), 0.0f);
    Big call;
    call.options.detect_races = true;
    call.options.per_step = per_step_rows::never;
    auto [o, rep] = call(
        [](auto xh, auto oh) {
            emit_pipeline([](auto i, auto w) { store(w, load(i) * 2.0f); }, {16384}, in_specs<Row>, out_specs<Row>,
                          {.semantics = {parallel}, .core_axis = 0})(xh, oh);
        },
        x);
    EXPECT_EQ(rep.stats.inner_steps, 16384);
    for (std::size_t k = 0; k < x.size(); k += 977) ASSERT_EQ(o.vector()[k], 2.0f * x.vector()[k]) << k;
    // Every row written once, by its own core: with the output map folding the halves onto one,
    // core 1's first copy out meets core 0's rows.
    using Folded = BlockSpec<Block<1, 128>, [](index_t i) { return idx(i % 8192, 0); }>;
    try {
        (void)call(
            [](auto xh, auto oh) {
                emit_pipeline([](auto i, auto w) { store(w, load(i)); }, {16384}, in_specs<Row>, out_specs<Folded>,
                              {.semantics = {parallel}, .core_axis = 0})(xh, oh);
            },
            x);
        FAIL() << "no error";
    } catch (const error& e) {
        EXPECT_EQ(std::string(e.rule()), "MC2") << e.what();
    }
}

// S39 compares whole block indices (S10: a bounded slice's start and size): an output slice
// written again later with the same start but another size is another block, not a revisit.
TEST(EmitPipeline, BoundedOutputSameStartIsNotARevisit) {
    using Xs = Array<float, 8, 128>;
    using T3 = Array<std::int32_t, 3>;
    using Call = pallas_call<Grid<>, In<Arg<Xs, AnyFull>, Arg<T3, AnyFull>, Arg<T3, AnyFull>>, Out<Arg<Xs, AnyFull>>,
                             Scratch<smem, std::int32_t, 3>, Scratch<smem, std::int32_t, 3>, Chip<tpu::v5e>>;
    using Sl = BlockSpec<Block<bounded_slice{8}, 128>,
                         [](index_t i, const auto& st, const auto& sz) { return idx(ds(st(i), sz(i)), 0); }>;
    host_array<Xs> x;
    std::iota(x.begin(), x.end(), 0.0f);
    host_array<T3> st, sz;
    const std::int32_t a[] = {0, 4, 0}, b[] = {4, 4, 2};  // rows 0-3, 4-7, then 0-1 again
    std::copy(a, a + 3, st.begin());
    std::copy(b, b + 3, sz.begin());
    auto [o, rep] = Call{}(
        [](auto xh, auto sh, auto zh, auto oh, auto ss, auto zs) {
            sync_copy(sh, ss);
            sync_copy(zh, zs);
            emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {3}, in_specs<Sl>, out_specs<Sl>, {}, ss, zs)(xh, oh);
        },
        x, st, sz);
    EXPECT_TRUE(std::ranges::equal(o, x));
    EXPECT_EQ(rep.stats.inner_steps, 3);
}

// An inner body's semaphore wait on a two-core chip yields to the other core, as an outer
// body's does: core 0's inner pipeline waits at its first step for core 1's inner body to
// signal at its last. Core 0 runs first, so its wait must let core 1 run (it used to be a
// deadlock error at once: inner waits did not yield).
TEST(EmitPipeline, InnerBodyWaitYieldsToTheOtherCore) {
    using R16 = Array<float, 16, 128>;
    using Quarter = BlockSpec<Block<4, 128>, [](index_t i) { return idx(2 * program_id(0) + i, 0); }>;
    using Pair = pallas_call<Grid<2>, In<Arg<R16, AnyFull>>, Out<Arg<R16, AnyFull>>,
                             Scratch<semaphore, regular_semaphore, 1>, Semantics<parallel>, Chip<tpu::v5p>>;
    host_array<R16> x;
    std::iota(x.begin(), x.end(), 1.0f);
    const auto kernel = [](bool signal) {
        return [signal](auto x_hbm, auto o_hbm, auto ready) {
            const index_t c = program_id(0);
            emit_pipeline(
                [&](auto in, auto out) {
                    if (c == 0 && pipeline_index(0) == 0) semaphore_wait(ready.at(0), 1);
                    store(out, load(in) * 2.0f + static_cast<float>(c));
                    if (signal && c == 1 && pipeline_index(0) == 1) semaphore_signal(ready.at(0), 1, 0);
                },
                {2}, in_specs<Quarter>, out_specs<Quarter>)(x_hbm, o_hbm);
        };
    };
    auto [o, rep] = Pair{}(kernel(true), x);
    for (index_t r = 0; r < 16; ++r) {
        for (index_t k = 0; k < 128; k += 37) {  // core c's blocks 2c, 2c + 1: rows 8c to 8c + 7
            EXPECT_EQ(o(r, k), 2.0f * x(r, k) + static_cast<float>(r / 8)) << r << "," << k;
        }
    }
    ASSERT_EQ(rep.cores, 2);
    EXPECT_EQ(rep.stats.inner_steps, 4);
    EXPECT_EQ(rep.stats.sem_signals, 1);
    EXPECT_EQ(rep.stats.sem_waits, 1);
    // Core 0 is blocked from its first inner step until core 1's signal, after core 1's second
    // inner body: it ends after core 1.
    EXPECT_GT(rep.core[0].semaphore_stall, 0.0);
    EXPECT_EQ(rep.core[1].semaphore_stall, 0.0);
    EXPECT_GT(rep.core[0].time, rep.core[1].time);
    // Without the signal the wait can never be met: a deadlock (39), not a hang.
    EXPECT_THROW((void)Pair{}(kernel(false), x), ptpu::error);
    try {
        (void)Pair{}(kernel(false), x);
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "39") << e.what();
    }
}
