// Tests ops/elementwise.hpp: every binary and unary op against plain-loop references, NumPy
// broadcasting, scalars on either side, integer wrap and division conventions, masks, where,
// cast (bf16 RNE, saturation), compound assignment, exact charges per cost class, timing-only.
#include <gtest/gtest.h>

#include <ptpu/ops/ops.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

vec<float> random_vec(index_t r, index_t c, unsigned seed, float lo = -4.0f, float hi = 4.0f) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    farr a(r, c);
    for (index_t i = 0; i < r; ++i)
        for (index_t j = 0; j < c; ++j) a(i, j) = d(g);
    return vec<float>(a);
}

template <class T>
vec<T> make(index_t r, index_t c, std::function<compute_t<T>(index_t, index_t)> f) {
    typename vec<T>::array_type a(r, c);
    for (index_t i = 0; i < r; ++i)
        for (index_t j = 0; j < c; ++j) a(i, j) = f(i, j);
    return vec<T>(a);
}

// ---- Compile-time surface ----------------------------------------------------------------------

template <class A, class B>
concept addable = requires(A a, B b) {
    a + b;
};
static_assert(addable<vec<float>, vec<float>> && addable<vec<float>, float>);
static_assert(addable<double, vec<float>> && addable<vec<bf16>, bf16>);
static_assert(!addable<vec<float>, std::string>);  // not a scalar
static_assert(!addable<vec<float>, int*>);
static_assert(std::is_same_v<decltype(vec<float>{} < 1.0f), vec<bool>>);
static_assert(std::is_same_v<decltype(vec<bf16>{} == vec<bf16>{}), vec<bool>>);
static_assert(std::is_same_v<decltype(cast<bf16>(vec<float>{})), vec<bf16>>);
template <class T>
concept castable_to_double = requires(vec<float> v) {
    cast<T>(v);
};
static_assert(castable_to_double<std::int8_t> && !castable_to_double<double>);  // T1 types only

// ---- Binary ops against loops ------------------------------------------------------------------

template <class Op, class Ref>
void expect_binary(const char* what, Op op, Ref ref, const vec<float>& a, const vec<float>& b) {
    const auto r = op(a, b);
    ASSERT_EQ(r.rows(), a.rows());
    for (index_t i = 0; i < a.rows(); ++i)
        for (index_t j = 0; j < a.cols(); ++j)
            ASSERT_EQ(r(i, j), ref(a(i, j), b(i, j))) << what << " at " << i << "," << j;
}

TEST(OpsElementwise, ArithmeticMatchesLoops) {
    env e;
    const auto a = random_vec(24, 300, 1);
    const auto b = random_vec(24, 300, 2, 0.5f, 3.0f);
    expect_binary(
        "+", [](auto& x, auto& y) { return x + y; }, std::plus<float>{}, a, b);
    expect_binary(
        "-", [](auto& x, auto& y) { return x - y; }, std::minus<float>{}, a, b);
    expect_binary(
        "*", [](auto& x, auto& y) { return x * y; }, std::multiplies<float>{}, a, b);
    expect_binary(
        "/", [](auto& x, auto& y) { return x / y; }, std::divides<float>{}, a, b);
    expect_binary(
        "maximum", [](auto& x, auto& y) { return maximum(x, y); },
        [](float x, float y) { return std::max(x, y); }, a, b);
    expect_binary(
        "minimum", [](auto& x, auto& y) { return minimum(x, y); },
        [](float x, float y) { return std::min(x, y); }, a, b);
    const auto p = pow(b, a);
    for (index_t i = 0; i < a.rows(); ++i)
        for (index_t j = 0; j < a.cols(); ++j)
            ASSERT_NEAR(p(i, j), std::pow(b(i, j), a(i, j)),
                        1e-5f * std::max(1.0f, std::abs(std::pow(b(i, j), a(i, j)))));
}

TEST(OpsElementwise, ComparisonsGiveMasks) {
    env e;
    const auto a = make<float>(8, 130, [](index_t i, index_t) { return float(i % 3) - 1; });
    const auto b = make<float>(8, 130, [](index_t, index_t j) { return float(j % 3) - 1; });
    const vec<bool> lt = a<b, le = a <= b, gt = a> b, ge = a >= b, eq = a == b, ne = a != b;
    for (index_t i = 0; i < 8; ++i)
        for (index_t j = 0; j < 130; ++j) {
            const float x = a(i, j), y = b(i, j);
            ASSERT_EQ(lt(i, j), x < y);
            ASSERT_EQ(le(i, j), x <= y);
            ASSERT_EQ(gt(i, j), x > y);
            ASSERT_EQ(ge(i, j), x >= y);
            ASSERT_EQ(eq(i, j), x == y);
            ASSERT_EQ(ne(i, j), x != y);
        }
    EXPECT_EQ(e.w().vreg_cheap, 6 * 2);  // (8, 130) f32: 2 vregs per compare
}

