// dynamic_pipeline: an emit_pipeline configured by values runs what the same pipeline configured by
// types runs: the same events, outputs and predicted times (a property test over random grids,
// array shapes, buffer counts, lookahead, bounded slices read from SMEM, aliased views and core
// splits), and raises the same rule ids for the same mistakes.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace ptpu;

namespace {

using F2 = Operand<float, 2>;
using Rows = dynamic_pipeline<In<F2>, Out<F2>>;

constexpr auto row_map = [](index_t i) { return idx(i, 0); };

// The rows of a (rows, cols) array in blocks of (8, cols): `in` and `out` as given.
Rows rows_config(index_t steps, index_t cols, int in_buffers, bool lookahead) {
    Rows cfg;
    cfg.grid = {steps};
    cfg.in[0] = {.block = {8, cols}, .index_map = row_map, .buffer_count = in_buffers, .lookahead = lookahead};
    cfg.out[0] = {.block = {8, cols}, .index_map = row_map};
    return cfg;
}

template <class X>
host_array<X> ramp(float from = 0.0f) {
    host_array<X> x;
    std::iota(x.begin(), x.end(), from);
    return x;
}

using X = Array<float, 32, 128>;
using AnyFull = BlockSpec<Full, zero_map, any>;
using Outer = pallas_call<Grid<>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Chip<tpu::v5e>>;
using StaticRows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;

template <class Call, class Body, class... Args>
std::string rule_of(const Call& call, Body body, const Args&... args) {
    try {
        (void)call(body, args...);
    } catch (const error& e) {
        return std::string(e.rule());
    }
    return "none";
}

}  // namespace

// A1 configured by values: the same events, data and time as the static emit_pipeline.
TEST(DynamicPipeline, A1EqualsTheStaticPipeline) {
    const host_array<X> x = ramp<X>();
    std::vector<event> ts, tv;
    auto [os, rs] = Outer{}(
        [&](auto xh, auto oh) {
            emit_pipeline([](auto in, auto out) { store(out, load(in) * 2.0f); }, {4}, in_specs<StaticRows>,
                          out_specs<StaticRows>, {.trace = &ts})(xh, oh);
        },
        x);
    Rows cfg = rows_config(4, 128, 2, false);
    cfg.options.trace = &tv;
    auto [ov, rv] = Outer{}(
        [&](auto xh, auto oh) { emit_pipeline([](auto in, auto out) { store(out, load(in) * 2.0f); }, cfg)(xh, oh); },
        x);
    EXPECT_EQ(tv, ts);
    EXPECT_EQ(tv.size(), 24u);  // the prologue's fetch, 4 x (step, wait, body, write), 3 fetches, 4 wait_outs
    EXPECT_TRUE(std::ranges::equal(ov, os));
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(ov.vector()[k], 2.0f * x.vector()[k]);
    EXPECT_EQ(rv.device_time, rs.device_time);
    EXPECT_EQ(rv.stats.inner_steps, 4);
    EXPECT_EQ(rv.stats.inner_dmas, 8);
}

// The configuration is a value: one instantiation runs buffer counts 1-4, lookahead on and off.
TEST(DynamicPipeline, BufferCountsAndLookaheadAsValues) {
    const host_array<X> x = ramp<X>(1.0f);
    for (int b = 1; b <= 4; ++b)
        for (const bool look : {false, true}) {
            if (b == 1 && look) continue;  // Q1, below
            std::vector<event> t;
            Rows cfg = rows_config(4, 128, b, look);
            cfg.options.trace = &t;
            auto [o, rep] = Outer{}(
                [&](auto xh, auto oh) { emit_pipeline([](auto in, auto out) { store(out, load(in)); }, cfg)(xh, oh); },
                x);
            EXPECT_TRUE(std::ranges::equal(o, x)) << b << look;
            // The prologue fetches as many blocks as the input has buffers minus one (S30).
            int prologue = 0;
            for (const event& e : t) {
                if (e.kind == event_kind::step) break;
                prologue += e.kind == event_kind::fetch;
            }
            EXPECT_EQ(prologue, b - 1) << b << look;
            EXPECT_EQ(rep.stats.inner_dmas, 8) << b << look;
        }
}

