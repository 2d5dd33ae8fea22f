// The invocation memo of timing-only runs (docs/model.md §10, "The invocation memo"): an inner
// pipeline whose bodies only charge work is run once per distinct pipeline, body and set of
// answers (the kernel's program ids and core its maps and bodies read, and for a body that
// captures state what the kernel's body had asked before), checked again at the 1st, 2nd, 4th...
// reuse, and handed on from what was kept otherwise. Whatever the memo does, a prediction must be
// exactly the one made by running every invocation (run_options::memoize_body = false).
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <string>
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

template <class K, class Body>
report predict(const Body& body, bool memo) {
    K k{};
    k.options.memoize_body = memo;
    return k.predict(body);
}

// log2 checks: reuses 1, 2, 4, ... up to `reuses`.
constexpr index_t checks(index_t reuses) {
    index_t n = 0;
    for (index_t at = 1; at <= reuses; at *= 2) ++n;
    return n;
}

void expect_same(const report& a, const report& b) {
    EXPECT_EQ(a.device_time, b.device_time);
    EXPECT_EQ(a.exposed_dma, b.exposed_dma);
    EXPECT_EQ(a.body_exposed_dma, b.body_exposed_dma);
    EXPECT_EQ(a.ops, b.ops);
    EXPECT_EQ(a.hbm_bytes, b.hbm_bytes);
    for (int c = 0; c < b.cores; ++c) {
        const auto u = static_cast<std::size_t>(c);
        EXPECT_EQ(a.core[u].time, b.core[u].time);
        EXPECT_EQ(a.core[u].compute, b.core[u].compute);
        EXPECT_EQ(a.core[u].exposed_dma, b.core[u].exposed_dma);
        EXPECT_EQ(a.stats.vmem_peak[u], b.stats.vmem_peak[u]);
    }
    EXPECT_EQ(a.stats.steps, b.stats.steps);
    EXPECT_EQ(a.stats.inner_steps, b.stats.inner_steps);
    EXPECT_EQ(a.stats.inner_dmas, b.stats.inner_dmas);
    EXPECT_EQ(a.stats.inner_bytes, b.stats.inner_bytes);
    EXPECT_EQ(a.stats.body_dmas, b.stats.body_dmas);
    EXPECT_EQ(a.stats.total_work, b.stats.total_work);
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

// Inner bodies run (counted by captureless bodies: a capturing one is keyed by what the kernel's
// body asked before running it).
int runs = 0;

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
    runs = 0;
    const report every = predict<Outer>(body, false);
    EXPECT_EQ(runs, 64 * inner);
    runs = 0;
    const report memo = predict<Outer>(body, true);
    EXPECT_EQ(runs, inner * (1 + checks(63)));  // the first invocation, then checks at reuses 1, 2, 4...
    expect_same(memo, every);
    EXPECT_EQ(memo.stats.inner_steps, 64 * inner);
    EXPECT_FALSE(memo.steps.empty());
    EXPECT_FALSE(memo.inner_steps.empty());
    // Two cores: one memo each.
    runs = 0;
    const report every2 = predict<Outer2>(body, false);
    runs = 0;
    const report memo2 = predict<Outer2>(body, true);
    EXPECT_EQ(runs, 2 * inner * (1 + checks(31)));
    expect_same(memo2, every2);
}

TEST(InvocationMemo, WhatTheInnerBodyAsksOfTheKernelIsPartOfTheKey) {
    // The inner work follows the kernel's program id: no two invocations are the same (nothing is
    // reused), and the prediction is the same.
    const auto by_row = nested([](auto x, auto y, auto z) {
        ++runs;
        store(z, load(x) + load(y));
        charge(work{.explicit_seconds = 1e-9 * static_cast<double>(outer_program_id(0) % 3)});
    });
    runs = 0;
    const report every = predict<Outer>(by_row, false);
    runs = 0;
    const report memo = predict<Outer>(by_row, true);
    EXPECT_EQ(runs, 64 * inner);
    expect_same(memo, every);
    // On two cores, the core each runs on: one kept invocation per core.
    const auto by_core = nested([](auto x, auto y, auto z) {
        ++runs;
        store(z, load(x) + load(y));
        charge(work{.explicit_seconds = 1e-9 * (1.0 + core_index())});
    });
    runs = 0;
    const report every2 = predict<Outer2>(by_core, false);
    EXPECT_EQ(runs, 64 * inner);
    runs = 0;
    const report memo2 = predict<Outer2>(by_core, true);
    EXPECT_EQ(runs, 2 * inner * (1 + checks(31)));
    expect_same(memo2, every2);
    EXPECT_GT(memo2.core[1].compute, memo2.core[0].compute);
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
    runs = 0;
    const report every = predict<Two>(body, false);
    runs = 0;
    const report memo = predict<Two>(body, true);
    EXPECT_EQ(runs, 2 * inner * (1 + checks(15)));
    expect_same(memo, every);
    EXPECT_EQ(every.stats.inner_dmas, 16 * (3 * inner) + 16 * (inner + inner / 2 + inner));
}

