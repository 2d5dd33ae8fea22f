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
#include <span>
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
        repeat_on_ = opt.timing_only && !opt.notes;
        for (int i = 0; i < desc.n_ops(); ++i)
            repeat_on_ = repeat_on_ && !move_[static_cast<std::size_t>(i)] &&
                         uniform_bytes_[static_cast<std::size_t>(i)] >= 0;
    }

    /// sim::batch_source: the ops of `core`'s next grid step (running what the schedule says on
    /// the way: DMAs, the body); no ops once its stream has ended. With `lazy`, a step that
    /// repeats the last one (see "Repeated steps" below) is made without rewriting its ops: the
    /// batch says so and its ops are those of an earlier step.
    sim::batch next_batch(int core, bool lazy = false) {
        const auto c = static_cast<std::size_t>(core);
        out_ = &batch_[c];
        meta_out_ = &meta_[c];
        if (core == 1 && done1_) return {};
        const int same = repeat(core);
        if (same == 1 && lazy) {
            ++stale_[c];
            return {{out_->data(), n_batch_[c]}, true, true};
        }
        if (same >= 0) {
            patch(core, stale_[c] + 1);
            stale_[c] = 0;
            if (same == 1) return {{out_->data(), n_batch_[c]}, true, true};
            finish_body(core);
            return {{out_->data(), n_batch_[c]}, false, true};
        }
        if (stale_[c] > 0) {  // the DMA tables must know the steps made without their ops
            patch(core, stale_[c]);
            stale_[c] = 0;
        }
        n_out_ = 0;
        events_.clear();
        flush(core);
        const run_stats before = stats_;
        if (!sched_[c].next_step(events_)) return {};
        for (std::size_t k = 0; k < events_.size(); ++k) handle(events_[k]);
        n_batch_[c] = n_out_;
        remember(core, before);
        return {{out_->data(), n_out_}, false, true};
    }

    [[nodiscard]] run_stats stats() const {
        flush(0);
        flush(1);
        run_stats s = stats_;
        s.total_work += times(last_work_, last_work_n_);
        return s;
    }
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
    // ---- Repeated steps ------------------------------------------------------------------------
    // A timing-only run that moves no data spends most of its time making the same ops step after
    // step. Once a core has made two consecutive steps of the same shape (core_schedule::shape)
    // with no DMA of the body, a third of that shape is made from the last one's ops: the same
    // ops with DMA ids advanced by its number of starts (the DMAs it waits on are those of the
    // step before, which had the same shape), window slots advanced as the schedule's counters,
    // and the body's compute time. The body still runs; if it issues DMAs this time, they are
    // spliced in and the next step is made in full again.

    struct op_meta {
        event_kind kind = event_kind::step;  // the event that made the op
        std::uint8_t op = 0;
        std::uint8_t slot = 0;
        bool start = false;  // a DMA start (else a wait, or no DMA)
    };
    struct repeat_state {
        std::uint64_t shape = 0;  // of the last step made
        int same = 0;             // steps in a row with that shape
        bool usable = false;      // its ops can be advanced (no body DMA, a single compute op)
        std::uint32_t starts = 0;
        std::size_t body_at = 0;  // index of the body's compute op
        run_stats dmas{};         // what its DMAs added to stats_
        index_t unsummed = 0;     // repeats whose DMAs are not yet in stats_ (flush())
        // The windows (S20) a step of this shape moves on: slot 0 <-> 1 of double-buffered
        // operands whose counter advances an odd number of times per step; inputs' before the
        // body (their wait), outputs' after it (their write).
        int n_flip_in = 0, n_flip_out = 0;
        std::uint8_t flip_in[max_operands]{}, flip_out[max_operands]{};
    };

    // Adds the DMAs of the repeated steps not yet counted to stats_.
    void flush(int core) const {
        repeat_state& r = rep_[static_cast<std::size_t>(core)];
        if (r.unsummed == 0) return;
        const index_t m = r.unsummed;
        r.unsummed = 0;
        stats_.dma_in += m * r.dmas.dma_in;
        stats_.dma_out += m * r.dmas.dma_out;
        stats_.bytes_in += m * r.dmas.bytes_in;
        stats_.bytes_out += m * r.dmas.bytes_out;
        for (int i = 0; i < desc_.n_ops(); ++i) {
            const auto u = static_cast<std::size_t>(i);
            stats_.op_dmas[u] += m * r.dmas.op_dmas[u];
            stats_.op_bytes[u] += m * r.dmas.op_bytes[u];
        }
    }

    // Records the step just made as the pattern of the next.
    void remember(int core, const run_stats& before) {
        repeat_state& r = rep_[static_cast<std::size_t>(core)];
        const std::uint64_t shape = sched_[static_cast<std::size_t>(core)].last_shape();
        r.same = (shape != 0 && shape == r.shape) ? r.same + 1 : 1;
        r.shape = shape;
        r.usable = false;
        if (!repeat_on_ || shape == 0 || !kctx_.body_dma_log.empty()) return;
        r.starts = 0;
        int computes = 0;
        for (std::size_t k = 0; k < n_out_; ++k) {
            const op_meta& m = (*meta_out_)[k];
            r.starts += m.start ? 1u : 0u;
            if (m.kind == event_kind::body) {
                r.body_at = k;
                ++computes;
            }
        }
        r.usable = computes == 1;
        const core_schedule& sch = sched_[static_cast<std::size_t>(core)];
        const core_schedule::step_delta& d = sch.last_delta();
        r.n_flip_in = r.n_flip_out = 0;
        for (int k = 0; k < sch.n_windowed(); ++k) {
            const int op = sch.windowed(k);
            if (tables_.info.ops[static_cast<std::size_t>(op)].buffers != 2) continue;
            if (op < desc_.n_in && d.win[op] % 2 != 0)
                r.flip_in[r.n_flip_in++] = static_cast<std::uint8_t>(op);
            if (op >= desc_.n_in && d.cout[op] % 2 != 0)
                r.flip_out[r.n_flip_out++] = static_cast<std::uint8_t>(op);
        }
        r.dmas = stats_;
        r.dmas.dma_in -= before.dma_in;
        r.dmas.dma_out -= before.dma_out;
        r.dmas.bytes_in -= before.bytes_in;
        r.dmas.bytes_out -= before.bytes_out;
        for (int i = 0; i < desc_.n_ops(); ++i) {
            const auto u = static_cast<std::size_t>(i);
            r.dmas.op_dmas[u] -= before.op_dmas[u];
            r.dmas.op_bytes[u] -= before.op_bytes[u];
        }
    }

    // Makes the core's next step from its last one when it may (see above): -1 when it may not
    // (nothing done); else the step is made, its body run, and 1 when the body charged the same
    // time and issued no DMA (the step repeats the last one exactly), 0 otherwise (finish_body()
    // then writes the body's ops).
    int repeat(int core) {
        const auto c = static_cast<std::size_t>(core);
        repeat_state& r = rep_[c];
        core_schedule& sch = sched_[c];
        if (!r.usable || r.same < 2 || sch.shape() != r.shape) return -1;
        const index_t g = sch.next_global_step();
        sch.skip_step();
        next_id_[c] += r.starts;
        ++r.unsummed;
        core_memory& mem = mem_[c];
        for (int k = 0; k < r.n_flip_in; ++k) mem.cur[r.flip_in[k]] ^= 1;
        body_event_ = event{event_kind::body,
                            static_cast<std::uint8_t>(core),
                            0,
                            0,
                            static_cast<std::uint32_t>(g),
                            static_cast<std::uint32_t>(g)};
        invoke_body(body_event_);
        for (int k = 0; k < r.n_flip_out; ++k) mem.cur[r.flip_out[k]] ^= 1;
        if (!kctx_.body_dma_log.empty()) return 0;
        const double t = seconds(kctx_.body_work);
        return t == (*out_)[r.body_at].seconds ? 1 : 0;
    }

    // Brings the batch's ops (those of the step m steps back, all with the same shape) to the
    // step just made: DMA ids advance by m times the step's starts, slots as the schedule's
    // counters, and the DMA tables learn the latest DMAs.
    void patch(int core, index_t m) {
        const auto c = static_cast<std::size_t>(core);
        const repeat_state& r = rep_[c];
        const core_schedule& sch = sched_[c];
        const core_schedule::step_delta& d = sch.last_delta();
        const auto g = static_cast<std::uint32_t>(sch.next_global_step() - 1);
        const auto k = static_cast<std::uint32_t>(m * r.starts);
        std::vector<sim::op>& ops = *out_;
        std::vector<op_meta>& meta = *meta_out_;
        const std::size_t n = n_batch_[c];
        auto advance = [&](op_meta& mt, index_t per_step) {
            const index_t bc = tables_.info.ops[mt.op].buffers;
            mt.slot = static_cast<std::uint8_t>(bc > 1 ? (mt.slot + m * per_step) % bc : 0);
        };
        for (std::size_t j = 0; j < n; ++j) {
            sim::op& o = ops[j];
            op_meta& mt = meta[j];
            o.step = g;
            if (o.kind != sim::op_kind::dma_start && o.kind != sim::op_kind::dma_wait) continue;
            o.dma += k;
            if (!mt.start) {
                if (mt.kind == event_kind::wait_in)
                    advance(mt, d.win[mt.op]);
                else if (mt.kind == event_kind::wait_out)
                    advance(mt, d.wout[mt.op]);
                continue;
            }
            switch (mt.kind) {
                case event_kind::fetch:
                    advance(mt, d.cin[mt.op]);
                    in_flight_in_[c][mt.op][mt.slot] = o.dma;
                    break;
                case event_kind::restore:
                    advance(mt, d.cout[mt.op]);  // restores into the slot the next write uses
                    break;
                case event_kind::write:
                case event_kind::write_sync:
                    advance(mt, d.cout[mt.op]);
                    if (mt.kind == event_kind::write) in_flight_out_[c][mt.op][mt.slot] = o.dma;
                    break;
                default:
                    break;
            }
        }
    }

    // The body of a step made by repeat() charged another time or issued DMAs: its ops.
    void finish_body(int core) {
        const auto c = static_cast<std::size_t>(core);
        repeat_state& r = rep_[c];
        if (kctx_.body_dma_log.empty()) {
            (*out_)[r.body_at].seconds = last_seconds_;  // seconds() ran in repeat()
            return;
        }
        splice(core, body_event_, n_batch_[c]);
    }

    // The body of a repeated step issued DMAs: its ops replace the single compute op, and the
    // starts after it (the writes) take the ids after the body's.
    void splice(int core, const event& body, std::size_t n) {
        const auto c = static_cast<std::size_t>(core);
        repeat_state& r = rep_[c];
        std::vector<sim::op> tail(out_->begin() + static_cast<std::ptrdiff_t>(r.body_at + 1),
                                  out_->begin() + static_cast<std::ptrdiff_t>(n));
        std::vector<op_meta> tail_meta(meta_out_->begin() + static_cast<std::ptrdiff_t>(r.body_at + 1),
                                       meta_out_->begin() + static_cast<std::ptrdiff_t>(n));
        // The ids advanced above assumed no body DMA: the tail's starts move up by the body's.
        next_id_[c] -= static_cast<std::uint32_t>(
            std::count_if(tail_meta.begin(), tail_meta.end(), [](const op_meta& m) { return m.start; }));
        n_out_ = r.body_at;
        emit_body(body);
        for (std::size_t j = 0; j < tail.size(); ++j) {
            sim::op o = tail[j];
            const op_meta& m = tail_meta[j];
            if (m.start) {
                o.dma = next_id_[c]++;
                if (m.kind == event_kind::write) in_flight_out_[c][m.op][m.slot] = o.dma;
            } else if (o.kind == sim::op_kind::dma_wait && m.kind != event_kind::wait_out) {
                o.dma = next_id_[c] - 1;  // a blocking copy waits on its own start, just made
            }
            cur_meta_ = m;
            emit(o.kind, o.dma, o.seconds, o.bytes, o.far, o.label, o.step);
        }
        n_batch_[c] = n_out_;
        r.usable = false;  // the next step is made in full
        r.same = 0;
    }

    // The ops are written field by field into the batch (a whole op built aside and copied in
    // stalls on store forwarding, which made this the hot spot of timing-only runs).
    void emit(sim::op_kind kind, std::uint32_t dma, double seconds, index_t bytes, bool far,
              std::uint32_t label, std::uint32_t step) {
        if (n_out_ == out_->size()) {
            out_->resize(2 * n_out_ + 16);
            meta_out_->resize(out_->size());
        }
        (*meta_out_)[n_out_] = cur_meta_;
        sim::op& o = (*out_)[n_out_++];
        o.kind = kind;
        o.dma = dma;
        o.seconds = seconds;
        o.bytes = bytes;
        o.far = far;
        o.label = label;
        o.step = step;
    }
    // A pipeline DMA starts: returns its id.
    std::uint32_t dma_start(const event& e, index_t bytes) {
        const std::uint32_t id = next_id_[e.core]++;
        const std::uint32_t label = note(e, e.kind);
        if (opt_.notes) labels_[e.core].push_back(label);
        cur_meta_.start = true;
        emit(sim::op_kind::dma_start, id, 0, bytes, true, label, e.step);
        cur_meta_.start = false;
        return id;
    }
    void wait(int core, std::uint32_t id, std::uint32_t step) {
        emit(sim::op_kind::dma_wait, id, 0, 0, true, label_of(core, id), step);
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

    // One schedule event: does its work and appends its op(s), if it has a cost, to `out`.
    void handle(const event& e) {
        const auto op = static_cast<std::size_t>(e.op);
        cur_meta_ = op_meta{e.kind, e.op, e.slot, false};
        switch (e.kind) {
            case event_kind::step:
                // The context is set when the body runs.
                emit(sim::op_kind::overhead, 0, desc_.hw.step_overhead_s, 0, true, 0, e.step);
                return;
            case event_kind::fetch:
                in_flight_in_[e.core][op][e.slot] = dma_start(e, move(e, true));
                return;
            case event_kind::sync_in:
            case event_kind::restore:
                wait(e.core, dma_start(e, move(e, true)), e.step);
                return;
            case event_kind::wait_in:
                mem_[e.core].cur[op] = e.slot;
                wait(e.core, in_flight_in_[e.core][op][e.slot], e.step);
                return;
            case event_kind::body:
                run_body(e);
                return;
            case event_kind::write:
            case event_kind::write_sync:
            case event_kind::sync_out: {
                const std::uint32_t id = dma_start(e, move(e, false));
                if (e.kind == event_kind::write)
                    in_flight_out_[e.core][op][e.slot] = id;
                else
                    wait(e.core, id, e.step);  // S29: a blocking copy
                // S20: the body's output window is slot(copy_out); copy_out advances it.
                if (e.kind != event_kind::sync_out)
                    mem_[e.core].cur[op] = (e.slot + 1) % std::max(1, tables_.info.ops[op].buffers);
                return;
            }
            case event_kind::wait_out:
                wait(e.core, in_flight_out_[e.core][op][e.slot], e.step);
                return;
        }
    }

    void run_body(const event& e) {
        invoke_body(e);
        emit_body(e);
    }
    void invoke_body(const event& e) {
        ++stats_.steps;
        ++stats_.core_steps[e.core];
        kctx_.core = e.core;
        kctx_.step = e.step;
        // The grid point: one step on from the core's last one (an odometer, S13), or divided out.
        auto& p = point_[e.core];
        if (e.step == last_step_[e.core] + 1) {
            for (int i = desc_.grid_rank - 1; i >= 0; --i) {
                const auto u = static_cast<std::size_t>(i);
                if (++p[u] < desc_.grid[u]) break;
                p[u] = 0;
            }
        } else {
            index_t rest = e.step;
            for (int i = desc_.grid_rank - 1; i >= 0; --i) {
                const auto u = static_cast<std::size_t>(i);
                p[u] = rest % desc_.grid[u];
                rest /= desc_.grid[u];
            }
        }
        last_step_[e.core] = e.step;
        // Element by element: a whole-array copy right after the odometer's stores would stall
        // on store forwarding.
        for (int i = 0; i < desc_.grid_rank; ++i)
            kctx_.point[static_cast<std::size_t>(i)] = p[static_cast<std::size_t>(i)];
        kctx_.body_work = work{};
        kctx_.body_dma_log.clear();
        invoke_(mem_[e.core]);
    }
    // How long work w takes. Bodies usually charge the same work every step: the last conversion
    // is reused.
    // The total is kept as (last work, times charged in a row) and added up when the work
    // changes (stats()), not step by step.
    double seconds(const work& w) {
        if (!(w == last_work_)) {
            stats_.total_work += times(last_work_, last_work_n_);
            last_work_ = w;
            last_work_n_ = 0;
            last_seconds_ = opt_.seconds_of ? opt_.seconds_of(w, opt_.seconds_ctx) : 0.0;
        }
        ++last_work_n_;
        return last_seconds_;
    }
    static work times(const work& w, index_t n) {
        const auto k = static_cast<double>(n);
        return work{w.mxu_passes_flops * k, w.mxu_int8_ops * k,   w.vreg_cheap * k,
                    w.vreg_medium * k,      w.vreg_expensive * k, w.vector_loads * k,
                    w.vector_stores * k,    w.scalar_ops * k,     w.explicit_seconds * k};
    }
    // The body's ops: compute up to each of its own DMAs, the DMA (start + wait), the rest.
    void emit_body(const event& e) {
        cur_meta_ = op_meta{event_kind::body, 0, 0, false};
        for (const body_dma_record& r : kctx_.body_dma_log) {
            emit(sim::op_kind::compute, 0, seconds(r.before), 0, true, 0, e.step);
            const std::uint32_t id = next_id_[e.core]++;
            const std::uint32_t label = note(e, event_kind::body);
            if (opt_.notes) labels_[e.core].push_back(label);
            cur_meta_.start = true;
            emit(sim::op_kind::dma_start, id, 0, r.bytes, r.far, label, e.step);
            cur_meta_.start = false;
            wait(e.core, id, e.step);
        }
        emit(sim::op_kind::compute, 0, seconds(kctx_.body_work), 0, true, 0, e.step);
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
    index_t last_work_n_ = 0;  // times last_work_ was charged since it was last added to the total
    double last_seconds_ = 0;
    std::array<std::vector<sim::op>, 2> batch_{};  // per core: the ops of its current step
    std::vector<sim::op>* out_ = nullptr;          // the batch being made
    std::size_t n_out_ = 0;                        // and its size
    std::array<std::size_t, 2> n_batch_{};         // per core: the size of its last batch
    std::array<std::vector<op_meta>, 2> meta_{};   // per core: what made each op of its batch
    std::vector<op_meta>* meta_out_ = nullptr;
    op_meta cur_meta_{};
    mutable std::array<repeat_state, 2> rep_{};
    std::array<index_t, 2> stale_{};  // per core: steps made since its batch's ops were written
    event body_event_{};
    std::array<std::array<index_t, max_rank>, 2> point_{};  // per core: its last body's grid point
    std::array<index_t, 2> last_step_{-2, -2};              // and step
    bool repeat_on_ = false;                                // timing-only, no operand moves data, no notes
    step_events events_{};
    std::array<std::uint32_t, 2> next_id_{};
    std::uint32_t in_flight_in_[2][max_operands][2]{};
    std::uint32_t in_flight_out_[2][max_operands][2]{};
    mutable run_stats stats_{};  // (stats() adds what flush() has not)
    std::vector<dma_note> notes_;
    std::array<std::vector<std::uint32_t>, 2> labels_{};  ///< per core: DMA id → label (notes on)
};

}  // namespace ptpu
