// Defines the engine's joint lane: every core of a megacore chip fast-forwarded together
// (docs/model.md §11) (sim/engine_class.hpp declares them).
#pragma once

#include "ptpu/sim/engine_class.hpp"

namespace ptpu::sim::detail {

template <class Source>
auto engine<Source>::at_joint_boundary(const op& o) -> bool {
    joint_boundary& b = jring_[ring_pos(jn_)];
    const double t = t_[0];
    b.t = t;
    b.last_done = last_done_;
    b.v = channels_[0].v_at(t);
    std::uint64_t key = 0;
    for (std::size_t c = 0; c < max_cores; ++c) {  // every entry: the ring's are reused
        const bool here = c < static_cast<std::size_t>(cores_);
        const bool blocked = here && state_[c] == core_state::blocked;
        b.lag[c] = here ? t_[c] - t : 0;
        b.starts[c] = here ? starts_[c] : 0;
        b.step[c] = c == 0 ? o.step : here ? jlast_[c] : 0;
        b.state[c] = here ? static_cast<std::uint8_t>(state_[c]) : 0;
        b.waits_on[c] = blocked ? wait_on_[c] : wait_target{};
        b.wait[c] = blocked ? at(wait_slot_[c]).id - starts_[c] : 0;
        b.batch[c].restart();
        b.hash[c] = 0;
        b.cuts[c].clear();
        key = (key * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t{b.state[c]} << 56) ^
              (std::uint64_t{b.wait[c]} << 40);
    }
    b.sum = totals();
    b.rows = mark_rows();
    b.spans = res_.timeline.size();
    b.snap.clear();
    for (int c = 0; c < cores_; ++c)
        for (const int s : live_[static_cast<std::size_t>(c)].slots())
            b.snap.push_back(snap_of(at(s), starts_[static_cast<std::size_t>(c)], t));
    // By start order (unique; a few entries: insertion sort).
    for (std::size_t k = 1; k < b.snap.size(); ++k)
        for (std::size_t i = k; i > 0 && b.snap[i].seq > b.snap[i - 1].seq; --i)
            std::swap(b.snap[i], b.snap[i - 1]);
    b.key = snaps_key(key ^ b.snap.size(), b.snap);
    ++jn_;
    jstep_ = o.step;
    if (jcooldown_ > 0) {
        --jcooldown_;
        return false;
    }
    for (std::size_t c = 0; c < static_cast<std::size_t>(cores_);
         ++c)  // ops a fast lane gave back come first
        if (replay_at_[c] < replays_[c].size()) return false;
    const std::int64_t j = jn_ - 1;
    if (j - 2 < jvalid_from_) return false;
    const joint_boundary& last = jring_[ring_pos(j - 1)];
    for (std::int64_t p = 1; p <= max_period && j - 2 * p >= jvalid_from_; ++p) {
        const joint_boundary& a = jring_[ring_pos(j - p)];
        const joint_boundary& before_last = jring_[ring_pos(j - 1 - p)];
        if (before_last.hash != last.hash || !same_joint_state(a, b)) continue;
        per_core<std::uint32_t> dstep{};
        for (std::size_t c = 0; c < max_cores; ++c) dstep[c] = b.step[c] - a.step[c];
        if (!rows_repeat(a.rows, b.rows, a.t, b.t, 0, cores_ - 1, dstep)) continue;
        bool repeats = true;
        for (std::int64_t i = 1; repeats && i <= p; ++i)
            repeats = same_joint_ops(jring_[ring_pos(j - i)], jring_[ring_pos(j - i - p)]);
        if (repeats) {
            enter_joint(static_cast<int>(p), o);
            return true;
        }
    }
    return false;
}

template <class Source>
auto engine<Source>::enter_joint(int p, const op& first) -> void {
    const std::int64_t j = jn_ - 1;
    const joint_boundary& a = jring_[ring_pos(j - p)];
    const joint_boundary& b = jring_[ring_pos(j)];
    for (std::size_t c = 0; c < static_cast<std::size_t>(cores_); ++c) {
        jcycle_[c].clear();
        for (std::int64_t k = j - p; k < j; ++k) {
            const joint_boundary& e = jring_[ring_pos(k)];
            for (op o : e.batch[c]) {  // relative to the period's start instead of the boundary's
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait)
                    o.dma += e.starts[c] - a.starts[c];
                o.step += e.step[c] - a.step[c];
                jcycle_[c].push_back(o);
            }
        }
        jcycle_starts_[c] = b.starts[c] - a.starts[c];
        jcycle_steps_[c] = b.step[c] - a.step[c];
    }
    jperiod_ = p;
    jfast_ = true;
    jskipped_ = 0;
    jcycle_dt_ = b.t - a.t;
    jcycle_done_ = b.last_done != a.last_done;
    jcycle_sum_ = b.sum.since(a.sum);
    for (std::size_t c = 0; c < static_cast<std::size_t>(cores_); ++c) {
        replays_[c].clear();
        replay_at_[c] = 0;
    }
    replays_[0].push_back(first);
    jby_batch_ = joint_batches_ready(p);
}