// The same rule ids as the static specs' (which meet them at compile time), as ptpu::error.
TEST(DynamicPipeline, RulesAsErrors) {
    const host_array<X> x = ramp<X>();
    auto run = [&](const Rows& cfg) {
        return rule_of(Outer{}, [&](auto xh, auto oh) { emit_pipeline([](auto, auto) {}, cfg)(xh, oh); }, x);
    };
    EXPECT_EQ(run(rows_config(4, 128, 2, false)), "none");
    EXPECT_EQ(run(rows_config(4, 128, 1, true)), "Q1");
    EXPECT_EQ(run(rows_config(4, 128, 9, false)), "BUF1");
    Rows out3 = rows_config(4, 128, 2, false);
    out3.out[0].buffer_count = 3;
    EXPECT_EQ(run(out3), "27");
    EXPECT_EQ(run(rows_config(0, 128, 2, false)), "25");
    Rows wrong_shape = rows_config(4, 128, 2, false);
    wrong_shape.in[0].shape = {16, 128};
    EXPECT_EQ(run(wrong_shape), "ARG1");
    Rows squeeze = rows_config(4, 128, 2, false);
    squeeze.in[0].block = {squeezed, 128};
    EXPECT_EQ(run(squeeze), "7");
    Rows arity = rows_config(4, 128, 2, false);
    arity.in[0].index_map = [](index_t i, index_t j) { return idx(i, j); };
    EXPECT_EQ(run(arity), "2");
    Rows rank = rows_config(4, 128, 2, false);
    rank.in[0].index_map = [](index_t i) { return idx(i); };
    EXPECT_EQ(run(rank), "2");
    // An aliased view (an hbm spec over the ANY source) cannot be padded (30).
    using View = dynamic_pipeline<In<Operand<float, 2, hbm>>, Out<F2>>;
    View v;
    v.grid = {4};
    v.in[0] = {.block = {element{8, 1, 0}, 128}, .index_map = row_map};
    v.out[0] = {.block = {8, 128}, .index_map = row_map};
    EXPECT_EQ(rule_of(Outer{}, [&](auto xh, auto oh) { emit_pipeline([](auto, auto) {}, v)(xh, oh); }, x), "30");
}

namespace {

// A random pipeline over a (rows, cols) f32 array in (8, 128) blocks, inner grid (rows / 8,
// cols / 128): the input block (i / r, j) with r an extra value (r > 1 revisits blocks), the
// input's buffer count and lookahead, the output double-buffered; run on one core, or split over
// the two cores of v5p by core_axis; tiled or not, pipelined or not.
struct random_case {
    index_t rows = 8, cols = 128, r = 1;
    int buffers = 2;
    bool lookahead = false, split = false, tiling = false, no_pipelining = false;
    const chip* hw = &tpu::v5e;
};

using AnyOp = Operand<float, 2, any>;
using Host = dynamic_call<In<AnyOp>, Out<AnyOp>>;
using Pipe = dynamic_pipeline<In<F2>, Out<F2>, Extra<index_t>>;

constexpr auto revisit_map = [](index_t i, index_t j, index_t r) { return idx(i / r, j); };
constexpr auto tile_map = [](index_t i, index_t j, index_t) { return idx(i, j); };

Host host_of(const random_case& c) {
    Host h;
    h.chip = *c.hw;
    if (c.split) {
        h.grid = {2};
        h.semantics = {parallel};
    }
    h.in[0].shape = h.out[0].shape = {c.rows, c.cols};
    h.options.timeline = true;
    return h;
}
pipeline_options options_of(const random_case& c, std::vector<event>* trace) {
    pipeline_options o{.trace = trace, .no_pipelining = c.no_pipelining, .tiling = c.tiling};
    if (c.split) {
        o.semantics = {parallel, arbitrary};
        o.core_axis = 0;
    }
    return o;
}

constexpr auto kernel = [](auto in, auto out) { store(out, load(in) * 2.0f + 1.0f); };

template <int B, bool L>
report run_static(const random_case& c, const std::vector<float>& x, std::vector<float>& o, std::vector<event>& t) {
    using In0 = BlockSpec<Block<8, 128>, revisit_map, Buffered<B, L>>;
    using Out0 = BlockSpec<Block<8, 128>, tile_map>;
    const index_t g0 = c.rows / 8, g1 = c.cols / 128, r = c.r;
    const pipeline_options opt = options_of(c, &t);
    return host_of(c).into(
        std::tie(o),
        [&](auto xh, auto oh) { emit_pipeline(kernel, {g0, g1}, in_specs<In0>, out_specs<Out0>, opt, r)(xh, oh); }, x);
}

report run_values(const random_case& c, const std::vector<float>& x, std::vector<float>& o, std::vector<event>& t) {
    Pipe cfg;
    cfg.grid = {c.rows / 8, c.cols / 128};
    cfg.in[0] = {.block = {8, 128}, .index_map = revisit_map, .buffer_count = c.buffers, .lookahead = c.lookahead};
    cfg.out[0] = {.block = {8, 128}, .index_map = tile_map};
    cfg.options = options_of(c, &t);
    return host_of(c).into(
        std::tie(o), [&](auto xh, auto oh) { emit_pipeline(kernel, cfg, c.r)(xh, oh); }, x);
}

report run_static_case(const random_case& c, const std::vector<float>& x, std::vector<float>& o,
                       std::vector<event>& t) {
    switch (c.buffers * 2 + (c.lookahead ? 1 : 0)) {
        case 2: return run_static<1, false>(c, x, o, t);
        case 4: return run_static<2, false>(c, x, o, t);
        case 5: return run_static<2, true>(c, x, o, t);
        case 6: return run_static<3, false>(c, x, o, t);
        case 7: return run_static<3, true>(c, x, o, t);
        case 8: return run_static<4, false>(c, x, o, t);
        default: return run_static<4, true>(c, x, o, t);
    }
}

}  // namespace

