// Defines the vocabulary of the timing model's steady-state lane (docs/model.md §11): what it
// records of its cores at a step boundary (their live DMAs relative to the lead core's clock, the
// totals so far, the normalized ops until the next boundary) and how two boundaries are
// compared, and the set of cores a boundary is of. The history of boundaries and the period
// search are sim/lane_history.hpp; recording, matching and leaving are sim/steady_lane.hpp's.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "ptpu/core/reuse.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim::detail {

using stream::op;
using stream::op_kind;
using stream::wait_pipeline;
using stream::wait_target;

// The cores a boundary or a skip is of: in increasing order, the first leading.
struct core_set {
    per_core<int> at{};
    int n = 0;
    [[nodiscard]] int lead() const { return at[0]; }
    [[nodiscard]] bool has(int c) const { return std::find(begin(), end(), c) != end(); }
    [[nodiscard]] const int* begin() const { return at.data(); }
    [[nodiscard]] const int* end() const { return at.data() + n; }
    [[nodiscard]] static core_set one(int c) {
        core_set s;
        s.at[0] = c;
        s.n = 1;
        return s;
    }
};

/// Where a DMA is: waiting out its latency, moving its bytes, or complete.
enum class dma_phase : std::uint8_t { latency, transfer, done };


inline constexpr int max_period = 64;
inline constexpr std::int64_t ring_size = 2 * max_period + 1;  // two periods: verified cycles
// A step of more ops than this (an inner pipeline of thousands of steps in one outer step) is
// simulated op by op and not recorded: no period it belongs to is sought. Recording it would
// cost as much as simulating it, and a ring of such steps would hold gigabytes (at most
// ring_size x 2.6 MB of recorded ops per lane and core with this bound).
inline constexpr std::size_t max_recorded_ops = std::size_t{1} << 16;

struct dma_snap {
    std::uint32_t id = 0;   // relative to the core's count of starts (mod 2^32)
    std::uint64_t seq = 0;  // relative to the next start's
    std::int64_t bytes = 0;
    double left = 0;  // latency: ready - t; transfer: bytes left; done: 0
    dma_phase phase = dma_phase::done;
    std::uint8_t channel = 0;
    std::uint8_t core = 0;  // whose (the lane holds every lane core's DMAs)
    double cost = 0;        // bytes its channel is charged (bytes plus shape costs)
    std::uint32_t sem = 0;  // the semaphore it completes into (0: waited by id)
};
// A hash of the DMAs live at a boundary (in start order), mixed into `key`: unequal keys are
// unequal states, equal ones are compared in full.
inline std::uint64_t snaps_key(std::uint64_t key, const std::vector<dma_snap>& snap) {
    for (const dma_snap& x : snap)
        key = (key * 0x9E3779B97F4A7C15ull) ^
              (std::uint64_t{x.id} << 24 ^ x.seq << 8 ^ static_cast<std::uint64_t>(x.bytes) << 32 ^
               static_cast<std::uint64_t>(x.phase) << 4 ^ x.channel ^ std::uint64_t{x.core} << 62 ^
               std::uint64_t{x.sem} << 44);
    return key;
}

// The result's totals at a boundary, every core's (the idle count is the HBM channel's); what a
// period adds is the difference of two, which the lane and the folds add once per period skipped.
struct tally {
    std::int64_t ops = 0, dmas = 0, hbm_bytes = 0, onchip_bytes = 0, idle = 0;
    per_core<double> overhead{}, issue{}, compute{}, wait{}, wait_sem{};
    double hbm_busy = 0;
    std::array<double, max_operands + 1> wait_by_operand{};  // result::wait_by_operand

