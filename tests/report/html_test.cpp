// The HTML comparison report: its bars add up to the device time (the engine's per-core
// identity), the best and the default configuration are marked and drawn, text is escaped, the
// traces it links are written next to it and load as JSON, and bad input is a clear error.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ptpu/ptpu.hpp>
#include <ptpu/report/html.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

using namespace ptpu;

namespace {
using X = Array<float, 64, 256>;
template <index_t Rows, int Buffers, chip C = tpu::v5e>
using Copy = pallas_call<Grid<64 / Rows>, Semantics<parallel>, Chip<C>,
                         In<Arg<X, BlockSpec<Block<Rows, 256>, [](auto i) { return idx(i, 0); }, Buffered<Buffers>>>>,
                         Out<Arg<X, BlockSpec<Block<Rows, 256>, [](auto i) { return idx(i, 0); }>>>>;
constexpr auto body = [](auto a, auto b) { store(b, exp(load(a)) * 2.0f); };

template <class Call>
report predicted() {
    return Call{{.timeline = true}}.predict(body);
}

html_kernel three() {
    html_kernel k;
    k.title = "copy";
    k.summary = "exp(x) * 2 over 64 x 256";
    k.configs = {{"rows 8 Buffered<1>", predicted<Copy<8, 1>>()},
                 {"rows 8 Buffered<2>", predicted<Copy<8, 2>>()},
                 {"rows 32 Buffered<2>", predicted<Copy<32, 2>>()}};
    k.default_config = 0;
    return k;
}

int count(const std::string& s, const std::string& what) {
    int n = 0;
    for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}
}  // namespace

TEST(HtmlReport, BarsAddUpToTheDeviceTime) {
    for (const report& r : {predicted<Copy<8, 1>>(), predicted<Copy<8, 2>>(), predicted<Copy<8, 2, tpu::v5p>>()}) {
        SCOPED_TRACE(r.chip);
        const time_split s = split_time(r);
        EXPECT_NEAR(s.total(), r.device_time, 1e-9 * r.device_time);
        EXPECT_GT(s.compute, 0);
        EXPECT_GT(s.overhead, 0);
        // The bar is the core that finishes last.
        for (int c = 0; c < r.cores; ++c) EXPECT_LE(r.core[static_cast<std::size_t>(c)].time, r.core[static_cast<std::size_t>(s.core)].time);
    }
    EXPECT_EQ((predicted<Copy<8, 2, tpu::v5p>>().cores), 2);  // the megacore case above is one
}

TEST(HtmlReport, MarksTheBestAndTheDefaultAndDrawsBoth) {
    const html_kernel k = three();
    const std::vector<std::size_t> order = rank_order(k);
    ASSERT_EQ(order.size(), 3u);
    for (std::size_t i = 1; i < order.size(); ++i)
        EXPECT_LE(k.configs[order[i - 1]].result.device_time, k.configs[order[i]].result.device_time);
    const std::size_t best = best_of(k);
    EXPECT_EQ(best, order.front());
    ASSERT_NE(best, k.default_config) << "the fixture should have a faster configuration than the default";

    const std::string page = to_html({k});
    EXPECT_EQ(count(page, "<tr class=\"best\">"), 1);
    EXPECT_EQ(count(page, "<tr class=\"default\">"), 1);
    EXPECT_EQ(count(page, "id=\"k0-bars\""), 1);
    EXPECT_EQ(count(page, "id=\"k0-timeline-best\""), 1);
    EXPECT_EQ(count(page, "id=\"k0-timeline-default\""), 1);
    // Two timelines embedded (with a viewBox so they scale) and the bar chart.
    EXPECT_EQ(count(page, "<svg"), 3);
    EXPECT_EQ(count(page, "viewBox=\"0 0 1400 "), 2);
    // The verdict: the best by name, its gain over the default.
    const double gain = k.configs[k.default_config].result.device_time / k.configs[best].result.device_time;
    std::ostringstream g;
    g << std::fixed << std::setprecision(2) << gain << "×";
    EXPECT_NE(page.find("Best: <strong>" + k.configs[best].name.substr(0, 8)), std::string::npos);
    EXPECT_NE(page.find(g.str() + "</strong> faster than the default"), std::string::npos) << g.str();
    // One bar group per configuration, with a segment per non-zero part.
    EXPECT_EQ(count(page, "<g class=\"bar"), 3);

    // When the default is the best, one timeline and a sentence saying so.
    html_kernel same = k;
    same.default_config = best;
    const std::string p2 = to_html({same});
    EXPECT_EQ(count(p2, "id=\"k0-timeline-default\""), 0);
    EXPECT_NE(p2.find("The default configuration, <strong>"), std::string::npos);
}

TEST(HtmlReport, EscapesEveryText) {
    html_kernel k = three();
    k.title = "<script>alert(1)</script>";
    k.summary = "a & b < c";
    k.configs[1].name = "rows \"8\" <b>";
    k.notes = {"x > y"};
    k.rejected = {{"<i>", "ptpu[24] 'too big'"}};
    html_options o;
    o.subtitle = "</header>";
    const std::string page = to_html({k}, o);
    EXPECT_EQ(page.find("<script>alert"), std::string::npos);
    EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    EXPECT_NE(page.find("a &amp; b &lt; c"), std::string::npos);
    EXPECT_NE(page.find("rows &quot;8&quot; &lt;b&gt;"), std::string::npos);
    EXPECT_EQ(page.find("<b>"), std::string::npos);
    EXPECT_EQ(page.find("<i>"), std::string::npos);
    EXPECT_NE(page.find("ptpu[24] &#39;too big&#39;"), std::string::npos);
    EXPECT_EQ(count(page, "</header>"), 1);
}