// The property: over 1,000 random configurations, the pipeline configured by values and the
// same pipeline configured by types give the same events, the same outputs and the same
// predicted time, to the bit.
TEST(DynamicPipeline, ValuesEqualTypesOnRandomConfigurations) {
    std::mt19937 gen(20261204);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
    const chip* chips[] = {&tpu::v5e, &tpu::v6e, &tpu::v5p};
    int split = 0, revisits = 0, deep = 0;
    for (int n = 0; n < 1000; ++n) {
        random_case c;
        c.rows = 8 * pick(1, 12);
        c.cols = 128 * pick(1, 3);
        c.r = pick(1, 3);
        c.buffers = pick(1, 4);
        c.lookahead = c.buffers > 1 && pick(0, 1) == 1;
        c.hw = chips[pick(0, 2)];
        c.split = c.hw->pallas_cores() > 1 && pick(0, 1) == 1;
        c.tiling = pick(0, 3) == 0;
        c.no_pipelining = pick(0, 7) == 0;
        split += c.split;
        revisits += c.r > 1;
        deep += c.buffers > 2;
        const std::vector<float> x = [&] {
            std::vector<float> v(static_cast<std::size_t>(c.rows * c.cols));
            std::iota(v.begin(), v.end(), static_cast<float>(n));
            return v;
        }();
        std::vector<float> os(x.size()), ov(x.size());
        std::vector<event> ts, tv;
        const report rs = run_static_case(c, x, os, ts);
        const report rv = run_values(c, x, ov, tv);
        const std::string what = "case " + std::to_string(n) + ": rows " + std::to_string(c.rows) + " cols " +
                                 std::to_string(c.cols) + " r " + std::to_string(c.r) + " buffers " +
                                 std::to_string(c.buffers) + (c.lookahead ? " lookahead" : "") +
                                 (c.split ? " split" : "") + (c.tiling ? " tiling" : "") +
                                 (c.no_pipelining ? " no_pipelining" : "");
        ASSERT_FALSE(ts.empty()) << what;
        ASSERT_EQ(tv, ts) << what;
        ASSERT_EQ(ov, os) << what;
        ASSERT_EQ(rv.device_time, rs.device_time) << what;
        ASSERT_EQ(rv.stats.inner_dmas, rs.stats.inner_dmas) << what;
        // ... and the outputs are the kernel's on the block each step read.
        for (index_t i = 0; i < c.rows; ++i)
            for (index_t j = 0; j < c.cols; ++j) {
                const index_t src_row = ((i / 8) / c.r) * 8 + i % 8;
                ASSERT_EQ(ov[static_cast<std::size_t>(i * c.cols + j)],
                          x[static_cast<std::size_t>(src_row * c.cols + j)] * 2.0f + 1.0f)
                    << what << " at " << i << ", " << j;
            }
    }
    EXPECT_GT(split, 100);
    EXPECT_GT(revisits, 300);
    EXPECT_GT(deep, 300);
}

