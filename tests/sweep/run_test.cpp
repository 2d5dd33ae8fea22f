// Tests sweep/run.hpp and sweep/run_static.hpp on a blocked matmul with an accumulator (one
// dynamic_call type serves every run-time point): the ranking against individually predicted
// reports (equal device times, exactly), rejected points with their rule ids (24 VMEM on v5e, 15
// tiling, 19 buffer count), a parallel sweep equal to a serial one, the CSV and JSON files (parsed
// back), the progress bar (quiet when stderr is not a terminal), the baseline's speedups, the
// mixture of shapes, the HTML report's section made of a sweep (sweep/html.hpp: the same ranking,
// rejections and default, timelines predicted again for the best and the default only), and a
// compile-time space whose infeasible types are reported by rule.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ptpu/ptpu.hpp>
#include <ptpu/sweep/html.hpp>
#include <ptpu/sweep/run.hpp>
#include <ptpu/sweep/run_static.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using namespace ptpu;
namespace tpu = ptpu::tpu;

using F2 = Operand<float, 2>;
using Matmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;

constexpr auto body = [](auto x, auto y, auto o, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(x), load(y)));
    if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
};

// A (n x n) @ (n x n) matmul in (bm, bm) x (bm, bk) blocks; y's windows Buffered<buffers>.
Matmul matmul(index_t n, index_t bm, index_t bk, int buffers, const chip& c) {
    Matmul mm;
    mm.semantics = {parallel, parallel, arbitrary};
    mm.chip = c;
    mm.in[0].index_map = [](index_t i, index_t, index_t k) { return idx(i, k); };
    mm.in[1].index_map = [](index_t, index_t j, index_t k) { return idx(k, j); };
    mm.out[0].index_map = [](index_t i, index_t j, index_t) { return idx(i, j); };
    mm.in[0].shape = mm.in[1].shape = mm.out[0].shape = {n, n};
    mm.grid = {(n + bm - 1) / bm, (n + bm - 1) / bm, (n + bk - 1) / bk};
    mm.in[0].block = {bm, bk};
    mm.in[1].block = {bk, bm};
    mm.in[1].buffer_count = buffers;
    mm.out[0].block = {bm, bm};
    mm.scratch[0] = {bm, bm};
    return mm;
}

constexpr index_t n = 1024;
using space_t = sweep::space<index_t, index_t, int, const chip*>;

// 3 x 2 x 2 x 2 = 24 points, all feasible.
space_t feasible_space() { return space_t{{128, 256, 512}, {128, 512}, {1, 2}, {&tpu::v5e, &tpu::v6e}}; }
auto configure = [](index_t bm, index_t bk, int bc, const chip* c) { return matmul(n, bm, bk, bc, *c); };
auto configure_4k = [](index_t bm, index_t bk, int bc, const chip* c) { return matmul(4096, bm, bk, bc, *c); };

TEST(SweepRun, RanksByDeviceTimeAsIndividualPredictionsDo) {
    const space_t s = feasible_space();
    const sweep::result r = sweep::run(s, configure, body, {.bar = sweep::progress::off});
    ASSERT_EQ(r.size(), 24u);
    EXPECT_TRUE(r.rejected.empty()) << r.rejections();
    ASSERT_EQ(r.ranked.size(), 24u);
    // Each entry is the point's own prediction with the sweep's options (no per-step rows),
    // exactly.
    std::vector<std::tuple<index_t, index_t, int, const chip*>> pts;
    for (const auto& [bm, bk, bc, c] : s.points()) pts.emplace_back(bm, bk, bc, c);
    for (const sweep::entry& e : r.ranked) {
        const auto [bm, bk, bc, c] = pts.at(e.index);
        Matmul lean = matmul(n, bm, bk, bc, *c);
        lean.options.per_step = per_step_rows::never;
        EXPECT_EQ(e.rep.device_time, lean.predict(body).device_time) << e.label;
        EXPECT_EQ(e.time, e.rep.device_time);
        // With predict's defaults every op is simulated one by one; the fast lane's sums may
        // round differently (measured: within 2e-14 relative).
        const double d = matmul(n, bm, bk, bc, *c).predict(body).device_time;
        EXPECT_NEAR(e.rep.device_time, d, 1e-12 * d) << e.label;
        EXPECT_TRUE(e.rep.steps.empty());  // lean: no per-step rows kept
    }
    // Best first; equal times keep the space's order.
    for (std::size_t i = 1; i < r.ranked.size(); ++i) {
        EXPECT_LE(r.ranked[i - 1].time, r.ranked[i].time);
        if (r.ranked[i - 1].time == r.ranked[i].time) {
            EXPECT_LT(r.ranked[i - 1].index, r.ranked[i].index);
        }
    }
    // Default labels are the point's values, the chip by name.
    EXPECT_EQ(r.at_index(0)->label, "128, 128, 1, v5e");
    EXPECT_EQ(r.at_index(23)->label, "512, 512, 2, v6e");
    ASSERT_EQ(r.top(5).size(), 5u);
    EXPECT_EQ(&r.top(5)[0], &r.best());
    EXPECT_EQ(r.top(100).size(), 24u);
    EXPECT_GE(r.threads, 1u);
}

