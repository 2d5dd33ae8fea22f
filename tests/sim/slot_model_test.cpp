// Known answers for the body model of docs/model.md §5: the busiest slot of the bundle as the
// lower bound, the dependence chains across units (a mask feeding a dot, a masked epilogue), the
// MXU's tiles as Mosaic lowers a dot, transposed operands, one clock for the bundle, and MXU
// drains counted per level. Every expected time is derived by hand in the comment above it.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>
#include <ptpu/report/html.hpp>

#include <sstream>
#include <string>

using namespace ptpu;

namespace {

constexpr double rel = 1e-9;

// v5e: f_v = clock = 1.5 GHz [src]; 4 VALUs: 6e9 vreg ops/s; MXU peak 1.97e14.
constexpr chip v5e = tpu::v5e;
// 7x: f_v = 1.155e15 / (4 · 256² · 2) = 2.2028e9 [est]; clock_hz (2 MXUs) twice that.
constexpr chip v7x = tpu::v7x;

}  // namespace

// ---- time_of: the slots and the chain --------------------------------------------------------

TEST(SlotModel, BusiestSlotBoundsIndependentWork) {
    // 1 µs of MXU work (1.97e8 FLOPs) and 0.5 µs of VALU work (3000 vregs at 6e9/s), no chain
    // between them: they overlap, 1 µs, bound by the MXU.
    work w;
    w.mxu_passes_flops = 1.97e8;
    w.vreg_cheap = 3000;
    const sim::work_time t = sim::time_of(w, v5e);
    EXPECT_NEAR(t.mxu, 1e-6, 1e-6 * rel);
    EXPECT_NEAR(t.vpu, 0.5e-6, 0.5e-6 * rel);
    EXPECT_NEAR(t.slots, 1e-6, 1e-6 * rel);
    EXPECT_EQ(t.chain, 0);
    EXPECT_NEAR(t.total, 1e-6, 1e-6 * rel);
    EXPECT_EQ(t.bound, sim::slot::mxu);
    EXPECT_STREQ(sim::name(t.bound), "MXU");
}

TEST(SlotModel, ChainAcrossUnitsAddsTheirTimes) {
    // The same work, all on one chain (the VALU ops compute the dot's operand): 1 + 0.5 µs.
    work w;
    w.mxu_passes_flops = 1.97e8;
    w.vreg_cheap = 3000;
    w.chain.mxu_passes_flops = 1.97e8;
    w.chain.vreg_cheap = 3000;
    const sim::work_time t = sim::time_of(w, v5e);
    EXPECT_NEAR(t.slots, 1e-6, 1e-6 * rel);  // the lower bound is kept
    EXPECT_NEAR(t.chain, 1.5e-6, 1.5e-6 * rel);
    EXPECT_NEAR(t.total, 1.5e-6, 1.5e-6 * rel);
    EXPECT_EQ(t.bound, sim::slot::chain);
    EXPECT_STREQ(sim::name(t.bound), "dependence chain");
    // A chain of one unit's work is that unit's time: the slot still names the bound.
    work m;
    m.mxu_passes_flops = m.chain.mxu_passes_flops = 1.97e8;
    EXPECT_EQ(sim::time_of(m, v5e).bound, sim::slot::mxu);
}

TEST(SlotModel, MediumOpOnTheChainWaitsForTheSlowerOfValuAndEup) {
    // v5e: a medium op is 2 VALU ops (2 / 6e9 = 0.333 ns) beside one EUP push (1 / 1.5e9 =
    // 0.667 ns): on a chain it takes the EUP's 0.667 ns; 1500 of them 1 µs.
    work w;
    w.vreg_medium = w.chain.vreg_medium = 1500;
    const sim::work_time t = sim::time_of(w, v5e);
    EXPECT_NEAR(t.eup, 1e-6, 1e-6 * rel);
    EXPECT_NEAR(t.chain, 1e-6, 1e-6 * rel);
    EXPECT_EQ(t.bound, sim::slot::eup);
}

