// Defines the analysis of a pipeline before its schedule: the rules checked with the caller's
// capabilities, the megacore split (S44), pass 1 over the grid (schedule/scan.hpp) and the
// per-operand facts, then, for a whole call, one memory layout of each core (windows, scratch,
// scalar prefetch) that both the VMEM check (24, SMEM1) and the runtime's arena use.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/schedule/geometry.hpp"
#include "ptpu/schedule/info.hpp"
#include "ptpu/schedule/scan.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// Everything the schedule needs besides the event order: the checks' verdict, the per-operand
/// facts and the change bits (chg(op, s) is 1 when operand op's block at step s differs from step
/// s-1's, or s starts a core's range). One index map evaluation per operand per step.
struct plan_tables {
    plan_info info;
    index_t steps = 0;
    int n_in = 0;
    int n_ops = 0;
    change_table chg;
};

namespace detail {

/// Megacore split (S44): parallel dims form a prefix; each core takes ceil(P/C) consecutive
/// parallel points, i.e. a contiguous range of linear steps, and runs its own pipeline.
constexpr void split_cores(const pipeline_desc& c, plan_info& info) {
    const index_t n_steps = c.steps();
    index_t par = 1;
    int n_par = 0;
    if (c.has_semantics)
        while (n_par < c.semantics_rank && c.semantics[static_cast<std::size_t>(n_par)] == dim_semantics::parallel)
            par *= c.grid[static_cast<std::size_t>(n_par++)];
    const int cores = (n_par > 0) ? std::max(1, c.cores) : 1;
    info.cores = cores;
    const index_t per_point = n_par > 0 ? n_steps / par : n_steps;
    const index_t chunk = cdiv(par, cores);
    for (int k = 0; k < cores; ++k) {
        const auto u = static_cast<std::size_t>(k);
        info.core_begin[u] = cores == 1 ? 0 : std::min(n_steps, k * chunk * per_point);
        info.core_end[u] = cores == 1 ? n_steps : std::min(n_steps, (k + 1) * chunk * per_point);
    }
}

/// Pass 1 and the per-operand facts of a pipeline whose rule checks have passed.
constexpr void scan_pipeline(const pipeline_desc& c, const capabilities& caps, int generation,
                             const block_fn* maps, const void* ctx, const scan_fn* scans, plan_tables& tables,
                             index_t budget = default_memory_budget) {
    plan_info& info = tables.info;
    const index_t n_steps = c.steps();
    const int n_ops = c.n_ops();
    tables.steps = n_steps;
    tables.n_in = c.n_in;
    tables.n_ops = n_ops;
    split_cores(c, info);
    // Pass 1: every index map evaluated once per step (detail::operand_scan). It checks entry
    // kinds (checks 4, 5), bounds (S34; S38 for bounded slices), zero maps (14, 17, S47) and
    // maps that ignore the grid (S48); records where each operand's block changes (a run starts; core starts count as
    // changes) and each output run for the revisit checks. The schedule reads only these
    // change bits.
    change_table& chg = tables.chg;
    if (!chg.reset(n_ops, n_steps, budget)) {
        const index_t chunks = cdiv(n_steps, index_t{1} << change_table::chunk_shift);
        info.problem = fail(rule::mem1, -1, -1, static_cast<index_t>(sizeof(index_t)) * n_ops * chunks, budget);
        return;
    }
    std::vector<run> runs;
    for (int i = 0; i < n_ops; ++i) {
        const operand_desc& o = c.ops[static_cast<std::size_t>(i)];
        operand_plan& op = info.ops[static_cast<std::size_t>(i)];
        index_t tile[max_rank]{};
        if (c.tiling)
            for (int d = 0; d < o.rank; ++d) tile[d] = dma_tile(o, static_cast<std::size_t>(d), generation);
        bool all_zero = true, constant = true;
        // Pass 1 of the operand; again keeping its runs when they are not in order (operand_scan).
        auto walk = [&](bool monotone) {
            operand_scan scan(c, i, info, chg, runs, monotone, budget);
            scan.check_slices = caps.bounded_slice;
            for (int d = 0; d < o.rank; ++d) scan.tile[d] = tile[d];
            const bool ok = scans != nullptr
                                ? scans[i](c, ctx, scan)
                                : scan_steps(c, scan, [&](const index_t* p) { return maps[i](p, ctx); });
            all_zero = scan.all_zero;
            constant = scan.constant;
            return ok ? 1 : scan.rescan ? -1 : 0;
        };
        int walked = walk(true);
        if (walked < 0) walked = walk(false);
        if (walked == 0) {
            // MC1 with index maps reading scalar-prefetch values: those values may be the cause.
            if (ctx != nullptr && info.problem.code == rule::mc1) info.problem.code = rule::mc1_prefetch;
            return;
        }
        // Check 18 after the index map's own checks (4, 5), in Pallas's order: BoundedSlice blocks
        // exist in emit_pipeline only.
        if (!caps.bounded_slice)
            for (int d = 0; d < o.rank; ++d)
                if (o.block[static_cast<std::size_t>(d)].kind == dim_kind::bounded_slice) {
                    info.problem = fail(rule::r18, i, d);
                    return;
                }
        if (o.aliased) continue;  // S17: a view of the source's block, no window (emit_pipeline)
        if (!o.windowed()) {
            if (!all_zero) {
                info.problem = fail(rule::r14, i);
                return;
            }
            continue;
        }
        bool whole = true;
        for (std::size_t d = 0; d < static_cast<std::size_t>(o.rank); ++d)
            whole = whole && o.block[d].kind == dim_kind::blocked && o.block[d].size == o.shape[d];
        op.windowed = true;
        op.trivial = whole && all_zero;
        op.constant = constant;
        if (c.grid_rank == 0 && !op.trivial) {
            info.problem = fail(rule::r17, i);
            return;
        }
        op.buffers = (op.trivial || op.constant) ? 1 : o.buffer_count;  // S47, S48
        // S55 (check 28): the caller filled the first k slots; a trivial window has one buffer
        // and k >= 1 skips its sync copy.
        if (o.prefetched > 0 && !op.trivial && o.prefetched >= op.buffers) {
            info.problem = fail(rule::r28, i, -1, o.prefetched, op.buffers);
            return;
        }
        op.prefetched = o.prefetched;
        op.lookahead = o.lookahead && op.buffers >= 2;
        if (c.tiling)  // S35 (check 31): a partial last block rounds up to the tile
            for (std::size_t d = 0; d < static_cast<std::size_t>(o.rank); ++d) {
                const block_dim& bd = o.block[d];
                op.tile[d] = tile[d];
                if (bd.kind == dim_kind::blocked && o.shape[d] % bd.size != 0 && bd.size % tile[d] != 0) {
                    info.problem = fail(rule::r31, i, static_cast<int>(d), bd.size, tile[d]);
                    return;
                }
            }
        op.block_bytes = o.block_elems() * itemsize(o.type);  // (fits: validate_pipeline's V3)
        op.slot_bytes = slot_bytes(o, generation);
        if (op.slot_bytes < 0) {
            info.problem = overflow(overflow_of::slot_bytes, i);
            return;
        }
    }
    // V3: every window's buffers, summed at the larger of a slot and its block rounded up to 64
    // bytes (the arenas' stride), fit; then no layout of these windows overflows.
    index_t windows = 0;
    for (int i = 0; i < n_ops; ++i) {
        const operand_plan& op = info.ops[static_cast<std::size_t>(i)];
        if (!op.windowed) continue;
        index_t stride = 0, bytes = 0;
        if (!add_fits(op.block_bytes, 63, stride) || !mul_fits(std::max(op.slot_bytes, stride / 64 * 64), op.buffers, bytes) ||
            !add_fits(windows, bytes, windows)) {
            info.problem = overflow(overflow_of::windows, i);
            return;
        }
    }

    // S39 and MC1 for outputs whose block grid was too large for the table: a block written by
    // two runs. Same core: a non-consecutive revisit (the buffer was reused for other blocks in
    // between). Different cores: both cores write one block.
    for (auto& r : runs)
        while (r.last + 1 < n_steps && chg(r.op, r.last + 1) == 0) ++r.last;
    std::sort(runs.begin(), runs.end());
    for (std::size_t k = 1; k < runs.size(); ++k) {
        const auto& a = runs[k - 1];
        const auto& b = runs[k];
        if (a.op != b.op || a.block != b.block) continue;
        if (a.core == b.core && c.ops[static_cast<std::size_t>(a.op)].revisit_any) continue;
        diag p = fail(a.core == b.core ? rule::s39 : ctx != nullptr ? rule::mc1_prefetch : rule::mc1, a.op);
        p.block = a.block;
        p.d = c.ops[static_cast<std::size_t>(a.op)].rank;
        p.a = a.core;
        p.b = a.last;
        p.c = b.core;
        p.at[0] = iteration_of(c, a.first);
        p.at[1] = iteration_of(c, a.last);
        p.at[2] = iteration_of(c, b.first);
        info.problem = p;
        return;
    }
    info.no_pipelining = c.no_pipelining;
    info.revisit_any_mask = 0;
    for (int i = 0; i < n_ops; ++i)
        if (c.ops[static_cast<std::size_t>(i)].revisit_any) info.revisit_any_mask |= 1u << i;
}

}  // namespace detail