TEST(SweepRun, BestHandsBackItsPointAndConfiguration) {
    const auto r = sweep::run(feasible_space(), configure, body, {.bar = sweep::progress::off});
    ASSERT_EQ(r.points.size(), 24u);
    const auto b = r.best();
    // The best entry's fields, its point (the space's tuple) and its configuration made again.
    EXPECT_EQ(b.index, r.ranked.front().index);
    EXPECT_EQ(b.label, r.ranked.front().label);
    EXPECT_EQ(b.time, r.ranked.front().time);
    EXPECT_EQ(&r.best_entry(), &r.ranked.front());
    EXPECT_EQ(b.point, r.points.at(b.index));
    const auto [bm, bk, bc, c] = b.point;
    EXPECT_EQ(b.label, std::to_string(bm) + ", " + std::to_string(bk) + ", " + std::to_string(bc) + ", " + sweep::chip_label(*c));
    static_assert(std::is_same_v<decltype(b.config), Matmul>);
    const Matmul own = matmul(n, bm, bk, bc, *c);
    ASSERT_EQ(b.config.grid.size(), 3);
    for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(b.config.grid[d], own.grid[d]);
    EXPECT_EQ(b.config.in[1].buffer_count, bc);
    // Predicted again as the sweep did (lean), it takes exactly the ranked time.
    Matmul lean = b.config;
    lean.options.per_step = per_step_rows::never;
    EXPECT_EQ(lean.predict(body).device_time, b.time);
    EXPECT_EQ(r.rank_of(b), 1u);
    // Any entry: point(e) and config(e).
    const sweep::entry& last = r.ranked.back();
    EXPECT_EQ(r.point(last), r.points.at(last.index));
    Matmul last_lean = r.config(last);
    last_lean.options.per_step = per_step_rows::never;
    EXPECT_EQ(last_lean.predict(body).device_time, last.time);
    // As a sweep::result (a slice of it), best() is the entry itself.
    const sweep::result& plain = r;
    EXPECT_EQ(&plain.best(), &r.ranked.front());

    // Run the best configuration of a small sweep on data: small integers multiply exactly.
    const std::vector<index_t> blocks{128, 256};
    const auto small = sweep::run(
        blocks, [](index_t bm2) { return matmul(256, bm2, 128, 2, tpu::v6e); }, body,
        {.bar = sweep::progress::off});
    const auto sb = small.best();
    EXPECT_EQ(sb.point, blocks.at(sb.index));
    std::vector<float> x(256 * 256), y(256 * 256);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
        y[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    }
    const auto [o, rep] = sb.config(body, x, y);
    EXPECT_NEAR(rep.device_time, sb.time, 1e-12 * sb.time);
    for (std::size_t i = 0; i < 256; i += 37)
        for (std::size_t j = 0; j < 256; j += 29) {
            float want = 0;
            for (std::size_t k = 0; k < 256; ++k) want += x[i * 256 + k] * y[k * 256 + j];
            ASSERT_EQ(o[i * 256 + j], want) << i << ", " << j;
        }

    // run_shapes keeps the points too; its best has no single configuration.
    const sweep::space<index_t, const chip*> s2{{128, 256}, {&tpu::v5e, &tpu::v6e}};
    using shape = std::tuple<index_t, index_t>;
    const auto rs = sweep::run_shapes(
        s2, std::vector<shape>{{512, 128}}, [](const std::tuple<index_t, const chip*>& p, const shape& sh) {
            return matmul(std::get<0>(sh), std::get<0>(p), std::get<1>(sh), 2, *std::get<1>(p));
        },
        body, {.bar = sweep::progress::off});
    const auto rb = rs.best();
    EXPECT_EQ(rb.point, rs.points.at(rb.index));
    EXPECT_EQ(rb.label, sweep::default_label(rb.point));
}

// Generic code over sweeps, as users write it (g++ 12 and clang build this file): the space, the
// configure function and the body are template parameters, and best()'s point and configuration
// are dependent.
template <class Space, class Configure, class Body>
auto best_of(const Space& s, Configure configure_point, const Body& b) {
    const auto r = sweep::run(s.where([](auto bm, auto bk, auto...) { return bk <= bm; }), configure_point, b,
                              {.bar = sweep::progress::off});
    auto best = r.best();
    auto config = best.config;
    config.options.per_step = per_step_rows::never;
    return std::tuple{best.point, config.predict(b).device_time, best.time, r.size()};
}

TEST(SweepRun, BestInGenericCode) {
    const auto [point, again, time, size] = best_of(feasible_space(), configure, body);
    EXPECT_EQ(size, 16u);  // bk <= bm: K block 128 for bm 128 and 256, both for 512; x 2 x 2
    EXPECT_EQ(again, time);
    EXPECT_LE(std::get<1>(point), std::get<0>(point));
}

