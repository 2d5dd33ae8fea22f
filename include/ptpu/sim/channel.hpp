// Defines the timing model's DMA machinery below the engine (docs/model.md §3, §4, §6): a DMA from its
// start to its wait, the order of simultaneous events, a bandwidth shared equally by the
// transfers on it (a channel: HBM, or a core's on-chip path), and the small per-core containers
// the engine keeps its DMAs in.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "ptpu/sim/steady.hpp"

namespace ptpu::sim::detail {

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

}  // namespace ptpu::sim::detail
