// Defines the engine's steady-state fast lane on one core (docs/model.md §11): boundaries,
// periods, fast-forwarding, and the per-step rows and timeline it keeps (sim/engine_class.hpp
// declares them).
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
inline auto engine<Source>::record_state(boundary& b, int c) -> void {
    const auto u = static_cast<std::size_t>(c);
    const double t = t_[u];
    b.t = t;
    b.last_done = last_done_;
    b.v = channels_[0].v_at(t);
    b.starts = starts_[u];
    b.sum = totals();
    b.snap.clear();
    for (const int s : live_[u].slots()) b.snap.push_back(snap_of(at(s), starts_[u], t));
    for (const int s : sem_dmas_[u]) b.snap.push_back(snap_of(at(s), starts_[u], t));
    b.sems.assign(sem_val_[u].begin(), sem_val_[u].end());
    for (std::size_t k = 1; k < b.snap.size(); ++k)  // by id (a few entries: insertion sort)
        for (std::size_t i = k; i > 0 && b.snap[i].id < b.snap[i - 1].id; --i)
            std::swap(b.snap[i], b.snap[i - 1]);
    b.key = snaps_key(b.snap.size(), b.snap);
}

template <class Source>
inline auto engine<Source>::at_boundary(int c, const op& o) -> bool {
    auto& replay_ = replays_[static_cast<std::size_t>(c)];
    auto& replay_pos_ = replay_at_[static_cast<std::size_t>(c)];
    boundary& b = ring_[static_cast<std::size_t>(nb_ % ring_size)];
    record_state(b, c);
    b.step = o.step;
    b.rows = mark_rows();
    b.spans = res_.timeline.size();
    b.batch.restart();
    b.hash = 0;
    ++nb_;
    cur_step_ = o.step;
    if (cooldown_ > 0) {
        --cooldown_;
        return false;
    }
    if (replay_pos_ < replay_.size()) return false;  // ops the fast lane gave back come first
    // The shortest period p whose last two repetitions brought the same ops, and whose end
    // state equals its start state.
    const std::int64_t j = nb_ - 1;
    if (j - 2 < valid_from_) return false;
    const std::uint64_t last = at_boundary_index(j - 1).hash;
    for (std::int64_t p = 1; p <= max_period && j - 2 * p >= valid_from_; ++p) {
        const boundary& a = at_boundary_index(j - p);
        if (a.key != b.key || at_boundary_index(j - 1 - p).hash != last || !same_state(a, b)) continue;
        const std::uint32_t ds = b.step - a.step;
        if (!rows_repeat(a.rows, b.rows, a.t, b.t, c, c, each_core(ds))) continue;
        bool repeats = true;
        for (std::int64_t i = 1; repeats && i <= p; ++i)
            repeats = same_batch(at_boundary_index(j - i), at_boundary_index(j - i - p));
        if (repeats) {
            enter_fast(c, static_cast<int>(p), o);
            return true;
        }
    }
    return false;
}

template <class Source>
inline auto engine<Source>::enter_fast(int c, int p, const op& first) -> void {
    auto& replay_ = replays_[static_cast<std::size_t>(c)];
    auto& replay_pos_ = replay_at_[static_cast<std::size_t>(c)];
    const std::int64_t j = nb_ - 1;
    const boundary& a = at_boundary_index(j - p);
    const boundary& b = at_boundary_index(j);
    cycle_.clear();
    for (std::int64_t k = j - p; k < j; ++k) {
        const boundary& e = at_boundary_index(k);
        for (op o : e.batch) {  // relative to the period's start instead of the step's
            if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += e.starts - a.starts;
            o.step += e.step - a.step;
            cycle_.push_back(o);
        }
    }
    period_ = p;
    fast_ = true;
    skipped_ = 0;
    cycle_dt_ = b.t - a.t;
    cycle_starts_ = b.starts - a.starts;
    cycle_steps_ = b.step - a.step;
    cycle_sum_ = b.sum.since(a.sum);
    cycle_done_ = b.last_done != a.last_done;  // a DMA completed within the period
    replay_.clear();
    replay_pos_ = 0;
    replay_.push_back(first);
    // Batches that are whole steps, the boundary at the first op of one: compared a batch at a
    // time, and repeated batches not at all.
    const auto u = static_cast<std::size_t>(c);
    by_batch_ = in_whole_[u] && in_pos_[u] == 1;
    if (by_batch_) {
        cyc_same_.assign(static_cast<std::size_t>(p), 0);
        for (std::int64_t k = 0; k < p; ++k)
            cyc_same_[static_cast<std::size_t>(k)] =
                same_batch(at_boundary_index(j - p + k),
                           at_boundary_index(k == 0 ? j - 1 : j - p + k - 1))
                    ? 1
                    : 0;
    }
}