template <class Source>
auto engine<Source>::joint_batches_ready(int p) -> bool {
    if (!src_.batched() || !in_whole_[0] || in_pos_[0] != 1) return false;
    const std::int64_t j = jn_ - 1;
    std::vector<std::uint32_t> cuts;
    for (std::size_t c = 1; c < static_cast<std::size_t>(cores_); ++c) {
        if (!in_whole_[c]) return false;
        const std::vector<op>& cyc = jcycle_[c];
        cuts.clear();
        std::size_t off = 0;
        for (std::int64_t k = j - p; k < j; ++k) {
            const joint_boundary& e = jring_[ring_pos(k)];
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
            if (!matches(cur[i], cyc[i - kc], starts_[c], jlast_[c])) return false;
        // D_1 .. D_q: whole batches relative to their own first start and first op's step.
        const std::size_t q = cuts.size();
        std::vector<joint_batch>& jb = jb_[c];
        jb.assign(q, {});
        std::uint32_t starts_before = 0;
        std::size_t pos = 0;
        for (std::size_t i = 0; i < q; ++i) {  // starts in the cycle before each cut
            for (; pos < cuts[i]; ++pos) starts_before += cyc[pos].kind == op_kind::dma_start ? 1u : 0u;
            jb[i].sb = starts_before;
            jb[i].gb = cyc[cuts[i]].step;
        }
        for (std::size_t i = 0; i < q; ++i) {
            joint_batch& d = jb[i];
            const auto own = [&](op o, std::uint32_t dk, std::uint32_t ds) {
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += dk - d.sb;
                o.step += ds - d.gb;
                d.ops.push_back(o);
            };
            const std::size_t end = i + 1 < q ? cuts[i + 1] : n;
            for (std::size_t k = cuts[i]; k < end; ++k) own(cyc[k], 0, 0);
            if (i + 1 == q)  // the batch the core is in: its part after the boundary, a period on
                for (std::size_t k = 0; k < cuts[0]; ++k) own(cyc[k], jcycle_starts_[c], jcycle_steps_[c]);
        }
        for (std::size_t i = 0; i < q; ++i) {  // a batch the source says repeats its predecessor
            const joint_batch& d = jb[i];
            const joint_batch& e = jb[i == 0 ? q - 1 : i - 1];
            const std::uint32_t gap = i == 0 ? d.gb + jcycle_steps_[c] - e.gb : d.gb - e.gb;
            bool same = gap == 1 && d.ops.size() == e.ops.size();
            for (std::size_t k = 0; same && k < d.ops.size(); ++k) same = same_op(d.ops[k], e.ops[k]);
            jb[i].repeats = same;
        }
        jk_[c] = kc;
    }
    // Core 0: its boundary batches, and which repeat their predecessor.
    jsame0_.assign(static_cast<std::size_t>(p), 0);
    for (int k = 0; k < p; ++k) {
        const joint_boundary& e = jring_[ring_pos(j - p + k)];
        const joint_boundary& f = jring_[ring_pos(k == 0 ? j - 1 : j - p + k - 1)];
        const std::uint32_t gap = k == 0 ? e.step[0] + jcycle_steps_[0] - f.step[0] : e.step[0] - f.step[0];
        bool same = gap == 1 && e.batch[0].size() == f.batch[0].size();
        for (std::size_t i = 0; same && i < e.batch[0].size(); ++i) same = same_op(e.batch[0][i], f.batch[0][i]);
        jsame0_[static_cast<std::size_t>(k)] = same ? 1 : 0;
    }
    return true;
}

template <class Source>
auto engine<Source>::joint_fast_forward_batches() -> void {
    const std::int64_t j = jn_ - 1;
    const int p = jperiod_;
    const auto n = static_cast<std::size_t>(cores_);
    const joint_boundary& a = jring_[ring_pos(j - p)];
    const std::uint32_t g0 = jring_[ring_pos(j)].step[0];
    const per_core<std::uint32_t> s = starts_;
    const per_core<std::uint32_t> g = jlast_;
    auto base0 = [&](std::int64_t m, int k) {
        return s[0] + static_cast<std::uint32_t>(m) * jcycle_starts_[0] +
               (jring_[ring_pos(j - p + k)].starts[0] - a.starts[0]);
    };
    auto step0 = [&](std::int64_t m, int k) {
        return g0 + static_cast<std::uint32_t>(m) * jcycle_steps_[0] + (jring_[ring_pos(j - p + k)].step[0] - a.step[0]);
    };
    // D_i of core c in period m (the batch core c is in: D_q of period -1).
    auto base = [&](std::size_t c, std::int64_t m, std::size_t i) {
        return s[c] + static_cast<std::uint32_t>(m) * jcycle_starts_[c] + jb_[c][i].sb;
    };
    auto step = [&](std::size_t c, std::int64_t m, std::size_t i) {
        return g[c] + static_cast<std::uint32_t>(m) * jcycle_steps_[c] + jb_[c][i].gb;
    };
    std::span<const op> cur = in_[0];  // core 0's period's first batch, pulled already
    bool have = true;
    int b0 = 0;
    bool mismatch0 = false;
    // The other cores: batches matched in the last period, the one that differed.
    per_core<std::size_t> bc{};
    per_core<std::span<const op>> differs{};
    std::size_t stopped = 0;  // the core whose batches of the last period were not all matched
    for (;;) {
        const std::int64_t m = jskipped_;
        bool ok = true;
        for (b0 = 0; b0 < p; ++b0) {
            if (!have) {
                const auto [next, repeated] = next_lane_batch(0, jsame0_[static_cast<std::size_t>(b0)] != 0);
                if (next.ops.empty()) {
                    ends_[0] = true;
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
            if (!same_batch_ops(cur, jring_[ring_pos(j - p + b0)].batch[0], base0(m, b0), step0(m, b0))) {
                mismatch0 = true;
                ok = false;
                break;
            }
        }
        for (std::size_t c = 1; ok && c < n; ++c) {
            const std::vector<joint_batch>& jb = jb_[c];
            for (bc[c] = 0; bc[c] < jb.size(); ++bc[c]) {
                const joint_batch& d = jb[bc[c]];
                const auto [next, repeated] = next_lane_batch(static_cast<int>(c), d.repeats);
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
            stopped = c;
        }
        if (!ok) break;
        ++jskipped_;
        // The sources make as many periods in bulk as all can (see source_skips).
        if (!tl_lane_) {
            std::int64_t bulk = std::numeric_limits<std::int64_t>::max();
            for (std::size_t c = 0; c < n; ++c)
                bulk = std::min(
                    bulk, src_.skippable_periods(static_cast<int>(c), jcycle_steps_[c], jcycle_starts_[c]));
            for (std::size_t c = 0; c < n; ++c) src_.skip_periods(static_cast<int>(c), bulk);
            jskipped_ += bulk;
        }
    }
    if (b0 < p || mismatch0) stopped = 0;
    const std::int64_t m = jskipped_;
    // Core 0: the matched batches of the unfinished period, then the one that differed.
    std::vector<op>& r0 = replays_[0];
    r0.clear();
    for (int k = 0; k < b0; ++k)
        for (op o : jring_[ring_pos(j - p + k)].batch[0]) {
            if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += base0(m, k);
            o.step += step0(m, k);
            r0.push_back(o);
        }
    if (mismatch0) r0.insert(r0.end(), cur.begin(), cur.end());
    relabel_tail(0, r0);
    // Each other core: the rest of the batch it was in (D_q of the last whole period), then, if
    // its batches of the unfinished period were pulled, the matched ones and the one that differed.
    for (std::size_t c = 1; c < n; ++c) {
        std::vector<op>& r = replays_[c];
        r.clear();
        const auto emit = [&](std::int64_t period, std::size_t i, std::size_t from) {
            const joint_batch& d = jb_[c][i];
            for (std::size_t k = from; k < d.ops.size(); ++k) {
                op o = d.ops[k];
                if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += base(c, period, i);
                o.step += step(c, period, i);
                r.push_back(o);
            }
        };
        emit(m - 1, jb_[c].size() - 1, jk_[c]);
        if (c <= stopped) {
            for (std::size_t i = 0; i < bc[c]; ++i) emit(m, i, 0);
            r.insert(r.end(), differs[c].begin(), differs[c].end());
        }
        relabel_tail(static_cast<int>(c), r);
    }
    for (std::size_t c = 0; c < n; ++c) {
        in_[c] = {};
        in_pos_[c] = 0;
        replay_at_[c] = 0;
    }
    finish_joint(r0);
}

template <class Source>
inline auto engine<Source>::matches(const op& x, const op& y, std::uint32_t base, std::uint32_t step0) -> bool {
    const bool dma = x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait;
    return x.kind == y.kind && (dma ? x.dma - base : x.dma) == y.dma && same_work(x, y) &&
           x.bytes == y.bytes && x.far == y.far && x.run == y.run && x.waits_on == y.waits_on &&
           (tl_lane_ || x.label == y.label) && x.step - step0 == y.step && x.sub == y.sub && x.sem == y.sem &&
           x.core == y.core && x.dma_sem == y.dma_sem;
}

template <class Source>
auto engine<Source>::joint_fast_forward() -> void {
    std::vector<op>& r0 = replays_[0];  // r0[0]: the period's first op, pulled already
    const std::vector<op>& c0 = jcycle_[0];
    const std::size_t n0 = c0.size();
    const auto n = static_cast<std::size_t>(cores_);
    r0.resize(n0 + 1);
    std::size_t have0 = 1;
    per_core<std::size_t> have{};  // the other cores' ops pulled in the unfinished period
    for (;;) {
        const auto m = static_cast<std::uint32_t>(jskipped_);
        const std::uint32_t step0 = r0[0].step;
        bool whole = true;
        {
            const std::uint32_t base = starts_[0] + m * jcycle_starts_[0];
            for (std::size_t k = 0; whole && k < n0; ++k) {
                if (k == have0) {
                    if (ends_[0] || !pull(0, r0[k])) {
                        ends_[0] = true;
                        whole = false;
                        break;
                    }
                    ++have0;
                }
                whole = matches(r0[k], c0[k], base, step0);
            }
        }
        bool more = false;
        if (whole) {  // core 0's period ends where its next step value starts, or its stream
            more = !ends_[0] && pull(0, r0[n0]);
            ends_[0] = !more;
            if (more) ++have0;
            if (more && r0[n0].step == r0[n0 - 1].step) whole = false;
        }
        for (std::size_t c = 1; whole && c < n; ++c) {
            const std::uint32_t base = starts_[c] + m * jcycle_starts_[c];
            const std::uint32_t sc = jlast_[c] + m * jcycle_steps_[c];
            const std::vector<op>& cyc = jcycle_[c];
            std::vector<op>& r = replays_[c];
            r.resize(cyc.size());
            for (std::size_t k = 0; whole && k < cyc.size(); ++k) {
                if (ends_[c] || !pull(static_cast<int>(c), r[k])) {
                    ends_[c] = true;
                    whole = false;
                    break;
                }
                ++have[c];
                whole = matches(r[k], cyc[k], base, sc);
            }
        }
        if (!whole) break;
        ++jskipped_;
        have = {};
        if (!more) {
            have0 = 0;
            break;
        }
        r0[0] = r0[n0];
        have0 = 1;
    }
    r0.resize(have0);
    for (std::size_t c = 1; c < n; ++c) replays_[c].resize(have[c]);
    finish_joint(r0);
}

template <class Source>
auto engine<Source>::finish_joint(const std::vector<op>& r0) -> void {
    jfast_ = false;
    if (jskipped_ == 0) {
        jcooldown_ = jperiod_;  // the cycle did not repeat even once
    } else {
        apply_joint(jskipped_);
        if (!r0.empty()) {  // the boundary the replayed ops start from
            jstep_ = r0.front().step;
            jring_[ring_pos(jn_ - 1)].step[0] = jstep_;
        }
    }
    dirty_ = true;
}

template <class Source>
auto engine<Source>::apply_joint(std::int64_t m) -> void {
    const double dt = static_cast<double>(m) * jcycle_dt_;
    const tally& s = jcycle_sum_;
    add_periods(s, m);
    if (jcycle_done_) last_done_ += dt;
    const auto nc = static_cast<std::size_t>(cores_);
    std::uint32_t all = 0;
    per_core<std::uint64_t> n_ops{};  // per period
    for (std::size_t c = 0; c < nc; ++c) {
        all += static_cast<std::uint32_t>(m) * jcycle_starts_[c];
        n_ops[c] = jcycle_[c].size();
    }
    for (std::size_t c = 0; c < nc; ++c)
        shift_core(static_cast<int>(c), dt, static_cast<std::uint32_t>(m) * jcycle_starts_[c], all,
                   static_cast<std::uint64_t>(m) * n_ops[c],
                   static_cast<std::uint32_t>(m) * jcycle_steps_[c]);
    seq_ += all;
    for (std::size_t c = 1; c < nc;
         ++c) {  // a core other than core 0 may be blocked: in the image of its wait
        wait_ord_[c] += static_cast<std::uint64_t>(m) * n_ops[c];
        if (tl_lane_ && state_[c] == core_state::blocked) wait_label_[c] = labels_[c][wait_ord_[c]];
        const std::uint32_t k = static_cast<std::uint32_t>(m) * jcycle_steps_[c];
        jlast_[c] += k;
        wait_step_[c] += k;
    }
    for (std::size_t ch = 0; ch < channels_.size(); ++ch) channels_[ch].shift(dt, ch == 0 && s.idle > 0);
    // The history as if the skipped periods had been simulated (as apply() does for one
    // core), so that a longer period can be found after a shorter one broke.
    const std::int64_t j = jn_ - 1;
    const std::int64_t p = jperiod_;
    const row_mark ma = jring_[ring_pos(j - p)].rows;
    const row_mark mb = jring_[ring_pos(j)].rows;
    replicate_rows(ma, mb, m, jcycle_dt_, jcycle_steps_);
    const std::size_t s0 = jring_[ring_pos(j - p)].spans;
    const std::size_t s1 = jring_[ring_pos(j)].spans;
    replicate_spans(s0, s1, m, jcycle_dt_, jcycle_starts_, jcycle_steps_, n_ops);
    const std::int64_t depth = std::min(ring_size - 1, j - jvalid_from_ + m * p);
    jspare_ = jring_;
    for (std::int64_t i = 0; i <= depth; ++i) {
        joint_boundary& e = jring_[ring_pos(j + m * p - i)];
        if (i > m * p) {
            e = jspare_[ring_pos(j + m * p - i)];
            continue;
        }
        e = jspare_[ring_pos(j - i % p)];
        if (i > 0 && i % p == 0) {  // the ops after it: the cycle's first boundary's
            const joint_boundary& f = jspare_[ring_pos(j - p)];
            e.batch = f.batch;
            e.hash = f.hash;
            e.cuts = f.cuts;
        }
        const std::int64_t n = m - i / p;
        const auto nd = static_cast<double>(n);
        e.t += nd * jcycle_dt_;
        if (jcycle_done_) e.last_done += nd * jcycle_dt_;
        for (std::size_t c = 0; c < nc; ++c) {
            e.starts[c] += static_cast<std::uint32_t>(n) * jcycle_starts_[c];
            e.step[c] += static_cast<std::uint32_t>(n) * jcycle_steps_[c];
        }
        e.sum.add(s, n);
        e.rows = i == 0 ? mark_rows() : shifted_mark(e.rows, ma, mb, n, jcycle_dt_, jcycle_steps_);
        e.spans += static_cast<std::size_t>(n) * (s1 - s0);
    }
    jn_ = j + m * p + 1;
    jvalid_from_ = jn_ - 1 - depth;
}

}  // namespace ptpu::sim::detail