/// Analyzes one pipeline for a front end with capabilities `caps` on a chip of TPU generation
/// `generation` (its tiling pads the window slots): the rules that need no schedule, then pass 1.
/// `maps[i]` is operand i's index map (inputs then outputs), `ctx` is passed to them; `scans`,
/// when given, replaces `maps` for pass 1 (scan_operand: the same walk, maps inlined).
constexpr plan_tables analyze_pipeline(const pipeline_desc& p, const capabilities& caps, int generation,
                                       const block_fn* maps, const void* ctx, const scan_fn* scans = nullptr,
                                       index_t budget = default_memory_budget) {
    plan_tables tables;
    tables.info.problem = validate_pipeline(p, caps);
    if (!tables.info.problem.ok()) return tables;
    detail::scan_pipeline(p, caps, generation, maps, ctx, scans, tables, budget);
    return tables;
}

/// Where each buffer of a call lives in one core's memories. One layout serves both the VMEM
/// and SMEM checks (24, SMEM1: the sums of what each memory holds) and the runtime's host arena
/// that stands for those memories (each buffer at its offset, 64-byte aligned on the host).
struct memory_layout {
    std::array<std::array<index_t, max_buffers>, max_operands> slot_at{};  ///< arena offsets
    std::array<index_t, max_scratch> scratch_at{};
    std::array<index_t, max_operands> prefetch_at{};
    index_t vmem_bytes = 0;    ///< windows in VMEM (tile-padded) + VMEM scratch (check 24)
    index_t smem_bytes = 0;    ///< scalar prefetch + SMEM windows + SMEM scratch (SMEM1)
    index_t scratch_vmem = 0;  ///< of vmem_bytes, the VMEM scratch
    index_t arena_bytes = 0;   ///< host bytes of the whole arena
    bool overflow = false;     ///< a total does not fit in index_t (V3; the totals then saturate)
};

