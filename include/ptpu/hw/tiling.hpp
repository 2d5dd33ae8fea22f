// Defines how a TPU lays data out: the memref dtype of an element type, the (sublane, lane) tile
// of VMEM memory by dtype and generation, and the rows of a block one vreg holds.
//
// These are facts of the chip, not of the dtype (only hw/ names a generation: docs/layers.md),
// so they live here rather than in core/dtype.hpp; the planner pads VMEM windows with them
// (S48) and ops/ charge vector work in vregs with them.
#pragma once

#include <cstdint>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/hw/chip.hpp"

namespace ptpu {

/// The dtype a Pallas TPU kernel's memref holds: bool refs are stored as int32 ([src] Pallas
/// Mosaic lowering.py, BOOL_MEMREF_TYPE), so a bool block takes 4 bytes per element in VMEM and
/// tiles like i32. Every other dtype is stored as itself.
constexpr dtype memref_dtype(dtype d) {
    return d == dtype::boolean ? dtype::i32 : d;
}

/// Lane (minor-most) tile of every dtype: 128 lanes ([src] tpu_info.py).
constexpr int lane_tiling() {
    return 128;
}

/// Second-minor (sublane) tile of the memory layout for `d` on TPU generation `generation`
/// ([src] tpu_info.infer_tiling and Pallas details.rst; docs/model.md §9): 8 for 32-bit
/// types, 8 for 16-bit types before generation 7 and 16 from 7 on, 32 for 8-bit types. bool tiles
/// as its memref type i32 (memref_dtype), so 8. Generations before 4 are not modelled (H1).
constexpr int sublane_tiling(dtype d, int generation) {
    switch (bitwidth(memref_dtype(d))) {
        case 32:
            return 8;
        case 16:
            return generation >= 7 ? 16 : 8;
        default:
            return 32;
    }
}

/// The sublane tile of `d` on chip `c` (its generation decides, see above).
constexpr int sublane_tiling(dtype d, const chip& c) {
    return sublane_tiling(d, c.generation);
}

/// The tile of VMEM memory for `d` on TPU generation `generation`, minor dim last: a window's
/// two minor dims round up to it [M] (Mosaic's allocation; the planner's slot sizes, S48).
struct memory_tile {
    int sublanes = 8;  ///< the second-minor dim's tile (sublane_tiling)
    int lanes = 128;   ///< the minor dim's (lane_tiling)
};
constexpr memory_tile vmem_tile(dtype d, int generation) {
    return {sublane_tiling(d, generation), lane_tiling()};
}

/// The second-minor tile of an array of `d` in HBM at least 8 rows long (COMPACT tiling, [src]
/// tpu_info.infer_tiling): the elements one 32-bit word packs, twice that before generation 4.
/// bool counts as its memref type i32.
constexpr int hbm_row_tile(dtype d, int generation) {
    return (generation < 4 ? 2 : 1) * static_cast<int>(4 / itemsize(memref_dtype(d)));
}
/// The tile of an array of `d` in HBM whose second-minor dim is `rows` long (S36: what a DMA
/// slice must start on): the lanes along the minor dim; along the second-minor, hbm_row_tile
/// doubled while below min(rows, 8).
constexpr memory_tile hbm_tile(dtype d, std::int64_t rows, int generation) {
    int t = hbm_row_tile(d, generation);
    while (t < rows && t < 8) t *= 2;
    return {t, lane_tiling()};
}
/// The tile of a 1-D array of `d` in HBM, along its one dim: hbm_row_tile rows of lanes.
constexpr std::int64_t hbm_tile_1d(dtype d, int generation) {
    return std::int64_t{hbm_row_tile(d, generation)} * lane_tiling();
}

/// Lanes of one vreg (8 sublanes × 128 lanes × 32 bit on every generation, [src] tpu_info.py;
/// H1 rejects a chip whose sublanes/lanes differ).
inline constexpr index_t vreg_lanes = 128;

/// Rows of a block one vreg holds: 8 sublanes of 32-bit words, 16-bit types packed two per word
/// (16 rows), 8-bit types four per word (32 rows). Masks count as their memref type i32
/// (memref_dtype): a mask register covers an 8×128 tile.
constexpr index_t rows_per_vreg(dtype d) {
    return 8 * 32 / bitwidth(memref_dtype(d));
}

}  // namespace ptpu
