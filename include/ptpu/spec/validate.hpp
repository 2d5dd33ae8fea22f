// Defines the validation of pipelines and calls: the front ends' capabilities and the constexpr
// checks of Pallas (docs/rules.md) that need no schedule: validate_pipeline(pipeline_desc,
// capabilities) (1–3, 7, 13–20, 25, 27, Q1, BUF1, S44; 4 and 5 when the map's return type states
// its slice entries, as idx(...)'s does) and validate(call_desc) (10, the pipeline with
// pallas_call's capabilities, 11). Rules that need the grid walked (4, 5 for other maps, 14's index map,
// 17, 18, 24, S34, S38, S39, MC1) are checked by the planner with the same diag (spec/diag.hpp: the
// rules, their messages). A static call reports a diag as one static_assert; a dynamic one as
// ptpu::error.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/message.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/diag.hpp"
#include "ptpu/spec/pipeline.hpp"

namespace ptpu {

namespace detail {

constexpr bool is_pow2(index_t v) {
    return v > 0 && (v & (v - 1)) == 0;
}

constexpr diag fail(rule r, int op = -1, int dim = -1, index_t a = 0, index_t b = 0) {
    diag d;
    d.code = r;
    d.op = op;
    d.dim = dim;
    d.a = a;
    d.b = b;
    return d;
}

// 25: dim `dim` of `grid` is not positive (the whole grid in at[0], for the message).
constexpr diag zero_grid(const index_t* grid, int rank, int dim, bool top_level) {
    diag d = fail(top_level ? rule::r25 : rule::r25_inner, -1, dim, grid[dim]);
    d.at[0].rank = rank;
    for (int i = 0; i < rank; ++i) d.at[0].v[i] = grid[i];
    return d;
}

constexpr diag overflow(overflow_of what, int op = -1, int dim = -1, index_t which = 0) {
    diag d = fail(rule::v3, op, dim);
    d.c = static_cast<index_t>(what);
    d.b = which;
    return d;
}

// V3 for one operand: its array's bytes, its element dims' padded extents and (windowed) one
// block's bytes fit in index_t, so that the planner, the runner and the DMA engine compute
// them, and every offset and stride inside them, without overflow.
constexpr diag check_extents(const operand_desc& o, int op) {
    index_t n = 0;
    int at = 0;
    const index_t item = itemsize(memref_dtype(o.type));
    if (!product_fits(o.shape.data(), o.rank, n, &at)) return overflow(overflow_of::array_bytes, op, at);
    if (!mul_fits(n, item, n)) return overflow(overflow_of::array_bytes, op, o.rank - 1);
    for (int d = 0; d < o.block_rank && d < o.rank; ++d) {
        const block_dim& bd = o.block[static_cast<std::size_t>(d)];
        if (bd.kind != dim_kind::element) continue;
        // Offsets run over [0, dim + lo + hi - size]: that extent and the end of a block fit.
        index_t padded = 0, last = 0;
        if (!add_fits(o.shape[static_cast<std::size_t>(d)], bd.pad_lo, padded) ||
            !add_fits(padded, bd.pad_hi, padded) || !sub_fits(padded, bd.size, last) || !add_fits(last, 1, last))
            return overflow(overflow_of::padded_dim, op, d);
    }
    return {};
}
constexpr diag check_block_bytes(const operand_desc& o, int op) {
    index_t n = 1;
    for (int d = 0; d < o.block_rank; ++d)
        if (!mul_fits(n, o.block[static_cast<std::size_t>(d)].size, n)) return overflow(overflow_of::block_bytes, op, d);
    if (!mul_fits(n, itemsize(memref_dtype(o.type)), n)) return overflow(overflow_of::block_bytes, op, o.block_rank - 1);
    return {};
}

constexpr diag check_tiling(const operand_desc& o, int op) {
    // Check 15/16 (lowering.py::_check_block_mappings): squeezed dims count as size 1.
    const auto n = static_cast<std::size_t>(o.block_rank);
    if (n == 1) {
        const index_t bs = o.block[0].size;
        const index_t as = o.shape[0];
        const index_t lanes_needed = lane_tiling() * (32 / bitwidth(memref_dtype(o.type)));  // bool: as i32
        if (!(bs == as || bs % 1024 == 0 || (is_pow2(bs) && bs >= lanes_needed)))
            return fail(rule::r16, op, 0, bs, as);
        return {};
    }
    const index_t b1 = o.block[n - 1].size;
    const index_t b2 = o.block[n - 2].size;
    if (!(b1 == o.shape[n - 1] || b1 % lane_tiling() == 0))
        return fail(rule::r15, op, static_cast<int>(n - 1), b1, o.shape[n - 1]);
    if (!(b2 == o.shape[n - 2] || b2 % 8 == 0))
        return fail(rule::r15, op, static_cast<int>(n - 2), b2, o.shape[n - 2]);
    return {};
}

}  // namespace detail

/// What a front end lets its pipelines do: the rules that differ between pallas_call and
/// emit_pipeline are read from here, so each stays one rule with one id and one message.
struct capabilities {
    int max_in_buffers = 2;   ///< pallas_call: 2 (check 19); emit_pipeline: any (S30), ptpu's max_buffers
    int max_out_buffers = 2;  ///< both: 2 (S31)
    bool lookahead = false;   ///< Buffered<k, true> on inputs (S32; pallas_call rejects it, 19)
    bool bounded_slice = false;  ///< BoundedSlice blocks (pallas_call rejects them, 18)
    /// The TPU lowering's window checks of a top-level call (13–19: block rank, tiling, element
    /// mixing, one or two buffers, revisit_any single-buffered); emit_pipeline has none of them
    /// (S52) and reports buffer counts with check 27.
    bool top_level = true;
};

/// pallas_call's pipeline: buffers 1–2, no lookahead, no BoundedSlice, the lowering's checks.
inline constexpr capabilities pallas_call_caps{};
/// emit_pipeline's: inputs any count ≥ 1, outputs ≤ 2, lookahead on inputs, BoundedSlice.
inline constexpr capabilities emit_pipeline_caps{static_cast<int>(max_buffers), 2, true, true, false};

/// The buffering checks of operand i of an inner pipeline (27, BUF1, Q1), in the order Pallas
/// reports them: at least one buffer, at most two for an output and max_buffers for an input,
/// no lookahead on an output, and lookahead only over two buffers or more. validate_pipeline
/// uses it for every pipeline, and emit_pipeline at compile time for its static specs.
constexpr diag check_inner_buffering(int i, bool output, int buffer_count, bool lookahead, const capabilities& caps) {
    using detail::fail;
    const int max_bc = output ? caps.max_out_buffers : caps.max_in_buffers;
    if (buffer_count < 1) return fail(rule::r27_buffers, i, -1, buffer_count);
    if (output && buffer_count > max_bc) return fail(rule::r27_out_buffers, i, -1, buffer_count);
    if (buffer_count > max_bc) return fail(rule::buf1, i, -1, buffer_count, max_bc);
    if (lookahead && output) return fail(rule::r27_out_lookahead, i);
    if (lookahead && !caps.lookahead) return fail(rule::r19_lookahead, i);
    if (lookahead && buffer_count == 1) return fail(rule::q1, i);  // Q1 [M]
    return {};
}

/// The checks of one pipeline that need no schedule, in the order Pallas reports them: the grid
/// (25), the semantics (20, S44), then each operand (7, 1–3, 13, 14, 15, 18, 19 or 27, Q1, BUF1).
constexpr diag validate_pipeline(const pipeline_desc& c, const capabilities& caps) {
    using detail::fail;
    for (int i = 0; i < c.grid_rank; ++i)
        if (c.grid[static_cast<std::size_t>(i)] <= 0) return detail::zero_grid(c.grid.data(), c.grid_rank, i, caps.top_level);
    {  // V3: the step count, and the planner's per-step tables (operand x step, 2 x step + 2)
        index_t steps = 0;
        int at = 0;
        if (!product_fits(c.grid.data(), c.grid_rank, steps, &at)) return detail::overflow(overflow_of::grid_steps, -1, at);
        if (!mul_fits(steps, c.n_ops() + 2, steps)) return detail::overflow(overflow_of::step_tables);
    }
    if (c.has_semantics && c.semantics_rank != c.grid_rank)
        return fail(rule::r20, -1, -1, c.semantics_rank, c.grid_rank);
    if (c.has_semantics) {
        bool seen_arbitrary = false;
        for (int i = 0; i < c.semantics_rank; ++i) {
            const bool par = c.semantics[static_cast<std::size_t>(i)] == dim_semantics::parallel;
            if (par && seen_arbitrary) return fail(rule::s44, -1, i);
            seen_arbitrary = seen_arbitrary || !par;
        }
    }
    for (int i = 0; i < c.n_ops(); ++i) {
        const operand_desc& o = c.ops[static_cast<std::size_t>(i)];
        const bool output = o.role == operand_role::output;
        for (int d = 0; d < o.block_rank; ++d)
            if (o.block[static_cast<std::size_t>(d)].kind == dim_kind::invalid)
                return fail(rule::reported, i, d);
        if (o.block_rank != o.rank) return fail(rule::r1, i, -1, o.block_rank, o.rank);
        if (const diag v = detail::check_extents(o, i); !v.ok()) return v;
        if (o.issue == map_issue::arity) return fail(rule::r2_arity, i, -1, c.grid_rank);
        if (o.issue == map_issue::not_tuple) return fail(rule::r3, i);
        if (o.issue == map_issue::wrong_rank) return fail(rule::r2, i, -1, o.map_returned, o.block_rank);
        // 4, 5 read from the map's type (idx(...)'s slice mask); other maps: the planner's walk.
        if (o.issue == map_issue::entry_kind && o.map_dim >= 0 && o.map_dim < o.block_rank) {
            const bool bounded = o.block[static_cast<std::size_t>(o.map_dim)].kind == dim_kind::bounded_slice;
            return fail(bounded ? rule::r4 : rule::r5, i, o.map_dim);
        }
        if (caps.top_level && o.rank < 1) return fail(rule::r13, i);
        if (o.aliased) continue;  // emit_pipeline's view of the source's block: no window (S17)
        if (access(o.space).windowless) {
            for (int d = 0; d < o.rank; ++d) {
                const auto& bd = o.block[static_cast<std::size_t>(d)];
                if (bd.kind != dim_kind::blocked || bd.size != o.shape[static_cast<std::size_t>(d)])
                    return fail(rule::r14, i, d, bd.size, o.shape[static_cast<std::size_t>(d)]);
            }
            continue;  // no window: the remaining checks are about windows
        }
        int elements = 0;
        int non_squeezed = 0;
        for (int d = 0; d < o.block_rank; ++d) {
            const auto& bd = o.block[static_cast<std::size_t>(d)];
            if (bd.size <= 0) return fail(rule::r15, i, d, bd.size, o.shape[static_cast<std::size_t>(d)]);
            if (bd.kind == dim_kind::element && (bd.pad_lo < 0 || bd.pad_hi < 0))
                return fail(rule::pad1, i, d, bd.pad_lo < 0 ? bd.pad_lo : bd.pad_hi, 0);
            elements += bd.kind == dim_kind::element;
            non_squeezed += bd.kind != dim_kind::squeezed;
        }
        if (const diag v = detail::check_block_bytes(o, i); !v.ok()) return v;
        if (caps.top_level && elements != 0 && elements != non_squeezed) return fail(rule::r18_element, i);
        const int max_bc = output ? caps.max_out_buffers : caps.max_in_buffers;
        if (caps.top_level) {
            if (o.lookahead) return fail(rule::r19_lookahead, i);
            if (o.prefetched != 0) return fail(rule::r19_prefetched, i, -1, o.prefetched);
            if (o.buffer_count < 1 || o.buffer_count > max_bc)
                return fail(rule::r19_buffers, i, -1, o.buffer_count);
            if (o.revisit_any && o.buffer_count != 1 && output)
                return fail(rule::r19_revisit, i, -1, o.buffer_count);
        } else {
            if (const diag b = check_inner_buffering(i, output, o.buffer_count, o.lookahead, caps); !b.ok()) return b;
            if (o.prefetched != 0 && output) return fail(rule::r28_output, i, -1, o.prefetched);
            if (o.prefetched < 0) return fail(rule::r28, i, -1, o.prefetched, o.buffer_count);
        }
        const bool smem_trivial = o.space == space_kind::smem && o.full_block && o.zero_map;
        if (caps.top_level && !smem_trivial) {
            const diag t = detail::check_tiling(o, i);
            if (!t.ok()) return t;
        }
    }
    return {};
}

/// Checks of a whole pallas_call that need no schedule, in the order Pallas reports them: the
/// options (10), its pipeline with pallas_call's capabilities, the aliases (11).
constexpr diag validate(const call_desc& c) {
    using detail::fail;
    if (c.duplicate_option >= 0 || c.unknown_option) return fail(rule::r10, -1, -1, c.duplicate_option);
    if (c.vmem_limit < 0 || c.vmem_limit > c.hw.vmem_bytes) return fail(rule::r24_limit, -1, -1, c.vmem_limit, c.hw.vmem_bytes);
    if (const diag p = validate_pipeline(c, pallas_call_caps); !p.ok()) return p;
    bool out_taken[max_operands] = {};
    // 11 names both operands (a: input, b: output) and what is wrong (c: alias_problem), with the
    // input's and the output's values (bytes[0], bytes[1]: dtypes, ranks or the extents at `dim`).
    auto alias_fail = [&](int in, int out, alias_problem p, int dim = -1, index_t x = 0, index_t y = 0) {
        diag d = fail(rule::r11, -1, dim, in, out);
        d.c = static_cast<index_t>(p);
        d.d = p == alias_problem::input_out_of_range ? c.n_in : c.n_out;
        d.bytes[0] = x;
        d.bytes[1] = y;
        return d;
    };
    for (int k = 0; k < c.n_alias; ++k) {
        const auto [in, out] = c.aliases[static_cast<std::size_t>(k)];
        if (in < 0 || in >= c.n_in) return alias_fail(in, out, alias_problem::input_out_of_range);
        if (out < 0 || out >= c.n_out) return alias_fail(in, out, alias_problem::output_out_of_range);
        if (out_taken[out]) return alias_fail(in, out, alias_problem::output_reused);
        out_taken[out] = true;
        const operand_desc& a = c.ops[static_cast<std::size_t>(in)];
        const operand_desc& b = c.ops[static_cast<std::size_t>(c.n_in + out)];
        if (a.type != b.type)
            return alias_fail(in, out, alias_problem::dtype, -1, static_cast<index_t>(a.type),
                              static_cast<index_t>(b.type));
        if (a.rank != b.rank) return alias_fail(in, out, alias_problem::rank, -1, a.rank, b.rank);
        for (int d = 0; d < a.rank; ++d)
            if (a.shape[static_cast<std::size_t>(d)] != b.shape[static_cast<std::size_t>(d)])
                return alias_fail(in, out, alias_problem::shape, d, a.shape[static_cast<std::size_t>(d)],
                                  b.shape[static_cast<std::size_t>(d)]);
    }
    // V3: each scratch buffer's and scalar-prefetch operand's bytes, and the prefetch total.
    for (int k = 0; k < c.n_scratch; ++k) {
        const scratch_desc& s = c.scratch[static_cast<std::size_t>(k)];
        index_t n = 0;
        int at = 0;
        if (!product_fits(s.shape.data(), s.rank, n, &at)) return detail::overflow(overflow_of::scratch_bytes, -1, at, k);
        if (!mul_fits(n, itemsize(memref_dtype(s.type)), n))
            return detail::overflow(overflow_of::scratch_bytes, -1, s.rank - 1, k);
    }
    index_t prefetch = 0;
    for (int k = 0; k < c.n_prefetch; ++k)
        if (c.prefetch_each[static_cast<std::size_t>(k)] < 0 ||
            !add_fits(prefetch, c.prefetch_each[static_cast<std::size_t>(k)], prefetch))
            return detail::overflow(overflow_of::prefetch_bytes, -1, -1, k);
    return {};
}

}  // namespace ptpu
