// Tests sim/cost.hpp: work -> time on a chip (time_of) against hand-computed numbers on v5e, the
// concurrent-units rule, the MXU result latency that adds after it (work.mxu_drains), and rules
// C1 (bad work), C2 (int8 without an int8 rate), C3 (bad model).
#include <gtest/gtest.h>

#include <ptpu/hw/presets.hpp>
#include <ptpu/sim/cost.hpp>

#include <limits>
#include <string>

namespace {

using ptpu::work;
using ptpu::sim::time_of;
namespace tpu = ptpu::tpu;

// Relative comparison: the expected values are exact decimal arithmetic, the results IEEE.
void expect_close(double actual, double expected) {
    EXPECT_NEAR(actual, expected, 1e-12 * expected + 1e-300) << "expected " << expected;
}

// time_of is usable in constant expressions.
static_assert(time_of(work{.mxu_passes_flops = 1.97e9}, tpu::v5e).total > 0.99e-5);
static_assert(time_of(work{}, tpu::v5e).total == 0);
static_assert(time_of(work{.mxu_drains = 1}, tpu::v5e).total > 0.17e-6);

TEST(CostTimeOf, KnownWorkOnV5e) {
    // v5e: bf16 1.97e14, int8 3.94e14, clock 1.5e9, 4 VALUs/lane, 3 loads and 1 store per cycle.
    const work w{
        .mxu_passes_flops = 1.97e9,  // 10 µs
        .mxu_int8_ops = 3.94e8,      // 1 µs
        .vreg_cheap = 6000,          // 6000 + 2·1000 + 16·100 = 9600 vreg ops / 6e9 per s
        .vreg_medium = 1000,         // and 1000 EUP pushes / 1.5e9 per s
        .vreg_expensive = 100,
        .vector_loads = 4500,   // / 4.5e9 = 1 µs
        .vector_stores = 3000,  // / 1.5e9 = 2 µs
        .scalar_ops = 6000,     // / (1.5e9 · 2) = 2 µs
        .explicit_seconds = 0.5e-6,
    };
    const auto t = time_of(w, tpu::v5e);
    expect_close(t.mxu, 11e-6);
    expect_close(t.vpu, 9600 / 6e9);
    expect_close(t.eup, 1000 / 1.5e9);
    expect_close(t.load, 1e-6);
    expect_close(t.store, 2e-6);
    expect_close(t.scalar, 2e-6);
    expect_close(t.explicit_s, 0.5e-6);
    expect_close(t.total, 11.5e-6);  // the MXU is the busiest unit, plus the explicit charge
}

TEST(CostTimeOf, UnitsOverlapTheBusiestDecides) {
    // VPU-bound body: 60000 cheap vreg ops (10 µs) beside 3 µs of loads and 1 µs of MXU.
    const work w{.mxu_passes_flops = 1.97e8, .vreg_cheap = 60000, .vector_loads = 13500};
    const auto t = time_of(w, tpu::v5e);
    expect_close(t.vpu, 10e-6);
    expect_close(t.load, 3e-6);
    expect_close(t.total, 10e-6);
    // Store-bound: one store per cycle is the narrowest port.
    const auto s = time_of(work{.vreg_cheap = 4, .vector_loads = 3, .vector_stores = 3}, tpu::v5e);
    expect_close(s.total, 3 / 1.5e9);
}

TEST(CostTimeOf, ClassFactorsAndCustomModel) {
    const work w{.vreg_medium = 600, .vreg_expensive = 60};
    const auto d = time_of(w, tpu::v5e);
    expect_close(d.vpu, (2 * 600 + 16 * 60) / 6e9);
    expect_close(d.eup, 600 / 1.5e9);  // one EUP push per medium vreg, 1 per cycle [est]
    const ptpu::sim::cost_model m{.medium_factor = 1, .expensive_factor = 2, .scalar_ops_per_cycle = 1};
    const auto c = time_of(work{.vreg_medium = 600, .vreg_expensive = 60, .scalar_ops = 3e3}, tpu::v5e, m);
    expect_close(c.vpu, (600 + 2 * 60) / 6e9);
    expect_close(c.scalar, 2e-6);
    expect_close(c.total, 2e-6);
    // Transcendental-bound: 3000 exp vregs take 2 µs on the EUP, their VALU part 1 µs.
    const auto e = time_of(work{.vreg_medium = 3000}, tpu::v5e);
    expect_close(e.eup, 2e-6);
    expect_close(e.vpu, 1e-6);
    expect_close(e.total, 2e-6);
    // v7x: the vector units run at the [est] vector clock (2.2 GHz), not the MXU-derived one.
    expect_close(time_of(work{.vreg_cheap = 8.8e3}, tpu::v7x).vpu, 8.8e3 / (4 * tpu::v7x.vector_clock_hz));
    // v4 has 2 VALUs per lane at 1.05 GHz.
    expect_close(time_of(work{.vreg_cheap = 2.1e3}, tpu::v4).vpu, 1e-6);
}

TEST(CostTimeOf, NegativeOrNonFiniteWorkIsC1) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const work bad[] = {
        {.mxu_passes_flops = -1},    {.mxu_int8_ops = nan},  {.vreg_cheap = inf},   {.vreg_medium = -0.5},
        {.vreg_expensive = nan},     {.vector_loads = -inf}, {.vector_stores = -2}, {.scalar_ops = nan},
        {.explicit_seconds = -1e-9}, {.mxu_drains = -1},     {.mxu_drains = inf},
    };
    for (const work& w : bad) {
        try {
            (void)time_of(w, tpu::v5e);
            ADD_FAILURE() << "no error";
        } catch (const ptpu::error& e) {
            EXPECT_EQ(e.rule(), "C1");
            EXPECT_NE(std::string(e.what()).find("ptpu[C1] work: work."), std::string::npos) << e.what();
        }
    }
}

