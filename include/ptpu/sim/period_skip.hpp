// Defines what the steady-state lane and the folds do to the simulation's state (docs/model.md
// §11): record it at a boundary (what same_state compares), and move it on by whole periods the
// lane matched (sim/steady_lane.hpp) or a fold found (sim/folds.hpp), with the rows and timeline
// spans those periods make. Independent of the op source: compiled once, not per kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "ptpu/core/index.hpp"
#include "ptpu/sim/event_state.hpp"
#include "ptpu/sim/folds.hpp"
#include "ptpu/sim/lane_history.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/sim/steady.hpp"
#include "ptpu/sim/step_rows.hpp"
#include "ptpu/sim/timeline_book.hpp"

namespace ptpu::sim::detail {

class period_skip {
public:
    period_skip(event_state& st, result& res, step_rows& book, timeline_book& spans, const options& opt)
        : st_(st), res_(res), book_(book), spans_(spans), opt_(opt) {}
    period_skip(const period_skip&) = delete;
    period_skip& operator=(const period_skip&) = delete;

    // Records in b the state of cores `cs`: their clocks relative to the lead's, DMAs in flight,
    // semaphores, blocked waits, op counts, the totals. Not the step values, rows or ops.
    void record(boundary& b, const core_set& cs) const {
        const double t = st_.t[static_cast<std::size_t>(cs.lead())];
        b.t = t;
        b.last_done = st_.last_done;
        b.v = st_.channels[0].v_at(t);
        b.sum = tally::of(res_, st_.channels[0].idle_count());
        b.snap.clear();
        std::uint64_t key = 0;
        std::size_t i = 0;                             // the next lane core
        for (std::size_t c = 0; c < max_cores; ++c) {  // every entry: the ring's are reused
            const bool here = i < static_cast<std::size_t>(cs.n) && cs.at[i] == static_cast<int>(c);
            i += here ? 1 : 0;
            const bool blocked = here && st_.state[c] == core_state::blocked;
            b.lag[c] = here ? st_.t[c] - t : 0;
            b.starts[c] = here ? st_.starts[c] : 0;
            b.ord[c] = here ? st_.ord[c] : 0;
            b.state[c] = here ? static_cast<std::uint8_t>(st_.state[c]) : 0;
            b.waits_on[c] = blocked ? st_.wait_on[c] : wait_target{};
            const bool on_dma = blocked && st_.wait_slot[c] >= 0;
            b.wait[c] = on_dma ? st_.at(st_.wait_slot[c]).id - st_.starts[c] : 0;
            const bool on_sem = blocked && !on_dma;
            b.sem_kind[c] = on_sem ? static_cast<std::uint8_t>(st_.wait_is_dma[c] ? 2 : 1) : 0;
            b.wait_sem[c] = on_sem ? st_.wait_sem[c] : 0;
            b.want[c] = on_sem ? st_.wait_want[c] : 0;
            if (here)
                b.sems[c].assign(st_.sem_val[c].begin(), st_.sem_val[c].end());
            else
                b.sems[c].clear();
            key = (key * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t{b.state[c]} << 56) ^
                  (std::uint64_t{b.wait[c]} << 40) ^ (std::uint64_t{b.sem_kind[c]} << 52) ^
                  (std::uint64_t{b.wait_sem[c]} << 20);
            if (!here) continue;
            for (const int s : st_.live[c].slots()) b.snap.push_back(snap_of(st_.at(s), st_.starts[c], t));
            for (const int s : st_.sem_dmas[c]) b.snap.push_back(snap_of(st_.at(s), st_.starts[c], t));
        }
        // By start order (unique; a few entries: insertion sort).
        for (std::size_t k = 1; k < b.snap.size(); ++k)
            for (std::size_t j = k; j > 0 && b.snap[j].seq > b.snap[j - 1].seq; --j)
                std::swap(b.snap[j], b.snap[j - 1]);
        b.key = snaps_key(key ^ b.snap.size(), b.snap);
    }

    // Moves cores `cs`, their DMAs and the channels on by m periods that each took dt, started
    // starts[c] DMAs, made steps[c] step values and ran ops[c] ops on core c, added `per` to the
    // totals and, when `done`, completed a DMA.
    void skip(const core_set& cs, std::int64_t m, double dt, const per_core<std::uint32_t>& starts,
              const per_core<std::uint32_t>& steps, const per_core<std::uint64_t>& ops, const tally& per,
              bool done) {
        const double d = static_cast<double>(m) * dt;
        per.add_periods_to(res_, m, res_.cores);
        if (done) st_.last_done += d;
        std::uint32_t all = 0;  // every core's starts: the start order moves by them
        for (const int c : cs) all += static_cast<std::uint32_t>(m) * starts[static_cast<std::size_t>(c)];
        for (const int c : cs) {
            const auto u = static_cast<std::size_t>(c);
            shift_core(c, d, static_cast<std::uint32_t>(m) * starts[u], all,
                       static_cast<std::uint64_t>(m) * ops[u], static_cast<std::uint32_t>(m) * steps[u]);
        }
        st_.seq += all;
        for (std::size_t ch = 0; ch < st_.channels.size(); ++ch)
            st_.channels[ch].shift(d, ch == 0 && per.idle > 0);
    }

