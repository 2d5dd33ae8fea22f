// Defines sim::detail::steady_lane, the timing model's steady-state lane (docs/model.md §11): the
// cores still running fast-forwarded together by whole periods.
//
// The lane follows the cores still running (when no ended core's DMA still moves): their state
// repeats only as a whole, since they share HBM. At every step boundary of the lead core, the
// lowest-numbered of them (about to run the first op of a new step value), the engine records
// the lane's state relative to the lead's clock (period_skip::record): each DMA started and not
// yet waited, by id relative to its core's count of starts, with its phase, bytes and what is
// left of it (latency until ready, or bytes still to move); the semaphores; the other cores'
// clocks and blocked waits relative to the lead's. The lane records the ops each lane core runs
// until the lead's next boundary. When the state equals the one recorded p boundaries earlier
// (p <= max_period, the shortest first) and the ops of the last p boundaries repeat the p before
// them, the next p boundaries evolve the same way if the cores bring the same ops again (ids and
// step numbers relative): the engine's decisions depend only on that state and on the ops. The
// lane then pulls and compares every lane core's ops of each period (the lead's up to its next
// step value, each other core's the cycle's number) and, at the first that differs or a stream's
// end, says how many whole periods repeated: period_skip::apply adds them at once (their time,
// DMA starts and totals), and the ops pulled since are given back to be simulated (op_feed). Not
// through a step signalling another core's semaphore, nor, with more than one lane core, within
// a fold. The history of boundaries, the period search and the cycle are lane_history's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "ptpu/sim/lane_history.hpp"
#include "ptpu/sim/op_feed.hpp"
#include "ptpu/sim/steady.hpp"
#include "ptpu/sim/step_rows.hpp"
#include "ptpu/sim/timeline_book.hpp"
#include "ptpu/sim/work_times.hpp"

namespace ptpu::sim::detail {

template <class Source>
class steady_lane {
public:
    // `starts`: the engine's count of DMA starts per core (ids are relative to it).
    steady_lane(op_feed<Source>& feed, step_rows& book, timeline_book& spans, work_times& times,
                const per_core<std::uint32_t>& starts)
        : feed_(feed),
          book_(book),
          spans_(spans),
          times_(times),
          starts_(starts),
          labels_free_(spans.in_lane()) {}
    steady_lane(const steady_lane&) = delete;
    steady_lane& operator=(const steady_lane&) = delete;

    // Takes this thread's buffers for a lane over `cores` cores.
    void open(int cores, bool across) {
        history_.open(cores, across);
        feed_.open_lane(cores);
    }

    lane_history& history() { return history_; }
    [[nodiscard]] const core_set& cores() const { return history_.cores(); }
    // The step value of each lane core's last op.
    per_core<std::uint32_t>& last_steps() { return last_step_; }
    // Whether the lane holds the cores (a period was found: run() next).
    [[nodiscard]] bool holding() const { return fast_; }

    // Whether op o of core c begins a boundary of the lane: the lead's first op of a new step.
    [[nodiscard]] bool begins_boundary(int c, const op& o) const {
        return c == history_.lead() && (history_.count() == 0 || o.step != history_.lead_step());
    }
    // The boundary the engine records the lane's state in (period_skip::record); then close().
    boundary& boundary_to_record() { return history_.next(); }
    // Closes that boundary (the lead about to run o, the first op of step o.step) and looks for a
    // period ending there; true when the lane takes over (holding o, given back if it stops).
    [[gnu::noinline]] bool close(const op& o);

    // Records op o of lane core c (`cut`: the first of a batch from its source).
    void record(int c, const op& o, bool cut) {
        history_.record(c, o, cut, [&](op& n) {
            if (spans_.in_lane()) n.label = 0;  // labels do not time: the timeline's come from the ops
            n.work = canon(n);                  // nor does which of two works of equal time it is
        });
        last_step_[static_cast<std::size_t>(c)] = o.step;
    }