// A configure function given as a plain function (kept as a pointer by the result).
Matmul configure_small(index_t bm, unsigned bk, bool deep, const chip* c) {
    return matmul(256, bm, static_cast<index_t>(bk), deep ? 1 : 2, c != nullptr ? *c : tpu::v5e);
}

// Default labels of every kind of value the compiled part writes (signed and unsigned integers,
// bools, chips by pointer, a null one included), with some axes named; config(e) through a
// function pointer and through a lambda holding state, on copies that outlive the sweep's result.
TEST(SweepRun, DefaultLabelsAndConfigureOfEveryKind) {
    const sweep::space<index_t, unsigned, bool, const chip*> s{
        {128, 256}, {128u, 256u}, {false, true}, {&tpu::v5e, nullptr}};
    const sweep::options opt{.bar = sweep::progress::off, .axis_names = {"bm", "", "deep"}};
    auto r = sweep::run(s, configure_small, body, opt);
    ASSERT_EQ(r.size(), 16u);
    ASSERT_EQ(r.ranked.size(), 16u);
    for (const sweep::entry& e : r.ranked)
        EXPECT_EQ(e.label, sweep::default_label(r.point(e), opt.axis_names)) << e.index;
    const sweep::entry* first = r.at_index(0);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->label, "bm=128, 128, deep=false, v5e");
    const sweep::entry* last = r.at_index(15);
    ASSERT_NE(last, nullptr);
    EXPECT_EQ(last->label, "bm=256, 256, deep=true, null");
    // A chip by value, and an integer point that is not a tuple.
    const sweep::space<chip> by_value{{tpu::v6e}};
    const auto rv = sweep::run(by_value, [](const chip& c) { return matmul(256, 128, 128, 2, c); }, body,
                               {.bar = sweep::progress::off});
    EXPECT_EQ(rv.ranked.at(0).label, "v6e");
    const auto ri =
        sweep::run(std::vector<int>{128, 256}, [](int bm) { return matmul(256, bm, 128, 2, tpu::v5e); }, body,
                   {.bar = sweep::progress::off, .axis_names = {"bm"}});
    EXPECT_EQ(ri.at_index(1)->label, "bm=256");

    // configure as a function pointer: the copy made before the original goes still makes configs.
    std::optional<decltype(r)> kept(r);
    r = {};
    const auto b = kept->best();
    const auto [bm, bk, deep, c] = b.point;
    const Matmul want = configure_small(bm, bk, deep, c);
    EXPECT_EQ(b.config.in[1].buffer_count, want.in[1].buffer_count);
    EXPECT_EQ(b.config.grid[2], want.grid[2]);
    Matmul again = kept->config(kept->ranked.back());
    again.options.per_step = per_step_rows::never;
    EXPECT_EQ(again.predict(body).device_time, kept->ranked.back().time);

    // configure as a lambda with state: shared by the copies, alive after the sweep's result.
    index_t size = 512;
    std::optional<sweep::point_result<std::tuple<index_t, int>, Matmul>> copy;
    {
        const sweep::space<index_t, int> s2{{128, 256}, {1, 2}};
        const auto r2 =
            sweep::run(s2, [size](index_t b2, int bc) { return matmul(size, b2, 128, bc, tpu::v5e); }, body,
                       {.bar = sweep::progress::off});
        copy = r2;
    }
    size = 0;  // the lambda holds its own copy
    const auto b2 = copy->best();
    EXPECT_EQ(b2.config.in[0].shape[0], 512);
    EXPECT_EQ(copy->config(copy->ranked.back()).in[0].shape[0], 512);
    EXPECT_EQ(b2.label, sweep::default_label(b2.point));

    // A default-constructed result has no configure function: an exception, not a call through null.
    sweep::point_result<std::tuple<index_t, int>, Matmul> none;
    none.points.push_back({128, 2});
    none.ranked.push_back(copy->ranked.front());
    none.ranked.front().index = 0;
    EXPECT_THROW((void)none.config(none.ranked.front()), std::logic_error);
    EXPECT_THROW((void)none.best(), std::logic_error);
}

TEST(SweepRun, EqualTimesKeepTheSpacesOrder) {
    // The same configuration three times (equal times, exactly), after a slower one.
    const space_t s{{128, 256, 256, 256}, {128}, {2}, {&tpu::v5e}};
    const sweep::result r = sweep::run(s, configure, body, {.threads = 2, .bar = sweep::progress::off});
    ASSERT_EQ(r.ranked.size(), 4u);
    EXPECT_EQ(r.ranked[0].time, r.ranked[2].time);
    EXPECT_EQ(r.ranked[0].index, 1u);
    EXPECT_EQ(r.ranked[1].index, 2u);
    EXPECT_EQ(r.ranked[2].index, 3u);
    EXPECT_EQ(r.ranked[3].index, 0u);
    EXPECT_GT(r.ranked[3].time, r.ranked[0].time);
}

