// Tests core/dtype.hpp: bf16/f16 rounding on hand-computed bit patterns, against an independent
// nearest-even reference, exhaustive round trips, and the dtype property table.
#include <gtest/gtest.h>

#include <ptpu/core/dtype.hpp>

#include <bit>
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

namespace {

using ptpu::bf16;
using ptpu::dtype;
using ptpu::f16;

constexpr float from_bits32(std::uint32_t b) {
    return std::bit_cast<float>(b);
}
constexpr std::uint16_t bf(float f) {
    return bf16(f).bits;
}
constexpr std::uint16_t hf(float f) {
    return f16(f).bits;
}
constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

// ---- Type properties -------------------------------------------------------------------------

static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2);
static_assert(std::is_trivially_copyable_v<bf16> && std::is_trivially_copyable_v<f16>);
static_assert(std::is_standard_layout_v<bf16> && std::is_standard_layout_v<f16>);
static_assert(std::is_trivially_default_constructible_v<bf16>);
// Conversions are explicit both ways, and 16-bit types do not mix with float in arithmetic.
static_assert(std::is_constructible_v<bf16, float> && !std::is_convertible_v<float, bf16>);
static_assert(std::is_constructible_v<float, f16> && !std::is_convertible_v<f16, float>);
template <class A, class B>
concept addable = requires(A a, B b) {
    a + b;
};
static_assert(addable<bf16, bf16> && addable<f16, f16> && !addable<bf16, float>);
static_assert(!addable<bf16, f16> && !addable<float, f16>);
static_assert(!addable<dtype, dtype>);  // the operator templates stay on bf16/f16

// ---- Compile-time evaluation -----------------------------------------------------------------

static_assert(bf(1.0f) == 0x3F80 && bf(-2.0f) == 0xC000);
static_assert(bf(1.0f + 0x1p-8f) == 0x3F80);      // tie, rounds to even (down)
static_assert(bf(1.0f + 3 * 0x1p-8f) == 0x3F82);  // tie, rounds to even (up)
static_assert(bf(inf) == 0x7F80 && bf(-inf) == 0xFF80);
static_assert(static_cast<float>(bf16::from_bits(0x3F80)) == 1.0f);
static_assert(hf(1.0f) == 0x3C00 && hf(65504.0f) == 0x7BFF && hf(65520.0f) == 0x7C00);
static_assert(hf(0x1p-24f) == 0x0001 && hf(0x1p-25f) == 0x0000);
static_assert(static_cast<float>(f16::from_bits(0x0001)) == 0x1p-24f);
static_assert(static_cast<float>(f16::from_bits(0x7BFF)) == 65504.0f);
static_assert((bf16(1.0f) + bf16(2.0f)) == bf16(3.0f));
static_assert(f16(2048.0f) + f16(1.0f) == f16(2048.0f));  // 2049 ties to even
static_assert(bf16(1.0f) < bf16(2.0f) && f16(-1.0f) <= f16(-1.0f));
static_assert(bf16(qnan) != bf16(qnan));

// ---- bf16 ------------------------------------------------------------------------------------

TEST(Bf16, ExactValues) {
    EXPECT_EQ(bf(0.0f), 0x0000);
    EXPECT_EQ(bf(-0.0f), 0x8000);
    EXPECT_EQ(bf(1.0f), 0x3F80);
    EXPECT_EQ(bf(-1.0f), 0xBF80);
    EXPECT_EQ(bf(0.5f), 0x3F00);
    EXPECT_EQ(bf(3.0f), 0x4040);
    EXPECT_EQ(bf(256.0f), 0x4380);
    EXPECT_EQ(bf(1.0f + 0x1p-7f), 0x3F81);  // one bf16 ulp above 1
    EXPECT_EQ(bf(0x1p-126f), 0x0080);       // smallest normal
}