/// The layout of one core's memories for call `c` whose pipeline analysis is `info`: VMEM
/// windows in operand order, VMEM scratch, then SMEM (prefetch, windows, scratch), then
/// semaphores.
constexpr memory_layout layout_of(const call_desc& c, const plan_info& info) {
    memory_layout m;
    index_t at = 0;
    // Checked sums (V3): a sum that would overflow saturates and sets `overflow`, which analyze()
    // reports; validation bounds each term, so only a total can overflow.
    auto sum = [&](index_t& acc, index_t v) {
        if (!add_fits(acc, v, acc)) {
            acc = std::numeric_limits<index_t>::max();
            m.overflow = true;
        }
    };
    auto take = [&](index_t bytes) {
        const index_t here = at;
        index_t aligned = 0;
        if (!add_fits(bytes, 63, aligned)) aligned = std::numeric_limits<index_t>::max();
        sum(at, aligned / 64 * 64);
        return here;
    };
    auto windows = [&](space_kind space) {
        for (int i = 0; i < c.n_ops(); ++i) {
            const auto u = static_cast<std::size_t>(i);
            if ((c.ops[u].space == space_kind::smem) != (space == space_kind::smem)) continue;
            for (int k = 0; k < info.ops[u].buffers; ++k) {
                m.slot_at[u][static_cast<std::size_t>(k)] = take(info.ops[u].slot_bytes);
                sum(space == space_kind::smem ? m.smem_bytes : m.vmem_bytes, info.ops[u].slot_bytes);
            }
        }
    };
    auto scratch = [&](space_kind space) {
        for (int k = 0; k < c.n_scratch; ++k) {
            const scratch_desc& s = c.scratch[static_cast<std::size_t>(k)];
            if (s.space != space) continue;
            const index_t bytes = s.elems() * itemsize(memref_dtype(s.type));  // bool: as int32 (fits: V3)
            m.scratch_at[static_cast<std::size_t>(k)] = take(bytes);
            if (space == space_kind::vmem) sum(m.scratch_vmem, bytes);
            if (space == space_kind::smem) sum(m.smem_bytes, bytes);
        }
    };
    windows(space_kind::vmem);
    scratch(space_kind::vmem);
    sum(m.vmem_bytes, m.scratch_vmem);
    for (int k = 0; k < c.n_prefetch; ++k) {
        m.prefetch_at[static_cast<std::size_t>(k)] = take(c.prefetch_each[static_cast<std::size_t>(k)]);
        sum(m.smem_bytes, c.prefetch_each[static_cast<std::size_t>(k)]);
    }
    windows(space_kind::smem);
    scratch(space_kind::smem);
    scratch(space_kind::semaphore);
    m.arena_bytes = at;
    return m;
}