TEST(OpsElementwise, ScalarsOnEitherSide) {
    env e;
    const auto a = random_vec(8, 128, 3, 1.0f, 2.0f);
    const vec<float> l = 3.0f - a, r = a - 3.0, q = 1 / a, m = maximum(a, 1.5f);
    const vec<bool> c = 1.5f < a;
    for (index_t j = 0; j < 128; ++j) {
        EXPECT_EQ(l(0, j), 3.0f - a(0, j));
        EXPECT_EQ(r(0, j), a(0, j) - 3.0f);
        EXPECT_EQ(q(0, j), 1.0f / a(0, j));
        EXPECT_EQ(m(0, j), std::max(a(0, j), 1.5f));
        EXPECT_EQ(c(0, j), 1.5f < a(0, j));
    }
    // A scalar takes the vec's dtype first (weak typing): bf16(0.1) multiplies a bf16 vec.
    const vec<bf16> h(farr::Constant(1, 1, 3.0f));
    EXPECT_EQ((h * 0.1)(0, 0), 3.0f * ref_bf16(0.1f));
}

TEST(OpsElementwise, BroadcastingFollowsNumPy) {
    env e;
    const auto m = random_vec(16, 256, 4);
    const auto row = random_vec(1, 256, 5);
    const auto col = random_vec(16, 1, 6);
    const auto one = random_vec(1, 1, 7);
    const auto a = m + row, b = col * m, c = m - one, d = row + col;
    ASSERT_EQ(d.shape(), (std::array<index_t, 2>{16, 256}));
    for (index_t i = 0; i < 16; ++i)
        for (index_t j = 0; j < 256; ++j) {
            ASSERT_EQ(a(i, j), m(i, j) + row(0, j));
            ASSERT_EQ(b(i, j), col(i, 0) * m(i, j));
            ASSERT_EQ(c(i, j), m(i, j) - one(0, 0));
            ASSERT_EQ(d(i, j), row(0, j) + col(i, 0));
        }
    EXPECT_EQ(e.w().vreg_cheap, 4 * 4);  // each output (16, 256) is 4 vregs
    try {
        (void)(m + random_vec(8, 256, 8));
        FAIL() << "no error";
    } catch (const error& err) {
        EXPECT_EQ(err.rule(), "OP1");
        const std::string msg = err.what();
        EXPECT_NE(msg.find("(16, 256)"), std::string::npos) << msg;
        EXPECT_NE(msg.find("(8, 256)"), std::string::npos) << msg;
    }
    EXPECT_EQ(rule_of([&] { (void)(row + random_vec(1, 128, 9)); }), "OP1");
    EXPECT_EQ(e.w().vreg_cheap, 16);  // failed ops charge nothing
}

TEST(OpsElementwise, CostIsOneOpPerOutputVreg) {
    env e;
    const auto a = random_vec(8, 128, 1), b = random_vec(8, 128, 2);
    (void)(a + b);
    EXPECT_EQ(e.w().vreg_cheap, 1);
    (void)(random_vec(1, 1, 3) + random_vec(1, 1, 4));
    EXPECT_EQ(e.w().vreg_cheap, 2);  // a 1×1 add costs a whole vreg
    (void)(random_vec(16, 256, 3) + random_vec(16, 256, 4));
    EXPECT_EQ(e.w().vreg_cheap, 6);
    const vec<bf16> h(farr::Zero(16, 128));
    (void)(h + h);
    EXPECT_EQ(e.w().vreg_cheap, 7);  // (16, 128) bf16: one packed vreg
    const vec<std::int8_t> q(iarr::Zero(32, 128));
    (void)(q * q);
    EXPECT_EQ(e.w().vreg_cheap, 8);  // (32, 128) int8: one vreg
    (void)(a / b);
    (void)exp(a);
    (void)rsqrt(a);
    EXPECT_EQ(e.w().vreg_medium, 3);
    (void)sin(a);
    (void)cos(a);
    EXPECT_EQ(e.w().vreg_expensive, 2);
    (void)where(a < b, a, b);
    EXPECT_EQ(e.w().vreg_cheap, 10);  // compare + select
    (void)cast<bf16>(random_vec(16, 128, 5));
    EXPECT_EQ(e.w().vreg_cheap, 12);  // counted on the f32 source: 2 vregs
    (void)cast<float>(a);
    EXPECT_EQ(e.w().vreg_cheap, 12);  // identity cast: free
    EXPECT_EQ(e.w().vector_loads, 0);
    EXPECT_EQ(e.w().mxu_passes_flops, 0);
}