TEST(SweepRun, RejectedPointsCarryTheirRule) {
    // A 4096-square matmul. v5e's scoped VMEM limit is 16 MiB: (2048, 2048) f32 windows of x and
    // y double-buffered are 64 MiB (24); a 100-row block breaks the (8, 128) tiling (15); Buffered<3> at the top level
    // is not supported (19).
    const space_t s{{100, 256, 2048}, {256, 2048}, {2, 3}, {&tpu::v5e}};
    const sweep::result r = sweep::run(s, configure_4k, body,
                                       {.bar = sweep::progress::off, .axis_names = {"bm", "bk", "bc", "chip"}});
    ASSERT_EQ(r.size(), 12u);
    std::map<std::string, std::string> rule_of;
    for (const sweep::entry& e : r.rejected) rule_of[e.label] = e.rule;
    EXPECT_EQ(rule_of["bm=2048, bk=2048, bc=2, chip=v5e"], "24");
    EXPECT_EQ(rule_of["bm=100, bk=256, bc=2, chip=v5e"], "15");
    EXPECT_EQ(rule_of["bm=256, bk=256, bc=3, chip=v5e"], "19");
    EXPECT_EQ(rule_of["bm=2048, bk=256, bc=2, chip=v5e"], "24");  // the (2048, 2048) output windows
    ASSERT_EQ(r.ranked.size(), 2u);  // (256, 256, 2) and (256, 2048, 2)
    EXPECT_EQ(r.ranked[0].label.substr(0, 7), "bm=256,");
    for (const sweep::entry& e : r.rejected) {
        EXPECT_FALSE(e.ok);
        EXPECT_EQ(e.message.rfind("ptpu[" + e.rule + "]", 0), 0u) << e.message;
        // The point's own prediction raises the same rule.
        const auto [bm, bk, bc, c] = [&] {
            std::size_t i = 0;
            for (const auto& p : s.points())
                if (i++ == e.index) return std::tuple<index_t, index_t, int, const chip*>(p);
            return std::tuple<index_t, index_t, int, const chip*>{};
        }();
        try {
            (void)matmul(4096, bm, bk, bc, *c).predict(body);
            ADD_FAILURE() << e.label << " predicted alone";
        } catch (const error& x) {
            EXPECT_EQ(x.rule(), e.rule);
            EXPECT_EQ(std::string(x.what()), e.message);
        }
    }
    // The summary groups them by rule, the largest group first.
    const std::string sum = r.rejections();
    EXPECT_EQ(sum.rfind("10 points rejected: ", 0), 0u) << sum;
    std::map<std::string, int> count;
    for (const sweep::entry& e : r.rejected) ++count[e.rule];
    for (const auto& [rule, k] : count)
        EXPECT_NE(sum.find(std::to_string(k) + " by ptpu[" + rule + "]"), std::string::npos) << sum;
    EXPECT_NE(sum.find(" by ptpu[24] VMEM limit"), std::string::npos) << sum;
    EXPECT_NE(sum.find(" by ptpu[15] tiling"), std::string::npos) << sum;
    std::ostringstream table;
    r.print(table);
    EXPECT_NE(table.str().find(sum), std::string::npos);
}

TEST(SweepRun, ParallelEqualsSerial) {
    const space_t s{{128, 256, 100}, {128, 512, 2048}, {1, 2}, {&tpu::v5e, &tpu::v5p, &tpu::v7x}};
    const auto one = sweep::run(s, configure, body, {.threads = 1, .bar = sweep::progress::off});
    const auto many = sweep::run(s, configure, body, {.threads = 4, .bar = sweep::progress::off});
    EXPECT_EQ(one.threads, 1u);
    EXPECT_EQ(many.threads, 4u);
    ASSERT_EQ(one.ranked.size(), many.ranked.size());
    ASSERT_EQ(one.rejected.size(), many.rejected.size());
    EXPECT_GT(one.rejected.size(), 0u);
    for (std::size_t i = 0; i < one.ranked.size(); ++i) {
        EXPECT_EQ(one.ranked[i].index, many.ranked[i].index);
        EXPECT_EQ(one.ranked[i].label, many.ranked[i].label);
        EXPECT_EQ(one.ranked[i].rep.device_time, many.ranked[i].rep.device_time);
        EXPECT_EQ(one.ranked[i].rep.exposed_dma, many.ranked[i].rep.exposed_dma);
        EXPECT_EQ(one.ranked[i].rep.bound, many.ranked[i].rep.bound);
    }
    for (std::size_t i = 0; i < one.rejected.size(); ++i) {
        EXPECT_EQ(one.rejected[i].index, many.rejected[i].index);
        EXPECT_EQ(one.rejected[i].message, many.rejected[i].message);
    }
}

