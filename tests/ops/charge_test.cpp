// Tests ops/charge.hpp: explicit charges add to the running body's work in every mode, and
// negative or non-finite times are rule C1 (at run time; constant_seconds at compile time,
// see tests/compile_fail/ops_rules.cpp).
#include <gtest/gtest.h>

#include <ptpu/ops/ops.hpp>

#include <limits>
#include <string>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

static_assert((2_us).value() == 2e-6 && (1.5_ms).value() == 1.5e-3);
static_assert((3_ns).value() == 3e-9 && (1_s).value() == 1.0);
static_assert(constant_seconds(0.25).value() == 0.25 && (-0_s).value() == 0);

TEST(OpsCharge, ExplicitChargesAdd) {
    for (const bool timing : {false, true}) {
        env e(timing);
        charge_seconds(1.5e-6);
        charge_seconds(2.5_us);
        work w;
        w.vreg_cheap = 10;
        w.scalar_ops = 3;
        charge(w);
        EXPECT_DOUBLE_EQ(e.w().explicit_seconds, 4e-6);
        EXPECT_EQ(e.w().vreg_cheap, 10);
        EXPECT_EQ(e.w().scalar_ops, 3);
    }
}

TEST(OpsCharge, NegativeOrNonFiniteSecondsAreC1) {
    env e;
    // Not constants: clang rejects constant ones at compile time (diagnose_if).
    volatile double neg = -1e-6, nan = std::numeric_limits<double>::quiet_NaN(),
                    inf = std::numeric_limits<double>::infinity();
    EXPECT_EQ(rule_of([&] { charge_seconds(neg); }), "C1");
    EXPECT_EQ(rule_of([&] { charge_seconds(nan); }), "C1");
    EXPECT_EQ(rule_of([&] { charge_seconds(inf); }), "C1");
    EXPECT_EQ(e.w().explicit_seconds, 0);
    charge_seconds(0.0);
    try {
        charge_seconds(neg);
    } catch (const error& err) {
        const std::string msg = err.what();
        EXPECT_EQ(msg.rfind("ptpu[C1] charge_seconds:", 0), 0u) << msg;
        EXPECT_NE(msg.find("-0.000001"), std::string::npos) << msg;
    }
}

TEST(OpsCharge, OutsideAKernelChecksAndDrops) {
    EXPECT_NO_THROW(charge_seconds(1.0));
    volatile double minus_inf = -std::numeric_limits<double>::infinity();
    EXPECT_EQ(rule_of([&] { charge_seconds(minus_inf); }), "C1");
}

}  // namespace
