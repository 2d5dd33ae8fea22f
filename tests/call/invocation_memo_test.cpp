// The invocation memo of timing-only runs (docs/model.md §10, "The invocation memo"): an inner
// pipeline whose bodies only charge work is run once per distinct pipeline, body and set of
// answers (the kernel's program ids and core its maps and bodies read, and for a body that
// captures state what the kernel's body had asked before), checked again at the 1st, 2nd, 4th...
// reuse, and handed on from what was kept otherwise. Whatever the memo does, a prediction must be
// exactly the one made by running every invocation (run_options::memoize_body = false).
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include "../sim/memo_support.hpp"

#include <string>
#include <type_traits>
#include <vector>

using namespace ptpu;

namespace {

constexpr index_t inner = 32;  // inner steps per invocation
using X = Array<float, 64 * inner * 8, 128>;
using AnyX = BlockSpec<Full, zero_map, any>;
using Tile = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
using Outer = pallas_call<Grid<64>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
using Outer2 = pallas_call<Grid<64>, Semantics<parallel>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>,
                           Chip<tpu::v5p>>;

using memo_test::checks;
using memo_test::predict_memo;

void expect_same(const report& a, const report& b) {
    EXPECT_EQ(a.device_time, b.device_time);
    EXPECT_EQ(a.exposed_dma, b.exposed_dma);
    EXPECT_EQ(a.body_exposed_dma, b.body_exposed_dma);
    memo_test::expect_same_counts(a, b);
    for (int c = 0; c < b.cores; ++c) {
        const auto u = static_cast<std::size_t>(c);
        EXPECT_EQ(a.core[u].time, b.core[u].time);
        EXPECT_EQ(a.core[u].compute, b.core[u].compute);
        EXPECT_EQ(a.core[u].exposed_dma, b.core[u].exposed_dma);
        EXPECT_EQ(a.stats.vmem_peak[u], b.stats.vmem_peak[u]);
    }
    EXPECT_EQ(a.stats.inner_steps, b.stats.inner_steps);
    EXPECT_EQ(a.stats.inner_dmas, b.stats.inner_dmas);
    EXPECT_EQ(a.stats.inner_bytes, b.stats.inner_bytes);
    const auto same_rows = [](const std::vector<sim::step_times>& x, const std::vector<sim::step_times>& y,
                              const char* what) {
        ASSERT_EQ(x.size(), y.size()) << what;
        for (std::size_t i = 0; i < x.size(); ++i) {
            EXPECT_EQ(x[i].core, y[i].core) << what << " " << i;
            EXPECT_EQ(x[i].step, y[i].step) << what << " " << i;
            EXPECT_EQ(x[i].sub, y[i].sub) << what << " " << i;
            EXPECT_EQ(x[i].begin, y[i].begin) << what << " " << i;
            EXPECT_EQ(x[i].end, y[i].end) << what << " " << i;
            EXPECT_EQ(x[i].overhead, y[i].overhead) << what << " " << i;
            EXPECT_EQ(x[i].compute, y[i].compute) << what << " " << i;
            EXPECT_EQ(x[i].wait, y[i].wait) << what << " " << i;
            EXPECT_EQ(x[i].waited_on, y[i].waited_on) << what << " " << i;
        }
    };
    same_rows(a.steps, b.steps, "step row");
    same_rows(a.inner_steps, b.inner_steps, "inner row");
}

// K's predictions of `body` with the memo off and on, which must be the same, and how many
// inner bodies the second ran (`runs`, counted by the bodies).
struct off_on {
    report every, memo;
    int runs = 0, runs_off = 0;
};
int runs = 0;
template <class K, class Body>
off_on predict_off_on(const Body& body) {
    off_on r;
    runs = 0;
    r.every = predict_memo<K>(body, false);
    r.runs_off = runs;
    runs = 0;
    r.memo = predict_memo<K>(body, true);
    r.runs = runs;
    expect_same(r.memo, r.every);
    return r;
}

// (Inner bodies count their runs in a global: a body capturing a counter would be keyed by what
// the kernel's body asked before running it.)

// The outer body: its program id's rows of the three arrays, through an inner pipeline.
template <class Inner>
auto nested(Inner) {
    return [](auto a, auto b, auto c) {
        const index_t i = program_id(0);
        emit_pipeline([](auto x, auto y, auto z) { Inner{}(x, y, z); }, {inner}, in_specs<Tile, Tile>,
                      out_specs<Tile>)(a.at(ds(i * inner * 8, inner * 8), ds(0, 128)),
                                       b.at(ds(i * inner * 8, inner * 8), ds(0, 128)),
                                       c.at(ds(i * inner * 8, inner * 8), ds(0, 128)));
    };
}
const auto add = [](auto x, auto y, auto z) {
    ++runs;
    store(z, load(x) + load(y));
};

}  // namespace

