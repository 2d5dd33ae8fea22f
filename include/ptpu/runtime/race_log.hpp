// Defines the state of the cross-core race check of detect_races (MC2, A13): the HBM regions
// each core read or wrote, indexed by address, and the vector clocks that semaphore signals and
// waits advance. The checks themselves (note_hbm_access, race_signal, race_wait) are in
// runtime/context.hpp, beside the kernel context they read.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/core/index.hpp"

namespace ptpu {

/// A region of HBM a core read or wrote: a strided box (bytes) and when, for the cross-core race
/// of detect_races (MC2, A13: two TensorCores touching one HBM region, at least one writing,
/// with nothing ordering them).
struct hbm_access {
    const std::byte* p = nullptr;  ///< its first byte
    int rank = 0;
    std::array<index_t, max_rank> count{};
    std::array<index_t, max_rank> stride{};  ///< bytes
    index_t item = 1;
    const std::byte *lo = nullptr, *hi = nullptr;  ///< its bounding bytes
    int core = 0;
    std::int64_t epoch = 0;  ///< the core's epoch (vector clock entry) at the access
    index_t step = 0;
    bool write = true;
    std::string what;  ///< "pipeline 1 output 0 window slot 0 copied out", "sync_copy to ref of output 0"
};

namespace detail {
// Whether two HBM boxes share a byte: exactly when they are views of one row-major array (the
// same strides: the second's offset is split into coordinates of the first's), else by their
// bounding bytes (which can only add a report, for views of one array at different ranks).
inline bool boxes_overlap(const hbm_access& a, const hbm_access& b) {
    if (!(a.lo < b.hi && b.lo < a.hi)) return false;
    if (a.rank != b.rank || a.stride != b.stride || a.item != b.item || a.rank == 0) return true;
    index_t delta = b.p - a.p;
    for (int d = 0; d < a.rank; ++d) {
        const auto u = static_cast<std::size_t>(d);
        const index_t s = a.stride[u];
        if (s <= 0) return true;
        index_t off = delta / s;
        if (delta - off * s < 0) --off;  // floor
        delta -= off * s;
        if (!(off < a.count[u] && 0 < off + b.count[u])) return false;
    }
    return delta == 0 || delta < a.item;
}

/// The HBM reads or the HBM writes of one core (MC2), indexed by address so that checking an
/// access costs O(log n) plus the entries whose bounding bytes meet it, not O(n) (a grid of
/// thousands of steps logs thousands): an entry sits in the level of its span's power of two,
/// keyed by its first byte, and a query looks in each level in use at the first bytes less than
/// one span before the region. A core's entries are appended in its epoch order (its clock only
/// advances), so those the querying core has synchronized with are a prefix that can never race
/// again: they are dropped when a query meets them (each querying core has its own index of
/// another core's accesses, race_log::of). A repeat of an entry (the same box at the
/// same epoch: a block fetched at every step) is not stored again.
class access_index {
public:
    void add(hbm_access a) {
        const std::size_t lv = level(a);
        auto& m = levels_[lv];
        const auto key = addr(a.lo);
        for (auto [i, e] = m.equal_range(key); i != e; ++i) {
            const hbm_access& o = entries_[i->second];
            if (o.epoch == a.epoch && o.p == a.p && o.hi == a.hi && o.rank == a.rank && o.count == a.count &&
                o.stride == a.stride && o.item == a.item)
                return;
        }
        m.emplace(key, static_cast<std::uint32_t>(entries_.size()));
        used_ |= std::uint64_t{1} << lv;
        entries_.push_back(std::move(a));
    }
    /// An entry overlapping `q` that the querying core has not synchronized with (its epoch is
    /// above `seen`, the querying core's view of this core's clock; `seen` never decreases).
    const hbm_access* find(const hbm_access& q, std::int64_t seen) {
        while (live_ < entries_.size() && entries_[live_].epoch <= seen) ++live_;
        const std::uintptr_t l = addr(q.lo), h = addr(q.hi);
        for (std::uint64_t u = used_; u != 0; u &= u - 1) {
            const auto lv = static_cast<std::size_t>(std::countr_zero(u));
            auto& m = levels_[lv];
            const std::uintptr_t span = std::uintptr_t{1} << lv;
            for (auto i = m.lower_bound(l >= span ? l - span + 1 : 0); i != m.end() && i->first < h;) {
                if (i->second < live_) {  // ordered before the querying core's last wait
                    i = m.erase(i);
                    continue;
                }
                const hbm_access& e = entries_[i->second];
                if (boxes_overlap(e, q)) return &e;
                ++i;
            }
        }
        return nullptr;
    }

private:
    static std::uintptr_t addr(const std::byte* p) { return reinterpret_cast<std::uintptr_t>(p); }
    static std::size_t level(const hbm_access& a) {
        const std::uintptr_t span = addr(a.hi) - addr(a.lo);        // >= 1
        return static_cast<std::size_t>(std::bit_width(span - 1));  // span <= 2^level
    }
    std::vector<hbm_access> entries_;
    std::array<std::multimap<std::uintptr_t, std::uint32_t>, 64> levels_;
    std::uint64_t used_ = 0;
    std::size_t live_ = 0;  // entries below are ordered before the querying core's last wait
};
}  // namespace detail

/// The happens-before state of a call on two or more cores with detect_races: a vector clock
/// per core, advanced by each semaphore signal and joined by each wait (the signals a semaphore
/// carries), and each core's HBM reads and writes so far. A write overlapping another core's
/// read or write, or a read overlapping its write, that the accessing core has not synchronized
/// with is error MC2. (Joining every signal a semaphore ever carried, and taking a DMA's access
/// at its start, can miss a race, never invent one: as interpret mode's detector, false negatives
/// only.)
struct race_log {
    explicit race_log(int cores) : cores(cores), reads(square(cores)), writes(square(cores)) {
        for (std::size_t c = 0; c < max_cores; ++c) vc[c][c] = 0;
    }
    int cores;
    /// vc[c][o]: the latest epoch of core o that core c has seen (its own: its current epoch).
    per_core<per_core<std::int64_t>> vc = each_core(each_core(std::int64_t{-1}));
    struct sem_clock {
        int core;
        std::uint32_t number;
        per_core<std::int64_t> vc;
    };
    std::vector<sem_clock> sems;
    /// Core o's reads (writes) as core q queries them: reads[o * cores + q]. Each querying core
    /// has its own index of another core's accesses, since each drops those it has synchronized
    /// with.
    std::vector<detail::access_index> reads, writes;
    detail::access_index& of(std::vector<detail::access_index>& v, int owner, int querier) {
        return v[static_cast<std::size_t>(owner * cores + querier)];
    }

private:
    static std::size_t square(int n) { return static_cast<std::size_t>(n) * static_cast<std::size_t>(n); }
};

}  // namespace ptpu
