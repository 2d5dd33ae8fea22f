// Defines the planner: the constexpr functions that turn a call_desc and its index maps into the
// exact Pallas TPU pipeline (pallas-semantics.md S21–S31, S34, S39–S48), as a stream of events
// per core. One planner, two evaluation times: static calls evaluate it at compile time into
// std::arrays; calls whose index maps read scalar-prefetch values evaluate it at run time.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// What happens, in the order a core's scalar unit issues it (S22–S24, S28, S29, S40).
enum class event_kind : std::uint8_t {
    step,        ///< a grid step begins (its control overhead)
    sync_in,     ///< trivially-windowed input copied in before the prologue (S18, S22.2)
    fetch,       ///< async DMA HBM → window slot started (S22.3, S23.1)
    wait_in,     ///< wait for a fetch into `slot` (S23.2)
    restore,     ///< revisit_any output: block copied HBM → slot before the body (S40, [M])
    body,        ///< the kernel body runs
    write,       ///< async DMA window slot → HBM started (S23.4, bc = 2)
    write_sync,  ///< blocking copy window slot → HBM (S29, bc = 1)
    wait_out,    ///< wait for the write issued from `slot` (S23.5, S24)
    sync_out,    ///< trivially-windowed output copied out after the epilogue (S24)
};

/// One event. `step` is the global linear grid step during which it is issued (prologue events
/// carry the core's first step, epilogue events its last); `block_step` is the global linear step
/// whose block index (index map value) the DMA moves.
struct event {
    event_kind kind = event_kind::step;
    std::uint8_t core = 0;
    std::uint8_t op = 0;
    std::uint8_t slot = 0;
    std::uint32_t step = 0;
    std::uint32_t block_step = 0;
    friend constexpr bool operator==(const event&, const event&) = default;
};

/// Per-operand facts the planner derived.
struct operand_plan {
    bool windowed = false;   ///< has a VMEM/SMEM window (false for any/hbm/semaphore, S47)
    bool trivial = false;    ///< whole array, zero index map: one buffer, sync copies (S18, S47)
    bool constant = false;   ///< index map ignores every grid axis of size > 1 (S48)
    int buffers = 0;         ///< window slots allocated (0 when not windowed)
    index_t block_bytes = 0; ///< bytes of one block (the window slot's data)
    index_t slot_bytes = 0;  ///< bytes one slot occupies in its memory, tile-padded (check 24)
    index_t dmas = 0;        ///< DMAs the pipeline issues for it (fetch, sync, restore, write)
};

/// Summary of a plan, and the first problem found (diag.ok() when valid).
struct plan_info {
    diag problem{};
    int cores = 1;  ///< TensorCores the grid is split over (S44)
    std::array<index_t, 2> core_begin{};
    std::array<index_t, 2> core_end{};
    std::array<operand_plan, max_operands> ops{};
    index_t vmem_bytes = 0;  ///< per core: windows + VMEM scratch (check 24)
    index_t smem_bytes = 0;  ///< per core: prefetch + SMEM windows + SMEM scratch
    std::size_t events = 0;
};

namespace detail {

constexpr index_t cdiv(index_t a, index_t b) { return (a + b - 1) / b; }
constexpr index_t align_up(index_t a, index_t b) { return cdiv(a, b) * b; }

/// Grid point of linear step s: row-major, last axis fastest (S13).
constexpr std::array<index_t, max_rank> grid_point(const call_desc& c, index_t s) {
    std::array<index_t, max_rank> p{};
    for (int i = c.grid_rank - 1; i >= 0; --i) {
        const auto u = static_cast<std::size_t>(i);
        p[u] = s % c.grid[u];
        s /= c.grid[u];
    }
    return p;
}

constexpr coords iteration_of(const call_desc& c, index_t s) {
    coords it;
    it.rank = c.grid_rank;
    const auto p = grid_point(c, s);
    for (std::size_t i = 0; i < max_rank; ++i) it.v[i] = p[i];
    return it;
}

/// Bytes one window slot occupies: VMEM windows are laid out in (sublane, 128) tiles, so the two
/// minor dims round up [M] (Mosaic's allocation; S48's footprint formula for aligned blocks).
/// SMEM is never padded (pallas-semantics.md §3).
constexpr index_t slot_bytes(const operand_desc& o, int generation) {
    const auto n = static_cast<std::size_t>(o.block_rank);
    index_t elems = 1;
    for (std::size_t i = 0; i < n; ++i) {
        index_t s = o.block[i].size;
        if (o.space == space_kind::vmem) {
            if (i + 1 == n) s = align_up(s, 128);
            else if (i + 2 == n) s = align_up(s, sublane_tiling(o.type, generation));
        }
        elems *= s;
    }
    return elems * itemsize(o.type);
}

/// Whether block index entry e of dim d is in bounds: at least one element of the block lies in
/// the array (S34); element offsets index the padded array (S8).
constexpr bool in_bounds(const operand_desc& o, std::size_t d, const index_entry& e) {
    const block_dim& bd = o.block[d];
    const index_t dim = o.shape[d];
    switch (bd.kind) {
    case dim_kind::blocked: return e.start >= 0 && e.start < cdiv(dim, bd.size);
    case dim_kind::squeezed: return e.start >= 0 && e.start < dim;
    case dim_kind::element: return e.start >= 0 && e.start + bd.size <= dim + bd.pad_lo + bd.pad_hi;
    case dim_kind::bounded_slice: return e.start >= 0 && e.size <= bd.size && e.start + e.size <= dim;
    case dim_kind::invalid: return false;
    }
    return false;
}

struct run {
    index_tuple<max_rank> block;
    int op;
    int core;
    index_t first;
    index_t last;
    friend constexpr bool operator<(const run& a, const run& b) {
        if (a.op != b.op) return a.op < b.op;
        if (a.block != b.block) return a.block < b.block;
        return a.first < b.first;
    }
};

}  // namespace detail

