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
/// SMEM is never padded (pallas-semantics.md §3).
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
    return elems * itemsize(o.type);
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

}  // namespace detail

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

constexpr plan_tables analyze(const call_desc& c, const block_fn* maps, const void* ctx) {
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
    auto core_start = [&](index_t s) {
        return s == info.core_begin[0] || (info.cores > 1 && s == info.core_begin[1]);
    };

    // Pass 1: every index map evaluated once per step. It checks entry kinds (checks 4, 5),
    // bounds (S34), zero maps (14, 17, S47) and maps that ignore the grid (S48); records where
    // each operand's block changes (a run starts; core starts count as changes) and each output
    // run for the revisit checks. The schedule below reads only these change bits.
    // (Hot loops use built-in arrays and raw pointers: g++ evaluates them several times faster
    // than std::array / std::vector operator[] at compile time.)
    tables.chg.assign(static_cast<std::size_t>(n_ops * n_steps), 0);
    std::uint8_t* const chg = tables.chg.data();
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
                const index_t n = bd.kind == dim_kind::blocked   ? detail::cdiv(dim, bd.size)
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
                        return tables;
                    }
                    all_zero = all_zero && b[d].start == 0;
                    if (o.windowed() && !detail::in_bounds(o, d, b[d])) {
                        diag p = fail(rule::s34, i, static_cast<int>(d), s);
                        p.block = b;
                        p.at[0] = detail::iteration_of(c, s);
                        p.d = o.rank;
                        info.problem = p;
                        return tables;
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
                        return tables;
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

/// The schedule of one core as a resumable generator: each next() yields the following event
/// (S21–S31, S40) until the core's pipeline ends. plan() drains it at compile time; the executor
/// pulls it lazily, so a run never holds more than one step of events.
class core_schedule {
public:
    constexpr core_schedule(const plan_tables& t, int core) : t_(&t), core_(core) {
        const plan_info& info = t.info;
        begin_ = info.core_begin[static_cast<std::size_t>(core)];
        end_ = info.core_end[static_cast<std::size_t>(core)];
        n_ = end_ - begin_;
        for (int i = 0; i < t.n_ops; ++i) {
            const operand_plan& p = info.ops[static_cast<std::size_t>(i)];
            bc_[i] = p.buffers;
            trivial_[i] = p.trivial;
            revisit_any_[i] = (info.revisit_any_mask >> i) & 1u;
            depth_ = std::max(depth_, p.buffers);
            if (!p.windowed || p.trivial) continue;
            if (i < t.n_in)
                pin_[n_pin_++] = i;
            else
                pout_[n_pout_++] = i;
        }
        phase_ = n_ > 0 ? phase::pre : phase::done;  // S21: nothing at all without steps
    }

    constexpr bool next(event& e) {
        for (;;) {
            switch (phase_) {
                case phase::pre:  // S22.2: trivially-windowed inputs, once, before the prologue
                    while (k_ < t_->n_in) {
                        const int i = k_++;
                        if (trivial_[i]) return put(e, event_kind::sync_in, i, 0, begin_, begin_);
                    }
                    to(phase::prologue);
                    t_depth_ = 0;
                    continue;
                case phase::prologue:  // S22.3, clamped to t < n (Q2 [M])
                    while (t_depth_ + 1 < depth_) {
                        while (k_ < n_pin_) {
                            const int i = pin_[k_++];
                            const int bc = bc_[i];
                            if (t_depth_ + 1 >= bc || t_depth_ >= n_) continue;
                            if (t_depth_ == 0 || changed(i, begin_ + t_depth_))
                                return put(e, event_kind::fetch, i, cin_[i]++ % bc, begin_,
                                           begin_ + t_depth_);
                        }
                        k_ = 0;
                        ++t_depth_;
                    }
                    s_ = 0;
                    to(phase::step);
                    continue;
                case phase::step:
                    if (s_ == n_) {
                        to(phase::epilogue_wait);
                        continue;
                    }
                    g_ = begin_ + s_;
                    to(phase::copy_in);
                    return put(e, event_kind::step, 0, 0, g_, g_);
                case phase::copy_in:  // S23.1: bc >= 2 fetches step g+bc-1's block when it changes
                    while (k_ < n_pin_) {
                        const int i = pin_[k_++];
                        const int bc = bc_[i];
                        if (bc >= 2) {
                            if (s_ <= n_ - bc && changed(i, g_ + bc - 1))
                                return put(e, event_kind::fetch, i, cin_[i]++ % bc, g_, g_ + bc - 1);
                        } else if (s_ == 0 || changed(i, g_)) {
                            ++cin_[i];
                            return put(e, event_kind::fetch, i, 0, g_, g_);
                        }
                    }
                    to(phase::wait_in);
                    continue;
                case phase::wait_in:  // S23.2
                    while (k_ < n_pin_) {
                        const int i = pin_[k_++];
                        if (s_ == 0 || changed(i, g_))
                            return put(e, event_kind::wait_in, i, win_[i] % bc_[i], g_, g_);
                    }
                    to(phase::restore);
                    continue;
                case phase::restore:  // S40 [M]: revisit_any outputs get their block back on a change
                    while (k_ < n_pout_) {
                        const int o = pout_[k_++];
                        if (revisit_any_[o] && (s_ == 0 || changed(o, g_)))
                            return put(e, event_kind::restore, o, cout_[o] % bc_[o], g_, g_);
                    }
                    to(phase::body);
                    continue;
                case phase::body:
                    to(phase::copy_out);
                    return put(e, event_kind::body, 0, 0, g_, g_);
                case phase::copy_out:  // S23.4: at the last step of each output run
                    while (k_ < n_pout_) {
                        const int o = pout_[k_++];
                        if (s_ == n_ - 1 || changed(o, g_ + 1)) {
                            const int bc = bc_[o];
                            return put(e, bc == 1 ? event_kind::write_sync : event_kind::write, o,
                                       cout_[o]++ % bc, g_, g_);
                        }
                    }
                    to(phase::wait_out);
                    continue;
                case phase::wait_out:  // S23.5: the previous run's write, issued at step g-1
                    while (k_ < n_pout_) {
                        const int o = pout_[k_++];
                        const int bc = bc_[o];
                        if (bc > 1 && s_ > 0 && changed(o, g_))
                            return put(e, event_kind::wait_out, o, wout_[o]++ % bc, g_, g_ - 1);
                    }
                    // S23.6 advance: an input's window moves on when the next step changes it.
                    for (int k = 0; k < n_pin_; ++k) {
                        const int i = pin_[k];
                        if (s_ == n_ - 1 || changed(i, g_ + 1)) ++win_[i];
                    }
                    ++s_;
                    to(phase::step);
                    continue;
                case phase::epilogue_wait:  // S24
                    while (k_ < n_pout_) {
                        const int o = pout_[k_++];
                        const int bc = bc_[o];
                        if (bc > 1)
                            return put(e, event_kind::wait_out, o, wout_[o]++ % bc, end_ - 1, end_ - 1);
                    }
                    to(phase::epilogue_sync);
                    k_ = t_->n_in;
                    continue;
                case phase::epilogue_sync:
                    while (k_ < t_->n_ops) {
                        const int o = k_++;
                        if (trivial_[o]) return put(e, event_kind::sync_out, o, 0, end_ - 1, end_ - 1);
                    }
                    to(phase::done);
                    continue;
                case phase::done:
                    return false;
            }
        }
    }

private:
    enum class phase : std::uint8_t {
        pre,
        prologue,
        step,
        copy_in,
        wait_in,
        restore,
        body,
        copy_out,
        wait_out,
        epilogue_wait,
        epilogue_sync,
        done
    };
    constexpr void to(phase p) {
        phase_ = p;
        k_ = 0;
    }
    [[nodiscard]] constexpr bool changed(int op, index_t g) const {
        return t_->chg[static_cast<std::size_t>(op * t_->steps + g)] != 0;
    }
    constexpr bool put(event& e, event_kind k, int op, index_t slot, index_t step, index_t block_step) const {
        e = event{k,
                  static_cast<std::uint8_t>(core_),
                  static_cast<std::uint8_t>(op),
                  static_cast<std::uint8_t>(slot),
                  static_cast<std::uint32_t>(step),
                  static_cast<std::uint32_t>(block_step)};
        return true;
    }

    const plan_tables* t_;
    int core_;
    index_t begin_ = 0, end_ = 0, n_ = 0;
    int depth_ = 2;  // S = max(2, max bc)
    int n_pin_ = 0, n_pout_ = 0;
    int pin_[max_operands]{}, pout_[max_operands]{};
    int bc_[max_operands]{};
    bool trivial_[max_operands]{};
    bool revisit_any_[max_operands]{};
    index_t cin_[max_operands]{}, win_[max_operands]{}, cout_[max_operands]{}, wout_[max_operands]{};
    phase phase_ = phase::done;
    int k_ = 0;
    index_t t_depth_ = 0;
    index_t s_ = 0;
    index_t g_ = 0;
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
        event e;
        while (cs.next(e)) {
            if (is_dma(e.kind)) ++t.info.ops[e.op].dmas;
            emit(e);
            ++n_events;
        }
    }
    t.info.events = n_events;
    return t.info;
}

}  // namespace ptpu
