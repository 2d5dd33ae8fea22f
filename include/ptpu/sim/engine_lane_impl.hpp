// Defines the engine's steady-state lane: the cores still running fast-forwarded together
// (docs/model.md §11) (sim/engine_class.hpp declares them).
#pragma once

#include "ptpu/sim/engine_class.hpp"

namespace ptpu::sim::detail {

template <class Source>
auto engine<Source>::at_boundary(const op& o) -> bool {
    const core_set& lane = history_.cores();
    boundary& b = history_.next();
    record_state(b, lane);
    b.rows = book_.mark();
    b.spans = spans_.size();
    if (!history_.close_boundary(o.step, last_step_)) return false;
    for (const int c : lane)  // ops the lane gave back come first
        if (replay_at_[static_cast<std::size_t>(c)] < replays_[static_cast<std::size_t>(c)].size())
            return false;
    const int p =
        history_.find_period([&](const boundary& a, const boundary& z, const per_core<std::uint32_t>& dstep) {
            return book_.repeat(a.rows, z.rows, a.t, z.t, lane, dstep);
        });
    if (p == 0) return false;
    enter_lane(p, o);
    return true;
}

template <class Source>
auto engine<Source>::enter_lane(int p, const op& first) -> void {
    history_.take_cycle(p);
    for (const int ci : history_.cores()) {
        const auto c = static_cast<std::size_t>(ci);
        replays_[c].clear();
        replay_at_[c] = 0;
    }
    fast_ = true;
    skipped_ = 0;
    replays_[static_cast<std::size_t>(history_.lead())].push_back(first);
    by_batch_ = batches_ready(p);
}

template <class Source>
auto engine<Source>::batches_ready(int p) -> bool {
    const cycle& cy = history_.found();
    const auto lead = static_cast<std::size_t>(history_.lead());
    if (!src_.batched() || !in_whole_[lead] || in_pos_[lead] != 1) return false;
    const std::int64_t j = history_.count() - 1;
    std::vector<std::uint32_t> cuts;
    for (const int ci : history_.cores()) {
        const auto c = static_cast<std::size_t>(ci);
        if (c == lead) continue;
        if (!in_whole_[c]) return false;
        const std::vector<op>& cyc = cy.ops[c];
        cuts.clear();
        std::size_t off = 0;
        for (std::int64_t k = j - p; k < j; ++k) {
            const boundary& e = history_.at(k);
            for (const std::uint32_t x : e.cuts[c]) cuts.push_back(static_cast<std::uint32_t>(off + x));
            off += e.batch[c].size();
        }
        const std::span<const op> cur = in_[c];
        const std::size_t kc = in_pos_[c];
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
auto engine<Source>::fast_forward_batches() -> void {
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
    std::span<const op> cur = in_[lead];  // the lead's period's first batch, pulled already
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
                    next_lane_batch(li, lead_same_[static_cast<std::size_t>(b0)] != 0);
                if (next.ops.empty()) {
                    ends_[lead] = true;
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
                const auto [next, repeated] = next_lane_batch(ci, d.repeats);
                if (next.ops.empty()) {
                    ends_[c] = true;
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
                bulk = std::min(bulk, src_.skippable_periods(c, cy.steps[static_cast<std::size_t>(c)],
                                                             cy.starts[static_cast<std::size_t>(c)]));
            for (const int c : history_.cores()) src_.skip_periods(c, bulk);
            skipped_ += bulk;
        }
    }
    if (b0 < p || mismatch0) stopped = li;
    const std::int64_t m = skipped_;
    // The lead: the matched batches of the unfinished period, then the one that differed.
    std::vector<op>& r0 = replays_[lead];
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
        std::vector<op>& r = replays_[c];
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
        const auto c = static_cast<std::size_t>(ci);
        in_[c] = {};
        in_pos_[c] = 0;
        replay_at_[c] = 0;
    }
    leave_lane(r0);
}

template <class Source>
inline auto engine<Source>::matches(const op& x, const op& y, std::uint32_t base, std::uint32_t step0)
    -> bool {
    const bool dma = x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait;
    return x.kind == y.kind && (dma ? x.dma - base : x.dma) == y.dma && same_work(x, y) &&
           x.bytes == y.bytes && x.far == y.far && x.run == y.run && x.waits_on == y.waits_on &&
           (spans_.in_lane() || x.label == y.label) && x.step - step0 == y.step && x.sub == y.sub &&
           x.sem == y.sem && x.core == y.core && x.dma_sem == y.dma_sem;
}

template <class Source>
auto engine<Source>::fast_forward() -> void {
    const cycle& cy = history_.found();
    const int li = history_.lead();
    const auto lead = static_cast<std::size_t>(li);
    std::vector<op>& r0 = replays_[lead];  // r0[0]: the period's first op, pulled already
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
                    if (ends_[lead] || !pull(li, r0[k])) {
                        ends_[lead] = true;
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
            more = !ends_[lead] && pull(li, r0[n0]);
            ends_[lead] = !more;
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
            std::vector<op>& r = replays_[c];
            r.resize(cyc.size());
            for (std::size_t k = 0; whole && k < cyc.size(); ++k) {
                if (ends_[c] || !pull(ci, r[k])) {
                    ends_[c] = true;
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
        if (c != li) replays_[static_cast<std::size_t>(c)].resize(have[static_cast<std::size_t>(c)]);
    leave_lane(r0);
}

template <class Source>
auto engine<Source>::leave_lane(const std::vector<op>& lead_ops) -> void {
    fast_ = false;
    if (skipped_ == 0) {
        history_.cool_down();  // the cycle did not repeat even once
    } else {
        apply(skipped_);
        if (!lead_ops.empty())
            history_.restart_lead_at(lead_ops.front().step);  // where the replayed ops start
    }
    dirty_ = true;
}

template <class Source>
auto engine<Source>::apply(std::int64_t m) -> void {
    const cycle& cy = history_.found();
    const core_set& lane = history_.cores();
    skip_time(lane, m, cy.dt, cy.starts, cy.steps, cy.runs, cy.sum, cy.done);
    for (const int ci : lane) {  // a core other than the lead may be blocked: in the image of its wait
        if (ci == lane.lead()) continue;
        const auto c = static_cast<std::size_t>(ci);
        wait_ord_[c] += static_cast<std::uint64_t>(m) * cy.runs[c];
        if (spans_.in_lane() && state_[c] == core_state::blocked)
            wait_label_[c] = spans_.label(ci, wait_ord_[c]);
        const std::uint32_t k = static_cast<std::uint32_t>(m) * cy.steps[c];
        last_step_[c] += k;
        wait_step_[c] += k;
    }
    // The skipped periods' rows and spans, then the history as if they had been simulated.
    const std::int64_t j = history_.count() - 1;
    const boundary& a = history_.at(j - cy.period);
    const boundary& b = history_.at(j);
    book_.replicate(a.rows, b.rows, m, cy.dt, cy.steps);
    spans_.replicate(a.spans, b.spans, m, cy.dt, cy.starts, cy.steps, cy.runs);
    history_.skipped(m, book_.mark(),
                     [&](const row_mark& x, const row_mark& ma, const row_mark& mb, std::int64_t n) {
                         return book_.shifted(x, ma, mb, n, cy.dt, cy.steps);
                     });
}

}  // namespace ptpu::sim::detail
