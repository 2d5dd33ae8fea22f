// Defines the block vocabulary of a BlockSpec: Block<...> dims (Blocked ints, squeezed, element,
// bounded_slice), Full, Buffered<k>, revisit modes, and BlockSpec itself (S7, S8, S16, S40).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"

// The messages of the block vocabulary's own checks, shared with the verdict (call/verdict.hpp).
#define PTPU_RULE_TEXT_7_BLOCK_DIM                                          \
    "ptpu[7] Block<...>: unsupported block dimension type; allowed are an " \
    "integer (Blocked), squeezed, blocked{n}, element{n, lo, hi}, "         \
    "bounded_slice{n}"
#define PTPU_RULE_TEXT_13_BLOCK_RANK "ptpu[13] Block<...>: rank above ptpu's max_rank (6); use at most 6 dims"
#define PTPU_RULE_TEXT_19_BLOCKSPEC_OPTION                    \
    "ptpu[19] BlockSpec: unsupported option; options are a memory space, " \
    "Buffered<k> and revisit_any/revisit_immediate"

namespace ptpu {

/// `invalid` marks a dim whose type already failed check 7 (its static_assert is the message).
enum class dim_kind : std::uint8_t { blocked, squeezed, element, bounded_slice, invalid };

/// One normalized block dimension (S8).
struct block_dim {
    dim_kind kind = dim_kind::blocked;
    index_t size = 1;    ///< block size along the dim (1 for squeezed)
    index_t pad_lo = 0;  ///< Element padding
    index_t pad_hi = 0;
    friend constexpr bool operator==(const block_dim&, const block_dim&) = default;
};

/// pl.Squeezed() / None: a size-1 dim removed from the kernel ref; the index map returns the index.
struct squeezed_t {
    friend constexpr bool operator==(squeezed_t, squeezed_t) = default;
};
inline constexpr squeezed_t squeezed{};

/// pl.Blocked(n): the index map returns a block index b, the block is [b*n, b*n+n).
struct blocked {
    index_t size;
};

/// pl.Element(n, (lo, hi)): the index map returns an element offset into the array padded by lo/hi.
struct element {
    index_t size;
    index_t pad_lo = 0;
    index_t pad_hi = 0;
};

/// pl.BoundedSlice(n): the index map returns ds(start, size) with size <= n (emit_pipeline only).
struct bounded_slice {
    index_t size;
};

namespace detail {
/// The rules a noun checks itself (Array, Scratch, Block, BlockSpec), each one id here.
enum class noun_rule : std::uint8_t {
    ok,
    array_dtype,      ///< T1: Array's element type
    array_extent,     ///< V1: an Array dim below 1
    array_rank,       ///< V1: Array's rank
    array_bytes,      ///< V3: Array's elements or bytes overflow index_t
    block_rank,       ///< 13
    block_dim_type,   ///< 7
    spec_option,      ///< 19: BlockSpec's options
    spec_space,       ///< 29: BlockSpec's memory space
    scratch_space,    ///< S5
    scratch_extent,   ///< V1: a Scratch dim below 1
    semaphore_cells,  ///< 36: semaphore scratch of other cells
    cells_space,      ///< 36: semaphore cells outside the semaphore space
    scratch_dtype     ///< T1: Scratch's element type
};
/// What a noun's own checks find: the first rule its template arguments break, in the order the
/// noun's static_asserts state them, with that rule's message and the dim it is about (-1: none).
/// Each noun computes it with one constexpr function of its template arguments (block_check,
/// spec_check, array_check, scratch_check), which its static_asserts and check_call
/// (call/verdict.hpp, which must not instantiate the noun) both read: one predicate per rule.
struct noun_finding {
    noun_rule rule = noun_rule::ok;
    const char* text = nullptr;
    int dim = -1;
};

/// Check 7: the dim types to_block_dim accepts.
template <auto D>
constexpr bool block_dim_type_ok() {
    using T = std::remove_cvref_t<decltype(D)>;
    return (std::is_integral_v<T> && !std::is_same_v<T, bool>) || std::is_same_v<T, squeezed_t> ||
           std::is_same_v<T, blocked> || std::is_same_v<T, element> || std::is_same_v<T, bounded_slice>;
}
/// Block<D...>'s checks: 13 (rank), then 7 (the first dim of an unsupported type).
template <auto... D>
constexpr noun_finding block_check() {
    if (sizeof...(D) > max_rank) return {noun_rule::block_rank, PTPU_RULE_TEXT_13_BLOCK_RANK};
    int k = 0, bad = -1;
    ((bad = bad < 0 && !block_dim_type_ok<D>() ? k : bad, ++k), ...);
    return bad >= 0 ? noun_finding{noun_rule::block_dim_type, PTPU_RULE_TEXT_7_BLOCK_DIM, bad}
                    : noun_finding{};
}

template <auto D>
constexpr block_dim to_block_dim() {
    using T = std::remove_cvref_t<decltype(D)>;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        return {dim_kind::blocked, static_cast<index_t>(D), 0, 0};
    else if constexpr (std::is_same_v<T, squeezed_t>)
        return {dim_kind::squeezed, 1, 0, 0};
    else if constexpr (std::is_same_v<T, blocked>)
        return {dim_kind::blocked, D.size, 0, 0};
    else if constexpr (std::is_same_v<T, element>)
        return {dim_kind::element, D.size, D.pad_lo, D.pad_hi};
    else if constexpr (std::is_same_v<T, bounded_slice>)
        return {dim_kind::bounded_slice, D.size, 0, 0};
    else {
        static_assert(block_dim_type_ok<D>(), PTPU_RULE_TEXT_7_BLOCK_DIM);
        return {dim_kind::invalid, 1, 0, 0};
    }
}
}  // namespace detail

/// A block shape: Block<256, 512>, Block<squeezed, 8, 128>, Block<element{8}, 256>.
template <auto... D>
struct Block {
    static constexpr std::size_t rank = sizeof...(D);
    // 13 here; 7 where each dim is read (to_block_dim), so a bad dim is one error.
    static_assert(detail::block_check<D...>().rule != detail::noun_rule::block_rank,
                  PTPU_RULE_TEXT_13_BLOCK_RANK);
    static constexpr std::array<block_dim, rank> dims{detail::to_block_dim<D>()...};
    static constexpr bool full = false;
};

/// block_shape=None: the block is the whole array (S7).
struct Full {
    static constexpr bool full = true;
};

/// pl.Buffered(buffer_count, use_lookahead, prefetched_count) (S16, S32, S55). Only the
/// pipeline-mode option of a spec. PrefetchedCount (emit_pipeline inputs): the caller fills the
/// first k slots of the window (emit_pipeline_with_allocations) and the pipeline skips their
/// fetches and waits.
template <int BufferCount, bool Lookahead = false, int PrefetchedCount = 0>
struct Buffered {
    static constexpr int buffer_count = BufferCount;
    static constexpr bool lookahead = Lookahead;
    static constexpr int prefetched_count = PrefetchedCount;
};

/// RevisitMode (S39, S40): `revisit_immediate` is the default; `revisit_any` restores the block
/// from HBM on every index change and requires Buffered<1>.
struct revisit_immediate {
    static constexpr bool any = false;
};
struct revisit_any {
    static constexpr bool any = true;
};

/// index_map=None: every block index is 0 (S7).
struct zero_map_t {
    friend constexpr bool operator==(zero_map_t, zero_map_t) = default;
};
inline constexpr zero_map_t zero_map{};

namespace detail {
template <class T>
inline constexpr bool is_buffered = false;
template <int K, bool L, int P>
inline constexpr bool is_buffered<Buffered<K, L, P>> = true;
template <class T>
inline constexpr bool is_revisit = std::is_same_v<T, revisit_any> || std::is_same_v<T, revisit_immediate>;

// The first option satisfying Is, or Default. Option packs are a handful of types: a short
// recursion is cheaper to compile here than any list machinery.
template <template <class> class Is, class Default, class... Opts>
struct pick_option {
    using type = Default;
};
template <template <class> class Is, class Default, class First, class... Rest>
struct pick_option<Is, Default, First, Rest...> {
    using type =
        std::conditional_t<Is<First>::value, First, typename pick_option<Is, Default, Rest...>::type>;
};
template <template <class> class Is, class Default, class... Opts>
using pick_t = typename pick_option<Is, Default, Opts...>::type;

template <class T>
struct is_space_opt : std::bool_constant<space<T>> {};
template <class T>
struct is_buffered_opt : std::bool_constant<is_buffered<T>> {};
template <class T>
struct is_revisit_opt : std::bool_constant<is_revisit<T>> {};

struct no_mode {
    static constexpr int buffer_count = 2;  // S16 default
    static constexpr bool lookahead = false;
    static constexpr int prefetched_count = 0;
};

/// BlockSpec's checks: 19 (an option that is no memory space, Buffered<...> or revisit mode),
/// then 29 (the block's memory space).
template <class... Options>
constexpr noun_finding spec_check() {
    using memory = pick_t<is_space_opt, vmem, Options...>;
    if constexpr (!((space<Options> || is_buffered<Options> || is_revisit<Options>)&&...))
        return {noun_rule::spec_option, PTPU_RULE_TEXT_19_BLOCKSPEC_OPTION};
    else if constexpr (!rules::block_space_ok<memory>)
        return {noun_rule::spec_space, PTPU_RULE_TEXT_29};
    else
        return {};
}
}  // namespace detail

/// BlockSpec<Shape, IndexMap, Options...> (S7). Shape is Block<...> or Full; IndexMap a constexpr
/// callable taking the grid indices (then the scalar-prefetch refs) and returning idx(...);
/// Options, in any order: a memory space (default vmem, S2), Buffered<k> (default 2, S16),
/// revisit_any / revisit_immediate (default immediate, S39).
template <class Shape = Full, auto IndexMap = zero_map, class... Options>
struct BlockSpec {
    using shape = Shape;
    static constexpr auto index_map = IndexMap;
    using memory = detail::pick_t<detail::is_space_opt, vmem, Options...>;
    using mode = detail::pick_t<detail::is_buffered_opt, detail::no_mode, Options...>;
    using revisit = detail::pick_t<detail::is_revisit_opt, revisit_immediate, Options...>;
    static constexpr bool explicit_mode = !std::is_same_v<mode, detail::no_mode>;
    static_assert(detail::spec_check<Options...>().rule != detail::noun_rule::spec_option,
                  PTPU_RULE_TEXT_19_BLOCKSPEC_OPTION);
    static_assert(rules::require_block_space<memory>());
};

}  // namespace ptpu
