// The engine's parts on their own: where each core's ops come from (sim/op_feed.hpp: the
// source's batches, the ops the lane gave back, a stream's end), folded repeats (sim/folds.hpp:
// the repetitions made from the first, the period search over their start states, the errors)
// and what the lane and the folds do to the simulation's state (sim/period_skip.hpp: the state a
// boundary records, whole periods skipped). No engine: sources and states are written here.
#include <gtest/gtest.h>

#include <ptpu/core/error.hpp>
#include <ptpu/sim/folds.hpp>
#include <ptpu/sim/op_feed.hpp>
#include <ptpu/sim/period_skip.hpp>
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
using ptpu::sim::detail::core_set;
using ptpu::sim::detail::core_state;
using ptpu::sim::detail::dma_phase;
using ptpu::sim::detail::event_state;
using ptpu::sim::detail::folds;
using ptpu::sim::detail::op;
using ptpu::sim::detail::op_feed;
using ptpu::sim::detail::op_kind;
using ptpu::sim::detail::period_skip;
using ptpu::sim::detail::step_rows;
using ptpu::sim::detail::tally;
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

// Two cores: core 0 ready at 10 s with a far DMA in its latency (id 6, ready at 11 s); core 1 at
// 12.5 s, blocked on DMA semaphore 3 (wanting 4, holding 2), into which its on-chip DMA (ready
// at 13 s) counts.
event_state two_cores() {
    event_state st;
    st.t = {10.0, 12.5};
    st.state = {core_state::ready, core_state::blocked};
    st.starts = {7, 2};
    st.ord = {100, 50};
    st.seq = 9;
    st.wait_sem[1] = 3;
    st.wait_want[1] = 4;
    st.wait_is_dma[1] = true;
    st.sem_val[1] = {0, 0, 0, 2};
    st.dmas.resize(2);
    st.dmas[0] = {.ready = 11.0, .begin = 9.5, .bytes = 256, .cost = 300, .seq = 7, .id = 6, .step = 4};
    st.dmas[1] = {.ready = 13.0,
                  .begin = 12.0,
                  .bytes = 128,
                  .cost = 128,
                  .seq = 8,
                  .id = 1,
                  .sem = 3,
                  .core = 1,
                  .channel = 2};
    st.live[0].push(6, 0);
    st.sem_dmas[1] = {1};
    return st;
}

core_set both() {
    core_set cs;
    cs.at[0] = 0;
    cs.at[1] = 1;
    cs.n = 2;
    return cs;
}

TEST(PeriodSkip, RecordsTheStateRelativeToTheLeadsClockAndEachCoresStarts) {
    event_state st = two_cores();
    result r;
    r.cores = 2;
    r.op_count = 150;
    const options opt;
    step_rows book(r, opt);
    timeline_book spans(r, opt);
    const period_skip skip(st, r, book, spans, opt);
    boundary b;
    skip.record(b, both());
    EXPECT_EQ(b.t, 10.0);
    EXPECT_EQ(b.lag[1], 2.5);
    EXPECT_EQ(b.starts[0], 7u);
    EXPECT_EQ(b.ord[1], 50u);
    EXPECT_EQ(b.state[1], static_cast<std::uint8_t>(core_state::blocked));
    EXPECT_EQ(b.sem_kind[1], 2);  // a DMA semaphore
    EXPECT_EQ(b.wait_sem[1], 3u);
    EXPECT_EQ(b.want[1], 4);
    EXPECT_EQ(b.sems[1], (std::vector<std::int64_t>{0, 0, 0, 2}));
    EXPECT_EQ(b.sum.ops, 150);
    // The DMAs by start order, ids relative to their core's starts, start order to the next
    // start's, what is left of their latency to the lead's clock.
    ASSERT_EQ(b.snap.size(), 2u);
    EXPECT_EQ(b.snap[0].id, std::uint32_t{6} - 7u);
    EXPECT_EQ(b.snap[0].seq, 2u);
    EXPECT_EQ(b.snap[0].left, 1.0);
    EXPECT_EQ(b.snap[0].cost, 300);
    EXPECT_EQ(b.snap[1].core, 1);
    EXPECT_EQ(b.snap[1].id, std::uint32_t{1} - 2u);
    EXPECT_EQ(b.snap[1].left, 3.0);
    EXPECT_EQ(b.snap[1].sem, 3u);
    // A core outside the set records nothing.
    boundary one;
    skip.record(one, core_set::one(0));
    EXPECT_EQ(one.lag[1], 0.0);
    EXPECT_EQ(one.state[1], 0);
    EXPECT_TRUE(one.sems[1].empty());
    EXPECT_EQ(one.snap.size(), 1u);
}

TEST(PeriodSkip, MovesTheStateOnByWholePeriodsToAStateEqualToTheFirst) {
    event_state st = two_cores();
    result r;
    r.cores = 2;
    const options opt;
    step_rows book(r, opt);
    timeline_book spans(r, opt);
    period_skip skip(st, r, book, spans, opt);
    boundary a;
    skip.record(a, both());
    // Three periods of 2 s, each starting 2 DMAs on core 0 and 1 on core 1, running 10 and 5 ops,
    // adding 10 ops and 0.5 s of compute on core 0 to the totals, completing a DMA.
    tally per;
    per.ops = 10;
    per.dmas = 3;
    per.compute[0] = 0.5;
    skip.skip(both(), 3, 2.0, {2, 1}, {1, 1}, {10, 5}, per, true);
    EXPECT_EQ(st.t[0], 16.0);
    EXPECT_EQ(st.t[1], 18.5);
    EXPECT_EQ(st.starts[0], 13u);
    EXPECT_EQ(st.starts[1], 5u);
    EXPECT_EQ(st.ord[0], 130u);
    EXPECT_EQ(st.ord[1], 65u);
    EXPECT_EQ(st.seq, 18u);  // 3 periods of 3 starts
    EXPECT_EQ(st.last_done, 6.0);
    EXPECT_EQ(st.dmas[0].ready, 17.0);
    EXPECT_EQ(st.dmas[0].begin, 15.5);
    EXPECT_EQ(st.dmas[0].id, 12u);
    EXPECT_EQ(st.dmas[0].seq, 16u);
    EXPECT_EQ(st.dmas[0].step, 7u);
    EXPECT_EQ(st.live[0].find(12), 0);  // a wait finds it by its new id
    EXPECT_EQ(st.dmas[1].id, 4u);
    EXPECT_EQ(r.op_count, 30);
    EXPECT_EQ(r.steady_ops, 30);
    EXPECT_EQ(r.dma_count, 9);
    EXPECT_EQ(r.busy_compute[0], 1.5);
    // What a boundary records then is the state recorded before, relative to the new clock.
    boundary b;
    skip.record(b, both());
    EXPECT_EQ(b.t, 16.0);
    EXPECT_TRUE(ptpu::sim::detail::same_state(a, b));
    EXPECT_EQ(b.snap[0].id, a.snap[0].id);
    EXPECT_EQ(b.snap[1].left, a.snap[1].left);
}

}  // namespace
