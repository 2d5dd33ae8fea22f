// Defines the steady-state lane's period detector (docs/model.md §11): the history of the lane's
// step boundaries, what each records of the ops its cores run until the next one, the search for
// the shortest period whose state and ops repeat, the cycle that period becomes, and the history
// rebuilt after whole periods were skipped. It knows boundaries and ops, nothing of DMA channels,
// clocks or sources: the engine records each boundary's state (period_skip::record), the lane
// (steady_lane.hpp) hands every op on to it and matches the cores' next ops against the cycle.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ptpu/core/reuse.hpp"
#include "ptpu/sim/steady.hpp"

namespace ptpu::sim::detail {

// A period the history found, from its first boundary a to the last one b: per lane core, its ops
// of the period relative to a (DMA ids to its starts at a, steps to its step value at a), and what
// one period adds to it; the period's time and totals.
struct cycle {
    int period = 0;                    // boundaries
    per_core<std::vector<op>> ops;     // per lane core: its ops of the period
    per_core<std::uint32_t> starts{};  // DMA starts per period
    per_core<std::uint32_t> steps{};   // step values per period
    per_core<std::uint64_t> runs{};    // ops run per period (a fold's made ones included)
    double dt = 0;
    bool done = false;  // a DMA completed within the period
    tally sum{};
};

// The history of the lane's boundaries, boundary n at ring_pos(n). Boundaries before valid_from()
// are not compared (another lane's, or a step too long to record broke the history there).
class lane_history {
public:
    lane_history() = default;
    lane_history(const lane_history&) = delete;
    lane_history& operator=(const lane_history&) = delete;
    ~lane_history() {
        keep_history(ring_);
        keep_history(spare_);
        for (std::vector<op>& v : cycle_.ops) ptpu::detail::put_buffer(v);
    }
    // Takes this thread's last rings and cycle buffers (their memory is what is reused).
    // `across`: periods may hold a signal to another core the lane follows (options::
    // signals_across_cores).
    void open(int cores, bool across) {
        across_ = across;
        ring_ = reused_history<boundary>();
        spare_ = reused_history<boundary>();
        for (std::size_t c = 0; c < static_cast<std::size_t>(cores); ++c)
            cycle_.ops[c] = ptpu::detail::take_empty_buffer<op>();
    }

    [[nodiscard]] const core_set& cores() const { return cores_; }
    [[nodiscard]] int lead() const { return cores_.lead(); }
    [[nodiscard]] std::int64_t count() const { return n_; }
    // The lead's step value at the last boundary.
    [[nodiscard]] std::uint32_t lead_step() const { return step_; }
    [[nodiscard]] const cycle& found() const { return cycle_; }
    boundary& at(std::int64_t n) { return ring_[ring_pos(n)]; }
    [[nodiscard]] const boundary& at(std::int64_t n) const { return ring_[ring_pos(n)]; }

    // The lane follows `running` (as bits `mask`) when `on`, no core otherwise: a history of
    // other cores is forgotten.
    void follow(bool on, const core_set& running, std::uint32_t mask) {
        if (on ? mask == mask_ : mask_ == 0) return;
        n_ = valid_from_ = 0;
        cores_ = running;
        mask_ = on ? mask : 0;
    }

    // The next boundary, for the engine to record the lane's state in (period_skip::record, rows, spans);
    // then close_boundary.
    boundary& next() { return at(n_); }
    // Closes the boundary next() gave: the lead about to run its first op of step `step`, every
    // other lane core's last op of `last_step`. False while cooling down after a cycle that did
    // not repeat even once.
    bool close_boundary(std::uint32_t step, const per_core<std::uint32_t>& last_step) {
        boundary& b = at(n_);
        for (std::size_t c = 0; c < max_cores; ++c) {
            b.step[c] = 0;
            b.batch[c].restart();
            b.hash[c] = 0;
            b.cuts[c].clear();
        }
        for (const int c : cores_) {
            const auto u = static_cast<std::size_t>(c);
            b.step[u] = c == cores_.lead() ? step : last_step[u];
        }
        ++n_;
        step_ = step;
        if (cooldown_ > 0) {
            --cooldown_;
            return false;
        }
        return true;
    }

    // Records op o of lane core c in the last boundary's ops, relative to the boundary, then
    // normalized by `normalize` (what the engine does not time: a compute op's work as its
    // canonical one, the label with a timeline); `cut`: a batch of the core's source begins with
    // it. No period runs through a step too long to record, one signalling a core the lane does
    // not follow (its semaphores are not part of the state compared) or, without `across`, any
    // other core, or, with more than one lane core, a folded repeat (folds follow one core): the
    // history starts again after it.
    template <class Normalize>
    void record(int c, const op& o, bool cut, Normalize&& normalize) {
        if (n_ == 0 || valid_from_ >= n_) return;
        boundary& b = at(n_ - 1);
        const auto u = static_cast<std::size_t>(c);
        if (b.batch[u].size() == max_recorded_ops ||
            (o.kind == op_kind::sem_signal && o.core != c && !(across_ && cores_.has(o.core))) ||
            (o.kind == op_kind::repeat && cores_.n > 1)) {
            valid_from_ = n_;
            return;
        }
        op n = o;
        if (n.kind == op_kind::dma_start || n.kind == op_kind::dma_wait) n.dma -= b.starts[u];
        n.step -= b.step[u];
        normalize(n);
        if (c != cores_.lead() && cut) b.cuts[u].push_back(static_cast<std::uint32_t>(b.batch[u].size()));
        b.batch[u].push_back(n);
        b.hash[u] = mix(b.hash[u], n);
    }

