// Tests hw/tiling.hpp: the (sublane, lane) tile of every dtype on every modelled generation and
// on the presets, the memref dtype of bool, and the rows one vreg holds.
#include <gtest/gtest.h>

#include <ptpu/hw/presets.hpp>
#include <ptpu/hw/tiling.hpp>

#include <iterator>
#include <string_view>

namespace {

using ptpu::dtype;
namespace tpu = ptpu::tpu;

struct tiling_row {
    dtype d;
    std::string_view name;
    int tile_v4, tile_v5, tile_v6, tile_v7;  // sublane tiling per generation
    ptpu::index_t rows_per_vreg;
};
// Written out from docs/model.md §9, "memory tiling"; bool tiles as its int32 memref.
constexpr tiling_row table[] = {
    {dtype::f32, "f32", 8, 8, 8, 8, 8},    {dtype::bf16, "bf16", 8, 8, 8, 16, 16},
    {dtype::f16, "f16", 8, 8, 8, 16, 16},  {dtype::i32, "i32", 8, 8, 8, 8, 8},
    {dtype::i16, "i16", 8, 8, 8, 16, 16},  {dtype::i8, "i8", 32, 32, 32, 32, 32},
    {dtype::u8, "u8", 32, 32, 32, 32, 32}, {dtype::boolean, "bool", 8, 8, 8, 8, 8},
};

constexpr bool table_matches() {
    for (const tiling_row& r : table) {
        if (ptpu::sublane_tiling(r.d, 4) != r.tile_v4 || ptpu::sublane_tiling(r.d, 5) != r.tile_v5 ||
            ptpu::sublane_tiling(r.d, 6) != r.tile_v6 || ptpu::sublane_tiling(r.d, 7) != r.tile_v7 ||
            ptpu::rows_per_vreg(r.d) != r.rows_per_vreg)
            return false;
    }
    return true;
}
static_assert(table_matches());
static_assert(ptpu::lane_tiling() == 128 && ptpu::vreg_lanes == 128);
static_assert(ptpu::memref_dtype(dtype::boolean) == dtype::i32);
static_assert(ptpu::memref_dtype(dtype::bf16) == dtype::bf16);
// The chip decides through its generation: 16-bit types tile by 16 rows only from 7x on.
static_assert(ptpu::sublane_tiling(dtype::bf16, tpu::v6e) == 8);
static_assert(ptpu::sublane_tiling(dtype::bf16, tpu::v7x) == 16);
static_assert(ptpu::sublane_tiling(dtype::f32, tpu::v7x) == 8);

TEST(Tiling, PerDtypeAndGeneration) {
    EXPECT_EQ(std::size(table), 8u);
    for (const tiling_row& r : table) {
        SCOPED_TRACE(r.name);
        EXPECT_EQ(ptpu::sublane_tiling(r.d, 4), r.tile_v4);
        EXPECT_EQ(ptpu::sublane_tiling(r.d, 5), r.tile_v5);
        EXPECT_EQ(ptpu::sublane_tiling(r.d, 6), r.tile_v6);
        EXPECT_EQ(ptpu::sublane_tiling(r.d, 7), r.tile_v7);
        EXPECT_EQ(ptpu::rows_per_vreg(r.d), r.rows_per_vreg);
    }
    EXPECT_EQ(ptpu::lane_tiling(), 128);
}

TEST(Tiling, PresetsFollowTheirGeneration) {
    for (const ptpu::chip* c : tpu::all_presets) {
        SCOPED_TRACE(c->name);
        for (const tiling_row& r : table)
            EXPECT_EQ(ptpu::sublane_tiling(r.d, *c), ptpu::sublane_tiling(r.d, c->generation));
    }
    EXPECT_EQ(ptpu::sublane_tiling(dtype::i16, tpu::v7x), 16);
    EXPECT_EQ(ptpu::sublane_tiling(dtype::i16, tpu::v5e), 8);
}

}  // namespace
