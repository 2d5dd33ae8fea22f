// Defines the engine's steady-state lane: the cores still running fast-forwarded together
// (docs/model.md §11) (sim/engine_class.hpp declares them).
#pragma once

#include "ptpu/sim/engine_class.hpp"

namespace ptpu::sim::detail {

template <class Source>
auto engine<Source>::at_boundary(const op& o) -> bool {
    boundary& b = ring_[ring_pos(n_)];
    record_state(b, lane_);
    const int lead = lane_.lead();
    for (std::size_t c = 0; c < max_cores; ++c) {
        b.step[c] = 0;
        b.batch[c].restart();
        b.hash[c] = 0;
        b.cuts[c].clear();
    }
    for (const int c : lane_)
        b.step[static_cast<std::size_t>(c)] = c == lead ? o.step : last_step_[static_cast<std::size_t>(c)];
    b.rows = mark_rows();
    b.spans = res_.timeline.size();
    ++n_;
    step_ = o.step;
    if (cooldown_ > 0) {
        --cooldown_;
        return false;
    }
    for (const int c : lane_)  // ops the lane gave back come first
        if (replay_at_[static_cast<std::size_t>(c)] < replays_[static_cast<std::size_t>(c)].size())
            return false;
    // The shortest period p whose last two repetitions brought the same ops, and whose end
    // state equals its start state.
    const std::int64_t j = n_ - 1;
    if (j - 2 < valid_from_) return false;
    const boundary& last = hist(j - 1);
    for (std::int64_t p = 1; p <= max_period && j - 2 * p >= valid_from_; ++p) {
        const boundary& a = hist(j - p);
        if (hist(j - 1 - p).hash != last.hash || !same_state(a, b)) continue;
        per_core<std::uint32_t> dstep{};
        for (std::size_t c = 0; c < max_cores; ++c) dstep[c] = b.step[c] - a.step[c];
        if (!rows_repeat(a.rows, b.rows, a.t, b.t, lane_, dstep)) continue;
        bool repeats = true;
        for (std::int64_t i = 1; repeats && i <= p; ++i) repeats = same_ops(hist(j - i), hist(j - i - p));
        if (repeats) {
            enter_lane(static_cast<int>(p), o);
            return true;
        }
    }
    return false;
}

template <class Source>
auto engine<Source>::enter_lane(int p, const op& first) -> void {
    const std::int64_t j = n_ - 1;
    const boundary& a = hist(j - p);
    const boundary& b = hist(j);
    for (const int ci : lane_) {
        const auto c = static_cast<std::size_t>(ci);
        cycle_[c].clear();
        for (std::int64_t k = j - p; k < j; ++k) {
            const boundary& e = hist(k);
            for (op o : e.batch[c]) {  // relative to the period's start instead of the boundary's
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait)
                    o.dma += e.starts[c] - a.starts[c];
                o.step += e.step[c] - a.step[c];
                cycle_[c].push_back(o);
            }
        }
        cycle_starts_[c] = b.starts[c] - a.starts[c];
        cycle_steps_[c] = b.step[c] - a.step[c];
        cycle_ops_[c] = b.ord[c] - a.ord[c];
        replays_[c].clear();
        replay_at_[c] = 0;
    }
    period_ = p;
    fast_ = true;
    skipped_ = 0;
    cycle_dt_ = b.t - a.t;
    cycle_done_ = b.last_done != a.last_done;  // a DMA completed within the period
    cycle_sum_ = b.sum.since(a.sum);
    replays_[static_cast<std::size_t>(lane_.lead())].push_back(first);
    by_batch_ = batches_ready(p);
}

