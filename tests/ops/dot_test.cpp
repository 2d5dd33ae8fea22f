// Tests ops/dot.hpp: TPU numerics per precision against loop references that emulate them
// (DEFAULT rounds inputs to bf16; HIGH sums the three bf16x3 products; HIGHEST is f32), bf16 and
// int8 operands, transposes, preferred types, padded MXU charges per chip, and the rules.
#include <gtest/gtest.h>

#include <ptpu/hw/presets.hpp>
#include <ptpu/ops/ops.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

// The reference: Σ_k f(a[i,k], b[k,j]) in double, f emulating one precision.
template <class F>
std::vector<double> ref_dot(const vec<float>& a, const vec<float>& b, F f) {
    std::vector<double> c(static_cast<std::size_t>(a.rows() * b.cols()), 0.0);
    for (index_t i = 0; i < a.rows(); ++i)
        for (index_t j = 0; j < b.cols(); ++j) {
            double s = 0;
            for (index_t k = 0; k < a.cols(); ++k) s += f(a(i, k), b(k, j));
            c[static_cast<std::size_t>(i * b.cols() + j)] = s;
        }
    return c;
}

double max_abs_diff(const vec<float>& got, const std::vector<double>& want) {
    double d = 0;
    for (index_t i = 0; i < got.rows(); ++i)
        for (index_t j = 0; j < got.cols(); ++j)
            d = std::max(d, std::abs(got(i, j) - want[static_cast<std::size_t>(i * got.cols() + j)]));
    return d;
}

const auto exact = [](float x, float y) { return double(x) * double(y); };
const auto one_pass = [](float x, float y) { return double(ref_bf16(x)) * double(ref_bf16(y)); };
const auto three_pass = [](float x, float y) {
    const double xh = ref_bf16(x), xl = ref_bf16(x - ref_bf16(x));
    const double yh = ref_bf16(y), yl = ref_bf16(y - ref_bf16(y));
    return xh * yh + xh * yl + xl * yh;
};

TEST(OpsDot, EachPrecisionMatchesItsEmulation) {
    env e;
    const auto a = random_vec(40, 300, 1, 2.0f), b = random_vec(300, 70, 2, 2.0f);
    // f32 accumulation over K = 300 terms of size ≤ 4: errors well below 1e-3.
    constexpr double acc_tol = 2e-4;
    const auto d = dot(a, b);
    const auto h = dot(a, b, {.prec = precision::high});
    const auto x = dot(a, b, {.prec = precision::highest});
    EXPECT_LT(max_abs_diff(d, ref_dot(a, b, one_pass)), acc_tol);
    EXPECT_LT(max_abs_diff(h, ref_dot(a, b, three_pass)), acc_tol);
    EXPECT_LT(max_abs_diff(x, ref_dot(a, b, exact)), acc_tol);
    // And the precisions really differ: one bf16 pass is far from the f32 product, bf16x3 much
    // closer (it drops lo·lo and the bits below 16), f32 closest.
    const double err_d = max_abs_diff(d, ref_dot(a, b, exact));
    const double err_h = max_abs_diff(h, ref_dot(a, b, exact));
    EXPECT_GT(err_d, 50 * acc_tol);
    EXPECT_LT(err_h, err_d / 20);
}

TEST(OpsDot, DefaultRoundsInputsToBf16) {
    env e;
    // 1 + 2^-10 is not a bf16 value: DEFAULT sees 1, HIGH and HIGHEST see it.
    const vec<float> a(farr::Constant(1, 256, 1.0f + 0x1p-10f));
    const vec<float> b(farr::Constant(256, 1, 1.0f));
    EXPECT_EQ(dot(a, b)(0, 0), 256.0f);
    EXPECT_EQ(dot(a, b, {.prec = precision::high})(0, 0), 256.0f + 0.25f);
    EXPECT_EQ(dot(a, b, {.prec = precision::highest})(0, 0), 256.0f + 0.25f);
}