    // The totals of r now (`idle`: the HBM channel's idle count).
    [[nodiscard]] static tally of(const result& r, std::int64_t idle) {
        tally s;
        s.ops = r.op_count;
        s.dmas = r.dma_count;
        s.hbm_bytes = r.hbm_bytes;
        s.onchip_bytes = r.onchip_bytes;
        s.idle = idle;
        s.overhead = r.busy_overhead;
        s.issue = r.busy_issue;
        s.compute = r.busy_compute;
        s.wait = r.wait_dma;
        s.wait_sem = r.wait_sem;
        s.wait_by_operand = r.wait_by_operand;
        s.hbm_busy = r.hbm_busy_time;
        return s;
    }
    // Adds to r m periods that each add this (their ops counted as skipped), on r's first
    // `cores` cores.
    void add_periods_to(result& r, std::int64_t m, int cores) const {
        const auto md = static_cast<double>(m);
        r.op_count += m * ops;
        r.steady_ops += m * ops;
        r.dma_count += m * dmas;
        r.hbm_bytes += m * hbm_bytes;
        r.onchip_bytes += m * onchip_bytes;
        for (std::size_t c = 0; c < static_cast<std::size_t>(cores); ++c) {
            r.busy_overhead[c] += md * overhead[c];
            r.busy_issue[c] += md * issue[c];
            r.busy_compute[c] += md * compute[c];
            r.wait_dma[c] += md * wait[c];
            r.wait_sem[c] += md * wait_sem[c];
        }
        for (std::size_t w = 0; w < wait_by_operand.size(); ++w)
            r.wait_by_operand[w] += md * wait_by_operand[w];
        r.hbm_busy_time += md * hbm_busy;
    }
    // What was added from `earlier` to this one.
    [[nodiscard]] tally since(const tally& earlier) const {
        tally d;
        d.ops = ops - earlier.ops;
        d.dmas = dmas - earlier.dmas;
        d.hbm_bytes = hbm_bytes - earlier.hbm_bytes;
        d.onchip_bytes = onchip_bytes - earlier.onchip_bytes;
        d.idle = idle - earlier.idle;
        for (std::size_t c = 0; c < max_cores; ++c) {
            d.overhead[c] = overhead[c] - earlier.overhead[c];
            d.issue[c] = issue[c] - earlier.issue[c];
            d.compute[c] = compute[c] - earlier.compute[c];
            d.wait[c] = wait[c] - earlier.wait[c];
            d.wait_sem[c] = wait_sem[c] - earlier.wait_sem[c];
        }
        d.hbm_busy = hbm_busy - earlier.hbm_busy;
        for (std::size_t w = 0; w < wait_by_operand.size(); ++w)
            d.wait_by_operand[w] = wait_by_operand[w] - earlier.wait_by_operand[w];
        return d;
    }
    // Adds n periods that each add `per`.
    void add(const tally& per, std::int64_t n) {
        const auto nd = static_cast<double>(n);
        ops += n * per.ops;
        dmas += n * per.dmas;
        hbm_bytes += n * per.hbm_bytes;
        onchip_bytes += n * per.onchip_bytes;
        idle += n * per.idle;
        for (std::size_t c = 0; c < max_cores; ++c) {
            overhead[c] += nd * per.overhead[c];
            issue[c] += nd * per.issue[c];
            compute[c] += nd * per.compute[c];
            wait[c] += nd * per.wait[c];
            wait_sem[c] += nd * per.wait_sem[c];
        }
        hbm_busy += nd * per.hbm_busy;
        for (std::size_t w = 0; w < wait_by_operand.size(); ++w)
            wait_by_operand[w] += nd * per.wait_by_operand[w];
    }
};
// The per-step rows of one kind at a boundary (options::per_step): how many there are, how
// many times a core went back to an older row (a step value recurring) or to any row made
// before, and each core's current row, which the steps after the boundary may still add to.
struct book_mark {
    std::size_t rows = 0;
    std::int64_t recurred = 0;
    std::int64_t revisited = 0;
    per_core<int> open = each_core(-1);
    per_core<step_times> open_row{};
};
// The rows of result::steps ([0]) and result::inner_steps ([1]) at a boundary.
struct row_mark {
    std::array<book_mark, 2> book{};
};