TEST(InvocationMemo, SameInvocationsRunOncePlusChecksAndPredictTheSame) {
    const auto body = nested(add);
    const off_on r = predict_off_on<Outer>(body);
    EXPECT_EQ(r.runs_off, 64 * inner);
    EXPECT_EQ(r.runs, inner * (1 + checks(63)));  // the first invocation, then checks at reuses 1, 2, 4...
    EXPECT_EQ(r.memo.stats.inner_steps, 64 * inner);
    EXPECT_FALSE(r.memo.steps.empty());
    EXPECT_FALSE(r.memo.inner_steps.empty());
    // Two cores: one memo each.
    EXPECT_EQ(predict_off_on<Outer2>(body).runs, 2 * inner * (1 + checks(31)));
}

TEST(InvocationMemo, WhatTheInnerBodyAsksOfTheKernelIsPartOfTheKey) {
    // The inner work follows the kernel's program id: no two invocations are the same (nothing is
    // reused), and the prediction is the same.
    const auto by_row = nested([](auto x, auto y, auto z) {
        ++runs;
        store(z, load(x) + load(y));
        charge(work{.explicit_seconds = 1e-9 * static_cast<double>(outer_program_id(0) % 3)});
    });
    EXPECT_EQ(predict_off_on<Outer>(by_row).runs, 64 * inner);
    // On two cores, the core each runs on: one kept invocation per core.
    const auto by_core = nested([](auto x, auto y, auto z) {
        ++runs;
        store(z, load(x) + load(y));
        charge(work{.explicit_seconds = 1e-9 * (1.0 + core_index())});
    });
    const off_on r = predict_off_on<Outer2>(by_core);
    EXPECT_EQ(r.runs_off, 64 * inner);
    EXPECT_EQ(r.runs, 2 * inner * (1 + checks(31)));
    EXPECT_GT(r.memo.core[1].compute, r.memo.core[0].compute);
}

TEST(InvocationMemo, WhatTheIndexMapsAskIsPartOfTheKey) {
    // Where program_id(0) is 1 each block is fetched twice in a row (one DMA for two steps): one
    // kept invocation per value of program_id(0), which the kernel's body does not ask.
    using ByRow = BlockSpec<Block<8, 128>, [](index_t j) { return idx(program_id(0) == 0 ? j : j / 2, 0); }>;
    using Two = pallas_call<Grid<2, 16>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
    const auto body = [](auto a, auto b, auto c) {
        const auto rows = [](auto r) { return r.at(ds(0, inner * 8), ds(0, 128)); };
        emit_pipeline(add, {inner}, in_specs<ByRow, Tile>, out_specs<Tile>)(rows(a), rows(b), rows(c));
    };
    const off_on r = predict_off_on<Two>(body);
    EXPECT_EQ(r.runs, 2 * inner * (1 + checks(15)));
    EXPECT_EQ(r.every.stats.inner_dmas, 16 * (3 * inner) + 16 * (inner + inner / 2 + inner));
}

