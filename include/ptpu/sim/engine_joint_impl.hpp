// Defines the engine's joint lane: both cores of a megacore chip fast-forwarded together
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
    b.d1 = t_[1] - t;
    b.starts = {starts_[0], starts_[1]};
    b.step = {o.step, jlast1_};
    b.state1 = static_cast<std::uint8_t>(state_[1]);
    const bool blocked = state_[1] == core_state::blocked;
    b.waits_on1 = blocked ? wait_on_[1] : wait_target{};
    b.wait1 = blocked ? at(wait_slot_[1]).id - starts_[1] : 0;
    b.sum = totals();
    b.rows = mark_rows();
    b.spans = res_.timeline.size();
    for (std::size_t c = 0; c < joint_cores; ++c) {
        b.batch[c].restart();
        b.hash[c] = 0;
    }
    b.cuts1.clear();
    b.snap.clear();
    for (int c = 0; c < static_cast<int>(joint_cores); ++c)
        for (const int s : live_[static_cast<std::size_t>(c)].slots())
            b.snap.push_back(snap_of(at(s), starts_[static_cast<std::size_t>(c)], t));
    // By start order (unique; a few entries: insertion sort).
    for (std::size_t k = 1; k < b.snap.size(); ++k)
        for (std::size_t i = k; i > 0 && b.snap[i].seq > b.snap[i - 1].seq; --i)
            std::swap(b.snap[i], b.snap[i - 1]);
    std::uint64_t key = b.snap.size() ^ (std::uint64_t{b.state1} << 56) ^ (std::uint64_t{b.wait1} << 40);
    for (const dma_snap& x : b.snap)
        key = (key * 0x9E3779B97F4A7C15ull) ^
              (std::uint64_t{x.id} << 24 ^ x.seq << 8 ^ static_cast<std::uint64_t>(x.bytes) << 32 ^
               static_cast<std::uint64_t>(x.phase) << 4 ^ x.channel ^ std::uint64_t{x.core} << 62);
    b.key = key;
    ++jn_;
    jstep_ = o.step;
    if (jcooldown_ > 0) {
        --jcooldown_;
        return false;
    }
    for (std::size_t c = 0; c < joint_cores; ++c)  // ops a fast lane gave back come first
        if (replay_at_[c] < replays_[c].size()) return false;
    const std::int64_t j = jn_ - 1;
    if (j - 2 < jvalid_from_) return false;
    const joint_boundary& last = jring_[ring_pos(j - 1)];
    for (std::int64_t p = 1; p <= max_period && j - 2 * p >= jvalid_from_; ++p) {
        const joint_boundary& a = jring_[ring_pos(j - p)];
        const joint_boundary& before_last = jring_[ring_pos(j - 1 - p)];
        if (before_last.hash != last.hash || !same_joint_state(a, b)) continue;
        if (!rows_repeat(a.rows, b.rows, a.t, b.t, 0, 1, {b.step[0] - a.step[0], b.step[1] - a.step[1]}))
            continue;
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
    for (std::size_t c = 0; c < joint_cores; ++c) {
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
    for (std::size_t c = 0; c < joint_cores; ++c) {
        replays_[c].clear();
        replay_at_[c] = 0;
    }
    replays_[0].push_back(first);
    jby_batch_ = joint_batches_ready(p);
}

template <class Source>
auto engine<Source>::joint_batches_ready(int p) -> bool {
    if (!src_.batched() || !in_whole_[0] || in_pos_[0] != 1 || !in_whole_[1]) return false;
    const std::int64_t j = jn_ - 1;
    const std::vector<op>& c1 = jcycle_[1];
    std::vector<std::uint32_t> cuts;
    std::size_t off = 0;
    for (std::int64_t k = j - p; k < j; ++k) {
        const joint_boundary& e = jring_[ring_pos(k)];
        for (const std::uint32_t x : e.cuts1) cuts.push_back(static_cast<std::uint32_t>(off + x));
        off += e.batch[1].size();
    }
    const std::span<const op> cur = in_[1];
    const std::size_t k1 = in_pos_[1];
    const std::size_t n1 = c1.size();
    if (cuts.empty() || k1 == 0 || n1 - cuts.back() != k1 || cuts.front() != cur.size() - k1) return false;
    // Core 1's next period starts with the rest of its current batch: it must be the cycle's
    // start (ids and steps relative to now).
    for (std::size_t i = k1; i < cur.size(); ++i)
        if (!matches(cur[i], c1[i - k1], starts_[1], jlast1_)) return false;
    // D_1 .. D_q: whole batches relative to their own first start and first op's step.
    const std::size_t q = cuts.size();
    jb1_.assign(q, {});
    std::uint32_t starts_before = 0;
    std::size_t pos = 0;
    for (std::size_t i = 0; i < q; ++i) {  // starts in c1 before each cut
        for (; pos < cuts[i]; ++pos) starts_before += c1[pos].kind == op_kind::dma_start ? 1u : 0u;
        jb1_[i].sb = starts_before;
        jb1_[i].gb = c1[cuts[i]].step;
    }
    for (std::size_t i = 0; i < q; ++i) {
        joint_batch& d = jb1_[i];
        d.ops.clear();
        const auto own = [&](op o, std::uint32_t dk, std::uint32_t ds) {
            if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += dk - d.sb;
            o.step += ds - d.gb;
            d.ops.push_back(o);
        };
        const std::size_t end = i + 1 < q ? cuts[i + 1] : n1;
        for (std::size_t k = cuts[i]; k < end; ++k) own(c1[k], 0, 0);
        if (i + 1 == q)  // the batch core 1 is in: its part after the boundary, a period on
            for (std::size_t k = 0; k < cuts[0]; ++k) own(c1[k], jcycle_starts_[1], jcycle_steps_[1]);
    }
    for (std::size_t i = 0; i < q; ++i) {  // a batch the source says repeats its predecessor
        const joint_batch& d = jb1_[i];
        const joint_batch& e = jb1_[i == 0 ? q - 1 : i - 1];
        const std::uint32_t gap = i == 0 ? d.gb + jcycle_steps_[1] - e.gb : d.gb - e.gb;
        bool same = gap == 1 && d.ops.size() == e.ops.size();
        for (std::size_t k = 0; same && k < d.ops.size(); ++k) same = same_op(d.ops[k], e.ops[k]);
        jb1_[i].repeats = same;
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
    jk1_ = k1;
    return true;
}

template <class Source>
auto engine<Source>::joint_fast_forward_batches() -> void {
    const std::int64_t j = jn_ - 1;
    const int p = jperiod_;
    const joint_boundary& a = jring_[ring_pos(j - p)];
    const std::uint32_t s0 = starts_[0];
    const std::uint32_t g0 = jring_[ring_pos(j)].step[0];
    const std::uint32_t s1 = starts_[1];
    const std::uint32_t g1 = jlast1_;
    const auto q = static_cast<int>(jb1_.size());
    auto base0 = [&](std::int64_t m, int k) {
        return s0 + static_cast<std::uint32_t>(m) * jcycle_starts_[0] +
               (jring_[ring_pos(j - p + k)].starts[0] - a.starts[0]);
    };
    auto step0 = [&](std::int64_t m, int k) {
        return g0 + static_cast<std::uint32_t>(m) * jcycle_steps_[0] + (jring_[ring_pos(j - p + k)].step[0] - a.step[0]);
    };
    // D_i of core 1 in period m (the batch core 1 is in: D_q of period -1).
    auto base1 = [&](std::int64_t m, int i) {
        return s1 + static_cast<std::uint32_t>(m) * jcycle_starts_[1] + jb1_[static_cast<std::size_t>(i)].sb;
    };
    auto step1 = [&](std::int64_t m, int i) {
        return g1 + static_cast<std::uint32_t>(m) * jcycle_steps_[1] + jb1_[static_cast<std::size_t>(i)].gb;
    };
    std::span<const op> cur = in_[0];  // core 0's period's first batch, pulled already
    bool have = true;
    int b0 = 0, b1 = 0;
    bool mismatch0 = false, mismatch1 = false;
    std::span<const op> cur1;
    for (;;) {
        const std::int64_t m = jskipped_;
        bool ok = true;
        for (b0 = 0; b0 < p; ++b0) {
            if (!have) {
                const auto [n, repeated] = next_lane_batch(0, jsame0_[static_cast<std::size_t>(b0)] != 0);
                if (n.ops.empty()) {
                    ends_[0] = true;
                    ok = false;
                    break;
                }
                if (repeated) continue;
                cur = n.ops;
                if (!n.whole_step) {
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
        if (!ok) break;
        for (b1 = 0; b1 < q; ++b1) {
            const joint_batch& d = jb1_[static_cast<std::size_t>(b1)];
            const auto [n, repeated] = next_lane_batch(1, d.repeats);
            if (n.ops.empty()) {
                ends_[1] = true;
                ok = false;
                break;
            }
            if (repeated) continue;
            cur1 = n.ops;
            if (!same_batch_ops(cur1, d.ops, base1(m, b1), step1(m, b1))) {
                mismatch1 = true;
                ok = false;
                break;
            }
        }
        if (!ok) break;
        ++jskipped_;
        // Both sources make as many periods in bulk as both can (see source_skips).
        if (!tl_lane_) {
            const std::int64_t m = std::min(src_.skippable_periods(0, jcycle_steps_[0], jcycle_starts_[0]),
                                            src_.skippable_periods(1, jcycle_steps_[1], jcycle_starts_[1]));
            src_.skip_periods(0, m);
            src_.skip_periods(1, m);
            jskipped_ += m;
        }
    }
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
    // Core 1: the rest of the batch it is in (D_q of the last whole period), then the matched
    // batches of the unfinished period, then the one that differed.
    std::vector<op>& r1 = replays_[1];
    r1.clear();
    const auto emit1 = [&](std::int64_t period, int i, std::size_t from) {
        const joint_batch& d = jb1_[static_cast<std::size_t>(i)];
        for (std::size_t k = from; k < d.ops.size(); ++k) {
            op o = d.ops[k];
            if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += base1(period, i);
            o.step += step1(period, i);
            r1.push_back(o);
        }
    };
    emit1(m - 1, q - 1, jk1_);
    if (!mismatch0 && !(ends_[0] && b0 < p)) {  // core 1's batches of period m were pulled
        for (int i = 0; i < b1; ++i) emit1(m, i, 0);
        if (mismatch1) r1.insert(r1.end(), cur1.begin(), cur1.end());
    }
    relabel_tail(0, r0);
    relabel_tail(1, r1);
    for (std::size_t c = 0; c < joint_cores; ++c) {
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
    std::vector<op>& r1 = replays_[1];
    const std::vector<op>& c0 = jcycle_[0];
    const std::vector<op>& c1 = jcycle_[1];
    const std::size_t n0 = c0.size();
    const std::size_t n1 = c1.size();
    r0.resize(n0 + 1);
    std::size_t have0 = 1;
    std::size_t have1 = 0;
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
        if (whole) {
            const std::uint32_t base = starts_[1] + m * jcycle_starts_[1];
            const std::uint32_t s1 = jlast1_ + m * jcycle_steps_[1];
            r1.resize(n1);
            for (std::size_t k = 0; whole && k < n1; ++k) {
                if (ends_[1] || !pull(1, r1[k])) {
                    ends_[1] = true;
                    whole = false;
                    break;
                }
                ++have1;
                whole = matches(r1[k], c1[k], base, s1);
            }
        }
        if (!whole) break;
        ++jskipped_;
        have1 = 0;
        if (!more) {
            have0 = 0;
            break;
        }
        r0[0] = r0[n0];
        have0 = 1;
    }
    r0.resize(have0);
    r1.resize(have1);
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
    std::uint32_t all = 0;
    for (std::size_t c = 0; c < joint_cores; ++c) all += static_cast<std::uint32_t>(m) * jcycle_starts_[c];
    const per_core<std::uint64_t> n_ops{jcycle_[0].size(), jcycle_[1].size()};  // per period
    for (std::size_t c = 0; c < joint_cores; ++c) {
        const std::uint32_t k = static_cast<std::uint32_t>(m) * jcycle_starts_[c];
        t_[c] += dt;
        for (const int sl : live_[c].slots()) {
            live_dma& d = at(sl);
            d.ready += dt;
            d.begin += dt;
            d.id += k;
            d.seq += all;
            d.ord += static_cast<std::uint64_t>(m) * n_ops[c];
            d.step += static_cast<std::uint32_t>(m) * jcycle_steps_[c];
            if (tl_lane_) d.label = labels_[c][d.ord];
        }
        live_[c].shift_ids(k);
        starts_[c] += k;
        ord_[c] += static_cast<std::uint64_t>(m) * n_ops[c];
    }
    wait_ord_[1] += static_cast<std::uint64_t>(m) * n_ops[1];  // core 1 blocked: in the image of its wait
    if (tl_lane_ && state_[1] == core_state::blocked) wait_label_[1] = labels_[1][wait_ord_[1]];
    seq_ += all;
    const std::uint32_t k1 = static_cast<std::uint32_t>(m) * jcycle_steps_[1];
    jlast1_ += k1;
    wait_step_[1] += k1;
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
            e.cuts1 = f.cuts1;
        }
        const std::int64_t n = m - i / p;
        const auto nd = static_cast<double>(n);
        e.t += nd * jcycle_dt_;
        if (jcycle_done_) e.last_done += nd * jcycle_dt_;
        for (std::size_t c = 0; c < joint_cores; ++c) {
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
