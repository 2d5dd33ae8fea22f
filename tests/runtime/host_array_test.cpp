// host_array<A> as a standard contiguous range: range-for, <algorithm>, <numeric> and <ranges>
// take it, in row-major order, and a std::span views it.
#include <gtest/gtest.h>

#include <ptpu/runtime/host_array.hpp>
#include <ptpu/spec/call.hpp>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <ranges>
#include <span>
#include <type_traits>
#include <vector>

using namespace ptpu;

namespace {
using A = Array<float, 4, 8>;
using I = Array<std::int32_t, 3, 5>;

static_assert(std::ranges::contiguous_range<host_array<A>> && std::ranges::sized_range<host_array<A>>);
static_assert(std::ranges::contiguous_range<const host_array<A>>);
static_assert(std::contiguous_iterator<host_array<A>::iterator>);
static_assert(std::is_same_v<std::ranges::range_value_t<host_array<A>>, float>);
static_assert(std::is_same_v<std::ranges::range_reference_t<const host_array<A>>, const float&>);
static_assert(std::is_same_v<host_array<A>::value_type, float> &&
              std::is_same_v<host_array<A>::size_type, std::size_t>);
}  // namespace

TEST(HostArray, RangeForVisitsRowMajor) {
    host_array<A> x;
    float next = 0;
    for (float& v : x) v = next++;
    EXPECT_EQ(x(0, 0), 0.0f);
    EXPECT_EQ(x(0, 7), 7.0f);
    EXPECT_EQ(x(1, 0), 8.0f);
    EXPECT_EQ(x(3, 7), 31.0f);
    const host_array<A>& cx = x;
    float sum = 0;
    for (const float v : cx) sum += v;
    EXPECT_EQ(sum, 31.0f * 32.0f / 2.0f);
}

TEST(HostArray, StandardAlgorithmsAndRanges) {
    host_array<I> x;
    std::iota(x.begin(), x.end(), 0);
    EXPECT_EQ(x(2, 4), 14);
    EXPECT_EQ(std::accumulate(x.cbegin(), x.cend(), 0), 14 * 15 / 2);
    std::ranges::fill(x, 3);
    EXPECT_TRUE(std::ranges::all_of(x, [](std::int32_t v) { return v == 3; }));
    std::ranges::transform(x, x.begin(), [](std::int32_t v) { return v * 2; });
    EXPECT_EQ(std::ranges::count(x, 6), 15);
    x(1, 2) = -1;
    EXPECT_EQ(std::ranges::min_element(x) - x.begin(), 1 * 5 + 2);
    EXPECT_EQ(std::ranges::distance(x), 15);
    EXPECT_EQ(x.end() - x.begin(), static_cast<std::ptrdiff_t>(x.size()));
    EXPECT_FALSE(x.empty());
#if !defined(__clang__) || __clang_major__ >= 15
    // (clang 14 cannot check libstdc++ 12's range adaptors over any range: not a host_array matter)
    auto evens = x | std::views::filter([](std::int32_t v) { return v % 2 == 0; });
    EXPECT_EQ(std::ranges::distance(evens), 14);
#endif
    const std::vector<std::int32_t> copy(x.begin(), x.end());
    EXPECT_TRUE(std::ranges::equal(copy, x));
}

TEST(HostArray, SpanViewsTheSameElements) {
    host_array<A> x;
    const std::span<float> s(x);
    EXPECT_EQ(s.data(), x.data());
    EXPECT_EQ(s.size(), x.size());
    s[9] = 5.0f;
    EXPECT_EQ(x(1, 1), 5.0f);
    EXPECT_EQ(std::to_address(x.begin()), x.data());
}