TEST(SweepRun, AnyRangeOfPoints) {
    // Points that are not tuples (a vector of block sizes) and a filtered view of a space.
    const std::vector<index_t> sizes{256, 100, 128};
    const sweep::result r = sweep::run(
        sizes, [](index_t bm) { return matmul(n, bm, 128, 2, tpu::v6e); }, body, {.bar = sweep::progress::off});
    ASSERT_EQ(r.ranked.size(), 2u);
    ASSERT_EQ(r.rejected.size(), 1u);
    EXPECT_EQ(r.rejected[0].label, "100");
    EXPECT_EQ(r.rejected[0].rule, "15");
    const space_t s = feasible_space();
    auto v6e_only = s.where([](index_t, index_t, int, const chip* c) { return c == &tpu::v6e; });
    const sweep::result f = sweep::run(v6e_only, configure, body, {.bar = sweep::progress::off});
    EXPECT_EQ(f.size(), 12u);
    for (const sweep::entry& e : f.ranked) EXPECT_EQ(e.rep.chip, "v6e");
    EXPECT_EQ(f.at_index(0)->label, "128, 128, 1, v6e");
}

TEST(SweepRun, OtherExceptionsPropagate) {
    const space_t s = feasible_space();
    auto throwing = [](index_t bm, index_t bk, int bc, const chip* c) {
        if (bm == 256 && bk == 512) throw std::runtime_error("not a rule");
        return matmul(n, bm, bk, bc, *c);
    };
    EXPECT_THROW((void)sweep::run(s, throwing, body, {.threads = 2, .bar = sweep::progress::off}),
                 std::runtime_error);
}

// A minimal CSV reader (quoted fields, doubled quotes) for the file's round trip.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows(1);
    std::string field;
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
                field += '"', ++i;
            else if (c == '"')
                quoted = false;
            else
                field += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            rows.back().push_back(field), field.clear();
        } else if (c == '\n') {
            rows.back().push_back(field), field.clear();
            rows.emplace_back();
        } else {
            field += c;
        }
    }
    if (rows.back().empty()) rows.pop_back();
    return rows;
}

TEST(SweepRun, CsvAndJsonHoldEveryPoint) {
    const space_t s{{128, 100}, {128, 512}, {2}, {&tpu::v5e, &tpu::v7x}};
    // Labels with what files must escape: quotes, commas, a backslash, a newline.
    auto label = [](index_t bm, index_t bk, int, const chip* c) {
        // (Appended, not "literal" + std::string: g++ 12 -O3 warns a false -Wrestrict there.)
        std::string l = "\"";
        l += std::to_string(bm);
        l += "\", bk\\";
        l += std::to_string(bk);
        l += "\n";
        l += sweep::chip_label(*c);
        return l;
    };
    const sweep::result r =
        sweep::run(s, configure, body, {.bar = sweep::progress::off, .baseline = 0}, label);
    ASSERT_EQ(r.size(), 8u);
    ASSERT_EQ(r.rejected.size(), 4u);  // bm 100: tiling
    EXPECT_EQ(r.at_index(7)->label, "\"100\", bk\\512\n7x");

    std::ostringstream js;
    r.write_json(js);
    const auto j = nlohmann::json::parse(js.str());
    EXPECT_EQ(j["points"], 8);
    EXPECT_EQ(j["feasible"], 4);
    EXPECT_EQ(j["rejected"], 4);
    EXPECT_EQ(j["baseline"], 0);
    ASSERT_EQ(j["entries"].size(), 8u);
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& o = j["entries"][i];
        const sweep::entry& e = r.ranked[i];
        EXPECT_EQ(o["status"], "ok");
        EXPECT_EQ(o["rank"], i + 1);
        EXPECT_EQ(o["index"], e.index);
        EXPECT_EQ(o["label"], e.label);
        EXPECT_EQ(o["device_time_s"].get<double>(), e.rep.device_time);  // exact round trip
        EXPECT_EQ(o["bound"], e.rep.bound);
        EXPECT_EQ(o["vmem_bytes"].get<std::int64_t>(), e.vmem_bytes());
        EXPECT_EQ(o["speedup"].get<double>(), *r.speedup(e));
        EXPECT_EQ(o["mxu_utilization"].get<double>(), e.rep.mxu_utilization);
    }
    for (std::size_t i = 4; i < 8; ++i) {
        const auto& o = j["entries"][i];
        EXPECT_EQ(o["status"], "rejected");
        EXPECT_EQ(o["rule"], "15");
        EXPECT_EQ(o["message"], r.rejected[i - 4].message);
        EXPECT_EQ(o["label"], r.rejected[i - 4].label);
        EXPECT_FALSE(o.contains("device_time_s"));
    }

    std::ostringstream cs;
    r.write_csv(cs);
    const auto rows = read_csv(cs.str());
    ASSERT_EQ(rows.size(), 9u);
    const std::vector<std::string> header{"index", "label", "status", "rank", "time_s", "device_time_s", "bound",
                                          "bound_operand", "exposed_dma_share", "overhead_share", "vmem_bytes",
                                          "mxu_utilization", "speedup", "rule", "message"};
    EXPECT_EQ(rows[0], header);
    for (std::size_t i = 1; i < rows.size(); ++i) ASSERT_EQ(rows[i].size(), header.size()) << i;
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& row = rows[i + 1];
        EXPECT_EQ(row[0], std::to_string(r.ranked[i].index));
        EXPECT_EQ(row[1], r.ranked[i].label);
        EXPECT_EQ(row[2], "ok");
        EXPECT_EQ(row[3], std::to_string(i + 1));
        EXPECT_EQ(std::stod(row[5]), r.ranked[i].rep.device_time);
        EXPECT_EQ(row[6], r.ranked[i].rep.bound);
        EXPECT_EQ(row[13], "");
    }
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& row = rows[i + 5];
        EXPECT_EQ(row[1], r.rejected[i].label);
        EXPECT_EQ(row[2], "rejected");
        EXPECT_EQ(row[5], "");
        EXPECT_EQ(row[13], "15");
        EXPECT_EQ(row[14], r.rejected[i].message);
    }
}

