// Defines what the engine's steady-state lane and its folds share (docs/model.md §11): the state
// a boundary records, the skip of whole periods, folded repeats, and the per-step rows a skip
// makes (sim/engine_class.hpp declares them).
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
        core_set alone_set;
        alone_set.at[0] = c;
        alone_set.n = 1;
        record_state(b, alone_set);
        if (opt_.per_step) b.rows = mark_rows();
        ++f.marks;
        for (std::int64_t p = 1; p <= fold_period && p < f.marks; ++p) {
            const boundary& a = f.seen[static_cast<std::size_t>((f.marks - 1 - p) % fold_ring)];
            if (!same_state(a, b)) continue;
            // The p repetitions from here repeat the p before, as often as whole ones are left
            // (and their rows fit).
            const auto dsub = static_cast<std::uint32_t>(p) * f.rows;
            const std::int64_t q = fold_rows_fit(a.rows, b.rows, c, dsub, f.left / p);
            if (q == 0) break;
            per_core<std::uint32_t> starts{};
            per_core<std::uint64_t> ops{};
            const auto u = static_cast<std::size_t>(c);
            starts[u] = b.starts[u] - a.starts[u];
            ops[u] = b.ord[u] - a.ord[u];
            skip_time(alone_set, q, b.t - a.t, starts, per_core<std::uint32_t>{}, ops, b.sum.since(a.sum),
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
auto engine<Source>::rows_repeat(const row_mark& ma, const row_mark& mb, double ta, double tb,
                                 const core_set& cs, const per_core<std::uint32_t>& dstep) const -> bool {
    if (!opt_.per_step) return true;
    const double tol = 1e-12 * std::max(std::abs(ta), std::abs(tb));
    const auto near = [tol](double x, double y) { return std::abs(x - y) <= tol; };
    for (std::size_t bk = 0; bk < 2; ++bk) {
        const book_mark& a = ma.book[bk];
        const book_mark& b = mb.book[bk];
        const std::vector<step_times>& v = book_rows(static_cast<int>(bk));
        if (a.recurred != b.recurred) return false;
        for (const int ci : cs) {
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
