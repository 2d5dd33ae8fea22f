// Defines the vocabulary of the timing model's steady-state lane (docs/model.md §11): what it
// records of a core at a step boundary (its live DMAs relative to its clock, the totals so far,
// the normalized ops of the step that follows) and how two boundaries are compared. The lane's
// control (when to record, enter, fast-forward and leave) lives in the engine it drives.
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
    std::uint8_t core = 0;  // whose (the joint lane holds both cores' DMAs)
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
// period adds is the difference of two, which the lanes add once per period skipped.
struct tally {
    std::int64_t ops = 0, dmas = 0, hbm_bytes = 0, onchip_bytes = 0, idle = 0;
    per_core<double> overhead{}, issue{}, compute{}, wait{}, wait_sem{};
    double hbm_busy = 0;
    std::array<double, max_operands + 1> wait_by_operand{};  // result::wait_by_operand

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

// A boundary's ops. The history rebuilt after a skip (engine::apply) copies boundaries, and
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

struct boundary {
    double t = 0;
    double last_done = 0;
    double v = 0;  // the HBM channel's virtual byte count at t (the byte tolerance's scale)
    std::uint32_t starts = 0;
    std::uint32_t step = 0;
    std::uint64_t key = 0;   // the discrete part of the state, hashed: a quick reject
    std::uint64_t hash = 0;  // of the batch's ops (complete at the next boundary)
    tally sum;
    row_mark rows;
    std::size_t spans = 0;  // timeline spans recorded before it (options::timeline)
    std::vector<dma_snap> snap;
    std::vector<std::int64_t> sems;  // the core's semaphore values (options::semaphores)
    shared_ops batch;                // the ops from this boundary to the next, normalized
};

// An op with its DMA id relative to the core's count of starts at boundary b and its step
// relative to b's: equal for the same op one period later.
inline op normalized(op o, const boundary& b) {
    if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait) o.dma -= b.starts;
    o.step -= b.step;
    return o;
}
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
inline bool same_batch(const boundary& x, const boundary& y) {
    if (x.hash != y.hash || x.batch.size() != y.batch.size()) return false;
    for (std::size_t k = 0; k < x.batch.size(); ++k)
        if (!same_op(x.batch[k], y.batch[k])) return false;
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

inline bool same_state(const boundary& a, const boundary& b) {
    if (a.snap.size() != b.snap.size()) return false;
    // (Semaphores a period has not touched yet are absent: 0.)
    const std::size_t n = std::max(a.sems.size(), b.sems.size());
    for (std::size_t k = 0; k < n; ++k)
        if ((k < a.sems.size() ? a.sems[k] : 0) != (k < b.sems.size() ? b.sems[k] : 0)) return false;
    const double tol_t = 1e-12 * std::max(std::abs(a.t), std::abs(b.t));
    const double tol_v = 1e-12 * std::max(std::abs(a.v), std::abs(b.v));
    return same_snaps(a.snap, b.snap, tol_t, tol_v);
}

// ---- The joint lane: every core of a megacore chip running (docs/model.md §11) ------------------

// The chip at a step boundary of the lead core, core 0 (about to run the first op of a new step):
// every core's live DMAs (ids relative to their core's count of starts, start order relative to
// the next start's, times relative to core 0's clock), the other cores' clocks and states relative
// to it, and the ops each core ran until core 0's next boundary. Entries past the call's core count
// stay empty.
struct joint_boundary {
    double t = 0;  // core 0's clock
    double last_done = 0;
    double v = 0;            // the HBM channel's virtual byte count at t
    per_core<double> lag{};  // each core's clock - t
    per_core<std::uint32_t> starts{};
    per_core<std::uint32_t> step{};    // core 0: its new step; the others: their last op's step
    per_core<std::uint8_t> state{};    // ready or blocked (on a DMA)
    per_core<wait_target> waits_on{};  // the wait a blocked core is in: its op::waits_on
    per_core<std::uint32_t> wait{};    // and the DMA's id relative to the core's starts
    std::uint64_t key = 0;
    per_core<std::uint64_t> hash{};
    tally sum;
    row_mark rows;
    std::size_t spans = 0;  // timeline spans recorded before it
    std::vector<dma_snap> snap;
    per_core<shared_ops> batch;                 // per core, normalized to this boundary
    per_core<std::vector<std::uint32_t>> cuts;  // where in batch[c] a batch of core c's source began
};

inline bool same_joint_ops(const joint_boundary& x, const joint_boundary& y) {
    for (std::size_t c = 0; c < max_cores; ++c) {
        const auto& a = x.batch[c];
        const auto& b = y.batch[c];
        if (x.hash[c] != y.hash[c] || a.size() != b.size()) return false;
        for (std::size_t k = 0; k < a.size(); ++k)
            if (!same_op(a[k], b[k])) return false;
    }
    return true;
}

inline bool same_joint_state(const joint_boundary& a, const joint_boundary& b) {
    if (a.key != b.key || a.state != b.state || a.waits_on != b.waits_on || a.wait != b.wait ||
        a.snap.size() != b.snap.size())
        return false;
    const double tol_t = 1e-12 * std::max(std::abs(a.t), std::abs(b.t));
    const double tol_v = 1e-12 * std::max(std::abs(a.v), std::abs(b.v));
    for (std::size_t c = 0; c < max_cores; ++c)
        if (std::abs(a.lag[c] - b.lag[c]) > tol_t) return false;
    return same_snaps(a.snap, b.snap, tol_t, tol_v);
}

}  // namespace ptpu::sim::detail
