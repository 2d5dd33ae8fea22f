// Two of the engine's parts on their own: where each core's ops come from (sim/op_feed.hpp: the
// source's batches, the ops the lane gave back, a stream's end) and folded repeats
// (sim/folds.hpp: the repetitions made from the first, the period search over their start
// states, the errors). No engine: sources and states are written here.
#include <gtest/gtest.h>

#include <ptpu/core/error.hpp>
#include <ptpu/sim/folds.hpp>
#include <ptpu/sim/op_feed.hpp>
#include <ptpu/sim/step_rows.hpp>
#include <ptpu/sim/timeline_book.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

using ptpu::sim::options;
using ptpu::sim::result;
using ptpu::sim::detail::boundary;
using ptpu::sim::detail::folds;
using ptpu::sim::detail::op;
using ptpu::sim::detail::op_feed;
using ptpu::sim::detail::op_kind;
using ptpu::sim::detail::step_rows;
using ptpu::sim::detail::timeline_book;
using ptpu::stream::batch;

// A batch source of given batches per core, in order; an empty batch after the last. Counts the
// batches asked for lazily.
struct batches {
    std::vector<std::vector<op>> of[2];
    std::size_t taken[2]{};
    int lazy = 0;
    [[nodiscard]] bool batched() const { return true; }
    batch next_batch(int c, bool is_lazy) {
        lazy += is_lazy ? 1 : 0;
        const auto u = static_cast<std::size_t>(c);
        if (taken[u] == of[u].size()) return {};
        const std::vector<op>& b = of[u][taken[u]++];
        return {.ops = std::span<const op>(b), .repeat = taken[u] > 1, .whole_step = true};
    }
    bool next(int, op&) { return false; }
    std::int64_t skippable_periods(int, std::int64_t, std::uint32_t) { return 0; }
    void skip_periods(int, std::int64_t) {}
};

op compute(std::uint32_t step, std::uint32_t work) {
    return {.kind = op_kind::compute, .work = work, .step = step};
}

TEST(OpFeed, TakesTheSourceBatchByBatchAndSaysWhereABatchBegins) {
    batches src;
    src.of[0] = {{compute(0, 1), compute(0, 2)}, {compute(1, 3)}};
    result r;
    const options opt;
    timeline_book spans(r, opt);
    op_feed<batches> feed(src, spans);
    op o;
    ASSERT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::pulled);
    EXPECT_EQ(o.work, 1u);
    EXPECT_TRUE(feed.fresh(0));
    EXPECT_TRUE(feed.whole(0));
    EXPECT_EQ(feed.current(0).size(), 2u);
    ASSERT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::pulled);
    EXPECT_EQ(o.work, 2u);
    EXPECT_FALSE(feed.fresh(0));
    EXPECT_EQ(feed.position(0), 2u);
    ASSERT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::pulled);
    EXPECT_EQ(o.work, 3u);
    EXPECT_TRUE(feed.fresh(0));
    EXPECT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::ended);
    EXPECT_EQ(src.lazy, 0);
    // The other core's stream is its own.
    EXPECT_EQ(feed.next(1, feed.of(1), o), op_feed<batches>::took::ended);
}

TEST(OpFeed, GivesBackTheLanesOpsFirstThenTheSource) {
    batches src;
    src.of[0] = {{compute(5, 50)}};
    result r;
    const options opt;
    timeline_book spans(r, opt);
    op_feed<batches> feed(src, spans);
    feed.open_lane(1);
    feed.given_back(0) = {compute(3, 30), compute(4, 40)};
    feed.restart_given(0);
    EXPECT_TRUE(feed.giving_back(0));
    op o;
    ASSERT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::given_back);
    EXPECT_EQ(o.work, 30u);
    ASSERT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::given_back);
    EXPECT_EQ(o.work, 40u);
    EXPECT_FALSE(feed.giving_back(0));
    EXPECT_TRUE(feed.given_back(0).empty());  // emptied once all were taken
    ASSERT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::pulled);
    EXPECT_EQ(o.work, 50u);
    // A stream the lane saw end is not asked again, but given-back ops still come first.
    feed.set_ended(0);
    feed.given_back(0) = {compute(6, 60)};
    ASSERT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::given_back);
    EXPECT_EQ(o.work, 60u);
    EXPECT_EQ(feed.next(0, feed.of(0), o), op_feed<batches>::took::ended);
    EXPECT_EQ(src.taken[0], 1u);
}

