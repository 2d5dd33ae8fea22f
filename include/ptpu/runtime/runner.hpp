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

#include "ptpu/core/reuse.hpp"
#include "ptpu/runtime/arena.hpp"
#include "ptpu/runtime/body.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/dma.hpp"
#include "ptpu/runtime/steady_body.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu {

/// One pipeline on one core: the schedule's events become data movement, body runs and ops.
class runner {
public:
    /// Core `core` of the pipeline `desc` analyzed as `tables` (change bits from pass 1); `maps`
    /// and `ctx` give block indices (for copies and labels); `hbm[i]` is operand i's array; the
    /// windows live in `mem`; the body reads `kctx`; `notes`, when options().notes, collects
    /// what each DMA label means (shared by the runners of one call, so labels stay unique).
    runner(const pipeline_desc& desc, const plan_tables& tables, int core, const block_fn* maps,
           const void* ctx, const std::array<void*, max_operands>& hbm, core_memory& mem,
           kernel_context& kctx, body_call body, const runner_options& opt, std::vector<dma_note>* notes)
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
        kctx_.flush_ops = [](void* self) { static_cast<runner*>(self)->flush_body_ops(); };
        kctx_.flush_self = this;
        kctx_.inner_ops = take_inner_ops_of;
        kctx_.notes = opt.notes ? notes : nullptr;
        // (Race detection follows every DMA's start and wait: no step is made from another's ops.)
        repeat_on_ = opt.timing_only && !opt.notes && !opt.semaphores && !kctx.detect_races;
        // (Race detection checks each body's accesses; a body that may block is run each step.)
        memo_on_ = opt.memoize_body && opt.timing_only && !opt.semaphores && !kctx.detect_races;
        for (int i = 0; i < desc.n_ops(); ++i)
            repeat_on_ = repeat_on_ && !move_[static_cast<std::size_t>(i)] &&
                         uniform_bytes_[static_cast<std::size_t>(i)] >= 0;
        skip_ok_ = repeat_on_ && memo_on_ && (!opt.nested || opt.fold_repeats) && opt.trace == nullptr &&
                   !sched_.has_prefetched();
        // A steady body (run_options::steady_body) is skipped by its ops, not by the memo.
        steady_allowed_ = opt.timing_only && !opt.nested && !opt.notes && !kctx.detect_races &&
                          opt.trace == nullptr && !sched_.has_prefetched();
        for (int i = 0; i < desc.n_ops(); ++i)
            steady_allowed_ = steady_allowed_ && !move_[static_cast<std::size_t>(i)] &&
                              uniform_bytes_[static_cast<std::size_t>(i)] >= 0;
        steady_on_ = opt.steady && steady_allowed_;
        if (steady_on_) {
            memo_on_ = false;
            skip_ok_ = true;
        }
        // The batch's storage: the last runner's on this thread (emit() overwrites what it reads).
        ops_ = detail::take_buffer<stream::op>();
        meta_ = detail::take_buffer<op_meta>();
        meta_.resize(ops_.size());
        body_ids_ = detail::take_empty_buffer<id_run>();
    }
    ~runner() {
        detail::put_buffer(ops_);
        detail::put_buffer(meta_);
        detail::put_buffer(body_ids_);
    }
    runner(const runner&) = delete;
    runner& operator=(const runner&) = delete;

    /// The ops of the core's next grid step (running what the schedule says on the way: DMAs,
    /// the body); no ops once its stream has ended. With `lazy`, a step that repeats the last
    /// one (see "Repeated steps" below) is made without rewriting its ops: the batch says so and
    /// its ops are those of an earlier step.
    stream::batch next_batch(bool lazy = false);

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
    /// remembers where it is, to be asked again a period on (m = 0 only remembers). may_skip():
    /// whether it may skip at all (a timing-only run with the body memo, and so on).
    [[nodiscard]] bool may_skip() const { return skip_ok_; }
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

    /// Whether this run would skip periods of a body declared steady (run_options::steady_body):
    /// timing-only, no timeline, trace or race detection, no prefetched first windows, and every
    /// operand's blocks of one size.
    [[nodiscard]] bool steady_allowed() const { return steady_allowed_; }

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
    static stream::copy_kind copy_of(event_kind k);
    // Labels index the shared notes (0 when notes are off). A DMA's wait carries its start's
    // label, so the timeline can name both.
    std::uint32_t note(const event& e, event_kind k);
    std::uint32_t label_of(std::uint32_t id) const { return id < labels_.size() ? labels_[id] : 0; }

    // ---- Repeated steps ------------------------------------------------------------------------
    // A timing-only run that moves no data spends most of its time making the same ops step after
    // step. Once the core has made two consecutive steps of the same shape (basic_schedule::shape)
    // with no DMA of the body, a third of that shape is made from the last one's ops: the same
    // ops with DMA ids advanced by its number of starts (the DMAs it waits on are those of the
    // step before, which had the same shape), window slots advanced as the schedule's counters,
    // and the body's compute time. The body still runs; if it issues DMAs this time, they are
    // spliced in and the next step is made in full again. A body whose only ops were an inner
    // pipeline handed on from the invocation memo (call/emit_pipeline_impl.hpp) counts as one
    // without DMAs when the next step's body hands on the same kept invocation: its ops are the
    // last step's, their DMA ids advanced with the rest.

    struct op_meta {
        event_kind kind = event_kind::step;  // the event that made the op
        std::uint8_t op = 0;
        std::uint8_t slot = 0;
        bool start = false;  // a DMA start (else a wait, or no DMA)
        bool inner = false;  // an inner pipeline's op (kind: body)
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
        // The first DMA id started by the first step of the run of steps of that shape: a step's
        // ops advanced by `starts` wait on the right DMAs only if each DMA it waits on was started
        // within the run (a deep window's first waits are the prologue's, numbered one by one).
        std::uint32_t run_first = 0;
        std::size_t body_at = 0;  // index of the body's compute op
        // The body's first op: body_at, or the first op of the kept inner-pipeline invocation the
        // body's ops were otherwise made of (replay), which a repeat hands on again unchanged.
        std::size_t body_from = 0;
        const void* replay = nullptr;
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
    void add_dmas(run_stats& to, const run_stats& now, const run_stats& before, index_t m) const;

    // Records the step just made as the pattern of the next.
    void remember(const run_stats& before);

    void move_window(const window_move& mv) {
        const int bc = tables_.info.ops[mv.op].buffers;
        mem_.cur[mv.op] = (mem_.cur[mv.op] + mv.by) % bc;
    }

    // Makes the core's next step from its last one when it may (see above): -1 when it may not
    // (nothing done); else the step is made, its body run, and 1 when the body charged the same
    // work and issued no DMA (the step repeats the last one exactly), 0 otherwise (finish_body()
    // then writes the body's ops).
    int repeat();

    // Brings the batch's ops (those of the step m steps back, all with the same shape) to the
    // step just made: DMA ids advance by m times the step's starts, slots as the schedule's
    // counters, and the DMA tables learn the latest DMAs.
    void patch(index_t m);

    // repeat()'s kernel_context::inner_ops: the kept invocation the last step's body handed on,
    // handed on again first thing, is noted and not written; anything else becomes records.
    void note_replay(const inner_handover& h) {
        if (h.replay != nullptr && h.replay == rep_.replay && !noted_ && kctx_.body_ops.empty() &&
            kctx_.body_work == work{}) {
            noted_ = true;
            noted_h_ = h;
            return;
        }
        records_of_noted();
        detail::note_handover(kctx_, h);
    }
    static void note_replay_of(void* self, const inner_handover& h) {
        static_cast<runner*>(self)->note_replay(h);
    }
    // The noted invocation, as the first records of the body (other ops followed it).
    void records_of_noted() {
        if (!noted_) return;
        noted_ = false;
        std::vector<body_op_record> after = std::move(kctx_.body_ops);
        kctx_.body_ops.clear();
        const work charged = kctx_.body_work;
        kctx_.body_work = work{};
        detail::note_handover(kctx_, noted_h_);
        kctx_.body_ops.insert(kctx_.body_ops.end(), after.begin(), after.end());
        kctx_.body_work = charged;
    }

    // The body of a step made by repeat() charged another time or issued DMAs: its ops.
    void finish_body() {
        repeat_state& r = rep_;
        if (kctx_.body_ops.empty() && (r.replay == nullptr || noted_)) {
            ops_[r.body_at].work = last_number_;  // work_number() ran in repeat()
            return;
        }
        splice(body_event_, n_batch_);
    }

    // The body of a repeated step issued DMAs: its ops replace the single compute op, and the
    // starts after it (the writes) take the ids after the body's.
    void splice(const event& body, std::size_t n);

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
        o.waits_on = {};
        o.sem = 0;
        o.sub = 0;
        o.label = label;
        o.step = step;
        o.work = work;
    }
    // A pipeline DMA starts: returns its id.
    std::uint32_t dma_start(const event& e, index_t bytes);
    void wait(std::uint32_t id, std::uint32_t step) {
        emit(stream::op_kind::dma_wait, id, 0, 0, true, label_of(id), step);
    }
    // A pipeline wait: on operand e.op's DMA (op::waits_on, the per-operand exposed DMA).
    void wait(std::uint32_t id, const event& e) {
        wait(id, e.step);
        ops_[n_out_ - 1].waits_on = {stream::wait_pipeline::own, static_cast<std::uint8_t>(e.op)};
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
    index_t move(const event& e, bool in);

    // The run of a DMA moving less than its block (an edge block, S34/S35; a short slice, S38):
    // from the extents it copies, the tiled ones with the tiling option (docs/model.md, "DMA
    // shape costs"), so that its run count is that of the rows it really moves.
    std::uint16_t edge_run(int i, const index_tuple<max_rank>& b) const;
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
    void set_valid(index_t step);

    // One schedule event: does its work and appends its op(s), if it has a cost, to the batch.
    void handle(const event& e);

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

    void mark_period();

    // The periods of p steps (starting `starts` DMAs each) the runner may make in bulk now.
    index_t periods_to_skip(index_t p, std::uint32_t starts) const;

    // Makes m periods of the steps since the mark (periods_to_skip() said they repeat it).
    void skip(index_t m);

    // ---- Steady bodies (run_options::steady_body) ------------------------------------------
    // A body that issues copies or semaphore ops is run at every step: the body memo keeps only
    // runs that charge work, and its program ids differ at every step anyway. A body declared
    // steady is taken at its word: its ops at a step are those of the step a period before,
    // except over the declared edges. Once the model finds a period (as for any body), the
    // runner skips whole periods when the p steps since the mark each ran as a steady body (no
    // scalar memory read, no inner pipeline, no data moved) and the semaphores and the copies in
    // flight, relative to the step, are those of the mark (detail::steady_body): the stretch
    // then leaves everything as it found it, but the copies' steps and the bodies' counts. A
    // stretch covers no step of the edges, nor the period before the last edge, and is at most
    // as long as all stretches before it (8 periods at first): after each, the body runs a
    // period, which must make the ops of the period before the stretch (K4 if not, inside the
    // edges). So a body runs O(p log(steps)) times.
    void run_steady();
    [[nodiscard]] index_t steady_steps(index_t p) const;
    // The global steps between the edges, [from, to): the edges are at the ends of this core's
    // part of the grid (the whole grid on one core).
    [[nodiscard]] index_t steady_from() const {
        return tables_.info.core_begin[static_cast<std::size_t>(core_)] + opt_.steady_first;
    }
    [[nodiscard]] index_t steady_to() const {
        return tables_.info.core_end[static_cast<std::size_t>(core_)] - opt_.steady_last;
    }

    // ---- Race detection (run_options::detect_races, A13) ---------------------------------------
    // A pipeline DMA of window slot e.slot starts: into it (`in`) or out of it. A body's async
    // copy still in flight that the DMA would overwrite (into the slot: the copy reads or writes
    // it) or read mid-write (out of the slot: the copy writes it) is DMA3. An async DMA (`async`)
    // stays in flight until its wait: the body may not touch the slot meanwhile (DMA2, checked by
    // the body's accesses). A copy out to HBM writes it and a fetch reads it: the other core may race
    // either (MC2).
    void race_start(const event& e, bool in, bool async);
    void race_end(const event& e, bool in) {
        auto& v = kctx_.flights;
        for (std::size_t k = 0; k < v.size(); ++k)
            if (v[k].op == e.op && v[k].slot == e.slot && v[k].into == in && v[k].pipeline == opt_.pipeline) {
                v.erase(v.begin() + static_cast<std::ptrdiff_t>(k));
                return;
            }
    }

    void invoke_body(const event& e);

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

    index_t answer(const detail::body_query& q) const;
    // The leaf this step's answers lead to, or -1.
    std::int32_t memo_find() const;
    // Follows the body run's questions `r` down the tree, growing it, to the leaf of work `w`.
    // False when the tree disagrees: another question than a run with the same answers asked,
    // or other work at the same leaf.
    bool memo_learn(const detail::body_reads& r, const work& w);
    void run_memoized();
    // The body's questions go to `r` while it runs; the log they went to before comes back after
    // (even when the body throws).
    struct reads_scope {
        kernel_context& k;
        detail::body_reads* was;
        reads_scope(kernel_context& c, detail::body_reads* r) : k(c), was(c.reads) { c.reads = r; }
        ~reads_scope() { k.reads = was; }
        reads_scope(const reads_scope&) = delete;
        reads_scope& operator=(const reads_scope&) = delete;
    };
    // The number of work w in the call's work table (op::work), counted into the total. Bodies
    // usually charge the same work every step: the last number is reused. The total is kept as
    // (last work, times charged in a row) and added up when the work changes (stats()), not
    // step by step.
    // With `pass_none`, no work other than the last one is number 0 and adds nothing: the run of
    // equal works goes on past it (a body alternating some work with none between its copies
    // would otherwise end a run and look its work up each time).
    std::uint32_t work_number(const work& w, bool pass_none = false);
    std::uint32_t charged_number(const work& w) { return work_number(w, true); }
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
    void flush_body_ops();
    // An inner pipeline's op `o`, the body's DMA number `seq` among its inner DMAs (its start's),
    // into the batch: its DMA gets an id of this runner's, its row is numbered under this
    // runner's rows (inner_sub, nested_sub), its wait marked as an inner pipeline's.
    void emit_inner_op(const stream::op& o, std::uint32_t seq, bool begins, std::uint32_t rows_base,
                       std::uint8_t inputs, std::uint32_t step);
    // kernel_context::inner_ops: the body's records so far, what it charged before, then the ops.
    void take_inner_ops(const inner_handover& h);
    // A repeat op of an inner pipeline (op_kind::repeat) is handed on as it is, and so is the
    // repetition after it; once that has been, the DMAs of the repetitions it stands for are
    // numbered as the repetition's (end_folded). With inner rows, the folded steps' rows are
    // numbered then too, and must follow the repetition's as the model advances them (op::sub
    // `sub` higher each repetition); where they do not (rows numbered in another order by an
    // earlier outer step), the repetitions are handed on op by op instead ("unfolded").
    struct folded_op {
        stream::op o;
        std::uint32_t seq = 0, rows_base = 0;
        std::uint8_t inputs = 0;
    };
    struct folding {
        std::uint32_t left = 0;                     // ops of the repetition still to come
        std::uint32_t times = 0;                    // repetitions folded after it
        std::uint32_t ids = 0;                      // DMA ids per repetition
        std::uint32_t steps = 0;                    // inner steps per repetition
        std::uint32_t first_id = 0, first_seq = 0;  // its first DMA: this runner's id, the body's number
        bool any = false;
        bool unfold = false;          // handed on op by op: the repetition's ops are kept
        std::vector<folded_op> kept;  // (unfold)
    };
    void begin_folded(const stream::op& r, bool begins, std::uint8_t inputs, std::uint32_t step);
    // With inner rows: numbers the rows of the steps repeat op r stands for, and says whether
    // they follow those of its repetition, `r.sub` higher each time.
    bool number_folded_rows(const stream::op& r, std::uint8_t inputs);
    void end_folded(std::uint32_t step);
    folding fold_{};
    static void take_inner_ops_of(void* self, const inner_handover& h) {
        static_cast<runner*>(self)->take_inner_ops(h);
    }
    // The inner row (op::sub) of step `step` of the body's `call`-th pipeline: numbered on first
    // sight, so that every outer step running the same pipelines gives its ops the same rows.
    std::uint16_t inner_sub(std::uint32_t call, std::uint32_t step, std::uint8_t inputs);
    // The inner row, under this runner's row `top` (the inner step whose body ran it), of a deeper
    // pipeline's step: row `k` of the inner runner whose rows start at kctx_.nested_rows[base].
    // Numbered on first sight by (parent, call, step), its parents first. Past max_inner_rows the
    // op counts in the deepest row numbered.
    std::uint16_t nested_sub(std::uint16_t top, std::uint32_t base, std::uint16_t k);
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
        emit(stream::op_kind::compute, 0, charged_number(kctx_.body_work), 0, true, 0, e.step);
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
    static std::uint16_t run_of(const operand_desc& o);
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
    // The running body's inner-pipeline DMAs (by their number among the body's, `seq`): their
    // ids, as runs of consecutive numbers with consecutive ids (an invocation's DMAs, or a
    // folded repeat's, are one run: the memory stays that of the runs, not of the DMAs).
    struct id_run {
        std::uint32_t seq = 0, id = 0, n = 0;
    };
    std::vector<id_run> body_ids_;
    void note_body_ids(std::uint32_t seq, std::uint32_t id, std::uint32_t n) {
        if (!body_ids_.empty()) {
            id_run& r = body_ids_.back();
            if (r.seq + r.n == seq && r.id + r.n == id) {
                r.n += n;
                return;
            }
        }
        body_ids_.push_back({seq, id, n});
    }
    [[nodiscard]] std::uint32_t body_id(std::uint32_t seq) const {
        for (std::size_t k = body_ids_.size(); k-- > 0;) {  // (a wait's DMA is mostly recent)
            const id_run& r = body_ids_[k];
            if (seq - r.seq < r.n) return r.id + (seq - r.seq);
        }
        return 0;
    }
    // The kept invocation the running body's ops so far are exactly (else null), and how many.
    const void* body_replay_ = nullptr;
    index_t body_replay_ops_ = 0;
    bool noted_ = false;  // repeat(): the body handed on rep_.replay again (note_replay)
    inner_handover noted_h_{};
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
    bool steady_allowed_ = false;        // the run would skip a steady body's periods
    bool steady_on_ = false;             // run_options::steady_body, and the run allows it
    detail::steady_body steady_;
};

}  // namespace ptpu

// The larger members' definitions.
#include "ptpu/runtime/runner_body_impl.hpp"
#include "ptpu/runtime/runner_steps_impl.hpp"
