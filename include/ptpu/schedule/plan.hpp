// Defines the planner: the constexpr functions that turn a call_desc and its index maps into the
// exact Pallas TPU pipeline (pallas-semantics.md S21–S31, S34, S39–S48), as a stream of events
// per core. One planner, two evaluation times: static calls evaluate it at compile time into
// std::arrays; calls whose index maps read scalar-prefetch values evaluate it at run time.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
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
    bool windowed = false;    ///< has a VMEM/SMEM window (false for any/hbm/semaphore, S47)
    bool trivial = false;     ///< whole array, zero index map: one buffer, sync copies (S18, S47)
    bool constant = false;    ///< index map ignores every grid axis of size > 1 (S48)
    int buffers = 0;          ///< window slots allocated (0 when not windowed)
    index_t block_bytes = 0;  ///< bytes of one block (the window slot's data)
    index_t slot_bytes = 0;   ///< bytes one slot occupies in its memory, tile-padded (check 24)
    index_t dmas = 0;         ///< DMAs the pipeline issues for it (fetch, sync, restore, write)
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
    std::uint32_t revisit_any_mask = 0;  ///< bit i: operand i restores its block (S40)
};

namespace detail {

constexpr index_t cdiv(index_t a, index_t b) {
    return (a + b - 1) / b;
}
constexpr index_t align_up(index_t a, index_t b) {
    return cdiv(a, b) * b;
}

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

// Pass 1 of analyze() for one operand: visit(s, b) sees its block index b at every grid step s in
// order, checks it and records the change bits and output runs.
// (Hot loops use built-in arrays and raw pointers: g++ evaluates them several times faster than
// std::array / std::vector operator[] at compile time.)
struct operand_scan {
    const call_desc& c;
    const operand_desc& o;
    plan_info& info;
    std::uint8_t* ch;  // this operand's change bits
    std::vector<run>& runs;
    int i;
    index_t n_steps;
    bool track_runs;
    bool all_zero = true;
    bool constant = true;
    index_tuple<max_rank> first{};
    index_tuple<max_rank> prev{};
    // Revisit bookkeeping (S39, MC1): which run last wrote each block, in a table indexed by the
    // block's linear id when the block grid is small enough, else in a list sorted afterwards.
    index_t id_stride[max_rank]{};
    index_t n_ids = 1;
    bool use_table = false;
    std::vector<index_t> writer_store;
    index_t* writer = nullptr;  // 0: unwritten; else 2*first_step + core + 1
    bool windowed;
    // in_bounds(o, d, e) is 0 <= e.start < limit[d] when limit[d] >= 0 (no division per step).
    index_t limit[max_rank]{};

    constexpr operand_scan(const call_desc& call, int op, plan_info& pi, std::uint8_t* bits,
                           std::vector<run>& r)
        : c(call),
          o(call.ops[static_cast<std::size_t>(op)]),
          info(pi),
          ch(bits),
          runs(r),
          i(op),
          n_steps(call.steps()),
          track_runs(o.role == operand_role::output && o.windowed()),
          windowed(o.windowed()) {
        for (int d = 0; d < o.rank; ++d) {
            const block_dim& bd = o.block[static_cast<std::size_t>(d)];
            const index_t dim = o.shape[static_cast<std::size_t>(d)];
            limit[d] = bd.kind == dim_kind::blocked    ? cdiv(dim, bd.size)
                       : bd.kind == dim_kind::squeezed ? dim
                       : bd.kind == dim_kind::element  ? dim + bd.pad_lo + bd.pad_hi - bd.size + 1
                       : bd.kind == dim_kind::invalid  ? 0
                                                       : -1;  // bounded_slice: the slice's own size too
        }
        if (track_runs)
            for (int d = o.rank - 1; d >= 0; --d) {
                const block_dim& bd = o.block[static_cast<std::size_t>(d)];
                const index_t dim = o.shape[static_cast<std::size_t>(d)];
                const index_t n = bd.kind == dim_kind::blocked   ? cdiv(dim, bd.size)
                                  : bd.kind == dim_kind::element ? dim + bd.pad_lo + bd.pad_hi - bd.size + 1
                                                                 : dim;
                id_stride[d] = n_ids;
                n_ids = n_ids > (index_t{1} << 22) ? n_ids : n_ids * std::max<index_t>(n, 1);
            }
        use_table = track_runs && n_ids <= (index_t{1} << 22);
        writer_store.assign(use_table ? static_cast<std::size_t>(n_ids) : 0, 0);
        writer = writer_store.data();
    }