TEST(OpsDot, Bf16OperandsAreExactProductsInF32) {
    env e;
    const auto af = random_vec(24, 200, 3, 2.0f), bf = random_vec(200, 40, 4, 2.0f);
    const auto a = cast<bf16>(af), b = cast<bf16>(bf);
    const vec<float> ar = cast<float>(a), br = cast<float>(b);
    const auto r = dot(a, b, {.prec = precision::highest});  // precision is moot for bf16
    static_assert(std::is_same_v<decltype(r), const vec<float>>);
    EXPECT_LT(max_abs_diff(r, ref_dot(ar, br, exact)), 2e-4);
    // preferred = bf16 rounds the f32 sum once: exact small-integer data makes it exact.
    const auto ai = cast<bf16>(cast<float>(iota<std::int32_t>(4, 300, 1) % 17 - 8));
    const auto bi = cast<bf16>(cast<float>(iota<std::int32_t>(300, 3, 0) % 13 - 6));
    const auto f = dot(ai, bi), p = dot(ai, bi, {.preferred = preferred<bf16>});
    for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 3; ++j) EXPECT_EQ(p(i, j), ref_bf16(f(i, j)));
    // 3 · 301 = 903 needs 10 significant bits: f32 keeps it, bf16 rounds to 904.
    const auto three = full<bf16>(1, 301, 3.0f), ones = full<bf16>(301, 1, 1.0f);
    EXPECT_EQ(dot(three, ones)(0, 0), 903.0f);
    EXPECT_EQ(dot(three, ones, {.preferred = preferred<bf16>})(0, 0), 904.0f);
    // The same options as a template argument (static shapes) round alike.
    EXPECT_EQ((dot<dot_options{.preferred = preferred<bf16>}>(three, ones)(0, 0)), 904.0f);
}

// The preferred element type is named by a type, like every other element type of the API: the
// dtype enumerators do not make one.
static_assert(preferred<bf16>.value == dtype::bf16 && dot_options{}.preferred == preferred<float>);
static_assert(!std::is_constructible_v<preferred_type, dtype>);
static_assert(!std::is_convertible_v<dtype, preferred_type>);

TEST(OpsDot, TransposesContractTheOtherDims) {
    env e;
    const auto a = random_vec(30, 50, 5, 2.0f), b = random_vec(50, 20, 6, 2.0f);
    const auto at = transpose(a), bt = transpose(b);
    const auto want = dot(a, b, {.prec = precision::highest});
    for (const bool ta : {false, true})
        for (const bool tb : {false, true}) {
            const auto r = dot(ta ? at : a, tb ? bt : b,
                               {.transpose_a = ta, .transpose_b = tb, .prec = precision::highest});
            ASSERT_EQ(r.shape(), want.shape());
            for (index_t i = 0; i < 30; ++i)
                for (index_t j = 0; j < 20; ++j) ASSERT_NEAR(r(i, j), want(i, j), 1e-4);
        }
    for (const precision p : {precision::default_, precision::high}) {
        const auto r = dot(at, bt, {.transpose_a = true, .transpose_b = true, .prec = p});
        const auto s = dot(a, b, {.prec = p});
        for (index_t i = 0; i < 30; ++i)
            for (index_t j = 0; j < 20; ++j) ASSERT_NEAR(r(i, j), s(i, j), 1e-5);
    }
}

TEST(OpsDot, Int8AccumulatesInInt32) {
    env e(&tpu::v5e);
    const auto a = cast<std::int8_t>(iota<std::int32_t>(33, 260, 1) * 7 % 255 - 127);
    const auto b = cast<std::int8_t>(iota<std::int32_t>(260, 17, 0) * 3 % 255 - 127);
    const work before = e.w();
    const auto r = dot(a, b);
    static_assert(std::is_same_v<decltype(r), const vec<std::int32_t>>);
    for (index_t i = 0; i < 33; ++i)
        for (index_t j = 0; j < 17; ++j) {
            std::int64_t s = 0;
            for (index_t k = 0; k < 260; ++k) s += std::int64_t{a(i, k)} * b(k, j);
            ASSERT_EQ(r(i, j), s);
        }
    // M = 33 streams as 64 rows (int8's 32-row sublane tile), K = 260 pads to 384, N = 17 to 128.
    EXPECT_EQ(e.w().mxu_int8_ops - before.mxu_int8_ops, 2.0 * 64 * 128 * 384);
    EXPECT_EQ(e.w().mxu_passes_flops, before.mxu_passes_flops);
    // Values out of int8 range (int32 intermediates) wrap as they enter the MXU.
    const vec<std::int8_t> w(iarr::Constant(1, 1, 130));
    EXPECT_EQ(dot(w, vec<std::int8_t>(iarr::Constant(1, 1, 1)))(0, 0), -126);
}