template <class Source>
inline auto engine<Source>::fast_forward_batches(int c) -> void {
    auto& replay_ = replays_[static_cast<std::size_t>(c)];
    auto& ended_ = ends_[static_cast<std::size_t>(c)];
    const auto u = static_cast<std::size_t>(c);
    const std::int64_t j = nb_ - 1;
    const int p = period_;
    const boundary& a = at_boundary_index(j - p);
    const std::uint32_t starts = starts_[u];
    const std::uint32_t step = at_boundary_index(j).step;
    std::span<const op> cur = in_[u];  // the period's first batch, pulled already
    bool have = true;                  // cur holds batch b's ops, unread
    int b = 0;
    bool mismatch = false;
    // Where batch b of the current period starts counting ids and steps.
    auto base_of = [&](int k) {
        return starts + static_cast<std::uint32_t>(skipped_) * cycle_starts_ +
               (at_boundary_index(j - p + k).starts - a.starts);
    };
    auto step_of = [&](int k) {
        return step + static_cast<std::uint32_t>(skipped_) * cycle_steps_ +
               (at_boundary_index(j - p + k).step - a.step);
    };
    for (;;) {
        if (!have) {
            const auto [n, repeated] = next_lane_batch(c, cyc_same_[static_cast<std::size_t>(b)] != 0);
            if (n.ops.empty()) {
                ended_ = true;
                break;
            }
            if (repeated) {
                if (++b == p) b = 0, ++skipped_, skipped_ += source_skips(c);
                continue;
            }
            cur = n.ops;
            if (!n.whole_step) {
                mismatch = true;
                break;
            }
        }
        have = false;
        const boundary& e = at_boundary_index(j - p + b);
        const std::uint32_t base = base_of(b);
        const std::uint32_t s0 = step_of(b);
        if (!same_batch_ops(cur, e.batch, base, s0)) {
            mismatch = true;
            break;
        }
        if (++b == p) b = 0, ++skipped_, skipped_ += source_skips(c);
    }
    // The unfinished period: its matched batches (from the cycle), then the one that differed.
    replay_.clear();
    for (int k = 0; k < b; ++k) {
        const std::uint32_t base = base_of(k);
        const std::uint32_t s0 = step_of(k);
        for (op o : at_boundary_index(j - p + k).batch) {
            if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma += base;
            o.step += s0;
            replay_.push_back(o);
        }
    }
    if (mismatch) replay_.insert(replay_.end(), cur.begin(), cur.end());
    relabel_tail(c, replay_);
    in_[u] = {};
    in_pos_[u] = 0;
    leave_fast(c);
}

template <class Source>
inline auto engine<Source>::leave_fast(int c) -> void {
    auto& replay_ = replays_[static_cast<std::size_t>(c)];
    auto& replay_pos_ = replay_at_[static_cast<std::size_t>(c)];
    fast_ = false;
    if (skipped_ == 0) {
        cooldown_ = period_;  // the cycle did not repeat even once
    } else {
        apply(c, skipped_);
        if (!replay_.empty()) {
            cur_step_ = replay_.front().step;
            ring_[static_cast<std::size_t>((nb_ - 1) % ring_size)].step = cur_step_;
        }
    }
    replay_pos_ = 0;
    dirty_ = true;
}

