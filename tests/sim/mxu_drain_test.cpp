// The MXU result latency on whole pallas_calls (docs/model.md §5, work.mxu_drains): a body whose
// vector op reads a dot's result is slower, by exactly one drain per step (and the op, which
// then cannot overlap the dot), than the same work without that dependency, and a chain of
// dependent dot -> vector steps is bound by it.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <sstream>
#include <string>

using namespace ptpu;

namespace {

constexpr chip hw = tpu::v5e;
constexpr index_t n_steps = 8;
constexpr auto same = [](auto) { return idx(0, 0); };
// Every block is the same at every step: fetched once, written back once, so each step is its
// overhead plus its body's compute and a per-step difference in compute is a difference in time.
using Call = pallas_call<Grid<n_steps>, Chip<hw>, Semantics<arbitrary>,
                         In<Arg<Array<float, 128, 512>, BlockSpec<Block<128, 512>, same>>,
                            Arg<Array<float, 512, 128>, BlockSpec<Block<512, 128>, same>>,
                            Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>>,
                         Out<Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>>>;

// exp reads the product: it waits for the MXU result.
constexpr auto dependent = [](auto a, auto b, auto x, auto o) {
    [[maybe_unused]] const auto xv = load(x);
    const auto d = dot(load(a), load(b));
    store(o, exp(d));
};
// The same ops and charges, but exp reads x: nothing waits for the product.
constexpr auto independent = [](auto a, auto b, auto x, auto o) {
    const auto xv = load(x);
    [[maybe_unused]] const auto d = dot(load(a), load(b));
    store(o, exp(xv));
};

report predict(auto body, bool memoize = true) {
    Call k{};
    k.options.memoize_body = memoize;
    return k.predict(body);
}

}  // namespace

TEST(MxuDrain, DependentVectorOpWaitsOneDrainPerStep) {
    const double drain = sim::mxu_drain_seconds(hw);  // (2 · 128 + 8) / 1.5e9 = 176 ns
    EXPECT_NEAR(drain, 176e-9, 1e-20);
    for (const bool memoize : {true, false}) {
        const report dep = predict(dependent, memoize);
        const report ind = predict(independent, memoize);
        // The same work, except the one drain per step and the chain: exp after the dot ...
        EXPECT_EQ(dep.stats.total_work.mxu_drains, n_steps);
        EXPECT_EQ(ind.stats.total_work.mxu_drains, 0);
        work w = dep.stats.total_work, wi = ind.stats.total_work;
        w.mxu_drains = 0;
        w.chain = wi.chain = {};
        EXPECT_EQ(w, wi);
        EXPECT_EQ(dep.stats.total_work.chain.vreg_medium, n_steps * 16.0);  // (128, 128) f32: 16 vregs
        EXPECT_EQ(ind.stats.total_work.chain.vreg_medium, 0);               // the dot alone is longer
        // ... and exactly that much longer: the wait overlaps nothing, and exp's 16 EUP pushes
        // (16 / 1.5e9 = 10.67 ns, the slower of EUP and VALU) wait for the dot (docs/model.md §5).
        const double extra = drain + 16 / 1.5e9;
        EXPECT_NEAR(dep.device_time - ind.device_time, n_steps * extra, 1e-9 * n_steps * extra) << dep << ind;
        EXPECT_NEAR(dep.mxu_drain_time, n_steps * drain, 1e-9 * n_steps * drain);
        EXPECT_EQ(ind.mxu_drain_time, 0);
        // The busiest unit is the same in both: the step overhead of these tiny bodies.
        EXPECT_EQ(dep.bound, ind.bound);
        // The printed report says how many waits there were (and nothing when there are none).
        std::ostringstream d, i;
        d << dep;
        i << ind;
        EXPECT_NE(d.str().find("MXU drains         8 waited for, 1.408 us"), std::string::npos) << d.str();
        EXPECT_EQ(i.str().find("MXU drains"), std::string::npos) << i.str();
    }
}

namespace {
using Chain = pallas_call<Grid<n_steps>, Chip<hw>, Semantics<arbitrary>,
                          In<Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>,
                             Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>>,
                          Out<Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>>>;
constexpr int links = 4;
// v = exp(v · w), four times: each exp waits for the dot before it (the dots read exp's fresh
// values, which is not charged: docs/model.md §5).
constexpr auto chain = [](auto x, auto w, auto o) {
    const auto wv = load(w);
    vec<float> v = load(x);
    for (int i = 0; i < links; ++i) v = exp(dot(v, wv));
    store(o, v);
};
}  // namespace

TEST(MxuDrain, ChainOfDependentMatmulsIsBoundByTheDrains) {
    const report r = Chain{}.predict(chain);
    const double drain = sim::mxu_drain_seconds(hw);
    EXPECT_EQ(r.stats.total_work.mxu_drains, n_steps * links);
    EXPECT_NEAR(r.mxu_drain_time, n_steps * links * drain, 1e-9 * drain);
    // 4 drains (704 ns) per step against 85 ns of MXU work and the ≈0.3 µs step overhead.
    EXPECT_EQ(r.bound, "MXU drain") << r;
    EXPECT_GT(r.device_time, n_steps * (links * drain + hw.step_overhead_s)) << r;
    // Without the latency (a cost model with 0 cycles) the same kernel is overhead-bound.
    Chain k{};
    k.options.costs.mxu_drain_cycles_per_dim = 0;
    k.options.costs.mxu_pop_cycles = 0;
    const report off = k.predict(chain);
    EXPECT_EQ(off.stats.total_work, r.stats.total_work);
    EXPECT_EQ(off.mxu_drain_time, 0);
    EXPECT_EQ(off.bound, "step overhead") << off;
    EXPECT_NEAR(r.device_time - off.device_time, n_steps * links * drain, 1e-9 * n_steps * links * drain);
}
