// Defines what a kernel body does with semaphores and asynchronous copies (S58–S61):
// make_async_copy / async_copy and their descriptors' start() and wait(), semaphore_signal,
// semaphore_wait and semaphore_read, on semaphore scratch (Scratch<semaphore, dma_semaphore, N>,
// Scratch<semaphore, regular_semaphore, N>). The misuse Pallas rejects when it lowers a kernel
// (checks 35, 36, 38) is a compile error here; what can only be seen while the kernel runs (a
// wait nothing will satisfy, a DMA never waited, a semaphore left raised: check 39) is a
// ptpu::error, never a hang.
//
// The data path: an async copy's bytes land when a wait needs them (the latest moment real
// hardware could have moved them), so a body that reads a destination before its wait sees the
// old contents instead of a copy that happened to be early; with run_options::detect_races such
// a read (or a write to a source in flight) is reported as DMA2 with the ref and the step. A copy
// whose source and destination overlap moves as memmove does (dma.hpp, move_box), and is DMA4
// under detect_races, since hardware does not promise that order. The
// semaphore values are the cells of the core's scratch: semaphore_read sees them. The timing
// path: each start, signal and wait is an op of the core's stream (stream/op.hpp), placed after
// the compute the body charged before it; the model blocks a wait until the DMA completions or
// signals that satisfy it, on either core.
#pragma once

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/dma.hpp"
#include "ptpu/runtime/ref.hpp"