template <class Source>
inline auto engine<Source>::fast_forward(int c) -> void {
    auto& replay_ = replays_[static_cast<std::size_t>(c)];
    auto& ended_ = ends_[static_cast<std::size_t>(c)];
    const std::size_t n = cycle_.size();
    replay_.resize(n + 1);  // replay_[0] holds the period's first op, pulled already
    std::size_t have = 1;
    const std::uint32_t starts = starts_[c];
    for (;;) {
        const std::uint32_t base = starts + static_cast<std::uint32_t>(skipped_) * cycle_starts_;
        const std::uint32_t step0 = replay_[0].step;
        bool whole = true;
        for (std::size_t k = 0; k < n; ++k) {
            op& x = replay_[k];
            if (k == have) {
                if (ended_ || !pull(c, x)) {
                    ended_ = true;
                    whole = false;
                    break;
                }
                ++have;
            }
            if (!matches(x, cycle_[k], base, step0)) {
                whole = false;
                break;
            }
        }
        if (whole) {
            // The period is whole when the next op starts a new step, or the stream ends.
            op& y = replay_[n];
            const bool more = !ended_ && pull(c, y);
            ended_ = !more;
            if (more) ++have;
            if (more && y.step == replay_[n - 1].step) {
                whole = false;
            } else {
                ++skipped_;
                have = 0;
                if (more) {
                    replay_[0] = y;
                    have = 1;
                    continue;
                }
            }
        }
        break;
    }
    replay_.resize(have);
    leave_fast(c);
}

template <class Source>
inline auto engine<Source>::apply(int c, std::int64_t m) -> void {
    const tally& s = cycle_sum_;
    skip_time(c, m, cycle_dt_, cycle_starts_, cycle_steps_, s, cycle_done_);
    const auto n_ops = static_cast<std::uint64_t>(s.ops);  // the core's ops per period
    // The history as if the skipped periods had been simulated: the boundary i back from the
    // current one is, for i = q·p + r within the skipped periods, the cycle's boundary j - r
    // moved by m - q periods; further back, the boundaries recorded before the skip.
    const std::int64_t j = nb_ - 1;
    const std::int64_t p = period_;
    const row_mark ma = at_boundary_index(j - p).rows;
    const row_mark mb = at_boundary_index(j).rows;
    const per_core<std::uint32_t> dstep = each_core(cycle_steps_);
    replicate_rows(ma, mb, m, cycle_dt_, dstep);
    const std::size_t s0 = at_boundary_index(j - p).spans;
    const std::size_t s1 = at_boundary_index(j).spans;
    replicate_spans(s0, s1, m, cycle_dt_, each_core(cycle_starts_), dstep, each_core(n_ops));
    const std::int64_t depth = std::min(ring_size - 1, j - valid_from_ + m * p);
    std::swap(ring_, spare_);
    for (std::int64_t i = 0; i <= depth; ++i) {
        boundary& e = at_boundary_index(j - i);
        if (i > m * p) {
            e = spare_[ring_pos(j + m * p - i)];
            continue;
        }
        const std::int64_t q = i / p;
        e = spare_[ring_pos(j - i % p)];
        if (i > 0 && i % p == 0) {  // the ops after it: the cycle's first step's, not boundary j's (none yet)
            const boundary& f = spare_[ring_pos(j - p)];
            e.batch = f.batch;
            e.hash = f.hash;
        }
        const std::int64_t n = m - q;
        const auto nd = static_cast<double>(n);
        e.t += nd * cycle_dt_;
        if (cycle_done_) e.last_done += nd * cycle_dt_;
        e.starts += static_cast<std::uint32_t>(n * cycle_starts_);
        e.step += static_cast<std::uint32_t>(n) * cycle_steps_;
        e.sum.add(s, n);
        e.rows = i == 0 ? mark_rows() : shifted_mark(e.rows, ma, mb, n, cycle_dt_, dstep);
        e.spans += static_cast<std::size_t>(n) * (s1 - s0);
    }
    valid_from_ = j - depth;
}