TEST(OpsDot, ChargesPaddedMxuFlopsPerPass) {
    const auto a = random_vec(100, 200, 7, 2.0f), b = random_vec(200, 300, 8, 2.0f);
    // K = 200 and N = 300 pad to the 128-wide MXU (256, 384); M = 100 only to f32's 8-row
    // sublane tile, 104 (docs/model.md §5, "The MXU's tiles").
    const double padded128 = 2.0 * 104 * 256 * 384;
    {
        env e(&tpu::v5p);
        (void)dot(a, b);
        EXPECT_EQ(e.w().mxu_passes_flops, padded128);
        (void)dot(a, b, {.prec = precision::high});
        EXPECT_EQ(e.w().mxu_passes_flops, padded128 * (1 + 3));
        (void)dot(a, b, {.prec = precision::highest});
        EXPECT_EQ(e.w().mxu_passes_flops, padded128 * (1 + 3 + 6));
        // Operands pushed once per dot: (100, 200) = 13·2, (200, 300) = 25·3 vregs. The result,
        // (100, 300) = 13·3 vregs, is popped through the MXU's pop slot: no vector store.
        EXPECT_EQ(e.w().vector_loads, 3 * (26 + 75));
        EXPECT_EQ(e.w().vector_stores, 0);
        EXPECT_EQ(e.w().vreg_cheap, 0);
    }
    {
        env e;  // no chip: 128
        (void)dot(a, b, {.prec = precision::highest});
        EXPECT_EQ(e.w().mxu_passes_flops, 6 * padded128);
    }
    {
        env e(&tpu::v6e);  // 256×256 MXU: K and N pad to 256 and 512, M to 104 (f32), 112 (bf16)
        (void)dot(a, b);
        EXPECT_EQ(e.w().mxu_passes_flops, 2.0 * 104 * 256 * 512);
        (void)dot(cast<bf16>(a), cast<bf16>(b), {.prec = precision::highest});
        EXPECT_EQ(e.w().mxu_passes_flops, 2.0 * 104 * 256 * 512 + 2.0 * 112 * 256 * 512);  // bf16: one pass
    }
}

TEST(OpsDot, TimingOnlyChargesTheSameAndComputesNothing) {
    work normal, timing;
    {
        env e(&tpu::v5e);
        (void)dot(random_vec(64, 96, 1, 2.0f), random_vec(96, 200, 2, 2.0f), {.prec = precision::high});
        normal = e.w();
    }
    {
        env e(&tpu::v5e, true);
        const auto r =
            dot(vec<float>(shape_only, 64, 96), vec<float>(shape_only, 96, 200), {.prec = precision::high});
        EXPECT_FALSE(r.has_data());
        EXPECT_EQ(r.shape(), (std::array<index_t, 2>{64, 200}));
        timing = e.w();
    }
    EXPECT_EQ(normal, timing);
}

// work.mxu_drains charged by f(acc, o) over two (16, 128) VMEM refs (acc holds ones), which must
// be the same on real data and in timing-only mode.
template <class F>
double drains_of(F f) {
    using blk = ref<float, vmem, 2, extents<16, 128>>;
    double d[2] = {-1, -1};
    for (int timing = 0; timing < 2; ++timing) {
        env e(&tpu::v5e, timing == 1);
        std::vector<float> acc(16 * 128, 1.0f), out(16 * 128);
        f(blk(acc.data(), {16, 128}), blk(out.data(), {16, 128}));
        d[timing] = e.w().mxu_drains;
    }
    EXPECT_EQ(d[0], d[1]) << "real data and timing-only charge different drains";
    return d[0];
}