// A boundary's ops. The history rebuilt after a skip (period_skip::apply) copies boundaries, and
// one period's batches then stand for many boundaries: the copies share the ops instead of
// copying them (a step of an inner pipeline's body holds hundreds). Recording ops into a
// boundary gives it ops of its own first (restart).
class shared_ops {
public:
    [[nodiscard]] std::size_t size() const { return p_ != nullptr ? p_->size() : 0; }
    const op& operator[](std::size_t k) const { return (*p_)[k]; }
    [[nodiscard]] const op* begin() const { return p_ != nullptr ? p_->data() : nullptr; }
    [[nodiscard]] const op* end() const { return p_ != nullptr ? p_->data() + p_->size() : nullptr; }
    void restart() {
        if (p_ == nullptr || p_.use_count() > 1) {
            // A vector of the thread's shelf, put back there when its last boundary lets go.
            p_ = std::shared_ptr<std::vector<op>>(new std::vector<op>(ptpu::detail::take_buffer<op>()),
                                                  [](std::vector<op>* v) {
                                                      ptpu::detail::put_buffer(*v);
                                                      delete v;
                                                  });
        }
        p_->clear();
    }
    void push_back(const op& o) { p_->push_back(o); }  // (after restart: the ops are this one's)
    op& back() { return p_->back(); }
    operator std::span<const op>() const { return {begin(), size()}; }  // NOLINT: a view of the ops

private:
    std::shared_ptr<std::vector<op>> p_;
};

// The lane's cores at a step boundary of its lead core (about to run the first op of a new step
// value): every lane core's DMAs in flight (ids relative to their core's count of starts, start
// order relative to the next start's, times relative to the lead's clock) and semaphore values,
// the other lane cores' clocks and states relative to the lead's, and the ops each lane core ran
// until the lead's next boundary. Entries of cores outside the lane stay empty. A fold records
// the same state of its one core at each repetition's start.
struct boundary {
    double t = 0;  // the lead core's clock
    double last_done = 0;
    double v = 0;            // the HBM channel's virtual byte count at t (the byte tolerance's scale)
    per_core<double> lag{};  // each core's clock - t
    per_core<std::uint32_t> starts{};
    per_core<std::uint32_t> step{};    // the lead: its new step; the others: their last op's step
    per_core<std::uint64_t> ord{};     // ops each core has run (a period's ops: the difference)
    per_core<std::uint8_t> state{};    // ready or blocked
    per_core<wait_target> waits_on{};  // the DMA wait a blocked core is in: its op::waits_on
    per_core<std::uint32_t> wait{};    // and the DMA's id relative to the core's starts
    // Or the semaphore wait: 1 + its semaphore's kind (0 regular, 1 DMA), the semaphore, the
    // amount wanted.
    per_core<std::uint8_t> sem_kind{};
    per_core<std::uint32_t> wait_sem{};
    per_core<std::int64_t> want{};
    std::uint64_t key = 0;           // the discrete part of the state, hashed: a quick reject
    per_core<std::uint64_t> hash{};  // of each core's batch (complete at the next boundary)
    tally sum;
    row_mark rows;
    std::size_t spans = 0;  // timeline spans recorded before it (options::timeline)
    std::vector<dma_snap> snap;
    per_core<std::vector<std::int64_t>> sems;   // semaphore values (options::semaphores)
    per_core<shared_ops> batch;                 // per core, normalized to this boundary
    per_core<std::vector<std::uint32_t>> cuts;  // where in batch[c] a batch of core c's source began
};

inline std::uint64_t mix(std::uint64_t h, const op& o) {
    std::uint64_t x = static_cast<std::uint64_t>(o.kind) | std::uint64_t{o.far} << 8 |
                      std::uint64_t{o.dma} << 16 | static_cast<std::uint64_t>(o.bytes) << 40;
    x ^= std::uint64_t{o.work} * 0xFF51AFD7ED558CCDull ^ (std::uint64_t{o.step} << 32 | o.label);
    x ^= (static_cast<std::uint64_t>(o.waits_on.pipeline) << 9) ^ (std::uint64_t{o.waits_on.operand} << 11) ^
         (std::uint64_t{o.run} << 24) ^ (std::uint64_t{o.sub} << 48) ^
         (std::uint64_t{o.sem} << 13 ^ std::uint64_t{o.core} << 5 ^ std::uint64_t{o.dma_sem} << 7);
    return (h ^ x) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
}
inline bool same_op(const op& a, const op& b) {
    return a.kind == b.kind && a.dma == b.dma && a.work == b.work && a.bytes == b.bytes && a.far == b.far &&
           a.run == b.run && a.waits_on == b.waits_on && a.label == b.label && a.step == b.step &&
           a.sub == b.sub && a.sem == b.sem && a.core == b.core && a.dma_sem == b.dma_sem;
}