TEST(OpsElementwise, EveryUnaryOpMatchesTheLibm) {
    env e;
    const auto a = random_vec(8, 200, 11, -3.0f, 3.0f);
    const auto p = random_vec(8, 200, 12, 0.01f, 5.0f);  // positive arguments
    struct one {
        const char* name;
        vec<float> got;
        const vec<float>* arg;
        float (*ref)(float);
        float tol;  // relative, Eigen's vectorised kernels are within a few ulps
    };
    const one cases[] = {
        {"neg", -a, &a, [](float x) { return -x; }, 0},
        {"abs", abs(a), &a, [](float x) { return std::abs(x); }, 0},
        {"floor", floor(a), &a, [](float x) { return std::floor(x); }, 0},
        {"ceil", ceil(a), &a, [](float x) { return std::ceil(x); }, 0},
        {"exp", exp(a), &a, [](float x) { return std::exp(x); }, 2e-6f},
        {"log", log(p), &p, [](float x) { return std::log(x); }, 2e-6f},
        {"log1p", log1p(p), &p, [](float x) { return std::log1p(x); }, 2e-6f},
        {"expm1", expm1(a), &a, [](float x) { return std::expm1(x); }, 2e-6f},
        {"tanh", tanh(a), &a, [](float x) { return std::tanh(x); }, 4e-6f},
        {"logistic", logistic(a), &a, [](float x) { return 1 / (1 + std::exp(-x)); }, 4e-6f},
        {"rsqrt", rsqrt(p), &p, [](float x) { return 1 / std::sqrt(x); }, 2e-6f},
        {"sqrt", sqrt(p), &p, [](float x) { return std::sqrt(x); }, 2e-6f},
        {"reciprocal", reciprocal(p), &p, [](float x) { return 1 / x; }, 2e-6f},
        {"sin", sin(a), &a, [](float x) { return std::sin(x); }, 4e-6f},
        {"cos", cos(a), &a, [](float x) { return std::cos(x); }, 4e-6f},
    };
    for (const one& c : cases)
        for (index_t i = 0; i < 8; ++i)
            for (index_t j = 0; j < 200; ++j) {
                const float want = c.ref((*c.arg)(i, j));
                ASSERT_NEAR(c.got(i, j), want, c.tol * std::max(1.0f, std::abs(want)))
                    << c.name << "(" << (*c.arg)(i, j) << ")";
            }
    // Per class, one op per output vreg (8, 200) f32 = 2 vregs.
    EXPECT_EQ(e.w().vreg_cheap, 4 * 2);
    EXPECT_EQ(e.w().vreg_medium, 9 * 2);
    EXPECT_EQ(e.w().vreg_expensive, 2 * 2);
}

TEST(OpsElementwise, SpecialValues) {
    env e;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const vec<float> a(farr{{nan, 1.0f, -0.0f, 0.0f}});
    const vec<float> b(farr{{1.0f, nan, 0.0f, -1.0f}});
    const auto mx = maximum(a, b), mn = minimum(a, b);
    EXPECT_TRUE(std::isnan(mx(0, 0)) && std::isnan(mx(0, 1)));  // NaN propagates
    EXPECT_TRUE(std::isnan(mn(0, 0)) && std::isnan(mn(0, 1)));
    EXPECT_EQ((1.0f / b)(0, 2), inf);
    EXPECT_EQ(log(b)(0, 2), -inf);
    EXPECT_TRUE(std::isnan(sqrt(b)(0, 3)));
    EXPECT_FALSE((a == a)(0, 0));  // NaN is unequal to itself
    EXPECT_TRUE((a != a)(0, 0));
}

TEST(OpsElementwise, IntegersWrapAndFollowXlaDivision) {
    env e;
    constexpr std::int32_t imax = std::numeric_limits<std::int32_t>::max();
    constexpr std::int32_t imin = std::numeric_limits<std::int32_t>::min();
    const vec<std::int32_t> a(iarr{{imax, imin, 7, -7, 7, imin}});
    const vec<std::int32_t> b(iarr{{1, -1, 0, 2, -2, -1}});
    const auto s = a + b, d = a - b, p = a * b, q = a / b, r = a % b;
    EXPECT_EQ(s(0, 0), imin);  // INT_MAX + 1 wraps
    EXPECT_EQ(d(0, 1), imin + 1);
    EXPECT_EQ(p(0, 0), imax);
    EXPECT_EQ(p(0, 1), imin);  // INT_MIN * -1 wraps
    EXPECT_EQ(q(0, 2), -1);    // x / 0 = -1
    EXPECT_EQ(r(0, 2), 7);     // x % 0 = x
    EXPECT_EQ(q(0, 3), -3);    // truncates toward zero
    EXPECT_EQ(r(0, 3), -1);    // sign of the dividend (lax.rem)
    EXPECT_EQ(q(0, 4), -3);
    EXPECT_EQ(r(0, 4), 1);
    EXPECT_EQ(q(0, 5), imin);  // INT_MIN / -1
    EXPECT_EQ(r(0, 5), 0);
    EXPECT_EQ((-a)(0, 1), imin);
    EXPECT_EQ(abs(a)(0, 1), imin);
    EXPECT_EQ(abs(a)(0, 3), 7);
    const auto m = make<std::int32_t>(1, 3, [](index_t, index_t j) { return int(j) * 5; });
    EXPECT_EQ((m & 6)(0, 1), 4);
    EXPECT_EQ((m | 1)(0, 2), 11);
    EXPECT_EQ((m ^ m)(0, 2), 0);
    EXPECT_EQ((~m)(0, 1), ~5);
    EXPECT_EQ(maximum(m, 6)(0, 0), 6);
    EXPECT_EQ((m % 4)(0, 2), 2);
}

TEST(OpsElementwise, MaskLogic) {
    env e;
    const auto a = make<float>(2, 4, [](index_t i, index_t j) { return float(j) - float(i); });
    const vec<bool> p = a > 0.0f, q = a < 2.0f;
    const vec<bool> both = p & q, either = p | q, one = p ^ q, np = !p, tp = ~p;
    for (index_t i = 0; i < 2; ++i)
        for (index_t j = 0; j < 4; ++j) {
            EXPECT_EQ(both(i, j), p(i, j) && q(i, j));
            EXPECT_EQ(either(i, j), p(i, j) || q(i, j));
            EXPECT_EQ(one(i, j), p(i, j) != q(i, j));
            EXPECT_EQ(np(i, j), !p(i, j));
            EXPECT_EQ(tp(i, j), !p(i, j));
        }
    EXPECT_EQ((p == true)(0, 1), true);
}