    [[nodiscard]] constexpr bool core_start(index_t s) const {
        return s == info.core_begin[0] || (info.cores > 1 && s == info.core_begin[1]);
    }
    // The block index as the planner keeps it: `rank` entries, the rest {0, -1} (eval_map).
    [[nodiscard]] constexpr index_tuple<max_rank> padded(const index_entry* b) const {
        index_tuple<max_rank> t{};
        for (int d = 0; d < o.rank; ++d) t.v[d] = b[d];
        return t;
    }
    [[nodiscard]] constexpr bool same(const index_entry* a, const index_entry* b) const {
        for (int d = 0; d < o.rank; ++d)
            if (!(a[d] == b[d])) return false;
        return true;
    }

    // Step s's block index, its first o.rank entries. False when a rule is broken (info.problem
    // says which).
    template <std::size_t R>
    [[gnu::always_inline]] constexpr bool visit(index_t s, const index_tuple<R>& t) {
        const index_entry* b = t.v;
        const bool differs = s == 0 || !same(b, prev.v);
        if (differs && constant && s > 0) constant = same(b, first.v);
        if (differs) {
            for (std::size_t d = 0; d < static_cast<std::size_t>(o.rank); ++d) {
                const bool want_slice = o.block[d].kind == dim_kind::bounded_slice;
                if (want_slice != b[d].is_slice()) {
                    info.problem = fail(want_slice ? rule::r4 : rule::r5, i, static_cast<int>(d));
                    return false;
                }
                all_zero = all_zero && b[d].start == 0;
                const index_t lim = limit[d];
                const bool inside = lim >= 0 ? b[d].start >= 0 && b[d].start < lim : in_bounds(o, d, b[d]);
                if (windowed && !inside) {
                    diag p = fail(rule::s34, i, static_cast<int>(d), s);
                    p.block = padded(b);
                    p.at[0] = iteration_of(c, s);
                    p.d = o.rank;
                    info.problem = p;
                    return false;
                }
            }
            // The whole tuple (R is the rank, or max_rank padded with {0, -1}), field by field: the
            // map has just stored it field by field, and wider loads would stall on store forwarding.
            for (std::size_t d = 0; d < R && d < max_rank; ++d) prev.v[d].start = b[d].start;
            for (std::size_t d = 0; d < R && d < max_rank; ++d) prev.v[d].size = b[d].size;
            if (s == 0) first = prev;
        }
        const bool starts = differs || core_start(s);
        ch[s] = starts ? 1 : 0;
        if (track_runs && starts && !record_run(s, prev)) return false;
        return true;
    }

    [[gnu::always_inline]] constexpr bool record_run(index_t s, const index_tuple<max_rank>& b) {
        const int core = (info.cores > 1 && s >= info.core_begin[1]) ? 1 : 0;
        if (!use_table) {
            runs.push_back({b, i, core, s, s});
            return true;
        }
        index_t id = 0;
        for (int d = 0; d < o.rank; ++d) id += b.v[d].start * id_stride[d];
        const index_t w = writer[id];
        if (w == 0) {
            writer[id] = 2 * s + core + 1;
            return true;
        }
        return revisit(s, b, id, w, core);
    }

