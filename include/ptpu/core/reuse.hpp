// Working buffers a thread keeps from one run or prediction to the next.
//
// A timing-only prediction of a few milliseconds allocates a few large vectors (the runners'
// batches, the model's histories) and frees them at its end; the allocator gives such memory back
// to the system, and the next prediction pays a page fault for every 4 KiB of it again. On a
// virtual machine a fault costs microseconds: a short nested prediction spent most of its time
// in them. Instead, the owner of such a vector takes it from its thread's shelf when it is made
// and puts it back when it is destroyed, contents and all (the owner overwrites what it reads).
//
// What a thread keeps is bounded: at most `shelf_count` vectors and `shelf_bytes` per element type
// (by capacity); the rest is freed as usual. release_kept_buffers() frees what the calling thread keeps.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace ptpu {

namespace detail {

inline constexpr std::size_t shelf_bytes = std::size_t{64} << 20;
inline constexpr std::size_t shelf_count = 64;

// Whether the calling thread's shelf of T is gone (the thread is exiting): a buffer given back
// then (a kept vector's elements may own buffers) is freed. A plain bool: valid to the end.
template <class T>
bool& shelf_closed() {
    thread_local bool closed = false;
    return closed;
}
// The calling thread's kept vectors of T and their bytes (by capacity).
template <class T>
struct shelf_of {
    std::vector<std::vector<T>> kept;
    std::size_t bytes = 0;
    bool registered = false;  // with shelf_releases()
    shelf_of() = default;
    shelf_of(const shelf_of&) = delete;
    shelf_of& operator=(const shelf_of&) = delete;
    ~shelf_of() { shelf_closed<T>() = true; }
    // Frees what is kept; true when there was something.
    bool release() {
        std::vector<std::vector<T>> gone;
        gone.swap(kept);
        bytes = 0;
        return !gone.empty();
    }
};
template <class T>
shelf_of<T>& shelf() {
    thread_local shelf_of<T> s;
    return s;
}
// What release_kept_buffers() runs: one function per element type this thread has kept.
using release_fn = bool (*)();
inline std::vector<release_fn>& shelf_releases() {
    thread_local std::vector<release_fn> fns;
    return fns;
}

/// A vector of T for a new owner: the largest this thread kept (its size and contents as they were
/// left), or an empty one. (The owners made first in a run, its runners, fill the most.)
template <class T>
std::vector<T> take_buffer() {
    if (shelf_closed<T>()) return {};
    shelf_of<T>& s = shelf<T>();
    if (s.kept.empty()) return {};
    std::size_t best = 0;
    for (std::size_t k = 1; k < s.kept.size(); ++k)
        if (s.kept[k].capacity() > s.kept[best].capacity()) best = k;
    std::vector<T> v = std::move(s.kept[best]);
    s.kept[best] = std::move(s.kept.back());
    s.kept.pop_back();
    s.bytes -= v.capacity() * sizeof(T);
    return v;
}

/// take_buffer() emptied: for an owner that appends (its capacity is what is reused).
template <class T>
std::vector<T> take_empty_buffer() {
    std::vector<T> v = take_buffer<T>();
    v.clear();
    return v;
}

/// Puts `v` back on this thread's shelf (leaving it empty), unless it is empty or the shelf has
/// no room for it (then it is freed).
template <class T>
void put_buffer(std::vector<T>& v) {
    const std::size_t bytes = v.capacity() * sizeof(T);
    if (bytes == 0 || shelf_closed<T>() || bytes > shelf_bytes - shelf<T>().bytes ||
        shelf<T>().kept.size() >= shelf_count) {
        std::vector<T>().swap(v);
        return;
    }
    shelf_of<T>& s = shelf<T>();
    if (!s.registered) {  // the first of this type on this thread
        s.registered = true;
        shelf_releases().push_back([] { return shelf<T>().release(); });
    }
    s.kept.push_back(std::move(v));
    s.bytes += bytes;
    v = {};
}

}  // namespace detail

/// Frees the working buffers the calling thread kept from its earlier runs and predictions
/// (core/reuse.hpp); the next one allocates afresh.
inline void release_kept_buffers() {
    // (A kept vector's elements may own buffers of another type, put back as they are freed.)
    for (bool more = true; more;) {
        more = false;
        for (const detail::release_fn f : detail::shelf_releases()) more = f() || more;
    }
}

}  // namespace ptpu