namespace {

using Matmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;

// A (n, n) @ (n, n) f32 matmul in (bm, bm) output blocks and K blocks of bk, with an accumulator.
Matmul matmul(index_t n, index_t bm, index_t bk, int y_buffers, bool lookahead, const chip& hw) {
    Matmul mm;
    mm.semantics = {parallel, parallel, arbitrary};
    mm.chip = hw;
    mm.in[0] = {.shape = {n, n}, .block = {bm, bk}, .index_map = [](index_t i, index_t, index_t k) {
                    return idx(i, k);
                }};
    mm.in[1] = {.shape = {n, n},
                .block = {bk, bm},
                .index_map = [](index_t, index_t j, index_t k) { return idx(k, j); },
                .buffer_count = y_buffers,
                .lookahead = lookahead};
    mm.out[0] = {.shape = {n, n}, .block = {bm, bm}, .index_map = [](index_t i, index_t j, index_t) {
                     return idx(i, j);
                 }};
    mm.grid = {n / bm, n / bm, n / bk};
    mm.scratch[0] = {bm, bm};
    return mm;
}

constexpr auto matmul_body = [](auto x, auto y, auto o, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(x), load(y)));
    if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
};

}  // namespace

// custom_buffered: the grid run as one inner pipeline in a gridless call over ANY refs, the way
// upstream kernels get deeper buffering: buffer counts 1-4 and lookahead on the same type, the
// same body (program_id answers for the pipeline's grid), the same result as the top-level call.
TEST(DynamicPipeline, CustomBufferedCall) {
    constexpr index_t n = 256;
    std::vector<float> x(n * n), y(n * n);
    for (std::size_t k = 0; k < x.size(); ++k) {
        x[k] = static_cast<float>(k % 7) - 3.0f;
        y[k] = static_cast<float>(k % 5) * 0.5f;
    }
    std::vector<float> ref(n * n, 0.0f);
    for (index_t i = 0; i < n; ++i)
        for (index_t k = 0; k < n; ++k)
            for (index_t j = 0; j < n; ++j)
                ref[static_cast<std::size_t>(i * n + j)] +=
                    x[static_cast<std::size_t>(i * n + k)] * y[static_cast<std::size_t>(k * n + j)];
    // The top-level call: two buffers at most (19).
    auto [top, top_rep] = matmul(n, 128, 128, 2, false, tpu::v5e)(matmul_body, x, y);
    EXPECT_EQ(top.vector(), ref);
    EXPECT_EQ(rule_of(matmul(n, 128, 128, 3, false, tpu::v5e), matmul_body, x, y), "19");
    for (int b = 1; b <= 4; ++b)
        for (const bool look : {false, true}) {
            if (b == 1 && look) continue;
            Matmul mm = matmul(n, 128, 128, b, look, tpu::v5e);
            mm.custom_buffered = true;
            auto [o, rep] = mm(matmul_body, x, y);
            EXPECT_EQ(o.vector(), ref) << b << look;
            EXPECT_EQ(rep.stats.inner_steps, 2 * 2 * 2) << b << look;
            EXPECT_EQ(rep.stats.dma_in + rep.stats.dma_out, 0) << b << look;  // the outer call copies nothing
            // Each step fetches x's and y's blocks (no revisits: k changes fastest); o is written per (i, j).
            EXPECT_EQ(rep.stats.inner_dmas, 8 + 8 + 4) << b << look;
            EXPECT_GT(rep.device_time, 0.0);
            // Predicted without data: the same time.
            EXPECT_EQ(mm.predict(matmul_body).device_time, rep.device_time) << b << look;
        }
    // On a two-core chip, the parallel dims split over the cores (core_axis), as the top-level call's.
    Matmul two = matmul(n, 128, 128, 3, true, tpu::v5p);
    two.custom_buffered = true;
    auto [o2, rep2] = two(matmul_body, x, y);
    EXPECT_EQ(o2.vector(), ref);
    EXPECT_EQ(rep2.cores, 2);
    EXPECT_EQ(rep2.stats.inner_steps, 8);
    // events() and info() are the inner pipeline's schedule: y's 4-deep window fetches 3 blocks
    // ahead in the prologue.
    Matmul deep = matmul(n, 128, 128, 4, false, tpu::v5e);
    deep.custom_buffered = true;
    int prologue_y = 0;
    for (const event& e : deep.events()) {
        if (e.kind == event_kind::step) break;
        prologue_y += e.kind == event_kind::fetch && e.op == 1;
    }
    EXPECT_EQ(prologue_y, 3);
    EXPECT_EQ(deep.info().ops[1].buffers, 4);
    EXPECT_EQ(deep.info().ops[1].dmas, 8);
    // An ANY operand has no window: it stays out of the pipeline, and the body gets its whole
    // array in its place, as the top-level call gives it (here a table whose row block the body
    // copies itself). The same outputs either way, and on data as predicted.
    using WithAny = dynamic_call<In<Operand<float, 2, any>, F2>, Out<F2>, ScratchShapes<F2>>;
    WithAny with_any;
    with_any.grid = {4};
    with_any.chip = tpu::v5e;
    with_any.in[0].shape = {32, 128};
    with_any.in[1] = {.shape = {32, 128}, .block = {8, 128}, .index_map = row_map, .buffer_count = 3};
    with_any.out[0] = {.shape = {32, 128}, .block = {8, 128}, .index_map = row_map};
    with_any.scratch[0] = {8, 128};
    const auto add_table_rows = [](auto table, auto xb, auto ob, auto rows) {
        sync_copy(table.at(ds(program_id(0) * 8, 8), ds(0, 128)), rows);
        store(ob, load(xb) + load(rows));
    };
    std::vector<float> table(32 * 128), xs(32 * 128), sum(32 * 128);
    for (std::size_t k = 0; k < table.size(); ++k) {
        table[k] = static_cast<float>(k % 13) - 6.0f;
        xs[k] = static_cast<float>(k % 11) * 0.25f;
        sum[k] = table[k] + xs[k];
    }
    with_any.in[1].buffer_count = 2;  // a top-level call keeps two (19)
    auto [top_any, top_any_rep] = with_any(add_table_rows, table, xs);
    EXPECT_EQ(top_any.vector(), sum);
    with_any.in[1].buffer_count = 3;
    with_any.custom_buffered = true;
    auto [any_out, any_rep] = with_any(add_table_rows, table, xs);
    EXPECT_EQ(any_out.vector(), sum);
    EXPECT_EQ(any_rep.stats.inner_steps, 4);
    EXPECT_EQ(any_rep.stats.inner_dmas, 4 + 4);  // x's blocks and o's; the table moves by the body's copies
    EXPECT_EQ(with_any.predict(add_table_rows).device_time, any_rep.device_time);
    EXPECT_EQ(with_any.info().ops[0].dmas, 0);
    EXPECT_EQ(with_any.info().ops[1].buffers, 3);
    // With no window at all the pipeline still runs the grid, one body call per step.
    using AllAny = dynamic_call<In<Operand<float, 2, any>>, Out<Operand<float, 2, any>>>;
    AllAny all_any;
    all_any.grid = {4};
    all_any.in[0].shape = all_any.out[0].shape = {32, 128};
    all_any.custom_buffered = true;
    int any_steps = 0;
    auto [copied, copy_rep] = all_any(
        [&](auto xa, auto oa) {
            ++any_steps;
            if (program_id(0) == num_programs(0) - 1) sync_copy(xa, oa);
        },
        table);
    EXPECT_EQ(any_steps, 4);
    EXPECT_EQ(copy_rep.stats.inner_steps, 4);
    EXPECT_EQ(copied.vector(), table);
    // The inner pipeline's own rules: an output keeps at most two buffers (27).
    Matmul out3 = matmul(n, 128, 128, 2, false, tpu::v5e);
    out3.out[0].buffer_count = 3;
    out3.custom_buffered = true;
    EXPECT_EQ(rule_of(out3, matmul_body, x, y), "27");
}