    // The lane's m periods of the cycle its history found: every lane core and its DMAs move on
    // (state: equal, times shifted), the skipped periods' rows and spans are made, and the
    // history moves on as if they had been simulated. `last_step`: the lane's last step per core.
    void apply(lane_history& history, per_core<std::uint32_t>& last_step, std::int64_t m) {
        const cycle& cy = history.found();
        const core_set& lane = history.cores();
        skip(lane, m, cy.dt, cy.starts, cy.steps, cy.runs, cy.sum, cy.done);
        for (const int ci : lane) {  // a core other than the lead may be blocked: in the image of its wait
            if (ci == lane.lead()) continue;
            const auto c = static_cast<std::size_t>(ci);
            st_.wait_ord[c] += static_cast<std::uint64_t>(m) * cy.runs[c];
            if (spans_.in_lane() && st_.state[c] == core_state::blocked)
                st_.wait_label[c] = spans_.label(ci, st_.wait_ord[c]);
            const std::uint32_t k = static_cast<std::uint32_t>(m) * cy.steps[c];
            last_step[c] += k;
            st_.wait_step[c] += k;
        }
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

    // Core c's next op of its fold `f` (folds.hpp); false when the fold skipped periods instead
    // (the times and DMAs changed). `alone`: core c runs alone, without a timeline, so that the
    // fold may look for periods of its repetitions' start states.
    bool fold(folds& f, int c, op& o, bool alone) {
        if (alone && f.at_start(c)) {
            boundary& b = f.mark(c);
            const core_set one = core_set::one(c);
            record(b, one);
            if (opt_.per_step) b.rows = book_.mark();
            if (const folds::skip s = f.find(c, book_); s.q > 0) {
                // The p repetitions from here repeat the p before, as often as whole ones are
                // left (and their rows fit).
                const boundary& x = *s.a;
                const boundary& y = *s.b;
                per_core<std::uint32_t> starts{};
                per_core<std::uint64_t> ops{};
                const auto u = static_cast<std::size_t>(c);
                starts[u] = y.starts[u] - x.starts[u];
                ops[u] = y.ord[u] - x.ord[u];
                skip(one, s.q, y.t - x.t, starts, per_core<std::uint32_t>{}, ops, y.sum.since(x.sum),
                     y.last_done != x.last_done);
                book_.replicate(x.rows, y.rows, s.q, y.t - x.t, per_core<std::uint32_t>{}, s.dsub);
                f.skipped(c, s);
                return false;
            }
        }
        f.next(c, o);
        return true;
    }

private:
    // A DMA in flight as a boundary records it, relative to the clock t and to its core's count
    // of starts (`starts`): what a period must repeat of it (steady.hpp, same_snaps).
    [[nodiscard]] dma_snap snap_of(const live_dma& d, std::uint32_t starts, double t) const {
        const double left = d.phase == dma_phase::latency    ? d.ready - t
                            : d.phase == dma_phase::transfer ? d.tag - st_.channels[d.channel].v_at(t)
                                                             : 0.0;
        return {.id = d.id - starts,
                .seq = st_.seq - d.seq,
                .bytes = d.bytes,
                .left = left,
                .phase = d.phase,
                .channel = d.channel,
                .core = d.core,
                .cost = d.cost,
                .sem = d.sem};
    }

    // Moves core c and its live DMAs on by whole periods: `dt` in time, `starts` of its DMA
    // starts, `seqs` of every core's, `ops` of its ops, `steps` of its step values.
    void shift_core(int c, double dt, std::uint32_t starts, std::uint64_t seqs, std::uint64_t ops,
                    std::uint32_t steps) {
        const auto u = static_cast<std::size_t>(c);
        st_.t[u] += dt;
        const auto shift = [&](int sl) {
            live_dma& d = st_.at(sl);
            d.ready += dt;
            d.begin += dt;
            d.id += starts;
            d.seq += seqs;
            d.ord += ops;
            d.step += steps;
            if (spans_.in_lane()) d.label = spans_.label(c, d.ord);
        };
        for (const int sl : st_.live[u].slots()) shift(sl);
        for (const int sl : st_.sem_dmas[u]) shift(sl);
        st_.live[u].shift_ids(starts);
        st_.starts[u] += starts;
        st_.ord[u] += ops;
    }

    event_state& st_;
    result& res_;
    step_rows& book_;
    timeline_book& spans_;
    const options& opt_;
};

}  // namespace ptpu::sim::detail
