// Defines the executor: it walks a call's schedule core by core (core_schedule), moves real bytes
// for every DMA, runs the kernel body on its windows, and hands the timing model (sim/) the ops
// of each core stream as they happen: it IS the op source simulate() pulls from. It knows nothing
// of time except the ops it emits (architecture.md: one-way arrows).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/dma.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/sim/engine.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// What the executor did, counted as it ran (tests compare it with the plan).
struct run_stats {
    index_t steps = 0;                    ///< bodies run, all cores
    std::array<index_t, 2> core_steps{};  ///< bodies run per core
    index_t dma_in = 0;                   ///< HBM → window copies (fetch, sync_in, restore)
    index_t dma_out = 0;                  ///< window → HBM copies (write, write_sync, sync_out)
    index_t bytes_in = 0;
    index_t bytes_out = 0;
    std::array<index_t, max_operands> op_dmas{};  ///< per operand (inputs then outputs)
    std::array<index_t, max_operands> op_bytes{};
    index_t body_dmas = 0;  ///< DMAs issued by bodies (sync_copy)
    index_t body_dma_bytes = 0;
    work total_work{};  ///< everything the bodies charged
};

/// What a timeline label points to: the pipeline DMA (or body DMA) behind a sim op.
struct dma_note {
    event_kind kind = event_kind::fetch;  ///< body DMAs use event_kind::body
    std::uint8_t core = 0;
    std::uint8_t op = 0;
    std::uint8_t slot = 0;
    std::uint32_t block_step = 0;
    coords block{};  ///< the block index moved (pipeline DMAs)
};

/// One core's memories (S6): its windows (slots), scratch and SMEM copy of the prefetch operands.
struct core_memory {
    std::byte* arena = nullptr;
    std::array<std::array<std::byte*, 2>, max_operands> slots{};
    std::array<std::byte*, max_scratch> scratch{};
    std::array<std::byte*, max_operands> prefetch{};
    std::array<int, max_operands> cur{};  ///< the slot the body sees (S20)
};

namespace detail {
/// Borrows the thread's cached per-core arenas for one call (or private ones when a call is
/// already running on this thread).
class arena_lease {
public:
    arena_lease() : owner_(!busy()) {
        if (owner_) busy() = true;
    }
    ~arena_lease() {
        if (owner_) busy() = false;
    }
    arena_lease(const arena_lease&) = delete;
    arena_lease& operator=(const arena_lease&) = delete;

    std::byte* get(int core, std::size_t bytes) {
        std::vector<std::byte>& v =
            owner_ ? cache()[static_cast<std::size_t>(core)] : own_[static_cast<std::size_t>(core)];
        if (v.size() < bytes) v.resize(bytes);
        return v.data();
    }

private:
    static bool& busy() {
        thread_local bool b = false;
        return b;
    }
    static std::array<std::vector<std::byte>, 2>& cache() {
        thread_local std::array<std::vector<std::byte>, 2> c;
        return c;
    }
    bool owner_;
    std::array<std::vector<std::byte>, 2> own_;
};

}  // namespace detail

struct executor_options {
    bool timing_only = false;  ///< skip vector data movement and floating-point work
    bool notes = false;        ///< keep a dma_note per DMA for the timeline (labels index it)
    /// How long a body's work takes: the timing model's conversion, handed in by the caller so
    /// that the executor itself knows nothing of time (architecture.md).
    double (*seconds_of)(const work&, const void* ctx) = nullptr;
    const void* seconds_ctx = nullptr;
};

/// The executor of one call. `Invoke` is a callable `void(core_memory&)` that runs the body on
/// the current windows of that core.
template <class Invoke>
class executor {
public:
    executor(const call_desc& desc, const plan_tables& tables, const block_fn* maps, const void* ctx,
             const std::array<void*, max_operands>& hbm, std::array<core_memory, 2>& mem,
             kernel_context& kctx, Invoke invoke, const executor_options& opt)
        : desc_(desc),
          tables_(tables),
          maps_(maps),
          ctx_(ctx),
          hbm_(hbm),
          mem_(mem),
          kctx_(kctx),
          invoke_(invoke),
          opt_(opt),
          sched_{core_schedule(tables, 0), core_schedule(tables, tables.info.cores > 1 ? 1 : 0)} {
        if (tables.info.cores < 2) sched_[1] = core_schedule(tables, 0), done1_ = true;
        for (int i = 0; i < desc.n_ops(); ++i) {
            const auto u = static_cast<std::size_t>(i);
            // Timing-only runs still move SMEM windows: scalar code reads them.
            move_[u] = !opt.timing_only || desc.ops[u].space == space_kind::smem;
            // Every block of an operand whose blocks tile its array exactly moves the same bytes,
            // so a timing-only run need not evaluate its index map again.
            const operand_desc& o = desc.ops[u];
            bool uniform = true;
            for (int d = 0; d < o.rank; ++d) {
                const block_dim& b = o.block[static_cast<std::size_t>(d)];
                uniform = uniform && b.kind != dim_kind::element && b.kind != dim_kind::bounded_slice &&
                          o.shape[static_cast<std::size_t>(d)] % b.size == 0;
            }
            uniform_bytes_[u] = uniform ? o.block_elems() * itemsize(o.type) : -1;
        }
    }