template <class Source>
inline auto engine<Source>::skip_time(int c, std::int64_t m, double dt, std::uint32_t starts,
                                      std::uint32_t steps, const tally& per, bool done) -> void {
    const double d = static_cast<double>(m) * dt;
    const auto k = static_cast<std::uint32_t>(m * starts);
    add_periods(per, m);
    if (done) last_done_ += d;
    shift_core(c, d, k, k, static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(per.ops),
               static_cast<std::uint32_t>(m) * steps);
    seq_ += k;
    for (std::size_t ch = 0; ch < channels_.size(); ++ch) channels_[ch].shift(d, ch == 0 && per.idle > 0);
}

template <class Source>
inline auto engine<Source>::mark_rows() const -> row_mark {
    row_mark m;
    if (!opt_.per_step) return m;
    for (std::size_t b = 0; b < 2; ++b) {
        book_mark& k = m.book[b];
        const std::vector<step_times>& v = book_rows(static_cast<int>(b));
        k.rows = v.size();
        k.recurred = row_recurred_[b];
        k.revisited = row_revisited_[b];
        for (std::size_t c = 0; c < max_cores; ++c) {
            k.open[c] = row_[b][c];
            if (row_[b][c] >= 0) k.open_row[c] = v[static_cast<std::size_t>(row_[b][c])];
        }
    }
    return m;
}