    // A block written again (S39, MC1): fine only for a revisit_any output on the same core.
    constexpr bool revisit(index_t s, const index_tuple<max_rank>& b, index_t id, index_t w, int core) {
        if (!(o.revisit_any && (w - 1) % 2 == core)) {
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
            p.at[0] = iteration_of(c, first_step);
            p.at[1] = iteration_of(c, last_step);
            p.at[2] = iteration_of(c, s);
            info.problem = p;
            return false;
        }
        writer[id] = 2 * s + core + 1;
        return true;
    }
};

/// Walks the grid row-major, last axis fastest (S13), handing `scan` the block index `eval(point)`
/// of every step. One loop for both ways of evaluating a map: through a block_fn, and inlined
/// (scan_operand below).
template <class Eval>
constexpr bool scan_steps(const call_desc& c, operand_scan& scan, Eval&& eval) {
    index_t point[max_rank]{};
    index_t grid[max_rank]{};
    for (int d = 0; d < c.grid_rank; ++d) grid[d] = c.grid[static_cast<std::size_t>(d)];
    const index_t n_steps = c.steps();
    for (index_t s = 0; s < n_steps; ++s) {
        if (s > 0)
            for (int d = c.grid_rank - 1; d >= 0; --d) {
                if (++point[d] < grid[d]) break;
                point[d] = 0;
            }
        if (!scan.visit(s, eval(static_cast<const index_t*>(point)))) return false;
    }
    return true;
}

}  // namespace detail

namespace detail {
// An error an index map raised while reading scalar-prefetch refs (R2 for an index out of
// range), again with the operand and the grid iteration it was evaluated at.
[[noreturn, gnu::cold, gnu::noinline]] inline void rethrow_from_map(const error& e, const call_desc& c,
                                                                    int op, const index_t* p) {
    std::string at = "(";
    for (int d = 0; d < c.grid_rank; ++d) at += (d ? ", " : "") + std::to_string(p[d]);
    throw error(std::string(e.what()) + " (in the index map of " + (op < c.n_in ? "input " : "output ") +
                std::to_string(op < c.n_in ? op : op - c.n_in) + " at iteration " + at + "))");
}
}  // namespace detail

/// Pass 1 of analyze for one operand with its index map inlined (several times faster at run
/// time than calling it through a block_fn): `&scan_operand<Spec, G, Ctx>` for eval_map's
/// arguments.
using scan_fn = bool (*)(const call_desc&, const void* ctx, detail::operand_scan&);
template <class Spec, std::size_t G, class Ctx>
constexpr bool scan_operand(const call_desc& c, const void* ctx, detail::operand_scan& scan) {
    using Map = std::remove_cvref_t<decltype(Spec::index_map)>;
    if constexpr (std::is_same_v<Map, zero_map_t>) {
        return detail::scan_steps(c, scan, [](const index_t*) { return index_tuple<max_rank>{}; });
    } else if constexpr (detail::is_index_tuple<
                             std::remove_cvref_t<typename detail::map_call_t<Spec, G, Ctx>::result>>) {
        // The map's own index_tuple<rank>, not padded (its size is the rank: validate() ran first).
        return detail::scan_steps(c, scan, [ctx, &c, &scan](const index_t* p) {
            if constexpr (std::is_void_v<Ctx>) {
                return detail::map_call_t<Spec, G, Ctx>::call(Spec::index_map, p, ctx);
            } else {  // the map reads prefetch refs: say where a bad read happened (R2)
                try {
                    return detail::map_call_t<Spec, G, Ctx>::call(Spec::index_map, p, ctx);
                } catch (const error& e) {
                    detail::rethrow_from_map(e, c, scan.i, p);
                }
            }
        });
    } else {  // a malformed map: analyze() stops before pass 1
        return detail::scan_steps(c, scan,
                                  [ctx](const index_t* p) { return detail::eval_map<Spec, G, Ctx>(p, ctx); });
    }
}

/// The planner. Calls `emit(event)` for each event, in issue order, core after core, and returns
/// the plan's summary. `maps[i]` is operand i's index map (inputs then outputs); `ctx` is passed to
/// them (the scalar-prefetch refs, or nullptr).
/// Everything the schedule needs besides the event order: the checks' verdict, the per-operand
/// facts and the change bits (chg[op * steps + s] is 1 when operand op's block at step s differs
/// from step s-1's, or s starts a core's range). One index map evaluation per operand per step.
struct plan_tables {
    plan_info info;
    index_t steps = 0;
    int n_in = 0;
    int n_ops = 0;
    std::vector<std::uint8_t> chg;
};

