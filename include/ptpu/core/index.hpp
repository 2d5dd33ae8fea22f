// Defines the index vocabulary index maps and refs speak: idx(...) block-index tuples whose
// entries are integers or ds(start, size) slices (pl.ds, S9; ds(start, c<8>) has a static
// size), and `all` (the whole-ref index of Pallas's x[...]; ptpu spells that access load(x) /
// store(x, v), and x[all] is the compile error R3 that says so).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ptpu/core/integers.hpp"

namespace ptpu {

/// Largest rank of an array, a block or a grid that ptpu plans for (Block<...> checks it).
inline constexpr std::size_t max_rank = 6;
/// Most operands (prefetch + inputs + outputs) one call or pipeline may have.
inline constexpr std::size_t max_operands = 16;
/// Most TensorCores one call's grid is split over (a chip's cores_per_chip is at most this): the
/// size of every per-core table of the planner, the runner, the timing model and the report.
inline constexpr std::size_t max_cores = 4;
/// One value per TensorCore, indexed by the core.
template <class T>
using per_core = std::array<T, max_cores>;
/// A per_core table holding `v` for every core.
template <class T>
constexpr per_core<T> each_core(T v) {
    per_core<T> a{};
    a.fill(v);
    return a;
}

/// A grid iteration (program ids) or a block index's starts, as diagnostics and timeline labels
/// print them.
struct coords {
    int rank = 0;
    index_t v[max_rank]{};
    friend constexpr bool operator==(const coords&, const coords&) = default;
};

/// pl.ds(start, size): elements [start, start + size) (S9).
struct slice {
    index_t start = 0;
    index_t size = 0;
    friend constexpr bool operator==(const slice&, const slice&) = default;
};

/// A slice whose size is static: what ds(start, c<N>) gives. It is a slice, and windows taken
/// with it keep N as a static extent (refs and vecs, rule OP1).
template <index_t N>
struct static_slice : slice {
    static_assert(N >= 0, "ptpu[V1] ds(start, c<N>): the size must be >= 0");
    static constexpr index_t static_size = N;
};

/// ds(start, size) is [start, start+size); ds(size) is [0, size) (S9). A static size (c<8>)
/// gives a static_slice.
constexpr slice ds(index_t start, index_t size) {
    return {start, size};
}
constexpr slice ds(index_t size) {
    return {0, size};
}
template <index_t N>
constexpr static_slice<N> ds(index_t start, C<N> /*size*/) {
    return {{start, N}};
}
template <index_t N>
constexpr static_slice<N> ds(C<N> /*size*/) {
    return {{0, N}};
}

/// A ds slice of any kind.
template <class S>
concept any_slice = std::derived_from<std::remove_cvref_t<S>, slice>;

/// The whole extent of every dimension of a ref, Pallas's `x[...]`. `x[all]` does not compile
/// (R3: it was an uncharged Eigen view); write load(x) / store(x, v).
struct all_t {
    explicit constexpr all_t() = default;
};
inline constexpr all_t all{};

/// One entry of a block-index tuple: a scalar (block index, element offset or squeezed index) or a
/// ds slice (BoundedSlice dims). Equality compares start and size, as Pallas does (S10).
struct index_entry {
    index_t start = 0;
    index_t size = -1;  ///< -1: a scalar entry; a slice's size, a negative one n stored as n - 1
    [[nodiscard]] constexpr bool is_slice() const { return size != -1; }
    /// The size ds(start, size) was given (a negative one too, so that S38 can say which).
    [[nodiscard]] constexpr index_t slice_size() const { return size >= 0 ? size : size + 1; }
    /// The entry of ds(start, n): a negative n is kept distinct from the scalar marker -1.
    static constexpr index_entry of_slice(index_t start, index_t n) {
        constexpr index_t lowest = -(index_t{1} << 62);  // n - 1 must not overflow
        return {start, n >= 0 ? n : (n < lowest ? lowest : n) - 1};
    }
    friend constexpr bool operator==(const index_entry&, const index_entry&) = default;
    friend constexpr auto operator<=>(const index_entry&, const index_entry&) = default;
};

/// A block-index tuple: one entry per array dimension (S7). A plain array member rather than
/// std::array: the planner evaluates millions of these at compile time, and g++'s constant
/// evaluator is several times faster on built-in arrays.
template <std::size_t R>
struct index_tuple {
    index_entry v[R == 0 ? 1 : R];

    static constexpr std::size_t size() { return R; }
    constexpr index_entry& operator[](std::size_t i) { return v[i]; }
    constexpr const index_entry& operator[](std::size_t i) const { return v[i]; }
    constexpr index_entry* begin() { return v; }
    constexpr index_entry* end() { return v + R; }
    constexpr const index_entry* begin() const { return v; }
    constexpr const index_entry* end() const { return v + R; }
    friend constexpr bool operator==(const index_tuple& a, const index_tuple& b) {
        for (std::size_t i = 0; i < R; ++i)
            if (!(a.v[i] == b.v[i])) return false;
        return true;
    }
    friend constexpr bool operator<(const index_tuple& a, const index_tuple& b) {
        for (std::size_t i = 0; i < R; ++i) {
            if (a.v[i].start != b.v[i].start) return a.v[i].start < b.v[i].start;
            if (a.v[i].size != b.v[i].size) return a.v[i].size < b.v[i].size;
        }
        return false;
    }
};

template <class T>
concept index_like = integer<T> || any_slice<T>;

/// What idx(...) returns: an index_tuple<R> whose type also says which entries are ds slices
/// (bit d set: entry d is one), so that checks 4 and 5 (a bounded_slice dim needs a ds, any
/// other dim a scalar) are compile errors wherever a map's return type is known. It converts to
/// index_tuple<R>; a map declared to return plain index_tuple<R> (e.g. one written with several
/// `return idx(...)` of different kinds) carries no mask and is checked at run time.
template <std::size_t R, std::uint64_t SliceMask>
struct index_tuple_of : index_tuple<R> {
    static constexpr std::uint64_t slice_mask = SliceMask;
};

/// A block-index tuple type that states its slice entries (idx(...)'s).
template <class T>
concept masked_index_tuple = requires {
    { T::slice_mask } -> std::convertible_to<std::uint64_t>;
} && std::derived_from<T, index_tuple<T::size()>>;

namespace detail {
template <class... I>
constexpr std::uint64_t slice_mask_of() {
    std::uint64_t m = 0;
    std::uint64_t bit = 1;
    ((m |= any_slice<I> ? bit : 0, bit <<= 1), ...);  // entries past 64 cannot be ranks (max_rank)
    return m;
}
}  // namespace detail

/// idx(i, j, ...) builds the value an index map returns: integers (static or run-time) and slices.
template <class... I>
requires(index_like<I>&&...) constexpr index_tuple_of<sizeof...(I), detail::slice_mask_of<I...>()> idx(I... i) {
    auto entry = [](auto v) {
        if constexpr (any_slice<decltype(v)>)
            return index_entry::of_slice(v.start, v.size);
        else
            return index_entry{value_of(v), -1};
    };
    return {{{entry(i)...}}};
}

}  // namespace ptpu