template <class Source>
auto engine<Source>::batches_ready(int p) -> bool {
    const auto lead = static_cast<std::size_t>(lane_.lead());
    if (!src_.batched() || !in_whole_[lead] || in_pos_[lead] != 1) return false;
    const std::int64_t j = n_ - 1;
    std::vector<std::uint32_t> cuts;
    for (const int ci : lane_) {
        const auto c = static_cast<std::size_t>(ci);
        if (c == lead) continue;
        if (!in_whole_[c]) return false;
        const std::vector<op>& cyc = cycle_[c];
        cuts.clear();
        std::size_t off = 0;
        for (std::int64_t k = j - p; k < j; ++k) {
            const boundary& e = hist(k);
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
        std::vector<lane_batch_ops>& jb = batches_[c];
        jb.assign(q, {});
        std::uint32_t starts_before = 0;
        std::size_t pos = 0;
        for (std::size_t i = 0; i < q; ++i) {  // starts in the cycle before each cut
            for (; pos < cuts[i]; ++pos) starts_before += cyc[pos].kind == op_kind::dma_start ? 1u : 0u;
            jb[i].sb = starts_before;
            jb[i].gb = cyc[cuts[i]].step;
        }
        for (std::size_t i = 0; i < q; ++i) {
            lane_batch_ops& d = jb[i];
            const auto own = [&](op o, std::uint32_t dk, std::uint32_t ds) {
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += dk - d.sb;
                o.step += ds - d.gb;
                d.ops.push_back(o);
            };
            const std::size_t end = i + 1 < q ? cuts[i + 1] : n;
            for (std::size_t k = cuts[i]; k < end; ++k) own(cyc[k], 0, 0);
            if (i + 1 == q)  // the batch the core is in: its part after the boundary, a period on
                for (std::size_t k = 0; k < cuts[0]; ++k) own(cyc[k], cycle_starts_[c], cycle_steps_[c]);
        }
        for (std::size_t i = 0; i < q; ++i) {  // a batch the source says repeats its predecessor
            const lane_batch_ops& d = jb[i];
            const lane_batch_ops& e = jb[i == 0 ? q - 1 : i - 1];
            const std::uint32_t gap = i == 0 ? d.gb + cycle_steps_[c] - e.gb : d.gb - e.gb;
            bool same = gap == 1 && d.ops.size() == e.ops.size();
            for (std::size_t k = 0; same && k < d.ops.size(); ++k) same = same_op(d.ops[k], e.ops[k]);
            jb[i].repeats = same;
        }
        batch_pos_[c] = kc;
    }
    // The lead: its boundary batches, and which repeat their predecessor.
    lead_same_.assign(static_cast<std::size_t>(p), 0);
    for (int k = 0; k < p; ++k) {
        const boundary& e = hist(j - p + k);
        const boundary& f = hist(k == 0 ? j - 1 : j - p + k - 1);
        const std::uint32_t gap =
            k == 0 ? e.step[lead] + cycle_steps_[lead] - f.step[lead] : e.step[lead] - f.step[lead];
        bool same = gap == 1 && e.batch[lead].size() == f.batch[lead].size();
        for (std::size_t i = 0; same && i < e.batch[lead].size(); ++i)
            same = same_op(e.batch[lead][i], f.batch[lead][i]);
        lead_same_[static_cast<std::size_t>(k)] = same ? 1 : 0;
    }
    return true;
}

template <class Source>
auto engine<Source>::fast_forward_batches() -> void {
    const std::int64_t j = n_ - 1;
    const int p = period_;
    const int li = lane_.lead();
    const auto lead = static_cast<std::size_t>(li);
    const boundary& a = hist(j - p);
    const std::uint32_t g0 = hist(j).step[lead];
    const per_core<std::uint32_t> s = starts_;
    const per_core<std::uint32_t> g = last_step_;
    auto base0 = [&](std::int64_t m, int k) {
        return s[lead] + static_cast<std::uint32_t>(m) * cycle_starts_[lead] +
               (hist(j - p + k).starts[lead] - a.starts[lead]);
    };
    auto step0 = [&](std::int64_t m, int k) {
        return g0 + static_cast<std::uint32_t>(m) * cycle_steps_[lead] +
               (hist(j - p + k).step[lead] - a.step[lead]);
    };
    // D_i of core c in period m (the batch core c is in: D_q of period -1).
    auto base = [&](std::size_t c, std::int64_t m, std::size_t i) {
        return s[c] + static_cast<std::uint32_t>(m) * cycle_starts_[c] + batches_[c][i].sb;
    };
    auto step = [&](std::size_t c, std::int64_t m, std::size_t i) {
        return g[c] + static_cast<std::uint32_t>(m) * cycle_steps_[c] + batches_[c][i].gb;
    };
    // The sources make periods in bulk when each lane core's period is as many whole-step
    // batches as it makes step values (what period_source counts).
    bool bulk_ok = !tl_lane_;
    for (const int ci : lane_) {
        const auto c = static_cast<std::size_t>(ci);
        const std::size_t batches = c == lead ? static_cast<std::size_t>(p) : batches_[c].size();
        bulk_ok = bulk_ok && cycle_steps_[c] == batches;
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
            if (!same_batch_ops(cur, hist(j - p + b0).batch[lead], base0(m, b0), step0(m, b0))) {
                mismatch0 = true;
                ok = false;
                break;
            }
        }
        for (const int ci : lane_) {
            if (!ok) break;
            const auto c = static_cast<std::size_t>(ci);
            if (c == lead) continue;
            const std::vector<lane_batch_ops>& jb = batches_[c];
            for (bc[c] = 0; bc[c] < jb.size(); ++bc[c]) {
                const lane_batch_ops& d = jb[bc[c]];
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
            for (const int c : lane_)
                bulk = std::min(bulk, src_.skippable_periods(c, cycle_steps_[static_cast<std::size_t>(c)],
                                                             cycle_starts_[static_cast<std::size_t>(c)]));
            for (const int c : lane_) src_.skip_periods(c, bulk);
            skipped_ += bulk;
        }
    }
    if (b0 < p || mismatch0) stopped = li;
    const std::int64_t m = skipped_;
    // The lead: the matched batches of the unfinished period, then the one that differed.
    std::vector<op>& r0 = replays_[lead];
    r0.clear();
    for (int k = 0; k < b0; ++k)
        for (op o : hist(j - p + k).batch[lead]) {
            if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += base0(m, k);
            o.step += step0(m, k);
            r0.push_back(o);
        }
    if (mismatch0) r0.insert(r0.end(), cur.begin(), cur.end());
    relabel_tail(li, r0);
    // Each other core: the rest of the batch it was in (D_q of the last whole period), then, if
    // its batches of the unfinished period were pulled, the matched ones and the one that differed.
    for (const int ci : lane_) {
        const auto c = static_cast<std::size_t>(ci);
        if (c == lead) continue;
        std::vector<op>& r = replays_[c];
        r.clear();
        const auto emit = [&](std::int64_t period, std::size_t i, std::size_t from) {
            const lane_batch_ops& d = batches_[c][i];
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
        relabel_tail(ci, r);
    }
    for (const int ci : lane_) {
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
           (tl_lane_ || x.label == y.label) && x.step - step0 == y.step && x.sub == y.sub && x.sem == y.sem &&
           x.core == y.core && x.dma_sem == y.dma_sem;
}

template <class Source>
auto engine<Source>::fast_forward() -> void {
    const int li = lane_.lead();
    const auto lead = static_cast<std::size_t>(li);
    std::vector<op>& r0 = replays_[lead];  // r0[0]: the period's first op, pulled already
    const std::vector<op>& c0 = cycle_[lead];
    const std::size_t n0 = c0.size();
    r0.resize(n0 + 1);
    std::size_t have0 = 1;
    per_core<std::size_t> have{};  // the other cores' ops pulled in the unfinished period
    for (;;) {
        const auto m = static_cast<std::uint32_t>(skipped_);
        const std::uint32_t step0 = r0[0].step;
        bool whole = true;
        {
            const std::uint32_t base = starts_[lead] + m * cycle_starts_[lead];
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
        for (const int ci : lane_) {
            const auto c = static_cast<std::size_t>(ci);
            if (!whole) break;
            if (c == lead) continue;
            const std::uint32_t base = starts_[c] + m * cycle_starts_[c];
            const std::uint32_t sc = last_step_[c] + m * cycle_steps_[c];
            const std::vector<op>& cyc = cycle_[c];
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
    for (const int c : lane_)
        if (c != li) replays_[static_cast<std::size_t>(c)].resize(have[static_cast<std::size_t>(c)]);
    leave_lane(r0);
}

template <class Source>
auto engine<Source>::leave_lane(const std::vector<op>& lead_ops) -> void {
    fast_ = false;
    if (skipped_ == 0) {
        cooldown_ = period_;  // the cycle did not repeat even once
    } else {
        apply(skipped_);
        if (!lead_ops.empty()) {  // the boundary the replayed ops start from
            step_ = lead_ops.front().step;
            hist(n_ - 1).step[static_cast<std::size_t>(lane_.lead())] = step_;
        }
    }
    dirty_ = true;
}

template <class Source>
auto engine<Source>::apply(std::int64_t m) -> void {
    const tally& s = cycle_sum_;
    skip_time(lane_, m, cycle_dt_, cycle_starts_, cycle_steps_, cycle_ops_, s, cycle_done_);
    const int lead = lane_.lead();
    for (const int ci : lane_) {  // a core other than the lead may be blocked: in the image of its wait
        if (ci == lead) continue;
        const auto c = static_cast<std::size_t>(ci);
        wait_ord_[c] += static_cast<std::uint64_t>(m) * cycle_ops_[c];
        if (tl_lane_ && state_[c] == core_state::blocked) wait_label_[c] = labels_[c][wait_ord_[c]];
        const std::uint32_t k = static_cast<std::uint32_t>(m) * cycle_steps_[c];
        last_step_[c] += k;
        wait_step_[c] += k;
    }
    // The history as if the skipped periods had been simulated, so that a longer period can be
    // found after a shorter one broke: the boundary i back from the current one is, for
    // i = q·p + r within the skipped periods, the cycle's boundary j - r moved by m - q periods;
    // further back, the boundaries recorded before the skip.
    const std::int64_t j = n_ - 1;
    const std::int64_t p = period_;
    const row_mark ma = hist(j - p).rows;
    const row_mark mb = hist(j).rows;
    replicate_rows(ma, mb, m, cycle_dt_, cycle_steps_);
    const std::size_t s0 = hist(j - p).spans;
    const std::size_t s1 = hist(j).spans;
    replicate_spans(s0, s1, m, cycle_dt_, cycle_starts_, cycle_steps_, cycle_ops_);
    const std::int64_t depth = std::min(ring_size - 1, j - valid_from_ + m * p);
    std::swap(ring_, spare_);
    for (std::int64_t i = 0; i <= depth; ++i) {
        boundary& e = ring_[ring_pos(j + m * p - i)];
        if (i > m * p) {
            e = spare_[ring_pos(j + m * p - i)];
            continue;
        }
        e = spare_[ring_pos(j - i % p)];
        if (i > 0 && i % p == 0) {  // the ops after it: the cycle's first boundary's
            const boundary& f = spare_[ring_pos(j - p)];
            e.batch = f.batch;
            e.hash = f.hash;
            e.cuts = f.cuts;
        }
        const std::int64_t n = m - i / p;
        const auto nd = static_cast<double>(n);
        e.t += nd * cycle_dt_;
        if (cycle_done_) e.last_done += nd * cycle_dt_;
        for (const int ci : lane_) {
            const auto c = static_cast<std::size_t>(ci);
            e.starts[c] += static_cast<std::uint32_t>(n) * cycle_starts_[c];
            e.step[c] += static_cast<std::uint32_t>(n) * cycle_steps_[c];
            e.ord[c] += static_cast<std::uint64_t>(n) * cycle_ops_[c];
        }
        e.sum.add(s, n);
        e.rows = i == 0 ? mark_rows() : shifted_mark(e.rows, ma, mb, n, cycle_dt_, cycle_steps_);
        e.spans += static_cast<std::size_t>(n) * (s1 - s0);
    }
    n_ = j + m * p + 1;
    valid_from_ = n_ - 1 - depth;
}

}  // namespace ptpu::sim::detail