TEST(SlotModel, EverySlotIssuesAtTheVectorClock) {
    // 7x: 3 loads, 1 store, 1 XLU vreg and 2 scalar ops per cycle of f_v = 2.2028 GHz.
    const double f = v7x.vector_hz();
    EXPECT_NEAR(f, 1.155e15 / (4.0 * 256 * 256 * 2), 1);
    work w;
    w.vector_loads = 3 * f * 1e-6;  // 1 µs (at clock_hz, twice f, it would be 0.5 µs)
    w.vector_stores = f * 0.8e-6;   // 0.8 µs
    w.xlu_vregs = f * 0.6e-6;       // 0.6 µs
    w.scalar_ops = 2 * f * 0.4e-6;  // 0.4 µs
    const sim::work_time t = sim::time_of(w, v7x);
    EXPECT_NEAR(t.load, 1e-6, 1e-6 * rel);
    EXPECT_NEAR(t.store, 0.8e-6, 1e-6 * rel);
    EXPECT_NEAR(t.xlu, 0.6e-6, 1e-6 * rel);
    EXPECT_NEAR(t.scalar, 0.4e-6, 1e-6 * rel);
    EXPECT_NEAR(t.total, 1e-6, 1e-6 * rel);
    EXPECT_EQ(t.bound, sim::slot::vector_load);
    EXPECT_STREQ(sim::name(sim::slot::vector_alu), "vector ALU");
    EXPECT_STREQ(sim::name(sim::slot::vector_store), "vector store");
    EXPECT_STREQ(sim::name(sim::slot::xlu), "XLU");
}

TEST(SlotModel, NegativeChainIsC1) {
    work w;
    w.chain.vreg_cheap = -1;
    try {
        (void)sim::time_of(w, v5e);
        FAIL() << "expected C1";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "C1");
    }
}

// ---- Whole calls: the chain the ops record ---------------------------------------------------

namespace {

constexpr index_t n_steps = 8;
constexpr auto same = [](auto) { return idx(0, 0); };
// Blocks fetched once: each step is its overhead plus its body. x (256, 512) f32 is 128 vregs,
// w (512, 256) 128, m and o (256, 256) 64 each.
using Masked = pallas_call<Grid<n_steps>, Chip<v5e>, Semantics<arbitrary>,
                           In<Arg<Array<float, 256, 512>, BlockSpec<Block<256, 512>, same>>,
                              Arg<Array<float, 512, 256>, BlockSpec<Block<512, 256>, same>>,
                              Arg<Array<float, 256, 256>, BlockSpec<Block<256, 256>, same>>>,
                           Out<Arg<Array<float, 256, 256>, BlockSpec<Block<256, 256>, same>>>>;

// The K-remainder mask: the dot reads the masked tile (compare and select, 2 × 128 vreg ops).
constexpr auto masked_operand = [](auto x, auto w, auto, auto o) {
    const auto xv = load(x);
    store(o, dot(where(xv > 0.0f, xv, 0.0f), load(w)));
};
// The same ops, but the dot reads x itself: the mask is independent work.
constexpr auto independent_mask = [](auto x, auto w, auto, auto o) {
    const auto xv = load(x);
    [[maybe_unused]] const auto masked = where(xv > 0.0f, xv, 0.0f);
    store(o, dot(xv, load(w)));
};
// A masked epilogue: the product is selected by a mask before its store.
constexpr auto masked_epilogue = [](auto x, auto w, auto m, auto o) {
    const auto d = dot(load(x), load(w));
    store(o, where(load(m) > 0.0f, d, 0.0f));
};

// MXU: 2 · 256 · 256 · 512 = 67,108,864 FLOPs (M 256 rows, K and N multiples of 128) / 1.97e14.
constexpr double mxu_s = 67108864.0 / 1.97e14;  // 340.65 ns
constexpr double valu_s = 1.0 / 6e9;             // one vreg op on v5e's 4 VALUs

}  // namespace

