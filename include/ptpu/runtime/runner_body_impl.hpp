// Defines the runner's bodies: race detection of body copies, invoking a body, the body memo of
// timing-only runs, and the ops a body's work and copies become (runtime/runner.hpp declares
// them).
#pragma once

#include "ptpu/runtime/runner.hpp"

namespace ptpu {

inline auto runner::race_start(const event& e, bool in, bool async) -> void {
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

inline auto runner::invoke_body(const event& e) -> void {
    ++stats_.steps;
    ++stats_.core_steps[e.core];
    kctx_.step = e.step;
    kctx_.body_seq = 0;
    kctx_.pipelines_run = 0;
    kctx_.nested_rows.clear();
    nested_last_at_ = static_cast<std::size_t>(-1);
    kctx_.valid = &mem_.valid;
    body_ids_.clear();
    body_replay_ = nullptr;
    noted_ = false;
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
    } else if (steady_on_) {
        run_steady();
    } else {
        body_(mem_);
    }
}

inline auto runner::answer(const detail::body_query& q) const -> index_t {
    const auto a = static_cast<std::size_t>(q.a);
    switch (q.kind) {
        case detail::query_kind::program_id: return kctx_.point[a];
        case detail::query_kind::core: return kctx_.core;
        case detail::query_kind::valid_extent: return mem_.valid[a][static_cast<std::size_t>(q.b)];
        case detail::query_kind::pipeline_index: return kctx_.inner_point[a] + kctx_.inner_offset[a];
    }
    return -1;
}

inline auto runner::memo_find() const -> std::int32_t {
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

inline auto runner::memo_learn(const detail::body_reads& r, const work& w) -> bool {
    if (memo_.empty()) memo_.emplace_back();
    std::size_t n = 0;
    for (int i = 0;; ++i) {
        memo_node& x = memo_[n];
        if (x.fresh) {
            x.fresh = false;
            x.leaf = i == r.n;
            if (x.leaf) x.w = w;
            else x.q = r.q[static_cast<std::size_t>(i)];
            // The runner's grid axes the body asks: a nested pipeline's body asks its own step
            // with pipeline_index (its program ids are the kernel's, fixed while it runs).
            const detail::query_kind own =
                opt_.nested ? detail::query_kind::pipeline_index : detail::query_kind::program_id;
            if (!x.leaf && x.q.kind == own) memo_axes_ |= 1u << x.q.a;
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

inline auto runner::run_memoized() -> void {
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
    // Whoever recorded the body's questions before (an inner invocation kept by the enclosing
    // body's memo, call/emit_pipeline_impl.hpp) records them again afterwards, these included.
    const reads_scope reset{kctx_, &r};
    body_(mem_);
    kctx_.reads = reset.was;
    if (reset.was != nullptr) {
        reset.was->opaque = reset.was->opaque || r.opaque;
        for (int i = 0; i < r.n; ++i) {
            const detail::body_query& x = r.q[static_cast<std::size_t>(i)];
            reset.was->note(x.kind, x.a, x.b, x.answer);
        }
    }
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

inline auto runner::run_steady() -> void {
    detail::body_reads r;
    const index_t inner = kctx_.inner_steps;
    const reads_scope reset{kctx_, &r};
    body_(mem_);
    // (An inner pipeline's ops may come as records or straight into the batch: either counts.)
    bool steady = !r.opaque && inner == kctx_.inner_steps && kctx_.pipelines_run == 0;
    for (const body_op_record& o : kctx_.body_ops) steady = steady && o.kind != body_op_kind::stream_op;
    for (const pending_dma& d : kctx_.pending) steady = steady && !d.move;
    clean_run_ = steady && sched_.last_shape() != 0 ? clean_run_ + 1 : 0;
    if (!steady) {
        steady_.lose();
        return;
    }
    const std::span<const body_op_record> ops{kctx_.body_ops};
    if (!steady_.check(ops, kctx_.body_work) && body_step_ >= steady_from() && body_step_ < steady_to())
        throw error(
            "K4",
            (kctx_.cores > 1 ? "core " + std::to_string(core_) + ", " : std::string()) + "step " +
                std::to_string(body_step_) + ": kernel body",
            "run_options::steady_body declares the body steady, but its copies, semaphore ops or "
            "charges here differ from those of the step a whole number of periods before (the "
            "period from step " +
                std::to_string(steady_.expected_from()) +
                " on, which the steps skipped since repeated): the steps skipped may have differed too",
            "declare wider edges (body_edges{.first, .last}) if the body differs only near the ends of "
            "each core's part of the grid, or leave steady_body unset to run the body at every step");
    steady_.record(ops, kctx_.body_work);
}

inline auto runner::work_number(const work& w, bool pass_none) -> std::uint32_t {
    if (pass_none && w.empty()) return 0;
    if (!same_bytes(w, last_work_) && !(w == last_work_)) {
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

inline auto runner::flush_body_ops() -> void {
    const std::uint32_t step = static_cast<std::uint32_t>(body_step_);
    cur_meta_ = op_meta{event_kind::body, 0, 0, false};
    for (const body_op_record& r : kctx_.body_ops) {
        ++body_ops_;
        if (r.kind != body_op_kind::stream_op || !r.before.empty())
            emit(stream::op_kind::compute, 0, charged_number(r.before), 0, true, 0, step);
        switch (r.kind) {
            case body_op_kind::stream_op:
                if (r.op.kind == stream::op_kind::repeat)
                    begin_folded(r.op, r.begins, r.inputs, step);
                else
                    emit_inner_op(r.op, r.seq, r.begins, r.rows_base, r.inputs, step);
                break;
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

inline auto runner::emit_inner_op(const stream::op& o, std::uint32_t seq, bool begins,
                                  std::uint32_t rows_base, std::uint8_t inputs, std::uint32_t step) -> void {
    std::uint32_t id = 0;  // its DMA gets an id of this runner's here
    if (o.kind == stream::op_kind::dma_start && o.sem == 0) {
        id = next_id_++;
        note_body_ids(seq, id, 1);
        if (opt_.notes) labels_.push_back(o.label);
        cur_meta_.start = true;
    } else if (o.kind == stream::op_kind::dma_wait) {
        id = body_id(seq);
    }
    emit(o.kind, id, o.work, o.bytes, o.far, o.label, step);
    cur_meta_.start = false;
    stream::op& out = ops_[n_out_ - 1];
    out.sem = o.sem;
    out.core = o.core;
    out.dma_sem = o.dma_sem;
    out.run = o.run;
    if (begins) {  // a new invocation: the body's first, or its next
        inner_call_ = inner_body_ == body_step_ ? inner_call_ + 1 : 0;
        inner_body_ = body_step_;
    }
    out.sub = opt_.inner_rows ? inner_sub(inner_call_, o.step, inputs) : std::uint16_t{0};
    // An inner pipeline's operands are not the call's (body DMA time for it), but those of the
    // op's inner row (wait_pipeline::inner): the inner runner's own operand, or a deeper one's as
    // that runner marked it.
    stream::wait_target on = o.waits_on;
    if (o.sub != 0) {  // a deeper pipeline's
        out.sub = nested_sub(out.sub, rows_base, o.sub);
        const std::size_t at = std::size_t{rows_base} + o.sub - 1;
        if (out.sub == 0 || at >= kctx_.nested_rows.size() ||
            inner_rows_[out.sub - 1u].depth != kctx_.nested_rows[at].depth)
            on = {};  // (past max_inner_rows: no row of its own, its waits are body copies)
    } else if (on.pipeline == stream::wait_pipeline::own) {
        on.pipeline = stream::wait_pipeline::inner;
    }
    out.waits_on = out.sub != 0 ? on : stream::wait_target{};
    if (fold_.left > 0) [[unlikely]] {  // an op of a folded repetition
        if (fold_.unfold)
            fold_.kept.push_back({o, seq, rows_base, inputs});
        else if (!fold_.any && o.kind == stream::op_kind::dma_start && o.sem == 0)
            fold_.first_seq = seq, fold_.any = true;
        if (--fold_.left == 0) end_folded(step);
    }
}

inline auto runner::take_inner_ops(const inner_handover& h) -> void {
    flush_body_ops();  // the body's records so far come first
    const auto step = static_cast<std::uint32_t>(body_step_);
    const bool alone = h.replay != nullptr && body_ops_ == 0 && kctx_.body_work == work{};
    cur_meta_ = op_meta{event_kind::body, 0, 0, false, true};
    bool begins = h.begins;
    for (const stream::op& o : h.ops) {
        ++body_ops_;
        if (!(kctx_.body_work == work{})) {  // what the body charged before the pipeline
            emit(stream::op_kind::compute, 0, work_number(kctx_.body_work), 0, true, 0, step);
            kctx_.body_work = work{};
        }
        if (o.kind == stream::op_kind::repeat) {
            begin_folded(o, begins, h.inputs, step);
            continue;
        }
        emit_inner_op(o, h.seq + o.dma, begins, h.rows_base, h.inputs, step);
        begins = false;
    }
    body_replay_ = alone ? h.replay : nullptr;
    body_replay_ops_ = body_ops_;
    cur_meta_.inner = false;
}

inline auto runner::begin_folded(const stream::op& r, bool begins, std::uint8_t inputs, std::uint32_t step)
    -> void {
    fold_.left = r.sem;
    fold_.times = static_cast<std::uint32_t>(r.bytes);
    fold_.ids = r.dma;
    fold_.steps = r.sub;
    fold_.first_id = next_id_;
    fold_.first_seq = 0;
    fold_.any = false;
    fold_.kept.clear();
    // (A repeat op never begins an invocation: the steps it repeats follow others.)
    fold_.unfold = opt_.inner_rows && (begins || !number_folded_rows(r, inputs));
    if (fold_.unfold) return;
    emit(stream::op_kind::repeat, r.dma, 0, r.bytes, true, 0, step);
    ops_[n_out_ - 1].sem = r.sem;
    ops_[n_out_ - 1].sub = opt_.inner_rows ? static_cast<std::uint16_t>(r.sub) : std::uint16_t{0};
}

inline auto runner::number_folded_rows(const stream::op& r, std::uint8_t inputs) -> bool {
    // The repetition's steps are r.step ... r.step + p - 1 (p = r.sub), numbered here first as
    // their ops would number them; step r.step + j p + i of repetition j then has the row of
    // step r.step + i, j p higher (none past max_inner_rows), as the model makes it.
    const std::uint32_t p = r.sub;
    if (p == 0 || p > 64) return false;
    std::array<std::uint16_t, 64> first{};
    std::uint64_t low = stream::max_inner_rows + 1;  // the repetition's lowest row (none: past all)
    for (std::uint32_t i = 0; i < p; ++i) {
        first[i] = inner_sub(inner_call_, r.step + i, inputs);
        if (first[i] != 0) low = std::min<std::uint64_t>(low, first[i]);
    }
    for (std::uint64_t j = 1; j <= static_cast<std::uint64_t>(r.bytes); ++j) {
        const std::uint64_t from = r.step + j * p;
        // Past the last row numbered, and past the steps this invocation number has seen: the
        // rest have no rows either way (without numbering each).
        if (low + j * p > stream::max_inner_rows && inner_rows_.size() >= stream::max_inner_rows &&
            (inner_by_call_.size() <= inner_call_ || from >= inner_by_call_[inner_call_].size()))
            return true;
        for (std::uint32_t i = 0; i < p; ++i) {
            const std::uint64_t want = first[i] == 0 ? 0 : first[i] + j * p;
            const std::uint16_t k = inner_sub(inner_call_, static_cast<std::uint32_t>(from + i), inputs);
            if (k != (want <= stream::max_inner_rows ? want : 0)) return false;
        }
    }
    return true;
}

inline auto runner::end_folded(std::uint32_t step) -> void {
    folding& f = fold_;
    if (f.unfold) {
        // Each repetition's ops again, DMA numbers and inner steps advanced: numbered and given
        // rows as the inner steps they stand for.
        std::vector<folded_op> kept = std::move(f.kept);
        f.kept = {};
        f.unfold = false;
        for (std::uint32_t j = 1; j <= f.times; ++j)
            for (const folded_op& h : kept) {
                stream::op x = h.o;
                if (x.kind == stream::op_kind::dma_start || x.kind == stream::op_kind::dma_wait)
                    x.dma += j * f.ids;
                x.step += j * f.steps;
                emit_inner_op(x, h.seq + j * f.ids, false, h.rows_base, h.inputs, step);
            }
        kept.clear();
        f.kept = std::move(kept);  // (its memory, for the next)
        return;
    }
    // The repetition's DMAs took this runner's ids in the inner runner's order: the ids of the
    // repetitions folded after it follow from them, as the inner runner's follow from its own.
    if (f.any) note_body_ids(f.first_seq + f.ids, f.first_id + f.ids, f.ids * f.times);
    next_id_ += f.ids * f.times;
}

inline auto runner::inner_sub(std::uint32_t call, std::uint32_t step, std::uint8_t inputs) -> std::uint16_t {
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

inline auto runner::nested_sub(std::uint16_t top, std::uint32_t base, std::uint16_t k) -> std::uint16_t {
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

inline auto runner::run_of(const operand_desc& o) -> std::uint16_t {
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

}  // namespace ptpu
