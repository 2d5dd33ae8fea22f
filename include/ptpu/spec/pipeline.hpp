// Defines pipeline_desc, one pipeline as a value: its grid and dimension semantics, its operands
// (inputs then outputs) with their block specs, buffer counts and lookahead flags, and how many
// TensorCores its parallel dims may be split over. Both front ends describe pipelines this way:
// pallas_call (the pipeline at a kernel's entry, spec/describe.hpp adds what only a call has)
// and emit_pipeline (a pipeline inside a body, call/emit_pipeline.hpp). Which buffer counts, lookahead and block
// kinds a pipeline may use depends on the front end: see capabilities in spec/validate.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/spec/block.hpp"
#include "ptpu/spec/call.hpp"

namespace ptpu {

/// Most window slots per operand ptpu supports. emit_pipeline takes any buffer count >= 1 for
/// inputs (S30); VMEM runs out long before 8 slots of a useful block (check 24), and a bound
/// keeps every per-slot table fixed-size (rule BUF1 beyond it).
inline constexpr std::size_t max_buffers = 8;

enum class operand_role : std::uint8_t { input, output };

/// Type-level problems found while describing an operand (reported through validation).
/// entry_kind: checks 4/5 at dim map_dim, read from idx(...)'s slice mask.
enum class map_issue : std::uint8_t { none, arity, not_tuple, wrong_rank, entry_kind };

/// One input or output operand of a call, as data.
struct operand_desc {
    operand_role role = operand_role::input;
    char name[16]{};  ///< Arg's name ("": by position, in0 … out0 …)
    space_kind space = space_kind::vmem;
    dtype type = dtype::f32;
    int rank = 0;
    std::array<index_t, max_rank> shape{};
    bool full_block = false;  ///< BlockSpec<Full>: block_shape=None
    int block_rank = 0;
    std::array<block_dim, max_rank> block{};
    int buffer_count = 2;
    bool explicit_mode = false;
    bool lookahead = false;
    int prefetched = 0;  ///< Buffered's prefetched_count (S55): slots the caller filled
    bool revisit_any = false;
    bool zero_map = false;  ///< index_map=None (literal zeros)
    map_issue issue = map_issue::none;
    int map_returned = 0;  ///< how many entries the index map returned (check 2)
    int map_dim = -1;      ///< entry_kind: the dim whose entry kind the map's type gets wrong (4, 5)
    int alias_of = -1;     ///< outputs: the input index whose HBM buffer it reuses (S50)
    /// emit_pipeline: the source already lives in the spec's space (or the spec is HBM): no
    /// window, no DMA; the body sees a view of the source's block, rebound every step (S17, S56).
    bool aliased = false;

    [[nodiscard]] constexpr index_t itemsize_bytes() const { return itemsize(type); }
    [[nodiscard]] constexpr bool windowed() const { return !access(space).windowless && !aliased; }
    // (Both products fit once validate_pipeline has passed: V3 checks the bytes.)
    [[nodiscard]] constexpr index_t array_elems() const {
        index_t n = 1;
        for (int i = 0; i < rank; ++i) n *= shape[static_cast<std::size_t>(i)];
        return n;
    }
    /// Elements of one window slot (the block, squeezed dims counting 1).
    [[nodiscard]] constexpr index_t block_elems() const {
        index_t n = 1;
        for (int i = 0; i < block_rank; ++i) n *= block[static_cast<std::size_t>(i)].size;
        return n;
    }
    friend constexpr bool operator==(const operand_desc&, const operand_desc&) = default;
};

/// One pipeline as data: what the rules check and the schedule generator runs.
struct pipeline_desc {
    int grid_rank = 0;
    std::array<index_t, max_rank> grid{};
    bool has_semantics = false;
    int semantics_rank = 0;
    std::array<dim_semantics, max_rank> semantics{};
    int n_in = 0;
    int n_out = 0;
    std::array<operand_desc, max_operands> ops{};  ///< inputs then outputs (S46)
    /// TensorCores the parallel dims are split over (pallas_call: the chip's, S44; 1: no split).
    int cores = 1;
    /// emit_pipeline's tiling option (S35, S38): DMA slices follow the array's memory tiles
    /// (S36), so a bounded_slice start must be tile-aligned (S38, checked by the planner).
    bool tiling = false;
    /// emit_pipeline's no_pipelining debug mode (S54): every step copies every input block in and
    /// every output block out, blocking, in one slot that never advances.
    bool no_pipelining = false;

    [[nodiscard]] constexpr int n_ops() const { return n_in + n_out; }
    /// The grid's step count. validate_pipeline rejects a grid whose product overflows (V3);
    /// before that check, an overflowing product reads as INT64_MAX rather than wrapping.
    [[nodiscard]] constexpr index_t steps() const {
        index_t n = 1;
        return product_fits(grid.data(), grid_rank, n) ? n : INT64_MAX;
    }
};

/// What the planner calls to get a block index: the operand's index map at a grid point.
/// `ctx` carries the scalar-prefetch refs when there are any (run-time plans only).
using block_fn = index_tuple<max_rank> (*)(const index_t* grid_point, const void* ctx);

}  // namespace ptpu