template <class Source>
inline auto engine<Source>::within_budget(std::size_t rows, std::size_t spans, std::uint32_t step) const -> void {
    constexpr double row_bytes = sizeof(step_times) + 64, span_bytes = sizeof(span) + 12;
    const double have_rows = static_cast<double>(res_.steps.size() + res_.inner_steps.size());
    const double have_spans = static_cast<double>(res_.timeline.size());
    const double bytes = row_bytes * (have_rows + 2.0 * static_cast<double>(rows)) +
                         span_bytes * (have_spans + 2.0 * static_cast<double>(spans));
    if (bytes <= static_cast<double>(opt_.memory_budget)) return;
    throw error("MEM1", "timing model, step " + std::to_string(step),
                std::string("recording ") + (spans > 0 ? "the timeline" : "the per-step rows") +
                    " would take about " + std::to_string(static_cast<std::int64_t>(bytes)) +
                    " host bytes, over the budget of " + std::to_string(opt_.memory_budget) +
                    " (run_options::memory_budget): per-step rows and the timeline grow with the grid",
                "raise run_options::memory_budget, or record no per-step rows (per_step = "
                "per_step_rows::never) or timeline");
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
        record_state(b, c);
        if (opt_.per_step) b.rows = mark_rows();
        ++f.marks;
        for (std::int64_t p = 1; p <= fold_period && p < f.marks; ++p) {
            const boundary& a = f.seen[static_cast<std::size_t>((f.marks - 1 - p) % fold_ring)];
            if (a.key != b.key || !same_state(a, b)) continue;
            // The p repetitions from here repeat the p before, as often as whole ones are left
            // (and their rows fit).
            const auto dsub = static_cast<std::uint32_t>(p) * f.rows;
            const std::int64_t q = fold_rows_fit(a.rows, b.rows, c, dsub, f.left / p);
            if (q == 0) break;
            skip_time(c, q, b.t - a.t, b.starts - a.starts, 0, b.sum.since(a.sum),
                      b.last_done != a.last_done);
            replicate_rows(a.rows, b.rows, q, b.t - a.t, per_core<std::uint32_t>{}, dsub);
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

template <class Source>
auto engine<Source>::fold_rows_fit(const row_mark& ma, const row_mark& mb, int c, std::uint32_t dsub,
                                   std::int64_t q) const -> std::int64_t {
    if (!opt_.per_step) return q;
    const auto u = static_cast<std::size_t>(c);
    const book_mark &a0 = ma.book[0], &b0 = mb.book[0], &a1 = ma.book[1], &b1 = mb.book[1];
    // The fold's step keeps its row (it grows by the period's increments), and the period goes
    // back to no row made before it: it makes only inner rows of that step, in order, of fewer
    // than dsub rows (so their images are new).
    if (a0.rows != b0.rows || a0.open[u] != b0.open[u] || a0.revisited != b0.revisited ||
        a1.revisited != b1.revisited)
        return 0;
    if (a1.rows == b1.rows) return q;
    const std::uint32_t step = folds_[u].step;
    std::uint32_t lo = std::numeric_limits<std::uint32_t>::max(), hi = 0;
    for (std::size_t r = a1.rows; r < b1.rows; ++r) {
        const step_times& x = res_.inner_steps[r];
        if (x.core != c || x.step != step) return 0;
        lo = std::min(lo, x.sub);
        hi = std::max(hi, x.sub);
    }
    if (hi - lo >= dsub || hi + dsub > stream::max_inner_rows) return 0;
    return std::min<std::int64_t>(q, (stream::max_inner_rows - hi) / dsub);
}

template <class Source>
auto engine<Source>::rows_repeat(const row_mark& ma, const row_mark& mb, double ta, double tb, int c0, int c1,
                                 const per_core<std::uint32_t>& dstep) const -> bool {
    if (!opt_.per_step) return true;
    const double tol = 1e-12 * std::max(std::abs(ta), std::abs(tb));
    const auto near = [tol](double x, double y) { return std::abs(x - y) <= tol; };
    for (std::size_t bk = 0; bk < 2; ++bk) {
        const book_mark& a = ma.book[bk];
        const book_mark& b = mb.book[bk];
        const std::vector<step_times>& v = book_rows(static_cast<int>(bk));
        if (a.recurred != b.recurred) return false;
        for (int ci = c0; ci <= c1; ++ci) {
            const auto c = static_cast<std::size_t>(ci);
            if (!row_rising_[bk][c] || (a.open[c] >= 0) != (b.open[c] >= 0)) return false;
            std::uint32_t lo = 0, hi = 0;
            bool any = false;
            for (std::size_t r = a.rows; r < b.rows; ++r) {
                const step_times& x = v[r];
                if (x.core != ci) continue;
                if (!any) lo = x.step;
                hi = x.step;
                any = true;
            }
            if (any && dstep[c] <= hi - lo) return false;  // a replicated row would meet an older one
            if (a.open[c] < 0) continue;
            const step_times& x = a.open_row[c];
            const step_times& y = b.open_row[c];
            if (y.step != x.step + dstep[c] || x.sub != y.sub || x.waited_on != y.waited_on ||
                !near(x.begin - ta, y.begin - tb) || !near(x.end - ta, y.end - tb) ||
                !near(x.overhead, y.overhead) || !near(x.issue, y.issue) || !near(x.compute, y.compute) ||
                !near(x.wait, y.wait) || !near(x.sem_wait, y.sem_wait))
                return false;
        }
    }
    return true;
}

template <class Source>
auto engine<Source>::shifted_mark(row_mark m, const row_mark& ma, const row_mark& mb, std::int64_t n,
                                  double dt, const per_core<std::uint32_t>& dstep) const -> row_mark {
    if (!opt_.per_step) return m;
    for (std::size_t bk = 0; bk < 2; ++bk) {
        book_mark& x = m.book[bk];
        const book_mark& a = ma.book[bk];
        const book_mark& b = mb.book[bk];
        const auto made = static_cast<std::int64_t>(b.rows - a.rows);
        const auto first = static_cast<std::int64_t>(a.rows);
        x.rows += static_cast<std::size_t>(n * made);
        for (std::size_t c = 0; c < max_cores; ++c) {
            if (x.open[c] < 0) continue;
            if (x.open[c] >= first)
                x.open[c] += static_cast<int>(n * made);
            else if (b.open[c] >= first)
                x.open[c] = b.open[c] + static_cast<int>((n - 1) * made);
            x.open_row[c].step += static_cast<std::uint32_t>(n) * dstep[c];
            x.open_row[c].begin += static_cast<double>(n) * dt;
            x.open_row[c].end += static_cast<double>(n) * dt;
        }
    }
    return m;
}

}  // namespace ptpu::sim::detail
