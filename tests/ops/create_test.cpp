// Tests ops/create.hpp and ops/layout.hpp: zeros, full, iota, *_like, broadcast_to, transpose,
// concatenate: values, shapes, charges and rules.
#include <gtest/gtest.h>

#include <ptpu/ops/ops.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

TEST(OpsCreate, ZerosFullAndLikes) {
    env e;
    const auto z = zeros<float>(8, 256);
    const auto f = full<bf16>(16, 128, 0.1);
    const auto b = full<bool>(3, 3, true);
    EXPECT_EQ(z(7, 255), 0.0f);
    EXPECT_EQ(f(15, 127), static_cast<float>(bf16(0.1f)));  // the value takes the dtype
    EXPECT_TRUE(b(2, 2));
    EXPECT_EQ(e.w().vreg_cheap, 2 + 1 + 1);
    const auto zl = zeros_like(f);
    EXPECT_EQ(zl.shape(), f.shape());
    std::vector<std::int8_t> buf(2 * 4 * 128);
    vmem_ref<std::int8_t, 3> r(buf.data(), {2, 4, 128});
    const vec<std::int8_t> fr = full_like(r, 7);
    EXPECT_EQ(fr.shape(), (std::array<index_t, 2>{8, 128}));
    EXPECT_EQ(fr(5, 5), 7);
    EXPECT_EQ(rule_of([] { (void)zeros<float>(-1, 4); }), "OP1");
}

TEST(OpsCreate, IotaAlongEachAxis) {
    env e;
    const auto r = iota<std::int32_t>(16, 200, 0);
    const auto c = iota<float>(16, 200, 1);
    for (index_t i = 0; i < 16; ++i)
        for (index_t j = 0; j < 200; ++j) {
            ASSERT_EQ(r(i, j), i);
            ASSERT_EQ(c(i, j), static_cast<float>(j));
        }
    EXPECT_EQ(e.w().vreg_cheap, 4 + 4);
    const auto h = iota<bf16>(1, 300, -1);  // bf16 rounds indices above 256
    EXPECT_EQ(h(0, 255), 255.0f);
    EXPECT_EQ(h(0, 257), 256.0f);
    EXPECT_EQ(h(0, 259), 260.0f);
    EXPECT_EQ(rule_of([] { (void)iota<float>(2, 2, 2); }), "OP1");
    // A causal mask, the usual use.
    const vec<bool> causal = iota<std::int32_t>(8, 8, 0) >= iota<std::int32_t>(8, 8, 1);
    EXPECT_TRUE(causal(3, 3));
    EXPECT_FALSE(causal(2, 3));
}

TEST(OpsCreate, IotaTakesAStaticAxis) {
    env e;
    // iota is a function object, so c<1> (a std::integral_constant) brings no std::iota in.
    const auto cols = iota<float>(c<8>, c<256>, c<1>);
    const auto rows = iota<std::int32_t>(8, 128, c<0>);
    static_assert(std::is_same_v<decltype(cols), const vec<float, 8, 256>>);
    for (index_t i = 0; i < 8; ++i) {
        ASSERT_EQ(cols(i, 255), 255.0f);
        ASSERT_EQ(rows(i, 127), i);
    }
    EXPECT_EQ(e.w().vreg_cheap, 2 + 1);
    EXPECT_EQ(rule_of([] { (void)iota<float>(2, 2, c<2>); }), "OP1");
    EXPECT_EQ(rule_of([] { (void)iota<float>(2, 2, index_t{1} << 40); }), "OP1");
}

TEST(OpsLayout, BroadcastTo) {
    env e;
    const vec<float> row(farr{{1.0f, 2.0f, 3.0f}});
    const auto b = broadcast_to(row, 16, 3);
    EXPECT_EQ(b(15, 2), 3.0f);
    EXPECT_EQ(e.w().vreg_cheap, 2);
    const auto same = broadcast_to(b, 16, 3);
    EXPECT_EQ(e.w().vreg_cheap, 2);  // unchanged shape: free
    EXPECT_EQ(same(0, 0), 1.0f);
    EXPECT_EQ(rule_of([&] { (void)broadcast_to(b, 8, 3); }), "OP1");  // never shrinks
    EXPECT_EQ(rule_of([&] { (void)broadcast_to(row, 4, 6); }), "OP1");
}

TEST(OpsLayout, TransposeAndConcatenate) {
    env e;
    const auto a = iota<float>(8, 256, 1) + iota<float>(8, 256, 0) * 1000.0f;
    const double base = e.w().vreg_cheap;
    const auto t = transpose(a);
    ASSERT_EQ(t.shape(), (std::array<index_t, 2>{256, 8}));
    EXPECT_EQ(t(200, 5), a(5, 200));
    // (256, 8) f32: 32 vregs through the transpose unit (XLU), none on the VALUs.
    EXPECT_EQ(e.w().xlu_vregs, 32);
    EXPECT_EQ(e.w().vreg_cheap, base);
    const auto v = concatenate(a, a, 0);
    ASSERT_EQ(v.shape(), (std::array<index_t, 2>{16, 256}));
    EXPECT_EQ(v(9, 3), a(1, 3));
    EXPECT_EQ(e.w().vreg_cheap, base);  // seam at row 8: whole vregs, free
    const auto h = concatenate(a(ds(0, 8), ds(0, 100)), a(ds(0, 8), ds(100, 28)), 1);
    ASSERT_EQ(h.shape(), (std::array<index_t, 2>{8, 128}));
    EXPECT_EQ(h(2, 120), a(2, 120));
    EXPECT_EQ(e.w().vreg_cheap, base + 2);  // one unaligned window, one unaligned seam
    EXPECT_EQ(rule_of([&] { (void)concatenate(a, t, 0); }), "OP1");
}

}  // namespace
