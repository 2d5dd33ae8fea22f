// Tests ops/reduce.hpp: sum, max, min and mean along each axis and over all elements (keepdims),
// against loops; NaN propagation; integer wrap; empty axes; the charged cheap ops.
#include <gtest/gtest.h>

#include <ptpu/ops/ops.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

TEST(OpsReduce, AlongEachAxisKeepsTheDim) {
    env e;
    const auto v = random_vec(20, 300, 1, 4.0f);
    const auto s1 = sum(v, 1), s0 = sum(v, 0), mx1 = max(v, -1), mn0 = min(v, -2);
    const auto me1 = mean(v, 1);
    ASSERT_EQ(s1.shape(), (std::array<index_t, 2>{20, 1}));
    ASSERT_EQ(s0.shape(), (std::array<index_t, 2>{1, 300}));
    ASSERT_EQ(mx1.shape(), (std::array<index_t, 2>{20, 1}));
    ASSERT_EQ(mn0.shape(), (std::array<index_t, 2>{1, 300}));
    for (index_t i = 0; i < 20; ++i) {
        double s = 0;
        float m = -INFINITY;
        for (index_t j = 0; j < 300; ++j) {
            s += v(i, j);
            m = std::max(m, v(i, j));
        }
        EXPECT_NEAR(s1(i, 0), s, 1e-3);
        EXPECT_NEAR(me1(i, 0), s / 300, 1e-5);
        EXPECT_EQ(mx1(i, 0), m);
    }
    for (index_t j = 0; j < 300; ++j) {
        double s = 0;
        float m = INFINITY;
        for (index_t i = 0; i < 20; ++i) {
            s += v(i, j);
            m = std::min(m, v(i, j));
        }
        EXPECT_NEAR(s0(0, j), s, 1e-4);
        EXPECT_EQ(mn0(0, j), m);
    }
    // keepdims: the result broadcasts straight back (softmax-style normalisation).
    const auto centred = v - max(v, 1);
    EXPECT_EQ(centred(3, 4), v(3, 4) - mx1(3, 0));
}

TEST(OpsReduce, OverAllGivesOneByOne) {
    env e;
    const auto v = random_vec(9, 130, 2, 4.0f);
    double s = 0;
    float mx = -INFINITY, mn = INFINITY;
    for (index_t i = 0; i < 9; ++i)
        for (index_t j = 0; j < 130; ++j) {
            s += v(i, j);
            mx = std::max(mx, v(i, j));
            mn = std::min(mn, v(i, j));
        }
    ASSERT_EQ(sum(v).shape(), (std::array<index_t, 2>{1, 1}));
    EXPECT_NEAR(sum(v)(0, 0), s, 1e-3);
    EXPECT_EQ(max(v)(0, 0), mx);
    EXPECT_EQ(min(v)(0, 0), mn);
    EXPECT_NEAR(mean(v)(0, 0), s / (9 * 130), 1e-6);
}

TEST(OpsReduce, CostIsInputVregsPlusCrossLaneOrSublaneSteps) {
    env e;
    const auto v = random_vec(16, 256, 3, 4.0f);  // 4 f32 vregs
    (void)sum(v, 1);                              // out (16, 1): 2 vregs · log2(128) = 7 steps
    EXPECT_EQ(e.w().vreg_cheap, 4 + 2 * 7);
    (void)max(v, 0);  // out (1, 256): 2 vregs · log2(8) = 3 steps
    EXPECT_EQ(e.w().vreg_cheap, 18 + 4 + 2 * 3);
    (void)min(v);  // one vreg: 7 + 3
    EXPECT_EQ(e.w().vreg_cheap, 28 + 4 + 10);
    const vec<bf16> h(farr::Zero(32, 128));  // 2 packed vregs; 16 rows per vreg: 4 steps
    (void)sum(h, 0);
    EXPECT_EQ(e.w().vreg_cheap, 42 + 2 + 1 * 4);
    (void)mean(v, 1);  // the sum plus one multiply per output vreg
    EXPECT_EQ(e.w().vreg_cheap, 48 + 18 + 2);
    EXPECT_EQ(e.w().vreg_medium, 0);
}

TEST(OpsReduce, NaNPropagatesThroughMaxAndMin) {
    env e;
    farr a = farr::Constant(3, 4, 1.0f);
    a(1, 2) = std::numeric_limits<float>::quiet_NaN();
    const vec<float> v(a);
    EXPECT_TRUE(std::isnan(max(v, 1)(1, 0)));
    EXPECT_EQ(max(v, 1)(0, 0), 1.0f);
    EXPECT_TRUE(std::isnan(min(v, 0)(0, 2)));
    EXPECT_TRUE(std::isnan(max(v)(0, 0)));
    EXPECT_TRUE(std::isnan(sum(v)(0, 0)));
}

TEST(OpsReduce, IntegersWrapAndBf16AccumulatesInF32) {
    env e;
    const vec<std::int32_t> big(iarr::Constant(1, 2, std::numeric_limits<std::int32_t>::max()));
    EXPECT_EQ(sum(big)(0, 0), -2);  // wraps
    const vec<std::int8_t> q(iarr::Constant(1, 4, 100));
    EXPECT_EQ(sum(q, 1)(0, 0), 400);  // int32 compute; wraps only on store
    EXPECT_EQ(max(q, 1)(0, 0), 100);
    // 1 + 256 · 2^-9 in bf16 steps would stay 1; in f32 it is 1.5.
    farr a = farr::Constant(1, 257, 0x1p-9f);
    a(0, 0) = 1.0f;
    EXPECT_EQ(sum(vec<bf16>(a))(0, 0), 1.5f);
}

TEST(OpsReduce, EmptyAxesAndBadAxes) {
    env e;
    const vec<float> empty(farr(0, 5));
    const auto s = sum(empty, 0);
    ASSERT_EQ(s.shape(), (std::array<index_t, 2>{1, 5}));
    EXPECT_EQ(s(0, 4), 0.0f);
    EXPECT_EQ(rule_of([&] { (void)max(empty, 0); }), "OP1");
    EXPECT_EQ(rule_of([&] { (void)min(empty); }), "OP1");
    EXPECT_EQ(sum(empty, 1).shape(), (std::array<index_t, 2>{0, 1}));
    EXPECT_EQ(rule_of([&] { (void)sum(random_vec(2, 2, 1, 4.0f), 2); }), "OP1");
    EXPECT_EQ(rule_of([&] { (void)mean(random_vec(2, 2, 1, 4.0f), -3); }), "OP1");
}

TEST(OpsReduce, TimingOnlyChargesTheSame) {
    auto body = [](const vec<float>& v) {
        const auto m = max(v, 1);
        const auto p = exp(v - m);
        return p / sum(p, 1) + mean(v) + min(v, 0);
    };
    work normal, timing;
    {
        env e;
        (void)body(random_vec(24, 384, 4, 4.0f));
        normal = e.w();
    }
    {
        env e(true);
        const auto r = body(vec<float>(shape_only, 24, 384));
        EXPECT_FALSE(r.has_data());
        timing = e.w();
    }
    EXPECT_EQ(normal, timing);
}

}  // namespace
