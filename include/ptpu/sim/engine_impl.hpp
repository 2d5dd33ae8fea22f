// Defines the timing model's engine (declared through simulate_source in sim/engine.hpp): the
// event simulation of the cores' op streams and the DMA channels, with the steady-state fast
// lane. Read by every translation unit in the header-only mode, and only by the one that defines
// PTPU_RUNTIME_IMPLEMENTATION (ptpu::runtime) with PTPU_SEPARATE_RUNTIME.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/sim/engine.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/sim/steady.hpp"
#include "ptpu/sim/work_times.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim {

namespace detail {

inline constexpr double never = std::numeric_limits<double>::infinity();

// A DMA from its start until its wait (or, for a dangling one, its completion).
struct live_dma {
    double ready = 0;  // end of the latency: the transfer starts
    double tag = 0;    // transfer: its channel's virtual byte count at which it completes
    double begin = 0;  // end of the issue: the DMA exists
    std::int64_t bytes = 0;
    double cost = 0;        // bytes the channel is charged: bytes plus its shape costs (far DMAs)
    std::uint64_t seq = 0;  // start order, the last tie-break
    std::uint32_t id = 0;
    std::uint32_t label = 0;
    std::uint32_t step = 0;
    std::uint32_t sem = 0;  // the semaphore it completes into (0: waited by id)
    std::uint64_t ord = 0;  // its start op's place in its core's stream (the timeline's label)
    std::uint8_t core = 0;
    std::uint8_t channel = 0;  // 0: HBM; 1 + core: that core's on-chip path
    dma_phase phase = dma_phase::latency;
    bool orphan = false;  // its core's stream has ended: nobody will wait for it
};

// Event order: time, then core, then start order. DMA events come before core ops at equal time,
// so that a wait at t sees a completion at t.
constexpr bool before(double t, const live_dma& a, double t2, const live_dma& b) {
    if (t != t2) return t < t2;
    if (a.core != b.core) return a.core < b.core;
    return a.seq < b.seq;
}

// A bandwidth shared equally by its active transfers (processor sharing). Instead of decrementing
// every transfer's remaining bytes at each event, `v` counts the bytes each active transfer has
// received since the channel was last idle; a transfer joining at v completes when v reaches
// its tag v + bytes, so transfers complete in tag order and equal tags at exactly the same time.
class channel {
public:
    void set_bandwidth(double bw) {
        bw_ = bw;
        // n active transfers: each moves bw/n bytes per second; a byte of each takes n/bw. Tables
        // for small n keep divisions off the hot path (a product differs by at most an ulp).
        for (std::size_t n = 1; n < small; ++n) {
            share_[n] = bw / static_cast<double>(n);
            per_byte_[n] = static_cast<double>(n) / bw;
        }
        slots_.reserve(small);
        tags_.reserve(small);
    }
    [[nodiscard]] bool idle() const { return slots_.empty(); }
    [[nodiscard]] int first() const { return first_; }
    [[nodiscard]] double first_done() const { return first_done_; }
    [[nodiscard]] double busy_since() const { return busy_since_; }
    [[nodiscard]] std::size_t active() const { return slots_.size(); }
    /// Times this channel went idle (ended a busy period).
    [[nodiscard]] std::int64_t idle_count() const { return idle_count_; }
    /// The virtual byte count at time t >= the last event: bytes each active transfer has got.
    [[nodiscard]] double v_at(double t) const {
        return slots_.empty() ? v_ : v_ + (t - t_last_) * share(slots_.size());
    }
    /// Moves every absolute time by dt (the steady-state fast lane; the busy period's start only
    /// when `restart`, i.e. the channel went idle in the period skipped).
    void shift(double dt, bool restart) {
        t_last_ += dt;
        if (restart) busy_since_ += dt;
        schedule();
    }

    // A transfer of `bytes` joins at time t; returns its tag.
    double arrive(int s, double bytes, double t, const std::vector<live_dma>& dmas) {
        if (slots_.empty()) {
            v_ = 0;  // restart the virtual clock: keeps it small and exact
            busy_since_ = t;
        } else {
            v_ += (t - t_last_) * share(slots_.size());
        }
        t_last_ = t;
        const double tag = v_ + bytes;
        slots_.push_back(s);
        tags_.push_back(tag);
        if (first_ < 0 || tag < first_tag_ ||
            (tag == first_tag_ && before(tag, dmas[static_cast<std::size_t>(s)], first_tag_,
                                         dmas[static_cast<std::size_t>(first_)]))) {
            first_ = s;
            first_tag_ = tag;
        }
        schedule();  // every completion moves: one more share
        return tag;
    }

    // The first transfer completes at time t (DMA events come in order: it is always first).
    void depart(double t, const std::vector<live_dma>& dmas) {
        v_ = first_tag_;
        t_last_ = t;
        std::size_t n = slots_.size();
        for (std::size_t k = 0; k < n; ++k) {
            if (slots_[k] == first_) {
                slots_[k] = slots_[n - 1];
                tags_[k] = tags_[n - 1];
                slots_.pop_back();
                tags_.pop_back();
                --n;
                break;
            }
        }
        first_ = -1;
        for (std::size_t k = 0; k < n; ++k) {
            const double tag = tags_[k];
            if (first_ < 0 || tag < first_tag_ ||
                (tag == first_tag_ && before(tag, dmas[static_cast<std::size_t>(slots_[k])], first_tag_,
                                             dmas[static_cast<std::size_t>(first_)]))) {
                first_ = slots_[k];
                first_tag_ = tag;
            }
        }
        if (n == 0) {
            v_ = 0;
            ++idle_count_;
        }
        schedule();
    }

private:
    static constexpr std::size_t small = 32;

    [[nodiscard]] double share(std::size_t n) const {
        return n < small ? share_[n] : bw_ / static_cast<double>(n);
    }
    [[nodiscard]] double per_byte(std::size_t n) const {
        return n < small ? per_byte_[n] : static_cast<double>(n) / bw_;
    }
    void schedule() {
        if (first_ < 0) {
            first_done_ = never;
            return;
        }
        // Rounding may leave v a hair past the tag.
        const double left = first_tag_ > v_ ? first_tag_ - v_ : 0.0;
        first_done_ = t_last_ + left * per_byte(slots_.size());
    }

    double bw_ = 0;
    double v_ = 0;
    double t_last_ = 0;       // time at which v_ was last brought up to date
    double busy_since_ = 0;   // start of the current busy period
    std::vector<int> slots_;  // active transfers
    std::vector<double> tags_;
    int first_ = -1;  // the one completing next (smallest tag, then event order)
    double first_tag_ = 0;
    double first_done_ = never;
    std::int64_t idle_count_ = 0;
    std::array<double, small> share_{};
    std::array<double, small> per_byte_{};
};

// A FIFO of slot numbers that keeps its storage (a ring of power-of-two size).
class slot_queue {
public:
    [[nodiscard]] bool empty() const { return size_ == 0; }
    [[nodiscard]] int front() const { return buf_[head_]; }
    void pop() {
        head_ = (head_ + 1) & (buf_.size() - 1);
        --size_;
    }
    void push(int s) {
        if (size_ == buf_.size()) grow();
        buf_[(head_ + size_) & (buf_.size() - 1)] = s;
        ++size_;
    }

private:
    void grow() {
        std::vector<int> b(buf_.empty() ? 16 : 2 * buf_.size());
        for (std::size_t k = 0; k < size_; ++k) b[k] = buf_[(head_ + k) & (buf_.size() - 1)];
        buf_ = std::move(b);
        head_ = 0;
    }
    std::vector<int> buf_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
};

// The DMAs a core has started and not yet waited: ids and slots side by side, so that a wait's
// lookup scans a few contiguous ids.
class live_list {
public:
    void reserve(std::size_t n) {
        ids_.reserve(n);
        slots_.reserve(n);
    }
    [[nodiscard]] int find(std::uint32_t id) const {
        const std::size_t n = ids_.size();
        for (std::size_t k = 0; k < n; ++k)
            if (ids_[k] == id) return static_cast<int>(k);
        return -1;
    }
    [[nodiscard]] int slot(int k) const { return slots_[static_cast<std::size_t>(k)]; }
    [[nodiscard]] const std::vector<int>& slots() const { return slots_; }
    void push(std::uint32_t id, int s) {
        ids_.push_back(id);
        slots_.push_back(s);
    }
    void erase(int k) {
        const auto i = static_cast<std::size_t>(k);
        ids_[i] = ids_.back();
        slots_[i] = slots_.back();
        ids_.pop_back();
        slots_.pop_back();
    }
    void clear() {
        ids_.clear();
        slots_.clear();
    }
    void shift_ids(std::uint32_t k) {
        for (std::uint32_t& id : ids_) id += k;
    }

private:
    std::vector<std::uint32_t> ids_;
    std::vector<int> slots_;
};

enum class core_state : std::uint8_t { ready, blocked, done };

// The simulation proper. DMAs live in slots with stable numbers; each core keeps the DMAs it has
// started and not yet waited (looked up by id on a wait) and, in start order, those still in
// their latency (their ends are in time order, since a core's time only grows); each channel
// keeps its transfers and its next completion. The next DMA event is then the earliest of at
// most five candidates.
template <class Source>
class engine {
public:
    engine(const chip& c, int cores, Source& src, const options& opt)
        : chip_(c), times_(c, opt.costs, opt.works), cores_(cores), src_(src), opt_(opt) {
        dmas_.reserve(64);
        free_.reserve(64);
        for (auto& l : live_) l.reserve(32);
        const double onchip = onchip_bytes_per_s(c, opt.costs);
        channels_[0].set_bandwidth(c.hbm_bytes_per_s * c.dma_efficiency);
        desc_bytes_ = c.dma_descriptor_s * c.hbm_bytes_per_s * c.dma_efficiency;
        channels_[1].set_bandwidth(onchip);
        channels_[2].set_bandwidth(onchip);
        res_.cores = cores;
        for (int k = 0; k < 2; ++k) state_[k] = k < cores ? core_state::ready : core_state::done;
        ff_on_ = opt.steady_state && !opt.semaphores;
        tl_lane_ = ff_on_ && opt.timeline;
        if (ff_on_) {
            ring_.resize(ring_size);
            spare_.resize(ring_size);
            if (cores == 2) jring_.resize(ring_size);
        }
    }