namespace ptpu {

namespace detail {

template <class T>
inline constexpr bool is_dma_semaphore = std::is_same_v<std::remove_const_t<T>, dma_semaphore>;
// regular_semaphore, or int32 cells (the older spelling of a regular semaphore scratch).
template <class T>
inline constexpr bool is_regular_semaphore = std::is_same_v<std::remove_const_t<T>, regular_semaphore> ||
                                             std::is_same_v<std::remove_const_t<T>, std::int32_t>;

// The checks of one semaphore argument (35, 36): a ()-shaped ref into semaphore scratch.
template <class T, class S, std::size_t R>
constexpr bool semaphore_arg_ok(const char*) {
    constexpr bool is_sem = std::is_same_v<unnamed_space_t<S>, semaphore> && (is_dma_semaphore<T> || is_regular_semaphore<T>);
    static_assert(is_sem,
                  "ptpu[36] semaphore op: cannot signal, wait on or read a ref that is not a semaphore; "
                  "pass a ref of Scratch<semaphore, dma_semaphore or regular_semaphore, ...>");
    static_assert(!is_sem || R == 0,
                  "ptpu[35] semaphore op: cannot signal, wait on or read a semaphore array (a "
                  "non-()-shaped semaphore); pick one with sem.at(i)");
    return true;
}

inline std::byte* cell_bytes(const void* p) { return static_cast<std::byte*>(const_cast<void*>(p)); }

/// The semaphore's number in the op stream: 1 + its place among the core's semaphore cells, in
/// scratch order (the cores have the same scratch, so a number means the same one on each).
inline std::uint32_t semaphore_number(const kernel_context& c, const void* cell) {
    const auto* p = static_cast<const std::byte*>(cell);
    std::uint32_t before = 1;
    for (const semaphore_range& r : c.semaphores) {
        if (r.lo <= p && p < r.hi) return before + static_cast<std::uint32_t>((p - r.lo) / 4);
        before += static_cast<std::uint32_t>((r.hi - r.lo) / 4);
    }
    return 0;  // not a semaphore of this call (the op stream rejects 0)
}
/// The cell of semaphore number `n` of this core (nullptr: none).
inline const void* semaphore_cell(const kernel_context& c, std::uint32_t n) {
    std::uint32_t before = 1;
    for (const semaphore_range& r : c.semaphores) {
        const auto cells = static_cast<std::uint32_t>((r.hi - r.lo) / 4);
        if (n >= before && n < before + cells) return r.lo + static_cast<std::ptrdiff_t>(n - before) * 4;
        before += cells;
    }
    return nullptr;
}

/// "scratch 2[1]": the scratch buffer and element a semaphore cell is.
[[gnu::cold]] inline std::string semaphore_name(const kernel_context& c, const void* cell) {
    const auto* p = static_cast<const std::byte*>(cell);
    for (const semaphore_range& r : c.semaphores)
        if (r.lo <= p && p < r.hi)
            return "semaphore scratch " + std::to_string(r.scratch) + "[" + std::to_string((p - r.lo) / 4) + "]";
    return "a semaphore";
}

[[gnu::cold]] [[noreturn]] inline void raise_deadlock(const kernel_context& c, const void* cell, index_t want,
                                                      index_t have, const char* what) {
    throw error("39", "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": " + what,
                "waits for " + std::to_string(want) + " on " + semaphore_name(c, cell) + ", which holds " +
                    std::to_string(have) +
                    ", and nothing in flight can raise it (no DMA into it is pending and no other core "
                    "can signal it): on a TPU the kernel hangs here",
                "signal the semaphore (or start the copies) before waiting, and wait for no more than "
                "is signalled");
}

// Moves the bytes of pending copy `d` (unless the run skips vector data) and raises its semaphore.
inline void land(kernel_context& c, const pending_dma& d) {
    if (d.move && d.bytes > 0) {
        c.borrows.before_write(d.dst_lo, d.dst_hi, c.step, c.core);  // vecs reading it copy first
        // As a DMA engine that reads before it writes (memmove): an overlapping source is read
        // whole first (start() reported the overlap as DMA4 under detect_races).
        const bool overlap = d.src_lo < d.dst_hi && d.dst_lo < d.src_hi;
        move_box(d.dst, d.dst_step.data(), d.src, d.src_step.data(), d.shape.data(), d.rank, d.item, overlap);
    }
    if (static_cast<index_t>(*d.sem) > INT32_MAX - d.bytes)
        throw error("S60", "async copy", "the DMA semaphore " + semaphore_name(c, d.sem) + " would exceed 2^31 - 1",
                    "wait on the copies sharing a semaphore before it overflows");
    *d.sem += static_cast<std::int32_t>(d.bytes);
}

/// Takes `want` from the semaphore `cell`: for a DMA semaphore the pending copies into it land
/// first, in start order, until it holds enough; then, while it does not, the other core runs
/// (yield) or, with no other core, the wait is a deadlock (39). The wait's op is recorded
/// before any yield, so the timing model blocks the core exactly there.
inline void take(kernel_context& c, std::int32_t* cell, index_t want, bool dma, const char* what) {
    if (want < 0 || want > INT32_MAX)
        throw error("S60", "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": " + what,
                    "waits for " + std::to_string(want) + " on " + semaphore_name(c, cell),
                    "wait for an amount in [0, 2^31 - 1]");
    const std::uint32_t number = semaphore_number(c, cell);
    {
        body_op_record& r = note_body_op(c, body_op_kind::wait);
        r.dma_sem = dma;
        r.sem = number;
        r.amount = want;
    }
    ++c.sem_waits;
    // A wait for 0 bytes is the wait of one empty copy (a zero-row slice): it lands that copy,
    // which raised nothing, so that it is not left pending (39 at exit).
    bool took_empty = false;
    auto wanted = [&](const pending_dma& p) {
        if (p.sem != cell) return false;
        if (*cell < want) return true;
        return want == 0 && p.bytes == 0 && !took_empty;
    };
    for (;;) {
        for (std::size_t k = 0; k < c.pending.size();) {
            if (!wanted(c.pending[k])) {
                ++k;
                continue;
            }
            const pending_dma d = std::move(c.pending[k]);
            c.pending.erase(c.pending.begin() + static_cast<std::ptrdiff_t>(k));
            took_empty = took_empty || (want == 0 && d.bytes == 0);
            land(c, d);
        }
        if (*cell >= want) {
            *cell -= static_cast<std::int32_t>(want);
            if (c.races != nullptr) race_wait(c, number);  // A13: the signals it took order what follows
            return;
        }
        // Another core's signal later in this thread's order pays the debt (call_state::waits_on_credit).
        if (c.waits_on_credit && !dma && static_cast<index_t>(*cell) - want > INT32_MIN) {
            *cell -= static_cast<std::int32_t>(want);
            return;
        }
        if (c.yield == nullptr) raise_deadlock(c, cell, want, *cell, what);
        if (c.flush_ops != nullptr) c.flush_ops(c.flush_self);
        c.yield(c.yield_self);
    }
}

/// An integer amount as text, whatever its type (an unsigned 2^64 - 1 is not -1).
template <class I>
std::string amount_text(I v) {
    if constexpr (std::is_signed_v<I>)
        return std::to_string(static_cast<long long>(v));
    else
        return std::to_string(static_cast<unsigned long long>(v));
}
/// Whether an amount of any integer type is in [0, 2^31 - 1], compared before any conversion
/// (a uint64 2^64 - 1 would otherwise become -1, or 0xFFFFFFFF an int32 -1).
template <class I>
constexpr bool amount_ok(I v) {
    return !std::cmp_less(v, 0) && !std::cmp_greater(v, INT32_MAX);
}

template <class T>
std::int32_t* cell_of(T* p) {
    return reinterpret_cast<std::int32_t*>(const_cast<std::remove_const_t<T>*>(p));
}

}  // namespace detail

/// The descriptor of an asynchronous copy from `src` to `dst` completing into the DMA semaphore
/// `sem` (pltpu.make_async_copy, S58): start() issues it, wait() waits on `sem` for the byte size
/// of `dst`. A wait need not follow a start of the same descriptor: waiting on a new descriptor
/// of the same shape (a later grid step's) is how hand-written pipelines wait for a copy started
/// earlier. Several copies may share a semaphore (S61).
template <class Src, class Dst, class Sem>
class async_copy_descriptor;

template <class T, class S1, std::size_t R, class E1, class U, class S2, class E2, class C, class E3>
class async_copy_descriptor<ref<T, S1, R, E1>, ref<U, S2, R, E2>, ref<C, semaphore, 0, E3>> {
public:
    async_copy_descriptor(const ref<T, S1, R, E1>& src, const ref<U, S2, R, E2>& dst,
                          const ref<C, semaphore, 0, E3>& sem)
        : src_(src), dst_(dst), sem_(sem) {}

