// Defines the runner: one pipeline on one core. It walks the core's schedule (basic_schedule),
// moves real bytes for every DMA, runs the kernel body on its windows, and writes the ops of the
// core stream into its batch as they happen (stream/op.hpp): it IS the op source the timing
// model pulls from, yet it includes nothing of the model and knows nothing of time: its ops carry
// the work bodies charged, which the model converts (one-way arrows: docs/layers.md). It is not a template: the
// body is called through a function pointer, so the runner is compiled once per translation
// unit, not once per kernel body.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "ptpu/runtime/arena.hpp"
#include "ptpu/runtime/body.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/dma.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu {

/// One pipeline on one core: the schedule's events become data movement, body runs and ops.
/// (A template only so that it is compiled where a pipeline runs, not wherever this header is
/// included: use it as `runner`.)
template <int = 0>
class basic_runner {
public:
    /// Core `core` of the pipeline `desc` analyzed as `tables` (change bits from pass 1); `maps`
    /// and `ctx` give block indices (for copies and labels); `hbm[i]` is operand i's array; the
    /// windows live in `mem`; the body reads `kctx`; `notes`, when options().notes, collects
    /// what each DMA label means (shared by the runners of one call, so labels stay unique).
    basic_runner(const pipeline_desc& desc, const plan_tables& tables, int core, const block_fn* maps, const void* ctx,
           const std::array<void*, max_operands>& hbm, core_memory& mem, kernel_context& kctx, body_call body,
           const runner_options& opt, std::vector<dma_note>* notes)
        : desc_(desc),
          tables_(tables),
          core_(core),
          maps_(maps),
          ctx_(ctx),
          hbm_(hbm),
          mem_(mem),
          kctx_(kctx),
          body_(body),
          opt_(opt),
          notes_(notes),
          sched_(tables, core) {
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
            any_valid_ = any_valid_ || (!uniform && o.windowed());
            for (int d = 0; d < o.rank; ++d)  // (set_valid updates the others before each body)
                mem.valid[u][static_cast<std::size_t>(d)] = b_size(o, d);
            run_[u] = run_of(o);
        }
        kctx_.flush_ops = [](void* self) { static_cast<basic_runner*>(self)->flush_body_ops(); };
        kctx_.flush_self = this;
        kctx_.notes = opt.notes ? notes : nullptr;
        // (Race detection follows every DMA's start and wait: no step is made from another's ops.)
        repeat_on_ = opt.timing_only && !opt.notes && !opt.semaphores && !kctx.detect_races;
        // (Race detection checks each body's accesses; a body that may block is run each step.)
        memo_on_ = opt.memoize_body && opt.timing_only && !opt.semaphores && !kctx.detect_races;
        for (int i = 0; i < desc.n_ops(); ++i)
            repeat_on_ = repeat_on_ && !move_[static_cast<std::size_t>(i)] &&
                         uniform_bytes_[static_cast<std::size_t>(i)] >= 0;
        skip_ok_ = repeat_on_ && memo_on_ && !opt.nested && opt.trace == nullptr && !sched_.has_prefetched();
    }
    basic_runner(const basic_runner&) = delete;
    basic_runner& operator=(const basic_runner&) = delete;

    /// The ops of the core's next grid step (running what the schedule says on the way: DMAs,
    /// the body); no ops once its stream has ended. With `lazy`, a step that repeats the last
    /// one (see "Repeated steps" below) is made without rewriting its ops: the batch says so and
    /// its ops are those of an earlier step.
    stream::batch next_batch(bool lazy = false) {
        const int same = repeat();
        if (same == 1 && lazy) {
            ++stale_;
            return {{ops_.data(), n_batch_}, true, true};
        }
        if (same >= 0) {
            patch(stale_ + 1);
            stale_ = 0;
            if (same == 1) return {{ops_.data(), n_batch_}, true, true};
            finish_body();
            return {{ops_.data(), n_batch_}, false, true};
        }
        if (stale_ > 0) {  // the DMA tables must know the steps made without their ops
            patch(stale_);
            stale_ = 0;
        }
        n_out_ = 0;
        first_ = 0;
        events_.clear();
        flush();
        const run_stats before = stats_;
        if (!sched_.next_step(events_)) return {};
        if (opt_.trace != nullptr)
            for (std::size_t k = 0; k < events_.size(); ++k) opt_.trace->push_back(events_[k]);
        // The step's control overhead comes first, also in a core's first step, whose prologue
        // (S22) the schedule lists before the step: on a TPU the prologue is code of that step
        // (so a kernel that issues the same DMAs from its body is timed the same).
        std::size_t at = 0;
        while (at < events_.size() && events_[at].kind != event_kind::step) ++at;
        if (at < events_.size()) handle(events_[at]);
        for (std::size_t k = 0; k < events_.size(); ++k)
            if (k != at) handle(events_[k]);
        n_batch_ = n_out_;
        remember(before);
        const bool whole = first_ == 0;
        return {{ops_.data() + first_, n_out_ - first_}, false, whole};
    }

    /// The ops written since the last batch (or partial one) while the body is blocked in a
    /// semaphore wait: the step's batch so far, ending with the wait. The rest of the step comes
    /// with the next batch.
    stream::batch take_partial() {
        const stream::batch b{{ops_.data() + first_, n_out_ - first_}, false, false};
        first_ = n_out_;
        return b;
    }

    /// Whole periods skipped (timing-only "Skipped periods" below). The model has found that the
    /// core's last `p` steps, which started `starts` DMAs, repeat the p before them:
    /// skippable_periods() says how many more such periods the runner can show would repeat them
    /// too, and skip_periods(m) makes m of them (at most that many) without making their ops, then
    /// remembers where it is, to be asked again a period on (m = 0 only remembers).
    [[nodiscard]] index_t skippable_periods(index_t p, std::uint32_t starts) const {
        return skip_ok_ ? periods_to_skip(p, starts) : 0;
    }
    void skip_periods(index_t m) {
        if (m > 0) skip(m);
        if (skip_ok_) mark_period();
    }

    /// DMA ids the runner has handed out (they run from 0).
    [[nodiscard]] std::uint32_t dma_ids_used() const { return next_id_; }

    /// Steps made from the last one's ops (timing-only "Repeated steps" below).
    [[nodiscard]] index_t repeated_steps() const { return repeated_; }

    /// What each inner row its ops carry (op::sub = k >= 1) is: inner_rows()[k - 1].
    [[nodiscard]] const std::vector<stream::inner_row>& inner_rows() const { return inner_rows_; }

    /// What the runner did so far.
    [[nodiscard]] run_stats stats() const {
        flush();
        run_stats s = stats_;
        s.total_work += times(last_work_, last_work_n_);
        s.skipped_steps = skipped_steps_;
        return s;
    }