    // The shortest period p (up to max_period boundaries) ending at the last boundary: its
    // state there equals its state p boundaries earlier, the ops of its last p boundaries repeat
    // the p before them, and rows_repeat(a, b, dstep) accepts its per-step rows. 0: none.
    template <class RowsRepeat>
    int find_period(RowsRepeat&& rows_repeat) const {
        const std::int64_t j = n_ - 1;
        if (j - 2 < valid_from_) return 0;
        const boundary& b = at(j);
        const boundary& last = at(j - 1);
        for (std::int64_t p = 1; p <= max_period && j - 2 * p >= valid_from_; ++p) {
            const boundary& a = at(j - p);
            if (at(j - 1 - p).hash != last.hash || !same_state(a, b)) continue;
            per_core<std::uint32_t> dstep{};
            for (std::size_t c = 0; c < max_cores; ++c) dstep[c] = b.step[c] - a.step[c];
            if (!rows_repeat(a, b, dstep)) continue;
            bool repeats = true;
            for (std::int64_t i = 1; repeats && i <= p; ++i) repeats = same_ops(at(j - i), at(j - i - p));
            if (repeats) return static_cast<int>(p);
        }
        return 0;
    }

    // The p boundaries that ended at the last one become the cycle.
    void take_cycle(int p) {
        const std::int64_t j = n_ - 1;
        const boundary& a = at(j - p);
        const boundary& b = at(j);
        for (const int ci : cores_) {
            const auto c = static_cast<std::size_t>(ci);
            std::vector<op>& v = cycle_.ops[c];
            v.clear();
            for (std::int64_t k = j - p; k < j; ++k) {
                const boundary& e = at(k);
                for (op o : e.batch[c]) {  // relative to the period's start instead of the boundary's
                    if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait)
                        o.dma += e.starts[c] - a.starts[c];
                    o.step += e.step[c] - a.step[c];
                    v.push_back(o);
                }
            }
            cycle_.starts[c] = b.starts[c] - a.starts[c];
            cycle_.steps[c] = b.step[c] - a.step[c];
            cycle_.runs[c] = b.ord[c] - a.ord[c];
        }
        cycle_.period = p;
        cycle_.dt = b.t - a.t;
        cycle_.done = b.last_done != a.last_done;
        cycle_.sum = b.sum.since(a.sum);
    }

    // The cycle matched no further period: no search for as many boundaries.
    void cool_down() { cooldown_ = cycle_.period; }
    // The lead's ops given back after a skip start at step value `step`.
    void restart_lead_at(std::uint32_t step) {
        step_ = step;
        at(n_ - 1).step[static_cast<std::size_t>(cores_.lead())] = step;
    }

    // The history as if the m periods skipped after the cycle had been simulated, so that a
    // longer period can be found after a shorter one broke: the boundary i back from the current
    // one is, for i = q·p + r within the skipped periods, the cycle's boundary j - r moved by
    // m - q periods; further back, the boundaries recorded before the skip. `rows_now` is the
    // current boundary's row mark, shifted(mark, ma, mb, n) a mark of the cycle n periods on.
    template <class ShiftedMark>
    void skipped(std::int64_t m, const row_mark& rows_now, ShiftedMark&& shifted) {
        const std::int64_t j = n_ - 1;
        const std::int64_t p = cycle_.period;
        const row_mark ma = at(j - p).rows;
        const row_mark mb = at(j).rows;
        const std::size_t s0 = at(j - p).spans;
        const std::size_t s1 = at(j).spans;
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
            e.t += nd * cycle_.dt;
            if (cycle_.done) e.last_done += nd * cycle_.dt;
            for (const int ci : cores_) {
                const auto c = static_cast<std::size_t>(ci);
                e.starts[c] += static_cast<std::uint32_t>(n) * cycle_.starts[c];
                e.step[c] += static_cast<std::uint32_t>(n) * cycle_.steps[c];
                e.ord[c] += static_cast<std::uint64_t>(n) * cycle_.runs[c];
            }
            e.sum.add(cycle_.sum, n);
            e.rows = i == 0 ? rows_now : shifted(e.rows, ma, mb, n);
            e.spans += static_cast<std::size_t>(n) * (s1 - s0);
        }
        n_ = j + m * p + 1;
        valid_from_ = n_ - 1 - depth;
    }

private:
    bool across_ = false;          // open(): a period may signal another lane core
    core_set cores_;               // the cores the history is of (none: no history)
    std::uint32_t mask_ = 0;       // and as bits
    std::vector<boundary> ring_;   // the last ring_size boundaries, boundary n at ring_pos(n)
    std::vector<boundary> spare_;  // skipped()'s copy of the history
    std::int64_t n_ = 0;           // boundaries recorded since the history began
    std::int64_t valid_from_ = 0;  // the oldest one still comparable
    std::int64_t cooldown_ = 0;    // boundaries to record before looking for a period again
    std::uint32_t step_ = 0;       // the lead's step value at the last boundary
    cycle cycle_;
};

}  // namespace ptpu::sim::detail