// A timing-only run makes a step from the last one's ops when they repeat; a deep window's first
// waits are on the prologue's DMAs, so the steps that wait on them are made in full: the
// prediction equals the run on data for every buffer count (a 4-deep window used to wait on a
// DMA of the wrong step, SIM1).
TEST(DynamicPipeline, PredictionEqualsTheRunOnDataForDeepWindows) {
    random_case c;
    c.rows = 8 * 24;
    c.cols = 128;
    const std::vector<float> x(static_cast<std::size_t>(c.rows * c.cols), 1.0f);
    for (int b = 1; b <= 8; ++b)
        for (const bool look : {false, true}) {
            if (b == 1 && look) continue;
            c.buffers = b;
            c.lookahead = look;
            std::vector<float> o(x.size());
            std::vector<event> t;
            const report data = run_values(c, x, o, t);
            Pipe cfg;
            cfg.grid = {c.rows / 8, 1};
            cfg.in[0] = {.block = {8, 128}, .index_map = revisit_map, .buffer_count = b, .lookahead = look};
            cfg.out[0] = {.block = {8, 128}, .index_map = tile_map};
            Host h = host_of(c);
            h.options.timeline = false;
            const report timed =
                h.predict([&](auto xh, auto oh) { emit_pipeline(kernel, cfg, index_t{1})(xh, oh); });
            EXPECT_EQ(timed.device_time, data.device_time) << b << look;
            EXPECT_EQ(timed.stats.inner_dmas, 2 * 24) << b << look;
        }
}

