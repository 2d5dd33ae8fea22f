// Defines the block geometry the planner and the runner share: grid points of linear steps
// (S13), the bytes a window slot occupies in its memory (tile padding, check 24) and whether a
// block index lies in its array (S34).
#pragma once

#include <array>
#include <cstddef>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu::detail {

constexpr index_t cdiv(index_t a, index_t b) {
    return (a + b - 1) / b;
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
/// SMEM is never padded (pallas-semantics.md §3). A bool slot holds its memref type, int32
/// (memref_dtype): 4 bytes per element.
constexpr index_t slot_bytes(const operand_desc& o, int generation) {
    const auto n = static_cast<std::size_t>(o.block_rank);
    index_t elems = 1;
    for (std::size_t i = 0; i < n; ++i) {
        index_t s = o.block[i].size;
        if (o.space == space_kind::vmem) {
            if (i + 1 == n)
                s = align_up(s, 128);
            else if (i + 2 == n)
                s = align_up(s, sublane_tiling(o.type, generation));
        }
        elems *= s;
    }
    return elems * itemsize(memref_dtype(o.type));
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
            return e.start >= 0 && e.start + bd.size <= dim + bd.pad_lo + bd.pad_hi;
        case dim_kind::bounded_slice:
            return e.start >= 0 && e.size <= bd.size && e.start + e.size <= dim;
        case dim_kind::invalid:
            return false;
    }
    return false;
}

}  // namespace ptpu::detail
