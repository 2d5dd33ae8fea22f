// The describer on its own (spec/describe.hpp): the value a static operand, its BlockSpec and a
// scratch buffer lower into, which every rule and the planner read. Each kind of block dim
// (blocked, squeezed, element with padding, bounded_slice, Full), the pipeline mode (buffer
// count, lookahead, prefetched count), the revisit mode, the memory space and dtype, and what the
// index map's type says (its rank, its entry kinds) land in the fields they stand for.
#include <gtest/gtest.h>

#include <cstdint>

#include <ptpu/ptpu.hpp>

using namespace ptpu;

namespace {

constexpr auto row_map = [](auto i, auto j) { return idx(i, j, 0); };
constexpr auto two_entries = [](auto i, auto) { return idx(i, 0); };
constexpr auto slice_map = [](auto i, auto) { return idx(ds(i * 8, 8), 0); };
constexpr auto scalar_on_slice = [](auto i, auto) { return idx(i, 0); };

using A3 = Array<bf16, 4, 64, 256>;
using A2 = Array<float, 64, 256>;

template <class A, class Spec>
constexpr operand_desc described(operand_role role = operand_role::input) {
    return detail::describe_operand<A, Spec, 2, void>(role);
}

TEST(Describe, BlockedAndSqueezedDimsWithTheirPipelineMode) {
    constexpr operand_desc d = described<A3, BlockSpec<Block<squeezed, 8, 128>, row_map, Buffered<3, true>>>();
    static_assert(d.rank == 3 && d.block_rank == 3);
    EXPECT_EQ(d.type, dtype::bf16);
    EXPECT_EQ(d.space, space_kind::vmem);
    EXPECT_EQ((std::array<index_t, 3>{d.shape[0], d.shape[1], d.shape[2]}), (std::array<index_t, 3>{4, 64, 256}));
    EXPECT_EQ(d.block[0], (block_dim{dim_kind::squeezed, 1, 0, 0}));
    EXPECT_EQ(d.block[1], (block_dim{dim_kind::blocked, 8, 0, 0}));
    EXPECT_EQ(d.block[2], (block_dim{dim_kind::blocked, 128, 0, 0}));
    EXPECT_EQ(d.block_elems(), 8 * 128);
    EXPECT_EQ(d.buffer_count, 3);
    EXPECT_TRUE(d.lookahead);
    EXPECT_TRUE(d.explicit_mode);
    EXPECT_EQ(d.prefetched, 0);
    EXPECT_FALSE(d.revisit_any);
    EXPECT_FALSE(d.zero_map);
    EXPECT_EQ(d.issue, map_issue::none);
    EXPECT_EQ(d.map_returned, 3);
}

TEST(Describe, DefaultsFullBlocksAndTheZeroMap) {
    // BlockSpec<Full> with index_map=None: the whole array, two buffers by default, VMEM.
    constexpr operand_desc d = described<A2, BlockSpec<Full, zero_map>>(operand_role::output);
    EXPECT_EQ(d.role, operand_role::output);
    EXPECT_TRUE(d.full_block);
    EXPECT_EQ(d.block_rank, 2);
    EXPECT_EQ(d.block[0], (block_dim{dim_kind::blocked, 64, 0, 0}));
    EXPECT_EQ(d.block[1], (block_dim{dim_kind::blocked, 256, 0, 0}));
    EXPECT_EQ(d.buffer_count, 2);
    EXPECT_FALSE(d.explicit_mode);
    EXPECT_TRUE(d.zero_map);
    EXPECT_EQ(d.type, dtype::f32);
}

TEST(Describe, ElementPaddingBoundedSlicesSpacesAndRevisits) {
    constexpr operand_desc e = described<A2, BlockSpec<Block<element{16, 2, 3}, 256>, two_entries, smem>>();
    EXPECT_EQ(e.block[0], (block_dim{dim_kind::element, 16, 2, 3}));
    EXPECT_EQ(e.space, space_kind::smem);
    constexpr operand_desc b = described<A2, BlockSpec<Block<bounded_slice{8}, 256>, slice_map>>();
    EXPECT_EQ(b.block[0], (block_dim{dim_kind::bounded_slice, 8, 0, 0}));
    EXPECT_EQ(b.issue, map_issue::none);
    constexpr operand_desc r =
        described<A2, BlockSpec<Block<8, 256>, two_entries, Buffered<1>, revisit_any>>(operand_role::output);
    EXPECT_TRUE(r.revisit_any);
    EXPECT_EQ(r.buffer_count, 1);
    constexpr operand_desc p = described<A2, BlockSpec<Block<8, 256>, two_entries, Buffered<2, false, 1>>>();
    EXPECT_EQ(p.prefetched, 1);
    constexpr operand_desc raw = described<A2, BlockSpec<Full, zero_map, any>>();
    EXPECT_EQ(raw.space, space_kind::any);
    EXPECT_FALSE(raw.windowed());
}

TEST(Describe, WhatTheIndexMapsTypeGetsWrongIsRecorded) {
    // Two entries for a rank-3 block (check 2).
    constexpr operand_desc n = described<A3, BlockSpec<Block<squeezed, 8, 128>, two_entries>>();
    EXPECT_EQ(n.issue, map_issue::wrong_rank);
    EXPECT_EQ(n.map_returned, 2);
    // A scalar entry on a bounded_slice dim (check 4): the dim is named.
    constexpr operand_desc k = described<A2, BlockSpec<Block<bounded_slice{8}, 256>, scalar_on_slice>>();
    EXPECT_EQ(k.issue, map_issue::entry_kind);
    EXPECT_EQ(k.map_dim, 0);
}

TEST(Describe, ScratchBuffersKeepTheirSpaceDtypeAndShape) {
    constexpr scratch_desc v = detail::describe_scratch<Scratch<vmem, float, 8, 128>>();
    EXPECT_EQ(v.space, space_kind::vmem);
    EXPECT_EQ(v.type, dtype::f32);
    EXPECT_EQ(v.elems(), 8 * 128);
    constexpr scratch_desc s = detail::describe_scratch<Scratch<semaphore, std::int32_t, 3>>();
    EXPECT_EQ(s.space, space_kind::semaphore);
    EXPECT_EQ(s.type, dtype::i32);  // one int32 counter each
    EXPECT_EQ(s.elems(), 3);
}

}  // namespace
