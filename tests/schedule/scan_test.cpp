// Pass 1 of the planner on its own (schedule/scan.hpp), below every front end: the change table
// that keeps the change bits of long grids in deduplicated chunks, and the walk that evaluates
// each index map once per step, marks where each operand's block changes and checks output
// revisits (S39 on one core, MC1 across cores), on pipeline_desc values with plain map functions.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <ptpu/schedule/analyze.hpp>

using namespace ptpu;

namespace {

// ---- The change table --------------------------------------------------------------------------

TEST(ChangeTable, ShortGridsAreOneFlatRowPerOperand) {
    change_table t;
    ASSERT_TRUE(t.reset(2, 100, default_memory_budget));
    EXPECT_TRUE(t.flat());
    EXPECT_EQ(t.chunks(), 1);
    EXPECT_EQ(t.chunk_steps(), 100);
    t.row(1)[7] = 1;
    EXPECT_EQ(t(1, 7), 1);
    EXPECT_EQ(t(0, 7), 0);  // rows do not overlap
    index_t n = 0;
    const std::uint8_t* bits = t.from(1, 5, n);
    EXPECT_EQ(n, 95);  // contiguous to the end of the row
    EXPECT_EQ(bits[2], 1);
}

// The bits of steps [k len, (k + 1) len) of a pattern, zero past the last step (what commit takes).
std::vector<std::uint8_t> chunk_of(index_t k, index_t len, index_t steps, bool (*bit)(index_t)) {
    std::vector<std::uint8_t> c(static_cast<std::size_t>(len), 0);
    for (index_t j = 0; j < len && k * len + j < steps; ++j) c[static_cast<std::size_t>(j)] = bit(k * len + j) ? 1 : 0;
    return c;
}

TEST(ChangeTable, EqualChunksOfLongGridsAreStoredOnce) {
    // A block that changes every 8 steps over 4 * 2^16 + 100 steps: every whole chunk is the same,
    // the last (partial, zero-filled) one differs, so two chunks are stored, not 65.
    const index_t steps = 4 * change_table::flat_steps + 100;
    const auto every8 = [](index_t g) { return g % 8 == 0; };
    change_table t;
    ASSERT_TRUE(t.reset(1, steps, default_memory_budget));
    ASSERT_FALSE(t.flat());
    const index_t len = t.chunk_steps();
    EXPECT_EQ(len, index_t{1} << change_table::chunk_shift);
    EXPECT_EQ(t.chunks(), (steps + len - 1) / len);
    for (index_t k = 0; k < t.chunks(); ++k)
        ASSERT_TRUE(t.commit(0, k, chunk_of(k, len, steps, every8).data(), default_memory_budget));
    for (index_t g = 0; g < steps; ++g) ASSERT_EQ(t(0, g), every8(g) ? 1 : 0) << "step " << g;
    index_t n = 0;
    (void)t.from(0, steps - 10, n);
    EXPECT_EQ(n, 10);  // never past the last step
    // Two distinct chunks and the index: a few pages, against the grid's 262,244 bytes flat.
    EXPECT_LT(t.bytes(), 32 * 1024);

    // Bits with no period below the grid's length: every chunk is its own.
    const auto squares = [](index_t g) {
        index_t r = 0;
        while ((r + 1) * (r + 1) <= g) ++r;
        return r * r == g || g % 4099 == 7;
    };
    change_table u;
    ASSERT_TRUE(u.reset(1, steps, default_memory_budget));
    for (index_t k = 0; k < u.chunks(); ++k)
        ASSERT_TRUE(u.commit(0, k, chunk_of(k, len, steps, squares).data(), default_memory_budget));
    for (index_t g = 0; g < steps; g += 97) ASSERT_EQ(u(0, g), squares(g) ? 1 : 0) << "step " << g;
    EXPECT_GE(u.bytes(), u.chunks() * len);
}

TEST(ChangeTable, AnIndexOverTheBudgetIsRefusedBeforeAllocating) {
    change_table t;
    // 2^40 steps: 2^28 chunks of 8-byte offsets (2 GiB) do not fit in 1 MiB.
    EXPECT_FALSE(t.reset(1, index_t{1} << 40, index_t{1} << 20));
    EXPECT_EQ(t.bytes(), 0);
}

// ---- The walk: change bits and revisits --------------------------------------------------------

index_tuple<max_rank> rows(const index_t* p, const void*) {  // block (i, 0)
    index_tuple<max_rank> b{};
    b.v[0] = {p[0], -1};
    return b;
}
index_tuple<max_rank> cols(const index_t* p, const void*) {  // block (0, j)
    index_tuple<max_rank> b{};
    b.v[1] = {p[1], -1};
    return b;
}
index_tuple<max_rank> fixed(const index_t*, const void*) {  // block (1, 2) at every step
    index_tuple<max_rank> b{};
    b.v[0] = {1, -1};
    b.v[1] = {2, -1};
    return b;
}
index_tuple<max_rank> each(const index_t* p, const void*) {  // block (i, j)
    index_tuple<max_rank> b{};
    b.v[0] = {p[0], -1};
    b.v[1] = {p[1], -1};
    return b;
}
index_tuple<max_rank> rows_backwards(const index_t* p, const void*) {  // block (3 - i, 0)
    index_tuple<max_rank> b{};
    b.v[0] = {3 - p[0], -1};
    return b;
}
index_tuple<max_rank> rows_shuffled(const index_t* p, const void*) {  // blocks 0, 2, 1, 3 in turn
    static constexpr index_t order[4] = {0, 2, 1, 3};
    index_tuple<max_rank> b{};
    b.v[0] = {order[p[0]], -1};
    return b;
}

// A (4, 3) grid over f32 arrays of 4 x 3 blocks of (8, 128); n_in inputs then n_out outputs.
pipeline_desc grid_4x3(int n_in, int n_out) {
    pipeline_desc p;
    p.grid_rank = 2;
    p.grid[0] = 4;
    p.grid[1] = 3;
    p.n_in = n_in;
    p.n_out = n_out;
    for (int i = 0; i < n_in + n_out; ++i) {
        operand_desc& o = p.ops[static_cast<std::size_t>(i)];
        o.role = i < n_in ? operand_role::input : operand_role::output;
        o.rank = 2;
        o.block_rank = 2;
        o.shape = {32, 384};
        o.block[0] = block_dim{dim_kind::blocked, 8, 0, 0};
        o.block[1] = block_dim{dim_kind::blocked, 128, 0, 0};
    }
    return p;
}

std::vector<int> bits_of(const plan_tables& t, int op) {
    std::vector<int> v;
    for (index_t s = 0; s < t.steps; ++s) v.push_back(t.chg(op, s));
    return v;
}

TEST(Pass1, ChangeBitsMarkTheStepsWhereABlockChanges) {
    const pipeline_desc p = grid_4x3(3, 1);
    const block_fn maps[4] = {&rows, &cols, &fixed, &each};
    const plan_tables t = analyze_pipeline(p, emit_pipeline_caps, 5, maps, nullptr);
    ASSERT_TRUE(t.info.problem.ok());
    EXPECT_EQ(t.steps, 12);
    // Row-major, the last axis fastest: (i, 0) changes with i, every 3 steps.
    EXPECT_EQ(bits_of(t, 0), (std::vector<int>{1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}));
    // (0, j) changes at every step, also from j = 2 to the next row's j = 0.
    EXPECT_EQ(bits_of(t, 1), std::vector<int>(12, 1));
    // A constant block changes once; it gets one buffer (S48), the others the default two.
    EXPECT_EQ(bits_of(t, 2), (std::vector<int>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    EXPECT_TRUE(t.info.ops[2].constant);
    EXPECT_EQ(t.info.ops[2].buffers, 1);
    EXPECT_EQ(t.info.ops[0].buffers, 2);
    EXPECT_EQ(bits_of(t, 3), std::vector<int>(12, 1));
    // Facts of the window: bytes of the block and of its (tile-aligned) slot.
    EXPECT_EQ(t.info.ops[0].block_bytes, 8 * 128 * 4);
    EXPECT_EQ(t.info.ops[0].slot_bytes, 8 * 128 * 4);
    EXPECT_EQ(t.info.cores, 1);
    EXPECT_EQ(t.info.core_end[0], 12);
}

TEST(Pass1, AnOutputBlockWrittenAgainLaterIsS39WithBothRuns) {
    // out = block (0, j): block 0 is written at (0, 0), then block 1 and 2, then block 0 again at
    // (1, 0): its buffer was written back in between (S39).
    pipeline_desc p = grid_4x3(0, 1);
    const block_fn maps[1] = {&cols};
    const plan_tables t = analyze_pipeline(p, emit_pipeline_caps, 5, maps, nullptr);
    ASSERT_EQ(t.info.problem.code, rule::s39);
    EXPECT_EQ(t.info.problem.op, 0);
    EXPECT_EQ(t.info.problem.block.v[1].start, 0);
    EXPECT_EQ(t.info.problem.at[0], (coords{2, {0, 0}}));  // first run from
    EXPECT_EQ(t.info.problem.at[1], (coords{2, {0, 0}}));  // to
    EXPECT_EQ(t.info.problem.at[2], (coords{2, {1, 0}}));  // the second write
    // revisit_any: the block's buffer is restored (S40), so the revisit is allowed.
    p.ops[0].revisit_any = true;
    EXPECT_TRUE(analyze_pipeline(p, emit_pipeline_caps, 5, maps, nullptr).info.problem.ok());
}

TEST(Pass1, OutputsInAnyOrderWithoutRevisitsPass) {
    // Consecutive steps on one block are one run (no revisit); runs in decreasing order and runs
    // out of order (the walk then keeps every run and checks again) both pass.
    for (block_fn map : {&rows, &rows_backwards, &rows_shuffled}) {
        const pipeline_desc p = grid_4x3(0, 1);
        const block_fn maps[1] = {map};
        const plan_tables t = analyze_pipeline(p, emit_pipeline_caps, 5, maps, nullptr);
        EXPECT_TRUE(t.info.problem.ok());
        EXPECT_EQ(bits_of(t, 0), (std::vector<int>{1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}));
    }
}

TEST(Pass1, OneBlockWrittenByBothCoresIsMC1) {
    // (4, 3) with the first dim parallel on two cores: core 0 takes i = 0, 1, core 1 i = 2, 3.
    pipeline_desc p = grid_4x3(0, 1);
    p.has_semantics = true;
    p.semantics_rank = 2;
    p.semantics[0] = dim_semantics::parallel;
    p.semantics[1] = dim_semantics::arbitrary;
    p.cores = 2;
    const block_fn split[1] = {&rows};
    const plan_tables ok = analyze_pipeline(p, emit_pipeline_caps, 5, split, nullptr);
    ASSERT_TRUE(ok.info.problem.ok());
    EXPECT_EQ(ok.info.cores, 2);
    // Each core's first step is a change, whatever its block.
    EXPECT_EQ(bits_of(ok, 0), (std::vector<int>{1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}));
    const block_fn shared[1] = {&fixed};
    const plan_tables race = analyze_pipeline(p, emit_pipeline_caps, 5, shared, nullptr);
    ASSERT_EQ(race.info.problem.code, rule::mc1);
    EXPECT_EQ(race.info.problem.a, 0);  // the first run's core
    EXPECT_EQ(race.info.problem.c, 1);  // the second writer's
}

TEST(Pass1, ABlockOutsideTheArrayIsS34AtItsStep) {
    const pipeline_desc p = grid_4x3(1, 0);
    // block (i, 0) of an array of 3 row blocks: i = 3 is outside it.
    pipeline_desc short_array = p;
    short_array.ops[0].shape = {24, 384};
    const block_fn maps[1] = {&rows};
    const plan_tables t = analyze_pipeline(short_array, emit_pipeline_caps, 5, maps, nullptr);
    ASSERT_EQ(t.info.problem.code, rule::s34);
    EXPECT_EQ(t.info.problem.op, 0);
    EXPECT_EQ(t.info.problem.at[0], (coords{2, {3, 0}}));
    EXPECT_TRUE(analyze_pipeline(p, emit_pipeline_caps, 5, maps, nullptr).info.problem.ok());
}

}  // namespace