TEST(InvocationMemo, ABodyCapturingStateIsKeyedByWhatTheKernelsBodyAsked) {
    // The inner body captures a value of the kernel's body (its program_id(0)): invocations are
    // the same only where that body's answers were, here per value of program_id(0).
    using Two = pallas_call<Grid<2, 16>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
    // `ask_more`: the kernel's body asks program_id(1) too, before the pipeline.
    const auto capturing = [](auto ask_more) {
        return [](auto a, auto b, auto c) {
            const index_t half = program_id(0) + (decltype(ask_more)::value ? 0 * program_id(1) : 0);
            const auto rows = [](auto r) { return r.at(ds(0, inner * 8), ds(0, 128)); };
            emit_pipeline(
                [half](auto x, auto y, auto z) {
                    ++runs;
                    store(z, load(x) + load(y));
                    charge(work{.explicit_seconds = 1e-8 * static_cast<double>(half)});
                },
                {inner}, in_specs<Tile, Tile>, out_specs<Tile>)(rows(a), rows(b), rows(c));
        };
    };
    const off_on r = predict_off_on<Two>(capturing(std::false_type{}));
    EXPECT_EQ(r.runs, 2 * inner * (1 + checks(15)));
    // Then every invocation is its own.
    const off_on more = predict_off_on<Two>(capturing(std::true_type{}));
    EXPECT_EQ(more.runs, 32 * inner);
    expect_same(more.memo, r.every);
}

TEST(InvocationMemo, BodiesAroundAndBesidePipelinesPredictTheSame) {
    // Work before, between and after pipelines; an outer step that skips one of them; two
    // pipelines with the same specs and refs but other bodies; an inner body that copies (never
    // kept: it runs every time).
    const auto body = [](auto a, auto b, auto c) {
        const index_t i = program_id(0);
        const auto rows = [i](auto r, index_t k) {
            return r.at(ds(i * inner * 8 + k * inner * 4, inner * 4), ds(0, 128));
        };
        charge(work{.vreg_cheap = 3});
        emit_pipeline(add, {inner / 2}, in_specs<Tile, Tile>, out_specs<Tile>)(rows(a, 0), rows(b, 0),
                                                                               rows(c, 0));
        if (i % 5 != 4) {
            charge(work{.vector_loads = 2});
            emit_pipeline(
                [](auto x, auto y, auto z) {
                    ++runs;
                    store(z, load(x) * load(y));
                    charge(work{.explicit_seconds = 2e-9});
                },
                {inner / 2}, in_specs<Tile, Tile>, out_specs<Tile>)(rows(a, 1), rows(b, 1), rows(c, 1));
        }
        charge(work{.vreg_cheap = 1});
        if (i % 7 == 6)
            emit_pipeline(
                [](auto x, auto, auto z) {
                    ++runs;
                    sync_copy(x, z);
                },
                {inner / 2}, in_specs<Tile, Tile>, out_specs<Tile>)(rows(a, 0), rows(b, 0), rows(c, 0));
    };
    const off_on r = predict_off_on<Outer>(body);
    EXPECT_LT(r.runs, r.runs_off / 2);
    EXPECT_EQ(r.memo.stats.body_dmas, 9 * (inner / 2));
}