TEST(OpsElementwise, WhereSelectsAndBroadcasts) {
    env e;
    const auto a = random_vec(16, 128, 21), b = random_vec(16, 128, 22);
    const vec<bool> m = a > b;
    const auto w = where(m, a, b);
    const auto ws = where(m, a, -1.0f);
    const auto sw = where(m, 0.0, b);
    const auto col = random_vec(16, 1, 23);
    const auto wc = where(col > 0.0f, a, b);  // a (16, 1) mask broadcast over columns
    for (index_t i = 0; i < 16; ++i)
        for (index_t j = 0; j < 128; ++j) {
            ASSERT_EQ(w(i, j), std::max(a(i, j), b(i, j)));
            ASSERT_EQ(ws(i, j), m(i, j) ? a(i, j) : -1.0f);
            ASSERT_EQ(sw(i, j), m(i, j) ? 0.0f : b(i, j));
            ASSERT_EQ(wc(i, j), col(i, 0) > 0.0f ? a(i, j) : b(i, j));
        }
    EXPECT_EQ(rule_of([&] { (void)where(m, a, random_vec(8, 128, 1)); }), "OP1");
}

TEST(OpsElementwise, CastRoundsSaturatesAndWraps) {
    env e;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // f32 → bf16: round to nearest even, against the independent reference.
    std::mt19937 g(5);
    std::uniform_int_distribution<std::uint32_t> bits(0, 0xFFFFFFFFu);
    farr x(4, 256);
    for (index_t i = 0; i < x.size(); ++i) {
        float f;
        do f = std::bit_cast<float>(bits(g));
        while (std::isnan(f));
        x(i / 256, i % 256) = f;
    }
    x(0, 0) = 1.0f + 0x1p-8f;      // tie → even (down)
    x(0, 1) = 1.0f + 3 * 0x1p-8f;  // tie → even (up)
    const auto h = cast<bf16>(vec<float>(x));
    for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 256; ++j) ASSERT_EQ(h(i, j), ref_bf16(x(i, j))) << x(i, j);
    // bf16 → f32 rounds the f32 intermediates first.
    const vec<bf16> hb(farr::Constant(1, 1, 1.0f + 0x1p-9f));
    EXPECT_EQ(cast<float>(hb)(0, 0), 1.0f);
    EXPECT_EQ(cast<bf16>(hb)(0, 0), 1.0f);  // identity cast materialises the rounding
    // f32 → int: truncation, saturation, NaN → 0.
    const vec<float> f(farr{{2.9f, -2.9f, 3e9f, -3e9f, nan, 127.5f, -129.0f, 300.0f}});
    const auto i32 = cast<std::int32_t>(f);
    EXPECT_EQ(i32(0, 0), 2);
    EXPECT_EQ(i32(0, 1), -2);
    EXPECT_EQ(i32(0, 2), std::numeric_limits<std::int32_t>::max());
    EXPECT_EQ(i32(0, 3), std::numeric_limits<std::int32_t>::min());
    EXPECT_EQ(i32(0, 4), 0);
    const auto i8 = cast<std::int8_t>(f);
    EXPECT_EQ(i8(0, 5), 127);
    EXPECT_EQ(i8(0, 6), -128);
    const auto u8 = cast<std::uint8_t>(f);
    EXPECT_EQ(u8(0, 7), 255);
    EXPECT_EQ(u8(0, 1), 0);
    // int → int wraps; int → bf16 rounds; bool ↔ numbers.
    const vec<std::int32_t> big(iarr{{300, -129, 257, 16777217}});
    EXPECT_EQ(cast<std::int8_t>(big)(0, 0), 44);
    EXPECT_EQ(cast<std::int8_t>(big)(0, 1), 127);
    EXPECT_EQ(cast<std::uint8_t>(big)(0, 2), 1);
    EXPECT_EQ(cast<bf16>(big)(0, 2), 256.0f);
    EXPECT_EQ(cast<float>(big)(0, 3), 16777216.0f);
    const vec<bool> m = f > 0.0f;
    EXPECT_EQ(cast<float>(m)(0, 0), 1.0f);
    EXPECT_EQ(cast<std::int32_t>(m)(0, 1), 0);
    EXPECT_TRUE(cast<bool>(f)(0, 4));  // NaN != 0
    EXPECT_FALSE(cast<bool>(vec<float>(farr::Zero(1, 1)))(0, 0));
    // f16 rounding: 2049 ties to even 2048.
    EXPECT_EQ(cast<f16>(vec<float>(farr::Constant(1, 1, 2049.0f)))(0, 0), 2048.0f);
}

TEST(OpsElementwise, CompoundAssignmentWorksInPlace) {
    env e;
    vec<float> acc(farr::Constant(8, 256, 1.0f));
    const float* before = acc.array().data();
    acc += random_vec(8, 256, 1, 1.0f, 1.0f);
    acc *= 3.0f;
    acc -= random_vec(1, 256, 2, 1.0f, 1.0f);  // broadcasts the right side
    EXPECT_EQ(acc.array().data(), before);     // no reallocation
    EXPECT_EQ(acc(7, 255), 5.0f);
    EXPECT_EQ(e.w().vreg_cheap, 3 * 2);
    vec<float> row(farr::Zero(1, 256));
    EXPECT_EQ(rule_of([&] { row += acc; }), "OP1");  // would broadcast the left side
    vec<std::int32_t> k(iarr::Constant(1, 1, 9));
    k %= 4;
    k /= 0;
    EXPECT_EQ(k(0, 0), -1);
}

