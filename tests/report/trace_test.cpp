// The exporters: Chrome trace JSON loads in a real JSON parser with the tracks and events
// Perfetto shows; the SVG is one self-contained document.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

using namespace ptpu;

namespace {
using X = Array<float, 32, 128>;
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using Copy = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5p>>;

report traced() {
    Copy k{{.timeline = true}};
    auto [y, rep] = k([](auto a, auto b) { store(b, load(a)); }, host_array<X>{});
    return rep;
}
}  // namespace

TEST(ChromeTrace, LoadsWithTracksAndNamedEvents) {
    const report r = traced();
    const auto j = nlohmann::json::parse(to_chrome_trace(r));
    ASSERT_TRUE(j.contains("traceEvents"));
    std::set<std::string> threads;
    std::set<std::string> names;
    int complete = 0;
    double last_end = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name")
            threads.insert(e["args"]["name"].get<std::string>());
        if (e["ph"] == "X") {
            ++complete;
            names.insert(e["name"].get<std::string>());
            EXPECT_GE(e["dur"].get<double>(), 0.0);
            last_end = std::max(last_end, e["ts"].get<double>() + e["dur"].get<double>());
        }
    }
    EXPECT_TRUE(threads.count("core stream"));
    // One DMA lane per operand, named by it (and a second for an operand whose DMAs overlap:
    // the prologue's fetch 0 and step 0's fetch 1 are in flight together).
    EXPECT_TRUE(threads.count("DMA in0")) << j.dump();
    EXPECT_TRUE(threads.count("DMA out0"));
    // No two DMA events of one lane overlap.
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> lanes;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "X" && e["tid"].get<int>() > 0)
            lanes[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
                {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    for (auto& [k, v] : lanes) {
        std::sort(v.begin(), v.end());
        for (std::size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i].first, v[i - 1].second - 1e-9);
    }
    // Every pipeline DMA is an event named by operand, kind, block index and slot (A1's order).
    for (const char* n :
         {"in0 fetch (0, 0) slot 0", "in0 fetch (1, 0) slot 1", "in0 fetch (3, 0) slot 1",
          "out0 write (0, 0) slot 0", "out0 write (3, 0) slot 1", "body step 2", "step 0 overhead"})
        EXPECT_TRUE(names.count(n)) << n;
    EXPECT_GT(complete, 4 * 4);
    EXPECT_NEAR(last_end, r.device_time * 1e6, 1e-3);
}

TEST(ChromeTrace, WithoutTimelineIsREP1) {
    auto [y, rep] = Copy{}([](auto a, auto b) { store(b, load(a)); }, host_array<X>{});
    try {
        (void)to_chrome_trace(rep);
        FAIL();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "REP1");
    }
}

TEST(SvgTimeline, IsOneSelfContainedDocument) {
    const std::string svg = to_svg(traced());
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    EXPECT_NE(svg.find("core 0 stream"), std::string::npos);
    EXPECT_NE(svg.find("in0 fetch (2, 0) slot 0"), std::string::npos);
    EXPECT_NE(svg.find("core 0 out0</text>"), std::string::npos);  // a lane per operand
    EXPECT_EQ(svg.find("http://", svg.find("xmlns") + 40), std::string::npos);  // no external refs
}
