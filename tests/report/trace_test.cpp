// The exporters: Chrome trace JSON loads in a real JSON parser with the tracks and events
// Perfetto shows; the SVG is one self-contained document.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

// ---- A time window of a long run, and the title ------------------------------------------------

namespace {
using Long = Array<float, 256 * 8, 128>;
using LongCopy = pallas_call<Grid<256>, In<Arg<Long, Blk, "x">>, Out<Arg<Long, Blk, "y">>, Chip<tpu::v5e>>;

report long_traced() {
    LongCopy k{{.timeline = true}};
    auto [y, rep] = k([](auto a, auto b) { store(b, load(a)); }, host_array<Long>{});
    return rep;
}

// The x positions and labels of the SVG's axis ticks ("<line x1=… y2=axis+5 …/><text …>label us").
std::vector<std::pair<double, double>> ticks(const std::string& svg) {
    std::vector<std::pair<double, double>> v;  // (x, label in us)
    for (std::size_t p = svg.find("stroke=\"black\"/><text"); p != std::string::npos;
         p = svg.find("stroke=\"black\"/><text", p + 1)) {
        const std::size_t line = svg.rfind("<line x1=\"", p);
        const double x = std::stod(svg.substr(line + 10));
        const std::size_t gt = svg.find('>', svg.find("<text", p));
        v.emplace_back(x, std::stod(svg.substr(gt + 1)));
    }
    return v;
}

// The x extents of the spans drawn ("<rect x=… width=… fill=…><title>").
std::vector<std::pair<double, double>> spans(const std::string& svg) {
    std::vector<std::pair<double, double>> v;
    for (std::size_t p = svg.find("\"><title>"); p != std::string::npos; p = svg.find("\"><title>", p + 1)) {
        const std::size_t r = svg.rfind("<rect x=\"", p);
        const double x = std::stod(svg.substr(r + 9));
        const std::size_t w = svg.find("width=\"", r);
        v.emplace_back(x, x + std::stod(svg.substr(w + 7)));
    }
    return v;
}
}  // namespace

TEST(SvgTimeline, TimeWindowClipsSpansAndTicksRoundValuesInside) {
    const report r = long_traced();
    const double T = r.device_time;
    const double a = 0.4137 * T, b = 0.5291 * T;  // an arbitrary window in the middle
    svg_options o;
    o.t_begin = a;
    o.t_end = b;
    const std::string svg = to_svg(r, o);
    const std::string all = to_svg(r);
    const int left = 150, plot = o.width - 150 - 20;
    // Spans: fewer than the whole run's, every one inside the plot.
    const auto sp = spans(svg);
    ASSERT_FALSE(sp.empty());
    EXPECT_LT(sp.size(), spans(all).size() / 2);
    for (const auto& [x0, x1] : sp) {
        EXPECT_GE(x0, left - 1e-3);
        EXPECT_LE(x1, left + plot + 0.5 + 1e-3);  // a clipped span ends at the window's end (or is 0.5 px)
    }
    // Ticks: at least 4, round multiples of a 1-2-5 step, inside [a, b], at their positions.
    const auto tk = ticks(svg);
    ASSERT_GE(tk.size(), 4u);
    const double step = tk[1].second - tk[0].second;
    const double mant = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::abs(mant - 1) < 1e-6 || std::abs(mant - 2) < 1e-6 || std::abs(mant - 5) < 1e-6) << step;
    for (const auto& [x, us] : tk) {
        EXPECT_GE(us, a * 1e6 - 1e-6);
        EXPECT_LE(us, b * 1e6 + 1e-6);
        EXPECT_NEAR(std::fmod(us / step + 0.5, 1.0), 0.5, 1e-6) << us;  // a multiple of the step
        EXPECT_NEAR(x, left + (us * 1e-6 - a) / (b - a) * plot, 0.01);
    }
    EXPECT_NE(svg.find("[window "), std::string::npos);
    // A window in the Perfetto trace: only the events overlapping it, clipped to it.
    const auto j = nlohmann::json::parse(to_chrome_trace(r, {.t_begin = a, .t_end = b}));
    int n = 0;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "X") {
            ++n;
            EXPECT_GE(e["ts"].get<double>(), a * 1e6 - 1e-3);
            EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), b * 1e6 + 1e-3);
        }
    EXPECT_GT(n, 0);
    // A window that is empty or reversed: REP3.
    for (const auto& [x, y] : {std::pair{b, a}, std::pair{-1.0, a}, std::pair{a, a}}) {
        svg_options bad;
        bad.t_begin = x;
        bad.t_end = y;
        try {
            (void)to_svg(r, bad);
            ADD_FAILURE() << x << " " << y;
        } catch (const ptpu::error& e) {
            EXPECT_EQ(e.rule(), "REP3");
        }
    }
}

TEST(SvgTimeline, TitleNamesTheKernelAndConfiguration) {
    const report r = long_traced();
    const std::string svg = to_svg(r);
    const std::size_t t = svg.find("<text x=\"10\" y=\"20\"");
    ASSERT_NE(t, std::string::npos);
    const std::string title = svg.substr(t, svg.find("</text>", t) - t);
    for (const char* part : {"operands x, y;", "256 grid steps", "v5e", "1 core", "device time", "bound by"})
        EXPECT_NE(title.find(part), std::string::npos) << part << " in " << title;
    svg_options o;
    o.title = "copy <x> & y";  // the caller's own, escaped
    const std::string named = to_svg(r, o);
    EXPECT_NE(named.find(">copy &lt;x&gt; &amp; y</text>"), std::string::npos);
}

// ---- Grid-step marks ------------------------------------------------------------------------------