TEST(CostTimeOf, Int8OnAChipWithoutInt8RateIsC2) {
    for (const auto* c : {&tpu::v4, &tpu::v7x}) {
        try {
            (void)time_of(work{.mxu_int8_ops = 1e6}, *c);
            ADD_FAILURE() << "no error on " << c->name;
        } catch (const ptpu::error& e) {
            EXPECT_EQ(e.rule(), "C2");
            EXPECT_NE(std::string(e.what()).find("this chip has no int8 MXU rate"), std::string::npos);
        }
    }
    // bf16 work is fine there, and zero int8 work costs nothing.
    expect_close(time_of(work{.mxu_passes_flops = 1.375e8}, tpu::v4).total, 1e-6);
    // int8 runs at the int8 rate where there is one.
    expect_close(time_of(work{.mxu_int8_ops = 1.84e9}, tpu::v6e).mxu, 1e-6);
}

TEST(CostModel, InvalidModelIsC3) {
    const ptpu::sim::cost_model bad[] = {
        {.medium_factor = -1},
        {.expensive_factor = std::numeric_limits<double>::quiet_NaN()},
        {.scalar_ops_per_cycle = 0},
        {.onchip_vregs_per_cycle = -1},
        {.mxu_drain_cycles_per_dim = -2},
        {.mxu_pop_cycles = std::numeric_limits<double>::infinity()},
    };
    for (const auto& m : bad) {
        try {
            (void)time_of(work{.vreg_cheap = 1}, tpu::v5e, m);
            ADD_FAILURE() << "no error";
        } catch (const ptpu::error& e) {
            EXPECT_EQ(e.rule(), "C3");
        }
    }
}

TEST(CostTimeOf, MxuDrainsAddAfterTheMax) {
    // One drain: (2 · mxu_dim + 8) cycles of the vector clock. v5e: (256 + 8) / 1.5e9 = 176 ns.
    expect_close(ptpu::sim::mxu_drain_seconds(tpu::v5e), 176e-9);
    // v4: 264 cycles at its 1.05 GHz clock: 251 ns.
    expect_close(ptpu::sim::mxu_drain_seconds(tpu::v4), 264 / 1.05e9);
    // v6e and 7x: a 256-wide array, 520 cycles at the vector clock of 4 MXUs of 256²
    // (docs/model.md §5): 9.2e14 / 524288 = 1.755 GHz, 296 ns; 1.155e15 / 524288 = 2.203 GHz, 236 ns.
    expect_close(ptpu::sim::mxu_drain_seconds(tpu::v6e), 520 * 524288 / 9.2e14);
    expect_close(ptpu::sim::mxu_drain_seconds(tpu::v7x), 520 * 524288 / 1.155e15);

    // A VPU-bound body (10 µs of cheap ops, 1 µs of MXU) whose vector ops wait for 3 MXU
    // results: the waits overlap nothing, so they add after the max, before explicit charges.
    const work w{.mxu_passes_flops = 1.97e8, .vreg_cheap = 60000, .explicit_seconds = 1e-6, .mxu_drains = 3};
    const auto t = time_of(w, tpu::v5e);
    expect_close(t.vpu, 10e-6);
    expect_close(t.mxu, 1e-6);
    expect_close(t.drain, 3 * 176e-9);
    expect_close(t.total, 10e-6 + 528e-9 + 1e-6);
    // The same on 7x: its MXU and VALUs are faster, the drain is 520 cycles.
    const auto t7 = time_of(work{.vreg_cheap = 4400, .mxu_drains = 2}, tpu::v7x);
    expect_close(t7.vpu, 4400 / (4 * 1.155e15 / 524288));
    expect_close(t7.total, t7.vpu + 2 * 520 * 524288 / 1.155e15);
    // No drain charged: the max alone, as before.
    expect_close(time_of(work{.vreg_cheap = 60000}, tpu::v5e).total, 10e-6);
    // The latency is a cost-model field: 0 and 0 turn it off, other counts scale it.
    const ptpu::sim::cost_model off{.mxu_drain_cycles_per_dim = 0, .mxu_pop_cycles = 0};
    expect_close(time_of(w, tpu::v5e, off).total, 11e-6);
    EXPECT_EQ(time_of(w, tpu::v5e, off).drain, 0);
    const ptpu::sim::cost_model slow{.mxu_drain_cycles_per_dim = 3, .mxu_pop_cycles = 16};
    expect_close(time_of(w, tpu::v5e, slow).drain, 3 * (3 * 128 + 16) / 1.5e9);
}

// work.mxu_drains takes part in +=, == and so in the body memo's comparisons (runtime/runner.hpp).
TEST(CostWork, MxuDrainsAddAndCompare) {
    work a{.vreg_cheap = 2, .mxu_drains = 1};
    const work b{.vreg_cheap = 2};
    EXPECT_FALSE(a == b);
    EXPECT_FALSE(a.empty());
    EXPECT_FALSE(work{.mxu_drains = 1}.empty());
    a += work{.mxu_drains = 2};
    EXPECT_EQ(a.mxu_drains, 3);
    EXPECT_EQ(a.vreg_cheap, 2);
}

TEST(CostModel, OnChipBandwidth) {
    // One 4 KiB vreg per cycle: 1.5e9 · 4096 B/s on v5e.
    expect_close(ptpu::sim::onchip_bytes_per_s(tpu::v5e), 1.5e9 * 4096);
}

}  // namespace