    /// sim::op_source: the next op of `core`'s stream, running what the schedule says on the way.
    bool next(int core, sim::op& out) {
        auto& q = queue_[static_cast<std::size_t>(core)];
        auto& head = head_[static_cast<std::size_t>(core)];
        if (head < q.size()) {
            out = q[head++];
            if (head == q.size()) q.clear(), head = 0;
            return true;
        }
        if (core == 1 && done1_) return false;
        event e;
        while (sched_[static_cast<std::size_t>(core)].next(e))
            if (handle(e, out)) return true;
        return false;
    }

    [[nodiscard]] const run_stats& stats() const { return stats_; }
    [[nodiscard]] const std::vector<dma_note>& notes() const { return notes_; }

private:
    index_tuple<max_rank> block_of(int op, index_t step) const {
        const auto p = detail::grid_point(desc_, step);
        return maps_[op](p.data(), ctx_);
    }
    // Labels index notes_ (0 when notes are off). A DMA's wait carries its start's label, so
    // the timeline can name both.
    std::uint32_t note(const event& e, event_kind k) {
        if (!opt_.notes) return 0;
        dma_note n{k, e.core, e.op, e.slot, e.block_step, {}};
        if (k != event_kind::body) {
            const auto b = block_of(e.op, e.block_step);
            n.block.rank = desc_.ops[e.op].rank;
            for (int d = 0; d < n.block.rank; ++d) n.block.v[d] = b.v[d].start;
        }
        notes_.push_back(n);
        return static_cast<std::uint32_t>(notes_.size() - 1);
    }
    std::uint32_t label_of(int core, std::uint32_t id) const {
        const auto& v = labels_[static_cast<std::size_t>(core)];
        return id < v.size() ? v[id] : 0;
    }
    sim::op dma_start(const event& e, index_t bytes, std::uint32_t& id_out) {
        const std::uint32_t id = next_id_[e.core]++;
        id_out = id;
        sim::op o;
        o.kind = sim::op_kind::dma_start;
        o.dma = id;
        o.bytes = bytes;
        o.far = true;
        o.label = note(e, e.kind);
        o.step = e.step;
        if (opt_.notes) labels_[e.core].push_back(o.label);
        return o;
    }
    sim::op wait(int core, std::uint32_t id, std::uint32_t step) const {
        sim::op o;
        o.kind = sim::op_kind::dma_wait;
        o.dma = id;
        o.step = step;
        o.label = label_of(core, id);
        return o;
    }
    void count(const event& e, index_t bytes, bool in) {
        const auto op = static_cast<std::size_t>(e.op);
        (in ? stats_.dma_in : stats_.dma_out) += 1;
        (in ? stats_.bytes_in : stats_.bytes_out) += bytes;
        ++stats_.op_dmas[op];
        stats_.op_bytes[op] += bytes;
    }
    // Moves the block of a DMA event (HBM → slot when `in`, else slot → HBM) and returns its
    // bytes; a timing-only run only computes them (from the block's bounds, or the operand's
    // uniform block size without evaluating the index map).
    index_t move(const event& e, bool in) {
        const auto op = static_cast<std::size_t>(e.op);
        index_t bytes = uniform_bytes_[op];
        if (move_[op] || bytes < 0) {
            const auto b = block_of(e.op, e.block_step);
            const operand_desc& o = desc_.ops[op];
            std::byte* slot = mem_[e.core].slots[op][e.slot];
            bytes = !move_[op] ? region_of(o, b).elems() * itemsize(o.type)
                    : in       ? copy_block_in(hbm_[op], slot, o, b)
                               : copy_block_out(hbm_[op], slot, o, b);
        }
        count(e, bytes, in);
        return bytes;
    }