    result run() {
        for (;;) {
            // Only DMA events and new DMAs change the next DMA event (run_core updates it).
            if (dirty_) {
                find_next_event();
                dirty_ = false;
            }
            int c = -1;
            double tc = never;
            for (int k = 0; k < cores_; ++k) {
                if (state_[k] == core_state::ready && t_[k] < tc) {
                    c = k;
                    tc = t_[k];
                }
            }
            if (c >= 0 && tc < ev_t_) {
                run_core(c);
            } else if (ev_slot_ >= 0) {
                dirty_ = true;
                if (ev_finish_)
                    finish(ev_slot_, ev_t_);
                else
                    start_transfer(ev_slot_, ev_t_);
            } else {
                break;
            }
        }
        for (int k = 0; k < cores_; ++k)
            if (state_[k] == core_state::blocked) {  // on a semaphore: DMA waits always end
                stall& d = res_.deadlock;
                d.core = k;
                d.sem = wait_sem_[k];
                d.wanted = wait_want_[k];
                d.available = sem_value(k, wait_sem_[k]);
                d.step = wait_step_[k];
                d.label = wait_label_[k];
                break;
            }
        res_.device_time = last_done_;
        for (int k = 0; k < cores_; ++k) {
            res_.core_time[k] = t_[k];
            if (t_[k] > res_.device_time) res_.device_time = t_[k];
        }
        return std::move(res_);
    }

private:
    live_dma& at(int s) { return dmas_[static_cast<std::size_t>(s)]; }

    // Core c's next batch for a lane comparing it with a recorded period: taken lazily (the
    // runner may hand back a repeat of its last step without writing its ops) when the lane
    // expects a repeat, never with a timeline (every op's label is recorded as it is pulled).
    // `repeated`: the batch is such a repeat.
    struct lane_batch {
        batch b;
        bool repeated;
    };
    lane_batch next_lane_batch(int c, bool expect_repeat) {
        const bool lazy = expect_repeat && !tl_lane_;
        const batch n = src_.next_batch(c, lazy);
        if (n.ops.empty()) return {n, false};
        if (tl_lane_) record_labels(c, n.ops);
        return {n, lazy && n.repeat && n.whole_step};
    }

    // The core's next op from the source, a batch at a time.
    bool pull(int c, op& o) {
        if (!src_.batched()) {
            if (!src_.next(c, o)) return false;  // straight into o (no copy to stall on)
            if (tl_lane_) [[unlikely]] labels_[static_cast<std::size_t>(c)].push_back(o.label);
            return true;
        }
        std::span<const op>& b = in_[static_cast<std::size_t>(c)];
        std::size_t& k = in_pos_[static_cast<std::size_t>(c)];
        if (k == b.size()) {
            const batch n = src_.next_batch(c, false);
            b = n.ops;
            in_whole_[static_cast<std::size_t>(c)] = n.whole_step;
            k = 0;
            if (b.empty()) return false;
            if (tl_lane_) [[unlikely]] record_labels(c, b);
        }
        o = b[k++];
        return true;
    }

    // The next DMA event: the earliest latency end (the front of each core's queue) or channel
    // completion. Kept in scalar members: copying a small event struct made g++ emit overlapping
    // stores and loads that defeat store forwarding, which doubled the run time.
    void find_next_event() {
        double t = never;
        int slot = -1;
        bool fin = false;
        const auto consider = [&](int s, double ts, bool f) {
            if (slot < 0 || before(ts, at(s), t, at(slot))) {
                t = ts;
                slot = s;
                fin = f;
            }
        };
        for (int k = 0; k < cores_; ++k) {
            const slot_queue& q = pending_[k];
            if (!q.empty()) consider(q.front(), at(q.front()).ready, false);
        }
        for (const channel& ch : channels_)
            if (ch.first() >= 0) consider(ch.first(), ch.first_done(), true);
        ev_t_ = t;
        ev_slot_ = slot;
        ev_finish_ = fin;
    }

    // Runs core c's ops while it is ready and strictly before the next DMA event (which a new DMA
    // may bring forward). The other core only affects this one through the DMAs it starts, which
    // cannot reach a channel before its next op's time + issue + latency, so core c may run ahead
    // of it until then: fewer switches between cores, the same times. With zero issue and
    // latency this is plain time order, ties going to core 0.
    void run_core(int c) {
        auto& replay_ = replays_[static_cast<std::size_t>(c)];
        auto& replay_pos_ = replay_at_[static_cast<std::size_t>(c)];
        auto& ended_ = ends_[static_cast<std::size_t>(c)];
        const int other = 1 - c;
        const bool other_ready = other < cores_ && state_[other] == core_state::ready;
        const double t_other = other_ready ? t_[other] : never;
        // With semaphores, strict time order: a signal must not reach a core behind its time.
        const double horizon = opt_.semaphores ? t_other : t_other + chip_.dma_issue_s + chip_.dma_latency_s;
        // The fast lane needs this core alone on the chip: the other stream ended and none of
        // its DMAs still moves.
        const bool steady =
            ff_on_ && (other >= cores_ || (state_[other] == core_state::done && orphans_ == 0));
        // The joint lane: both cores running (neither stream ended, so no orphan DMA either).
        const bool joint = ff_on_ && other < cores_ && state_[other] != core_state::done;
        const bool lanes = steady || joint;
        if (!joint) jn_ = jvalid_from_ = 0;
        if (!steady || ring_core_ != c) {
            nb_ = valid_from_ = 0;  // history of another core, or none
            ring_core_ = steady ? c : -1;
        }
        double& t = t_[c];
        while (state_[c] == core_state::ready && t < ev_t_ &&
               (t < horizon || (c < other ? t <= t_other : t < t_other))) {
            if (fast_ || jfast_) [[unlikely]] {
                // Changes the times and the DMAs: back to run() for the next event.
                if (jfast_)
                    jby_batch_ ? joint_fast_forward_batches() : joint_fast_forward();
                else
                    by_batch_ ? fast_forward_batches(c) : fast_forward(c);
                return;
            }
            op o;
            bool pulled = false;
            if (replay_pos_ < replay_.size()) {
                o = replay_[replay_pos_++];
                if (replay_pos_ == replay_.size()) replay_.clear(), replay_pos_ = 0;
            } else if (ended_ || !pull(c, o)) {
                end_stream(c);
                return;
            } else {
                pulled = true;
            }
            if (lanes) [[unlikely]] {  // a fast lane records the op (or takes it over)
                if (joint) {
                    // o is the first op of a batch from the source (core 1's batches: the joint lane's).
                    const bool fresh = pulled && src_.batched() && in_pos_[static_cast<std::size_t>(c)] == 1;
                    if (c == 0 && (jn_ == 0 || o.step != jstep_)) {
                        if (at_joint_boundary(o)) continue;  // the joint lane holds o
                    }
                    if (jn_ > 0) {
                        joint_boundary& b = jring_[ring_pos(jn_ - 1)];
                        const auto u = static_cast<std::size_t>(c);
                        op n = o;
                        if (n.kind == op_kind::dma_start || n.kind == op_kind::dma_wait) n.dma -= b.starts[u];
                        n.step -= b.step[u];
                        if (tl_lane_) n.label = 0;  // labels do not time: the timeline's come from the ops
                        n.work = canon(o);          // nor does which of two works of equal time it is
                        if (c == 1 && fresh) b.cuts1.push_back(static_cast<std::uint32_t>(b.batch[1].size()));
                        b.batch[u].push_back(n);
                        b.hash[u] = mix(b.hash[u], n);
                    }
                    if (c == 1) jlast1_ = o.step;
                }
                if (steady) {
                    if (nb_ == 0 || o.step != cur_step_) {
                        if (at_boundary(c, o)) continue;  // the fast lane holds o
                    }
                    boundary& b = ring_[static_cast<std::size_t>((nb_ - 1) % ring_size)];
                    b.batch.push_back(normalized(o, b));
                    if (tl_lane_) b.batch.back().label = 0;
                    b.batch.back().work = canon(o);
                    b.hash = mix(b.hash, b.batch.back());
                }
            }
            ++res_.op_count;
            const std::uint64_t ord = ord_[c]++;  // the op's place in the core's stream
            step_times* row = nullptr;
            step_times* irow = nullptr;  // the op's inner row (op::sub), counted in row too
            if (opt_.per_step) {
                row = step_row(0, c, o.step, 0);
                if (o.sub != 0) irow = step_row(1, c, o.step, o.sub);
                inner_at_[c] = irow != nullptr ? row_[1][c] : -1;
            }
            const double begin = t;
            switch (o.kind) {
                case op_kind::overhead:
                case op_kind::compute: {
                    const double busy = busy_seconds(o);
                    t += busy;
                    const bool ovh = o.kind == op_kind::overhead;
                    (ovh ? res_.busy_overhead : res_.busy_compute)[c] += busy;
                    if (row) (ovh ? row->overhead : row->compute) += busy;
                    if (irow) (ovh ? irow->overhead : irow->compute) += busy;
                    break;
                }
                case op_kind::dma_start:
                    start_dma(c, o);
                    if (row) row->issue += chip_.dma_issue_s;
                    if (irow) irow->issue += chip_.dma_issue_s;
                    break;
                case op_kind::dma_wait:
                    wait_dma(c, o);
                    break;
                case op_kind::sem_signal:
                    signal(c, o);
                    break;
                case op_kind::sem_wait:
                    wait_sem(c, o);
                    break;
                default:
                    throw error(
                        "SIM2", "simulate",
                        "an op has an unknown op_kind (" + std::to_string(static_cast<int>(o.kind)) + ")",
                        "use overhead, dma_start, dma_wait, compute, sem_signal or sem_wait");
            }
            if (row) row->end = t;
            if (irow) irow->end = t;
            if (opt_.timeline && ((o.kind != op_kind::dma_wait && o.kind != op_kind::sem_wait) || t > begin) &&
                o.kind != op_kind::sem_signal)
                push_span({c, span::track::stream, o.kind, o.label, o.step, o.dma, begin, t, 0, true}, ord);
            if (state_[c] == core_state::blocked) wait_ord_[c] = ord;
        }
    }