/// The planner. Calls `emit(event)` for each event, in issue order, core after core, and returns
/// the plan's summary. `maps[i]` is operand i's index map (inputs then outputs); `ctx` is passed to
/// them (the scalar-prefetch refs, or nullptr).
template <class Emit>
constexpr plan_info plan(const call_desc& c, const block_fn* maps, const void* ctx, Emit&& emit) {
    using detail::fail;
    plan_info info;
    info.problem = validate(c);
    if (!info.problem.ok()) return info;

    const index_t n_steps = c.steps();
    const int n_ops = c.n_ops();

    // Megacore split (S44): parallel dims form a prefix; each core takes ceil(P/C) consecutive
    // parallel points, i.e. a contiguous range of linear steps, and runs its own pipeline.
    {
        index_t par = 1;
        int n_par = 0;
        if (c.has_semantics)
            while (n_par < c.semantics_rank &&
                   c.semantics[static_cast<std::size_t>(n_par)] == dim_semantics::parallel)
                par *= c.grid[static_cast<std::size_t>(n_par++)];
        const int cores = (n_par > 0) ? c.hw.pallas_cores() : 1;
        info.cores = cores;
        const index_t per_point = n_par > 0 ? n_steps / par : n_steps;
        const index_t chunk = detail::cdiv(par, cores);
        for (int k = 0; k < cores; ++k) {
            const auto u = static_cast<std::size_t>(k);
            info.core_begin[u] = cores == 1 ? 0 : std::min(n_steps, k * chunk * per_point);
            info.core_end[u] = cores == 1 ? n_steps : std::min(n_steps, (k + 1) * chunk * per_point);
        }
    }
    auto core_start = [&](index_t s) {
        return s == info.core_begin[0] || (info.cores > 1 && s == info.core_begin[1]);
    };

    // Pass 1: every index map evaluated once per step. It checks entry kinds (checks 4, 5),
    // bounds (S34), zero maps (14, 17, S47) and maps that ignore the grid (S48); records where
    // each operand's block changes (a run starts; core starts count as changes) and each output
    // run for the revisit checks. The schedule below reads only these change bits.
    // (Hot loops use built-in arrays and raw pointers: g++ evaluates them several times faster
    // than std::array / std::vector operator[] at compile time.)
    std::vector<std::uint8_t> chg_store(static_cast<std::size_t>(n_ops * n_steps), 0);
    std::uint8_t* const chg = chg_store.data();
    std::vector<detail::run> runs;
    index_t point[max_rank]{};
    for (int i = 0; i < n_ops; ++i) {
        const operand_desc& o = c.ops[static_cast<std::size_t>(i)];
        operand_plan& op = info.ops[static_cast<std::size_t>(i)];
        std::uint8_t* ch = chg + i * n_steps;
        const bool track_runs = o.role == operand_role::output && o.windowed();
        bool all_zero = true;
        bool constant = true;
        index_tuple<max_rank> first{};
        index_tuple<max_rank> prev{};
        index_t grid[max_rank]{};
        for (int d = 0; d < c.grid_rank; ++d) {
            grid[d] = c.grid[static_cast<std::size_t>(d)];
            point[d] = 0;
        }
        const block_fn map = maps[i];
        // Revisit bookkeeping (S39, MC1): which run last wrote each block, in a table indexed by
        // the block's linear id when the block grid is small enough, else in a list sorted below.
        index_t id_stride[max_rank]{};
        index_t n_ids = 1;
        if (track_runs)
            for (int d = o.rank - 1; d >= 0; --d) {
                const block_dim& bd = o.block[static_cast<std::size_t>(d)];
                const index_t dim = o.shape[static_cast<std::size_t>(d)];
                const index_t n = bd.kind == dim_kind::blocked    ? detail::cdiv(dim, bd.size)
                                  : bd.kind == dim_kind::element ? dim + bd.pad_lo + bd.pad_hi - bd.size + 1
                                                                 : dim;
                id_stride[d] = n_ids;
                n_ids = n_ids > (index_t{1} << 22) ? n_ids : n_ids * std::max<index_t>(n, 1);
            }
        const bool use_table = track_runs && n_ids <= (index_t{1} << 22);
        std::vector<index_t> writer_store(use_table ? static_cast<std::size_t>(n_ids) : 0, 0);
        index_t* const writer = writer_store.data();  // 0: unwritten; else 2*first_step + core + 1
        for (index_t s = 0; s < n_steps; ++s) {
            if (s > 0)  // row-major odometer, last axis fastest (S13)
                for (int d = c.grid_rank - 1; d >= 0; --d) {
                    if (++point[d] < grid[d]) break;
                    point[d] = 0;
                }
            const index_tuple<max_rank> b = map(point, ctx);
            if (s == 0) first = b;
            const bool differs = s == 0 || !(b == prev);
            if (differs && constant && s > 0) constant = b == first;
            if (differs) {
                for (std::size_t d = 0; d < static_cast<std::size_t>(o.rank); ++d) {
                    const bool want_slice = o.block[d].kind == dim_kind::bounded_slice;
                    if (want_slice != b[d].is_slice()) {
                        info.problem = fail(want_slice ? rule::r4 : rule::r5, i, static_cast<int>(d));
                        return info;
                    }
                    all_zero = all_zero && b[d].start == 0;
                    if (o.windowed() && !detail::in_bounds(o, d, b[d])) {
                        diag p = fail(rule::s34, i, static_cast<int>(d), s);
                        p.block = b;
                        p.at[0] = detail::iteration_of(c, s);
                        p.d = o.rank;
                        info.problem = p;
                        return info;
                    }
                }
            }
            const bool starts = differs || core_start(s);
            ch[s] = starts ? 1 : 0;
            if (track_runs && starts) {
                const int core = (info.cores > 1 && s >= info.core_begin[1]) ? 1 : 0;
                if (!use_table) {
                    runs.push_back({b, i, core, s, s});
                } else {
                    index_t id = 0;
                    for (int d = 0; d < o.rank; ++d) id += b.v[d].start * id_stride[d];
                    const index_t w = writer[id];
                    if (w != 0 && !(o.revisit_any && (w - 1) % 2 == core)) {
                        const index_t first_step = (w - 1) / 2;
                        const int first_core = static_cast<int>((w - 1) % 2);
                        index_t last_step = first_step;
                        while (last_step + 1 < n_steps && ch[last_step + 1] == 0) ++last_step;
                        diag p = fail(first_core == core ? rule::s39 : rule::mc1, i);
                        p.block = b;
                        p.d = o.rank;
                        p.a = first_core;
                        p.b = last_step;
                        p.c = core;
                        p.at[0] = detail::iteration_of(c, first_step);
                        p.at[1] = detail::iteration_of(c, last_step);
                        p.at[2] = detail::iteration_of(c, s);
                        info.problem = p;
                        return info;
                    }
                    writer[id] = 2 * s + core + 1;
                }
            }
            prev = b;
        }
        // Check 18 after the index map's own checks (4, 5), in Pallas's order: BoundedSlice blocks
        // exist in emit_pipeline only.
        for (int d = 0; d < o.rank; ++d)
            if (o.block[static_cast<std::size_t>(d)].kind == dim_kind::bounded_slice) {
                info.problem = fail(rule::r18, i, d);
                return info;
            }
        if (!o.windowed()) {
            if (!all_zero) {
                info.problem = fail(rule::r14, i);
                return info;
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
            return info;
        }
        op.buffers = (op.trivial || op.constant) ? 1 : o.buffer_count;  // S47, S48
        op.block_bytes = o.block_elems() * itemsize(o.type);
        op.slot_bytes = detail::slot_bytes(o, c.hw.generation);
    }

    // S39 and MC1 for outputs whose block grid was too large for the table: a block written by
    // two runs. Same core: a non-consecutive revisit (the buffer was reused for other blocks in
    // between). Different cores: both cores write one block.
    for (auto& r : runs) {
        const std::uint8_t* ch = chg + r.op * n_steps;
        while (r.last + 1 < n_steps && ch[r.last + 1] == 0) ++r.last;
    }
    std::sort(runs.begin(), runs.end());
    for (std::size_t k = 1; k < runs.size(); ++k) {
        const auto& a = runs[k - 1];
        const auto& b = runs[k];
        if (a.op != b.op || a.block != b.block) continue;
        if (a.core == b.core && c.ops[static_cast<std::size_t>(a.op)].revisit_any) continue;
        diag p = fail(a.core == b.core ? rule::s39 : rule::mc1, a.op);
        p.block = a.block;
        p.d = c.ops[static_cast<std::size_t>(a.op)].rank;
        p.a = a.core;
        p.b = a.last;
        p.c = b.core;
        p.at[0] = detail::iteration_of(c, a.first);
        p.at[1] = detail::iteration_of(c, a.last);
        p.at[2] = detail::iteration_of(c, b.first);
        info.problem = p;
        return info;
    }

    // Budgets (check 24; SMEM1).
    {
        diag budget = fail(rule::r24);
        index_t vmem = 0;
        index_t smem = c.prefetch_bytes;
        for (int i = 0; i < n_ops; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const index_t bytes = info.ops[u].buffers * info.ops[u].slot_bytes;
            if (c.ops[u].space == space_kind::smem)
                smem += bytes;
            else
                vmem += bytes;
            budget.bytes[u] = info.ops[u].slot_bytes;
            budget.buffers[u] = info.ops[u].buffers;
        }
        index_t scratch_vmem = 0;
        for (int k = 0; k < c.n_scratch; ++k) {
            const scratch_desc& s = c.scratch[static_cast<std::size_t>(k)];
            const index_t bytes = s.elems() * itemsize(s.type);
            if (s.space == space_kind::vmem) scratch_vmem += bytes;
            if (s.space == space_kind::smem) smem += bytes;
        }
        vmem += scratch_vmem;
        info.vmem_bytes = vmem;
        info.smem_bytes = smem;
        budget.bytes[max_operands] = scratch_vmem;
        budget.bytes[max_operands + 1] = vmem;
        budget.a = vmem;
        budget.b = c.vmem_limit;
        if (vmem > c.vmem_limit) {
            info.problem = budget;
            return info;
        }
        if (smem > c.hw.smem_bytes) {
            budget.code = rule::smem1;
            budget.a = smem;
            budget.b = c.hw.smem_bytes;
            info.problem = budget;
            return info;
        }
    }

    // Pass 2: the schedule of each core (S21–S31, S40), event by event, from the change bits.
    std::size_t n_events = 0;
    auto put = [&](event_kind k, int core, int op, index_t slot, index_t step, index_t block_step) {
        if (k != event_kind::step && k != event_kind::body && k != event_kind::wait_in && k != event_kind::wait_out)
            ++info.ops[static_cast<std::size_t>(op)].dmas;
        emit(event{k, static_cast<std::uint8_t>(core), static_cast<std::uint8_t>(op),
                   static_cast<std::uint8_t>(slot), static_cast<std::uint32_t>(step),
                   static_cast<std::uint32_t>(block_step)});
        ++n_events;
    };
    // Roles, in spec order (refs are processed one phase at a time across all refs, S23).
    int pipe_in[max_operands]{}, pipe_out[max_operands]{};
    int bcs[max_operands]{};
    bool revisit_any[max_operands]{};
    int n_pin = 0, n_pout = 0;
    int depth = 2;  // S = max(2, max bc)
    for (int i = 0; i < n_ops; ++i) {
        const auto& p = info.ops[static_cast<std::size_t>(i)];
        bcs[i] = p.buffers;
        revisit_any[i] = c.ops[static_cast<std::size_t>(i)].revisit_any;
        depth = std::max(depth, p.buffers);
        if (!p.windowed || p.trivial) continue;
        if (i < c.n_in)
            pipe_in[n_pin++] = i;
        else
            pipe_out[n_pout++] = i;
    }
    for (int core = 0; core < info.cores; ++core) {
        const index_t begin = info.core_begin[static_cast<std::size_t>(core)];
        const index_t end = info.core_end[static_cast<std::size_t>(core)];
        const index_t n = end - begin;
        if (n <= 0) continue;  // S21: nothing at all when a core has no steps
        index_t cin[max_operands]{}, win[max_operands]{}, cout[max_operands]{}, wout[max_operands]{};
        // changed(i, g): the block of step g differs from step g-1's (or g starts the core).
        auto changed = [&](int i, index_t g) { return chg[i * n_steps + g] != 0; };

        // S22.2: trivially-windowed inputs are copied once before the prologue.
        for (int i = 0; i < c.n_in; ++i)
            if (info.ops[static_cast<std::size_t>(i)].trivial) put(event_kind::sync_in, core, i, 0, begin, begin);
        // S22.3 prologue, clamped to t < n (Q2 [M]).
        for (index_t t = 0; t + 1 < depth; ++t)
            for (int k = 0; k < n_pin; ++k) {
                const int i = pipe_in[k];
                const int u = i;
                const int bc = bcs[u];
                if (t + 1 >= bc || t >= n) continue;
                if (t == 0 || changed(i, begin + t)) {
                    put(event_kind::fetch, core, i, cin[u] % bc, begin, begin + t);
                    ++cin[u];
                }
            }
        for (index_t s = 0; s < n; ++s) {
            const index_t g = begin + s;
            const bool last = s == n - 1;
            put(event_kind::step, core, 0, 0, g, g);
            // S23.1 copy_in: bc >= 2 fetches step g+bc-1's block when it differs from g+bc-2's.
            for (int k = 0; k < n_pin; ++k) {
                const int i = pipe_in[k];
                const int u = i;
                const int bc = bcs[u];
                if (bc >= 2) {
                    if (s <= n - bc && changed(i, g + bc - 1)) {
                        put(event_kind::fetch, core, i, cin[u] % bc, g, g + bc - 1);
                        ++cin[u];
                    }
                } else if (s == 0 || changed(i, g)) {
                    put(event_kind::fetch, core, i, 0, g, g);
                    ++cin[u];
                }
            }
            // S23.2 wait_in.
            for (int k = 0; k < n_pin; ++k) {
                const int i = pipe_in[k];
                const int u = i;
                if (s == 0 || changed(i, g)) put(event_kind::wait_in, core, i, win[u] % bcs[u], g, g);
            }
            // S40 [M]: revisit_any outputs get their block's HBM contents back on every change.
            for (int k = 0; k < n_pout; ++k) {
                const int o = pipe_out[k];
                const int u = o;
                if (revisit_any[u] && (s == 0 || changed(o, g)))
                    put(event_kind::restore, core, o, cout[u] % bcs[u], g, g);
            }
            put(event_kind::body, core, 0, 0, g, g);
            // S23.4 copy_out at the last step of each output run.
            for (int k = 0; k < n_pout; ++k) {
                const int o = pipe_out[k];
                const int u = o;
                if (last || changed(o, g + 1)) {
                    const int bc = bcs[u];
                    put(bc == 1 ? event_kind::write_sync : event_kind::write, core, o, cout[u] % bc, g, g);
                    ++cout[u];
                }
            }
            // S23.5 wait_out: the write of the previous run, issued at step g-1.
            for (int k = 0; k < n_pout; ++k) {
                const int o = pipe_out[k];
                const int u = o;
                const int bc = bcs[u];
                if (bc > 1 && s > 0 && changed(o, g)) {
                    put(event_kind::wait_out, core, o, wout[u] % bc, g, g - 1);
                    ++wout[u];
                }
            }
            // S23.6 advance.
            for (int k = 0; k < n_pin; ++k) {
                const int i = pipe_in[k];
                if (last || changed(i, g + 1)) ++win[i];
            }
        }
        // S24 epilogue.
        for (int k = 0; k < n_pout; ++k) {
            const int o = pipe_out[k];
            const int u = o;
            const int bc = bcs[u];
            if (bc > 1) {
                put(event_kind::wait_out, core, o, wout[u] % bc, end - 1, end - 1);
                ++wout[u];
            }
        }
        for (int o = c.n_in; o < n_ops; ++o)
            if (info.ops[static_cast<std::size_t>(o)].trivial) put(event_kind::sync_out, core, o, 0, end - 1, end - 1);
    }
    info.events = n_events;
    return info;
}

/// A plan evaluated into a vector (run-time plans, and the first pass of static ones).
struct runtime_plan {
    plan_info info;
    std::vector<event> events;
};

constexpr runtime_plan plan_to_vector(const call_desc& c, const block_fn* maps, const void* ctx) {
    runtime_plan p;
    p.info = plan(c, maps, ctx, [&](const event& e) { p.events.push_back(e); });
    return p;
}

}  // namespace ptpu