TEST(InvocationMemo, AllocationsAndPipelinesConfiguredByValuesAreKeptToo) {
    // emit_pipeline_with_allocations: the windows laid out in the kernel's scratch each step.
    using Sched = emit_pipeline_schedule<Grid<inner>, In<Arg<X, Tile>, Arg<X, Tile>>, Out<Arg<X, Tile>>>;
    using WithScratch = pallas_call<Grid<64>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>,
                                    Scratch<vmem, std::uint8_t, Sched::allocation_bytes()>, Chip<tpu::v5e>>;
    const auto with_allocs = [](auto a, auto b, auto c, auto buf) {
        const index_t i = program_id(0);
        const auto rows = [i](auto r) { return r.at(ds(i * inner * 8, inner * 8), ds(0, 128)); };
        auto [pipe, make_allocations] = emit_pipeline_with_allocations(add, {inner}, in_specs<Tile, Tile>, out_specs<Tile>);
        auto allocs = make_allocations(buf, rows(a), rows(b), rows(c));
        pipe(rows(a), rows(b), rows(c), allocs);
    };
    const off_on r = predict_off_on<WithScratch>(with_allocs);
    EXPECT_EQ(r.runs, inner * (1 + checks(63)));
    // dynamic_pipeline: the same pipeline configured by values.
    using Rows = dynamic_pipeline<In<Operand<float, 2>, Operand<float, 2>>, Out<Operand<float, 2>>>;
    Rows cfg;
    cfg.grid = {inner};
    constexpr auto row_map = [](index_t j) { return idx(j, 0); };
    cfg.in[0] = {.block = {8, 128}, .index_map = row_map};
    cfg.in[1] = {.block = {8, 128}, .index_map = row_map};
    cfg.out[0] = {.block = {8, 128}, .index_map = row_map};
    const auto by_values = [&cfg](auto a, auto b, auto c) {
        const index_t i = program_id(0);
        const auto rows = [i](auto r) { return r.at(ds(i * inner * 8, inner * 8), ds(0, 128)); };
        emit_pipeline(add, cfg)(rows(a), rows(b), rows(c));
    };
    const off_on r2 = predict_off_on<Outer>(by_values);
    EXPECT_EQ(r2.runs, inner * (1 + checks(63)));
    expect_same(r2.memo, r.every);
}

TEST(InvocationMemo, LongInvocationsAreNotKeptAndPredictTheSame) {
    // More ops than an invocation keeps: each runs.
    constexpr index_t long_inner = 12288;
    using L = Array<float, 3 * long_inner * 8, 128>;
    using Three = pallas_call<Grid<3>, In<Arg<L, AnyX>, Arg<L, AnyX>>, Out<Arg<L, AnyX>>, Chip<tpu::v5e>>;
    const auto body = [](auto a, auto b, auto c) {
        const index_t i = program_id(0);
        const auto rows = [i](auto r) { return r.at(ds(i * long_inner * 8, long_inner * 8), ds(0, 128)); };
        emit_pipeline(add, {long_inner}, in_specs<Tile, Tile>, out_specs<Tile>)(rows(a), rows(b), rows(c));
    };
    EXPECT_EQ(predict_off_on<Three>(body).runs, 3 * long_inner);
}

TEST(InvocationMemo, ManyDistinctInvocationsPredictTheSame) {
    // A body capturing the kernel's program id: every invocation its own, past the invocations a
    // core keeps and past the misses after which it stops looking.
    using Small = Array<float, 8, 128>;
    using Many = pallas_call<Grid<1200>, In<Arg<Small, AnyX>, Arg<Small, AnyX>>, Out<Arg<Small, AnyX>>,
                             Chip<tpu::v5e>>;
    const auto body = [](auto a, auto b, auto c) {
        const index_t i = program_id(0);
        emit_pipeline(
            [i](auto x, auto y, auto z) {
                ++runs;
                store(z, load(x) + load(y));
                charge(work{.explicit_seconds = 1e-9 * static_cast<double>(i % 7)});
            },
            {1}, in_specs<Tile, Tile>, out_specs<Tile>)(a, b, c);
    };
    EXPECT_EQ(predict_off_on<Many>(body).runs, 1200);
}

TEST(InvocationMemo, InnerBodyDependingOnHostStateIsK2) {
    // The inner body charges by a host counter: the first reuse (the second outer step) runs the
    // invocation again and finds other work.
    const auto body = nested([](auto x, auto y, auto z) {
        ++runs;
        store(z, load(x) + load(y));
        charge(work{.explicit_seconds = 1e-9 * (runs % 3)});
    });
    try {
        (void)predict_memo<Outer>(body, true);
        ADD_FAILURE() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "K2");
        const std::string m = e.what();
        EXPECT_NE(m.find("step 1 "), std::string::npos) << m;
        EXPECT_NE(m.find("emit_pipeline (pipeline 1)"), std::string::npos) << m;
        EXPECT_NE(m.find("memoize_body = false"), std::string::npos) << m;
    }
    EXPECT_GT(predict_memo<Outer>(body, false).device_time, 0);  // off: every invocation runs
}