    /// Issues the copy (priority >= 0, check 35). Its bytes land when a wait on its semaphore
    /// needs them; the destination is undefined until then.
    async_copy_descriptor& start(int priority = 0) {
        kernel_context& c = detail::require_context("async_copy");
        if (priority < 0)
            throw error("35", "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": async_copy",
                        "DMA start priority must be non-negative (got " + std::to_string(priority) + ")",
                        "use priority 0 or more");
        check(src_.shape() == dst_.shape(), "DMA1", "async_copy", "source and destination shapes differ",
              "slice both refs with .at(ds(...), ...) to the same shape");
        pending_dma d;
        d.dst = reinterpret_cast<std::byte*>(dst_.data());
        d.src = reinterpret_cast<const std::byte*>(src_.data());
        d.rank = static_cast<int>(R);
        d.item = static_cast<index_t>(sizeof(U));
        index_t ls = 0, ld = 0;
        for (std::size_t k = 0; k < R; ++k) {
            d.shape[k] = src_.shape()[k];
            d.src_step[k] = src_.strides()[k] * d.item;
            d.dst_step[k] = dst_.strides()[k] * d.item;
            ls += (src_.shape()[k] - 1) * src_.strides()[k];
            ld += (dst_.shape()[k] - 1) * dst_.strides()[k];
        }
        const index_t n = src_.size();
        d.bytes = n * d.item;
        d.sem = detail::cell_of(sem_.data());
        if (n > 0) {
            d.src_lo = d.src;
            d.src_hi = reinterpret_cast<const std::byte*>(detail::advanced(src_.data(), ls + 1));
            d.dst_lo = d.dst;
            d.dst_hi = reinterpret_cast<const std::byte*>(detail::advanced(dst_.data(), ld + 1));
            detail::check_dma_access(d.src_lo, d.src_hi, false, "async_copy");  // DMA2
            detail::check_dma_access(d.dst_lo, d.dst_hi, true, "async_copy");
            if (c.detect_races && d.src_lo < d.dst_hi && d.dst_lo < d.src_hi &&
                detail::boxes_share_bytes(d.src, d.src_step.data(), d.dst, d.dst_step.data(), d.shape.data(), d.rank,
                                          d.item))  // DMA4: no memmove promise on hardware
                detail::raise_overlapping_copy("async_copy", detail::ref_where(src_.label()),
                                               detail::ref_where(dst_.label()));
        } else {
            d.src_lo = d.src_hi = d.src;
            d.dst_lo = d.dst_hi = d.dst;
        }
        if (d.bytes > INT32_MAX)
            throw error("S60", "async_copy", "a copy of " + std::to_string(d.bytes) + " bytes overflows its DMA semaphore",
                        "copy less than 2 GiB at a time");
        d.src_label = src_.label();
        d.dst_label = dst_.label();
        d.step = c.step;
        // Timing-only runs skip vector data but keep what scalar code reads (SMEM).
        d.move = !c.timing_only || S2::kind == space_kind::smem;
        if (d.move && n > 0 && (src_.data() == nullptr || dst_.data() == nullptr))
            throw error("PRED1", "async_copy", "a copy into SMEM needs data, and this run has none (pallas_call::predict)",
                        "run with run_options{.timing_only = true} and real inputs");
        ++c.body_dma_count;
        c.body_dma_bytes += d.bytes;
        {
            body_op_record& r = detail::note_body_op(c, body_op_kind::async_dma);
            r.far = access(S1::kind).far || access(S2::kind).far;
            r.sem = detail::semaphore_number(c, sem_.data());
            r.amount = d.bytes;
            // The shape cost is the HBM end's (docs/model.md, "DMA shape costs").
            r.run = detail::run_of_region(src_.shape(),
                                          access(S1::kind).far ? src_.strides() : dst_.strides(), d.item);
        }
        // MC2 (A13): the copy reads its source and writes its destination from its start (taken
        // there: a race with an access after the start but before the wait may be missed).
        if (c.races != nullptr && access(S1::kind).far && n > 0 && src_.data() != nullptr) {
            hbm_access r = detail::box_of(src_.data(), src_.shape(), src_.strides(), d.item);
            r.write = false;
            r.what = "async_copy from " + detail::ref_where(d.src_label);
            detail::note_hbm_access(c, std::move(r));
        }
        if (c.races != nullptr && access(S2::kind).far && n > 0 && dst_.data() != nullptr) {
            hbm_access w = detail::box_of(dst_.data(), dst_.shape(), dst_.strides(), d.item);
            w.what = "async_copy to " + detail::ref_where(d.dst_label);
            detail::note_hbm_access(c, std::move(w));
        }
        c.pending.push_back(std::move(d));
        return *this;
    }

