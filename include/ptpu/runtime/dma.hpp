// Defines the DMA engine's data movement: block copies between an HBM array and a window slot
// (edge blocks clipped, S34; element offsets into the padded array, S8), and sync_copy between
// refs in the body (S59). Pipeline copies are real and eager: a DMA's bytes land when it starts,
// which the waits of a correct schedule make indistinguishable from real hardware. (A body's
// async copies land at their wait instead: runtime/semaphore.hpp.)
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/ref.hpp"
#include "ptpu/schedule/geometry.hpp"
#include "ptpu/spec/describe.hpp"

namespace ptpu {

/// The part of a block inside the array: per dim, the first array element, the first slot
/// element and the count (a count of 0 in any dim means nothing to copy).
struct block_region {
    int rank = 0;
    std::array<index_t, max_rank> array_start{};
    std::array<index_t, max_rank> slot_start{};
    std::array<index_t, max_rank> count{};
    std::array<index_t, max_rank> slot_shape{};
    [[nodiscard]] constexpr index_t elems() const {
        index_t n = 1;
        for (int d = 0; d < rank; ++d) n *= count[static_cast<std::size_t>(d)];
        return n;
    }
};

/// Where block `b` of operand `o` lies in its array (S8, S34, S37 for pallas_call element dims).
constexpr block_region region_of(const operand_desc& o, const index_tuple<max_rank>& b) {
    block_region r;
    r.rank = o.rank;
    for (std::size_t d = 0; d < static_cast<std::size_t>(o.rank); ++d) {
        const block_dim& bd = o.block[d];
        index_t lo = b[d].start;  // squeezed, bounded_slice: the start itself
        bool fits = true;
        if (bd.kind == dim_kind::blocked) fits = mul_fits(b[d].start, bd.size, lo);
        if (bd.kind == dim_kind::element) fits = sub_fits(b[d].start, bd.pad_lo, lo);
        // A bounded slice moves its own size (S38), never more than the slot holds: the planner
        // rejects a bad slice first (S38), and the clip keeps every copy inside both buffers
        // even if an index map answered differently at run time.
        const index_t len = bd.kind == dim_kind::bounded_slice ? b[d].size : bd.size;
        index_t end = 0;
        fits = fits && add_fits(lo, std::min(len, bd.size), end);
        // V3: an index a map computed at run time (from host state) whose block offset overflows.
        check(fits, PTPU_RULE_TEXT_V3, [&] {
            const std::string who = o.role == operand_role::input ? "input" : "output";
            return "the block index of " + (o.name[0] != '\0' ? who + " " + o.name : "an " + who) + ", dim " +
                   std::to_string(d) +
                   ": entry " + std::to_string(b[d].start) + " of a block of " + std::to_string(bd.size) +
                   " elements has no offset in index_t";
        });
        const index_t first = std::max<index_t>(lo, 0);
        const index_t last = std::min<index_t>(end, o.shape[d]);
        // The slot elements before the array's first: -lo, at most the slot (-lo may not fit).
        const index_t skip = lo >= 0 ? 0 : lo <= -bd.size ? bd.size : -lo;
        r.array_start[d] = first;
        r.slot_start[d] = skip;
        r.count[d] = std::max<index_t>(std::min(last - first, bd.size - skip), 0);
        r.slot_shape[d] = bd.size;
    }
    return r;
}

/// The elements a pipeline DMA of block `b` moves with the tiling option (S35): a Blocked dim's
/// partial last block rounds its rows up to the dim's tile `tile[d]`, past the array's logical end
/// into its physical tile padding (601 rows in 256-row blocks: the last DMA is rows [512, 608)).
/// The copy itself moves the part inside the array (ptpu's arrays have no padding to read).
/// (Per dim: the extent that DMA moves.)
constexpr std::array<index_t, max_rank> tiled_dma_extent(const operand_desc& o, const index_tuple<max_rank>& b,
                                                         const index_t* tile) {
    const block_region r = region_of(o, b);
    std::array<index_t, max_rank> c = r.count;
    for (std::size_t d = 0; d < static_cast<std::size_t>(o.rank); ++d) {
        const block_dim& bd = o.block[d];
        const index_t rem = o.shape[d] % bd.size;
        if (bd.kind == dim_kind::blocked && rem != 0 && tile[d] > 0 && b[d].start == o.shape[d] / bd.size)
            c[d] = rem > bd.size - tile[d] ? bd.size : std::min(bd.size, (rem + tile[d] - 1) / tile[d] * tile[d]);
    }
    return c;
}
constexpr index_t tiled_dma_elems(const operand_desc& o, const index_tuple<max_rank>& b, const index_t* tile) {
    const std::array<index_t, max_rank> c = tiled_dma_extent(o, b, tile);
    index_t n = 1;
    for (std::size_t d = 0; d < static_cast<std::size_t>(o.rank); ++d) n *= c[d];
    return n;
}

/// The slice of its array one pipeline DMA moves (dma_slice_of): what the runner copies and the
/// timing model charges for it.
struct dma_slice {
    int rank = 0;
    std::array<index_t, max_rank> start{};   ///< per dim, the first array element it covers
    std::array<index_t, max_rank> size{};    ///< per dim, the elements it moves (may pass the array's end: S35)
    std::array<index_t, max_rank> inside{};  ///< per dim, the part of size inside the array: what is copied
    index_t bytes = 0;                       ///< what the DMA is charged: size's elements times the item size
    friend constexpr bool operator==(const dma_slice&, const dma_slice&) = default;
};

/// The slice of its array the DMA of block `b` (the index map's answer) of operand `op` of
/// pipeline `p` moves. Without the tiling option (pallas_call, and emit_pipeline's default) that
/// is the part of the block inside the array (an edge block is clipped, S34). With it
/// (pipeline_desc::tiling, emit_pipeline's `.tiling`), as upstream's emit_pipeline always does, a
/// partial last Blocked block rounds up to the dim's memory tile on a chip of TPU generation
/// `generation` (S35, S36): 601 rows in 256-row blocks move rows [512, 608), 96 rows, 89 inside.
template <std::size_t R>
constexpr dma_slice dma_slice_of(const pipeline_desc& p, int op, const index_tuple<R>& block, int generation) {
    static_assert(R <= max_rank, "ptpu[V1] dma_slice_of: a block index of more than max_rank dims");
    index_tuple<max_rank> b{};
    for (std::size_t d = 0; d < R; ++d) b[d] = block[d];
    const operand_desc& o = p.ops[static_cast<std::size_t>(op)];
    const block_region r = region_of(o, b);
    dma_slice s;
    s.rank = o.rank;
    s.start = r.array_start;
    s.inside = r.count;
    s.size = r.count;
    if (p.tiling) {
        index_t tile[max_rank]{};
        for (int d = 0; d < o.rank; ++d) tile[d] = detail::dma_tile(o, static_cast<std::size_t>(d), generation);
        s.size = tiled_dma_extent(o, b, tile);
    }
    s.bytes = itemsize(o.type);
    for (int d = 0; d < o.rank; ++d) s.bytes *= s.size[static_cast<std::size_t>(d)];
    return s;
}

/// The contiguous run, in bytes, of a pipeline DMA that copies `count[d]` elements of each dim
/// of operand `o`'s row-major array (stream::op::run): the trailing dims it spans whole, times the
/// first it cuts; 0 when it is one run (no outer dim of more than one element) or its runs reach
/// 64 KiB (docs/model.md, "DMA shape costs"). Edge blocks (S34) pass their clipped extents.
constexpr std::uint16_t run_of_extent(const operand_desc& o, const index_t* count) {
    index_t run = itemsize(o.type);
    for (int d = o.rank - 1; d >= 0; --d) {
        const index_t c = count[d], n = o.shape[static_cast<std::size_t>(d)];
        run *= c;
        if (c < n) {
            for (int e = d - 1; e >= 0; --e)  // more than one run?
                if (count[e] > 1) return run < 65536 ? static_cast<std::uint16_t>(run) : 0;
            return 0;
        }
    }
    return 0;
}

namespace detail {
// Copies an N-d box between two row-major layouts: the last dim as contiguous runs, the
// second-to-last by pointer strides, the leading dims by an odometer.
template <bool ToSlot>
inline void copy_box(std::byte* hbm, std::byte* slot, const block_region& r, const index_t* shape,
                     index_t item) {
    const int n = r.rank;
    if (r.elems() == 0) return;
    index_t hs[max_rank]{}, ss[max_rank]{};  // strides in bytes
    index_t h = item, s = item;
    for (int d = n - 1; d >= 0; --d) {
        const auto u = static_cast<std::size_t>(d);
        hs[d] = h;
        ss[d] = s;
        h *= shape[u];
        s *= r.slot_shape[u];
    }
    const auto last = static_cast<std::size_t>(n - 1);
    const std::size_t run = static_cast<std::size_t>(r.count[last] * item);
    const index_t rows = n >= 2 ? r.count[last - 1] : 1;
    const index_t h_row = n >= 2 ? hs[n - 2] : 0;
    const index_t s_row = n >= 2 ? ss[n - 2] : 0;
    index_t outer[max_rank]{};  // odometer over dims [0, n-2)
    for (;;) {
        index_t ho = 0, so = 0;
        for (int d = 0; d < n; ++d) {
            const auto u = static_cast<std::size_t>(d);
            const index_t i = d < n - 2 ? outer[d] : 0;
            ho += (r.array_start[u] + i) * hs[d];
            so += (r.slot_start[u] + i) * ss[d];
        }
        std::byte* hp = hbm + ho;
        std::byte* sp = slot + so;
        for (index_t k = 0; k < rows; ++k, hp += h_row, sp += s_row) {
            if constexpr (ToSlot)
                std::memcpy(sp, hp, run);
            else
                std::memcpy(hp, sp, run);
        }
        int d = n - 3;
        for (; d >= 0; --d) {
            if (++outer[d] < r.count[static_cast<std::size_t>(d)]) break;
            outer[d] = 0;
        }
        if (d < 0) return;
    }
}
}  // namespace detail

namespace detail {

/// Calls f(src offset, dst offset) for each contiguous run of a box of `n` dims (`shape`
/// elements; steps in bytes per dim, the last dim contiguous), in row-major order.
template <class F>
void for_each_run(int n, const index_t* shape, const index_t* src_step, const index_t* dst_step, F&& f) {
    index_t i[max_rank]{};
    for (;;) {
        index_t so = 0, d_o = 0;
        for (int k = 0; k + 1 < n; ++k) {
            so += i[k] * src_step[k];
            d_o += i[k] * dst_step[k];
        }
        f(so, d_o);
        int k = n - 2;
        for (; k >= 0; --k) {
            if (++i[k] < shape[k]) break;
            i[k] = 0;
        }
        if (k < 0) return;
    }
}

/// A body DMA's data movement (sync_copy, an async copy landing): the box `shape` from `src` to
/// `dst`, as a DMA engine that reads its whole source before it writes (memmove semantics: the
/// destination ends up with the source's contents from before the copy, even where the two
/// overlap). `overlap`: the byte ranges of the two ends intersect, so the source is read into a
/// buffer first; otherwise the runs move directly.
inline void move_box(std::byte* dst, const index_t* dst_step, const std::byte* src, const index_t* src_step,
                     const index_t* shape, int n, index_t item, bool overlap) {
    for (int k = 0; k < n; ++k)
        if (shape[k] == 0) return;
    const auto run = static_cast<std::size_t>((n > 0 ? shape[n - 1] : 1) * item);
    if (!overlap) {
        for_each_run(n, shape, src_step, dst_step,
                     [&](index_t so, index_t d_o) { std::memcpy(dst + d_o, src + so, run); });
        return;
    }
    index_t rows = 1;
    for (int k = 0; k + 1 < n; ++k) rows *= shape[k];
    std::vector<std::byte> tmp(static_cast<std::size_t>(rows) * run);
    std::byte* t = tmp.data();
    for_each_run(n, shape, src_step, dst_step, [&](index_t so, index_t) {
        std::memcpy(t, src + so, run);
        t += run;
    });
    t = tmp.data();
    for_each_run(n, shape, src_step, dst_step, [&](index_t, index_t d_o) {
        std::memcpy(dst + d_o, t, run);
        t += run;
    });
}

/// Whether the elements of two boxes of one shape (steps in bytes, the last dim contiguous)
/// share a byte: their runs, sorted, swept once. (Their byte ranges may intersect while the
/// elements do not: two column halves of one buffer.)
inline bool boxes_share_bytes(const std::byte* a, const index_t* a_step, const std::byte* b, const index_t* b_step,
                              const index_t* shape, int n, index_t item) {
    const index_t run = (n > 0 ? shape[n - 1] : 1) * item;
    std::vector<index_t> ra, rb;
    for_each_run(n, shape, a_step, b_step, [&](index_t ao, index_t bo) {
        ra.push_back(ao);
        rb.push_back(bo);
    });
    std::sort(ra.begin(), ra.end());
    std::sort(rb.begin(), rb.end());
    const index_t shift = b - a;  // b's runs in a's coordinates
    std::size_t i = 0, j = 0;
    while (i < ra.size() && j < rb.size()) {
        const index_t lo_a = ra[i], lo_b = rb[j] + shift;
        if (lo_a < lo_b + run && lo_b < lo_a + run) return true;
        if (lo_a < lo_b)
            ++i;
        else
            ++j;
    }
    return false;
}

/// detect_races: DMA4 for a copy whose source and destination share bytes. On a TPU nothing
/// says in which order a DMA engine reads and writes the chunks of one copy (S61 orders nothing
/// between DMAs either), so the result of such a copy is not guaranteed there; ptpu itself
/// copies it as memmove does (move_box).
[[gnu::cold]] inline void raise_overlapping_copy(const char* what, const std::string& src, const std::string& dst) {
    const kernel_context* c = current_context();
    throw error("DMA4",
                "core " + std::to_string(c != nullptr ? c->core : 0) + ", step " +
                    std::to_string(c != nullptr ? c->step : 0) + ": " + what,
                "the source " + src + " and the destination " + dst +
                    " overlap: a TPU DMA engine does not promise to read every source element before it writes the "
                    "destination, so the copy may replicate elements there (ptpu copies as memmove does)",
                "copy through a separate buffer (two copies), or make the source and destination disjoint");
}

}  // namespace detail

/// HBM → window slot. Returns the bytes moved.
inline index_t copy_block_in(const void* hbm, void* slot, const operand_desc& o,
                             const index_tuple<max_rank>& b) {
    const block_region r = region_of(o, b);
    detail::copy_box<true>(static_cast<std::byte*>(const_cast<void*>(hbm)), static_cast<std::byte*>(slot), r,
                           o.shape.data(), itemsize(o.type));
    return r.elems() * itemsize(o.type);
}

/// Window slot → HBM; the part of an edge block outside the array is discarded (S34).
inline index_t copy_block_out(void* hbm, const void* slot, const operand_desc& o,
                              const index_tuple<max_rank>& b) {
    const block_region r = region_of(o, b);
    detail::copy_box<false>(static_cast<std::byte*>(hbm), static_cast<std::byte*>(const_cast<void*>(slot)), r,
                            o.shape.data(), itemsize(o.type));
    return r.elems() * itemsize(o.type);
}

namespace detail {
template <class T, class U, class S1, class S2, std::size_t R, class E1, class E2>
void sync_copy_checked(const ref<T, S1, R, E1>& src, const ref<U, S2, R, E2>& dst);
}  // namespace detail

/// pltpu.sync_copy(src, dst) (S59): start the copy and wait for it. The spaces must have a DMA
/// path (M1, at compile time); the destination must be writable (R4: an input's any/hbm ref is
/// the caller's array, read-only unless the input is aliased to an output with Alias<in, out>);
/// the shapes must match (DMA1: at compile time where both refs' extents are static, at run time
/// otherwise). Overlapping ends copy as memmove does (DMA4 under detect_races).
template <class T, class U, class S1, class S2, std::size_t R, class E1, class E2>
void sync_copy(const ref<T, S1, R, E1>& src, const ref<U, S2, R, E2>& dst) {
    static_assert(rules::require_dma<S1, S2>());
#define PTPU_RULE_TEXT_R4_SYNC_COPY                                                                     \
    "ptpu[R4] sync_copy: the destination is a read-only ref (an input's any/hbm ref is the caller's "  \
    "array); copy into an output's ref, or declare Alias<in, out> and write the output"
#define PTPU_RULE_TEXT_DMA1_SYNC_COPY_EXTENTS                                                  \
    "ptpu[DMA1] sync_copy: the static extents of source and destination differ; slice both " \
    "refs with .at(ds(...), ...) to the same shape"
#if PTPU_COMPOSED_MESSAGES
    if constexpr (std::is_const_v<U>)
        static_assert(sizeof(compile_error<detail::about_destination<S2>(PTPU_RULE_TEXT_R4_SYNC_COPY)>) > 0);
#else
    static_assert(!std::is_const_v<U>, PTPU_RULE_TEXT_R4_SYNC_COPY);
#endif
    static_assert(std::is_const_v<U> || std::is_same_v<std::remove_const_t<T>, U>,
                  "ptpu[DMA1] sync_copy: source and destination must have the same dtype; cast in VMEM first");
#if PTPU_COMPOSED_MESSAGES
    if constexpr (!detail::extents_compatible<E1, E2>())
        static_assert(
            sizeof(compile_error<detail::about_copy<S1, E1, S2, E2>(PTPU_RULE_TEXT_DMA1_SYNC_COPY_EXTENTS)>) > 0);
#else
    static_assert(detail::extents_compatible<E1, E2>(), PTPU_RULE_TEXT_DMA1_SYNC_COPY_EXTENTS);
#endif
#undef PTPU_RULE_TEXT_R4_SYNC_COPY
#undef PTPU_RULE_TEXT_DMA1_SYNC_COPY_EXTENTS
    // A failed check stops here: one mistake, one message.
    if constexpr (!std::is_const_v<U> && std::is_same_v<std::remove_const_t<T>, U> &&
                  detail::extents_compatible<E1, E2>())
        detail::sync_copy_checked(src, dst);
}

namespace detail {
template <class T, class U, class S1, class S2, std::size_t R, class E1, class E2>
void sync_copy_checked(const ref<T, S1, R, E1>& src, const ref<U, S2, R, E2>& dst) {
    check(src.shape() == dst.shape(), "DMA1", "sync_copy", "source and destination shapes differ",
          "slice both refs with .at(ds(...), ...) to the same shape");
    const index_t total = src.size();
    if (total > 0) {  // DMA2 (detect_races): neither end may be an async copy's memory in flight
        index_t ls = 0, ld = 0;
        for (std::size_t d = 0; d < R; ++d) {
            ls += (src.shape()[d] - 1) * src.strides()[d];
            ld += (dst.shape()[d] - 1) * dst.strides()[d];
        }
        detail::check_dma_access(src.data(), detail::advanced(src.data(), ls + 1), false, "sync_copy");
        detail::check_dma_access(dst.data(), detail::advanced(dst.data(), ld + 1), true, "sync_copy");
        kernel_context* c = detail::current_context();
        if (c != nullptr && c->races != nullptr) {  // MC2 (A13): reads and writes of HBM, against the other core's
            if (access(S1::kind).far && src.data() != nullptr) {
                hbm_access r = detail::box_of(src.data(), src.shape(), src.strides(), static_cast<index_t>(sizeof(U)));
                r.write = false;
                r.what = "sync_copy from " + detail::ref_where(src.label());
                detail::note_hbm_access(*c, std::move(r));
            }
            if (access(S2::kind).far && dst.data() != nullptr) {
                hbm_access w = detail::box_of(dst.data(), dst.shape(), dst.strides(), static_cast<index_t>(sizeof(U)));
                w.what = "sync_copy to " + detail::ref_where(dst.label());
                detail::note_hbm_access(*c, std::move(w));
            }
        }
    }
    // Timing-only runs skip vector data movement but keep what scalar code reads (SMEM).
    const bool move = !timing_only() || S2::kind == space_kind::smem;
    // The shape cost is the HBM end's (docs/model.md, "DMA shape costs").
    const std::uint16_t runs_of =
        detail::run_of_region(src.shape(), access(S1::kind).far ? src.strides() : dst.strides(),
                              static_cast<index_t>(sizeof(U)));
    if (total == 0 || !move) {
        detail::note_body_dma(S1::kind, S2::kind, total * static_cast<index_t>(sizeof(U)), runs_of);
        return;
    }
    check(src.data() != nullptr && dst.data() != nullptr, "PRED1", "sync_copy",
          "a copy into SMEM needs data, and this run has none (pallas_call::predict)",
          "run with run_options{.timing_only = true} and real inputs");
    // Vecs loaded from the destination read it in place (copy-on-write): they copy it first.
    index_t last = 0;
    for (std::size_t d = 0; d < R; ++d) last += (dst.shape()[d] - 1) * dst.strides()[d];
    detail::before_write(dst.data(), detail::advanced(dst.data(), last + 1));
    index_t shape[R == 0 ? 1 : R]{}, ss[R == 0 ? 1 : R]{}, ds_[R == 0 ? 1 : R]{};
    for (std::size_t d = 0; d < R; ++d) {
        shape[d] = src.shape()[d];
        ss[d] = src.strides()[d] * static_cast<index_t>(sizeof(U));
        ds_[d] = dst.strides()[d] * static_cast<index_t>(sizeof(U));
    }
    index_t ls = 0;
    for (std::size_t d = 0; d < R; ++d) ls += (src.shape()[d] - 1) * src.strides()[d];
    const auto* s_lo = reinterpret_cast<const std::byte*>(src.data());
    const auto* s_hi = reinterpret_cast<const std::byte*>(detail::advanced(src.data(), ls + 1));
    auto* d_lo = reinterpret_cast<std::byte*>(dst.data());
    const auto* d_hi = reinterpret_cast<const std::byte*>(detail::advanced(dst.data(), last + 1));
    const bool overlap = s_lo < d_hi && d_lo < s_hi;
    if (overlap) {  // DMA4 (detect_races): hardware does not promise memmove semantics
        const kernel_context* c = detail::current_context();
        if (c != nullptr && c->detect_races &&
            detail::boxes_share_bytes(s_lo, ss, d_lo, ds_, shape, static_cast<int>(R), static_cast<index_t>(sizeof(U))))
            detail::raise_overlapping_copy("sync_copy", detail::ref_where(src.label()), detail::ref_where(dst.label()));
    }
    detail::move_box(d_lo, ds_, s_lo, ss, shape, static_cast<int>(R), static_cast<index_t>(sizeof(U)), overlap);
    detail::note_body_dma(S1::kind, S2::kind, total * static_cast<index_t>(sizeof(U)), runs_of);
}
}  // namespace detail

}  // namespace ptpu
