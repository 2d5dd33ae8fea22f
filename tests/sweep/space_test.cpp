// Tests sweep/space.hpp: a run-time space's points (count and order of the cartesian product),
// `where` (exactly the accepted points, in order, lazily), and `ranked` (ascending by key, ties in
// their original order), random access to the points.
#include <gtest/gtest.h>

#include <ptpu/hw/presets.hpp>
#include <ptpu/sweep/space.hpp>

#include <cstdint>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

namespace {

using ptpu::chip;
namespace tpu = ptpu::tpu;
namespace sweep = ptpu::sweep;

using point = std::tuple<int, int, const chip*>;

sweep::space<int, int, const chip*> make_space() {
    return sweep::space<int, int, const chip*>{{128, 384, 768}, {1, 2}, {&tpu::v5e, &tpu::v6e}};
}

TEST(SweepSpace, CartesianProductCountAndOrder) {
    const auto s = make_space();
    EXPECT_EQ(s.size(), 12u);
    std::vector<point> got;
    for (const auto& [bh, bc, c] : s.points()) got.emplace_back(bh, bc, c);
    ASSERT_EQ(got.size(), 12u);
    // The first axis varies slowest, the last fastest.
    EXPECT_EQ(got[0], point(128, 1, &tpu::v5e));
    EXPECT_EQ(got[1], point(128, 1, &tpu::v6e));
    EXPECT_EQ(got[2], point(128, 2, &tpu::v5e));
    EXPECT_EQ(got[4], point(384, 1, &tpu::v5e));
    EXPECT_EQ(got[11], point(768, 2, &tpu::v6e));
    EXPECT_EQ(s.axis<0>(), (std::vector<int>{128, 384, 768}));
}

TEST(SweepSpace, EmptyAxisMeansNoPoints) {
    const sweep::space<int, int> s{{1, 2, 3}, {}};
    EXPECT_EQ(s.size(), 0u);
    int n = 0;
    for ([[maybe_unused]] const auto& p : s.points()) ++n;
    EXPECT_EQ(n, 0);
}

TEST(SweepSpace, WhereKeepsExactlyTheAcceptedPointsInOrder) {
    const auto s = make_space();
    // Windows of three weights, E = 1152 f32 columns, double or single buffered: what fits the
    // chip's scoped VMEM limit (v5e 16 MiB, v6e 32 MiB).
    int calls = 0;
    auto fits = [&calls](int bh, int bc, const chip* c) {
        ++calls;
        return std::int64_t{3} * bc * 1152 * bh * 4 <= c->vmem_limit_bytes;
    };
    auto view = s.where(fits);
    EXPECT_EQ(calls, 0);  // lazy: nothing evaluated before the walk
    std::vector<point> got;
    for (const auto& [bh, bc, c] : view) got.emplace_back(bh, bc, c);
    EXPECT_EQ(calls, 12);
    // Only (768, 2) on v5e (21.2 MB > 16 MiB) is rejected.
    std::vector<point> want;
    for (int bh : {128, 384, 768})
        for (int bc : {1, 2})
            for (const chip* c : {&tpu::v5e, &tpu::v6e})
                if (!(bh == 768 && bc == 2 && c == &tpu::v5e)) want.emplace_back(bh, bc, c);
    EXPECT_EQ(got, want);
    EXPECT_EQ(got.size(), 11u);
}

TEST(SweepSpace, RankedSortsByKeyAndKeepsTiesInOrder) {
    struct result {
        std::string name;
        double time;
    };
    const std::vector<result> results{{"a", 3.0}, {"b", 1.0}, {"c", 2.0}, {"d", 1.0}, {"e", 0.5}};
    const auto r = sweep::ranked(results, &result::time);
    ASSERT_EQ(r.size(), 5u);
    std::string order;
    for (const result& x : r) order += x.name;
    EXPECT_EQ(order, "ebdca");  // b before d: equal times keep their order
    // Ranking a filtered space: the accepted points by a key, here the block size descending.
    const auto s = make_space();
    const auto top =
        sweep::ranked(s.where([](int, int bc, const chip* c) { return bc == 2 && c == &tpu::v6e; }),
                      [](const auto& p) { return -std::get<0>(p); });
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(std::get<0>(top[0]), 768);
    EXPECT_EQ(std::get<0>(top[2]), 128);
}

TEST(SweepSpace, PointsAreRandomAccessAndAtDecodesPositions) {
    const auto s = make_space();
    const auto pts = s.points();
    using it = decltype(pts.begin());
    static_assert(std::random_access_iterator<it>);
    static_assert(std::forward_iterator<decltype(s.where([](int, int, const chip*) { return true; }).begin())>);
    EXPECT_EQ(pts.end() - pts.begin(), 12);
    // Position k of the walk is k in mixed radix (3, 2, 2), the last axis the fastest digit.
    for (std::size_t k = 0; k < s.size(); ++k) {
        const point want(s.axis<0>()[k / 4], s.axis<1>()[k / 2 % 2], s.axis<2>()[k % 2]);
        EXPECT_EQ(s.at(k), want) << k;
        EXPECT_EQ(pts.begin()[static_cast<std::ptrdiff_t>(k)], want) << k;
        EXPECT_EQ(*(pts.end() - static_cast<std::ptrdiff_t>(s.size() - k)), want) << k;
    }
    auto i = pts.begin();
    i += 5;
    EXPECT_EQ(*i, point(384, 1, &tpu::v6e));
    --i;
    EXPECT_EQ(*i, point(384, 1, &tpu::v5e));
    EXPECT_TRUE(pts.begin() < i && i < pts.end());
    // One axis: the points are its values in order.
    const sweep::space<int> one{{7, 8, 9}};
    std::vector<int> got;
    for (const auto& [v] : one.points()) got.push_back(v);
    EXPECT_EQ(got, (std::vector<int>{7, 8, 9}));
}

TEST(SweepSpace, WhereThatAcceptsNothingOrEverything) {
    const auto s = make_space();
    const auto none = s.where([](int, int, const chip*) { return false; });
    EXPECT_TRUE(none.begin() == none.end());
    const auto all = s.where([](int, int, const chip*) { return true; });
    EXPECT_EQ(std::distance(all.begin(), all.end()), 12);
    // Walked twice, the same points: the view is not consumed.
    std::vector<point> a, b;
    for (const auto& p : all) a.push_back(p);
    for (const auto& p : all) b.push_back(p);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.front(), point(128, 1, &tpu::v5e));
    EXPECT_EQ(a.back(), point(768, 2, &tpu::v6e));
}

}  // namespace
