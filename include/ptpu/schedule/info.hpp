// Defines what the planner concludes about a pipeline besides its events: the first broken rule,
// the core split, per-operand facts (windowed, trivial, buffers, slot bytes, DMA counts) and the
// memory footprint.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ptpu/core/index.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// Per-operand facts the planner derived.
struct operand_plan {
    bool windowed = false;    ///< has a VMEM/SMEM window (false for any/hbm/semaphore, S47)
    bool trivial = false;     ///< whole array, zero index map: one buffer, sync copies (S18, S47)
    bool constant = false;    ///< index map ignores every grid axis of size > 1 (S48)
    int buffers = 0;          ///< window slots allocated (0 when not windowed)
    index_t block_bytes = 0;  ///< bytes of one block (the window slot's data)
    index_t slot_bytes = 0;   ///< bytes one slot occupies in its memory, tile-padded (check 24)
    index_t dmas = 0;         ///< DMAs the pipeline issues for it (fetch, sync, restore, write)
    bool lookahead = false;   ///< an input fetched with lookahead (S32; with at least 2 buffers)
    int prefetched = 0;       ///< slots the caller filled before the pipeline (S55)
    /// With the tiling option (pipeline_desc::tiling): each dim's memory tile (S36), which a
    /// partial last block's DMA rounds up to (S35); empty (zeros) without it.
    std::array<index_t, max_rank> tile{};
};

/// Summary of a plan, and the first problem found (diag.ok() when valid).
struct plan_info {
    diag problem{};
    int cores = 1;  ///< TensorCores the grid is split over (S44)
    per_core<index_t> core_begin{};  ///< each core's first linear step (S44)
    per_core<index_t> core_end{};    ///< and one past its last
    std::array<operand_plan, max_operands> ops{};
    index_t vmem_bytes = 0;  ///< per core: windows + VMEM scratch (check 24)
    index_t smem_bytes = 0;  ///< per core: prefetch + SMEM windows + SMEM scratch
    std::size_t events = 0;
    std::uint32_t revisit_any_mask = 0;  ///< bit i: operand i restores its block (S40)
    bool no_pipelining = false;          ///< S54: blocking copies of every block, every step
};

}  // namespace ptpu