// Boundary n of the history (numbers before the first recorded one exist after a skip).
inline std::size_t ring_pos(std::int64_t n) {
    return static_cast<std::size_t>((n % ring_size + ring_size) % ring_size);
}
// The ops of every core from boundary x to the next are those from y to its next (normalized).
inline bool same_ops(const boundary& x, const boundary& y) {
    for (std::size_t c = 0; c < max_cores; ++c) {
        const auto& a = x.batch[c];
        const auto& b = y.batch[c];
        if (x.hash[c] != y.hash[c] || a.size() != b.size()) return false;
        for (std::size_t k = 0; k < a.size(); ++k)
            if (!same_op(a[k], b[k])) return false;
    }
    return true;
}

// The DMAs in flight at two boundaries (of equal count) are the same relative to their clocks:
// everything equal, what is left of each equal up to rounding (tol_t for a latency, tol_v plus a
// byte-proportional part for a transfer).
inline bool same_snaps(const std::vector<dma_snap>& a, const std::vector<dma_snap>& b, double tol_t, double tol_v) {
    for (std::size_t k = 0; k < a.size(); ++k) {
        const dma_snap& x = a[k];
        const dma_snap& y = b[k];
        if (x.id != y.id || x.seq != y.seq || x.bytes != y.bytes || x.phase != y.phase ||
            x.channel != y.channel || x.core != y.core || x.cost != y.cost || x.sem != y.sem)
            return false;
        const double tol =
            x.phase == dma_phase::latency ? tol_t : tol_v + 1e-12 * static_cast<double>(x.bytes);
        if (std::abs(x.left - y.left) > tol) return false;
    }
    return true;
}

// The lanes' histories (ring_size boundaries, a few hundred kilobytes) made afresh for every
// prediction were most of a short one's host time: zeroing them, and the page faults of memory
// the allocator had just given back. Each engine takes its thread's last ones (core/reuse.hpp).
// Their entries need no clearing: a boundary is recorded in full before it is compared or copied.
template <class T>
std::vector<T> reused_history() {
    std::vector<T> v = ptpu::detail::take_buffer<T>();
    v.resize(ring_size);
    return v;
}
template <class T>
void keep_history(std::vector<T>& v) {
    if (static_cast<std::int64_t>(v.size()) == ring_size) ptpu::detail::put_buffer(v);
}

// Two boundaries hold the same state, up to rounding in what is left of each DMA and in the
// cores' lags (semaphores a period has not touched yet are absent: 0). The discrete part's hash
// first, then the times (what differs between boundaries of equal keys, as in a kernel whose
// copies drift in phase from step to step, which the period search meets at every boundary and
// period), then the discrete part in full.
inline bool same_state(const boundary& a, const boundary& b) {
    if (a.key != b.key || a.snap.size() != b.snap.size()) return false;
    const double tol_t = 1e-12 * std::max(std::abs(a.t), std::abs(b.t));
    const double tol_v = 1e-12 * std::max(std::abs(a.v), std::abs(b.v));
    for (std::size_t c = 0; c < max_cores; ++c)
        if (std::abs(a.lag[c] - b.lag[c]) > tol_t) return false;
    if (!same_snaps(a.snap, b.snap, tol_t, tol_v)) return false;
    if (a.state != b.state || a.waits_on != b.waits_on || a.wait != b.wait || a.sem_kind != b.sem_kind ||
        a.wait_sem != b.wait_sem || a.want != b.want)
        return false;
    for (std::size_t c = 0; c < max_cores; ++c) {
        const auto& x = a.sems[c];
        const auto& y = b.sems[c];
        const std::size_t n = std::max(x.size(), y.size());
        for (std::size_t k = 0; k < n; ++k)
            if ((k < x.size() ? x[k] : 0) != (k < y.size() ? y[k] : 0)) return false;
    }
    return true;
}

}  // namespace ptpu::sim::detail