TEST(SlotModel, MaskFeedingTheDotCannotOverlapIt) {
    const report dep = Masked{}.predict(masked_operand);
    ASSERT_GE(dep.steps.size(), 2u);
    // Chain: compare + select (256 vreg ops, 42.67 ns), then the dot (340.65 ns): 383.32 ns;
    // the busiest slot alone is the MXU's 340.65 ns.
    const sim::step_times& s = dep.steps[1];
    EXPECT_NEAR(s.compute, mxu_s + 256 * valu_s, 1e-15) << dep;
    EXPECT_EQ(s.bound, sim::slot::chain);
    EXPECT_EQ(dep.compute_bound, "dependence chain");
    EXPECT_EQ(dep.stats.total_work.chain.vreg_cheap, n_steps * 256.0);
    std::ostringstream text;
    print_steps(text, dep);
    EXPECT_NE(text.str().find("dependence chain"), std::string::npos) << text.str();
    std::ostringstream summary;
    summary << dep;
    EXPECT_NE(summary.str().find("bodies bound by    dependence chain"), std::string::npos) << summary.str();
    // The HTML comparison names the bodies' slot beside the kernel's bound.
    Masked drawn{};
    drawn.options.timeline = true;  // the page draws the best configuration's timeline
    html_kernel k;
    k.title = "masked";
    k.configs.push_back({"dep", drawn.predict(masked_operand)});
    EXPECT_NE(to_html({k}).find("(bodies: dependence chain)"), std::string::npos);

    // The mask off the dot's path: the MXU bounds the body, 340.65 ns (the mask's 42.67 ns
    // overlaps it).
    const report ind = Masked{}.predict(independent_mask);
    EXPECT_NEAR(ind.steps[1].compute, mxu_s, 1e-15) << ind;
    EXPECT_EQ(ind.steps[1].bound, sim::slot::mxu);
    EXPECT_EQ(ind.compute_bound, "MXU");
}

TEST(SlotModel, MaskedEpilogueWaitsForTheDotAndItsDrain) {
    const report r = Masked{}.predict(masked_epilogue);
    // Chain: dot (340.65 ns), then the select over the (256, 256) result (64 vreg ops,
    // 10.67 ns); the mask's compare (64 ops) runs beside the dot. The select waits for the
    // result's drain once: (2 · 128 + 8) / 1.5e9 = 176 ns. 340.65 + 10.67 + 176 = 527.32 ns.
    const double drain = sim::mxu_drain_seconds(v5e);
    EXPECT_NEAR(drain, 176e-9, 1e-20);
    EXPECT_NEAR(r.steps[1].compute, mxu_s + 64 * valu_s + drain, 1e-15) << r;
    EXPECT_EQ(r.steps[1].bound, sim::slot::chain);
}

// ---- The MXU's tiles -------------------------------------------------------------------------

namespace {

template <chip C, index_t M>
using Tile = pallas_call<Grid<1>, Chip<C>, In<Arg<Array<float, M, 256>, BlockSpec<Block<M, 256>, same>>,
                                             Arg<Array<float, 256, 256>, BlockSpec<Block<256, 256>, same>>>,
                         Out<Arg<Array<float, M, 256>, BlockSpec<Block<M, 256>, same>>>>;
constexpr auto product = [](auto a, auto b, auto o) { store(o, dot(load(a), load(b))); };

template <chip C, index_t M>
double flops_of() {
    return Tile<C, M>{}.predict(product).stats.total_work.mxu_passes_flops;
}

}  // namespace

TEST(SlotModel, MxuPadsKAndNToTheArrayAndMOnlyToTheSublaneTile) {
    // 7x (256²): K = N = 256. M = 128 streams 128 rows: 2 · 128 · 256 · 256 (half of padding M
    // to 256); M = 8 pays the 32 rows a 256² bf16 weight tile takes to latch (256² · 2 B =
    // 32 vregs at one per cycle).
    EXPECT_EQ((flops_of<v7x, 128>()), 2.0 * 128 * 256 * 256);
    EXPECT_EQ((flops_of<v7x, 256>()), 2.0 * 256 * 256 * 256);
    EXPECT_EQ((flops_of<v7x, 8>()), 2.0 * 32 * 256 * 256);
    // v5e (128²): a tile latches in 8 pushes, so M = 8 is 8 rows; M = 100 pads to 104.
    EXPECT_EQ((flops_of<v5e, 8>()), 2.0 * 8 * 256 * 256);
    EXPECT_EQ((flops_of<v5e, 104>()), 2.0 * 104 * 256 * 256);
    // Time on 7x at M = 128: 2 · 128 · 256² / 1.155e15 = 14.53 ns of MXU.
    work w;
    w.mxu_passes_flops = flops_of<v7x, 128>();
    EXPECT_NEAR(sim::time_of(w, v7x).mxu, 2.0 * 128 * 256 * 256 / 1.155e15, 1e-18);
}