    /// Waits on the semaphore for the byte size of the destination (S58), then takes it.
    void wait() {
        kernel_context& c = detail::require_context("async_copy wait");
        detail::take(c, detail::cell_of(sem_.data()), dst_.size() * static_cast<index_t>(sizeof(U)), true,
                     "async copy wait");
    }

    [[nodiscard]] const ref<T, S1, R, E1>& src() const { return src_; }
    [[nodiscard]] const ref<U, S2, R, E2>& dst() const { return dst_; }

private:
    ref<T, S1, R, E1> src_;
    ref<U, S2, R, E2> dst_;
    ref<C, semaphore, 0, E3> sem_;
};

/// pltpu.make_async_copy(src, dst, sem) (S58): a copy between spaces with a DMA path (M1), of
/// equal dtype and shape (DMA1), not of bool (38), completing into a single DMA semaphore (35,
/// 36). Nothing moves until start().
template <class T, class S1, std::size_t R1, class E1, class U, class S2, std::size_t R2, class E2, class C, class S3,
          std::size_t R3, class E3>
[[nodiscard]] auto make_async_copy(const ref<T, S1, R1, E1>& src, const ref<U, S2, R2, E2>& dst,
                                   const ref<C, S3, R3, E3>& sem) {
    static_assert(rules::require_dma<S1, S2>());
#define PTPU_RULE_TEXT_R4_ASYNC_COPY                                                                    \
    "ptpu[R4] async_copy: the destination is a read-only ref (an input's any/hbm ref is the caller's " \
    "array); copy into an output's ref, or declare Alias<in, out> and write the output"
#define PTPU_RULE_TEXT_DMA1_ASYNC_COPY_EXTENTS                                                  \
    "ptpu[DMA1] async_copy: the static extents of source and destination differ; slice both " \
    "refs with .at(ds(...), ...) to the same shape"
#if PTPU_COMPOSED_MESSAGES
    if constexpr (std::is_const_v<U>)
        static_assert(sizeof(compile_error<detail::about_destination<S2>(PTPU_RULE_TEXT_R4_ASYNC_COPY)>) > 0);
#else
    static_assert(!std::is_const_v<U>, PTPU_RULE_TEXT_R4_ASYNC_COPY);
#endif
    static_assert(std::is_const_v<U> || (R1 == R2 && std::is_same_v<std::remove_const_t<T>, U>),
                  "ptpu[DMA1] async_copy: source and destination must have the same rank and dtype; cast in "
                  "VMEM first");
#if PTPU_COMPOSED_MESSAGES
    if constexpr (!detail::extents_compatible<E1, E2>())
        static_assert(
            sizeof(compile_error<detail::about_copy<S1, E1, S2, E2>(PTPU_RULE_TEXT_DMA1_ASYNC_COPY_EXTENTS)>) > 0);
#else
    static_assert(detail::extents_compatible<E1, E2>(), PTPU_RULE_TEXT_DMA1_ASYNC_COPY_EXTENTS);
#endif
#undef PTPU_RULE_TEXT_R4_ASYNC_COPY
#undef PTPU_RULE_TEXT_DMA1_ASYNC_COPY_EXTENTS
    static_assert(!std::is_same_v<std::remove_const_t<T>, bool>,
                  "ptpu[38] async_copy: DMAs with bool dtypes are not supported; copy an int8 array instead");
    constexpr bool is_sem =
        std::is_same_v<unnamed_space_t<S3>, semaphore> && (detail::is_dma_semaphore<C> || detail::is_regular_semaphore<C>);
    static_assert(is_sem,
                  "ptpu[35] async_copy: the semaphore argument must be a semaphore ref (Scratch<semaphore, "
                  "dma_semaphore, ...>)");
    static_assert(!is_sem || !detail::is_regular_semaphore<C>,
                  "ptpu[36] async_copy: a DMA waits on a DMA semaphore, but this is a regular semaphore; "
                  "allocate Scratch<semaphore, dma_semaphore, ...> for copies, and use semaphore_wait for "
                  "regular ones");
    static_assert(!is_sem || R3 == 0,
                  "ptpu[35] async_copy: the semaphore is an array (non-()-shaped); pick one with sem.at(i)");
    if constexpr (R1 == R2 && R3 == 0 && !std::is_const_v<U>)
        return async_copy_descriptor<ref<T, S1, R1, E1>, ref<U, S2, R1, E2>, ref<C, semaphore, 0, E3>>(src, dst, sem);
}

/// pltpu.async_copy(src, dst, sem): make_async_copy(...) and start() it; returns the descriptor.
template <class Src, class Dst, class Sem>
auto async_copy(const Src& src, const Dst& dst, const Sem& sem, int priority = 0) {
    auto d = make_async_copy(src, dst, sem);
    d.start(priority);
    return d;
}

/// pl.semaphore_signal(sem, inc, core_index) (S60): adds `inc` to a semaphore, of this core or,
/// on a chip with two TensorCores, of core `core_index` (-1, the default: this core; any other
/// negative index is S60, as is an index the kernel does not run on).
template <class T, class S, std::size_t R, class E, class I = std::int32_t>
void semaphore_signal(const ref<T, S, R, E>& sem, I inc = 1, int core_index = -1) {
    static_assert(detail::semaphore_arg_ok<T, S, R>("semaphore_signal"));
    static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>,
                  "ptpu[36] semaphore_signal: must signal an int32 value");
    kernel_context& c = detail::require_context("semaphore_signal");
    const int target = core_index == -1 ? c.core : core_index;
    auto where = [&] {
        return "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": semaphore_signal";
    };
    if (target < 0 || target >= c.cores)
        throw error(
            "S60", where(),
            "signals core " + std::to_string(target) + " but the kernel runs on " + std::to_string(c.cores) +
                " core(s)",
            "signal core_index 0 .. cores - 1 (a second core exists on v4 and v5p with a parallel split)");
    if (!detail::amount_ok(inc))  // before any conversion
        throw error("S60", where(),
                    "signals " + detail::amount_text(inc) + " on " + detail::semaphore_name(c, sem.data()),
                    "signal an amount in [0, 2^31 - 1]");
    std::byte* mine = detail::cell_bytes(sem.data());
    std::byte* at = mine;
    if (target != c.core) at = c.arena[static_cast<std::size_t>(target)] + (mine - c.arena[static_cast<std::size_t>(c.core)]);
    auto* cell = reinterpret_cast<std::int32_t*>(at);
    if (static_cast<long long>(*cell) + static_cast<long long>(inc) > INT32_MAX) {
        // On credit, the wait that would have taken the amount first may not have run yet.
        if (c.waits_on_credit) throw detail::needs_turns{};
        throw error("S60", where(), detail::semaphore_name(c, sem.data()) + " would exceed 2^31 - 1",
                    "wait on the semaphore before signalling it further");
    }
    *cell += static_cast<std::int32_t>(inc);
    if (c.races != nullptr) detail::race_signal(c, target, detail::semaphore_number(c, sem.data()));
    body_op_record& r = detail::note_body_op(c, body_op_kind::signal);
    r.core = static_cast<std::uint8_t>(target);
    r.sem = detail::semaphore_number(c, sem.data());
    r.amount = static_cast<index_t>(inc);
    ++c.sem_signals;
}