    // Ops carry work, not time: an overhead op is one grid step's control overhead (the chip's),
    // a compute op names its work in the call's work table, which times_ converts (work_times).
    double busy_seconds(const op& o) {
        return o.kind == op_kind::overhead ? chip_.step_overhead_s : times_.seconds(o.work);
    }
    // What the fast lanes compare of an op's work: a compute op's canonical work number (two
    // works of equal time are the same to them), any other op's work field as it is.
    std::uint32_t canon(const op& o) { return o.kind == op_kind::compute ? times_.canonical(o.work) : o.work; }
    // Whether ops x and y of one kind do work of equal time: the same number (a canonical number
    // is its own: a recorded op's equals a pulled op's of that work), or equal canonical ones.
    bool same_work(const op& x, const op& y) { return x.work == y.work || canon(x) == canon(y); }

    // The rows of book b: result::steps (0) or result::inner_steps (1).
    std::vector<step_times>& book_rows(int b) { return b == 0 ? res_.steps : res_.inner_steps; }
    const std::vector<step_times>& book_rows(int b) const { return b == 0 ? res_.steps : res_.inner_steps; }

    // The row of (core c, step, sub) in book b: the current one, or found again if the value
    // recurs after other values (e.g. an op of the next step issued during this one), or a new one.
    step_times* step_row(int b, int c, std::uint32_t step, std::uint32_t sub) {
        const auto u = static_cast<std::size_t>(c);
        const auto bu = static_cast<std::size_t>(b);
        int& r = row_[bu][u];
        std::vector<step_times>& v = book_rows(b);
        if (r < 0 || v[static_cast<std::size_t>(r)].step != step || v[static_cast<std::size_t>(r)].sub != sub) {
            const std::uint64_t key = row_key(c, step, sub);
            const auto [it, added] = rows_[bu].try_emplace(key, static_cast<int>(v.size()));
            if (added) {
                if (v.size() == v.capacity()) within_budget(v.size() + 1, 0, step);
                v.push_back({c, step, t_[u], t_[u], 0, 0, 0, 0, 0, 0, sub});
                // (A new row of an existing step value can only be an inner row of that step.)
                if (row_any_[bu][u] && step < row_max_[bu][u]) row_rising_[bu][u] = false;
                row_max_[bu][u] = std::max(row_max_[bu][u], step);
                row_any_[bu][u] = true;
            } else if (r < 0 || v[static_cast<std::size_t>(r)].step != step) {
                // The fast lane's row replication needs rows in step order. (Back to another row of
                // the current step, as a nested pipeline's parent row after its children, is not
                // back in time: the step's rows are all made within the period that makes them.)
                ++row_recurred_[bu];
            }
            r = it->second;
        }
        return &v[static_cast<std::size_t>(r)];
    }
    static std::uint64_t row_key(int c, std::uint32_t step, std::uint32_t sub) {
        return std::uint64_t{static_cast<std::uint32_t>(c)} << 48 | std::uint64_t{sub} << 32 | step;
    }

    // ---- Semaphores (S60): per core, counted in the op's units (bytes for DMA semaphores) ----

    void check_sem(int c, const op& o) const {
        if (!opt_.semaphores)
            throw error("SIM2", "simulate",
                        "core " + std::to_string(c) + " has a semaphore op but options::semaphores is off",
                        "set sim::options::semaphores for streams with semaphores");
        if (o.sem == 0 || o.sem >= stream::max_semaphores)
            throw error("SIM2", "simulate",
                        "core " + std::to_string(c) + " names semaphore " + std::to_string(o.sem) +
                            ", outside 1 .. " + std::to_string(stream::max_semaphores - 1),
                        "number semaphores from 1");
    }
    std::int64_t& sem_at(int c, std::uint32_t sem) {
        auto& v = sem_val_[static_cast<std::size_t>(c)];
        if (v.size() <= sem) v.resize(static_cast<std::size_t>(sem) + 1, 0);
        return v[sem];
    }
    std::int64_t sem_value(int c, std::uint32_t sem) const {
        const auto& v = sem_val_[static_cast<std::size_t>(c)];
        return sem < v.size() ? v[sem] : 0;
    }
    void signal(int c, const op& o) {
        check_sem(c, o);
        if (o.core >= cores_ || o.bytes < 0)
            throw error("SIM2", "simulate",
                        "core " + std::to_string(c) + " signals core " + std::to_string(o.core) + " by " +
                            std::to_string(o.bytes),
                        "signal a simulated core by a non-negative amount");
        raise(o.core, o.sem, o.bytes, t_[c]);
    }
    // Semaphore `sem` of core k goes up by n at time t: a wait it satisfies ends then.
    void raise(int k, std::uint32_t sem, std::int64_t n, double t) {
        std::int64_t& v = sem_at(k, sem);
        v += n;
        if (state_[k] != core_state::blocked || wait_slot_[k] >= 0 || wait_sem_[k] != sem || v < wait_want_[k])
            return;
        v -= wait_want_[k];
        const double begin = t_[k];
        const double end = std::max(begin, t);
        t_[k] = end;
        state_[k] = core_state::ready;
        const bool dma = wait_is_dma_[k];
        (dma ? res_.wait_dma : res_.wait_sem)[k] += end - begin;
        if (opt_.per_step) {
            step_times& row = res_.steps[static_cast<std::size_t>(row_[0][k])];
            (dma ? row.wait : row.sem_wait) += end - begin;
            row.end = end;
            if (inner_at_[k] >= 0) {
                step_times& in = res_.inner_steps[static_cast<std::size_t>(inner_at_[k])];
                (dma ? in.wait : in.sem_wait) += end - begin;
                in.end = end;
            }
        }
        if (opt_.timeline && end - begin > 1e-12 * end)  // (not a rounding error: see complete())
            push_span({k, span::track::stream, op_kind::sem_wait, wait_label_[k], wait_step_[k], sem, begin, end, 0, dma},
                      wait_ord_[k]);
    }
    void wait_sem(int c, const op& o) {
        check_sem(c, o);
        if (o.bytes < 0)
            throw error("SIM2", "simulate",
                        "core " + std::to_string(c) + " waits for a negative amount (" + std::to_string(o.bytes) +
                            ") on semaphore " + std::to_string(o.sem),
                        "wait for a non-negative amount");
        std::int64_t& v = sem_at(c, o.sem);
        if (v >= o.bytes) {
            v -= o.bytes;
            return;
        }
        state_[c] = core_state::blocked;
        wait_slot_[c] = -1;
        wait_sem_[c] = o.sem;
        wait_want_[c] = o.bytes;
        wait_is_dma_[c] = o.dma_sem;
        wait_label_[c] = o.label;
        wait_step_[c] = o.step;
    }