TEST(OpsElementwise, RvalueOperandsLendTheirStorage) {
    env e;
    const auto b = random_vec(16, 256, 2);
    auto a = random_vec(16, 256, 1);
    const farr a0 = a.array();
    const float* pa = a.array().data();
    const vec<float> s = std::move(a) + b;  // a's storage becomes the result's
    EXPECT_EQ(s.array().data(), pa);
    auto c = random_vec(16, 256, 3);
    const float* pc = c.array().data();
    const vec<float> t = exp(b - std::move(c));  // the right operand's, then through exp
    EXPECT_EQ(t.array().data(), pc);
    auto row = random_vec(1, 256, 4);
    const farr r0 = row.array();
    const vec<float> u = std::move(row) * b;  // a broadcast operand cannot hold the result
    for (index_t i = 0; i < 16; ++i)
        for (index_t j = 0; j < 256; ++j) {
            ASSERT_EQ(s(i, j), a0(i, j) + b(i, j));
            ASSERT_EQ(u(i, j), r0(0, j) * b(i, j));
        }
    EXPECT_EQ(e.w().vreg_cheap, 4 + 4 + 4);  // charges do not depend on reuse
    EXPECT_EQ(e.w().vreg_medium, 4);
}

TEST(OpsElementwise, WhereOnIntegersAndMasks) {
    env e;
    const auto k = iota<std::int32_t>(8, 130, 1);
    const vec<bool> even = (k % 2) == 0;
    const auto w = where(even, k, -k);
    const vec<bool> m = where(even, k > 64, k < 8);
    for (index_t j = 0; j < 130; ++j) {
        EXPECT_EQ(w(3, j), j % 2 == 0 ? j : -j);
        EXPECT_EQ(m(3, j), j % 2 == 0 ? j > 64 : j < 8);
    }
}

TEST(OpsElementwise, TimingOnlyChargesTheSameAndComputesNothing) {
    auto body = [](const vec<float>& a, const vec<float>& b) {
        auto c = exp(a * b + 1.0f) / maximum(b, 0.5f);
        c = where(c > 2.0f, sin(c), -c) + cast<float>(cast<bf16>(a));
        c += b;
        return cast<std::int32_t>(c) % 3;
    };
    const auto a = random_vec(24, 300, 1), b = random_vec(24, 1, 2);
    work normal, timing;
    {
        env e;
        EXPECT_TRUE(body(a, b).has_data());
        normal = e.w();
    }
    {
        env e(true);
        const auto r = body(vec<float>(shape_only, 24, 300), vec<float>(shape_only, 24, 1));
        EXPECT_FALSE(r.has_data());
        EXPECT_EQ(r.shape(), (std::array<index_t, 2>{24, 300}));
        timing = e.w();
    }
    EXPECT_EQ(normal, timing);
    EXPECT_GT(normal.vreg_cheap, 0);
    EXPECT_GT(normal.vreg_medium, 0);
    EXPECT_GT(normal.vreg_expensive, 0);
}

}  // namespace

// ---- Special values against jnp's documented results ----------------------------------------
//
// One row per (op, argument): ±inf, NaN, ±0, subnormals, overflow, integer limits. The expected
// values are jnp's (IEEE 754 for the float functions, XLA's conversion and integer-division
// semantics for the rest). Each argument fills 131 columns, so both Eigen's vectorised packets
// and its scalar tail compute it. Where the TPU differs from jnp on CPU the row follows the TPU
// and says so. Subnormals: XLA flushes f32 subnormal results and arguments to zero (on TPU, and
// on CPU too); ptpu flushes the results of exp and logistic (the functions whose kernels clamp,
// so that exp(-inf) is exactly 0) but otherwise computes with IEEE subnormals, so no row here
// feeds one to an op that would keep it.

namespace {

constexpr float f_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float f_inf = std::numeric_limits<float>::infinity();
constexpr float f_den = std::numeric_limits<float>::denorm_min();
constexpr float f_max = std::numeric_limits<float>::max();

// Same value, same class: NaN matches any NaN, zeros must match in sign.
bool same_float(float got, float want) {
    if (std::isnan(want)) return std::isnan(got);
    return got == want && std::signbit(got) == std::signbit(want);
}

vec<float> filled(float x) { return vec<float>(farr::Constant(2, 131, x)); }

template <class V>
void expect_all(const V& got, float want, const std::string& what) {
    for (index_t i = 0; i < got.rows(); ++i)
        for (index_t j = 0; j < got.cols(); ++j)
            ASSERT_TRUE(same_float(static_cast<float>(got(i, j)), want))
                << what << ": got " << static_cast<float>(got(i, j)) << ", jnp gives " << want << " (at " << i
                << "," << j << ")";
}

}  // namespace