TEST(InvocationMemo, ABodyCapturingStateIsKeyedByWhatTheKernelsBodyAsked) {
    // The inner body captures a value of the kernel's body (its program_id(0)): invocations are
    // the same only where that body's answers were, here per value of program_id(0).
    using Two = pallas_call<Grid<2, 16>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
    const auto body = [](auto a, auto b, auto c) {
        const index_t half = program_id(0);
        const auto rows = [](auto r) { return r.at(ds(0, inner * 8), ds(0, 128)); };
        emit_pipeline(
            [half](auto x, auto y, auto z) {
                ++runs;
                store(z, load(x) + load(y));
                charge(work{.explicit_seconds = 1e-8 * static_cast<double>(half)});
            },
            {inner}, in_specs<Tile, Tile>, out_specs<Tile>)(rows(a), rows(b), rows(c));
    };
    runs = 0;
    const report every = predict<Two>(body, false);
    runs = 0;
    const report memo = predict<Two>(body, true);
    EXPECT_EQ(runs, 2 * inner * (1 + checks(15)));
    expect_same(memo, every);
    // Asking program_id(1) too, before the pipeline: every invocation is its own.
    const auto asks_more = [](auto a, auto b, auto c) {
        const index_t half = program_id(0) + 0 * program_id(1);
        const auto rows = [](auto r) { return r.at(ds(0, inner * 8), ds(0, 128)); };
        emit_pipeline(
            [half](auto x, auto y, auto z) {
                ++runs;
                store(z, load(x) + load(y));
                charge(work{.explicit_seconds = 1e-8 * static_cast<double>(half)});
            },
            {inner}, in_specs<Tile, Tile>, out_specs<Tile>)(rows(a), rows(b), rows(c));
    };
    runs = 0;
    const report memo2 = predict<Two>(asks_more, true);
    EXPECT_EQ(runs, 32 * inner);
    expect_same(memo2, every);
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
    runs = 0;
    const report every = predict<Outer>(body, false);
    const int all = runs;
    runs = 0;
    const report memo = predict<Outer>(body, true);
    EXPECT_LT(runs, all / 2);
    expect_same(memo, every);
    EXPECT_EQ(memo.stats.body_dmas, 9 * (inner / 2));
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
    runs = 0;
    const report every = predict<WithScratch>(with_allocs, false);
    runs = 0;
    const report memo = predict<WithScratch>(with_allocs, true);
    EXPECT_EQ(runs, inner * (1 + checks(63)));
    expect_same(memo, every);
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
    runs = 0;
    const report every2 = predict<Outer>(by_values, false);
    runs = 0;
    const report memo2 = predict<Outer>(by_values, true);
    EXPECT_EQ(runs, inner * (1 + checks(63)));
    expect_same(memo2, every2);
    expect_same(memo2, every);
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
    runs = 0;
    const report every = predict<Three>(body, false);
    runs = 0;
    const report memo = predict<Three>(body, true);
    EXPECT_EQ(runs, 3 * long_inner);
    expect_same(memo, every);
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
        (void)predict<Outer>(body, true);
        ADD_FAILURE() << "no error";
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "K2");
        const std::string m = e.what();
        EXPECT_NE(m.find("step 1 "), std::string::npos) << m;
        EXPECT_NE(m.find("emit_pipeline (pipeline 1)"), std::string::npos) << m;
        EXPECT_NE(m.find("memoize_body = false"), std::string::npos) << m;
    }
    EXPECT_GT(predict<Outer>(body, false).device_time, 0);  // off: every invocation runs
}
