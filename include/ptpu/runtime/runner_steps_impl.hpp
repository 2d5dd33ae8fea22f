// Defines the runner's steps: its batches of ops, the DMAs of each event, repeated steps (patched
// and spliced copies of the last one) and skipped periods (runtime/runner.hpp declares them).
#pragma once

#include "ptpu/runtime/runner.hpp"

namespace ptpu {

inline auto runner::next_batch(bool lazy) -> stream::batch {
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

inline auto runner::copy_of(event_kind k) -> stream::copy_kind {
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

inline auto runner::note(const event& e, event_kind k) -> std::uint32_t {
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

inline auto runner::add_dmas(run_stats& to, const run_stats& now, const run_stats& before, index_t m) const
    -> void {
    to.dma_in += m * (now.dma_in - before.dma_in);
    to.dma_out += m * (now.dma_out - before.dma_out);
    to.bytes_in += m * (now.bytes_in - before.bytes_in);
    to.bytes_out += m * (now.bytes_out - before.bytes_out);
    for (std::size_t i = 0; i < static_cast<std::size_t>(desc_.n_ops()); ++i) {
        to.op_dmas[i] += m * (now.op_dmas[i] - before.op_dmas[i]);
        to.op_bytes[i] += m * (now.op_bytes[i] - before.op_bytes[i]);
    }
}

inline auto runner::remember(const run_stats& before) -> void {
    repeat_state& r = rep_;
    const std::uint64_t shape = sched_.last_shape();
    r.same = (shape != 0 && shape == r.shape) ? r.same + 1 : 1;
    r.shape = shape;
    r.usable = false;
    if (r.same == 1) {  // a new run: its first step's first DMA (none started: the next id)
        r.run_first = next_id_;
        for (std::size_t k = 0; k < n_out_; ++k)
            if (meta_[k].start) r.run_first = std::min(r.run_first, ops_[k].dma);
    }
    // (The body's ops: none, or nothing but one kept inner-pipeline invocation.)
    r.replay =
        body_ops_ > 0 && body_replay_ != nullptr && body_ops_ == body_replay_ops_ ? body_replay_ : nullptr;
    if (!repeat_on_ || shape == 0 || (body_ops_ > 0 && r.replay == nullptr)) return;
    r.starts = 0;
    int computes = 0;
    bool waits_within_run = true;
    r.body_from = n_out_;
    for (std::size_t k = 0; k < n_out_; ++k) {
        const op_meta& m = meta_[k];
        r.starts += m.start ? 1u : 0u;
        if (ops_[k].kind == stream::op_kind::repeat)  // the starts of the repetitions it stands for
            r.starts += ops_[k].dma * static_cast<std::uint32_t>(ops_[k].bytes);
        if (m.kind == event_kind::body) r.body_from = std::min(r.body_from, k);
        if (m.kind == event_kind::body && !m.inner) {
            r.body_at = k;
            ++computes;
        }
        if (ops_[k].kind == stream::op_kind::dma_wait && ops_[k].dma < r.run_first) waits_within_run = false;
    }
    r.usable = computes == 1 && waits_within_run;
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

inline auto runner::repeat() -> int {
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
    {
        // The batch still holds the last step's ops: an inner pipeline's ops stay records, which
        // finish_body() splices in.
        struct records_only {
            kernel_context& k;
            ~records_only() { k.inner_ops = take_inner_ops_of; }
        } const guard{kctx_};
        kctx_.inner_ops = note_replay_of;
        invoke_body(body_event_);
    }
    for (int k = 0; k < r.n_move_out; ++k) move_window(r.move_out[k]);
    // The body's ops must be the last step's: none, or the same kept invocation (noted).
    if (!kctx_.body_ops.empty()) {
        records_of_noted();
        return 0;
    }
    if (r.replay != nullptr && !noted_) return 0;  // finish_body() takes the invocation's ops out
    return work_number(kctx_.body_work) == ops_[r.body_at].work ? 1 : 0;
}

inline auto runner::patch(index_t m) -> void {
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

inline auto runner::splice(const event& body, std::size_t n) -> void {
    repeat_state& r = rep_;
    std::vector<stream::op> tail(ops_.begin() + static_cast<std::ptrdiff_t>(r.body_at + 1),
                                 ops_.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<op_meta> tail_meta(meta_.begin() + static_cast<std::ptrdiff_t>(r.body_at + 1),
                                   meta_.begin() + static_cast<std::ptrdiff_t>(n));
    // The ids advanced above counted the last step's body DMAs (a kept invocation's) and no
    // new ones: the body's DMAs and the tail's starts take the ids from the body's first on.
    next_id_ -= static_cast<std::uint32_t>(std::count_if(
        meta_.begin() + static_cast<std::ptrdiff_t>(r.body_from),
        meta_.begin() + static_cast<std::ptrdiff_t>(n), [](const op_meta& m) { return m.start; }));
    n_out_ = r.body_from;
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
        ops_[n_out_ - 1].waits_on = o.waits_on;
    }
    n_batch_ = n_out_;
    r.usable = false;  // the next step is made in full
    r.same = 0;
}

inline auto runner::dma_start(const event& e, index_t bytes) -> std::uint32_t {
    const std::uint32_t id = next_id_++;
    const std::uint32_t label = note(e, e.kind);
    if (opt_.notes) labels_.push_back(label);
    cur_meta_.start = true;
    emit(stream::op_kind::dma_start, id, 0, bytes, true, label, e.step);
    ops_[n_out_ - 1].run = next_run_;
    cur_meta_.start = false;
    return id;
}

inline auto runner::move(const event& e, bool in) -> index_t {
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

inline auto runner::edge_run(int i, const index_tuple<max_rank>& b) const -> std::uint16_t {
    const auto op = static_cast<std::size_t>(i);
    const operand_desc& o = desc_.ops[op];
    const std::array<index_t, max_rank> c =
        desc_.tiling ? tiled_dma_extent(o, b, tables_.info.ops[op].tile.data()) : region_of(o, b).count;
    return run_of_extent(o, c.data());
}

inline auto runner::set_valid(index_t step) -> void {
    for (int i = 0; i < desc_.n_ops(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (uniform_bytes_[u] >= 0 || !desc_.ops[u].windowed()) continue;
        const block_region r = region_of(desc_.ops[u], block_of(i, step));
        for (std::size_t d = 0; d < static_cast<std::size_t>(r.rank); ++d) mem_.valid[u][d] = r.count[d];
    }
}

inline auto runner::handle(const event& e) -> void {
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

inline auto runner::mark_period() -> void {
    flush();
    period_mark& k = mark_;
    k.set = true;
    k.at = sched_.counters_now();
    k.id = next_id_;
    k.stats = stats_;
    k.total = total_work_now();
    std::memcpy(k.in, in_flight_in_, sizeof k.in);
    std::memcpy(k.out, in_flight_out_, sizeof k.out);
    if (steady_on_) steady_.mark(kctx_, sched_.next_global_step());
}

inline auto runner::steady_steps(index_t p) const -> index_t {
    const index_t g = sched_.next_global_step();
    if (g - p < steady_from() || !steady_.repeats(kctx_, g, p)) return 0;
    // Before the period ahead of the last edge (the check after the stretch), and no longer than
    // the stretches so far (8 periods at first).
    const index_t room = steady_to() - p - g;
    return std::min(room, std::max(skipped_steps_, 8 * p));
}

inline auto runner::periods_to_skip(index_t p, std::uint32_t starts) const -> index_t {
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
    // checks the tree against the body (run_memoized), which a pulled period then runs. A
    // steady body is checked after each stretch ("Steady bodies").
    index_t n = steady_on_ ? steady_steps(p) : memo_check_at_ - memo_hits_ - 1;
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

inline auto runner::skip(index_t m) -> void {
    const period_mark& k = mark_;
    if (stale_ > 0) {  // the batch's ops first catch up with the steps made lazily
        patch(stale_);
        stale_ = 0;
    }
    flush();
    const core_schedule::counters before = sched_.counters_now();
    const core_schedule::counters& now_after_mark = before;  // the period's counters: mark to now
    const index_t n = m * (before.steps - k.at.steps);
    const auto dk = static_cast<std::uint32_t>(m * (next_id_ - k.id));
    sched_.skip_periods(k.at, m);
    next_id_ += dk;
    // Statistics: the period's, m times (the work as a whole: its runs cross the mark).
    const run_stats& a = k.stats;
    run_stats& s = stats_;
    s.steps += m * (s.steps - a.steps);
    for (std::size_t c = 0; c < max_cores; ++c) s.core_steps[c] += m * (s.core_steps[c] - a.core_steps[c]);
    add_dmas(s, run_stats(s), a, m);
    work dw = total_work_now();
    dw += times(k.total, -1);
    s.total_work += times(dw, m);
    if (!detail::finite_work(total_work_now()))
        detail::work_overflow(kctx_, "the work charged over the repeating periods up to this step");
    work_room_ = work_room(s.total_work, last_work_);
    // The DMA last started into each slot of a ring the periods refill is the one a whole number
    // of turns later, m periods on (periods_to_skip: the ring turns whole times in them, so each
    // slot's last DMA is the one of its place in the last turn, started as many periods later). A
    // slot of a ring the period does not refill keeps its DMA.
    for (int i = 0; i < desc_.n_ops(); ++i) {
        const bool in = now_after_mark.op[i].copy_in != k.at.op[i].copy_in;
        const bool out = now_after_mark.op[i].copy_out != k.at.op[i].copy_out;
        for (std::size_t b = 0; b < max_buffers; ++b) {
            if (in || in_flight_in_[i][b] != k.in[i][b]) in_flight_in_[i][b] += dk;
            if (out || in_flight_out_[i][b] != k.out[i][b]) in_flight_out_[i][b] += dk;
        }
    }
    // The batch holds the last step's ops: now those of the step n on.
    const auto g = static_cast<std::uint32_t>(sched_.next_global_step() - 1);
    for (std::size_t j = 0; j < n_batch_; ++j) {
        stream::op& o = ops_[j];
        o.step = g;
        if (o.kind == stream::op_kind::dma_start || o.kind == stream::op_kind::dma_wait) o.dma += dk;
    }
    if (steady_on_) steady_.skipped(kctx_, m, n);
    repeated_ += n;
    skipped_steps_ += n;
    memo_hits_ += n;  // a reuse each, all before the next check (periods_to_skip)
    last_step_ = -2;  // the next body's grid point is divided out
}

}  // namespace ptpu
