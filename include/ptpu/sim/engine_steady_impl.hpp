// Defines the engine's part of the steady-state lane and the folds (docs/model.md §11): the state
// a boundary records, the skip of whole periods the lane matched or a fold found, and the
// engine's side of a fold's repetitions (sim/engine_class.hpp declares them; the lane is
// sim/steady_lane.hpp, the folds sim/folds.hpp, the rows a skip makes sim/step_rows.hpp's).
#pragma once

#include "ptpu/sim/engine_class.hpp"

namespace ptpu::sim::detail {

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
    b.sum = tally::of(res_, channels_[0].idle_count());
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
    per.add_periods_to(res_, m, cores_);
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
auto engine<Source>::apply(std::int64_t m) -> void {
    lane_history& history = lane_.history();
    const cycle& cy = history.found();
    const core_set& lane = history.cores();
    per_core<std::uint32_t>& last_step = lane_.last_steps();
    skip_time(lane, m, cy.dt, cy.starts, cy.steps, cy.runs, cy.sum, cy.done);
    for (const int ci : lane) {  // a core other than the lead may be blocked: in the image of its wait
        if (ci == lane.lead()) continue;
        const auto c = static_cast<std::size_t>(ci);
        wait_ord_[c] += static_cast<std::uint64_t>(m) * cy.runs[c];
        if (spans_.in_lane() && state_[c] == core_state::blocked)
            wait_label_[c] = spans_.label(ci, wait_ord_[c]);
        const std::uint32_t k = static_cast<std::uint32_t>(m) * cy.steps[c];
        last_step[c] += k;
        wait_step_[c] += k;
    }
    // The skipped periods' rows and spans, then the history as if they had been simulated.
    const std::int64_t j = history.count() - 1;
    const boundary& a = history.at(j - cy.period);
    const boundary& b = history.at(j);
    book_.replicate(a.rows, b.rows, m, cy.dt, cy.steps);
    spans_.replicate(a.spans, b.spans, m, cy.dt, cy.starts, cy.steps, cy.runs);
    history.skipped(m, book_.mark(),
                    [&](const row_mark& x, const row_mark& ma, const row_mark& mb, std::int64_t n) {
                        return book_.shifted(x, ma, mb, n, cy.dt, cy.steps);
                    });
}

template <class Source>
inline auto engine<Source>::next_folded(int c, op& o, bool alone) -> bool {
    if (alone && folds_.at_start(c)) {
        boundary& b = folds_.mark(c);
        const core_set one = core_set::one(c);
        record_state(b, one);
        if (opt_.per_step) b.rows = book_.mark();
        if (const folds::skip s = folds_.find(c, book_); s.q > 0) {
            // The p repetitions from here repeat the p before, as often as whole ones are left
            // (and their rows fit).
            const boundary& x = *s.a;
            const boundary& y = *s.b;
            per_core<std::uint32_t> starts{};
            per_core<std::uint64_t> ops{};
            const auto u = static_cast<std::size_t>(c);
            starts[u] = y.starts[u] - x.starts[u];
            ops[u] = y.ord[u] - x.ord[u];
            skip_time(one, s.q, y.t - x.t, starts, per_core<std::uint32_t>{}, ops, y.sum.since(x.sum),
                      y.last_done != x.last_done);
            book_.replicate(x.rows, y.rows, s.q, y.t - x.t, per_core<std::uint32_t>{}, s.dsub);
            folds_.skipped(c, s);
            dirty_ = true;
            return false;
        }
    }
    folds_.next(c, o);
    return true;
}

}  // namespace ptpu::sim::detail
