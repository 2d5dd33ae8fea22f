// The planner's analysis on its own (schedule/analyze.hpp, geometry.hpp), below every front end:
// the megacore split of the grid (S44), the bytes a window slot occupies once tiled, the layout of
// one core's memories (VMEM windows, VMEM scratch, SMEM, semaphores) and the budgets analyze()
// checks against it (24, SMEM1), on call_desc values written out by hand.
#include <gtest/gtest.h>

#include <ptpu/hw/presets.hpp>
#include <ptpu/schedule/analyze.hpp>

using namespace ptpu;

namespace {

pipeline_desc grid_of(std::initializer_list<index_t> g) {
    pipeline_desc p;
    p.grid_rank = static_cast<int>(g.size());
    int d = 0;
    for (index_t e : g) p.grid[static_cast<std::size_t>(d++)] = e;
    return p;
}

TEST(SplitCores, TheParallelPrefixIsSplitIntoContiguousRanges) {
    // (5, 3), dim 0 parallel on 2 cores: ceil(5 / 2) = 3 points for core 0 (steps 0-8), 2 for
    // core 1 (steps 9-14).
    pipeline_desc p = grid_of({5, 3});
    p.has_semantics = true;
    p.semantics_rank = 2;
    p.semantics[0] = dim_semantics::parallel;
    p.semantics[1] = dim_semantics::arbitrary;
    p.cores = 2;
    plan_info info;
    detail::split_cores(p, info);
    EXPECT_EQ(info.cores, 2);
    EXPECT_EQ(info.core_begin[0], 0);
    EXPECT_EQ(info.core_end[0], 9);
    EXPECT_EQ(info.core_begin[1], 9);
    EXPECT_EQ(info.core_end[1], 15);

    // Both dims parallel: the prefix is all 15 points; core 0 takes 8.
    p.semantics[1] = dim_semantics::parallel;
    detail::split_cores(p, info);
    EXPECT_EQ(info.core_end[0], 8);
    EXPECT_EQ(info.core_begin[1], 8);
    EXPECT_EQ(info.core_end[1], 15);

    // A parallel dim after an arbitrary one is no prefix: one core runs everything.
    p.semantics[0] = dim_semantics::arbitrary;
    detail::split_cores(p, info);
    EXPECT_EQ(info.cores, 1);
    EXPECT_EQ(info.core_end[0], 15);

    // No semantics at all: one core.
    pipeline_desc q = grid_of({5, 3});
    q.cores = 2;
    detail::split_cores(q, info);
    EXPECT_EQ(info.cores, 1);
}

operand_desc operand(space_kind space, dtype t, index_t rows, index_t cols) {
    operand_desc o;
    o.space = space;
    o.type = t;
    o.rank = 2;
    o.block_rank = 2;
    o.shape = {rows * 4, cols * 4};
    o.block[0] = block_dim{dim_kind::blocked, rows, 0, 0};
    o.block[1] = block_dim{dim_kind::blocked, cols, 0, 0};
    return o;
}

TEST(SlotBytes, VmemSlotsRoundTheMinorDimsUpToTilesAndSmemSlotsDoNot) {
    // f32 (5, 100) in VMEM: (8, 128) tiles, 4096 bytes; in SMEM: 5 x 100 x 4.
    EXPECT_EQ(detail::slot_bytes(operand(space_kind::vmem, dtype::f32, 5, 100), 5), 8 * 128 * 4);
    EXPECT_EQ(detail::slot_bytes(operand(space_kind::smem, dtype::f32, 5, 100), 5), 5 * 100 * 4);
    // bf16 packs 16 rows per tile from generation 7 on (8 before).
    EXPECT_EQ(detail::slot_bytes(operand(space_kind::vmem, dtype::bf16, 5, 100), 5), 8 * 128 * 2);
    EXPECT_EQ(detail::slot_bytes(operand(space_kind::vmem, dtype::bf16, 5, 100), 7), 16 * 128 * 2);
    // int8: 32 rows per tile; bool is stored as int32.
    EXPECT_EQ(detail::slot_bytes(operand(space_kind::vmem, dtype::i8, 5, 100), 5), 32 * 128);
    EXPECT_EQ(detail::slot_bytes(operand(space_kind::vmem, dtype::boolean, 8, 128), 5), 8 * 128 * 4);
    // Padded bytes past index_t: -1 (V3), never a wrapped size.
    EXPECT_EQ(detail::slot_bytes(operand(space_kind::vmem, dtype::f32, index_t{1} << 31, index_t{1} << 31), 5), -1);
}

// A call on v5e with two f32 VMEM windows of (8, 128), a VMEM scratch (8, 128) f32, one scalar
// prefetch operand of 10 int32, an SMEM scratch of 10 int32 and two semaphores.
call_desc layout_call() {
    call_desc c;
    c.hw = tpu::v5e;
    c.vmem_limit = tpu::v5e.vmem_limit_bytes;
    c.grid_rank = 1;
    c.grid[0] = 4;
    c.n_in = 1;
    c.n_out = 1;
    for (int i = 0; i < 2; ++i) {
        operand_desc& o = c.ops[static_cast<std::size_t>(i)];
        o = operand(space_kind::vmem, dtype::f32, 8, 128);
        o.role = i == 0 ? operand_role::input : operand_role::output;
    }
    c.n_prefetch = 1;
    c.prefetch_each[0] = 40;
    c.prefetch_bytes = 40;
    c.n_scratch = 3;
    c.scratch[0] = scratch_desc{space_kind::vmem, dtype::f32, 2, {8, 128}};
    c.scratch[1] = scratch_desc{space_kind::smem, dtype::i32, 1, {10}};
    c.scratch[2] = scratch_desc{space_kind::semaphore, dtype::i32, 1, {2}};
    return c;
}

index_tuple<max_rank> row_block(const index_t* p, const void*) {
    index_tuple<max_rank> b{};
    b.v[0] = {p[0], -1};
    return b;
}

TEST(LayoutOf, WindowsThenVmemScratchThenSmemThenSemaphores) {
    const call_desc c = layout_call();
    plan_info info;
    for (int i = 0; i < 2; ++i) {
        info.ops[static_cast<std::size_t>(i)].windowed = true;
        info.ops[static_cast<std::size_t>(i)].buffers = 2;
        info.ops[static_cast<std::size_t>(i)].slot_bytes = 4096;
    }
    const memory_layout m = layout_of(c, info);
    EXPECT_FALSE(m.overflow);
    EXPECT_EQ(m.slot_at[0][0], 0);
    EXPECT_EQ(m.slot_at[0][1], 4096);
    EXPECT_EQ(m.slot_at[1][0], 8192);
    EXPECT_EQ(m.slot_at[1][1], 12288);
    EXPECT_EQ(m.scratch_at[0], 16384);  // VMEM scratch after the windows
    EXPECT_EQ(m.prefetch_at[0], 20480);  // SMEM: prefetch first, 64-byte aligned on the host
    EXPECT_EQ(m.scratch_at[1], 20544);   // then SMEM scratch
    EXPECT_EQ(m.scratch_at[2], 20608);   // then the semaphores
    EXPECT_EQ(m.arena_bytes, 20672);
    EXPECT_EQ(m.vmem_bytes, 4 * 4096 + 4096);
    EXPECT_EQ(m.scratch_vmem, 4096);
    EXPECT_EQ(m.smem_bytes, 40 + 40);
}

TEST(Analyze, TheVmemBudgetIs24WithEachOperandsBytesAndBuffers) {
    call_desc c = layout_call();
    const block_fn maps[2] = {&row_block, &row_block};
    const plan_tables fits = analyze(c, maps, nullptr);
    ASSERT_TRUE(fits.info.problem.ok());
    EXPECT_EQ(fits.info.vmem_bytes, 4 * 4096 + 4096);
    EXPECT_EQ(fits.info.smem_bytes, 80);

    c.vmem_limit = 4 * 4096 + 4095;  // one byte short of windows + scratch
    const plan_tables over = analyze(c, maps, nullptr);
    const diag& d = over.info.problem;
    ASSERT_EQ(d.code, rule::r24);
    EXPECT_EQ(d.a, 4 * 4096 + 4096);
    EXPECT_EQ(d.b, 4 * 4096 + 4095);
    EXPECT_EQ(d.bytes[0], 4096);
    EXPECT_EQ(d.bytes[1], 4096);
    EXPECT_EQ(d.buffers[0], 2);
    EXPECT_EQ(d.buffers[1], 2);
    EXPECT_EQ(d.bytes[max_operands], 4096);  // the VMEM scratch
}

TEST(Analyze, SmemPastTheChipIsSMEM1) {
    call_desc c = layout_call();
    c.scratch[1].shape[0] = c.hw.smem_bytes / 4;  // the SMEM scratch alone fills SMEM
    const block_fn maps[2] = {&row_block, &row_block};
    const plan_tables t = analyze(c, maps, nullptr);
    ASSERT_EQ(t.info.problem.code, rule::smem1);
    EXPECT_EQ(t.info.problem.a, 40 + c.hw.smem_bytes);
    EXPECT_EQ(t.info.problem.b, c.hw.smem_bytes);
}

}  // namespace
