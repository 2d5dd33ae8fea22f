// Tests core/integers.hpp and core/index.hpp: static integers stay static under arithmetic,
// idx/ds build index tuples, bounded<Max> checks its value (V1, V2), checked extent arithmetic
// is exact or V3.
#include <gtest/gtest.h>

#include <ptpu/core/index.hpp>
#include <ptpu/core/integers.hpp>

#include <array>
#include <limits>
#include <string>
#include <type_traits>

using namespace ptpu;

static_assert((c<2> + c<3>).value == 5 && (c<4> * c<8>).value == 32);  // static∘static is static
static_assert(std::is_same_v<decltype(c<2> * c<3>), C<6>>);
static_assert(idx(c<1>, 2) == index_tuple<2>{{index_entry{1, -1}, index_entry{2, -1}}});
static_assert(idx(3, ds(4, 2))[1].is_slice() && !idx(3, ds(4, 2))[0].is_slice());
static_assert(ds(3, 4) == slice{3, 4} && ds(5) == slice{0, 5});
static_assert(bounded<8>(c<8>).value() == 8);
static_assert(static_bound<C<4>>() == 4 && static_bound<bounded<16>>() == 16 &&
              static_bound<index_t>() == -1);
static_assert(value_of(c<4>) == 4 && value_of(bounded<16>(10)) == 10 && value_of(index_t{7}) == 7);
// In-process negative tests (V1, V2 as constraints): these spellings do not compile.
static_assert(!std::is_constructible_v<bounded<8>, C<9>>);
static_assert(!std::is_constructible_v<bounded<8>, C<0>>);

TEST(Bounded, ValueAboveBoundThrowsV2) {
    EXPECT_EQ(bounded<8>(8).value(), 8);
    EXPECT_EQ(bounded<8>(1).value(), 1);
    try {
        bounded<8> b(9);
        FAIL() << b.value();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "V2");
        EXPECT_STREQ(e.what(),
                     "ptpu[V2] bounded<Max>: value outside [1, Max]; a bounded extent holds a "
                     "positive value no larger than its static maximum (got 9, Max 8)");
    }
    EXPECT_THROW(bounded<8>(0), ptpu::error);
    EXPECT_THROW(bounded<8>(-1), ptpu::error);
}

// Checked extent arithmetic (V3): exact where the result fits, false (or ptpu[V3]) where not.
namespace {
constexpr index_t imax = std::numeric_limits<index_t>::max();
constexpr index_t imin = std::numeric_limits<index_t>::min();
constexpr bool fits_sum(index_t a, index_t b) {
    index_t r = 0;
    return add_fits(a, b, r);
}
constexpr bool fits_product(index_t a, index_t b) {
    index_t r = 0;
    return mul_fits(a, b, r);
}
constexpr int overflow_dim(std::array<index_t, 3> v) {
    index_t r = 0;
    int at = -1;
    return product_fits(v.data(), 3, r, &at) ? -1 : at;
}
}  // namespace
static_assert(fits_sum(imax - 1, 1) && !fits_sum(imax, 1) && fits_sum(imin, imax) && !fits_sum(imin, -1));
static_assert(fits_product(index_t{1} << 31, index_t{1} << 31) && !fits_product(index_t{1} << 32, index_t{1} << 31));
static_assert(!fits_product(imin, -1) && fits_product(imax, -1) && fits_product(0, imax));
static_assert(overflow_dim({1 << 22, 1 << 22, 1 << 22}) == 2 && overflow_dim({imax, 2, 1}) == 1 &&
              overflow_dim({imax, 1, 1}) == -1);
static_assert(checked_mul(index_t{1} << 31, index_t{1} << 31, [] { return std::string(); }) == index_t{1} << 62);

TEST(CheckedArithmetic, OverflowIsV3NamingWhat) {
    const auto what = [] { return std::string("input 0, dim 1"); };
    EXPECT_EQ(checked_add(imax - 5, 5, what), imax);
    try {
        (void)checked_mul(index_t{1} << 40, index_t{1} << 30, what);
        FAIL();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "V3");
        EXPECT_NE(std::string(e.what()).find("(input 0, dim 1: 1099511627776 * 1073741824)"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW((void)checked_add(imin, -1, what), ptpu::error);
}