/// Analyzes a whole pallas_call: its checks (10, the pipeline's with pallas_call's capabilities,
/// 11), pass 1 (its host tables within `host_budget` bytes, MEM1), then the budgets of its memory layout
/// (24, SMEM1).
constexpr plan_tables analyze(const call_desc& c, const block_fn* maps, const void* ctx,
                              const scan_fn* scans = nullptr, index_t host_budget = default_memory_budget) {
    plan_tables tables;
    plan_info& info = tables.info;
    info.problem = validate(c);
    if (!info.problem.ok()) return tables;
    detail::scan_pipeline(c, pallas_call_caps, c.hw.generation, maps, ctx, scans, tables, host_budget);
    if (!info.problem.ok()) return tables;

    const memory_layout m = layout_of(c, info);
    if (m.overflow) {
        info.problem = detail::overflow(overflow_of::layout);
        return tables;
    }
    diag budget = detail::fail(rule::r24);
    for (int i = 0; i < c.n_ops(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        budget.bytes[u] = info.ops[u].slot_bytes;
        budget.buffers[u] = info.ops[u].buffers;
    }
    info.vmem_bytes = m.vmem_bytes;
    info.smem_bytes = m.smem_bytes;
    budget.bytes[max_operands] = m.scratch_vmem;
    budget.bytes[max_operands + 1] = m.vmem_bytes;
    budget.a = m.vmem_bytes;
    budget.b = c.vmem_limit;
    if (m.vmem_bytes > c.vmem_limit) {
        info.problem = budget;
        return tables;
    }
    if (m.smem_bytes > c.hw.smem_bytes) {
        budget.code = rule::smem1;
        budget.a = m.smem_bytes;
        budget.b = c.hw.smem_bytes;
        info.problem = budget;
        return tables;
    }
    return tables;
}

}  // namespace ptpu