TEST(OpFeed, TheLanesBatchesAreLazyOnlyWhereItExpectsARepeatAndHasNoTimeline) {
    batches src;
    src.of[0] = {{compute(0, 1)}, {compute(1, 1)}, {compute(2, 1)}};
    result r;
    options opt;
    {
        timeline_book spans(r, opt);
        op_feed<batches> feed(src, spans);
        EXPECT_FALSE(feed.next_batch(0, false).repeated);
        EXPECT_EQ(src.lazy, 0);
        const auto b = feed.next_batch(0, true);
        EXPECT_TRUE(b.repeated);
        EXPECT_EQ(src.lazy, 1);
    }
    opt.timeline = true;  // every op's label is kept as it is pulled: never lazy
    timeline_book spans(r, opt);
    op_feed<batches> feed(src, spans);
    const auto b = feed.next_batch(0, true);
    EXPECT_FALSE(b.repeated);
    EXPECT_EQ(src.lazy, 1);
    EXPECT_EQ(b.b.ops.size(), 1u);
    EXPECT_TRUE(feed.next_batch(0, true).b.ops.empty());
}

// A repeat op of `len` ops made `more` more times, DMA ids advancing by `ids`, inner rows by
// `rows`.
op repeat_op(std::uint32_t step, std::uint32_t len, std::int64_t more, std::uint32_t ids,
             std::uint16_t rows = 0) {
    return {.kind = op_kind::repeat, .dma = ids, .bytes = more, .sub = rows, .sem = len, .step = step};
}

TEST(Folds, MakesTheRepetitionsFromTheFirstWithIdsAndInnerRowsAdvanced) {
    folds f;
    EXPECT_EQ(f.where(0), 0);
    f.begin(0, repeat_op(7, 2, 2, 1, 1));
    EXPECT_EQ(f.where(0), 1);
    f.record(0, {.kind = op_kind::dma_start, .dma = 10, .bytes = 512, .sub = 1, .step = 7});
    EXPECT_EQ(f.where(0), 1);
    f.record(0, {.kind = op_kind::dma_wait, .dma = 10, .sub = 1, .step = 7});
    EXPECT_EQ(f.where(0), 2);
    std::vector<op> made;
    while (f.where(0) == 2) {
        op o;
        f.next(0, o);
        made.push_back(o);
    }
    ASSERT_EQ(made.size(), 4u);  // two more repetitions of two ops
    EXPECT_EQ(made[0].kind, op_kind::dma_start);
    EXPECT_EQ(made[0].dma, 11u);
    EXPECT_EQ(made[0].sub, 2);
    EXPECT_EQ(made[1].dma, 11u);
    EXPECT_EQ(made[2].dma, 12u);
    EXPECT_EQ(made[3].sub, 3);
    EXPECT_EQ(made[3].step, 7u);
}

TEST(Folds, FindsThePeriodOfRepetitionStartStatesAndSkipsItsWholePeriods) {
    result r;
    const options opt;  // no per-step rows: every whole period fits
    step_rows book(r, opt);
    folds f;
    f.begin(0, repeat_op(0, 1, 100, 0));
    f.record(0, compute(0, 1));
    // Start states alternate between two (a period of two repetitions) from the third on.
    const auto mark = [&](double lag) {
        boundary& b = f.mark(0);
        b = boundary{};
        b.lag[1] = lag;
        b.key = static_cast<std::uint64_t>(lag * 10);
    };
    folds::skip s{};
    const double lags[] = {0.5, 0.7, 0.1, 0.2, 0.1};
    int without = 0;  // repetition starts with no period found
    for (const double lag : lags) {
        ASSERT_TRUE(f.at_start(0));
        mark(lag);
        s = f.find(0, book);
        if (s.q > 0) break;
        ++without;
        op o;
        f.next(0, o);  // the repetition is simulated
    }
    EXPECT_EQ(without, 4);  // the fifth start repeats the third
    EXPECT_EQ(s.p, 2);
    // 100 repetitions made from the first, 4 of them simulated: 96 left, 48 whole periods.
    EXPECT_EQ(s.q, 48);
    f.skipped(0, s);
    EXPECT_EQ(f.where(0), 0);  // none left
}

TEST(Folds, ErrorsNameTheRuleAndTheStep) {
    const auto rule = [](auto&& call) {
        try {
            call();
        } catch (const ptpu::error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    folds f;
    EXPECT_NE(rule([&] { f.begin(0, repeat_op(3, 0, 1, 0)); }).find("SIM2"), std::string::npos);
    f.begin(0, repeat_op(3, 2, 1, 0));
    EXPECT_NE(rule([&] { f.begin(0, repeat_op(3, 1, 1, 0)); }).find("within the repetition"),
              std::string::npos);
    EXPECT_NE(rule([&] { f.record(0, compute(4, 1)); }).find("an op of another step"), std::string::npos);
    EXPECT_NE(rule([&] { f.check_end(0); }).find("step 3"), std::string::npos);
    folds g;
    g.begin(1, repeat_op(2, 1, 1, 2));  // says two DMA ids a repetition
    EXPECT_NE(rule([&] { g.record(1, compute(2, 1)); }).find("advance their ids by 2"), std::string::npos);
    g.check_end(0);  // core 0 has no repeat op
}

}  // namespace