// Allocations made once and prefetched_count (S53, S55) for a pipeline configured by values: the
// caller fills the first two of three slots, the pipeline fetches only blocks 2 and 3, as the
// static Buffered<3, false, 2>; without allocations it is 28, as is a prefetched count at or
// above the buffer count.
TEST(DynamicPipeline, AllocationsAndPrefetchedCount) {
    using Call = pallas_call<Grid<>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>,
                             Scratch<vmem, std::uint8_t, 5 * 4096>, Chip<tpu::v5e>>;
    const host_array<X> x = ramp<X>();
    auto body = [](auto in, auto out) { store(out, load(in) + 1.0f); };
    auto run = [&](const Rows& cfg, bool allocate, std::vector<event>& t) {
        Rows conf = cfg;
        conf.options.trace = &t;
        return Call{}(
            [&](auto xh, auto oh, auto buf) {
                auto pipe = emit_pipeline(body, conf);
                if (!allocate) return pipe(xh, oh);
                auto allocs = pipe.make_allocations(buf, xh, oh);
                sync_copy(xh.at(ds(0, c<8>), ds(0, c<128>)), allocs.template window<0>(0));
                sync_copy(xh.at(ds(8, c<8>), ds(0, c<128>)), allocs.template window<0>(1));
                pipe(xh, oh, allocs);
            },
            x);
    };
    Rows cfg = rows_config(4, 128, 3, false);
    cfg.in[0].prefetched_count = 2;
    std::vector<event> tv;
    auto [o, rep] = run(cfg, true, tv);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(o.vector()[k], x.vector()[k] + 1.0f) << k;
    std::vector<std::uint32_t> fetched, waited;
    for (const event& e : tv) {
        if (e.kind == event_kind::fetch) fetched.push_back(e.block_step);
        if (e.kind == event_kind::wait_in) waited.push_back(e.step);
    }
    EXPECT_EQ(fetched, (std::vector<std::uint32_t>{2, 3}));
    EXPECT_EQ(waited, (std::vector<std::uint32_t>{2, 3}));
    EXPECT_EQ(rep.stats.body_dmas, 2);  // the caller's prefills
    // The static spec's events, allocations made the same way.
    using Pf3 = BlockSpec<Block<8, 128>, [](index_t j) { return idx(j, 0); }, Buffered<3, false, 2>>;
    std::vector<event> ts;
    auto [os, reps] = Call{}(
        [&](auto xh, auto oh, auto buf) {
            auto [pipe, make_allocations] = emit_pipeline_with_allocations(
                body, {4}, in_specs<Pf3>, out_specs<StaticRows>, {.trace = &ts});
            auto allocs = make_allocations(buf, xh, oh);
            sync_copy(xh.at(ds(0, c<8>), ds(0, c<128>)), allocs.template window<0>(0));
            sync_copy(xh.at(ds(8, c<8>), ds(0, c<128>)), allocs.template window<0>(1));
            pipe(xh, oh, allocs);
        },
        x);
    EXPECT_EQ(tv, ts);
    EXPECT_EQ(rep.device_time, reps.device_time);
    // Without allocations: 28 (the static spec's is a compile error).
    auto rule = [&](const Rows& conf, bool allocate) {
        try {
            std::vector<event> t;
            (void)run(conf, allocate, t);
        } catch (const error& e) {
            return std::string(e.rule());
        }
        return std::string("none");
    };
    EXPECT_EQ(rule(cfg, false), "28");
    Rows too_many = cfg;
    too_many.in[0].prefetched_count = 3;
    EXPECT_EQ(rule(too_many, true), "28");
    // At the top level a prefetched count is 19, as pallas_call's.
    Matmul mm = matmul(256, 128, 128, 2, false, tpu::v5e);
    mm.in[1].prefetched_count = 1;
    EXPECT_EQ(rule_of(mm, matmul_body, std::vector<float>(256 * 256), std::vector<float>(256 * 256)), "19");
}