TEST(SweepRun, BaselineSpeedups) {
    const space_t s = feasible_space();
    const sweep::result r = sweep::run(s, configure, body, {.bar = sweep::progress::off, .baseline = 5});
    const sweep::entry* b = r.baseline_entry();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->index, 5u);
    EXPECT_EQ(*r.speedup(*b), 1.0);
    EXPECT_EQ(*r.speedup(r.best()), b->time / r.best().time);
    EXPECT_GE(*r.speedup(r.best()), 1.0);
    std::ostringstream table;
    r.print(table, 3);
    EXPECT_NE(table.str().find("speedup"), std::string::npos);
    EXPECT_NE(table.str().find("21 more feasible points"), std::string::npos);
    sweep::result copy = r;
    EXPECT_TRUE(copy.set_baseline(r.best().label));
    EXPECT_EQ(*copy.speedup(copy.best()), 1.0);
    EXPECT_FALSE(copy.set_baseline("no such point"));
}

TEST(SweepRun, ProgressBarOnlyOnATerminal) {
    const space_t s = feasible_space();
    // stderr captured (a file, not a terminal): automatic stays quiet even past progress_after.
    testing::internal::CaptureStderr();
    (void)sweep::run(s, configure, body, {.bar = sweep::progress::automatic, .progress_after = 0});
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    // Forced on, the bar is drawn, ending with the whole count.
    testing::internal::CaptureStderr();
    (void)sweep::run(s, configure, body, {.bar = sweep::progress::on, .progress_after = 0});
    const std::string bar = testing::internal::GetCapturedStderr();
    EXPECT_NE(bar.find("24/24 points"), std::string::npos) << bar;
    // Off, or before progress_after: nothing.
    testing::internal::CaptureStderr();
    (void)sweep::run(s, configure, body, {.bar = sweep::progress::off, .progress_after = 0});
    (void)sweep::run(s, configure, body, {.bar = sweep::progress::on, .progress_after = 3600});
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(SweepRun, ShapesRankByTotalTime) {
    const sweep::space<index_t, const chip*> s{{128, 256}, {&tpu::v5e, &tpu::v6e}};
    // The shapes: (matrix size, K block).
    using shape = std::tuple<index_t, index_t>;
    const std::vector<shape> sizes{{512, 128}, {1024, 256}};
    auto config = [](const std::tuple<index_t, const chip*>& p, const shape& sh) {
        return matmul(std::get<0>(sh), std::get<0>(p), std::get<1>(sh), 2, *std::get<1>(p));
    };
    const sweep::result r = sweep::run_shapes(s, sizes, config, body, {.bar = sweep::progress::off});
    ASSERT_EQ(r.ranked.size(), 4u);
    EXPECT_EQ(r.shape_labels, (std::vector<std::string>{"512, 128", "1024, 256"}));
    auto lean = [](index_t size, index_t bm, index_t bk, const chip& c) {
        Matmul mm = matmul(size, bm, bk, 2, c);
        mm.options.per_step = per_step_rows::never;
        return mm.predict(body).device_time;
    };
    for (const sweep::entry& e : r.ranked) {
        ASSERT_EQ(e.shapes.size(), 2u);
        const index_t bm = e.index < 2 ? 128 : 256;
        const chip& c = e.index % 2 == 0 ? tpu::v5e : tpu::v6e;
        const double t0 = lean(512, bm, 128, c);
        const double t1 = lean(1024, bm, 256, c);
        EXPECT_EQ(e.shapes[0].device_time, t0);
        EXPECT_EQ(e.shapes[1].device_time, t1);
        EXPECT_EQ(e.time, t0 + t1);
        EXPECT_EQ(e.rep.device_time, t0);
    }
    for (std::size_t i = 1; i < r.ranked.size(); ++i) EXPECT_LE(r.ranked[i - 1].time, r.ranked[i].time);
    std::ostringstream js;
    r.write_json(js);
    const auto j = nlohmann::json::parse(js.str());
    EXPECT_EQ(j["shapes"][1], "1024, 256");
    EXPECT_EQ(j["entries"][0]["shape_times_s"][1].get<double>(), r.ranked[0].shapes[1].device_time);
    // A shape that rejects a point rejects the point, saying which shape: a K block of 100
    // breaks the (8, 128) tiling of x's block (15).
    const std::vector<shape> bad{{1024, 128}, {1024, 100}};
    const sweep::result rb = sweep::run_shapes(s, bad, config, body, {.bar = sweep::progress::off});
    EXPECT_EQ(rb.ranked.size(), 0u);
    ASSERT_EQ(rb.rejected.size(), 4u);
    EXPECT_EQ(rb.rejected[0].rule, "15");
    EXPECT_NE(rb.rejected[0].message.find("[shape 1024, 100]"), std::string::npos) << rb.rejected[0].message;
    // No feasible point has no best, and no shape is no sweep: SW1.
    const auto rule_of = [](auto&& f) {
        try {
            f();
        } catch (const error& e) {
            return std::string(e.rule());
        }
        return std::string("none");
    };
    EXPECT_EQ(rule_of([&] { (void)rb.best(); }), "SW1");
    EXPECT_EQ(rule_of([&] {
                  (void)sweep::run_shapes(s, std::vector<shape>{}, config, body,
                                          {.bar = sweep::progress::off});
              }),
              "SW1");
}

// ---- A compile-time space: configuration types, the infeasible ones reported by rule -----------

constexpr auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };
constexpr auto rows = [](auto i) { return idx(i, 0); };
template <class Rows, class C>
struct add_config;
template <index_t R, chip C>
struct add_config<sweep::value_t<R>, sweep::value_t<C>> {
    using B = BlockSpec<Block<R, 1024>, rows>;
    using call = pallas_call<Grid<8192 / R>, In<Arg<Array<float, 8192, 1024>, B>, Arg<Array<float, 8192, 1024>, B>>,
                             Out<Arg<Array<float, 8192, 1024>, B>>, Semantics<parallel>, Chip<C>>;
};