TEST(OpsElementwise, SpecialValuesMatchJnp) {
    env e;
    using fn = vec<float> (*)(const vec<float>&);
    struct row {
        const char* op;
        fn f;
        float x;
        float want;
    };
    const row rows[] = {
        // jnp.exp
        {"exp", [](const vec<float>& v) { return exp(v); }, -f_inf, 0.0f},
        {"exp", [](const vec<float>& v) { return exp(v); }, f_inf, f_inf},
        {"exp", [](const vec<float>& v) { return exp(v); }, f_nan, f_nan},
        {"exp", [](const vec<float>& v) { return exp(v); }, 0.0f, 1.0f},
        {"exp", [](const vec<float>& v) { return exp(v); }, -0.0f, 1.0f},
        {"exp", [](const vec<float>& v) { return exp(v); }, f_den, 1.0f},
        {"exp", [](const vec<float>& v) { return exp(v); }, 89.0f, f_inf},  // overflow
        {"exp", [](const vec<float>& v) { return exp(v); }, -104.0f, 0.0f},
        // exp(-88) = 6.05e-39 is subnormal: flushed to 0 on TPU (XLA's FTZ)
        {"exp", [](const vec<float>& v) { return exp(v); }, -88.0f, 0.0f},
        // jnp.log
        {"log", [](const vec<float>& v) { return log(v); }, 0.0f, -f_inf},
        {"log", [](const vec<float>& v) { return log(v); }, -0.0f, -f_inf},
        {"log", [](const vec<float>& v) { return log(v); }, -1.0f, f_nan},
        {"log", [](const vec<float>& v) { return log(v); }, f_inf, f_inf},
        {"log", [](const vec<float>& v) { return log(v); }, -f_inf, f_nan},
        {"log", [](const vec<float>& v) { return log(v); }, f_nan, f_nan},
        {"log", [](const vec<float>& v) { return log(v); }, 1.0f, 0.0f},
        // jnp.log1p
        {"log1p", [](const vec<float>& v) { return log1p(v); }, -1.0f, -f_inf},
        {"log1p", [](const vec<float>& v) { return log1p(v); }, -2.0f, f_nan},
        {"log1p", [](const vec<float>& v) { return log1p(v); }, f_inf, f_inf},
        {"log1p", [](const vec<float>& v) { return log1p(v); }, f_nan, f_nan},
        {"log1p", [](const vec<float>& v) { return log1p(v); }, -0.0f, -0.0f},
        // jnp.expm1
        {"expm1", [](const vec<float>& v) { return expm1(v); }, -f_inf, -1.0f},
        {"expm1", [](const vec<float>& v) { return expm1(v); }, f_inf, f_inf},
        {"expm1", [](const vec<float>& v) { return expm1(v); }, f_nan, f_nan},
        {"expm1", [](const vec<float>& v) { return expm1(v); }, -0.0f, -0.0f},
        {"expm1", [](const vec<float>& v) { return expm1(v); }, 100.0f, f_inf},
        // jnp.tanh
        {"tanh", [](const vec<float>& v) { return tanh(v); }, f_inf, 1.0f},
        {"tanh", [](const vec<float>& v) { return tanh(v); }, -f_inf, -1.0f},
        {"tanh", [](const vec<float>& v) { return tanh(v); }, f_nan, f_nan},
        {"tanh", [](const vec<float>& v) { return tanh(v); }, -0.0f, -0.0f},
        {"tanh", [](const vec<float>& v) { return tanh(v); }, 30.0f, 1.0f},
        // jax.nn.sigmoid (lax.logistic)
        {"logistic", [](const vec<float>& v) { return logistic(v); }, -f_inf, 0.0f},
        {"logistic", [](const vec<float>& v) { return logistic(v); }, f_inf, 1.0f},
        {"logistic", [](const vec<float>& v) { return logistic(v); }, f_nan, f_nan},
        {"logistic", [](const vec<float>& v) { return logistic(v); }, 0.0f, 0.5f},
        {"logistic", [](const vec<float>& v) { return logistic(v); }, -200.0f, 0.0f},
        {"logistic", [](const vec<float>& v) { return logistic(v); }, 200.0f, 1.0f},
        // jnp.sqrt
        {"sqrt", [](const vec<float>& v) { return sqrt(v); }, -1.0f, f_nan},
        {"sqrt", [](const vec<float>& v) { return sqrt(v); }, -0.0f, -0.0f},
        {"sqrt", [](const vec<float>& v) { return sqrt(v); }, f_inf, f_inf},
        {"sqrt", [](const vec<float>& v) { return sqrt(v); }, -f_inf, f_nan},
        {"sqrt", [](const vec<float>& v) { return sqrt(v); }, f_nan, f_nan},
        // lax.rsqrt
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, 0.0f, f_inf},
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, -0.0f, -f_inf},
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, f_inf, 0.0f},
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, -1.0f, f_nan},
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, f_nan, f_nan},
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, 4.0f, 0.5f},
        // Correctly rounded on every CPU (the hardware's reciprocal-square-root estimate differs
        // between x86 vendors): sqrt(2) and 1/sqrt(2) in f32, and sqrt of a perfect square.
        {"sqrt", [](const vec<float>& v) { return sqrt(v); }, 2.0f, 1.41421354f},
        {"sqrt", [](const vec<float>& v) { return sqrt(v); }, 9.0f, 3.0f},
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, 2.0f, 0.707106769f},
        {"rsqrt", [](const vec<float>& v) { return rsqrt(v); }, 0.25f, 2.0f},
        // jnp.reciprocal and division by zero
        {"reciprocal", [](const vec<float>& v) { return reciprocal(v); }, 0.0f, f_inf},
        {"reciprocal", [](const vec<float>& v) { return reciprocal(v); }, -0.0f, -f_inf},
        {"reciprocal", [](const vec<float>& v) { return reciprocal(v); }, f_inf, 0.0f},
        {"reciprocal", [](const vec<float>& v) { return reciprocal(v); }, -f_inf, -0.0f},
        {"1 / x", [](const vec<float>& v) { return 1.0f / v; }, -0.0f, -f_inf},
        {"x / 0", [](const vec<float>& v) { return v / 0.0f; }, -1.0f, -f_inf},
        {"x / 0", [](const vec<float>& v) { return v / 0.0f; }, 0.0f, f_nan},
        {"x / inf", [](const vec<float>& v) { return v / f_inf; }, f_inf, f_nan},
        // jnp.sin, jnp.cos
        {"sin", [](const vec<float>& v) { return sin(v); }, f_inf, f_nan},
        {"sin", [](const vec<float>& v) { return sin(v); }, f_nan, f_nan},
        {"sin", [](const vec<float>& v) { return sin(v); }, -0.0f, -0.0f},
        {"cos", [](const vec<float>& v) { return cos(v); }, -f_inf, f_nan},
        {"cos", [](const vec<float>& v) { return cos(v); }, -0.0f, 1.0f},
        // jnp.power
        {"pow(x, 0)", [](const vec<float>& v) { return pow(v, vec<float>(farr::Zero(2, 131))); }, f_nan, 1.0f},
        {"pow(1, x)", [](const vec<float>& v) { return pow(filled(1.0f), v); }, f_nan, 1.0f},
        {"pow(0, x)", [](const vec<float>& v) { return pow(filled(0.0f), v); }, -1.0f, f_inf},
        {"pow(-2, x)", [](const vec<float>& v) { return pow(filled(-2.0f), v); }, 3.0f, -8.0f},
        {"pow(-8, x)", [](const vec<float>& v) { return pow(filled(-8.0f), v); }, 1.0f / 3.0f, f_nan},
        {"pow(x, 2)", [](const vec<float>& v) { return pow(v, filled(2.0f)); }, -f_inf, f_inf},
        // floor, ceil, abs, neg
        {"floor", [](const vec<float>& v) { return floor(v); }, -f_inf, -f_inf},
        {"floor", [](const vec<float>& v) { return floor(v); }, f_nan, f_nan},
        {"floor", [](const vec<float>& v) { return floor(v); }, -0.0f, -0.0f},
        {"floor", [](const vec<float>& v) { return floor(v); }, 0.5f, 0.0f},
        {"ceil", [](const vec<float>& v) { return ceil(v); }, -0.5f, -0.0f},
        {"abs", [](const vec<float>& v) { return abs(v); }, -0.0f, 0.0f},
        {"abs", [](const vec<float>& v) { return abs(v); }, -f_inf, f_inf},
        {"-x", [](const vec<float>& v) { return -v; }, 0.0f, -0.0f},
        // arithmetic at the limits
        {"x + x", [](const vec<float>& v) { return v + v; }, f_max, f_inf},
        {"x - x", [](const vec<float>& v) { return v - v; }, f_inf, f_nan},
        {"x * 0", [](const vec<float>& v) { return v * 0.0f; }, f_inf, f_nan},
        // jnp.maximum / jnp.minimum propagate NaN from either side
        {"maximum(x, 1)", [](const vec<float>& v) { return maximum(v, 1.0f); }, f_nan, f_nan},
        {"maximum(1, x)", [](const vec<float>& v) { return maximum(filled(1.0f), v); }, f_nan, f_nan},
        {"minimum(x, 1)", [](const vec<float>& v) { return minimum(v, 1.0f); }, f_nan, f_nan},
        {"minimum(1, x)", [](const vec<float>& v) { return minimum(filled(1.0f), v); }, f_nan, f_nan},
        {"maximum(x, -inf)", [](const vec<float>& v) { return maximum(v, -f_inf); }, 0.0f, 0.0f},
        {"minimum(x, inf)", [](const vec<float>& v) { return minimum(v, f_inf); }, -f_inf, -f_inf},
        // casts through bf16 and f16 keep NaN (a payload in the low bits only must not become inf)
        {"bf16(x)", [](const vec<float>& v) { return cast<float>(cast<bf16>(v)); }, f_nan, f_nan},
        {"bf16(x)", [](const vec<float>& v) { return cast<float>(cast<bf16>(v)); },
         std::bit_cast<float>(0x7F800001u), f_nan},
        {"bf16(x)", [](const vec<float>& v) { return cast<float>(cast<bf16>(v)); }, f_max, f_inf},
        {"bf16(x)", [](const vec<float>& v) { return cast<float>(cast<bf16>(v)); }, -f_inf, -f_inf},
        {"bf16(x)", [](const vec<float>& v) { return cast<float>(cast<bf16>(v)); }, -0.0f, -0.0f},
        {"f16(x)", [](const vec<float>& v) { return cast<float>(cast<f16>(v)); }, f_nan, f_nan},
        {"f16(x)", [](const vec<float>& v) { return cast<float>(cast<f16>(v)); },
         std::bit_cast<float>(0x7F800001u), f_nan},
        {"f16(x)", [](const vec<float>& v) { return cast<float>(cast<f16>(v)); }, 70000.0f, f_inf},
        {"f16(x)", [](const vec<float>& v) { return cast<float>(cast<f16>(v)); }, -1e-8f, -0.0f},
        {"f16(x)", [](const vec<float>& v) { return cast<float>(cast<f16>(v)); }, -f_inf, -f_inf},
    };
    for (const row& r : rows)
        expect_all(r.f(filled(r.x)), r.want, std::string(r.op) + "(" + std::to_string(r.x) + ")");

    // Reductions: NaN and opposite infinities propagate as in jnp.sum / jnp.max / jnp.min.
    farr a = farr::Constant(8, 131, 1.0f);
    a(3, 77) = f_nan;
    for (const auto& v : {sum(vec<float>(a)), max(vec<float>(a)), min(vec<float>(a)), mean(vec<float>(a))})
        expect_all(v, f_nan, "reduction with a NaN");
    a(3, 77) = f_inf;
    a(5, 2) = -f_inf;
    expect_all(sum(vec<float>(a)), f_nan, "sum(inf, -inf)");
    expect_all(max(vec<float>(a)), f_inf, "max with inf");
    expect_all(min(vec<float>(a)), -f_inf, "min with -inf");

    // Comparisons with NaN: only != holds.
    const auto n = filled(f_nan);
    EXPECT_FALSE((n == n)(0, 0) || (n < 1.0f)(0, 0) || (n >= 1.0f)(0, 130) || (n > -f_inf)(1, 5));
    EXPECT_TRUE((n != n)(1, 130));
}

