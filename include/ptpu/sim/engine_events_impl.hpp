// Defines the engine's pulling of ops, its cores' and DMA channels' events and its semaphores
// (sim/engine_class.hpp declares them).
#pragma once

#include "ptpu/sim/engine_class.hpp"

namespace ptpu::sim::detail {

template <class Source>
inline auto engine<Source>::run() -> result {
    for (;;) {
        // Only DMA events and new DMAs change the next DMA event (run_core updates it).
        if (dirty_) {
            find_next_event();
            dirty_ = false;
        }
        int c = -1;
        double tc = never;
        for (int k = 0; k < cores_; ++k) {
            if (st_.state[k] == core_state::ready && st_.t[k] < tc) {
                c = k;
                tc = st_.t[k];
            }
        }
        if (c >= 0 && tc < ev_t_) {
            run_core(c);
        } else if (ev_slot_ >= 0) {
            dirty_ = true;
            if (ev_finish_)
                finish(ev_slot_, ev_t_);
            else
                start_transfer(ev_slot_, ev_t_);
        } else {
            break;
        }
    }
    for (int k = 0; k < cores_; ++k)
        if (st_.state[k] == core_state::blocked) {  // on a semaphore: DMA waits always end
            stall& d = res_.deadlock;
            d.core = k;
            d.sem = st_.wait_sem[k];
            d.wanted = st_.wait_want[k];
            d.available = sem_value(k, st_.wait_sem[k]);
            d.step = st_.wait_step[k];
            d.label = st_.wait_label[k];
            break;
        }
    res_.device_time = st_.last_done;
    for (int k = 0; k < cores_; ++k) {
        res_.core_time[k] = st_.t[k];
        if (st_.t[k] > res_.device_time) res_.device_time = st_.t[k];
    }
    return std::move(res_);
}

template <class Source>
inline auto engine<Source>::find_next_event() -> void {
    double t = never;
    int slot = -1;
    bool fin = false;
    const auto consider = [&](int s, double ts, bool f) {
        if (slot < 0 || before(ts, at(s), t, at(slot))) {
            t = ts;
            slot = s;
            fin = f;
        }
    };
    for (int k = 0; k < cores_; ++k) {
        const slot_queue& q = st_.pending[k];
        if (!q.empty()) consider(q.front(), at(q.front()).ready, false);
    }
    for (int k = 0; k <= cores_; ++k) {  // HBM, then the cores' on-chip paths
        const channel& ch = st_.channels[static_cast<std::size_t>(k)];
        if (ch.first() >= 0) consider(ch.first(), ch.first_done(), true);
    }
    ev_t_ = t;
    ev_slot_ = slot;
    ev_finish_ = fin;
}

template <class Source>
inline auto engine<Source>::run_core(int c) -> void {
    // The other cores bound how far core c runs ahead: a ready core k at st_.t[k] cannot start a
    // DMA that reaches a channel before st_.t[k] + issue + latency (with semaphores, strict time
    // order: a signal must not reach a core behind its time). Core c runs while t < limit, or
    // t == limit when every core setting the limit lets it (a later core at the same time).
    core_feed& feed = feed_.of(c);
    const double slack = opt_.semaphores ? 0.0 : chip_.dma_issue_s + chip_.dma_latency_s;
    double limit = never;
    bool upto = false;
    core_set running;         // the cores whose streams have not ended
    std::uint32_t mask = 0;   // and as bits
    bool ended_quiet = true;  // no ended core's DMA into a semaphore is in flight
    bool folding = false;     // a core is within a repeat op
    for (int k = 0; k < cores_; ++k) {
        folding = folding || folds_.where(k) != 0;
        if (st_.state[k] == core_state::done) {
            if (!st_.sem_dmas[static_cast<std::size_t>(k)].empty()) ended_quiet = false;
        } else {
            running.at[static_cast<std::size_t>(running.n++)] = k;
            mask |= 1u << k;
        }
        if (k == c) continue;
        if (st_.state[k] != core_state::ready) continue;
        const double h = st_.t[k] + slack;
        const bool eq = c < k && h == st_.t[k];
        if (h < limit) {
            limit = h;
            upto = eq;
        } else if (h == limit) {
            upto = upto && eq;
        }
    }
    // The lane follows the running cores when no DMA of an ended stream still moves; more than
    // one of them outside folds (which follow one core). (Which steps signalling another core
    // a period may hold: lane_history::record.)
    const bool lane = ff_on_ && orphans_ == 0 && ended_quiet && (running.n == 1 || !folding);
    lane_.history().follow(lane, running, mask);
    // A fold skips its repetitions' periods itself when its core runs alone (not with a
    // timeline).
    const bool alone = lane && running.n == 1;
    double& t = st_.t[c];
    while (st_.state[c] == core_state::ready && t < ev_t_ && (t < limit || (upto && t == limit))) {
        if (lane_.holding()) [[unlikely]] {
            // Changes the times and the DMAs: back to run() for the next event.
            run_lane();
            return;
        }
        op o;
        bool pulled = false;
        // Within a repeat op: recording its first repetition (1), or making the others (2), which
        // no lane records (the repeat op stands for them).
        const std::uint8_t in_fold = folds_.where(c);
        const bool made = in_fold == 2;
        if (made) [[unlikely]] {
            if (!skip_.fold(folds_, c, o, alone && !opt_.timeline)) {
                dirty_ = true;  // the fold skipped periods: back to run() for the next event
                return;
            }
        } else {
            const auto took = feed_.next(c, feed, o);
            if (took == op_feed<Source>::took::ended) {
                end_stream(c);
                return;
            }
            pulled = took == op_feed<Source>::took::pulled;
        }
        if (lane && !made) [[unlikely]] {  // the lane records the op (or takes it over)
            if (lane_.begins_boundary(c, o) && at_boundary(o)) continue;  // the lane holds o
            // (The cut: o is the first op of a batch from the source; the other cores' batches
            // are cut there.)
            lane_.record(c, o, pulled && feed_.fresh(c));
        }
        if ((o.kind == op_kind::repeat) | (in_fold == 1)) [[unlikely]] {
            if (o.kind == op_kind::repeat) {
                folds_.begin(c, o);
                continue;
            }
            folds_.record(c, o);
        }
        ++res_.op_count;
        const std::uint64_t ord = st_.ord[c]++;  // the op's place in the core's stream
        step_times* row = nullptr;
        step_times* irow = nullptr;  // the op's inner row (op::sub), counted in row too
        if (opt_.per_step) {
            row = book_.row(0, c, o.step, 0, t);
            if (o.sub != 0) irow = book_.row(1, c, o.step, o.sub, t);
            book_.set_inner(c, irow != nullptr);
        }
        const double begin = t;
        bool woke = false;  // a signal ended another core's wait
        switch (o.kind) {
            case op_kind::overhead:
            case op_kind::compute: {
                const double busy = busy_seconds(o);
                t += busy;
                const bool ovh = o.kind == op_kind::overhead;
                (ovh ? res_.busy_overhead : res_.busy_compute)[c] += busy;
                if (row) (ovh ? row->overhead : row->compute) += busy;
                if (irow) (ovh ? irow->overhead : irow->compute) += busy;
                break;
            }
            case op_kind::dma_start:
                start_dma(c, o);
                if (row) row->issue += chip_.dma_issue_s;
                if (irow) irow->issue += chip_.dma_issue_s;
                break;
            case op_kind::dma_wait:
                wait_dma(c, o);
                break;
            case op_kind::sem_signal:
                woke = signal(c, o);
                break;
            case op_kind::sem_wait:
                wait_sem(c, o);
                break;
            default:
                throw error(
                    "SIM2", "simulate",
                    "an op has an unknown op_kind (" + std::to_string(static_cast<int>(o.kind)) + ")",
                    "use overhead, dma_start, dma_wait, compute, sem_signal or sem_wait");
        }
        if (row) row->end = t;
        if (irow) irow->end = t;
        if (opt_.timeline && ((o.kind != op_kind::dma_wait && o.kind != op_kind::sem_wait) || t > begin) &&
            o.kind != op_kind::sem_signal)
            spans_.push({c, span::track::stream, o.kind, o.label, o.step, o.dma, begin, t, 0, true}, ord);
        if (st_.state[c] == core_state::blocked) st_.wait_ord[c] = ord;
        // The core woken is ready at t, which the limit above did not know: back to run(), which
        // runs the earliest core (ties to the lower), so that core c does not run on past it.
        if (woke) [[unlikely]]
            return;
    }
}

template <class Source>
inline auto engine<Source>::check_sem(int c, const op& o) const -> void {
    if (!opt_.semaphores)
        throw error("SIM2", "simulate",
                    "core " + std::to_string(c) + " has a semaphore op but options::semaphores is off",
                    "set sim::options::semaphores for streams with semaphores");
    if (o.sem == 0 || o.sem >= stream::max_semaphores)
        throw error("SIM2", "simulate",
                    "core " + std::to_string(c) + " names semaphore " + std::to_string(o.sem) +
                        ", outside 1 .. " + std::to_string(stream::max_semaphores - 1),
                    "number semaphores from 1");
}

template <class Source>
inline auto engine<Source>::raise(int k, std::uint32_t sem, std::int64_t n, double t) -> void {
    std::int64_t& v = sem_at(k, sem);
    v += n;
    if (st_.state[k] != core_state::blocked || st_.wait_slot[k] >= 0 || st_.wait_sem[k] != sem ||
        v < st_.wait_want[k])
        return;
    v -= st_.wait_want[k];
    const double begin = st_.t[k];
    const double end = std::max(begin, t);
    st_.t[k] = end;
    st_.state[k] = core_state::ready;
    const bool dma = st_.wait_is_dma[k];
    (dma ? res_.wait_dma : res_.wait_sem)[k] += end - begin;
    if (opt_.per_step) {
        step_times& row = book_.current(k);
        (dma ? row.wait : row.sem_wait) += end - begin;
        row.end = end;
        if (step_times* in = book_.current_inner(k)) {
            (dma ? in->wait : in->sem_wait) += end - begin;
            in->end = end;
        }
    }
    if (opt_.timeline && end - begin > 1e-12 * end)  // (not a rounding error: see complete())
        spans_.push({k, span::track::stream, op_kind::sem_wait, st_.wait_label[k], st_.wait_step[k], sem,
                     begin, end, 0, dma},
                    st_.wait_ord[k]);
}

template <class Source>
inline auto engine<Source>::wait_sem(int c, const op& o) -> void {
    check_sem(c, o);
    if (o.bytes < 0)
        throw error("SIM2", "simulate",
                    "core " + std::to_string(c) + " waits for a negative amount (" + std::to_string(o.bytes) +
                        ") on semaphore " + std::to_string(o.sem),
                    "wait for a non-negative amount");
    std::int64_t& v = sem_at(c, o.sem);
    if (v >= o.bytes) {
        v -= o.bytes;
        return;
    }
    st_.state[c] = core_state::blocked;
    st_.wait_slot[c] = -1;
    st_.wait_sem[c] = o.sem;
    st_.wait_want[c] = o.bytes;
    st_.wait_is_dma[c] = o.dma_sem;
    st_.wait_label[c] = o.label;
    st_.wait_step[c] = o.step;
}

template <class Source>
inline auto engine<Source>::start_dma(int c, const op& o) -> void {
    if (o.bytes < 0)
        throw error("SIM2", "simulate",
                    "DMA " + std::to_string(o.dma) + " of core " + std::to_string(c) +
                        " moves a negative number of bytes (" + std::to_string(o.bytes) + ")",
                    "use bytes >= 0");
    if (o.sem != 0) check_sem(c, o);
    if (o.sem == 0 && st_.live[c].find(o.dma) >= 0)
        throw error("SIM1", "simulate",
                    "core " + std::to_string(c) + " starts DMA " + std::to_string(o.dma) +
                        " again while it is in flight (not yet waited); its semaphore would "
                        "count two completions (rule 39, docs/rules.md)",
                    "wait on a DMA before reusing its id");
    double& t = st_.t[c];
    t += chip_.dma_issue_s;
    res_.busy_issue[c] += chip_.dma_issue_s;
    ++res_.dma_count;
    ++st_.starts[c];
    (o.far ? res_.hbm_bytes : res_.onchip_bytes) += o.bytes;
    int s;
    if (st_.free_slots.empty()) {
        s = static_cast<int>(st_.dmas.size());
        st_.dmas.emplace_back();
    } else {
        s = st_.free_slots.back();
        st_.free_slots.pop_back();
    }
    live_dma& d = at(s);
    d.ready = t + chip_.dma_latency_s;
    d.tag = 0;
    d.begin = t;
    d.bytes = o.bytes;
    d.cost = o.far ? hbm_cost(o) : static_cast<double>(o.bytes);
    d.seq = st_.seq++;
    d.id = o.dma;
    d.label = o.label;
    d.step = o.step;
    d.sem = o.sem;
    d.ord = st_.ord[c] - 1;  // (run_core counted its op already)
    d.core = static_cast<std::uint8_t>(c);
    d.channel = static_cast<std::uint8_t>(o.far ? 0 : 1 + c);
    d.phase = dma_phase::latency;
    d.orphan = false;
    if (o.sem == 0)
        st_.live[c].push(o.dma, s);
    else
        st_.sem_dmas[c].push_back(s);
    st_.pending[c].push(s);
    if (ev_slot_ < 0 || before(d.ready, d, ev_t_, at(ev_slot_))) {
        ev_t_ = d.ready;
        ev_slot_ = s;
        ev_finish_ = false;
    }
}

template <class Source>
inline auto engine<Source>::wait_dma(int c, const op& o) -> void {
    const int k = st_.live[c].find(o.dma);
    if (k < 0)
        throw error("SIM1", "simulate",
                    "core " + std::to_string(c) + " waits on DMA " + std::to_string(o.dma) +
                        ", which it never started or already waited; on a TPU this "
                        "over-wait hangs (rule 39, docs/rules.md)",
                    "wait exactly once on each started DMA");
    const int s = st_.live[c].slot(k);
    if (at(s).phase == dma_phase::done) {
        st_.live[c].erase(k);
        st_.free_slots.push_back(s);
        return;
    }
    st_.state[c] = core_state::blocked;
    st_.wait_slot[c] = s;
    st_.wait_label[c] = o.label;
    st_.wait_step[c] = o.step;
    // An operand past max_operands names none: the wait counts as a body copy's.
    st_.wait_on[c] = o.waits_on.operand < max_operands ? o.waits_on : wait_target{};
}

template <class Source>
inline auto engine<Source>::end_stream(int c) -> void {
    folds_.check_end(c);
    st_.state[c] = core_state::done;
    for (const int s : st_.live[c].slots()) {
        ++res_.dangling_dmas;
        if (at(s).phase == dma_phase::done) {
            st_.free_slots.push_back(s);
        } else {
            at(s).orphan = true;
            ++orphans_;
        }
    }
    st_.live[c].clear();
}

template <class Source>
inline auto engine<Source>::start_transfer(int s, double t) -> void {
    live_dma& d = at(s);
    st_.pending[d.core].pop();  // it is the front: the earliest latency end of its core
    d.phase = dma_phase::transfer;
    if (d.bytes == 0) {
        complete(s, t);  // never joins a channel
        return;
    }
    d.tag = st_.channels[d.channel].arrive(s, d.cost, t, st_.dmas);
}

template <class Source>
inline auto engine<Source>::complete(int s, double t) -> void {
    live_dma& d = at(s);
    if (t > st_.last_done) st_.last_done = t;
    if (opt_.timeline)
        spans_.push({d.core, span::track::dma, op_kind::dma_start, d.label, d.step, d.id, d.begin, t, d.bytes,
                     d.channel == 0},
                    d.ord);
    const int c = d.core;
    if (d.sem != 0) {  // waited through its semaphore, which it raises by its bytes
        const std::uint32_t sem = d.sem;
        const std::int64_t bytes = d.bytes;
        std::vector<int>& v = st_.sem_dmas[static_cast<std::size_t>(c)];
        if (const auto it = std::find(v.begin(), v.end(), s); it != v.end())
            v.erase(it);  // (usually the first)
        st_.free_slots.push_back(s);
        raise(c, sem, bytes, t);
    } else if (d.orphan) {
        st_.free_slots.push_back(s);
        --orphans_;
    } else if (st_.state[c] == core_state::blocked && st_.wait_slot[c] == s) {
        const double begin = st_.t[c];
        st_.t[c] = t;
        st_.state[c] = core_state::ready;
        res_.wait_dma[c] += t - begin;
        // By operand: [1 + k] operand k of the call's pipeline, [0] the rest (an inner
        // pipeline's operand is a body copy to the call, and 1 + k in its inner row).
        const wait_target on = st_.wait_on[c];
        const unsigned outer = on.pipeline == wait_pipeline::own ? 1u + on.operand : 0u;
        const unsigned inner = on.pipeline == wait_pipeline::inner ? 1u + on.operand : 0u;
        res_.wait_by_operand[outer] += t - begin;
        if (opt_.per_step) {
            // A wait of a rounding error (a DMA done an ulp after the core got there) is no
            // wait on that operand: the bit must not depend on how the clock was summed.
            const bool real = t - begin > 1e-12 * t;
            const std::uint32_t bit = real ? std::uint32_t{1} << outer : 0u;
            step_times& row = book_.current(c);
            row.wait += t - begin;
            row.end = t;
            row.waited_on |= bit;
            if (step_times* in = book_.current_inner(c)) {
                in->wait += t - begin;
                in->end = t;
                // In an inner row, bit 1 + k is operand k of that row's pipeline.
                in->waited_on |= real ? std::uint32_t{1} << inner : 0u;
            }
        }
        // A wait of a rounding error is no span either: the timeline must not depend on how the
        // clock was summed (the fast lane's shifted clock rounds otherwise).
        if (opt_.timeline && t - begin > 1e-12 * t)
            spans_.push({c, span::track::stream, op_kind::dma_wait, st_.wait_label[c], st_.wait_step[c], d.id,
                         begin, t, 0, true},
                        st_.wait_ord[c]);
        st_.live[c].erase(st_.live[c].find(d.id));
        st_.free_slots.push_back(s);
    } else {
        d.phase = dma_phase::done;
    }
}

}  // namespace ptpu::sim::detail