TEST(SweepHtml, TheSectionIsTheSweepsRankingRejectionsAndDefault) {
    // 24 points of a 2048-square matmul on v5e: a 100-row block breaks the tiling (15),
    // Buffered<3> is rule 19, and (2048, 2048) output blocks overflow the 16 MiB of VMEM (24:
    // the output window and the accumulator are 16 MiB each). The baseline, (128, 128,
    // Buffered<1>), is the slowest feasible point: it ranks below the top 4 shown.
    const space_t s{{100, 128, 256, 2048}, {128, 512}, {1, 2, 3}, {&tpu::v5e}};
    const auto configure = [](index_t bm, index_t bk, int bc, const chip* c) { return matmul(2048, bm, bk, bc, *c); };
    sweep::options opt{.bar = sweep::progress::off, .baseline = 6, .axis_names = {"bm", "bk", "bc", "chip"}};
    const sweep::result r = sweep::run(s, configure, body, opt);
    ASSERT_EQ(r.baseline_entry()->label, "bm=128, bk=128, bc=1, chip=v5e");
    ASSERT_GE(r.ranked.size(), 6u);
    ASSERT_EQ(&r.ranked.back(), r.baseline_entry()) << "the fixture wants the baseline ranked last";
    std::map<std::string, int> rules;
    for (const sweep::entry& e : r.rejected) ++rules[e.rule];
    ASSERT_EQ(rules.size(), 3u);
    ASSERT_TRUE(rules.contains("15") && rules.contains("19") && rules.contains("24"));

    int calls = 0;
    const sweep::timeline_fn predict_again = sweep::timeline_predictor(s, configure, body);
    const html_kernel k = sweep::html_section(
        r, {.title = "matmul", .summary = "2048^3", .top = 4},
        [&](const sweep::entry& e) { return ++calls, predict_again(e); });
    // The sweep's best 4 in its order, then the default; ranked as the sweep ranked.
    ASSERT_EQ(k.configs.size(), 5u);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(k.configs[i].name, r.ranked[i].label);
    EXPECT_EQ(k.default_config, 4u);
    EXPECT_EQ(k.configs[k.default_config].name, r.baseline_entry()->label);
    EXPECT_EQ(rank_order(k), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(best_of(k), 0u);
    // Every rejected point, with its rule's message.
    ASSERT_EQ(k.rejected.size(), r.rejected.size());
    for (std::size_t i = 0; i < k.rejected.size(); ++i) {
        EXPECT_EQ(k.rejected[i].first, r.rejected[i].label);
        EXPECT_EQ(k.rejected[i].second, r.rejected[i].message);
        EXPECT_EQ(k.rejected[i].second.rfind("ptpu[" + r.rejected[i].rule + "]", 0), 0u);
    }
    // Two predictions more (the best and the default), each the point's own with a timeline;
    // the others keep the sweep's lean reports.
    EXPECT_EQ(calls, 2);
    for (std::size_t i = 0; i < k.configs.size(); ++i) {
        const bool drawn = i == 0 || i == k.default_config;
        EXPECT_EQ(k.configs[i].result.timeline.empty(), !drawn) << k.configs[i].name;
        const double lean = (i < 4 ? r.ranked[i] : *r.baseline_entry()).rep.device_time;
        EXPECT_NEAR(k.configs[i].result.device_time, lean, 1e-12 * lean) << k.configs[i].name;
    }
    EXPECT_EQ(k.notes.back(), std::to_string(r.ranked.size() - 4) + " more feasible configurations not shown (" +
                                  std::to_string(r.ranked.size()) + " in all)");
    // The page draws both timelines, marks the default and names the rules.
    const std::string page = to_html({k});
    EXPECT_NE(page.find("id=\"k0-timeline-best\""), std::string::npos);
    EXPECT_NE(page.find("id=\"k0-timeline-default\""), std::string::npos);
    EXPECT_NE(page.find("<span class=\"tag default\">"), std::string::npos);
    for (const auto& [rule, count] : rules) EXPECT_NE(page.find("ptpu[" + rule + "]"), std::string::npos) << rule;

    // More timelines on request (their traces are linked); many rejections as the summary.
    calls = 0;
    const html_kernel k3 = sweep::html_section(
        r, {.title = "matmul", .top = 100, .max_rejected = 2, .timelines = 3},
        [&](const sweep::entry& e) { return ++calls, predict_again(e); });
    EXPECT_EQ(calls, 4);
    EXPECT_EQ(k3.configs.size(), r.ranked.size());
    EXPECT_EQ(k3.configs[k3.default_config].name, r.baseline_entry()->label);
    EXPECT_TRUE(k3.rejected.empty());
    EXPECT_EQ(k3.notes.back(), r.rejections());
}

TEST(SweepHtml, TheDefaultMustBeAFeasibleBaseline) {
    const space_t s{{100, 128}, {128}, {2}, {&tpu::v5e}};
    const auto section_rule = [&](std::optional<std::size_t> baseline) {
        sweep::options opt{.bar = sweep::progress::off, .baseline = baseline};
        try {
            (void)sweep::html_section(sweep::run(s, configure, body, opt), {.title = "t"},
                                      sweep::timeline_predictor(s, configure, body));
        } catch (const error& e) {
            return e.rule() + ": " + e.what();
        }
        return std::string("no error");
    };
    EXPECT_EQ(section_rule(1), "no error");
    EXPECT_TRUE(section_rule(std::nullopt).starts_with("SW2: ptpu[SW2] sweep::html_section (t): the sweep has no baseline"))
        << section_rule(std::nullopt);
    EXPECT_TRUE(section_rule(0).starts_with("SW2: ptpu[SW2] sweep::html_section (t): the baseline '100, 128, 2, v5e' "
                                            "is rejected: ptpu[15]"))
        << section_rule(0);
}

TEST(SweepRunStatic, InfeasibleTypesAreReportedByRule) {
    // 1024 rows: 3 operands x 2 buffers x 4 MiB = 24 MiB, over v5e's 16 MiB (24), within v6e's
    // 32 MiB; 12 rows break the (8, 128) tiling (15); 256 rows fit both.
    constexpr auto space = sweep::product(sweep::values<index_t{256}, index_t{12}, index_t{1024}>,
                                          sweep::values<tpu::v5e, tpu::v6e>);
    const sweep::result r = sweep::run_static<add_config>(space, add, {.bar = sweep::progress::off});
    ASSERT_EQ(r.size(), 6u);
    std::map<std::string, std::string> rule_of;
    for (const sweep::entry& e : r.rejected) rule_of[e.label] = e.rule;
    EXPECT_EQ(rule_of.size(), 3u);
    EXPECT_EQ(rule_of["12, v5e"], "15");
    EXPECT_EQ(rule_of["12, v6e"], "15");
    EXPECT_EQ(rule_of["1024, v5e"], "24");
    for (const sweep::entry& e : r.rejected) EXPECT_EQ(e.message.rfind("ptpu[" + e.rule + "]", 0), 0u);
    ASSERT_EQ(r.ranked.size(), 3u);
    // The feasible ones are their types' own predictions.
    for (const sweep::entry& e : r.ranked) {
        double want = 0;
        if (e.label == "256, v5e") want = add_config<sweep::value_t<index_t{256}>, sweep::value_t<tpu::v5e>>::call{}.predict(add).device_time;
        if (e.label == "256, v6e") want = add_config<sweep::value_t<index_t{256}>, sweep::value_t<tpu::v6e>>::call{}.predict(add).device_time;
        if (e.label == "1024, v6e") want = add_config<sweep::value_t<index_t{1024}>, sweep::value_t<tpu::v6e>>::call{}.predict(add).device_time;
        EXPECT_EQ(e.rep.device_time, want) << e.label;
    }
}

// A file the sweep cannot open is IO1, naming the path (before anything is written).
TEST(SweepRun, UnwritableFileIsIO1) {
    const sweep::result r;
    const std::string path = "/nonexistent-ptpu-dir/points.csv";
    for (int json = 0; json < 2; ++json) {
        try {
            if (json)
                r.write_json(std::filesystem::path(path));
            else
                r.write_csv(std::filesystem::path(path));
            ADD_FAILURE() << "no error for " << path;
        } catch (const error& e) {
            EXPECT_EQ(e.rule(), "IO1") << e.what();
            EXPECT_NE(std::string(e.what()).find("cannot write " + path), std::string::npos) << e.what();
        }
    }
}

}  // namespace