// Integer limits and float → integer conversions (XLA's, which jnp follows on every backend):
// wrapping arithmetic, division by zero and INT_MIN / -1, saturating conversion with NaN → 0.
TEST(OpsElementwise, IntegerAndConversionLimitsMatchXla) {
    env e;
    constexpr std::int32_t imax = std::numeric_limits<std::int32_t>::max();
    constexpr std::int32_t imin = std::numeric_limits<std::int32_t>::min();
    auto ivec = [](std::int32_t x) { return vec<std::int32_t>(iarr::Constant(2, 131, x)); };
    struct row {
        const char* op;
        vec<std::int32_t> got;
        std::int32_t want;
    };
    const row rows[] = {
        {"INT_MAX + 1", ivec(imax) + 1, imin},
        {"INT_MIN - 1", ivec(imin) - 1, imax},
        {"INT_MIN * -1", ivec(imin) * -1, imin},
        {"-INT_MIN", -ivec(imin), imin},
        {"abs(INT_MIN)", abs(ivec(imin)), imin},
        {"INT_MIN / -1", ivec(imin) / -1, imin},
        {"INT_MIN % -1", ivec(imin) % -1, 0},
        {"7 / 0", ivec(7) / 0, -1},
        {"-7 / 0", ivec(-7) / 0, -1},
        {"7 % 0", ivec(7) % 0, 7},
        {"INT_MIN % 0", ivec(imin) % 0, imin},
        {"-7 / 2", ivec(-7) / 2, -3},  // lax.div truncates (jnp's // floors: -4)
        {"-7 % 2", ivec(-7) % 2, -1},  // lax.rem: sign of the dividend
        {"INT_MAX / INT_MIN", ivec(imax) / imin, 0},
        {"maximum(INT_MIN, INT_MAX)", maximum(ivec(imin), imax), imax},
        {"i32(nan)", cast<std::int32_t>(filled(f_nan)), 0},
        {"i32(inf)", cast<std::int32_t>(filled(f_inf)), imax},
        {"i32(-inf)", cast<std::int32_t>(filled(-f_inf)), imin},
        {"i32(2^31)", cast<std::int32_t>(filled(2147483648.0f)), imax},
        {"i32(-2^31)", cast<std::int32_t>(filled(-2147483648.0f)), imin},
        {"i32(2147483520)", cast<std::int32_t>(filled(2147483520.0f)), 2147483520},
        {"i32(-0.9)", cast<std::int32_t>(filled(-0.9f)), 0},
        {"i32(denormal)", cast<std::int32_t>(filled(f_den)), 0},
        {"i32(i8(nan))", cast<std::int32_t>(cast<std::int8_t>(filled(f_nan))), 0},
        {"i32(i8(inf))", cast<std::int32_t>(cast<std::int8_t>(filled(f_inf))), 127},
        {"i32(i8(-inf))", cast<std::int32_t>(cast<std::int8_t>(filled(-f_inf))), -128},
        {"i32(u8(-inf))", cast<std::int32_t>(cast<std::uint8_t>(filled(-f_inf))), 0},
        {"i32(u8(nan))", cast<std::int32_t>(cast<std::uint8_t>(filled(f_nan))), 0},
        {"i32(bool(nan))", cast<std::int32_t>(cast<bool>(filled(f_nan))), 1},
        {"i32(bool(-0))", cast<std::int32_t>(cast<bool>(filled(-0.0f))), 0},
        {"sum wraps", sum(ivec(imax), 1), static_cast<std::int32_t>(131u * static_cast<std::uint32_t>(imax))},
    };
    for (const row& r : rows)
        for (index_t i = 0; i < r.got.rows(); ++i)
            for (index_t j = 0; j < r.got.cols(); ++j)
                ASSERT_EQ(r.got(i, j), r.want) << r.op << " at " << i << "," << j;
    // int32 → f32 rounds to nearest even (INT_MAX becomes 2^31).
    expect_all(cast<float>(ivec(imax)), 2147483648.0f, "f32(INT_MAX)");
    expect_all(cast<float>(ivec(imin)), -2147483648.0f, "f32(INT_MIN)");
}