    // Matches whole periods until the first op that differs, a stream's end or a core blocked
    // (stream::batch::blocked: it waits for a core whose ops are still to pull); the ops pulled
    // since are given back. Returns the whole periods matched, for period_skip::apply.
    [[gnu::noinline]] std::int64_t run() {
        by_batch_ ? match_batches() : match_ops();
        fast_ = false;
        return skipped_;
    }
    // After run() and period_skip::apply of m periods: with none, no search for a period's
    // boundaries; else the lead's boundary moves to where its given-back ops start.
    void left(std::int64_t m) {
        if (m == 0) {
            history_.cool_down();  // the cycle did not repeat even once
            return;
        }
        const std::vector<op>& lead_ops = feed_.given_back(history_.lead());
        if (!lead_ops.empty()) history_.restart_lead_at(lead_ops.front().step);
    }

private:
    // What the lane compares of an op's work: a compute op's canonical work number (two
    // works of equal time are the same to them), any other op's work field as it is.
    std::uint32_t canon(const op& o) {
        return o.kind == op_kind::compute ? times_.canonical(o.work) : o.work;
    }
    // Whether ops x and y of one kind do work of equal time: the same number (a canonical number
    // is its own: a recorded op's equals a pulled op's of that work), or equal canonical ones.
    bool same_work(const op& x, const op& y) { return x.work == y.work || canon(x) == canon(y); }

    // The lane by whole batches: when the lead's boundary is the first op of a whole-step batch,
    // and each other core's ops of the cycle fall into its source's batches so that its next q
    // batches are known: the cycle's batches after its first cut, then the batch the core is in
    // (its part before the boundary ends the cycle, its part after begins the next period, which
    // must be the cycle's start).
    [[gnu::noinline]] bool batches_ready(int p);

    // Batch x is d one period k later: ids relative to `base`, steps to `step0`.
    bool same_batch_ops(std::span<const op> x, std::span<const op> d, std::uint32_t base,
                        std::uint32_t step0) {
        if (x.size() != d.size()) return false;
        for (std::size_t k = 0; k < x.size(); ++k)
            if (!matches(x[k], d[k], base, step0)) return false;
        return true;
    }

    // The lane a batch at a time: batch b of a period must equal the cycle's batch b (ids and
    // steps relative); a batch the source says repeats the previous one matches when the cycle's
    // batch b repeats its batch b - 1, without reading it. At the end of each whole period the
    // sources make as many more in bulk as all of them can (period_source), which the lane then
    // counts as skipped (not with a timeline: each skipped op's label is recorded as it is
    // pulled). On a mismatch or a stream's end, the matched batches of the unfinished period are
    // rebuilt from the cycle for every lane core.
    void match_batches();

    // x is the cycle's op y one period later (DMA ids relative to `base`, steps to `step0`).
    // (With a timeline, labels are not compared: they do not time, and the replicated spans
    // take theirs from the ops pulled.)
    // (Inlined: it is the lane's inner loop, once per op pulled.)
    [[gnu::always_inline]] bool matches(const op& x, const op& y, std::uint32_t base, std::uint32_t step0);

    // Pulls and compares whole periods op by op; at the first op that differs, a stream's end or
    // a blocked core, leaves the ops pulled since to be simulated. (Ops are pulled straight into
    // the given-back buffers and compared field by field: copying whole ops that the source has
    // just written field by field stalls on store forwarding.)
    void match_ops();

