// Defines what the engine's steady-state lane and its folds share (docs/model.md §11): the state
// a boundary records, the skip of whole periods, and folded repeats (sim/engine_class.hpp
// declares them; the rows a skip makes are sim/step_rows.hpp's).
#pragma once

#include "ptpu/sim/engine_class.hpp"

namespace ptpu::sim::detail {

template <class Source>
inline auto engine<Source>::totals() const -> tally {
    tally s;
    s.ops = res_.op_count;
    s.dmas = res_.dma_count;
    s.hbm_bytes = res_.hbm_bytes;
    s.onchip_bytes = res_.onchip_bytes;
    s.idle = channels_[0].idle_count();
    s.overhead = res_.busy_overhead;
    s.issue = res_.busy_issue;
    s.compute = res_.busy_compute;
    s.wait = res_.wait_dma;
    s.wait_sem = res_.wait_sem;
    s.wait_by_operand = res_.wait_by_operand;
    s.hbm_busy = res_.hbm_busy_time;
    return s;
}

template <class Source>
[[nodiscard]] inline auto engine<Source>::snap_of(const live_dma& d, std::uint32_t starts, double t) const -> dma_snap {
    const double left = d.phase == dma_phase::latency    ? d.ready - t
                        : d.phase == dma_phase::transfer ? d.tag - channels_[d.channel].v_at(t)
                                                         : 0.0;
    return {.id = d.id - starts,
            .seq = seq_ - d.seq,
            .bytes = d.bytes,
            .left = left,
            .phase = d.phase,
            .channel = d.channel,
            .core = d.core,
            .cost = d.cost,
            .sem = d.sem};
}

template <class Source>
inline auto engine<Source>::record_state(boundary& b, const core_set& cs) -> void {
    const double t = t_[static_cast<std::size_t>(cs.lead())];
    b.t = t;
    b.last_done = last_done_;
    b.v = channels_[0].v_at(t);
    b.sum = totals();
    b.snap.clear();
    std::uint64_t key = 0;
    std::size_t i = 0;                             // the next lane core
    for (std::size_t c = 0; c < max_cores; ++c) {  // every entry: the ring's are reused
        const bool here = i < static_cast<std::size_t>(cs.n) && cs.at[i] == static_cast<int>(c);
        i += here ? 1 : 0;
        const bool blocked = here && state_[c] == core_state::blocked;
        b.lag[c] = here ? t_[c] - t : 0;
        b.starts[c] = here ? starts_[c] : 0;
        b.ord[c] = here ? ord_[c] : 0;
        b.state[c] = here ? static_cast<std::uint8_t>(state_[c]) : 0;
        b.waits_on[c] = blocked ? wait_on_[c] : wait_target{};
        const bool on_dma = blocked && wait_slot_[c] >= 0;
        b.wait[c] = on_dma ? at(wait_slot_[c]).id - starts_[c] : 0;
        const bool on_sem = blocked && !on_dma;
        b.sem_kind[c] = on_sem ? static_cast<std::uint8_t>(wait_is_dma_[c] ? 2 : 1) : 0;
        b.wait_sem[c] = on_sem ? wait_sem_[c] : 0;
        b.want[c] = on_sem ? wait_want_[c] : 0;
        if (here)
            b.sems[c].assign(sem_val_[c].begin(), sem_val_[c].end());
        else
            b.sems[c].clear();
        key = (key * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t{b.state[c]} << 56) ^
              (std::uint64_t{b.wait[c]} << 40) ^ (std::uint64_t{b.sem_kind[c]} << 52) ^
              (std::uint64_t{b.wait_sem[c]} << 20);
        if (!here) continue;
        for (const int s : live_[c].slots()) b.snap.push_back(snap_of(at(s), starts_[c], t));
        for (const int s : sem_dmas_[c]) b.snap.push_back(snap_of(at(s), starts_[c], t));
    }
    // By start order (unique; a few entries: insertion sort).
    for (std::size_t k = 1; k < b.snap.size(); ++k)
        for (std::size_t j = k; j > 0 && b.snap[j].seq > b.snap[j - 1].seq; --j)
            std::swap(b.snap[j], b.snap[j - 1]);
    b.key = snaps_key(key ^ b.snap.size(), b.snap);
}

template <class Source>
inline auto engine<Source>::skip_time(const core_set& cs, std::int64_t m, double dt,
                                      const per_core<std::uint32_t>& starts,
                                      const per_core<std::uint32_t>& steps,
                                      const per_core<std::uint64_t>& ops, const tally& per, bool done)
    -> void {
    const double d = static_cast<double>(m) * dt;
    add_periods(per, m);
    if (done) last_done_ += d;
    std::uint32_t all = 0;  // every core's starts: the start order moves by them
    for (const int c : cs) all += static_cast<std::uint32_t>(m) * starts[static_cast<std::size_t>(c)];
    for (const int c : cs) {
        const auto u = static_cast<std::size_t>(c);
        shift_core(c, d, static_cast<std::uint32_t>(m) * starts[u], all,
                   static_cast<std::uint64_t>(m) * ops[u], static_cast<std::uint32_t>(m) * steps[u]);
    }
    seq_ += all;
    for (std::size_t ch = 0; ch < channels_.size(); ++ch) channels_[ch].shift(d, ch == 0 && per.idle > 0);
}

template <class Source>
inline auto engine<Source>::begin_fold(int c, const op& o) -> void {
    fold& f = folds_[static_cast<std::size_t>(c)];
    const bool within = fold_at_[static_cast<std::size_t>(c)] != 0;
    if (within || o.sem == 0 || o.bytes < 1)
        throw error("SIM2", "simulate, step " + std::to_string(o.step),
                    within ? "a repeat op within the repetition of another"
                           : "a repeat op of " + std::to_string(o.sem) + " ops made " +
                                 std::to_string(o.bytes) + " more times",
                    "repeat one or more ops, one or more more times, and not within another repeat");
    f.len = o.sem;
    f.ids = o.dma;
    f.step = o.step;
    f.rows = o.sub;
    f.left = o.bytes;
    f.made = 0;
    f.pos = 0;
    f.marks = 0;
    f.ops.clear();
    fold_at_[static_cast<std::size_t>(c)] = 1;
}

template <class Source>
inline auto engine<Source>::record_folded(int c, const op& o) -> void {
    fold& f = folds_[static_cast<std::size_t>(c)];
    if (o.kind == op_kind::repeat || o.step != f.step)
        throw error(
            "SIM2", "simulate, step " + std::to_string(f.step),
            "the ops a repeat op repeats include " +
                std::string(o.kind == op_kind::repeat ? "another repeat op" : "an op of another step"),
            "repeat ops of the repeat op's step only");
    f.ops.push_back(o);
    if (f.ops.size() < f.len) return;
    std::uint32_t starts = 0;
    for (const op& x : f.ops) starts += x.kind == op_kind::dma_start ? 1u : 0u;
    if (starts != f.ids)
        throw error("SIM2", "simulate, step " + std::to_string(f.step),
                    "a repeat op's ops start " + std::to_string(starts) + " DMAs and advance their ids by " +
                        std::to_string(f.ids) + " each repetition",
                    "advance the ids by the DMAs one repetition starts");
    f.made = 1;
    fold_at_[static_cast<std::size_t>(c)] = 2;
}

template <class Source>
inline auto engine<Source>::next_folded(int c, op& o, bool alone) -> bool {
    fold& f = folds_[static_cast<std::size_t>(c)];
    if (f.pos == 0 && alone) {
        if (f.seen.empty()) f.seen.resize(static_cast<std::size_t>(fold_ring));
        boundary& b = f.seen[static_cast<std::size_t>(f.marks % fold_ring)];
        const core_set alone_set = core_set::one(c);
        record_state(b, alone_set);
        if (opt_.per_step) b.rows = book_.mark();
        ++f.marks;
        for (std::int64_t p = 1; p <= fold_period && p < f.marks; ++p) {
            const boundary& a = f.seen[static_cast<std::size_t>((f.marks - 1 - p) % fold_ring)];
            if (!same_state(a, b)) continue;
            // The p repetitions from here repeat the p before, as often as whole ones are left
            // (and their rows fit).
            const auto dsub = static_cast<std::uint32_t>(p) * f.rows;
            const std::int64_t q = book_.fold_fit(a.rows, b.rows, c, f.step, dsub, f.left / p);
            if (q == 0) break;
            per_core<std::uint32_t> starts{};
            per_core<std::uint64_t> ops{};
            const auto u = static_cast<std::size_t>(c);
            starts[u] = b.starts[u] - a.starts[u];
            ops[u] = b.ord[u] - a.ord[u];
            skip_time(alone_set, q, b.t - a.t, starts, per_core<std::uint32_t>{}, ops, b.sum.since(a.sum),
                      b.last_done != a.last_done);
            book_.replicate(a.rows, b.rows, q, b.t - a.t, per_core<std::uint32_t>{}, dsub);
            f.made += static_cast<std::uint32_t>(q * p);
            f.left -= q * p;
            f.marks = 0;
            fold_at_[static_cast<std::size_t>(c)] = f.left > 0 ? 2 : 0;
            dirty_ = true;
            return false;
        }
    }
    o = f.ops[f.pos];
    if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait)
        o.dma += f.made * f.ids;  // (mod 2^32, as ids)
    if (o.sub != 0 && f.rows != 0) [[unlikely]] {
        // Its inner row, as many rows on as the repetitions before it made; none past
        // stream::max_inner_rows (the op counts in its step's row only, its wait as a body copy's).
        const std::uint64_t sub = o.sub + std::uint64_t{f.made} * f.rows;
        o.sub = sub <= stream::max_inner_rows ? static_cast<std::uint16_t>(sub) : std::uint16_t{0};
        if (o.sub == 0) o.waits_on = {};
    }
    if (++f.pos == f.len) {
        f.pos = 0;
        ++f.made;
        if (--f.left == 0) fold_at_[static_cast<std::size_t>(c)] = 0;
    }
    return true;
}

}  // namespace ptpu::sim::detail