    // One schedule event: does its work and, when it has a cost, produces the op(s) (the first in
    // `out`, any others queued). Returns false for events without an op of their own.
    bool handle(const event& e, sim::op& out) {
        const auto op = static_cast<std::size_t>(e.op);
        auto& q = queue_[e.core];
        std::uint32_t id = 0;
        switch (e.kind) {
            case event_kind::step:
                // The context is set when the body runs: the model interleaves the two cores' pulls.
                out = sim::op{sim::op_kind::overhead, 0, desc_.hw.step_overhead_s, 0, true, 0, e.step};
                return true;
            case event_kind::fetch:
                out = dma_start(e, move(e, true), id);
                in_flight_in_[e.core][op][e.slot] = id;
                return true;
            case event_kind::sync_in:
            case event_kind::restore:
                out = dma_start(e, move(e, true), id);
                q.push_back(wait(e.core, id, e.step));
                return true;
            case event_kind::wait_in:
                mem_[e.core].cur[op] = e.slot;
                out = wait(e.core, in_flight_in_[e.core][op][e.slot], e.step);
                return true;
            case event_kind::body:
                return run_body(e, out);
            case event_kind::write:
            case event_kind::write_sync:
            case event_kind::sync_out: {
                out = dma_start(e, move(e, false), id);
                if (e.kind == event_kind::write)
                    in_flight_out_[e.core][op][e.slot] = id;
                else
                    q.push_back(wait(e.core, id, e.step));  // S29: a blocking copy
                // S20: the body's output window is slot(copy_out); copy_out advances it.
                if (e.kind != event_kind::sync_out)
                    mem_[e.core].cur[op] = (e.slot + 1) % std::max(1, tables_.info.ops[op].buffers);
                return true;
            }
            case event_kind::wait_out:
                out = wait(e.core, in_flight_out_[e.core][op][e.slot], e.step);
                return true;
        }
        return false;
    }

    bool run_body(const event& e, sim::op& out) {
        ++stats_.steps;
        ++stats_.core_steps[e.core];
        kctx_.core = e.core;
        kctx_.step = e.step;
        kctx_.point = detail::grid_point(desc_, e.step);
        kctx_.body_work = work{};
        kctx_.body_dma_log.clear();
        invoke_(mem_[e.core]);
        // The body's ops: compute up to each of its own DMAs, the DMA (start + wait), the rest.
        auto& q = queue_[e.core];
        auto compute = [&](const work& w) {
            stats_.total_work += w;
            // Bodies usually charge the same work every step: reuse the last conversion.
            if (!(w == last_work_)) {
                last_work_ = w;
                last_seconds_ = opt_.seconds_of ? opt_.seconds_of(w, opt_.seconds_ctx) : 0.0;
            }
            return sim::op{sim::op_kind::compute, 0, last_seconds_, 0, true, 0, e.step};
        };
        bool first = true;
        auto emit = [&](const sim::op& o) {
            if (first)
                out = o, first = false;
            else
                q.push_back(o);
        };
        for (const body_dma_record& r : kctx_.body_dma_log) {
            emit(compute(r.before));
            const std::uint32_t id = next_id_[e.core]++;
            sim::op s{sim::op_kind::dma_start, id, 0, r.bytes, r.far, note(e, event_kind::body), e.step};
            if (opt_.notes) labels_[e.core].push_back(s.label);
            emit(s);
            emit(wait(e.core, id, e.step));
        }
        emit(compute(kctx_.body_work));
        return true;
    }

    const call_desc& desc_;
    const plan_tables& tables_;
    const block_fn* maps_;
    const void* ctx_;
    std::array<void*, max_operands> hbm_;
    std::array<core_memory, 2>& mem_;
    kernel_context& kctx_;
    Invoke invoke_;
    executor_options opt_;
    std::array<core_schedule, 2> sched_;
    bool done1_ = false;
    std::array<bool, max_operands> move_{};
    std::array<index_t, max_operands> uniform_bytes_{};
    work last_work_{};
    double last_seconds_ = 0;
    std::array<std::vector<sim::op>, 2> queue_{};
    std::array<std::size_t, 2> head_{};
    std::array<std::uint32_t, 2> next_id_{};
    std::uint32_t in_flight_in_[2][max_operands][2]{};
    std::uint32_t in_flight_out_[2][max_operands][2]{};
    run_stats stats_{};
    std::vector<dma_note> notes_;
    std::array<std::vector<std::uint32_t>, 2> labels_{};  ///< per core: DMA id → label (notes on)
};

}  // namespace ptpu