    op_feed<Source>& feed_;
    step_rows& book_;
    timeline_book& spans_;
    work_times& times_;
    const per_core<std::uint32_t>& starts_;
    // With a timeline the lane compares no labels (spans_.in_lane(), fixed for the run: kept here
    // for the inner loop).
    const bool labels_free_;
    lane_history history_;                 // the lane's boundaries and the cycle found there
    per_core<std::uint32_t> last_step_{};  // step value of each core's last op
    bool fast_ = false;                    // the lane holds the cores
    std::int64_t skipped_ = 0;             // whole periods matched since
    // A lane core's batch of the period (cores other than the lead, by_batch_).
    struct period_batch {
        std::vector<op> ops;   // relative to its first start and its first op's step
        std::uint32_t sb = 0;  // its first start relative to the period's start
        std::uint32_t gb = 0;  // its first op's step relative to the period's start
        bool repeats = false;  // equals its predecessor one step on (a lazy batch matches)
    };
    bool by_batch_ = false;                        // the lane compares whole batches
    per_core<std::vector<period_batch>> batches_;  // the other lane cores' batches of a period
    std::vector<std::uint8_t> lead_same_;          // the lead's boundary batch k repeats batch k - 1
    per_core<std::size_t> batch_pos_{};  // the other cores' positions in their batch at the boundary
};

template <class Source>
auto steady_lane<Source>::close(const op& o) -> bool {
    const core_set& lane = history_.cores();
    boundary& b = history_.next();
    b.rows = book_.mark();
    b.spans = spans_.size();
    if (!history_.close_boundary(o.step, last_step_)) return false;
    for (const int c : lane)  // ops the lane gave back come first
        if (feed_.giving_back(c)) return false;
    const int p =
        history_.find_period([&](const boundary& a, const boundary& z, const per_core<std::uint32_t>& dstep) {
            return book_.repeat(a.rows, z.rows, a.t, z.t, lane, dstep);
        });
    if (p == 0) return false;
    // The period becomes the cycle to match.
    history_.take_cycle(p);
    for (const int c : history_.cores()) {
        feed_.given_back(c).clear();
        feed_.restart_given(c);
    }
    fast_ = true;
    skipped_ = 0;
    feed_.given_back(history_.lead()).push_back(o);
    by_batch_ = batches_ready(p);
    return true;
}

template <class Source>
auto steady_lane<Source>::batches_ready(int p) -> bool {
    const cycle& cy = history_.found();
    const int li = history_.lead();
    const auto lead = static_cast<std::size_t>(li);
    if (!feed_.batched() || !feed_.whole(li) || feed_.position(li) != 1) return false;
    const std::int64_t j = history_.count() - 1;
    std::vector<std::uint32_t> cuts;
    for (const int ci : history_.cores()) {
        const auto c = static_cast<std::size_t>(ci);
        if (c == lead) continue;
        if (!feed_.whole(ci)) return false;
        const std::vector<op>& cyc = cy.ops[c];
        cuts.clear();
        std::size_t off = 0;
        for (std::int64_t k = j - p; k < j; ++k) {
            const boundary& e = history_.at(k);
            for (const std::uint32_t x : e.cuts[c]) cuts.push_back(static_cast<std::uint32_t>(off + x));
            off += e.batch[c].size();
        }
        const std::span<const op> cur = feed_.current(ci);
        const std::size_t kc = feed_.position(ci);
        const std::size_t n = cyc.size();
        if (cuts.empty() || kc == 0 || n - cuts.back() != kc || cuts.front() != cur.size() - kc) return false;
        // The core's next period starts with the rest of its current batch: it must be the
        // cycle's start (ids and steps relative to now).
        for (std::size_t i = kc; i < cur.size(); ++i)
            if (!matches(cur[i], cyc[i - kc], starts_[c], last_step_[c])) return false;
        // D_1 .. D_q: whole batches relative to their own first start and first op's step.
        const std::size_t q = cuts.size();
        std::vector<period_batch>& bs = batches_[c];
        bs.assign(q, {});
        std::uint32_t starts_before = 0;
        std::size_t pos = 0;
        for (std::size_t i = 0; i < q; ++i) {  // starts in the cycle before each cut
            for (; pos < cuts[i]; ++pos) starts_before += cyc[pos].kind == op_kind::dma_start ? 1u : 0u;
            bs[i].sb = starts_before;
            bs[i].gb = cyc[cuts[i]].step;
        }
        for (std::size_t i = 0; i < q; ++i) {
            period_batch& d = bs[i];
            const auto own = [&](op o, std::uint32_t dk, std::uint32_t ds) {
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += dk - d.sb;
                o.step += ds - d.gb;
                d.ops.push_back(o);
            };
            const std::size_t end = i + 1 < q ? cuts[i + 1] : n;
            for (std::size_t k = cuts[i]; k < end; ++k) own(cyc[k], 0, 0);
            if (i + 1 == q)  // the batch the core is in: its part after the boundary, a period on
                for (std::size_t k = 0; k < cuts[0]; ++k) own(cyc[k], cy.starts[c], cy.steps[c]);
        }
        for (std::size_t i = 0; i < q; ++i) {  // a batch the source says repeats its predecessor
            const period_batch& d = bs[i];
            const period_batch& e = bs[i == 0 ? q - 1 : i - 1];
            const std::uint32_t gap = i == 0 ? d.gb + cy.steps[c] - e.gb : d.gb - e.gb;
            bool same = gap == 1 && d.ops.size() == e.ops.size();
            for (std::size_t k = 0; same && k < d.ops.size(); ++k) same = same_op(d.ops[k], e.ops[k]);
            bs[i].repeats = same;
        }
        batch_pos_[c] = kc;
    }
    // The lead: its boundary batches, and which repeat their predecessor.
    lead_same_.assign(static_cast<std::size_t>(p), 0);
    for (int k = 0; k < p; ++k) {
        const boundary& e = history_.at(j - p + k);
        const boundary& f = history_.at(k == 0 ? j - 1 : j - p + k - 1);
        const std::uint32_t gap =
            k == 0 ? e.step[lead] + cy.steps[lead] - f.step[lead] : e.step[lead] - f.step[lead];
        bool same = gap == 1 && e.batch[lead].size() == f.batch[lead].size();
        for (std::size_t i = 0; same && i < e.batch[lead].size(); ++i)
            same = same_op(e.batch[lead][i], f.batch[lead][i]);
        lead_same_[static_cast<std::size_t>(k)] = same ? 1 : 0;
    }
    return true;
}

template <class Source>
auto steady_lane<Source>::match_batches() -> void {
    const cycle& cy = history_.found();
    const std::int64_t j = history_.count() - 1;
    const int p = cy.period;
    const int li = history_.lead();
    const auto lead = static_cast<std::size_t>(li);
    const boundary& a = history_.at(j - p);
    const std::uint32_t g0 = history_.at(j).step[lead];
    const per_core<std::uint32_t> s = starts_;
    const per_core<std::uint32_t> g = last_step_;
    auto lead_base = [&](std::int64_t m, int k) {
        return s[lead] + static_cast<std::uint32_t>(m) * cy.starts[lead] +
               (history_.at(j - p + k).starts[lead] - a.starts[lead]);
    };
    auto lead_step = [&](std::int64_t m, int k) {
        return g0 + static_cast<std::uint32_t>(m) * cy.steps[lead] +
               (history_.at(j - p + k).step[lead] - a.step[lead]);
    };
    // D_i of core c in period m (the batch core c is in: D_q of period -1).
    auto base = [&](std::size_t c, std::int64_t m, std::size_t i) {
        return s[c] + static_cast<std::uint32_t>(m) * cy.starts[c] + batches_[c][i].sb;
    };
    auto step = [&](std::size_t c, std::int64_t m, std::size_t i) {
        return g[c] + static_cast<std::uint32_t>(m) * cy.steps[c] + batches_[c][i].gb;
    };
    // The sources make periods in bulk when each lane core's period is as many whole-step
    // batches as it makes step values (what period_source counts).
    bool bulk_ok = !spans_.in_lane();
    for (const int ci : history_.cores()) {
        const auto c = static_cast<std::size_t>(ci);
        const std::size_t batches = c == lead ? static_cast<std::size_t>(p) : batches_[c].size();
        bulk_ok = bulk_ok && cy.steps[c] == batches;
    }
    std::span<const op> cur = feed_.current(li);  // the lead's period's first batch, pulled already
    bool have = true;
    int b0 = 0;
    bool mismatch0 = false;
    // The other cores: batches matched in the last period, the one that differed.
    per_core<std::size_t> bc{};
    per_core<std::span<const op>> differs{};
    int stopped = li;  // the core whose batches of the last period were not all matched
    for (;;) {
        const std::int64_t m = skipped_;
        bool ok = true;
        for (b0 = 0; b0 < p; ++b0) {
            if (!have) {
                const auto [next, repeated] =
                    feed_.next_batch(li, lead_same_[static_cast<std::size_t>(b0)] != 0);
                if (next.ops.empty()) {
                    if (!next.blocked) feed_.set_ended(li);
                    ok = false;
                    break;
                }
                if (repeated) continue;
                cur = next.ops;
                if (!next.whole_step) {
                    mismatch0 = true;
                    ok = false;
                    break;
                }
            }
            have = false;
            if (!same_batch_ops(cur, history_.at(j - p + b0).batch[lead], lead_base(m, b0),
                                lead_step(m, b0))) {
                mismatch0 = true;
                ok = false;
                break;
            }
        }
        for (const int ci : history_.cores()) {
            if (!ok) break;
            const auto c = static_cast<std::size_t>(ci);
            if (c == lead) continue;
            const std::vector<period_batch>& bs = batches_[c];
            for (bc[c] = 0; bc[c] < bs.size(); ++bc[c]) {
                const period_batch& d = bs[bc[c]];
                const auto [next, repeated] = feed_.next_batch(ci, d.repeats);
                if (next.ops.empty()) {
                    if (!next.blocked) feed_.set_ended(ci);
                    ok = false;
                    break;
                }
                if (repeated) continue;
                if (!same_batch_ops(next.ops, d.ops, base(c, m, bc[c]), step(c, m, bc[c]))) {
                    differs[c] = next.ops;
                    ok = false;
                    break;
                }
            }
            stopped = ci;
        }
        if (!ok) break;
        ++skipped_;
        if (bulk_ok) {
            std::int64_t bulk = std::numeric_limits<std::int64_t>::max();
            for (const int c : history_.cores())
                bulk =
                    std::min(bulk, feed_.source().skippable_periods(c, cy.steps[static_cast<std::size_t>(c)],
                                                                    cy.starts[static_cast<std::size_t>(c)]));
            for (const int c : history_.cores()) feed_.source().skip_periods(c, bulk);
            skipped_ += bulk;
        }
    }
    if (b0 < p || mismatch0) stopped = li;
    const std::int64_t m = skipped_;
    // The lead: the matched batches of the unfinished period, then the one that differed.
    std::vector<op>& r0 = feed_.given_back(li);
    r0.clear();
    for (int k = 0; k < b0; ++k)
        for (op o : history_.at(j - p + k).batch[lead]) {
            if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += lead_base(m, k);
            o.step += lead_step(m, k);
            r0.push_back(o);
        }
    if (mismatch0) r0.insert(r0.end(), cur.begin(), cur.end());
    spans_.relabel_tail(li, r0);
    // Each other core: the rest of the batch it was in (D_q of the last whole period), then, if
    // its batches of the unfinished period were pulled, the matched ones and the one that differed.
    for (const int ci : history_.cores()) {
        const auto c = static_cast<std::size_t>(ci);
        if (c == lead) continue;
        std::vector<op>& r = feed_.given_back(ci);
        r.clear();
        const auto emit = [&](std::int64_t period, std::size_t i, std::size_t from) {
            const period_batch& d = batches_[c][i];
            for (std::size_t k = from; k < d.ops.size(); ++k) {
                op o = d.ops[k];
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += base(c, period, i);
                o.step += step(c, period, i);
                r.push_back(o);
            }
        };
        emit(m - 1, batches_[c].size() - 1, batch_pos_[c]);
        if (ci <= stopped) {
            for (std::size_t i = 0; i < bc[c]; ++i) emit(m, i, 0);
            r.insert(r.end(), differs[c].begin(), differs[c].end());
        }
        spans_.relabel_tail(ci, r);
    }
    for (const int ci : history_.cores()) {
        feed_.drop_current(ci);
        feed_.restart_given(ci);
    }
}

template <class Source>
inline auto steady_lane<Source>::matches(const op& x, const op& y, std::uint32_t base, std::uint32_t step0)
    -> bool {
    const bool dma = x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait;
    return x.kind == y.kind && (dma ? x.dma - base : x.dma) == y.dma && same_work(x, y) &&
           x.bytes == y.bytes && x.far == y.far && x.run == y.run && x.waits_on == y.waits_on &&
           (labels_free_ || x.label == y.label) && x.step - step0 == y.step && x.sub == y.sub &&
           x.sem == y.sem && x.core == y.core && x.dma_sem == y.dma_sem;
}

template <class Source>
auto steady_lane<Source>::match_ops() -> void {
    const cycle& cy = history_.found();
    const int li = history_.lead();
    const auto lead = static_cast<std::size_t>(li);
    core_feed& f0 = feed_.of(li);
    std::vector<op>& r0 = f0.given;  // r0[0]: the period's first op, pulled already
    const std::vector<op>& c0 = cy.ops[lead];
    const std::size_t n0 = c0.size();
    r0.resize(n0 + 1);
    std::size_t have0 = 1;
    per_core<std::size_t> have{};  // the other cores' ops pulled in the unfinished period
    for (;;) {
        const auto m = static_cast<std::uint32_t>(skipped_);
        const std::uint32_t step0 = r0[0].step;
        bool whole = true;
        {
            const std::uint32_t base = starts_[lead] + m * cy.starts[lead];
            for (std::size_t k = 0; whole && k < n0; ++k) {
                if (k == have0) {
                    if (f0.ended || !feed_.pull(li, f0, r0[k])) {
                        f0.ended = f0.ended || !f0.blocked;
                        whole = false;
                        break;
                    }
                    ++have0;
                }
                whole = matches(r0[k], c0[k], base, step0);
            }
        }
        bool more = false;
        if (whole) {  // the lead's period ends where its next step value starts, or its stream
            more = !f0.ended && feed_.pull(li, f0, r0[n0]);
            if (!more) f0.ended = f0.ended || !f0.blocked;
            if (!more && f0.blocked) whole = false;  // its step may go on after the wait
            if (more) ++have0;
            if (more && r0[n0].step == r0[n0 - 1].step) whole = false;
        }
        for (const int ci : history_.cores()) {
            const auto c = static_cast<std::size_t>(ci);
            if (!whole) break;
            if (c == lead) continue;
            const std::uint32_t base = starts_[c] + m * cy.starts[c];
            const std::uint32_t sc = last_step_[c] + m * cy.steps[c];
            const std::vector<op>& cyc = cy.ops[c];
            core_feed& fc = feed_.of(ci);
            std::vector<op>& r = fc.given;
            r.resize(cyc.size());
            for (std::size_t k = 0; whole && k < cyc.size(); ++k) {
                if (fc.ended || !feed_.pull(ci, fc, r[k])) {
                    fc.ended = fc.ended || !fc.blocked;
                    whole = false;
                    break;
                }
                ++have[c];
                whole = matches(r[k], cyc[k], base, sc);
            }
        }
        if (!whole) break;
        ++skipped_;
        have = {};
        if (!more) {
            have0 = 0;
            break;
        }
        r0[0] = r0[n0];
        have0 = 1;
    }
    r0.resize(have0);
    for (const int c : history_.cores())
        if (c != li) feed_.given_back(c).resize(have[static_cast<std::size_t>(c)]);
}

}  // namespace ptpu::sim::detail