// ---- Transposed operands ---------------------------------------------------------------------

namespace {
using Tr = pallas_call<Grid<1>, Chip<v5e>, In<Arg<Array<float, 512, 128>, BlockSpec<Block<512, 128>, same>>,
                                              Arg<Array<float, 512, 256>, BlockSpec<Block<512, 256>, same>>,
                                              Arg<Array<float, 256, 512>, BlockSpec<Block<256, 512>, same>>>,
                       Out<Arg<Array<float, 128, 256>, BlockSpec<Block<128, 256>, same>>>>;
}  // namespace

TEST(SlotModel, TransposedLhsGoesThroughTheXluTransposedRhsIsFree) {
    // dot(a.T, b): a (512, 128) is 64 vregs through the XLU (64 / 1.5e9 = 42.67 ns), then the
    // product (128 rows, K 512, N 256: 2 · 128 · 512 · 256 / 1.97e14 = 170.33 ns): the chain is
    // 213.0 ns.
    const report ta = Tr{}.predict([](auto a, auto b, auto, auto o) {
        store(o, dot<dot_options{.transpose_a = true}>(load(a), load(b)));
    });
    EXPECT_EQ(ta.stats.total_work.xlu_vregs, 64);
    const double mxu = 2.0 * 128 * 512 * 256 / 1.97e14;
    EXPECT_NEAR(ta.steps[0].compute, 64 / 1.5e9 + mxu, 1e-15) << ta;
    EXPECT_EQ(ta.steps[0].bound, sim::slot::chain);
    // The same product as transpose(a) times c.T, c (256, 512): the explicit transpose is the
    // same 64 XLU vregs on the chain, and the transposed rhs adds nothing (the MXU latches its
    // tiles transposed): 213.0 ns again.
    const report tb = Tr{}.predict([](auto a, auto, auto c, auto o) {
        store(o, dot<dot_options{.transpose_b = true}>(transpose(load(a)), load(c)));
    });
    EXPECT_EQ(tb.stats.total_work.xlu_vregs, 64);
    EXPECT_NEAR(tb.steps[0].compute, 64 / 1.5e9 + mxu, 1e-15) << tb;
}

// ---- MXU drains per level --------------------------------------------------------------------

namespace {
using Mlp = pallas_call<Grid<1>, Chip<v5e>, In<Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>,
                                               Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>,
                                               Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>>,
                        Out<Arg<Array<float, 128, 128>, BlockSpec<Block<128, 128>, same>>>>;
}  // namespace

TEST(SlotModel, DrainsCountLevelsNotResults) {
    // g and u are both level 1 (computed from loaded values): g · logistic(g) · u waits once.
    const report one = Mlp{}.predict([](auto x, auto wg, auto wu, auto o) {
        const auto xv = load(x);
        const auto g = dot(xv, load(wg));
        store(o, g * logistic(g) * dot(xv, load(wu)));
    });
    EXPECT_EQ(one.stats.total_work.mxu_drains, 1);
    // The same products in the other order of evaluation: the same count.
    const report other = Mlp{}.predict([](auto x, auto wg, auto wu, auto o) {
        const auto xv = load(x);
        const auto u = dot(xv, load(wu));
        const auto g = dot(xv, load(wg));
        store(o, u * (g * logistic(g)));
    });
    EXPECT_EQ(other.stats.total_work.mxu_drains, 1);
    // A product of a product's function is level 2: two waits.
    const report two = Mlp{}.predict([](auto x, auto w1, auto w2, auto o) {
        const auto h = exp(dot(load(x), load(w1)));
        store(o, exp(dot(h, load(w2))));
    });
    EXPECT_EQ(two.stats.total_work.mxu_drains, 2);
}

TEST(SlotModel, NonPositiveXluOrPushRateIsH1) {
    chip c = tpu::v5e;
    c.xlu_vregs_per_cycle = 0;
    EXPECT_EQ(chip_problem(c), "xlu_vregs_per_cycle or mxu_push_vregs_per_cycle is not positive");
    c = tpu::v5e;
    c.mxu_push_vregs_per_cycle = -1;
    try {
        validate(c);
        FAIL() << "expected H1";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "H1");
    }
}