TEST(HtmlReport, NeedsNothingFromTheNetwork) {
    const std::string page = to_html({three()});
    EXPECT_EQ(page.find("src="), std::string::npos);
    EXPECT_EQ(page.find("<link"), std::string::npos);
    EXPECT_EQ(page.find("url("), std::string::npos);
    EXPECT_EQ(page.find("@import"), std::string::npos);
    // The only absolute URLs are SVG's namespace names, which are never fetched.
    const std::regex url("https?://[^\"' <]*");
    for (auto it = std::sregex_iterator(page.begin(), page.end(), url); it != std::sregex_iterator(); ++it)
        EXPECT_EQ(it->str(), "http://www.w3.org/2000/svg");
}

TEST(HtmlReport, WritesThePageAndTheTracesItLinks) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ptpu_html_test" / "nested";
    std::filesystem::remove_all(dir.parent_path());
    const html_kernel k = three();
    const std::string page_path = write_html_report(dir.string(), {k, k});
    EXPECT_EQ(page_path, (dir / "index.html").string());
    std::ifstream f(page_path);
    const std::string page((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    int links = 0;
    const std::regex href("href=\"([^\"#][^\"]*)\"");
    for (auto it = std::sregex_iterator(page.begin(), page.end(), href); it != std::sregex_iterator(); ++it) {
        const std::filesystem::path trace = dir / (*it)[1].str();
        ASSERT_TRUE(std::filesystem::exists(trace)) << trace;
        std::ifstream t(trace);
        const auto j = nlohmann::json::parse(t);
        EXPECT_TRUE(j.contains("traceEvents"));
        ++links;
    }
    EXPECT_EQ(links, 6);  // every configuration of both kernels has a timeline
    EXPECT_EQ(trace_file_name(1, 2, "v5e  block_h 384  Buffered<2> (2 cores)"),
              "k1-c2-v5e-block-h-384-buffered-2-2-cores.trace.json");
    std::filesystem::remove_all(dir.parent_path());
}

TEST(HtmlReport, BadInputIsAClearError) {
    auto rule_of = [](const html_kernel& k) {
        try {
            (void)to_html({k});
        } catch (const error& e) {
            return e.rule() + ": " + e.what();
        }
        return std::string("no error");
    };
    html_kernel k = three();
    k.default_config = 3;
    EXPECT_TRUE(rule_of(k).starts_with("REP4: ptpu[REP4] html report, kernel 0 (copy): default_config 3")) << rule_of(k);
    k = three();
    k.best_config = 7;
    EXPECT_TRUE(rule_of(k).starts_with("REP4")) << rule_of(k);
    k = three();
    k.configs.clear();
    EXPECT_TRUE(rule_of(k).starts_with("REP4")) << rule_of(k);
    // The default must have a timeline to draw; the others need none.
    k = three();
    k.configs[0].result = Copy<8, 1>{}.predict(body);
    EXPECT_NE(rule_of(k).find("REP1: ptpu[REP1] html report, kernel 0 (copy): configuration 'rows 8 Buffered<1>' "
                              "has no timeline"),
              std::string::npos)
        << rule_of(k);
    k = three();
    k.configs[2].result = Copy<32, 2>{}.predict(body);
    k.best_config = 1;
    EXPECT_EQ(rule_of(k), "no error");
    EXPECT_EQ(count(to_html({k}), ".trace.json\""), 2);  // no trace link without a timeline
}

TEST(HtmlReport, KeepsAGivenRankingAndLinksFiles) {
    html_kernel k = three();
    // A ranking that is not by device time (a sweep's over several shapes may differ): kept.
    const std::vector<std::size_t> by_time = rank_order(k);
    k.order = {by_time[2], by_time[0], by_time[1]};
    EXPECT_EQ(rank_order(k), k.order);
    EXPECT_EQ(best_of(k), by_time[2]);
    k.files = {{"points <csv>", "a&b.csv"}, {"JSON", "a.json"}};
    const std::string page = to_html({k});
    const auto row = [&](std::size_t i) {
        return page.find("<td class=\"name\">" + detail::html_escape(k.configs[i].name) + "<");
    };
    ASSERT_NE(row(by_time[1]), std::string::npos);
    EXPECT_LT(row(by_time[2]), row(by_time[0]));
    EXPECT_LT(row(by_time[0]), row(by_time[1]));
    EXPECT_NE(page.find("id=\"k0-files\">Files: <a href=\"a&amp;b.csv\">points &lt;csv&gt;</a> · <a href=\"a.json\">"),
              std::string::npos);
    for (const std::vector<std::size_t>& bad : {std::vector<std::size_t>{0, 0, 1}, {0, 1}, {0, 1, 3}}) {
        k.order = bad;
        try {
            (void)to_html({k});
            ADD_FAILURE() << "order accepted";
        } catch (const error& e) {
            EXPECT_EQ(e.rule(), "REP4");
            EXPECT_NE(std::string(e.what()).find("order"), std::string::npos) << e.what();
        }
    }
}