    void start_dma(int c, const op& o) {
        if (o.bytes < 0)
            throw error("SIM2", "simulate",
                        "DMA " + std::to_string(o.dma) + " of core " + std::to_string(c) +
                            " moves a negative number of bytes (" + std::to_string(o.bytes) + ")",
                        "use bytes >= 0");
        if (o.sem != 0) check_sem(c, o);
        if (o.sem == 0 && live_[c].find(o.dma) >= 0)
            throw error("SIM1", "simulate",
                        "core " + std::to_string(c) + " starts DMA " + std::to_string(o.dma) +
                            " again while it is in flight (not yet waited); its semaphore would "
                            "count two completions (rule 39, docs/rules.md)",
                        "wait on a DMA before reusing its id");
        double& t = t_[c];
        t += chip_.dma_issue_s;
        res_.busy_issue[c] += chip_.dma_issue_s;
        ++res_.dma_count;
        ++starts_[c];
        (o.far ? res_.hbm_bytes : res_.onchip_bytes) += o.bytes;
        int s;
        if (free_.empty()) {
            s = static_cast<int>(dmas_.size());
            dmas_.emplace_back();
        } else {
            s = free_.back();
            free_.pop_back();
        }
        live_dma& d = at(s);
        d.ready = t + chip_.dma_latency_s;
        d.tag = 0;
        d.begin = t;
        d.bytes = o.bytes;
        d.cost = o.far ? hbm_cost(o) : static_cast<double>(o.bytes);
        d.seq = seq_++;
        d.id = o.dma;
        d.label = o.label;
        d.step = o.step;
        d.sem = o.sem;
        d.ord = ord_[c] - 1;  // (run_core counted its op already)
        d.core = static_cast<std::uint8_t>(c);
        d.channel = static_cast<std::uint8_t>(o.far ? 0 : 1 + c);
        d.phase = dma_phase::latency;
        d.orphan = false;
        if (o.sem == 0) live_[c].push(o.dma, s);
        pending_[c].push(s);
        if (ev_slot_ < 0 || before(d.ready, d, ev_t_, at(ev_slot_))) {
            ev_t_ = d.ready;
            ev_slot_ = s;
            ev_finish_ = false;
        }
    }

    // What a far DMA costs HBM, in bytes at B·η (docs/model.md, "DMA shape costs"): its bytes,
    // `dma_run_cost_bytes` per contiguous run and the descriptor's `dma_descriptor_s`.
    double hbm_cost(const op& o) const {
        const double bytes = static_cast<double>(o.bytes);
        const double runs = o.run == 0 ? 1.0 : std::ceil(bytes / o.run);
        return bytes + runs * chip_.dma_run_cost_bytes + desc_bytes_;
    }

    void wait_dma(int c, const op& o) {
        const int k = live_[c].find(o.dma);
        if (k < 0)
            throw error("SIM1", "simulate",
                        "core " + std::to_string(c) + " waits on DMA " + std::to_string(o.dma) +
                            ", which it never started or already waited; on a TPU this "
                            "over-wait hangs (rule 39, docs/rules.md)",
                        "wait exactly once on each started DMA");
        const int s = live_[c].slot(k);
        if (at(s).phase == dma_phase::done) {
            live_[c].erase(k);
            free_.push_back(s);
            return;
        }
        state_[c] = core_state::blocked;
        wait_slot_[c] = s;
        wait_label_[c] = o.label;
        wait_step_[c] = o.step;
        wait_who_[c] = o.who <= 2 * max_operands ? o.who : 0;
    }

    void end_stream(int c) {
        state_[c] = core_state::done;
        for (const int s : live_[c].slots()) {
            ++res_.dangling_dmas;
            if (at(s).phase == dma_phase::done) {
                free_.push_back(s);
            } else {
                at(s).orphan = true;
                ++orphans_;
            }
        }
        live_[c].clear();
    }

    // ---- Steady state (options::steady_state, docs/model.md) -----------------------------------
    //
    // At every step boundary of a core running alone (the first op of a new step value), the
    // engine records the core's state relative to its time: each DMA started and not yet waited,
    // by id relative to the core's count of starts, with its phase, bytes and what is left of it
    // (latency until ready, or bytes still to move). When the state equals the one recorded p
    // boundaries earlier (p <= max_period, the largest first), the ops of those p steps form a
    // cycle: if the next p steps bring the same ops (ids and step numbers relative), they evolve
    // from the same state the same way, so they take the cycle's time, start its number of DMAs
    // and add its totals, and end in the same relative state, ready for the next period. The
    // fast lane pulls and compares ops only, and applies all skipped periods at once when an op
    // differs or the stream ends; the ops pulled since the last whole period are then simulated
    // as usual.

    tally totals(int c) const {
        tally s;
        s.ops = res_.op_count;
        s.dmas = res_.dma_count;
        s.hbm_bytes = res_.hbm_bytes;
        s.onchip_bytes = res_.onchip_bytes;
        s.idle = channels_[0].idle_count();
        s.overhead = res_.busy_overhead[c];
        s.issue = res_.busy_issue[c];
        s.compute = res_.busy_compute[c];
        s.wait = res_.wait_dma[c];
        s.wait_who = res_.wait_by_operand;
        s.hbm_busy = res_.hbm_busy_time;
        return s;
    }

    // A DMA in flight as a boundary records it, relative to the clock t and to its core's count
    // of starts (`starts`): what a period must repeat of it (steady.hpp, same_snaps).
    [[nodiscard]] dma_snap snap_of(const live_dma& d, std::uint32_t starts, double t) const {
        dma_snap x;
        x.id = d.id - starts;
        x.seq = seq_ - d.seq;
        x.bytes = d.bytes;
        x.phase = d.phase;
        x.channel = d.channel;
        x.core = d.core;
        x.cost = d.cost;
        x.left = d.phase == dma_phase::latency    ? d.ready - t
                 : d.phase == dma_phase::transfer ? d.tag - channels_[d.channel].v_at(t)
                                                  : 0.0;
        return x;
    }

