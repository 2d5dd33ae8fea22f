// Defines the block geometry the planner and the runner share: grid points of linear steps
// (S13), the bytes a window slot occupies in its memory (tile padding, check 24), whether a
// block index lies in its array (S34) and whether a bounded slice keeps its contract (S38).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu::detail {

/// ceil(a / b) for b > 0, without forming a + b - 1 (a may be any extent up to INT64_MAX).
constexpr index_t cdiv(index_t a, index_t b) {
    return a / b + (a % b > 0 ? 1 : 0);
}
constexpr index_t align_up(index_t a, index_t b) {
    return cdiv(a, b) * b;
}

/// Grid point of linear step s: row-major, last axis fastest (S13).
constexpr std::array<index_t, max_rank> grid_point(const pipeline_desc& c, index_t s) {
    std::array<index_t, max_rank> p{};
    for (int i = c.grid_rank - 1; i >= 0; --i) {
        const auto u = static_cast<std::size_t>(i);
        p[u] = s % c.grid[u];
        s /= c.grid[u];
    }
    return p;
}

constexpr coords iteration_of(const pipeline_desc& c, index_t s) {
    coords it;
    it.rank = c.grid_rank;
    const auto p = grid_point(c, s);
    for (std::size_t i = 0; i < max_rank; ++i) it.v[i] = p[i];
    return it;
}

/// Bytes one window slot occupies: VMEM windows are laid out in (sublane, 128) tiles, so the two
/// minor dims round up [M] (Mosaic's allocation; S48's footprint formula for aligned blocks).
/// SMEM is never padded. A bool slot holds its memref type, int32
/// (memref_dtype): 4 bytes per element. -1 when the padded bytes overflow index_t (V3).
constexpr index_t slot_bytes(const operand_desc& o, int generation) {
    const auto n = static_cast<std::size_t>(o.block_rank);
    index_t elems = 1;
    for (std::size_t i = 0; i < n; ++i) {
        index_t s = o.block[i].size;
        if (o.space == space_kind::vmem) {
            const memory_tile t = vmem_tile(o.type, generation);
            const index_t tile = i + 1 == n ? t.lanes : i + 2 == n ? t.sublanes : 1;
            if (!mul_fits(cdiv(s, tile), tile, s)) return -1;
        }
        if (!mul_fits(elems, s, elems)) return -1;
    }
    return mul_fits(elems, itemsize(memref_dtype(o.type)), elems) ? elems : -1;
}

/// Whether block index entry e of dim d is in bounds: at least one element of the block lies in
/// the array (S34); element offsets index the padded array (S8).
constexpr bool in_bounds(const operand_desc& o, std::size_t d, const index_entry& e) {
    const block_dim& bd = o.block[d];
    const index_t dim = o.shape[d];
    switch (bd.kind) {
        case dim_kind::blocked:
            return e.start >= 0 && e.start < cdiv(dim, bd.size);
        case dim_kind::squeezed:
            return e.start >= 0 && e.start < dim;
        case dim_kind::element:
            return e.start >= 0 && e.start <= dim + bd.pad_lo + bd.pad_hi - bd.size;  // (fits: V3)
        case dim_kind::bounded_slice:
            return e.size >= 0 && e.size <= bd.size && e.start >= 0 && e.start <= dim - e.size;
        case dim_kind::invalid:
            return false;
    }
    return false;
}

/// The memory tile of dim d of operand o's array (S36, COMPACT tiling, hw/tiling.hpp's
/// hbm_tile): what a DMA slice of a pipeline with tiling must start on. Leading dims 1; the two
/// minor dims the tile's; a 1-D array its own (hbm_tile_1d). SMEM is never tiled.
constexpr index_t dma_tile(const operand_desc& o, std::size_t d, int generation) {
    if (o.space == space_kind::smem) return 1;
    const auto n = static_cast<std::size_t>(o.rank);
    if (n == 1) return hbm_tile_1d(o.type, generation);
    if (d + 2 < n) return 1;
    const memory_tile t = hbm_tile(o.type, o.shape[n - 2], generation);
    return d + 1 == n ? t.lanes : t.sublanes;
}

/// What is wrong with slice e on bounded_slice dim d of operand o (S38: upstream assumes these
/// and checks none of them, Q4): rule::ok when nothing. `tile` is dma_tile's, or 1 without tiling.
constexpr rule slice_problem(const operand_desc& o, std::size_t d, const index_entry& e, index_t tile) {
    const index_t size = e.slice_size();
    if (size < 0) return rule::s38_negative;
    if (size > o.block[d].size) return rule::s38_bound;
    if (e.start < 0 || e.start > o.shape[d] - size) return rule::s38_range;  // (no overflow)
    if (tile > 1 && e.start % tile != 0) return rule::s38_align;
    return rule::ok;
}

}  // namespace ptpu::detail
