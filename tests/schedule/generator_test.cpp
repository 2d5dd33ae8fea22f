// The per-core schedule generator on its own, with any buffer count (S28–S31) and lookahead
// (S32): exact event sequences (A1 with bc = 3 and 4, A3, Q2), A2/A4 counts, and a property check
// on random block-index sequences (every wait finds its block in its slot, no slot refilled while
// its block is still in use, every fetch waited), for the change bits read from pass 1 and
// computed as the schedule goes (identical events, each index map evaluated once per step).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ptpu/schedule/plan.hpp"

namespace {

using namespace ptpu;

// A 1-D pipeline whose block indices are given as sequences (one per operand): its maps read
// them through ctx.
struct sequences {
    std::vector<index_t> in[2];
    std::vector<index_t> out;
};
template <int Which>
constexpr index_tuple<max_rank> seq_map(const index_t* p, const void* ctx) {
    const auto& s = *static_cast<const sequences*>(ctx);
    index_tuple<max_rank> t{};
    t.v[0] = {Which < 2 ? s.in[Which][static_cast<std::size_t>(p[0])] : s.out[static_cast<std::size_t>(p[0])], -1};
    return t;
}
constexpr block_fn maps[3] = {&seq_map<0>, &seq_map<1>, &seq_map<2>};

operand_desc operand(operand_role role, int bc, bool lookahead) {
    operand_desc o;
    o.role = role;
    o.rank = 1;
    o.shape[0] = 8 * 64;  // up to 64 blocks of 8
    o.block_rank = 1;
    o.block[0] = block_dim{dim_kind::blocked, 8, 0, 0};
    o.buffer_count = bc;
    o.lookahead = lookahead;
    return o;
}

struct case_t {
    pipeline_desc p;
    sequences seq;
    std::vector<block_fn> fns;
};

case_t make(const std::vector<index_t>& in, int bc, bool lookahead, const std::vector<index_t>& out = {},
            int out_bc = 2) {
    case_t c;
    c.p.grid_rank = 1;
    c.p.grid[0] = static_cast<index_t>(in.size());
    c.seq.in[0] = in;
    c.seq.out = out.empty() ? in : out;
    c.p.n_in = 1;
    c.p.n_out = 1;
    c.p.ops[0] = operand(operand_role::input, bc, lookahead);
    c.p.ops[1] = operand(operand_role::output, out_bc, false);
    c.fns = {maps[0], maps[2]};
    return c;
}

// Renders events as the acceptance cases write them: "P: in0@0 | s0: in1@1, wait0@0, ...".
std::string render(const std::vector<event>& events, const sequences& seq) {
    std::string s = "P:";
    for (const event& e : events) {
        if (e.kind == event_kind::step) {
            s += " | s" + std::to_string(e.step) + ":";
            continue;
        }
        const bool in = e.op == 0;
        const index_t b = in ? seq.in[0][e.block_step] : seq.out[e.block_step];
        switch (e.kind) {
            case event_kind::fetch:
                s += " in" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            case event_kind::wait_in:
                s += " wait" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            case event_kind::body:
                s += " BODY";
                break;
            case event_kind::write:
                s += " out" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            case event_kind::wait_out:
                s += " wout" + std::to_string(b) + "@" + std::to_string(e.slot);
                break;
            default:
                s += " ?";
        }
    }
    return s;
}

std::vector<event> table_events(const case_t& c, plan_tables* out_tables = nullptr) {
    const plan_tables t = analyze_pipeline(c.p, emit_pipeline_caps, 5, c.fns.data(), &c.seq);
    EXPECT_TRUE(t.info.problem.ok()) << message(t.info.problem.code);
    std::vector<event> ev;
    core_schedule cs(t, 0);
    event e;
    while (cs.next(e)) ev.push_back(e);
    if (out_tables) *out_tables = t;
    return ev;
}

std::vector<event> map_events(const case_t& c, index_t* evaluations = nullptr) {
    const plan_tables t = analyze_pipeline(c.p, emit_pipeline_caps, 5, c.fns.data(), &c.seq);
    std::vector<event> ev;
    basic_schedule<map_changes> cs(t.info, c.p.n_in, c.p.n_ops(), 0,
                                   map_changes(c.p, c.fns.data(), &c.seq, 0, c.p.steps()), 3);
    event e;
    while (cs.next(e)) ev.push_back(e);
    if (evaluations) *evaluations = cs.changes().evaluations();
    return ev;
}

TEST(Generator, A1DoubleBufferedCopyUnchanged) {
    const auto c = make({0, 1, 2, 3}, 2, false);
    EXPECT_EQ(render(table_events(c), c.seq),
              "P: in0@0 | s0: in1@1 wait0@0 BODY out0@0 | s1: in2@0 wait1@1 BODY out1@1 wout0@0 | s2: in3@1 "
              "wait2@0 BODY out2@0 wout1@1 | s3: wait3@1 BODY out3@1 wout2@0 wout3@1");
}

TEST(Generator, TripleBufferedInputRunsTwoStepsAhead) {
    // S30: the prologue fetches the blocks of steps 0 and 1; step s fetches step s+2's while s <= N-3.
    const auto c = make({0, 1, 2, 3}, 3, false);
    EXPECT_EQ(render(table_events(c), c.seq),
              "P: in0@0 in1@1 | s0: in2@2 wait0@0 BODY out0@0 | s1: in3@0 wait1@1 BODY out1@1 wout0@0 | s2: "
              "wait2@2 BODY out2@0 wout1@1 | s3: wait3@0 BODY out3@1 wout2@0 wout3@1");
}

TEST(Generator, QuadBufferedInputRunsThreeStepsAhead) {
    const auto c = make({0, 1, 2, 3, 4, 5}, 4, false);
    EXPECT_EQ(render(table_events(c), c.seq),
              "P: in0@0 in1@1 in2@2 | s0: in3@3 wait0@0 BODY out0@0 | s1: in4@0 wait1@1 BODY out1@1 wout0@0 | "
              "s2: in5@1 wait2@2 BODY out2@0 wout1@1 | s3: wait3@3 BODY out3@1 wout2@0 | s4: wait4@0 BODY "
              "out4@0 wout3@1 | s5: wait5@1 BODY out5@1 wout4@0 wout5@1");
}

TEST(Generator, QuadBufferedPrologueClampedToTheGrid) {
    // Q2 [M]: bc = 4 on a 2-step grid fetches only the 2 blocks there are, each waited.
    const auto c = make({1, 0}, 4, false);
    EXPECT_EQ(render(table_events(c), c.seq),
              "P: in1@0 in0@1 | s0: wait1@0 BODY out1@0 | s1: wait0@1 BODY out0@1 wout1@0 wout0@1");
}

TEST(Generator, A3LookaheadFetchesTheNextDistinctBlockAtStep0) {
    const std::vector<index_t> seq{0, 0, 0, 0, 1, 1, 1, 1};
    const auto with = make(seq, 2, true, {0, 1, 2, 3, 4, 5, 6, 7});
    const auto without = make(seq, 2, false, {0, 1, 2, 3, 4, 5, 6, 7});
    for (const auto* c : {&with, &without}) {
        const auto ev = table_events(*c);
        std::vector<std::uint32_t> fetch_steps, fetch_blocks, wait_steps, wait_slots;
        for (const event& e : ev) {
            if (e.op != 0) continue;
            if (e.kind == event_kind::fetch) {
                fetch_steps.push_back(e.step);
                fetch_blocks.push_back(static_cast<std::uint32_t>(seq[e.block_step]));
            }
            if (e.kind == event_kind::wait_in) {
                wait_steps.push_back(e.step);
                wait_slots.push_back(e.slot);
            }
        }
        const bool look = c == &with;
        // Block 0 in the prologue; block 1 at step 0 with lookahead, at step 3 without.
        EXPECT_EQ(fetch_steps, (std::vector<std::uint32_t>{0, look ? 0u : 3u}));
        EXPECT_EQ(fetch_blocks, (std::vector<std::uint32_t>{0, 1}));
        EXPECT_EQ(wait_steps, (std::vector<std::uint32_t>{0, 4}));
        EXPECT_EQ(wait_slots, (std::vector<std::uint32_t>{0, 1}));  // slot 0 for steps 0–3, 1 for 4–7
    }
    EXPECT_EQ(render(table_events(with), with.seq).substr(0, 33), "P: in0@0 | s0: in1@1 wait0@0 BODY");
}

TEST(Generator, A4GatherFetchesOncePerRun) {
    const std::vector<std::vector<index_t>> seqs = {
        {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {0, 0, 2, 3, 3, 3, 1, 7, 6, 6}, {3, 3, 3, 3, 3, 3, 3, 7, 6, 6},
        {0, 1, 2, 3, 4, 5, 0, 1, 2, 3}};
    for (const auto& seq : seqs)
        for (int bc : {2, 4})
            for (bool look : {false, true}) {
                std::vector<index_t> out(seq.size());
                for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<index_t>(i);
                const auto c = make(seq, bc, look, out);
                index_t runs = 1;
                for (std::size_t i = 1; i < seq.size(); ++i) runs += seq[i] != seq[i - 1];
                index_t fetches = 0;
                for (const event& e : table_events(c)) fetches += e.kind == event_kind::fetch && e.op == 0;
                EXPECT_EQ(fetches, runs) << "bc " << bc << " lookahead " << look;
            }
}

// Plays the events against slot contents: a fetch fills its slot with its block; a wait must
// find the step's block in the slot, fetched and not yet waited; a slot must not be refilled
// while the window still uses it. Returns "" or what went wrong.
std::string play(const std::vector<event>& ev, const std::vector<index_t>& seq, int bc) {
    std::vector<index_t> slot_block(static_cast<std::size_t>(bc), -1);
    std::vector<int> pending(static_cast<std::size_t>(bc), 0);
    int current = -1;        // the slot the window (body) uses
    bool released = true;    // the window has moved on from it (S23.6)
    for (const event& e : ev) {
        if (e.kind == event_kind::step) {
            if (e.step > 0 && seq[e.step] != seq[e.step - 1]) released = true;
            continue;
        }
        if (e.op != 0) continue;
        const std::string at = " at step " + std::to_string(e.step);
        if (e.kind == event_kind::fetch) {
            if (static_cast<int>(e.slot) == current && !released) return "slot refilled while in use" + at;
            if (pending[e.slot] != 0) return "slot refilled before its wait" + at;
            slot_block[e.slot] = seq[e.block_step];
            pending[e.slot] = 1;
        } else if (e.kind == event_kind::wait_in) {
            if (pending[e.slot] != 1) return "wait on an idle slot" + at;
            if (slot_block[e.slot] != seq[e.step]) return "wrong block" + at;
            pending[e.slot] = 0;
            current = e.slot;
            released = false;
        } else if (e.kind == event_kind::body) {
            if (current < 0 || slot_block[static_cast<std::size_t>(current)] != seq[e.step])
                return "body sees the wrong block" + at;
        }
    }
    for (int p : pending)
        if (p != 0) return "a fetch never waited";
    return "";
}

TEST(Generator, RandomSequencesEveryWaitFindsItsBlock) {
    std::mt19937 rng(20261201);
    for (int trial = 0; trial < 600; ++trial) {
        const int n = 1 + static_cast<int>(rng() % 24);
        const int bc = 1 + static_cast<int>(rng() % 4);
        const bool look = bc >= 2 && rng() % 2 == 0;
        const int distinct = 1 + static_cast<int>(rng() % 4);
        std::vector<index_t> seq(static_cast<std::size_t>(n));
        for (auto& b : seq) b = static_cast<index_t>(rng() % static_cast<unsigned>(distinct));
        std::vector<index_t> out(seq.size());
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<index_t>(i);
        const auto c = make(seq, bc, look, out);
        plan_tables t;
        const auto ev = table_events(c, &t);
        const int used_bc = t.info.ops[0].buffers;  // a constant sequence gets one buffer (S48)
        EXPECT_EQ(play(ev, seq, used_bc), "") << "trial " << trial << " bc " << bc << " lookahead " << look;
        index_t evals = 0;
        auto mev = map_events(c, &evals);
        for (auto& e : mev) {
            EXPECT_EQ(e.pipeline, 3);
            e.pipeline = 0;
        }
        EXPECT_EQ(mev, ev) << "trial " << trial;
        // Each map once per step, lazily: a 1-step pipeline never asks whether a block changed.
        EXPECT_EQ(evals, n > 1 ? 2 * n : 0) << "trial " << trial;
    }
}

TEST(Generator, MapChangesLookFarAheadOnlyAsLookaheadNeeds) {
    // A lookahead fill scans over a long run of one block to find the next distinct one; the
    // bits behind the current step are dropped as the schedule moves on.
    std::vector<index_t> seq(5000, 0);
    for (std::size_t i = 4000; i < seq.size(); ++i) seq[i] = 1;
    std::vector<index_t> out(seq.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<index_t>(i % 64);
    auto c = make(seq, 2, true, out);
    c.p.ops[1].shape[0] = 8 * 64;
    const auto ev = map_events(c);
    std::vector<std::uint32_t> fetch_steps;
    for (const event& e : ev)
        if (e.kind == event_kind::fetch && e.op == 0) fetch_steps.push_back(e.step);
    EXPECT_EQ(fetch_steps, (std::vector<std::uint32_t>{0, 0}));  // block 1 (step 4000) at step 0
}

// The generator is constexpr: a static N-slot schedule.
constexpr index_t static_fetches() {
    pipeline_desc p;
    p.grid_rank = 1;
    p.grid[0] = 6;
    p.n_in = 1;
    p.n_out = 0;
    operand_desc o;
    o.rank = 1;
    o.shape[0] = 48;
    o.block_rank = 1;
    o.block[0] = block_dim{dim_kind::blocked, 8, 0, 0};
    o.buffer_count = 4;
    p.ops[0] = o;
    constexpr block_fn fn[1] = {[](const index_t* g, const void*) {
        index_tuple<max_rank> t{};
        t.v[0] = {g[0], -1};
        return t;
    }};
    const plan_tables t = analyze_pipeline(p, emit_pipeline_caps, 5, fn, nullptr);
    core_schedule cs(t, 0);
    event e;
    index_t fetches = 0, first_loop_fetch = -1;
    while (cs.next(e))
        if (e.kind == event_kind::fetch) {
            ++fetches;
            if (first_loop_fetch < 0 && e.block_step == 3) first_loop_fetch = e.step;
        }
    return fetches * 100 + first_loop_fetch;
}
static_assert(static_fetches() == 600);  // 6 fetches; block 3 fetched at step 0 (3 ahead)

TEST(Generator, CapabilitiesDecideTheBufferRules) {
    auto c = make({0, 1, 2, 3}, 3, false);
    EXPECT_EQ(validate_pipeline(c.p, pallas_call_caps).code, rule::r19_buffers);
    EXPECT_TRUE(validate_pipeline(c.p, emit_pipeline_caps).ok());
    c.p.ops[0].buffer_count = 0;
    EXPECT_EQ(validate_pipeline(c.p, emit_pipeline_caps).code, rule::r27_buffers);
    c.p.ops[0].buffer_count = static_cast<int>(max_buffers) + 1;
    EXPECT_EQ(validate_pipeline(c.p, emit_pipeline_caps).code, rule::buf1);
    c.p.ops[0].buffer_count = 2;
    c.p.ops[1].buffer_count = 3;
    EXPECT_EQ(validate_pipeline(c.p, emit_pipeline_caps).code, rule::r27_out_buffers);
    c.p.ops[1].buffer_count = 2;
    c.p.ops[1].lookahead = true;
    EXPECT_EQ(validate_pipeline(c.p, emit_pipeline_caps).code, rule::r27_out_lookahead);
    c.p.ops[1].lookahead = false;
    c.p.ops[0].lookahead = true;
    EXPECT_EQ(validate_pipeline(c.p, pallas_call_caps).code, rule::r19_lookahead);
    EXPECT_TRUE(validate_pipeline(c.p, emit_pipeline_caps).ok());
    c.p.ops[0].buffer_count = 1;
    EXPECT_EQ(validate_pipeline(c.p, emit_pipeline_caps).code, rule::q1);
    // BoundedSlice: rule 18 for pallas_call (after pass 1), fine for emit_pipeline.
    auto b = make({0, 1}, 2, false);
    b.p.ops[0].shape[0] = 2048;
    b.p.ops[0].block[0] = block_dim{dim_kind::bounded_slice, 1024, 0, 0};  // passes check 16
    b.p.ops[1].shape[0] = 2048;
    b.p.ops[1].block[0] = block_dim{dim_kind::blocked, 1024, 0, 0};
    static constexpr block_fn slice_map[2] = {[](const index_t* g, const void*) {
                                                  index_tuple<max_rank> t{};
                                                  t.v[0] = {g[0] * 1024, 1024};
                                                  return t;
                                              },
                                              &seq_map<2>};
    b.fns = {slice_map[0], slice_map[1]};
    EXPECT_EQ(analyze_pipeline(b.p, pallas_call_caps, 5, b.fns.data(), &b.seq).info.problem.code, rule::r18);
    EXPECT_TRUE(analyze_pipeline(b.p, emit_pipeline_caps, 5, b.fns.data(), &b.seq).info.problem.ok());
}

// Grids past change_table::flat_steps keep pass 1's bits in chunks of 4096 steps, equal chunks
// stored once: the schedule read from them is the one the maps give, step for step.
TEST(Generator, ChunkedChangeBitsGiveTheEventsOfTheMaps) {
    std::mt19937 rng(20261202);
    const index_t n = 100'003;  // not a whole number of chunks
    std::vector<index_t> seq(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < seq.size(); ++i)  // runs of 1 to 9 steps of random blocks
        seq[i] = i > 0 && rng() % 9 != 0 ? seq[i - 1] : static_cast<index_t>(rng() % 64);
    std::vector<index_t> out(seq.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<index_t>(i / 5);
    for (int bc : {2, 3})
        for (bool look : {false, true}) {
            auto c = make(seq, bc, look, out);
            c.p.ops[1].shape[0] = 8 * n;
            plan_tables t;
            const auto ev = table_events(c, &t);
            ASSERT_FALSE(t.chg.flat());
            EXPECT_EQ(t.chg.chunks(), (n + 4095) / 4096);
            EXPECT_EQ(play(ev, seq, bc), "") << "bc " << bc << " lookahead " << look;
            auto mev = map_events(c);
            for (auto& e : mev) e.pipeline = 0;
            EXPECT_EQ(mev, ev) << "bc " << bc << " lookahead " << look;
        }
}

// Change bits with a period that does not divide the chunk take a few chunks, not a byte a step;
// periodic_steps() compares them a period apart across chunk boundaries, up to the first step
// that breaks the period.
TEST(Generator, PeriodicChangeBitsAreStoredOnceAndComparedAcrossChunks) {
    const index_t n = 1'000'000;
    std::vector<index_t> seq(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < seq.size(); ++i) seq[i] = static_cast<index_t>(i / 3 % 7);  // a change every 3 steps
    std::vector<index_t> out(seq.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<index_t>(i);
    auto c = make(seq, 2, false, out);
    c.p.ops[1].shape[0] = 8 * n;
    plan_tables t = analyze_pipeline(c.p, emit_pipeline_caps, 5, c.fns.data(), &c.seq);
    ASSERT_TRUE(t.info.problem.ok());
    EXPECT_LT(t.chg.bytes(), 64 * 1024);  // a flat table: 2 bytes a step, 2 MB
    core_schedule cs(t, 0);
    step_events ev;
    for (int k = 0; k < 10; ++k) {
        ev.clear();
        ASSERT_TRUE(cs.next_step(ev));
    }
    // From step 10: every bit repeats the one 3 steps before, up to the steps that have a shape.
    EXPECT_EQ(cs.periodic_steps(3, 900'000), 900'000);
    EXPECT_EQ(cs.periodic_steps(3, n), n - 2 + 1 - 10);
    EXPECT_EQ(cs.periodic_steps(6, 123'457), 123'457);
    EXPECT_LT(cs.periodic_steps(2, 900'000), 3);
    // One block held a step longer at step 700,002 (where it would change) breaks the period
    // there: a step reads its bit and the next one's, so the steps up to 700,002 - 1 - 10 repeat.
    c.seq.in[0][700'002] = c.seq.in[0][700'001];
    plan_tables u = analyze_pipeline(c.p, emit_pipeline_caps, 5, c.fns.data(), &c.seq);
    ASSERT_TRUE(u.info.problem.ok());
    const std::vector<index_t>& in = c.seq.in[0];
    const auto bit = [&](index_t g) {
        return g == 0 || in[static_cast<std::size_t>(g)] != in[static_cast<std::size_t>(g - 1)];
    };
    index_t first = 10;
    while (first < n && bit(first) == bit(first - 3)) ++first;
    core_schedule cu(u, 0);
    for (int k = 0; k < 10; ++k) {
        ev.clear();
        ASSERT_TRUE(cu.next_step(ev));
    }
    EXPECT_EQ(cu.periodic_steps(3, 900'000), first - 1 - 10);
    EXPECT_EQ(first, 700'002);
}

// The revisit checks (S39) take an output's runs in strictly increasing or decreasing block order
// as written once each; runs out of that order are walked again keeping every run, which finds a
// revisit and where its first visit ended, across chunks too.
TEST(Generator, OutputRunsOutOfOrderAreCheckedAgain) {
    for (const std::vector<index_t>& out : {std::vector<index_t>{0, 1, 2, 5, 3, 4}, std::vector<index_t>{5, 3, 2, 0},
                                            std::vector<index_t>{0, 0, 1, 1, 3, 3}}) {
        std::vector<index_t> in(out.size());
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<index_t>(i);
        const auto c = make(in, 2, false, out);
        const diag d = analyze_pipeline(c.p, emit_pipeline_caps, 5, c.fns.data(), &c.seq).info.problem;
        EXPECT_TRUE(d.ok()) << message(d.code) << " " << describe(d);
    }
    const auto small = make({0, 1, 2, 3}, 2, false, {0, 1, 2, 1});
    const diag d = analyze_pipeline(small.p, emit_pipeline_caps, 5, small.fns.data(), &small.seq).info.problem;
    EXPECT_EQ(d.code, rule::s39);
    EXPECT_EQ(d.at[0].v[0], 1);
    EXPECT_EQ(d.at[2].v[0], 3);
    // 70,000 steps: block 5 (steps 10 and 11) written again at step 60,000, 14 chunks later.
    const index_t n = 70'000;
    std::vector<index_t> seq(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) {
        seq[static_cast<std::size_t>(i)] = i % 64;
        out[static_cast<std::size_t>(i)] = i < 60'000 ? i / 2 : i < 60'002 ? 5 : 30'000 + i;
    }
    auto c = make(seq, 2, false, out);
    c.p.ops[1].shape[0] = 8 * 100'000;
    const plan_tables t = analyze_pipeline(c.p, emit_pipeline_caps, 5, c.fns.data(), &c.seq);
    ASSERT_FALSE(t.chg.flat());
    const diag e = t.info.problem;
    EXPECT_EQ(e.code, rule::s39);
    EXPECT_EQ(e.block.v[0].start, 5);
    EXPECT_EQ(e.at[0].v[0], 10);
    EXPECT_EQ(e.at[1].v[0], 11);
    EXPECT_EQ(e.at[2].v[0], 60'000);
}

}  // namespace