/// `scans`, when given, replaces `maps` for pass 1 (scan_operand: the same walk, maps inlined).
constexpr plan_tables analyze(const call_desc& c, const block_fn* maps, const void* ctx,
                              const scan_fn* scans = nullptr) {
    plan_tables tables;
    plan_info& info = tables.info;
    using detail::fail;
    info.problem = validate(c);
    if (!info.problem.ok()) return tables;

    const index_t n_steps = c.steps();
    const int n_ops = c.n_ops();
    tables.steps = n_steps;
    tables.n_in = c.n_in;
    tables.n_ops = n_ops;

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
    // Pass 1: every index map evaluated once per step (detail::operand_scan). It checks entry
    // kinds (checks 4, 5), bounds (S34), zero maps (14, 17, S47) and maps that ignore the grid
    // (S48); records where each operand's block changes (a run starts; core starts count as
    // changes) and each output run for the revisit checks. The schedule below reads only these
    // change bits.
    tables.chg.assign(static_cast<std::size_t>(n_ops * n_steps), 0);
    std::uint8_t* const chg = tables.chg.data();
    std::vector<detail::run> runs;
    for (int i = 0; i < n_ops; ++i) {
        const operand_desc& o = c.ops[static_cast<std::size_t>(i)];
        operand_plan& op = info.ops[static_cast<std::size_t>(i)];
        detail::operand_scan scan(c, i, info, chg + i * n_steps, runs);
        const bool ok = scans != nullptr
                            ? scans[i](c, ctx, scan)
                            : detail::scan_steps(c, scan, [&](const index_t* p) { return maps[i](p, ctx); });
        if (!ok) {
            // MC1 with index maps reading scalar-prefetch values: those values may be the cause.
            if (ctx != nullptr && info.problem.code == rule::mc1) info.problem.code = rule::mc1_prefetch;
            return tables;
        }
        const bool all_zero = scan.all_zero;
        const bool constant = scan.constant;
        // Check 18 after the index map's own checks (4, 5), in Pallas's order: BoundedSlice blocks
        // exist in emit_pipeline only.
        for (int d = 0; d < o.rank; ++d)
            if (o.block[static_cast<std::size_t>(d)].kind == dim_kind::bounded_slice) {
                info.problem = fail(rule::r18, i, d);
                return tables;
            }
        if (!o.windowed()) {
            if (!all_zero) {
                info.problem = fail(rule::r14, i);
                return tables;
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
            return tables;
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
        diag p = fail(a.core == b.core ? rule::s39 : ctx != nullptr ? rule::mc1_prefetch : rule::mc1, a.op);
        p.block = a.block;
        p.d = c.ops[static_cast<std::size_t>(a.op)].rank;
        p.a = a.core;
        p.b = a.last;
        p.c = b.core;
        p.at[0] = detail::iteration_of(c, a.first);
        p.at[1] = detail::iteration_of(c, a.last);
        p.at[2] = detail::iteration_of(c, b.first);
        info.problem = p;
        return tables;
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
            const index_t bytes = s.elems() * itemsize(memref_dtype(s.type));  // bool: as int32
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
            return tables;
        }
        if (smem > c.hw.smem_bytes) {
            budget.code = rule::smem1;
            budget.a = smem;
            budget.b = c.hw.smem_bytes;
            info.problem = budget;
            return tables;
        }
    }

    info.revisit_any_mask = 0;
    for (int i = 0; i < n_ops; ++i)
        if (c.ops[static_cast<std::size_t>(i)].revisit_any) info.revisit_any_mask |= 1u << i;
    return tables;
}

/// Window slots per operand at most: pallas_call's BlockSpecs take 1 or 2 buffers (check 19).
inline constexpr int max_buffers = 2;

/// A bounded list of events: one step's (see core_schedule::next_step).
struct step_events {
    /// The most one call of next_step appends: the trivially-windowed inputs' sync copies and
    /// the prologue's fetches (at most max_buffers - 1 per input), the step's own events (its
    /// marker, its body, a fetch and a wait per input, a restore, a write and a wait per output),
    /// and the epilogue's wait and sync copy per output.
    static constexpr std::size_t capacity = max_operands * (max_buffers + 1) + max_operands * 5 + 2;
    event v[capacity]{};
    std::size_t n = 0;
    constexpr void push_back(const event& e) { v[n++] = e; }
    constexpr void clear() { n = 0; }
    [[nodiscard]] constexpr std::size_t size() const { return n; }
    constexpr const event& operator[](std::size_t i) const { return v[i]; }
};

/// The schedule of one core as a generator, one grid step at a time: next_step() appends the
/// events a core issues for its next step (S21–S31, S40), the first step's preceded by the
/// trivially-windowed inputs' sync copies and the prologue, the last followed by the epilogue;
/// next() hands them out one by one. plan() drains it at compile time; the executor pulls it
/// lazily, so a run never holds more than one step of events.
class core_schedule {
public:
    constexpr core_schedule(const plan_tables& t, int core) : n_in_(t.n_in), n_ops_(t.n_ops), core_(core) {
        const plan_info& info = t.info;
        begin_ = info.core_begin[static_cast<std::size_t>(core)];
        end_ = info.core_end[static_cast<std::size_t>(core)];
        n_ = end_ - begin_;
        for (int i = 0; i < t.n_ops; ++i) {
            const operand_plan& p = info.ops[static_cast<std::size_t>(i)];
            chg_[i] = t.chg.data() + i * t.steps;
            bc_[i] = p.buffers;
            trivial_[i] = p.trivial;
            revisit_any_[i] = (info.revisit_any_mask >> i) & 1u;
            depth_ = std::max(depth_, p.buffers);
            if (!p.windowed || p.trivial) continue;
            if (i < t.n_in)
                pin_[n_pin_++] = i;
            else
                pout_[n_pout_++] = i;
            win_chg_[n_win_++] = chg_[i];
        }
        done_ = n_ <= 0;  // S21: nothing at all without steps
    }

    /// How each counter of window slots moved in the last step next_step() or skip_step() made:
    /// fetches (cin), input window advances (win), writes (cout) and write waits (wout).
    struct step_delta {
        index_t cin[max_operands]{}, win[max_operands]{}, cout[max_operands]{}, wout[max_operands]{};
    };

    /// The shape of the next step: one bit per condition the schedule tests in it, so that two
    /// steps of equal shape issue the same events (kinds, operands, order), only their step
    /// numbers and slots differing. 0 (a shape no step has) for the first and last steps, whose
    /// prologue and epilogue no other step repeats, and once the pipeline has ended.
    [[nodiscard]] constexpr std::uint64_t shape() const {
        if (done_ || s_ == 0 || s_ == n_ - 1) return 0;
        // Away from the first and last steps, every condition make_step() tests is one of
        // changed(op, g) and changed(op, g + 1) of a windowed operand (with at most 2 buffers,
        // check 19, the fetch lookahead g + bc - 1 is g + 1 or g), combined with facts fixed for
        // the operand (its buffer count, revisit_any): those two bits per operand are the shape.
        static_assert(max_buffers == 2);
        const index_t g = begin_ + s_;
        std::uint64_t bits = 1;
        for (int k = 0; k < n_win_; ++k) {
            const std::uint8_t* ch = win_chg_[k] + g;
            bits = bits << 2 | std::uint64_t{ch[0]} << 1 | ch[1];
        }
        return bits;
    }
    /// The shape of the last step made (0 before the first).
    [[nodiscard]] constexpr std::uint64_t last_shape() const { return last_shape_; }
    [[nodiscard]] constexpr const step_delta& last_delta() const { return delta_; }
    /// The global grid step the next step runs (begin + steps made).
    [[nodiscard]] constexpr index_t next_global_step() const { return begin_ + s_; }
    /// The windowed operands, inputs then outputs (their count: n_windowed()).
    [[nodiscard]] constexpr int n_windowed() const { return n_pin_ + n_pout_; }
    [[nodiscard]] constexpr int windowed(int k) const { return k < n_pin_ ? pin_[k] : pout_[k - n_pin_]; }

    /// Makes the next step without listing its events, when its shape equals the last step's
    /// (shape() == last_shape() != 0): its counters move as the last step's did.
    constexpr void skip_step() {
        for (int i = 0; i < n_ops_; ++i) {
            cin_[i] += delta_.cin[i];
            win_[i] += delta_.win[i];
            cout_[i] += delta_.cout[i];
            wout_[i] += delta_.wout[i];
        }
        ++s_;
    }

    /// Appends the events of the core's next grid step to `out` (anything with push_back(event));
    /// false, appending nothing, once the pipeline has ended.
    template <class Out>
    constexpr bool next_step(Out& out) {
        if (done_) return false;
        // The shape and counter moves serve the executor's repeated steps (run time only; a
        // static plan's compile time does without them).
        if (std::is_constant_evaluated()) {
            make_step(out);
            return true;
        }
        last_shape_ = shape();
        step_delta before{};
        for (int i = 0; i < n_ops_; ++i) {
            before.cin[i] = cin_[i];
            before.win[i] = win_[i];
            before.cout[i] = cout_[i];
            before.wout[i] = wout_[i];
        }
        make_step(out);
        for (int i = 0; i < n_ops_; ++i) {
            delta_.cin[i] = cin_[i] - before.cin[i];
            delta_.win[i] = win_[i] - before.win[i];
            delta_.cout[i] = cout_[i] - before.cout[i];
            delta_.wout[i] = wout_[i] - before.wout[i];
        }
        return true;
    }

private:
    [[nodiscard]] constexpr bool changed(int op, index_t g) const { return chg_[op][g] != 0; }
    template <class Out>
    constexpr void put(Out& out, event_kind k, int op, index_t slot, index_t step, index_t block_step) const {
        out.push_back(event{k, static_cast<std::uint8_t>(core_), static_cast<std::uint8_t>(op),
                            static_cast<std::uint8_t>(slot), static_cast<std::uint32_t>(step),
                            static_cast<std::uint32_t>(block_step)});
    }

    template <class Out>
    constexpr void make_step(Out& out) {
        if (s_ == 0) {
            for (int i = 0; i < n_in_; ++i)  // S22.2: trivially-windowed inputs, once, before the prologue
                if (trivial_[i]) put(out, event_kind::sync_in, i, 0, begin_, begin_);
            for (index_t t = 0; t + 1 < depth_; ++t)  // S22.3, clamped to t < n (Q2 [M])
                for (int k = 0; k < n_pin_; ++k) {
                    const int i = pin_[k];
                    const int bc = bc_[i];
                    if (t + 1 >= bc || t >= n_) continue;
                    if (t == 0 || changed(i, begin_ + t))
                        put(out, event_kind::fetch, i, cin_[i]++ % bc, begin_, begin_ + t);
                }
        }
        const index_t s = s_;
        const index_t g = begin_ + s;
        const bool last = s == n_ - 1;
        put(out, event_kind::step, 0, 0, g, g);
        for (int k = 0; k < n_pin_; ++k) {  // S23.1: bc >= 2 fetches step g+bc-1's block when it changes
            const int i = pin_[k];
            const int bc = bc_[i];
            if (bc >= 2) {
                if (s <= n_ - bc && changed(i, g + bc - 1))
                    put(out, event_kind::fetch, i, cin_[i]++ % bc, g, g + bc - 1);
            } else if (s == 0 || changed(i, g)) {
                ++cin_[i];
                put(out, event_kind::fetch, i, 0, g, g);
            }
        }
        for (int k = 0; k < n_pin_; ++k) {  // S23.2
            const int i = pin_[k];
            if (s == 0 || changed(i, g)) put(out, event_kind::wait_in, i, win_[i] % bc_[i], g, g);
        }
        for (int k = 0; k < n_pout_; ++k) {  // S40 [M]: revisit_any outputs get their block back on a change
            const int o = pout_[k];
            if (revisit_any_[o] && (s == 0 || changed(o, g)))
                put(out, event_kind::restore, o, cout_[o] % bc_[o], g, g);
        }
        put(out, event_kind::body, 0, 0, g, g);
        for (int k = 0; k < n_pout_; ++k) {  // S23.4: at the last step of each output run
            const int o = pout_[k];
            if (last || changed(o, g + 1)) {
                const int bc = bc_[o];
                put(out, bc == 1 ? event_kind::write_sync : event_kind::write, o, cout_[o]++ % bc, g, g);
            }
        }
        for (int k = 0; k < n_pout_; ++k) {  // S23.5: the previous run's write, issued at step g-1
            const int o = pout_[k];
            const int bc = bc_[o];
            if (bc > 1 && s > 0 && changed(o, g))
                put(out, event_kind::wait_out, o, wout_[o]++ % bc, g, g - 1);
        }
        for (int k = 0; k < n_pin_;
             ++k) {  // S23.6 advance: an input's window moves on when the next step changes it
            const int i = pin_[k];
            if (last || changed(i, g + 1)) ++win_[i];
        }
        ++s_;
        if (last) {
            for (int k = 0; k < n_pout_; ++k) {  // S24
                const int o = pout_[k];
                const int bc = bc_[o];
                if (bc > 1) put(out, event_kind::wait_out, o, wout_[o]++ % bc, end_ - 1, end_ - 1);
            }
            for (int o = n_in_; o < n_ops_; ++o)
                if (trivial_[o]) put(out, event_kind::sync_out, o, 0, end_ - 1, end_ - 1);
            done_ = true;
        }
    }

public:
    /// The next event, in issue order; false once the pipeline has ended.
    constexpr bool next(event& e) {
        if (pos_ == buf_.size()) {
            buf_.clear();
            pos_ = 0;
            if (!next_step(buf_)) return false;
        }
        e = buf_[pos_++];
        return true;
    }

private:
    int n_in_ = 0, n_ops_ = 0;
    int core_;
    index_t begin_ = 0, end_ = 0, n_ = 0;
    int depth_ = 2;  // S = max(2, max bc)
    int n_pin_ = 0, n_pout_ = 0;
    int pin_[max_operands]{}, pout_[max_operands]{};
    const std::uint8_t* chg_[max_operands]{};      // each operand's change bits
    const std::uint8_t* win_chg_[max_operands]{};  // those of the windowed operands (shape())
    int n_win_ = 0;
    int bc_[max_operands]{};
    bool trivial_[max_operands]{};
    bool revisit_any_[max_operands]{};
    index_t cin_[max_operands]{}, win_[max_operands]{}, cout_[max_operands]{}, wout_[max_operands]{};
    index_t s_ = 0;
    bool done_ = true;
    step_events buf_{};  // next()'s current step
    std::size_t pos_ = 0;
    std::uint64_t last_shape_ = 0;
    step_delta delta_{};
};

/// Whether an event moves data (a DMA of the pipeline).
constexpr bool is_dma(event_kind k) {
    return k == event_kind::fetch || k == event_kind::sync_in || k == event_kind::restore ||
           k == event_kind::write || k == event_kind::write_sync || k == event_kind::sync_out;
}

/// The planner. Calls `emit(event)` for each event, in issue order, core after core, and returns
/// the plan's summary. `maps[i]` is operand i's index map (inputs then outputs); `ctx` is passed to
/// them (the scalar-prefetch refs, or nullptr).
template <class Emit>
constexpr plan_info plan(const call_desc& c, const block_fn* maps, const void* ctx, Emit&& emit) {
    plan_tables t = analyze(c, maps, ctx);
    if (!t.info.problem.ok()) return t.info;
    std::size_t n_events = 0;
    for (int core = 0; core < t.info.cores; ++core) {
        core_schedule cs(t, core);
        step_events step;
        while (cs.next_step(step)) {
            for (std::size_t k = 0; k < step.size(); ++k) {
                const event& e = step[k];
                if (is_dma(e.kind)) ++t.info.ops[e.op].dmas;
                emit(e);
                ++n_events;
            }
            step.clear();
        }
    }
    t.info.events = n_events;
    return t.info;
}

}  // namespace ptpu