/// pl.semaphore_wait(sem, value) (S60): blocks until the semaphore holds `value`, then takes it.
/// A wait nothing can satisfy is error 39 (deadlock), raised at once.
template <class T, class S, std::size_t R, class E, class I = std::int32_t>
void semaphore_wait(const ref<T, S, R, E>& sem, I value = 1) {
    static_assert(detail::semaphore_arg_ok<T, S, R>("semaphore_wait"));
    static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>,
                  "ptpu[36] semaphore_wait: must wait an int32 value");
    kernel_context& c = detail::require_context("semaphore_wait");
    if (!detail::amount_ok(value))  // before any conversion
        throw error("S60", "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": semaphore_wait",
                    "waits for " + detail::amount_text(value) + " on " + detail::semaphore_name(c, sem.data()),
                    "wait for an amount in [0, 2^31 - 1]");
    detail::take(c, detail::cell_of(sem.data()), static_cast<index_t>(value), detail::is_dma_semaphore<T>,
                 "semaphore_wait");
}

/// pl.semaphore_read(sem) (S60): the semaphore's value now (a DMA semaphore counts the bytes of
/// the copies that have landed).
template <class T, class S, std::size_t R, class E>
[[nodiscard]] std::int32_t semaphore_read(const ref<T, S, R, E>& sem) {
    static_assert(detail::semaphore_arg_ok<T, S, R>("semaphore_read"));
    if (const kernel_context* c = detail::current_context(); c != nullptr && c->waits_on_credit)
        throw detail::needs_turns{};  // the value depends on how far the other core has run
    return *detail::cell_of(sem.data());
}

}  // namespace ptpu