private:
    index_tuple<max_rank> block_of(int op, index_t step) const {
        const auto p = detail::grid_point(desc_, step);
        return maps_[op](p.data(), ctx_);
    }
    static stream::copy_kind copy_of(event_kind k) {
        switch (k) {
            case event_kind::sync_in:
                return stream::copy_kind::sync_in;
            case event_kind::restore:
                return stream::copy_kind::restore;
            case event_kind::write:
                return stream::copy_kind::write;
            case event_kind::write_sync:
                return stream::copy_kind::write_sync;
            case event_kind::sync_out:
                return stream::copy_kind::sync_out;
            case event_kind::body:
                return stream::copy_kind::body;
            default:
                return stream::copy_kind::fetch;
        }
    }
    // Labels index the shared notes (0 when notes are off). A DMA's wait carries its start's
    // label, so the timeline can name both.
    std::uint32_t note(const event& e, event_kind k) {
        if (!opt_.notes || notes_ == nullptr) return 0;
        dma_note n{copy_of(k), e.core, e.op, e.slot, opt_.pipeline, e.block_step, {}};
        if (k != event_kind::body) {
            const auto b = block_of(e.op, e.block_step);
            n.block.rank = desc_.ops[e.op].rank;
            for (int d = 0; d < n.block.rank; ++d) n.block.v[d] = b.v[d].start;
        } else {
            n.op = 0;
        }
        notes_->push_back(n);
        return static_cast<std::uint32_t>(notes_->size() - 1);
    }
    std::uint32_t label_of(std::uint32_t id) const { return id < labels_.size() ? labels_[id] : 0; }

    // ---- Repeated steps ------------------------------------------------------------------------
    // A timing-only run that moves no data spends most of its time making the same ops step after
    // step. Once the core has made two consecutive steps of the same shape (basic_schedule::shape)
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
    struct window_move {
        std::uint8_t op = 0;
        std::uint8_t by = 0;  // slots the window advances per step (mod its buffer count)
    };
    struct repeat_state {
        std::uint64_t shape = 0;  // of the last step made
        int same = 0;             // steps in a row with that shape
        bool usable = false;      // its ops can be advanced (no body DMA, a single compute op)
        std::uint32_t starts = 0;
        std::size_t body_at = 0;  // index of the body's compute op
        run_stats dmas{};         // what its DMAs added to stats_
        index_t unsummed = 0;     // repeats whose DMAs are not yet in stats_ (flush())
        // The windows (S20) a step of this shape moves on: inputs' before the body (their wait),
        // outputs' after it (their write), each by its counter's move modulo its buffer count.
        int n_move_in = 0, n_move_out = 0;
        window_move move_in[max_operands]{}, move_out[max_operands]{};
    };

    // Adds the DMAs of the repeated steps not yet counted to stats_.
    void flush() const {
        repeat_state& r = rep_;
        if (r.unsummed == 0) return;
        const index_t m = r.unsummed;
        r.unsummed = 0;
        static const run_stats none{};
        add_dmas(stats_, r.dmas, none, m);
    }
    // to's DMA counts (all, per direction, per operand) += m · (now's - before's).
    void add_dmas(run_stats& to, const run_stats& now, const run_stats& before, index_t m) const {
        to.dma_in += m * (now.dma_in - before.dma_in);
        to.dma_out += m * (now.dma_out - before.dma_out);
        to.bytes_in += m * (now.bytes_in - before.bytes_in);
        to.bytes_out += m * (now.bytes_out - before.bytes_out);
        for (std::size_t i = 0; i < static_cast<std::size_t>(desc_.n_ops()); ++i) {
            to.op_dmas[i] += m * (now.op_dmas[i] - before.op_dmas[i]);
            to.op_bytes[i] += m * (now.op_bytes[i] - before.op_bytes[i]);
        }
    }

    // Records the step just made as the pattern of the next.
    void remember(const run_stats& before) {
        repeat_state& r = rep_;
        const std::uint64_t shape = sched_.last_shape();
        r.same = (shape != 0 && shape == r.shape) ? r.same + 1 : 1;
        r.shape = shape;
        r.usable = false;
        if (!repeat_on_ || shape == 0 || body_ops_ > 0) return;
        r.starts = 0;
        int computes = 0;
        for (std::size_t k = 0; k < n_out_; ++k) {
            const op_meta& m = meta_[k];
            r.starts += m.start ? 1u : 0u;
            if (m.kind == event_kind::body) {
                r.body_at = k;
                ++computes;
            }
        }
        r.usable = computes == 1;
        const core_schedule::step_delta& d = sched_.last_delta();
        r.n_move_in = r.n_move_out = 0;
        for (int k = 0; k < sched_.n_windowed(); ++k) {
            const int op = sched_.windowed(k);
            const index_t bc = tables_.info.ops[static_cast<std::size_t>(op)].buffers;
            if (bc < 2) continue;
            const index_t by = (op < desc_.n_in ? d.op[op].wait_in : d.op[op].copy_out) % bc;
            if (by == 0) continue;
            const window_move mv{static_cast<std::uint8_t>(op), static_cast<std::uint8_t>(by)};
            if (op < desc_.n_in)
                r.move_in[r.n_move_in++] = mv;
            else
                r.move_out[r.n_move_out++] = mv;
        }
        r.dmas = run_stats{};
        add_dmas(r.dmas, stats_, before, 1);
    }

    void move_window(const window_move& mv) {
        const int bc = tables_.info.ops[mv.op].buffers;
        mem_.cur[mv.op] = (mem_.cur[mv.op] + mv.by) % bc;
    }

    // Makes the core's next step from its last one when it may (see above): -1 when it may not
    // (nothing done); else the step is made, its body run, and 1 when the body charged the same
    // work and issued no DMA (the step repeats the last one exactly), 0 otherwise (finish_body()
    // then writes the body's ops).
    int repeat() {
        repeat_state& r = rep_;
        if (!r.usable || r.same < 2 || sched_.shape() != r.shape) return -1;
        const index_t g = sched_.next_global_step();
        sched_.skip_step();
        ++repeated_;
        next_id_ += r.starts;
        ++r.unsummed;
        for (int k = 0; k < r.n_move_in; ++k) move_window(r.move_in[k]);
        body_event_ = event{event_kind::body,
                            static_cast<std::uint8_t>(core_),
                            0,
                            0,
                            static_cast<std::uint32_t>(g),
                            static_cast<std::uint32_t>(g),
                            opt_.pipeline};
        invoke_body(body_event_);
        for (int k = 0; k < r.n_move_out; ++k) move_window(r.move_out[k]);
        if (!kctx_.body_ops.empty()) return 0;
        return work_number(kctx_.body_work) == ops_[r.body_at].work ? 1 : 0;
    }

    // Brings the batch's ops (those of the step m steps back, all with the same shape) to the
    // step just made: DMA ids advance by m times the step's starts, slots as the schedule's
    // counters, and the DMA tables learn the latest DMAs.
    void patch(index_t m) {
        const repeat_state& r = rep_;
        const core_schedule::step_delta& d = sched_.last_delta();
        const auto g = static_cast<std::uint32_t>(sched_.next_global_step() - 1);
        const auto k = static_cast<std::uint32_t>(m * r.starts);
        const std::size_t n = n_batch_;
        auto advance = [&](op_meta& mt, index_t per_step) {
            const index_t bc = tables_.info.ops[mt.op].buffers;
            mt.slot = static_cast<std::uint8_t>(bc > 1 ? (mt.slot + m * per_step) % bc : 0);
        };
        for (std::size_t j = 0; j < n; ++j) {
            stream::op& o = ops_[j];
            op_meta& mt = meta_[j];
            o.step = g;
            if (o.kind != stream::op_kind::dma_start && o.kind != stream::op_kind::dma_wait) continue;
            o.dma += k;
            if (!mt.start) {
                if (mt.kind == event_kind::wait_in)
                    advance(mt, d.op[mt.op].wait_in);
                else if (mt.kind == event_kind::wait_out)
                    advance(mt, d.op[mt.op].wait_out);
                continue;
            }
            switch (mt.kind) {
                case event_kind::fetch:
                    advance(mt, d.op[mt.op].copy_in);
                    in_flight_in_[mt.op][mt.slot] = o.dma;
                    break;
                case event_kind::restore:
                    advance(mt, d.op[mt.op].copy_out);  // restores into the slot the next write uses
                    break;
                case event_kind::write:
                case event_kind::write_sync:
                    advance(mt, d.op[mt.op].copy_out);
                    if (mt.kind == event_kind::write) in_flight_out_[mt.op][mt.slot] = o.dma;
                    break;
                default:
                    break;
            }
        }
    }

    // The body of a step made by repeat() charged another time or issued DMAs: its ops.
    void finish_body() {
        repeat_state& r = rep_;
        if (kctx_.body_ops.empty()) {
            ops_[r.body_at].work = last_number_;  // work_number() ran in repeat()
            return;
        }
        splice(body_event_, n_batch_);
    }

    // The body of a repeated step issued DMAs: its ops replace the single compute op, and the
    // starts after it (the writes) take the ids after the body's.
    void splice(const event& body, std::size_t n) {
        repeat_state& r = rep_;
        std::vector<stream::op> tail(ops_.begin() + static_cast<std::ptrdiff_t>(r.body_at + 1),
                                     ops_.begin() + static_cast<std::ptrdiff_t>(n));
        std::vector<op_meta> tail_meta(meta_.begin() + static_cast<std::ptrdiff_t>(r.body_at + 1),
                                       meta_.begin() + static_cast<std::ptrdiff_t>(n));
        // The ids advanced above assumed no body DMA: the tail's starts move up by the body's.
        next_id_ -= static_cast<std::uint32_t>(
            std::count_if(tail_meta.begin(), tail_meta.end(), [](const op_meta& m) { return m.start; }));
        n_out_ = r.body_at;
        emit_body(body);
        for (std::size_t j = 0; j < tail.size(); ++j) {
            stream::op o = tail[j];
            const op_meta& m = tail_meta[j];
            if (m.start) {
                o.dma = next_id_++;
                if (m.kind == event_kind::write) in_flight_out_[m.op][m.slot] = o.dma;
            } else if (o.kind == stream::op_kind::dma_wait && m.kind != event_kind::wait_out) {
                o.dma = next_id_ - 1;  // a blocking copy waits on its own start, just made
            }
            cur_meta_ = m;
            emit(o.kind, o.dma, o.work, o.bytes, o.far, o.label, o.step);
            ops_[n_out_ - 1].run = o.run;
            ops_[n_out_ - 1].who = o.who;
        }
        n_batch_ = n_out_;
        r.usable = false;  // the next step is made in full
        r.same = 0;
    }

    // The ops are written field by field into the batch (a whole op built aside and copied in
    // stalls on store forwarding, which made this the hot spot of timing-only runs).
    void emit(stream::op_kind kind, std::uint32_t dma, std::uint32_t work, index_t bytes, bool far,
              std::uint32_t label, std::uint32_t step) {
        if (n_out_ == ops_.size()) {
            ops_.resize(2 * n_out_ + 16);
            meta_.resize(ops_.size());
        }
        meta_[n_out_] = cur_meta_;
        stream::op& o = ops_[n_out_++];
        o.kind = kind;
        o.core = 0;
        o.dma_sem = false;
        o.dma = dma;
        o.bytes = bytes;
        o.far = far;
        o.run = 0;
        o.who = 0;
        o.sem = 0;
        o.sub = 0;
        o.label = label;
        o.step = step;
        o.work = work;
    }
    // A pipeline DMA starts: returns its id.
    std::uint32_t dma_start(const event& e, index_t bytes) {
        const std::uint32_t id = next_id_++;
        const std::uint32_t label = note(e, e.kind);
        if (opt_.notes) labels_.push_back(label);
        cur_meta_.start = true;
        emit(stream::op_kind::dma_start, id, 0, bytes, true, label, e.step);
        ops_[n_out_ - 1].run = next_run_;
        cur_meta_.start = false;
        return id;
    }
    void wait(std::uint32_t id, std::uint32_t step) {
        emit(stream::op_kind::dma_wait, id, 0, 0, true, label_of(id), step);
    }
    // A pipeline wait: on operand e.op's DMA (op::who, the per-operand exposed DMA).
    void wait(std::uint32_t id, const event& e) {
        wait(id, e.step);
        ops_[n_out_ - 1].who = static_cast<std::uint8_t>(e.op + 1);
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
        next_run_ = run_[op];
        if (move_[op] || bytes < 0) {
            const auto b = block_of(e.op, e.block_step);
            const operand_desc& o = desc_.ops[op];
            std::byte* slot = mem_.slots[op][e.slot];
            if (in && move_[op] && mem_.poison_padding) poison_outside(o, slot, b);
            bytes = !move_[op] ? region_of(o, b).elems() * itemsize(o.type)
                    : in       ? copy_block_in(hbm_[op], slot, o, b)
                               : copy_block_out(hbm_[op], slot, o, b);
            if (desc_.tiling)  // S35: the last partial block's DMA is rounded up to the tile
                bytes = tiled_dma_elems(o, b, tables_.info.ops[op].tile.data()) * itemsize(o.type);
            if (bytes < o.block_elems() * itemsize(o.type))  // an edge block (S34): its own runs
                next_run_ = edge_run(e.op, b);
        }
        count(e, bytes, in);
        return bytes;
    }

    // The run of a DMA moving less than its block (an edge block, S34/S35; a short slice, S38):
    // from the extents it copies, the tiled ones with the tiling option (docs/model.md, "DMA
    // shape costs"), so that its run count is that of the rows it really moves.
    std::uint16_t edge_run(int i, const index_tuple<max_rank>& b) const {
        const auto op = static_cast<std::size_t>(i);
        const operand_desc& o = desc_.ops[op];
        const std::array<index_t, max_rank> c =
            desc_.tiling ? tiled_dma_extent(o, b, tables_.info.ops[op].tile.data()) : region_of(o, b).count;
        return run_of_extent(o, c.data());
    }
    static index_t b_size(const operand_desc& o, int d) { return o.block[static_cast<std::size_t>(d)].size; }
    // An input block only partly inside its array (S34 edge block, S38 short slice): the part of
    // its window outside the array reads poison (interpret mode's uninitialized memory) rather
    // than what the slot held. The whole slot is poisoned, then the copy overwrites the inside.
    static void poison_outside(const operand_desc& o, std::byte* slot, const index_tuple<max_rank>& b) {
        const block_region r = region_of(o, b);
        if (r.elems() == o.block_elems()) return;
        detail::fill_poison(slot, o.block_elems(), o.type);
    }
    // What the body may read of each window this step (core_memory::valid): the block's part
    // inside its array, for the operands whose blocks are not all whole (the others keep their
    // block sizes, set by place()).
    void set_valid(index_t step) {
        for (int i = 0; i < desc_.n_ops(); ++i) {
            const auto u = static_cast<std::size_t>(i);
            if (uniform_bytes_[u] >= 0 || !desc_.ops[u].windowed()) continue;
            const block_region r = region_of(desc_.ops[u], block_of(i, step));
            for (std::size_t d = 0; d < static_cast<std::size_t>(r.rank); ++d) mem_.valid[u][d] = r.count[d];
        }
    }

    // One schedule event: does its work and appends its op(s), if it has a cost, to the batch.
    void handle(const event& e) {
        const auto op = static_cast<std::size_t>(e.op);
        cur_meta_ = op_meta{e.kind, e.op, e.slot, false};
        switch (e.kind) {
            case event_kind::step:
                // The context is set when the body runs.
                emit(stream::op_kind::overhead, 0, 0, 0, true, 0, e.step);  // (the model knows its time)
                return;
            case event_kind::fetch:
                if (kctx_.detect_races) race_start(e, true, true);
                in_flight_in_[op][e.slot] = dma_start(e, move(e, true));
                return;
            case event_kind::sync_in:
            case event_kind::restore:
                if (kctx_.detect_races) race_start(e, true, false);
                wait(dma_start(e, move(e, true)), e);
                return;
            case event_kind::wait_in:
                mem_.cur[op] = e.slot;
                if (kctx_.detect_races) race_end(e, true);
                wait(in_flight_in_[op][e.slot], e);
                return;
            case event_kind::body:
                if (sched_.has_prefetched())  // S55: the first steps' windows have no wait_in
                    for (int k = 0; k < desc_.n_in; ++k)
                        if (tables_.info.ops[static_cast<std::size_t>(k)].windowed &&
                            !tables_.info.ops[static_cast<std::size_t>(k)].trivial)
                            mem_.cur[static_cast<std::size_t>(k)] = sched_.body_slot(k);
                if (any_valid_) set_valid(e.step);
                invoke_body(e);
                emit_body(e);
                return;
            case event_kind::write:
            case event_kind::write_sync:
            case event_kind::sync_out: {
                if (kctx_.detect_races) race_start(e, false, e.kind == event_kind::write);
                const std::uint32_t id = dma_start(e, move(e, false));
                if (e.kind == event_kind::write)
                    in_flight_out_[op][e.slot] = id;
                else
                    wait(id, e);  // S29: a blocking copy
                // S20: the body's output window is slot(copy_out); copy_out advances it.
                if (e.kind != event_kind::sync_out)
                    mem_.cur[op] = (e.slot + 1) % std::max(1, tables_.info.ops[op].buffers);
                return;
            }
            case event_kind::wait_out:
                if (kctx_.detect_races) race_end(e, false);
                wait(in_flight_out_[op][e.slot], e);
                return;
        }
    }

    // ---- Skipped periods (timing-only) ---------------------------------------------------------
    // The model's fast lane finds periods of steps whose ops repeat (sim/steady.hpp) but still
    // pulls every step's ops to compare them, and each costs the runner a schedule step and a
    // body memo walk. The runner can instead show that whole periods would repeat and make them
    // in bulk: the last period's steps all had a nonzero shape and a body answered from a kept
    // memo leaf (no scalar memory, DMA or semaphore); each coming step has the shape of the step
    // a period before it (the change bits it reads are the same, compared as bytes of pass 1's
    // table); every block moves the same bytes (repeat_on_); and every program id the memo's tree
    // asks is the same a period apart (the period is a multiple of the axis's cycle in the grid,
    // or the axis keeps its value over the skipped steps and the period before them). Then m
    // periods move the counters, DMA ids, statistics and work m times as the last one did, and the
    // model applies them as periods it skipped. Window slots come back where they were only after
    // a whole number of turns of each buffer ring: m is a multiple of the periods that takes. The
    // memo's checks (the 1st, 2nd, 4th... reuse of a leaf) are kept: a skip ends before one.

    struct period_mark {
        bool set = false;
        core_schedule::counters at{};
        std::uint32_t id = 0;
        run_stats stats{};
        work total{};
        std::uint32_t in[max_operands][max_buffers]{};
        std::uint32_t out[max_operands][max_buffers]{};
    };

    work total_work_now() const {
        work w = stats_.total_work;
        w += times(last_work_, last_work_n_);
        return w;
    }

    void mark_period() {
        flush();
        period_mark& k = mark_;
        k.set = true;
        k.at = sched_.counters_now();
        k.id = next_id_;
        k.stats = stats_;
        k.total = total_work_now();
        std::memcpy(k.in, in_flight_in_, sizeof k.in);
        std::memcpy(k.out, in_flight_out_, sizeof k.out);
    }

    // The periods of p steps (starting `starts` DMAs each) the runner may make in bulk now.
    index_t periods_to_skip(index_t p, std::uint32_t starts) const {
        const period_mark& k = mark_;
        const core_schedule::counters now = sched_.counters_now();
        if (!k.set || now.steps - k.at.steps != p || clean_run_ < p || next_id_ - k.id != starts) return 0;
        // Each buffer ring must turn a whole number of times in the periods skipped.
        index_t turn = 1;
        for (int i = 0; i < desc_.n_ops(); ++i) {
            const index_t bc = tables_.info.ops[static_cast<std::size_t>(i)].buffers;
            if (bc < 2) continue;
            const slot_counters &a = now.op[i], &b = k.at.op[i];
            for (const index_t d : {a.copy_in - b.copy_in, a.wait_in - b.wait_in, a.copy_out - b.copy_out,
                                    a.wait_out - b.wait_out}) {
                const index_t r = d % bc;
                if (r != 0) turn = std::lcm(turn, bc / std::gcd(r, bc));
            }
        }
        // Each skipped step is a reuse of a kept leaf: the skip stops short of the reuse that
        // checks the tree against the body (run_memoized), which a pulled period then runs.
        index_t n = memo_check_at_ - memo_hits_ - 1;
        // The program ids the body asks.
        const index_t g = sched_.next_global_step();
        index_t stride = 1;
        for (int a = desc_.grid_rank - 1; a >= 0 && n > 0; --a) {
            const index_t extent = desc_.grid[static_cast<std::size_t>(a)];
            if ((memo_axes_ >> a) & 1u) {
                const index_t cycle = stride * extent;
                if (p % cycle != 0)  // the axis must keep its value from g - p to the last step skipped
                    n = std::min(n, ((g - p) / stride + 1) * stride - g);
            }
            stride *= extent;
        }
        n -= n % (p * turn);
        if (n <= 0) return 0;
        n = sched_.periodic_steps(p, n);  // (the change bits last: the most costly to compare)
        const index_t m = n / p;
        return m - m % turn;
    }

    // Makes m periods of the steps since the mark (periods_to_skip() said they repeat it).
    void skip(index_t m) {
        const period_mark& k = mark_;
        if (stale_ > 0) {  // the batch's ops first catch up with the steps made lazily
            patch(stale_);
            stale_ = 0;
        }
        flush();
        const core_schedule::counters before = sched_.counters_now();
        const index_t n = m * (before.steps - k.at.steps);
        const auto dk = static_cast<std::uint32_t>(m * (next_id_ - k.id));
        sched_.skip_periods(k.at, m);
        next_id_ += dk;
        // Statistics: the period's, m times (the work as a whole: its runs cross the mark).
        const run_stats& a = k.stats;
        run_stats& s = stats_;
        s.steps += m * (s.steps - a.steps);
        for (std::size_t c = 0; c < 2; ++c) s.core_steps[c] += m * (s.core_steps[c] - a.core_steps[c]);
        add_dmas(s, run_stats(s), a, m);
        work dw = total_work_now();
        dw += times(k.total, -1);
        s.total_work += times(dw, m);
        if (!detail::finite_work(total_work_now()))
            detail::work_overflow(kctx_, "the work charged over the repeating periods up to this step");
        work_room_ = work_room(s.total_work, last_work_);
        // The DMAs in flight in a slot the period refilled are the latest period's, m on.
        for (int i = 0; i < desc_.n_ops(); ++i)
            for (std::size_t b = 0; b < max_buffers; ++b) {
                if (in_flight_in_[i][b] != k.in[i][b]) in_flight_in_[i][b] += dk;
                if (in_flight_out_[i][b] != k.out[i][b]) in_flight_out_[i][b] += dk;
            }
        // The batch holds the last step's ops: now those of the step n on.
        const auto g = static_cast<std::uint32_t>(sched_.next_global_step() - 1);
        for (std::size_t j = 0; j < n_batch_; ++j) {
            stream::op& o = ops_[j];
            o.step = g;
            if (o.kind == stream::op_kind::dma_start || o.kind == stream::op_kind::dma_wait) o.dma += dk;
        }
        repeated_ += n;
        skipped_steps_ += n;
        memo_hits_ += n;  // a reuse each, all before the next check (periods_to_skip)
        last_step_ = -2;  // the next body's grid point is divided out
    }

    // ---- Race detection (run_options::detect_races, A13) ---------------------------------------
    // A pipeline DMA of window slot e.slot starts: into it (`in`) or out of it. A body's async
    // copy still in flight that the DMA would overwrite (into the slot: the copy reads or writes
    // it) or read mid-write (out of the slot: the copy writes it) is DMA3. An async DMA (`async`)
    // stays in flight until its wait: the body may not touch the slot meanwhile (DMA2, checked by
    // the body's accesses). A copy out to HBM writes it and a fetch reads it: the other core may race
    // either (MC2).
    void race_start(const event& e, bool in, bool async) {
        const auto op = static_cast<std::size_t>(e.op);
        const std::byte* lo = mem_.slots[op][e.slot];
        const std::byte* hi = lo + tables_.info.ops[op].block_bytes;
        pipeline_flight f{lo, hi, in, e.op, e.slot, opt_.pipeline, static_cast<std::uint8_t>(desc_.n_in),
                          static_cast<index_t>(e.step), static_cast<index_t>(e.block_step)};
        for (const pending_dma& d : kctx_.pending)
            if ((d.dst_lo < hi && lo < d.dst_hi) || (in && d.src_lo < hi && lo < d.src_hi))
                detail::raise_slot_race(kctx_, f, d);
        if (async) kctx_.flights.push_back(f);
        // MC2: a copy out writes the HBM block, a fetch (or restore) reads it; the other core
        // may race either (a copy of an aliased operand has no DMA and no event: S56).
        if (kctx_.races != nullptr && hbm_[op] != nullptr) {
            const operand_desc& o = desc_.ops[op];
            const block_region r = region_of(o, block_of(e.op, e.block_step));
            if (r.elems() == 0) return;
            hbm_access w;
            const index_t item = itemsize(o.type);
            index_t stride = item, at = 0;
            for (int d = o.rank - 1; d >= 0; --d) {
                const auto u = static_cast<std::size_t>(d);
                w.stride[u] = stride;
                w.count[u] = r.count[u];
                at += r.array_start[u] * stride;
                stride *= o.shape[u];
            }
            w.rank = o.rank;
            w.item = item;
            w.p = static_cast<const std::byte*>(hbm_[op]) + at;
            index_t last = 0;
            for (int d = 0; d < o.rank; ++d)
                last += (w.count[static_cast<std::size_t>(d)] - 1) * w.stride[static_cast<std::size_t>(d)];
            w.lo = w.p;
            w.hi = w.p + last + item;
            w.write = !in;
            w.what = detail::flight_name(f) + (in ? " fetched" : " copied out");
            const index_t keep = kctx_.step;
            kctx_.step = e.step;
            detail::note_hbm_access(kctx_, std::move(w));
            kctx_.step = keep;
        }
    }
    void race_end(const event& e, bool in) {
        auto& v = kctx_.flights;
        for (std::size_t k = 0; k < v.size(); ++k)
            if (v[k].op == e.op && v[k].slot == e.slot && v[k].into == in && v[k].pipeline == opt_.pipeline) {
                v.erase(v.begin() + static_cast<std::ptrdiff_t>(k));
                return;
            }
    }

    void invoke_body(const event& e) {
        ++stats_.steps;
        ++stats_.core_steps[e.core];
        kctx_.step = e.step;
        kctx_.body_seq = 0;
        kctx_.nested_rows.clear();
        nested_last_at_ = static_cast<std::size_t>(-1);
        kctx_.valid = &mem_.valid;
        body_ids_.clear();
        if (!opt_.nested) kctx_.core = e.core;  // a nested pipeline's body keeps the kernel's core
        // The grid point: one step on from the core's last one (an odometer, S13), or divided out.
        if (e.step == last_step_ + 1) {
            for (int i = desc_.grid_rank - 1; i >= 0; --i) {
                const auto u = static_cast<std::size_t>(i);
                if (++point_[u] < desc_.grid[u]) break;
                point_[u] = 0;
            }
        } else {
            index_t rest = e.step;
            for (int i = desc_.grid_rank - 1; i >= 0; --i) {
                const auto u = static_cast<std::size_t>(i);
                point_[u] = rest % desc_.grid[u];
                rest /= desc_.grid[u];
            }
        }
        last_step_ = e.step;
        // Element by element: a whole-array copy right after the odometer's stores would stall
        // on store forwarding.
        // A nested pipeline's body reads the kernel's program ids and its own step with
        // pipeline_index (the inner grid point).
        auto& to = opt_.nested ? kctx_.inner_point : kctx_.point;
        for (int i = 0; i < desc_.grid_rank; ++i) to[static_cast<std::size_t>(i)] = point_[static_cast<std::size_t>(i)];
        kctx_.body_work = work{};
        kctx_.body_ops.clear();
        body_ops_ = 0;
        body_step_ = e.step;
        const detail::context_guard guard(kctx_);
        if (memo_on_) {
            run_memoized();
            // A step the skipped periods may repeat: its body's work is a kept leaf's, and its
            // events follow from its shape.
            clean_run_ = kept_ && sched_.last_shape() != 0 ? clean_run_ + 1 : 0;
        } else {
            body_(mem_);
        }
    }

    // ---- Body memo (timing-only runs) ---------------------------------------------------------
    // Without data, what a body charges can depend only on what it asks its context (program_id,
    // core_index, valid_extent, pipeline_index) and on scalar memory: a body is a function of
    // those, as in Pallas, where the body is traced once. So a body run that read no scalar memory
    // and did nothing but charge work (no DMA, semaphore op or inner pipeline) is kept in a tree of
    // its questions: each node asks one question, and its answer leads to the next question or to
    // the work charged. A later step whose answers reach a kept leaf charges that work without
    // running the body. The tree is checked against the body at the 1st, 2nd, 4th, 8th... reuse:
    // a body that charges other work than the leaf, or asks another question than an earlier run
    // with the same answers, depends on something else (host state) and is error K2.
    struct memo_node {
        detail::body_query q{};  // the question asked here (not a leaf)
        bool leaf = false;
        bool fresh = true;  // nothing learned yet
        work w{};           // a leaf: what the body charged
        std::vector<std::int32_t> next;  // by answer: the next node, -1 none yet
    };
    static constexpr std::size_t memo_max_nodes = 4096;  // beyond: the body runs
    static constexpr index_t memo_max_answer = 4096;     // a bigger answer: the body runs

    index_t answer(const detail::body_query& q) const {
        const auto a = static_cast<std::size_t>(q.a);
        switch (q.kind) {
            case detail::query_kind::program_id: return kctx_.point[a];
            case detail::query_kind::core: return kctx_.core;
            case detail::query_kind::valid_extent: return mem_.valid[a][static_cast<std::size_t>(q.b)];
            case detail::query_kind::pipeline_index: return kctx_.inner_point[a] + kctx_.inner_offset[a];
        }
        return -1;
    }
    // The leaf this step's answers lead to, or -1.
    std::int32_t memo_find() const {
        if (memo_.empty()) return -1;
        std::size_t n = 0;
        for (;;) {
            const memo_node& x = memo_[n];
            if (x.leaf) return static_cast<std::int32_t>(n);
            if (x.fresh) return -1;
            const index_t a = answer(x.q);
            if (a < 0 || a >= static_cast<index_t>(x.next.size()) || x.next[static_cast<std::size_t>(a)] < 0) return -1;
            n = static_cast<std::size_t>(x.next[static_cast<std::size_t>(a)]);
        }
    }
    // Follows the body run's questions `r` down the tree, growing it, to the leaf of work `w`.
    // False when the tree disagrees: another question than a run with the same answers asked,
    // or other work at the same leaf.
    bool memo_learn(const detail::body_reads& r, const work& w) {
        if (memo_.empty()) memo_.emplace_back();
        std::size_t n = 0;
        for (int i = 0;; ++i) {
            memo_node& x = memo_[n];
            if (x.fresh) {
                x.fresh = false;
                x.leaf = i == r.n;
                if (x.leaf) x.w = w;
                else x.q = r.q[static_cast<std::size_t>(i)];
                if (!x.leaf && x.q.kind == detail::query_kind::program_id) memo_axes_ |= 1u << x.q.a;
            }
            if (x.leaf) {
                kept_ = true;
                return i == r.n && x.w == w;
            }
            if (i == r.n || !x.q.same_question(r.q[static_cast<std::size_t>(i)])) return false;
            const index_t a = r.q[static_cast<std::size_t>(i)].answer;
            if (a < 0 || a >= memo_max_answer) return true;  // not kept: the body runs at such steps
            const auto ua = static_cast<std::size_t>(a);
            if (x.next.size() <= ua) x.next.resize(ua + 1, -1);
            if (x.next[ua] < 0) {
                if (memo_.size() >= memo_max_nodes) return true;
                x.next[ua] = static_cast<std::int32_t>(memo_.size());
                memo_.emplace_back();  // (x is not used after this)
            }
            n = static_cast<std::size_t>(memo_[n].next[ua]);
        }
    }
    void run_memoized() {
        const std::int32_t leaf = memo_find();
        kept_ = false;
        if (leaf >= 0) {
            if (++memo_hits_ != memo_check_at_) {
                kctx_.body_work = memo_[static_cast<std::size_t>(leaf)].w;
                kept_ = true;
                return;
            }
            memo_check_at_ *= 2;  // this reuse runs the body and checks the leaf
        }
        detail::body_reads r;
        const index_t dmas = kctx_.body_dma_count, sigs = kctx_.sem_signals, waits = kctx_.sem_waits,
                      inner = kctx_.inner_steps;
        const std::size_t pending = kctx_.pending.size();
        struct unset {
            kernel_context& k;
            ~unset() { k.reads = nullptr; }
        } const reset{kctx_};
        kctx_.reads = &r;
        body_(mem_);
        kctx_.reads = nullptr;
        const bool pure = !r.opaque && kctx_.body_ops.empty() && dmas == kctx_.body_dma_count &&
                          sigs == kctx_.sem_signals && waits == kctx_.sem_waits && inner == kctx_.inner_steps &&
                          pending == kctx_.pending.size();
        if ((leaf >= 0 && !pure) || (pure && !memo_learn(r, kctx_.body_work)))
            throw error("K2", "core " + std::to_string(core_) + ", step " + std::to_string(body_step_) + ": kernel body",
                        "in a timing-only run the body charged other work, or asked other questions, than at an "
                        "earlier step where program_id, core_index, valid_extent and pipeline_index gave the same "
                        "answers: timing-only runs run a body once per distinct set of answers (as Pallas traces "
                        "a body once), so what it charges may depend only on them and on scalar memory",
                        "make the body a function of its refs, program ids and scalar memory (no host state that "
                        "changes from step to step), or set run_options::memoize_body = false");
    }
    // The number of work w in the call's work table (op::work), counted into the total. Bodies
    // usually charge the same work every step: the last number is reused. The total is kept as
    // (last work, times charged in a row) and added up when the work changes (stats()), not
    // step by step.
    std::uint32_t work_number(const work& w) {
        if (!(w == last_work_)) {
            stats_.total_work += times(last_work_, last_work_n_);
            last_work_ = w;
            last_work_n_ = 0;
            last_number_ = opt_.works != nullptr ? opt_.works->number(w) : 0;
            work_room_ = work_room(stats_.total_work, w);
        }
        // C1 at the step whose work would make the total overflow (the report's sum would).
        if (++last_work_n_ > work_room_) detail::work_overflow(kctx_, "the work charged up to this step");
        return last_number_;
    }
    // How many times w can be added to `total` before a field overflows a double.
    static index_t work_room(const work& total, const work& w) {
        const auto t = detail::work_fields(total), f = detail::work_fields(w);
        double room = 9e18;  // about index_t's largest
        for (std::size_t i = 0; i < f.size(); ++i)
            if (f[i] > 0) room = std::min(room, std::floor((std::numeric_limits<double>::max() - t[i]) / f[i]));
        return static_cast<index_t>(room);
    }
    static work times(const work& w, index_t n) { return w.scaled(static_cast<double>(n)); }
    // The body's ops so far: compute up to each of its own DMAs and semaphore ops, then the op
    // (a sync_copy is a start and its wait). Called when the body ends (emit_body) and when it
    // blocks in a semaphore wait (kernel_context::flush_ops).
    void flush_body_ops() {
        const std::uint32_t step = static_cast<std::uint32_t>(body_step_);
        cur_meta_ = op_meta{event_kind::body, 0, 0, false};
        for (const body_op_record& r : kctx_.body_ops) {
            ++body_ops_;
            if (r.kind != body_op_kind::stream_op || !(r.before == work{}))
                emit(stream::op_kind::compute, 0, work_number(r.before), 0, true, 0, step);
            switch (r.kind) {
                case body_op_kind::stream_op: {  // an inner pipeline's op: its DMA gets an id here
                    const stream::op& o = r.op;
                    std::uint32_t id = 0;
                    if (o.kind == stream::op_kind::dma_start && o.sem == 0) {
                        id = next_id_++;
                        if (body_ids_.size() <= r.seq) body_ids_.resize(r.seq + 1, 0);
                        body_ids_[r.seq] = id;
                        if (opt_.notes) labels_.push_back(o.label);
                        cur_meta_.start = true;
                    } else if (o.kind == stream::op_kind::dma_wait) {
                        id = r.seq < body_ids_.size() ? body_ids_[r.seq] : 0;
                    }
                    emit(o.kind, id, o.work, o.bytes, o.far, o.label, step);
                    cur_meta_.start = false;
                    stream::op& out = ops_[n_out_ - 1];
                    out.sem = o.sem;
                    out.core = o.core;
                    out.dma_sem = o.dma_sem;
                    out.run = o.run;
                    if (r.begins) {  // a new invocation: the body's first, or its next
                        inner_call_ = inner_body_ == body_step_ ? inner_call_ + 1 : 0;
                        inner_body_ = body_step_;
                    }
                    out.sub = inner_sub(inner_call_, o.step, r.inputs);
                    // An inner pipeline's operands are not the call's (body DMA time for it), but
                    // those of the op's inner row (op::who past max_operands): the inner runner's
                    // own operand, or a deeper one's as that runner marked it.
                    std::uint8_t who = o.who;
                    if (o.sub != 0) {  // a deeper pipeline's
                        out.sub = nested_sub(out.sub, r.rows_base, o.sub);
                        const std::size_t at = std::size_t{r.rows_base} + o.sub - 1;
                        if (out.sub == 0 || at >= kctx_.nested_rows.size() ||
                            inner_rows_[out.sub - 1u].depth != kctx_.nested_rows[at].depth)
                            who = 0;  // (past max_inner_rows: no row of its own, its waits are body copies)
                    } else if (who != 0 && who <= max_operands) {
                        who = static_cast<std::uint8_t>(who + max_operands);
                    }
                    out.who = out.sub != 0 && who <= 2 * max_operands ? who : 0;
                    break;
                }
                case body_op_kind::sync_dma:
                case body_op_kind::async_dma: {
                    const bool async = r.kind == body_op_kind::async_dma;
                    const std::uint32_t id = next_id_++;
                    const std::uint32_t label = body_note(async ? stream::copy_kind::body_async : stream::copy_kind::body);
                    if (opt_.notes) labels_.push_back(label);
                    cur_meta_.start = true;
                    emit(stream::op_kind::dma_start, id, 0, r.amount, r.far, label, step);
                    ops_[n_out_ - 1].run = r.run;
                    cur_meta_.start = false;
                    if (async)
                        ops_[n_out_ - 1].sem = r.sem;  // waited through its semaphore
                    else
                        wait(id, step);
                    break;
                }
                case body_op_kind::signal:
                case body_op_kind::wait: {
                    const bool sig = r.kind == body_op_kind::signal;
                    emit(sig ? stream::op_kind::sem_signal : stream::op_kind::sem_wait, 0, 0, r.amount, true, 0, step);
                    stream::op& o = ops_[n_out_ - 1];
                    o.sem = r.sem;
                    o.core = r.core;
                    o.dma_sem = r.dma_sem;
                    break;
                }
            }
        }
        kctx_.body_ops.clear();
    }
    // The inner row (op::sub) of step `step` of the body's `call`-th pipeline: numbered on first
    // sight, so that every outer step running the same pipelines gives its ops the same rows.
    std::uint16_t inner_sub(std::uint32_t call, std::uint32_t step, std::uint8_t inputs) {
        if (inner_by_call_.size() <= call) inner_by_call_.resize(call + 1);
        std::vector<std::uint16_t>& v = inner_by_call_[call];
        if (v.size() <= step) v.resize(static_cast<std::size_t>(step) + 1, 0);
        std::uint16_t& k = v[step];
        if (k == 0 && inner_rows_.size() < stream::max_inner_rows) {
            inner_rows_.push_back({call, step, static_cast<std::uint8_t>(opt_.pipeline + 1), inputs, 0});
            k = static_cast<std::uint16_t>(inner_rows_.size());
        }
        return k;  // 0 past max_inner_rows: the step counts in its outer row only
    }
    // The inner row, under this runner's row `top` (the inner step whose body ran it), of a deeper
    // pipeline's step: row `k` of the inner runner whose rows start at kctx_.nested_rows[base].
    // Numbered on first sight by (parent, call, step), its parents first. Past max_inner_rows the
    // op counts in the deepest row numbered.
    std::uint16_t nested_sub(std::uint16_t top, std::uint32_t base, std::uint16_t k) {
        if (top == 0) return 0;
        const std::size_t at = static_cast<std::size_t>(base) + k - 1;
        if (at >= kctx_.nested_rows.size()) return top;  // (cannot happen: hand_on copies rows first)
        if (at == nested_last_at_ && top == nested_last_top_) return nested_last_;  // ops of one step in a row
        const stream::inner_row e = kctx_.nested_rows[at];
        const std::uint16_t parent = e.parent == 0 ? top : nested_sub(top, base, e.parent);
        if (parent == 0) return 0;
        std::uint16_t& n = nested_by_[{parent, e.call, e.step}];
        if (n == 0 && inner_rows_.size() < stream::max_inner_rows) {
            inner_rows_.push_back({e.call, e.step, e.depth, e.inputs, parent});
            n = static_cast<std::uint16_t>(inner_rows_.size());
        }
        const std::uint16_t sub = n != 0 ? n : parent;
        nested_last_at_ = at, nested_last_top_ = top, nested_last_ = sub;
        return sub;
    }
    std::uint32_t body_note(stream::copy_kind k) {
        if (!opt_.notes || notes_ == nullptr) return 0;
        dma_note n{k, static_cast<std::uint8_t>(core_), 0, 0, opt_.pipeline, static_cast<std::uint32_t>(body_step_), {}};
        notes_->push_back(n);
        return static_cast<std::uint32_t>(notes_->size() - 1);
    }
    // The body's ops: those it recorded, then the compute after the last of them.
    void emit_body(const event& e) {
        flush_body_ops();
        cur_meta_ = op_meta{event_kind::body, 0, 0, false};
        emit(stream::op_kind::compute, 0, work_number(kctx_.body_work), 0, true, 0, e.step);
    }

    const pipeline_desc& desc_;
    const plan_tables& tables_;
    int core_;
    const block_fn* maps_;
    const void* ctx_;
    std::array<void*, max_operands> hbm_;
    core_memory& mem_;
    kernel_context& kctx_;
    body_call body_;
    runner_options opt_;
    std::vector<dma_note>* notes_;
    core_schedule sched_;
    std::array<bool, max_operands> move_{};
    std::array<index_t, max_operands> uniform_bytes_{};
    std::array<std::uint16_t, max_operands> run_{};  // stream::op::run of the operand's whole blocks
    std::uint16_t next_run_ = 0;  // the run of the DMA move() just sized (dma_start's)

    // The contiguous run of an operand's nominal block in its row-major array (stream::op::run):
    // the trailing dims the block spans whole, times the first it cuts; 0 when the block is one
    // run or its runs reach 64 KiB (docs/model.md, "DMA shape costs").
    static std::uint16_t run_of(const operand_desc& o) {
        index_t run = itemsize(o.type);
        for (int d = o.rank - 1; d >= 0; --d) {
            const auto u = static_cast<std::size_t>(d);
            const index_t n = o.shape[u];
            const index_t b = o.full_block ? n : std::min(o.block[u].size, n);
            run *= b;
            if (b < n) {
                for (int e = d - 1; e >= 0; --e)  // more than one run?
                    if (o.block[static_cast<std::size_t>(e)].size > 1)
                        return run < 65536 ? static_cast<std::uint16_t>(run) : 0;
                return 0;
            }
        }
        return 0;
    }
    work last_work_{};
    index_t last_work_n_ = 0;  // times last_work_ was charged since it was last added to the total
    index_t work_room_ = std::numeric_limits<index_t>::max();  // the most last_work_n_ may reach (C1)
    std::uint32_t last_number_ = 0;  // last_work_'s number (op::work)
    std::vector<stream::op> ops_;  // the ops of the current step (the batch)
    std::size_t n_out_ = 0;        // the size of the batch being made
    std::size_t n_batch_ = 0;      // the size of the last batch
    std::size_t first_ = 0;        // the batch's first op not yet handed out (take_partial)
    index_t body_ops_ = 0;         // ops the running body has recorded (none: it may repeat)
    index_t body_step_ = 0;        // the running body's grid step
    std::vector<std::uint32_t> body_ids_;  // the running body's inner-pipeline DMAs: their ids
    std::vector<stream::inner_row> inner_rows_;  // what each inner row (op::sub - 1) is
    std::vector<std::vector<std::uint16_t>> inner_by_call_;  // [call][step] -> op::sub (0: none yet)
    std::uint32_t inner_call_ = 0;  // the running body's pipeline invocation, counted from 0
    // Rows of deeper pipelines: (parent row, call, step) -> op::sub, and the last one looked up.
    std::map<std::tuple<std::uint16_t, std::uint32_t, std::uint32_t>, std::uint16_t> nested_by_;
    std::size_t nested_last_at_ = static_cast<std::size_t>(-1);
    std::uint16_t nested_last_top_ = 0, nested_last_ = 0;
    index_t inner_body_ = -1;       // the step of the body inner_call_ counts in
    std::vector<op_meta> meta_;    // what made each op of the batch
    op_meta cur_meta_{};
    mutable repeat_state rep_{};
    index_t stale_ = 0;  // steps made since the batch's ops were written
    event body_event_{};
    std::array<index_t, max_rank> point_{};  // the last body's grid point
    index_t last_step_ = -2;                 // and step
    bool repeat_on_ = false;                 // timing-only, no operand moves data, no notes
    bool any_valid_ = false;                 // some window's valid part varies (set_valid)
    step_events events_{};
    std::uint32_t next_id_ = 0;
    index_t repeated_ = 0;
    std::uint32_t in_flight_in_[max_operands][max_buffers]{};
    std::uint32_t in_flight_out_[max_operands][max_buffers]{};
    mutable run_stats stats_{};  // (stats() adds what flush() has not)
    std::vector<std::uint32_t> labels_;  // DMA id → label (notes on)
    std::vector<memo_node> memo_;        // the body memo's tree (memo_[0] its root)
    bool memo_on_ = false;
    std::uint32_t memo_axes_ = 0;        // the grid axes whose program_id a kept node asks
    bool skip_ok_ = false;               // skip_periods() may skip (timing-only, memo, no notes)
    index_t clean_run_ = 0;              // steps in a row whose body a kept leaf answered
    bool kept_ = false;                  // the last body's work is (now) a kept leaf's
    index_t skipped_steps_ = 0;
    period_mark mark_{};
    index_t memo_hits_ = 0;              // reuses of a kept leaf
    index_t memo_check_at_ = 1;          // the next reuse that runs the body to check the leaf
};

using runner = basic_runner<>;

}  // namespace ptpu