namespace {
// The x positions of the SVG's grid-step marks, and its step labels as (x, step).
std::vector<double> step_marks(const std::string& svg) {
    std::vector<double> v;
    for (std::size_t p = svg.find("class=\"step-mark\" x1=\""); p != std::string::npos;
         p = svg.find("class=\"step-mark\" x1=\"", p + 1))
        v.push_back(std::stod(svg.substr(p + 22)));
    return v;
}
std::vector<std::pair<double, int>> step_labels(const std::string& svg) {
    std::vector<std::pair<double, int>> v;
    for (std::size_t p = svg.find("class=\"step-label\" x=\""); p != std::string::npos;
         p = svg.find("class=\"step-label\" x=\"", p + 1)) {
        const std::size_t gt = svg.find('>', p);
        v.emplace_back(std::stod(svg.substr(p + 22)), std::stoi(svg.substr(gt + 1)));
    }
    return v;
}
// Where each step's overhead op starts on core 0, in step order (one per step: no inner pipeline).
std::vector<double> overhead_starts(const report& r) {
    std::vector<std::pair<std::uint32_t, double>> v;
    for (const sim::span& s : r.timeline)
        if (s.track == sim::span::track::stream && s.kind == sim::op_kind::overhead && s.core == 0)
            v.emplace_back(s.step, s.begin);
    std::sort(v.begin(), v.end());
    std::vector<double> t;
    for (const auto& p : v) t.push_back(p.second);
    return t;
}
}  // namespace

TEST(SvgTimeline, MarksEachGridStepWhereItsOverheadStarts) {
    const report r = traced();
    ASSERT_EQ(r.cores, 1);
    const std::vector<double> t = overhead_starts(r);
    ASSERT_EQ(t.size(), 4u);  // Grid<4>
    const std::string svg = to_svg(r);
    const int left = 150, plot = svg_options{}.width - 150 - 20;
    const std::vector<double> xs = step_marks(svg);
    ASSERT_EQ(xs.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(xs[k], left + t[k] / r.device_time * plot, 0.01) << k;
    const auto labels = step_labels(svg);  // few steps: every one labelled, 0 to 3
    ASSERT_EQ(labels.size(), 4u);
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(labels[k].second, static_cast<int>(k));
    svg_options off;
    off.step_marks = false;
    EXPECT_TRUE(step_marks(to_svg(r, off)).empty());
}

TEST(SvgTimeline, StepMarksThinOnALongRunAndLabelsNeverOverlap) {
    const report r = long_traced();  // 256 steps
    svg_options o;
    o.width = 400;  // 230 px of plot: 256 ticks would be under 1 px apart
    const std::string svg = to_svg(r, o);
    const std::vector<double> xs = step_marks(svg);
    // Every 5th step (the least of 1, 2, 5, … keeping ticks ≥ 4 px apart on average: 256·4/230 > 2).
    EXPECT_EQ(xs.size(), 52u);
    const std::vector<double> t = overhead_starts(r);
    ASSERT_EQ(t.size(), 256u);
    for (std::size_t k = 0; k < xs.size(); ++k) EXPECT_NEAR(xs[k], 150 + t[5 * k] / r.device_time * 230, 0.01);
    const auto labels = step_labels(svg);
    ASSERT_GE(labels.size(), 2u);
    const double width = 6.0 * 3 + 6;  // a 3-digit label
    for (std::size_t k = 1; k < labels.size(); ++k) {
        EXPECT_GE(labels[k].first - labels[k - 1].first, width) << k;
        EXPECT_EQ((labels[k].second - labels[0].second) % 5, 0);  // labelled steps are marked ones
    }
    EXPECT_LE(labels.size() * width, 230.0);
    // The full width draws all 256: 1230 px leave them more than 4 px apart.
    EXPECT_EQ(step_marks(to_svg(r)).size(), 256u);
}

TEST(SvgTimeline, StepMarksClipToTheWindow) {
    const report r = long_traced();
    const double T = r.device_time;
    const double a = 0.4137 * T, b = 0.5291 * T;
    svg_options o;
    o.t_begin = a;
    o.t_end = b;
    const std::vector<double> xs = step_marks(to_svg(r, o));
    std::vector<double> inside;
    for (double t : overhead_starts(r))
        if (t >= a && t <= b) inside.push_back(150 + (t - a) / (b - a) * (o.width - 170));
    ASSERT_GE(inside.size(), 10u);
    ASSERT_EQ(xs.size(), inside.size());
    for (std::size_t k = 0; k < xs.size(); ++k) EXPECT_NEAR(xs[k], inside[k], 0.01) << k;
}

TEST(SvgTimeline, StepMarksPerCoreOnAMegacore) {
    using Mc = pallas_call<Grid<4>, Semantics<parallel>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5p>>;
    Mc k{{.timeline = true}};
    auto [y, r] = k([](auto a, auto b) { store(b, load(a)); }, host_array<X>{});
    ASSERT_EQ(r.cores, 2);
    const std::string svg = to_svg(r);
    // Two steps on each core, drawn in that core's strip (y1 differs between the cores).
    std::map<int, int> per_y;
    for (std::size_t p = svg.find("class=\"step-mark\""); p != std::string::npos;
         p = svg.find("class=\"step-mark\"", p + 1))
        ++per_y[std::stoi(svg.substr(svg.find("y1=\"", p) + 4))];
    ASSERT_EQ(per_y.size(), 2u);
    for (const auto& [yy, n] : per_y) EXPECT_EQ(n, 2) << yy;
    EXPECT_NE(svg.find("core 1 steps"), std::string::npos);
}