TEST(Bf16, RoundsToNearestEven) {
    EXPECT_EQ(bf(1.0f + 0x1p-8f), 0x3F80);            // halfway, even below
    EXPECT_EQ(bf(1.0f + 3 * 0x1p-8f), 0x3F82);        // halfway, even above
    EXPECT_EQ(bf(from_bits32(0x3F80'8001)), 0x3F81);  // just above halfway
    EXPECT_EQ(bf(from_bits32(0x3F80'7FFF)), 0x3F80);  // just below halfway
    EXPECT_EQ(bf(from_bits32(0x3FFF'8000)), 0x4000);  // tie carries into the exponent
    EXPECT_EQ(bf(-(1.0f + 3 * 0x1p-8f)), 0xBF82);     // sign does not change the rule
    EXPECT_EQ(bf(1.0f / 3.0f), 0x3EAB);               // 0x3EAA'AAAB rounds up
}

TEST(Bf16, LimitsAndOverflow) {
    EXPECT_EQ(static_cast<float>(bf16::from_bits(0x7F7F)), from_bits32(0x7F7F'0000));  // max
    EXPECT_EQ(bf(from_bits32(0x7F7F'0000)), 0x7F7F);
    EXPECT_EQ(bf(from_bits32(0x7F7F'7FFF)), 0x7F7F);  // below halfway to 2^128: stays finite
    EXPECT_EQ(bf(from_bits32(0x7F7F'8000)), 0x7F80);  // halfway, odd max: rounds to inf
    EXPECT_EQ(bf(std::numeric_limits<float>::max()), 0x7F80);
    EXPECT_EQ(bf(-std::numeric_limits<float>::max()), 0xFF80);
    EXPECT_EQ(bf(inf), 0x7F80);
    EXPECT_EQ(bf(-inf), 0xFF80);
    EXPECT_EQ(static_cast<float>(bf16::from_bits(0x7F80)), inf);
    EXPECT_EQ(static_cast<float>(bf16::from_bits(0xFF80)), -inf);
}

TEST(Bf16, NaNStaysNaN) {
    EXPECT_EQ(bf(qnan), 0x7FC0);
    EXPECT_EQ(bf(from_bits32(0x7F80'0001)), 0x7FC0);  // payload only in the dropped half: quieted
    EXPECT_EQ(bf(from_bits32(0xFF80'0001)), 0xFFC0);  // sign kept
    EXPECT_EQ(bf(from_bits32(0x7FA0'0000)), 0x7FE0);  // upper payload kept, quiet bit set
    EXPECT_EQ(bf(from_bits32(0x7FFF'FFFF)), 0x7FFF);  // no carry out of a NaN
    EXPECT_TRUE(std::isnan(static_cast<float>(bf16(qnan))));
    EXPECT_TRUE(std::isnan(static_cast<float>(bf16::from_bits(0x7F81))));
}

TEST(Bf16, SignedZeroAndSubnormals) {
    EXPECT_TRUE(std::signbit(static_cast<float>(bf16(-0.0f))));
    EXPECT_EQ(bf16(-0.0f), bf16(0.0f));
    EXPECT_EQ(bf(0x1p-133f), 0x0001);  // smallest bf16 subnormal
    EXPECT_EQ(static_cast<float>(bf16::from_bits(0x0001)), 0x1p-133f);
    EXPECT_EQ(static_cast<float>(bf16::from_bits(0x007F)), 127 * 0x1p-133f);  // largest subnormal
    EXPECT_EQ(bf(0x1p-134f), 0x0000);      // halfway to the smallest: ties to 0
    EXPECT_EQ(bf(3 * 0x1p-134f), 0x0002);  // halfway between 1 and 2 ulps: even
    EXPECT_EQ(bf(-0x1p-134f), 0x8000);     // underflow keeps the sign
    EXPECT_EQ(bf(from_bits32(0x0000'8001)), 0x0001);
    EXPECT_EQ(bf(from_bits32(0x007F'FFFF)), 0x0080);  // largest float subnormal rounds to normal
}

TEST(Bf16, Arithmetic) {
    EXPECT_EQ((bf16(1.5f) + bf16(2.25f)).bits, bf(3.75f));
    EXPECT_EQ((bf16(1.0f) + bf16(0x1p-8f)).bits, 0x3F80);  // exact sum 1+2^-8 ties to 1
    EXPECT_EQ((bf16(3.0f) - bf16(5.0f)).bits, bf(-2.0f));
    EXPECT_EQ((bf16(1.5f) * bf16(-4.0f)).bits, bf(-6.0f));
    EXPECT_EQ((bf16(1.0f) / bf16(3.0f)).bits, 0x3EAB);
    EXPECT_EQ((-bf16(1.0f)).bits, 0xBF80);
    EXPECT_EQ((-bf16(0.0f)).bits, 0x8000);
    EXPECT_EQ((+bf16(2.0f)).bits, 0x4000);
    EXPECT_TRUE(std::isnan(static_cast<float>(-bf16(qnan))));
    EXPECT_EQ((bf16::from_bits(0x7F7F) * bf16(2.0f)).bits, 0x7F80);  // overflow to inf
    bf16 x(1.0f);
    x += bf16(1.0f);
    x *= bf16(3.0f);
    x -= bf16(2.0f);
    x /= bf16(4.0f);
    EXPECT_EQ(x, bf16(1.0f));
}

TEST(Bf16, Comparisons) {
    const bf16 nan(qnan), one(1.0f), two(2.0f);
    EXPECT_TRUE(one < two && two > one && one <= one && one >= one && one != two);
    EXPECT_FALSE(nan == nan);
    EXPECT_TRUE(nan != nan);
    EXPECT_FALSE(nan < one || nan > one || nan <= one || nan >= one);
    EXPECT_EQ(nan <=> one, std::partial_ordering::unordered);
    EXPECT_EQ(one <=> two, std::partial_ordering::less);
    EXPECT_EQ(bf16(-0.0f) <=> bf16(0.0f), std::partial_ordering::equivalent);
}

// Every bf16 bit pattern converts to float and back to itself; NaNs stay NaN (and come back
// quieted, which changes only the quiet bit).
TEST(Bf16, ExhaustiveRoundTrip) {
    for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
        const auto h = static_cast<std::uint16_t>(b);
        const float f = static_cast<float>(bf16::from_bits(h));
        const bool nan = (h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0;
        ASSERT_EQ(std::isnan(f), nan) << std::hex << b;
        if (nan) {
            ASSERT_TRUE(std::isnan(static_cast<float>(bf16(f)))) << std::hex << b;
            ASSERT_EQ(bf16(f).bits, h | 0x0040) << std::hex << b;
        } else {
            ASSERT_EQ(bf16(f).bits, h) << std::hex << b;
        }
    }
}

// ---- An independent reference: nearest of the two neighbouring 16-bit values, ties to even ----

// Positive finite encodings 0 … max_finite increase with their value; `value(max_finite + 1)` is
// infinity, which for rounding counts as the next power of two (IEEE overflow rule).
template <class T>
double value_of(std::uint32_t b, std::uint16_t max_finite, double past_max) {
    if (b > max_finite) return past_max;
    return static_cast<float>(T::from_bits(static_cast<std::uint16_t>(b)));
}

template <class T>
std::uint16_t reference_round(float f, std::uint16_t max_finite, double past_max) {
    const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(f));
    std::uint32_t lo = 0, hi = max_finite + 1u;  // value(lo) <= a < value(hi)
    if (a >= past_max) return static_cast<std::uint16_t>(sign | hi);
    while (hi - lo > 1) {
        const std::uint32_t mid = (lo + hi) / 2;
        (value_of<T>(mid, max_finite, past_max) <= a ? lo : hi) = mid;
    }
    const double below = a - value_of<T>(lo, max_finite, past_max);
    const double above = value_of<T>(hi, max_finite, past_max) - a;
    const std::uint32_t pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
    return static_cast<std::uint16_t>(sign | pick);
}

// Every finite 16-bit value, the midpoint to its upper neighbour (exact in float) and one float
// ulp either side of it: every tie and near-tie, both signs; plus random bit patterns.
template <class T>
std::vector<float> interesting_floats(std::uint16_t max_finite, double past_max) {
    std::vector<float> out;
    for (std::uint32_t b = 0; b <= max_finite; ++b) {
        const double v = value_of<T>(b, max_finite, past_max);
        const auto mid = static_cast<float>((v + value_of<T>(b + 1, max_finite, past_max)) / 2);
        for (float x : {static_cast<float>(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, inf)}) {
            out.push_back(x);
            out.push_back(-x);
        }
    }
    std::mt19937 rng(12345);
    for (int i = 0; i < 400'000; ++i) out.push_back(from_bits32(static_cast<std::uint32_t>(rng())));
    return out;
}

TEST(Bf16, MatchesNearestEvenReference) {
    for (float f : interesting_floats<bf16>(0x7F7F, 0x1p128)) {
        if (std::isnan(f)) continue;
        ASSERT_EQ(bf(f), (reference_round<bf16>(f, 0x7F7F, 0x1p128))) << std::hexfloat << f;
    }
}

// ---- f16 -------------------------------------------------------------------------------------

TEST(F16, ExactValues) {
    EXPECT_EQ(hf(0.0f), 0x0000);
    EXPECT_EQ(hf(-0.0f), 0x8000);
    EXPECT_EQ(hf(1.0f), 0x3C00);
    EXPECT_EQ(hf(-2.0f), 0xC000);
    EXPECT_EQ(hf(0.5f), 0x3800);
    EXPECT_EQ(hf(1.0f + 0x1p-10f), 0x3C01);
    EXPECT_EQ(hf(0x1p-14f), 0x0400);  // smallest normal
    EXPECT_EQ(hf(1024.0f), 0x6400);
}

TEST(F16, RoundsToNearestEven) {
    EXPECT_EQ(hf(1.0f + 0x1p-11f), 0x3C00);      // halfway, even below
    EXPECT_EQ(hf(1.0f + 3 * 0x1p-11f), 0x3C02);  // halfway, even above
    EXPECT_EQ(hf(std::nextafter(1.0f + 0x1p-11f, 2.0f)), 0x3C01);
    EXPECT_EQ(hf(2049.0f), 0x6800);  // 2048 (even) wins the tie
    EXPECT_EQ(hf(2051.0f), 0x6802);  // 2052 (even) wins the tie
    EXPECT_EQ(hf(1.0f / 3.0f), 0x3555);
}

TEST(F16, LimitsAndOverflow) {
    EXPECT_EQ(hf(65504.0f), 0x7BFF);  // max finite
    EXPECT_EQ(static_cast<float>(f16::from_bits(0x7BFF)), 65504.0f);
    EXPECT_EQ(hf(65519.0f), 0x7BFF);
    EXPECT_EQ(hf(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
    EXPECT_EQ(hf(65520.0f), 0x7C00);  // halfway to 65536 with an odd max: rounds to inf
    EXPECT_EQ(hf(-65520.0f), 0xFC00);
    EXPECT_EQ(hf(1e10f), 0x7C00);
    EXPECT_EQ(hf(std::numeric_limits<float>::max()), 0x7C00);
    EXPECT_EQ(hf(inf), 0x7C00);
    EXPECT_EQ(hf(-inf), 0xFC00);
    EXPECT_EQ(static_cast<float>(f16::from_bits(0x7C00)), inf);
    EXPECT_EQ(static_cast<float>(f16::from_bits(0xFC00)), -inf);
}

TEST(F16, NaNStaysNaN) {
    EXPECT_EQ(hf(qnan), 0x7E00);
    EXPECT_EQ(hf(from_bits32(0x7F80'0001)), 0x7E00);  // payload only in dropped bits: quieted
    EXPECT_EQ(hf(from_bits32(0xFFC0'0000)), 0xFE00);  // sign kept
    EXPECT_EQ(hf(from_bits32(0x7FA0'0000)), 0x7F00);  // upper payload kept, quiet bit set
    EXPECT_TRUE(std::isnan(static_cast<float>(f16::from_bits(0x7C01))));
    EXPECT_TRUE(std::isnan(static_cast<float>(f16(qnan))));
}

TEST(F16, SubnormalsAndUnderflow) {
    EXPECT_EQ(hf(0x1p-24f), 0x0001);  // smallest subnormal
    EXPECT_EQ(static_cast<float>(f16::from_bits(0x0001)), 0x1p-24f);
    EXPECT_EQ(static_cast<float>(f16::from_bits(0x03FF)), 1023 * 0x1p-24f);  // largest
    EXPECT_EQ(hf(1023 * 0x1p-24f), 0x03FF);
    EXPECT_EQ(hf(1023.5f * 0x1p-24f), 0x0400);  // tie with an odd subnormal: up to min normal
    EXPECT_EQ(hf(0x1p-25f), 0x0000);            // halfway to the smallest: ties to 0
    EXPECT_EQ(hf(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
    EXPECT_EQ(hf(3 * 0x1p-25f), 0x0002);  // 1.5 ulps: even
    EXPECT_EQ(hf(5 * 0x1p-25f), 0x0002);  // 2.5 ulps: even
    EXPECT_EQ(hf(0x1p-26f), 0x0000);
    EXPECT_EQ(hf(1e-10f), 0x0000);
    EXPECT_EQ(hf(-0x1p-26f), 0x8000);                 // underflow keeps the sign
    EXPECT_EQ(hf(from_bits32(0x0000'0001)), 0x0000);  // float subnormals underflow
    EXPECT_TRUE(std::signbit(static_cast<float>(f16::from_bits(0x8000))));
    EXPECT_EQ(static_cast<float>(f16::from_bits(0x8001)), -0x1p-24f);
}

TEST(F16, Arithmetic) {
    EXPECT_EQ(f16(2048.0f) + f16(1.0f), f16(2048.0f));
    EXPECT_EQ((f16(256.0f) * f16(256.0f)).bits, 0x7C00);
    EXPECT_EQ((f16(1.0f) / f16(3.0f)).bits, 0x3555);
    EXPECT_EQ((f16(0x1p-14f) / f16(4.0f)).bits, 0x0100);  // result is subnormal
    EXPECT_EQ((-f16(1.0f)).bits, 0xBC00);
    f16 x(3.0f);
    x -= f16(1.0f);
    EXPECT_EQ(x, f16(2.0f));
    EXPECT_FALSE(f16(qnan) == f16(qnan));
    EXPECT_EQ(f16(-0.0f) <=> f16(0.0f), std::partial_ordering::equivalent);
}

TEST(F16, ExhaustiveRoundTrip) {
    for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
        const auto h = static_cast<std::uint16_t>(b);
        const float f = static_cast<float>(f16::from_bits(h));
        const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
        ASSERT_EQ(std::isnan(f), nan) << std::hex << b;
        if (nan) {
            ASSERT_EQ(f16(f).bits, h | 0x0200) << std::hex << b;
        } else {
            ASSERT_EQ(f16(f).bits, h) << std::hex << b;
        }
    }
}

TEST(F16, MatchesNearestEvenReference) {
    for (float f : interesting_floats<f16>(0x7BFF, 65536.0)) {
        if (std::isnan(f)) continue;
        ASSERT_EQ(hf(f), (reference_round<f16>(f, 0x7BFF, 65536.0))) << std::hexfloat << f;
    }
}

// ---- dtype -----------------------------------------------------------------------------------

static_assert(ptpu::dtype_of<float> == dtype::f32);
static_assert(ptpu::dtype_of<bf16> == dtype::bf16);
static_assert(ptpu::dtype_of<f16> == dtype::f16);
static_assert(ptpu::dtype_of<std::int32_t> == dtype::i32);
static_assert(ptpu::dtype_of<std::int16_t> == dtype::i16);
static_assert(ptpu::dtype_of<std::int8_t> == dtype::i8);
static_assert(ptpu::dtype_of<std::uint8_t> == dtype::u8);
static_assert(ptpu::dtype_of<bool> == dtype::boolean);

static_assert(ptpu::element_type<float> && ptpu::element_type<bf16> && ptpu::element_type<bool>);
static_assert(!ptpu::element_type<double> && !ptpu::element_type<std::int64_t>);
static_assert(!ptpu::element_type<std::uint16_t> && !ptpu::element_type<std::uint32_t>);
static_assert(!ptpu::element_type<char>);  // distinct from int8_t (signed char)
static_assert(!ptpu::element_type<const float> && !ptpu::element_type<float&>);
static_assert(!ptpu::element_type<void>);

struct dtype_row {
    dtype d;
    std::int64_t itemsize;
    int bits;
    std::string_view name;
    bool floating;
};
// The tiling of each dtype is the chip's: tests/hw/tiling_test.cpp.
constexpr dtype_row table[] = {
    {dtype::f32, 4, 32, "f32", true},  {dtype::bf16, 2, 16, "bf16", true},
    {dtype::f16, 2, 16, "f16", true},  {dtype::i32, 4, 32, "i32", false},
    {dtype::i16, 2, 16, "i16", false}, {dtype::i8, 1, 8, "i8", false},
    {dtype::u8, 1, 8, "u8", false},    {dtype::boolean, 1, 8, "bool", false},
};

constexpr bool table_matches() {
    for (const dtype_row& r : table) {
        if (ptpu::itemsize(r.d) != r.itemsize || ptpu::bitwidth(r.d) != r.bits || ptpu::name(r.d) != r.name ||
            ptpu::is_floating(r.d) != r.floating)
            return false;
    }
    return true;
}
static_assert(table_matches());
static_assert(sizeof(dtype) == 1);

TEST(Dtype, PropertyTable) {
    EXPECT_EQ(std::size(table), 8u);
    for (const dtype_row& r : table) {
        SCOPED_TRACE(r.name);
        EXPECT_EQ(ptpu::itemsize(r.d), r.itemsize);
        EXPECT_EQ(ptpu::bitwidth(r.d), r.bits);
        EXPECT_EQ(ptpu::name(r.d), r.name);
        EXPECT_EQ(ptpu::is_floating(r.d), r.floating);
    }
}

TEST(Dtype, ItemsizeMatchesStorage) {
    EXPECT_EQ(ptpu::itemsize(ptpu::dtype_of<float>), static_cast<std::int64_t>(sizeof(float)));
    EXPECT_EQ(ptpu::itemsize(ptpu::dtype_of<bf16>), static_cast<std::int64_t>(sizeof(bf16)));
    EXPECT_EQ(ptpu::itemsize(ptpu::dtype_of<bool>), static_cast<std::int64_t>(sizeof(bool)));
    EXPECT_EQ(ptpu::itemsize(ptpu::dtype_of<std::int16_t>), 2);
}

}  // namespace