// ops/vec.hpp, "MXU results": the first vector op (or dot) reading a dot's result waits for the
// systolic array to drain (one work.mxu_drains); a store and the acc + dot fold do not.
TEST(OpsDot, VectorReadersOfAResultWaitForItsDrain) {
    const auto a = random_vec(16, 256, 1, 1.0f), b = random_vec(256, 128, 2, 1.0f);
    const auto w = random_vec(128, 128, 3, 1.0f), bias = random_vec(1, 128, 4, 1.0f);
    // Stored, or folded into the matmul's accumulator (either order, in registers too): none.
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, dot(a, b)); }), 0);
    EXPECT_EQ(drains_of([&](auto acc, auto o) { store(o, load(acc) + dot(a, b)); }), 0);
    EXPECT_EQ(drains_of([&](auto acc, auto o) { store(o, dot(a, b) + load(acc)); }), 0);
    EXPECT_EQ(drains_of([&](auto acc, auto o) {
                  auto v = load(acc);
                  v += dot(a, b);
                  store(o, v);
              }),
              0);
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, cast<float>(dot(a, b))); }), 0);  // no op
    // Read by vector work: one, whatever the op.
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, exp(dot(a, b))); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, dot(a, b) * 0.5f); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, dot(a, b) + bias); }), 1);  // a broadcast add
    EXPECT_EQ(drains_of([&](auto acc, auto o) { store(o, where(load(acc) > 0.0f, dot(a, b), 0.0f)); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, exp(cast<float>(dot(a, b)))); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto) { (void)cast<bf16>(dot(a, b)); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto) { (void)sum(dot(a, b), c<1>); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto) { (void)transpose(dot(a, b)); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto) { (void)dot(a, b)(ds(0, 8), ds(0, 128)); }), 1);
    // The folded sum is itself an MXU result: a vector op reading it waits.
    EXPECT_EQ(drains_of([&](auto acc, auto o) { store(o, exp(load(acc) + dot(a, b))); }), 1);
    // Only the first reader waits: the values are in registers after it.
    EXPECT_EQ(drains_of([&](auto, auto o) {
                  const auto d = dot(a, b);
                  const auto m = max(d, c<1>);
                  store(o, exp(d - m));
              }),
              1);
    // The body waits once per level (ops/vec.hpp): two products of loaded values are both level
    // 1, and so is a copy of one.
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, exp(dot(a, b)) * exp(dot(a, b))); }), 1);
    EXPECT_EQ(drains_of([&](auto, auto o) {
                  const auto d = dot(a, b);
                  const auto d2 = d;
                  store(o, exp(d) + exp(d2));
              }),
              1);
    // A product of a product's function is level 2: two waits.
    EXPECT_EQ(drains_of([&](auto, auto) { (void)exp(dot(exp(dot(a, b)), transpose(b))); }), 2);
    // A failed op charges nothing and leaves the result unread.
    EXPECT_EQ(drains_of([&](auto, auto o) {
                  const auto d = dot(a, b);
                  EXPECT_EQ(rule_of([&] { (void)(d + random_vec(3, 5, 5, 1.0f)); }), "OP1");
                  auto v = random_vec(3, 5, 6, 1.0f);
                  EXPECT_EQ(rule_of([&] { v *= d; }), "OP1");
                  EXPECT_EQ(rule_of([&] { (void)dot(d, b); }), "OP1");  // (16, 128) · (256, 128)
                  store(o, exp(d));
              }),
              1);
    // x ⊕ x reads one result once.
    EXPECT_EQ(drains_of([&](auto, auto o) {
                  const auto d = dot(a, b);
                  store(o, d * d);
              }),
              1);
    // MXU -> MXU goes through the registers: one. A fresh vector value into the MXU: none.
    EXPECT_EQ(drains_of([&](auto, auto o) { store(o, dot(dot(a, b), w)); }), 1);
    EXPECT_EQ(drains_of([&](auto acc, auto o) { store(o, dot(exp(load(acc)), w)); }), 0);
    // The values are unchanged by any of this: the fold and the first reader compute as before.
    {
        env e(&tpu::v5e);
        std::vector<float> acc(16 * 128, 1.0f), out(16 * 128);
        using blk = ref<float, vmem, 2, extents<16, 128>>;
        const auto d = dot(a, b);
        store(blk(out.data(), {16, 128}), load(blk(acc.data(), {16, 128})) + dot(a, b));
        for (index_t i = 0; i < 16; ++i)
            for (index_t j = 0; j < 128; ++j)
                ASSERT_EQ(out[static_cast<std::size_t>(i * 128 + j)], 1.0f + d(i, j)) << i << "," << j;
        EXPECT_EQ(e.w().mxu_drains, 0);
    }
    // Outside a body nothing is charged.
    EXPECT_EQ(exp(dot(a, b)).rows(), 16);
}

TEST(OpsDot, ShapeAndPreferredRules) {
    env e;
    const auto a = random_vec(8, 16, 1, 2.0f), b = random_vec(8, 16, 2, 2.0f);
    try {
        (void)dot(a, b);
        FAIL() << "no error";
    } catch (const error& err) {
        EXPECT_EQ(err.rule(), "OP1");
        const std::string msg = err.what();
        EXPECT_NE(msg.find("(8, 16)"), std::string::npos) << msg;
    }
    EXPECT_EQ(e.w().mxu_passes_flops, 0);  // nothing charged for a failed dot
    EXPECT_EQ(dot(a, b, {.transpose_b = true}).shape(), (std::array<index_t, 2>{8, 8}));
    EXPECT_EQ(rule_of([&] { (void)dot(a, b, {.transpose_a = true, .preferred = preferred<std::int32_t>}); }),
              "OP2");
    const vec<std::int8_t> q(iarr::Zero(2, 2));
    EXPECT_EQ(rule_of([&] { (void)dot(q, q, {.preferred = preferred<bf16>}); }), "OP2");
    EXPECT_EQ(dot(q, q, {.preferred = preferred<std::int32_t>}).shape(), (std::array<index_t, 2>{2, 2}));
}

}  // namespace