    // Records boundary nb_ (core c about to run op o, the first of step o.step) and looks for a
    // period ending here; true when the fast lane takes over (holding o).
    bool at_boundary(int c, const op& o) {
        auto& replay_ = replays_[static_cast<std::size_t>(c)];
        auto& replay_pos_ = replay_at_[static_cast<std::size_t>(c)];
        boundary& b = ring_[static_cast<std::size_t>(nb_ % ring_size)];
        const double t = t_[c];
        b.t = t;
        b.last_done = last_done_;
        b.v = channels_[0].v_at(t);
        b.starts = starts_[c];
        b.step = o.step;
        b.sum = totals(c);
        b.rows = mark_rows();
        b.spans = res_.timeline.size();
        b.batch.clear();
        b.hash = 0;
        b.snap.clear();
        for (const int s : live_[c].slots()) b.snap.push_back(snap_of(at(s), starts_[c], t));
        for (std::size_t k = 1; k < b.snap.size(); ++k)  // by id (a few entries: insertion sort)
            for (std::size_t i = k; i > 0 && b.snap[i].id < b.snap[i - 1].id; --i)
                std::swap(b.snap[i], b.snap[i - 1]);
        std::uint64_t key = b.snap.size();
        for (const dma_snap& x : b.snap)
            key = (key * 0x9E3779B97F4A7C15ull) ^
                  (std::uint64_t{x.id} << 24 ^ x.seq << 8 ^ static_cast<std::uint64_t>(x.bytes) << 32 ^
                   static_cast<std::uint64_t>(x.phase) << 4 ^ x.channel);
        b.key = key;
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
            if (a.key != key || at_boundary_index(j - 1 - p).hash != last || !same_state(a, b)) continue;
            const std::uint32_t ds = b.step - a.step;
            if (!rows_repeat(a.rows, b.rows, a.t, b.t, c, c, {ds, ds})) continue;
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

    // Boundary n of the history (numbers before the first recorded one exist after a skip).
    boundary& at_boundary_index(std::int64_t n) { return ring_[ring_pos(n)]; }

    // The period of p steps that ended at the last boundary becomes the cycle to match.
    void enter_fast(int c, int p, const op& first) {
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
        cycle_sum_ = b.sum;
        const tally& s = a.sum;
        cycle_sum_.ops -= s.ops;
        cycle_sum_.dmas -= s.dmas;
        cycle_sum_.hbm_bytes -= s.hbm_bytes;
        cycle_sum_.onchip_bytes -= s.onchip_bytes;
        cycle_sum_.idle -= s.idle;
        cycle_sum_.overhead -= s.overhead;
        cycle_sum_.issue -= s.issue;
        cycle_sum_.compute -= s.compute;
        cycle_sum_.wait -= s.wait;
        for (std::size_t w = 0; w < s.wait_who.size(); ++w) cycle_sum_.wait_who[w] -= s.wait_who[w];
        cycle_sum_.hbm_busy -= s.hbm_busy;
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

    // The fast lane over whole-step batches: batch b of a period must equal the cycle's batch b
    // (ids and steps relative); a batch the source says repeats the previous one matches when
    // the cycle's batch b repeats its batch b - 1, without reading it. On a mismatch or the
    // stream's end, the matched batches of the unfinished period are rebuilt from the cycle.
    void fast_forward_batches(int c) {
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
            bool same = cur.size() == e.batch.size();
            for (std::size_t k = 0; same && k < cur.size(); ++k) {
                const op& x = cur[k];
                const op& y = e.batch[k];
                const bool dma = x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait;
                same = x.kind == y.kind && (dma ? x.dma - base : x.dma) == y.dma && same_work(x, y) &&
                       x.bytes == y.bytes && x.far == y.far && x.run == y.run && x.who == y.who &&
                       (tl_lane_ || x.label == y.label) && x.step - s0 == y.step && x.sub == y.sub;
            }
            if (!same) {
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

    // At the end of a period of whole-step batches that repeated the cycle: the periods the
    // source makes in bulk beyond it (period_source), which the lane then counts as skipped.
    // (Not with a timeline: each skipped op's label is recorded as it is pulled.)
    std::int64_t source_skips(int c) {
        if (tl_lane_ || cycle_steps_ != static_cast<std::uint32_t>(period_)) return 0;
        const std::int64_t m = src_.skippable_periods(c, period_, cycle_starts_);
        src_.skip_periods(c, m);
        return m;
    }

    // The end of a fast-lane run: applies the skipped periods (none: look again in a period);
    // what replay_ holds is then simulated as usual.
    void leave_fast(int c) {
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

    // Pulls whole periods that repeat the cycle; at the first op that differs (or the stream's
    // end) applies them, and leaves the ops pulled since the last whole period to be simulated.
    // (Ops are pulled straight into replay_ and compared field by field: copying whole ops that
    // the source has just written field by field stalls on store forwarding.)
    void fast_forward(int c) {
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
                const op& y = cycle_[k];
                const bool dma = x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait;
                if (x.kind != y.kind || (dma ? x.dma - base : x.dma) != y.dma || !same_work(x, y) ||
                    x.bytes != y.bytes || x.far != y.far || x.run != y.run || x.who != y.who ||
                    (!tl_lane_ && x.label != y.label) || x.step - step0 != y.step || x.sub != y.sub) {
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

    // Advances core c and its DMAs by m periods of the cycle (state: equal, times shifted).
    void apply(int c, std::int64_t m) {
        const double dt = static_cast<double>(m) * cycle_dt_;
        const auto k = static_cast<std::uint32_t>(m * cycle_starts_);
        const tally& s = cycle_sum_;
        const auto md = static_cast<double>(m);
        res_.op_count += m * s.ops;
        res_.steady_ops += m * s.ops;
        res_.dma_count += m * s.dmas;
        res_.hbm_bytes += m * s.hbm_bytes;
        res_.onchip_bytes += m * s.onchip_bytes;
        res_.busy_overhead[c] += md * s.overhead;
        res_.busy_issue[c] += md * s.issue;
        res_.busy_compute[c] += md * s.compute;
        res_.wait_dma[c] += md * s.wait;
        for (std::size_t w = 0; w < s.wait_who.size(); ++w) res_.wait_by_operand[w] += md * s.wait_who[w];
        res_.hbm_busy_time += md * s.hbm_busy;
        t_[c] += dt;
        if (cycle_done_) last_done_ += dt;
        const auto n_ops = static_cast<std::uint64_t>(s.ops);  // the core's ops per period
        for (const int sl : live_[c].slots()) {
            live_dma& d = at(sl);
            d.ready += dt;
            d.begin += dt;
            d.id += k;
            d.seq += k;
            d.ord += static_cast<std::uint64_t>(m) * n_ops;
            d.step += static_cast<std::uint32_t>(m) * cycle_steps_;
            if (tl_lane_) d.label = labels_[static_cast<std::size_t>(c)][d.ord];
        }
        live_[c].shift_ids(k);
        seq_ += k;
        starts_[c] += k;
        ord_[c] += static_cast<std::uint64_t>(m) * n_ops;
        for (std::size_t ch = 0; ch < channels_.size(); ++ch) channels_[ch].shift(dt, ch == 0 && s.idle > 0);
        // The history as if the skipped periods had been simulated: the boundary i back from the
        // current one is, for i = q·p + r within the skipped periods, the cycle's boundary j - r
        // moved by m - q periods; further back, the boundaries recorded before the skip.
        const std::int64_t j = nb_ - 1;
        const std::int64_t p = period_;
        const row_mark ma = at_boundary_index(j - p).rows;
        const row_mark mb = at_boundary_index(j).rows;
        const std::array<std::uint32_t, 2> dstep{cycle_steps_, cycle_steps_};
        replicate_rows(ma, mb, m, cycle_dt_, dstep);
        const std::size_t s0 = at_boundary_index(j - p).spans;
        const std::size_t s1 = at_boundary_index(j).spans;
        replicate_spans(s0, s1, m, cycle_dt_, {cycle_starts_, cycle_starts_}, dstep, {n_ops, n_ops});
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
            e.sum.ops += n * s.ops;
            e.sum.dmas += n * s.dmas;
            e.sum.hbm_bytes += n * s.hbm_bytes;
            e.sum.onchip_bytes += n * s.onchip_bytes;
            e.sum.idle += n * s.idle;
            e.sum.overhead += nd * s.overhead;
            e.sum.issue += nd * s.issue;
            e.sum.compute += nd * s.compute;
            e.sum.wait += nd * s.wait;
            for (std::size_t w = 0; w < s.wait_who.size(); ++w) e.sum.wait_who[w] += nd * s.wait_who[w];
            e.sum.hbm_busy += nd * s.hbm_busy;
            e.rows = i == 0 ? mark_rows() : shifted_mark(e.rows, ma, mb, n, cycle_dt_, dstep);
            e.spans += static_cast<std::size_t>(n) * (s1 - s0);
        }
        valid_from_ = j - depth;
    }

    // ---- Per-step rows in the fast lanes (options::per_step) -----------------------------------
    //
    // A period's rows repeat as its ops do: each core's current row at the boundary (it may go on
    // into the period) gets the increments the current row at the period's start got, and the
    // rows created within the period are created again, their times moved by the period's
    // duration and their steps by its steps. That holds when the rows are part of the repeating
    // state: the current rows equal relative to the clock, no core went back to an older row,
    // and each core's rows were created in rising step order (so a replicated row's step is new).

    row_mark mark_rows() const {
        row_mark m;
        if (!opt_.per_step) return m;
        for (std::size_t b = 0; b < 2; ++b) {
            book_mark& k = m.book[b];
            const std::vector<step_times>& v = book_rows(static_cast<int>(b));
            k.rows = v.size();
            k.recurred = row_recurred_[b];
            for (std::size_t c = 0; c < 2; ++c) {
                k.open[c] = row_[b][c];
                if (row_[b][c] >= 0) k.open_row[c] = v[static_cast<std::size_t>(row_[b][c])];
            }
        }
        return m;
    }

    // The rows of the period from a (at time ta) to b (at tb) repeat, for the cores in [c0, c1],
    // whose steps advance by dstep per period: in both books (a step's inner rows are
    // replicated with it).
    [[gnu::noinline]] bool rows_repeat(const row_mark& ma, const row_mark& mb, double ta, double tb, int c0, int c1,
                     const std::array<std::uint32_t, 2>& dstep) const {
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

    // Mark x, recorded within the period from a to b, n periods later (the history rebuilt after
    // a skip): rows made in the period moved by n periods' rows; the current row at a, which
    // the period went on adding to, is then b's current row n - 1 periods later.
    [[gnu::noinline]] row_mark shifted_mark(row_mark m, const row_mark& ma, const row_mark& mb, std::int64_t n,
                          double dt, const std::array<std::uint32_t, 2>& dstep) const {
        if (!opt_.per_step) return m;
        for (std::size_t bk = 0; bk < 2; ++bk) {
            book_mark& x = m.book[bk];
            const book_mark& a = ma.book[bk];
            const book_mark& b = mb.book[bk];
            const auto made = static_cast<std::int64_t>(b.rows - a.rows);
            const auto first = static_cast<std::int64_t>(a.rows);
            x.rows += static_cast<std::size_t>(n * made);
            for (std::size_t c = 0; c < 2; ++c) {
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

    // Adds m periods' rows (the period from a to b, of duration dt, steps advancing by dstep),
    // in both books.
    [[gnu::noinline]] void replicate_rows(const row_mark& ma, const row_mark& mb, std::int64_t m, double dt,
                        const std::array<std::uint32_t, 2>& dstep) {
        if (!opt_.per_step || m == 0) return;
        // A core blocked in a wait of an inner row (the joint lane's core 1) goes on in its image.
        const std::array<bool, 2> tagged{inner_at_[0] >= 0, inner_at_[1] >= 0};
        for (std::size_t bk = 0; bk < 2; ++bk) {
            const book_mark& a = ma.book[bk];
            const book_mark& b = mb.book[bk];
            std::vector<step_times>& v = book_rows(static_cast<int>(bk));
            std::array<step_times, 2> inc{};
            std::array<bool, 2> has{};
            for (std::size_t c = 0; c < 2; ++c) {
                if (a.open[c] < 0 || b.open[c] < 0) continue;
                const step_times& now = v[static_cast<std::size_t>(a.open[c])];
                const step_times& then = a.open_row[c];
                step_times& d = inc[c];
                d.overhead = now.overhead - then.overhead;
                d.issue = now.issue - then.issue;
                d.compute = now.compute - then.compute;
                d.wait = now.wait - then.wait;
                d.sem_wait = now.sem_wait - then.sem_wait;
                d.waited_on = now.waited_on;
                d.end = now.end;  // the image in period k ends k periods later, if it was touched
                d.begin = now.end != then.end ? 1.0 : 0.0;
                has[c] = true;
            }
            const std::vector<step_times> made(v.begin() + static_cast<std::ptrdiff_t>(a.rows),
                                               v.begin() + static_cast<std::ptrdiff_t>(b.rows));
            std::array<int, 2> open = b.open;
            within_budget(static_cast<std::size_t>(m) * made.size(), 0, made.empty() ? 0 : made.back().step);
            v.reserve(v.size() + static_cast<std::size_t>(m) * made.size());
            for (std::int64_t k = 1; k <= m; ++k) {
                const double shift = static_cast<double>(k) * dt;
                for (std::size_t c = 0; c < 2; ++c) {
                    if (!has[c]) continue;
                    step_times& row = v[static_cast<std::size_t>(open[c])];
                    row.overhead += inc[c].overhead;
                    row.issue += inc[c].issue;
                    row.compute += inc[c].compute;
                    row.wait += inc[c].wait;
                    row.sem_wait += inc[c].sem_wait;
                    row.waited_on |= inc[c].waited_on;
                    if (inc[c].begin != 0) row.end = inc[c].end + shift;
                }
                for (const step_times& x : made) {
                    step_times y = x;
                    const auto c = static_cast<std::size_t>(x.core);
                    y.step += static_cast<std::uint32_t>(k) * dstep[c];
                    y.begin += shift;
                    y.end += shift;
                    const int idx = static_cast<int>(v.size());
                    v.push_back(y);
                    rows_[bk].emplace(row_key(x.core, y.step, y.sub), idx);
                    row_max_[bk][c] = std::max(row_max_[bk][c], y.step);
                    open[c] = idx;  // the last one made is the image of core c's current row at b
                }
            }
            for (std::size_t c = 0; c < 2; ++c)
                if (b.open[c] >= 0) row_[bk][c] = open[c];
        }
        for (std::size_t c = 0; c < 2; ++c) inner_at_[c] = tagged[c] ? row_[1][c] : -1;
    }

    // What the rows and the timeline take with `rows` more rows and `spans` more spans: each row
    // with its index entry (rows_), each span with its place (span_ord_) and its op's label. Over
    // options::memory_budget (doubling a vector's capacity counted): MEM1, naming the step.
    void within_budget(std::size_t rows, std::size_t spans, std::uint32_t step) const {
        constexpr double row_bytes = sizeof(step_times) + 64, span_bytes = sizeof(span) + 12;
        const double have_rows = static_cast<double>(res_.steps.size() + res_.inner_steps.size());
        const double have_spans = static_cast<double>(res_.timeline.size());
        const double bytes = row_bytes * (have_rows + 2.0 * static_cast<double>(rows)) +
                             span_bytes * (have_spans + 2.0 * static_cast<double>(spans));
        if (bytes <= static_cast<double>(opt_.memory_budget)) return;
        throw error("MEM1", "timing model, step " + std::to_string(step),
                    std::string("recording ") + (spans > 0 ? "the timeline" : "the per-step rows") +
                        " would take about " +
                        std::to_string(static_cast<std::int64_t>(bytes)) + " host bytes, over the budget of " +
                        std::to_string(opt_.memory_budget) +
                        " (run_options::memory_budget): per-step rows and the timeline grow with the grid",
                    "raise run_options::memory_budget, or record no per-step rows (per_step = 0) or timeline");
    }

    // ---- The timeline in the fast lanes (options::timeline) ------------------------------------
    //
    // A skipped period records the spans its cycle recorded, moved by the period's time, steps
    // and DMA starts (per core). Labels do not time, so the lanes compare ops without them; each
    // span's label is then that of the op it stands for (a stream span's op, a DMA's start, a
    // blocking wait) in the skipped period, kept as the ops were pulled: op k of core c's stream
    // has label labels_[c][k], and span i of the timeline stands for op span_ord_[i].

    void push_span(const span& x, std::uint64_t ord) {
        if (res_.timeline.size() == res_.timeline.capacity()) within_budget(0, res_.timeline.size() + 1, x.step);
        res_.timeline.push_back(x);
        if (tl_lane_) span_ord_.push_back(ord);
    }
    void record_labels(int c, std::span<const op> b) {
        std::vector<std::uint32_t>& v = labels_[static_cast<std::size_t>(c)];
        for (const op& o : b) v.push_back(o.label);
    }
    // Ops a fast lane gives back to be simulated are the last ones pulled for core c; rebuilt
    // from the cycle, they take back the labels they were pulled with.
    void relabel_tail(int c, std::vector<op>& r) const {
        if (!tl_lane_) return;
        const std::vector<std::uint32_t>& v = labels_[static_cast<std::size_t>(c)];
        const std::size_t first = v.size() - r.size();
        for (std::size_t i = 0; i < r.size(); ++i) r[i].label = v[first + i];
    }
    // Appends m periods' spans: those the cycle recorded, in [s0, s1), moved per period by dt
    // and, for each core, by its DMA starts, steps and ops.
    [[gnu::noinline]] void replicate_spans(std::size_t s0, std::size_t s1, std::int64_t m, double dt,
                                           const std::array<std::uint32_t, 2>& starts,
                                           const std::array<std::uint32_t, 2>& steps,
                                           const std::array<std::uint64_t, 2>& ops) {
        if (!opt_.timeline || m == 0 || s1 == s0) return;
        const std::size_t add = static_cast<std::size_t>(m) * (s1 - s0);
        within_budget(0, add, res_.timeline[s1 - 1].step);
        res_.timeline.reserve(res_.timeline.size() + add);
        span_ord_.reserve(span_ord_.size() + add);
        for (std::int64_t k = 1; k <= m; ++k) {
            const double shift = static_cast<double>(k) * dt;
            const auto ku = static_cast<std::uint32_t>(k);
            for (std::size_t i = s0; i < s1; ++i) {
                span x = res_.timeline[i];
                const auto c = static_cast<std::size_t>(x.core);
                const std::uint64_t ord = span_ord_[i] + static_cast<std::uint64_t>(k) * ops[c];
                x.begin += shift;
                x.end += shift;
                x.step += ku * steps[c];
                if (x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait) x.dma += ku * starts[c];
                x.label = labels_[c][ord];
                res_.timeline.push_back(x);
                span_ord_.push_back(ord);
            }
        }
    }

    // ---- The joint lane (both cores running, docs/model.md §11) --------------------------------
    //
    // Both cores share HBM, so neither core's state repeats on its own: the state that repeats is
    // the chip's. It is recorded at every step boundary of core 0 (core 0 about to run the first
    // op of a new step value): both cores' live DMAs relative to core 0's clock and to their
    // core's count of starts, core 1's clock and blocked wait relative to it, and the ops each
    // core ran until core 0's next boundary. When the chip's state equals the one p boundaries
    // earlier and the ops of both cores over the last p boundaries repeat the p before them, the
    // next p boundaries evolve the same way if both cores bring the same ops again: the engine's
    // decisions depend only on that state and on the ops. The lane pulls both cores' ops of each
    // period (core 0's up to its next step value, core 1's the cycle's number of ops) and
    // compares them; at the first that differs, or a stream's end, it applies all whole periods
    // at once and gives the ops pulled since back to be simulated.

    joint_tally joint_totals() const {
        joint_tally s;
        s.ops = res_.op_count;
        s.dmas = res_.dma_count;
        s.hbm_bytes = res_.hbm_bytes;
        s.onchip_bytes = res_.onchip_bytes;
        s.idle = channels_[0].idle_count();
        s.overhead = res_.busy_overhead;
        s.issue = res_.busy_issue;
        s.compute = res_.busy_compute;
        s.wait = res_.wait_dma;
        s.wait_who = res_.wait_by_operand;
        s.hbm_busy = res_.hbm_busy_time;
        return s;
    }

    // Records joint boundary jn_ (core 0 about to run o, the first op of step o.step) and looks
    // for a period ending here; true when the joint lane takes over (holding o).
    [[gnu::noinline]] bool at_joint_boundary(const op& o) {
        joint_boundary& b = jring_[ring_pos(jn_)];
        const double t = t_[0];
        b.t = t;
        b.last_done = last_done_;
        b.v = channels_[0].v_at(t);
        b.d1 = t_[1] - t;
        b.starts = starts_;
        b.step = {o.step, jlast1_};
        b.state1 = static_cast<std::uint8_t>(state_[1]);
        const bool blocked = state_[1] == core_state::blocked;
        b.who1 = blocked ? wait_who_[1] : 0;
        b.wait1 = blocked ? at(wait_slot_[1]).id - starts_[1] : 0;
        b.sum = joint_totals();
        b.rows = mark_rows();
        b.spans = res_.timeline.size();
        for (std::size_t c = 0; c < 2; ++c) {
            b.batch[c].clear();
            b.hash[c] = 0;
        }
        b.cuts1.clear();
        b.snap.clear();
        for (int c = 0; c < 2; ++c)
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
        for (std::size_t c = 0; c < 2; ++c)  // ops a fast lane gave back come first
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

    // The p boundaries that ended at the last one become the joint cycle to match.
    [[gnu::noinline]] void enter_joint(int p, const op& first) {
        const std::int64_t j = jn_ - 1;
        const joint_boundary& a = jring_[ring_pos(j - p)];
        const joint_boundary& b = jring_[ring_pos(j)];
        for (std::size_t c = 0; c < 2; ++c) {
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
        joint_tally& d = jcycle_sum_;
        const joint_tally& x = b.sum;
        const joint_tally& y = a.sum;
        d.ops = x.ops - y.ops;
        d.dmas = x.dmas - y.dmas;
        d.hbm_bytes = x.hbm_bytes - y.hbm_bytes;
        d.onchip_bytes = x.onchip_bytes - y.onchip_bytes;
        d.idle = x.idle - y.idle;
        for (std::size_t c = 0; c < 2; ++c) {
            d.overhead[c] = x.overhead[c] - y.overhead[c];
            d.issue[c] = x.issue[c] - y.issue[c];
            d.compute[c] = x.compute[c] - y.compute[c];
            d.wait[c] = x.wait[c] - y.wait[c];
        }
        d.hbm_busy = x.hbm_busy - y.hbm_busy;
        for (std::size_t w = 0; w < d.wait_who.size(); ++w) d.wait_who[w] = x.wait_who[w] - y.wait_who[w];
        for (std::size_t c = 0; c < 2; ++c) {
            replays_[c].clear();
            replay_at_[c] = 0;
        }
        replays_[0].push_back(first);
        jby_batch_ = joint_batches_ready(p);
    }

    // The joint lane by whole batches (as fast_forward_batches for one core): when core 0's
    // boundary is the first op of a whole-step batch, and core 1's ops of the cycle fall into
    // its source's batches so that core 1's next q batches are known: the cycle's batches
    // after its first cut, then the batch core 1 is in (its part before the boundary ends the
    // cycle, its part after begins the next period, which must be the cycle's start).
    [[gnu::noinline]] bool joint_batches_ready(int p) {
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

    // Batch x is d one period k later: ids relative to `base`, steps to `step0`.
    bool same_batch_ops(std::span<const op> x, const std::vector<op>& d, std::uint32_t base,
                        std::uint32_t step0) {
        if (x.size() != d.size()) return false;
        for (std::size_t k = 0; k < x.size(); ++k)
            if (!matches(x[k], d[k], base, step0)) return false;
        return true;
    }

    // The joint lane a batch at a time; on a mismatch or a stream's end, the matched batches of
    // the unfinished period are rebuilt from the cycle for both cores.
    [[gnu::noinline]] void joint_fast_forward_batches() {
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
        for (std::size_t c = 0; c < 2; ++c) {
            in_[c] = {};
            in_pos_[c] = 0;
            replay_at_[c] = 0;
        }
        finish_joint(r0);
    }

    // x is the cycle's op y one period later (DMA ids relative to `base`, steps to `step0`).
    // (With a timeline, labels are not compared: they do not time, and the replicated spans
    // take theirs from the ops pulled.)
    bool matches(const op& x, const op& y, std::uint32_t base, std::uint32_t step0) {
        const bool dma = x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait;
        return x.kind == y.kind && (dma ? x.dma - base : x.dma) == y.dma && same_work(x, y) &&
               x.bytes == y.bytes && x.far == y.far && x.run == y.run && x.who == y.who &&
               (tl_lane_ || x.label == y.label) && x.step - step0 == y.step && x.sub == y.sub && x.sem == y.sem && x.core == y.core &&
               x.dma_sem == y.dma_sem;
    }

    // Pulls and compares whole joint periods; at the first op that differs or a stream's end,
    // applies them and leaves the ops pulled since to be simulated.
    [[gnu::noinline]] void joint_fast_forward() {
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

    // The end of a joint-lane run: applies the whole periods skipped (none: look again in a
    // period); what the replays hold is then simulated as usual.
    [[gnu::noinline]] void finish_joint(const std::vector<op>& r0) {
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

    // Advances both cores and their DMAs by m joint periods (state: equal, times shifted).
    [[gnu::noinline]] void apply_joint(std::int64_t m) {
        const double dt = static_cast<double>(m) * jcycle_dt_;
        const joint_tally& s = jcycle_sum_;
        const auto md = static_cast<double>(m);
        res_.op_count += m * s.ops;
        res_.steady_ops += m * s.ops;
        res_.dma_count += m * s.dmas;
        res_.hbm_bytes += m * s.hbm_bytes;
        res_.onchip_bytes += m * s.onchip_bytes;
        for (std::size_t c = 0; c < 2; ++c) {
            res_.busy_overhead[c] += md * s.overhead[c];
            res_.busy_issue[c] += md * s.issue[c];
            res_.busy_compute[c] += md * s.compute[c];
            res_.wait_dma[c] += md * s.wait[c];
        }
        for (std::size_t w = 0; w < s.wait_who.size(); ++w) res_.wait_by_operand[w] += md * s.wait_who[w];
        res_.hbm_busy_time += md * s.hbm_busy;
        if (jcycle_done_) last_done_ += dt;
        std::uint32_t all = 0;
        for (std::size_t c = 0; c < 2; ++c) all += static_cast<std::uint32_t>(m) * jcycle_starts_[c];
        const std::array<std::uint64_t, 2> n_ops{jcycle_[0].size(), jcycle_[1].size()};  // per period
        for (std::size_t c = 0; c < 2; ++c) {
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
            for (std::size_t c = 0; c < 2; ++c) {
                e.starts[c] += static_cast<std::uint32_t>(n) * jcycle_starts_[c];
                e.step[c] += static_cast<std::uint32_t>(n) * jcycle_steps_[c];
                e.sum.overhead[c] += nd * s.overhead[c];
                e.sum.issue[c] += nd * s.issue[c];
                e.sum.compute[c] += nd * s.compute[c];
                e.sum.wait[c] += nd * s.wait[c];
            }
            e.sum.ops += n * s.ops;
            e.sum.dmas += n * s.dmas;
            e.sum.hbm_bytes += n * s.hbm_bytes;
            e.sum.onchip_bytes += n * s.onchip_bytes;
            e.sum.idle += n * s.idle;
            e.sum.hbm_busy += nd * s.hbm_busy;
            for (std::size_t w = 0; w < s.wait_who.size(); ++w) e.sum.wait_who[w] += nd * s.wait_who[w];
            e.rows = i == 0 ? mark_rows() : shifted_mark(e.rows, ma, mb, n, jcycle_dt_, jcycle_steps_);
            e.spans += static_cast<std::size_t>(n) * (s1 - s0);
        }
        jn_ = j + m * p + 1;
        jvalid_from_ = jn_ - 1 - depth;
    }

    void start_transfer(int s, double t) {
        live_dma& d = at(s);
        pending_[d.core].pop();  // it is the front: the earliest latency end of its core
        d.phase = dma_phase::transfer;
        if (d.bytes == 0) {
            complete(s, t);  // never joins a channel
            return;
        }
        d.tag = channels_[d.channel].arrive(s, d.cost, t, dmas_);
    }

    void finish(int s, double t) {
        const live_dma& d = at(s);
        channel& ch = channels_[d.channel];
        ch.depart(t, dmas_);
        if (d.channel == 0 && ch.idle()) res_.hbm_busy_time += t - ch.busy_since();
        complete(s, t);
    }

    // The DMA `s` has moved its last byte at time t.
    void complete(int s, double t) {
        live_dma& d = at(s);
        if (t > last_done_) last_done_ = t;
        if (opt_.timeline)
            push_span({d.core, span::track::dma, op_kind::dma_start, d.label, d.step, d.id, d.begin, t, d.bytes,
                       d.channel == 0},
                      d.ord);
        const int c = d.core;
        if (d.sem != 0) {  // waited through its semaphore, which it raises by its bytes
            const std::uint32_t sem = d.sem;
            const std::int64_t bytes = d.bytes;
            free_.push_back(s);
            raise(c, sem, bytes, t);
        } else if (d.orphan) {
            free_.push_back(s);
            --orphans_;
        } else if (state_[c] == core_state::blocked && wait_slot_[c] == s) {
            const double begin = t_[c];
            t_[c] = t;
            state_[c] = core_state::ready;
            res_.wait_dma[c] += t - begin;
            // op::who past max_operands: an inner pipeline's operand, a body copy to the call.
            const unsigned who = wait_who_[c], outer = who <= max_operands ? who : 0;
            res_.wait_by_operand[outer] += t - begin;
            if (opt_.per_step) {
                // A wait of a rounding error (a DMA done an ulp after the core got there) is no
                // wait on that operand: the bit must not depend on how the clock was summed.
                const bool real = t - begin > 1e-12 * t;
                const std::uint32_t bit = real ? std::uint32_t{1} << outer : 0u;
                step_times& row = res_.steps[static_cast<std::size_t>(row_[0][c])];
                row.wait += t - begin;
                row.end = t;
                row.waited_on |= bit;
                if (inner_at_[c] >= 0) {
                    step_times& in = res_.inner_steps[static_cast<std::size_t>(inner_at_[c])];
                    in.wait += t - begin;
                    in.end = t;
                    // In an inner row, bit 1 + k is operand k of that row's pipeline.
                    in.waited_on |= real ? std::uint32_t{1} << (who > max_operands ? who - max_operands : 0) : 0u;
                }
            }
            // A wait of a rounding error is no span either: the timeline must not depend on how the
            // clock was summed (the fast lane's shifted clock rounds otherwise).
            if (opt_.timeline && t - begin > 1e-12 * t)
                push_span({c, span::track::stream, op_kind::dma_wait, wait_label_[c], wait_step_[c], d.id, begin, t, 0,
                           true},
                          wait_ord_[c]);
            live_[c].erase(live_[c].find(d.id));
            free_.push_back(s);
        } else {
            d.phase = dma_phase::done;
        }
    }

    const chip& chip_;
    work_times times_;
    double desc_bytes_ = 0;  // dma_descriptor_s as bytes at B·η
    int cores_;
    Source& src_;
    const options& opt_;
    result res_;
    std::vector<live_dma> dmas_;         // slots
    std::vector<int> free_;              // free slots
    std::array<live_list, 2> live_;      // per core: started, not yet waited
    std::array<slot_queue, 2> pending_;  // per core: in their latency, in start order
    std::array<channel, 3> channels_;    // HBM, on-chip of core 0, on-chip of core 1
    std::array<double, 2> t_{};          // when each core's next op starts (or it ended)
    std::array<core_state, 2> state_{};
    std::array<int, 2> wait_slot_{-1, -1};  // the DMA a blocked core waits on (-1: a semaphore)
    std::array<std::uint32_t, 2> wait_sem_{};       // or the semaphore
    std::array<std::int64_t, 2> wait_want_{};       // and the amount
    std::array<bool, 2> wait_is_dma_{};             // a DMA semaphore: the stall is exposed DMA
    std::array<std::vector<std::int64_t>, 2> sem_val_;  // semaphore values per core
    std::array<std::uint32_t, 2> wait_label_{};
    std::array<std::uint32_t, 2> wait_step_{};
    std::array<std::uint8_t, 2> wait_who_{};  // op::who of the DMA wait a core is blocked in (0 past 2 * max_operands)
    // Per-step rows, per book (0: result::steps, 1: result::inner_steps) and core.
    std::array<std::array<int, 2>, 2> row_{{{-1, -1}, {-1, -1}}};  // each core's current row
    std::array<std::unordered_map<std::uint64_t, int>, 2> rows_;  // (core, step, sub) -> row
    std::array<std::int64_t, 2> row_recurred_{};                   // times a core went back to an older row
    std::array<std::array<std::uint32_t, 2>, 2> row_max_{};        // the largest step of each core's rows
    std::array<std::array<bool, 2>, 2> row_any_{};
    std::array<std::array<bool, 2>, 2> row_rising_{{{true, true}, {true, true}}};  // rows made in step order
    std::array<int, 2> inner_at_{-1, -1};  // the inner row of the op each core ran last (-1: none)
    std::uint64_t seq_ = 0;
    double last_done_ = 0;
    // The next DMA event (unless dirty_): its time, its DMA, and whether it completes or starts
    // transferring.
    double ev_t_ = never;
    int ev_slot_ = -1;
    bool ev_finish_ = false;
    bool dirty_ = true;
    std::int64_t orphans_ = 0;                 // DMAs of ended streams still in flight
    std::array<std::span<const op>, 2> in_{};  // per core: the source's current batch
    std::array<std::size_t, 2> in_pos_{};      // and the next op in it
    std::array<bool, 2> in_whole_{};           // and whether it holds exactly one step's ops
    bool by_batch_ = false;                    // the fast lane compares whole batches
    std::vector<std::uint8_t> cyc_same_;       // cycle batch b equals batch b - 1 (mod p)
    // Steady state (see above).
    std::array<std::uint32_t, 2> starts_{};  // DMA starts per core (ids are relative to it)
    bool ff_on_ = false;
    bool tl_lane_ = false;  // the fast lane with a timeline (see "The timeline in the fast lanes")
    std::array<std::uint64_t, 2> ord_{};       // ops each core has run (simulated or skipped)
    std::array<std::uint64_t, 2> wait_ord_{};  // the op a blocked core waits in
    std::array<std::vector<std::uint32_t>, 2> labels_;  // with tl_lane_: each core's ops' labels, as pulled
    std::vector<std::uint64_t> span_ord_;                // with tl_lane_: the op each span stands for
    int ring_core_ = -1;           // the core the history is of
    std::vector<boundary> ring_;   // the last ring_size boundaries, boundary n at n % ring_size
    std::vector<boundary> spare_;  // apply()'s copy of the history
    std::int64_t nb_ = 0;          // boundaries recorded
    std::int64_t valid_from_ = 0;  // the oldest one still comparable
    std::int64_t cooldown_ = 0;    // boundaries to record before looking for a period again
    std::uint32_t cur_step_ = 0;   // step value of the current boundary
    bool fast_ = false;
    std::array<bool, 2> ends_{};  // per core: the source said its stream has ended
    int period_ = 0;
    std::int64_t skipped_ = 0;
    std::vector<op> cycle_;
    double cycle_dt_ = 0;
    std::uint32_t cycle_starts_ = 0;
    std::uint32_t cycle_steps_ = 0;
    tally cycle_sum_{};
    bool cycle_done_ = false;
    // The joint lane (see above).
    std::vector<joint_boundary> jring_;  // the last ring_size joint boundaries
    std::vector<joint_boundary> jspare_;  // apply_joint()'s copy of the history
    std::int64_t jn_ = 0;                // joint boundaries recorded since the history began
    std::int64_t jvalid_from_ = 0;       // the oldest one still comparable
    std::int64_t jcooldown_ = 0;
    std::uint32_t jstep_ = 0;   // core 0's step value at the current joint boundary
    std::uint32_t jlast1_ = 0;  // step value of core 1's last op
    bool jfast_ = false;
    int jperiod_ = 0;
    std::int64_t jskipped_ = 0;
    std::array<std::vector<op>, 2> jcycle_;
    std::array<std::uint32_t, 2> jcycle_starts_{};
    std::array<std::uint32_t, 2> jcycle_steps_{};
    double jcycle_dt_ = 0;
    bool jcycle_done_ = false;
    joint_tally jcycle_sum_{};
    struct joint_batch {
        std::vector<op> ops;     // relative to its first start and its first op's step
        std::uint32_t sb = 0;    // its first start relative to the period's start
        std::uint32_t gb = 0;    // its first op's step relative to the period's start
        bool repeats = false;    // equals its predecessor one step on (a lazy batch matches)
    };
    bool jby_batch_ = false;
    std::vector<joint_batch> jb1_;       // core 1's batches of a period
    std::vector<std::uint8_t> jsame0_;   // core 0's boundary batch k repeats batch k - 1
    std::size_t jk1_ = 0;                // core 1's position in its batch at the boundary
    std::array<std::vector<op>, 2> replays_;  // per core: ops pulled by a fast lane, to simulate
    std::array<std::size_t, 2> replay_at_{};
};

}  // namespace detail

/// simulate() on a type-erased source. (A template only so that the engine is instantiated in
/// the translation units that simulate, not in every one that includes this header.)
template <class Ref>
result simulate_source(const chip& c, int cores, Ref& src, const options& opt) {
    ptpu::validate(c);
    validate(opt.costs);
    if (cores < 1 || cores > 2 || cores > c.cores_per_chip)
        throw error("SIM3", "simulate",
                    "cores is " + std::to_string(cores) + " but chip " +
                        std::string(ptpu::detail::name_of(c)) + " has " + std::to_string(c.cores_per_chip) +
                        " TensorCore(s)",
                    "simulate 1 core, or 2 on a dual-TensorCore chip");
    return detail::engine<Ref>(c, cores, src, opt).run();
}

// The one translation unit that compiles the engine for the program (ptpu::runtime).
#if defined(PTPU_RUNTIME_IMPLEMENTATION)
template result simulate_source<source_ref>(const chip&, int, source_ref&, const options&);
#endif

}  // namespace ptpu::sim
