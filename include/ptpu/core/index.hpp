// Defines the index vocabulary index maps and refs speak: idx(...) block-index tuples,
// ds(start, size) slices (pl.ds, S9), `all` (a whole-ref slice) and `squeezed` (a None block dim).
#pragma once

#include <array>
#include <cstddef>

#include "ptpu/core/integers.hpp"

namespace ptpu {

/// pl.ds(start, size): elements [start, start + size) (S9).
struct slice {
    index_t start = 0;
    index_t size = 0;
    friend constexpr bool operator==(const slice&, const slice&) = default;
};

/// ds(start, size) is [start, start+size); ds(size) is [0, size) (S9).
constexpr slice ds(index_t start, index_t size) { return {start, size}; }
constexpr slice ds(index_t size) { return {0, size}; }

/// The whole extent of every dimension of a ref: `x[all]`.
struct all_t {
    explicit constexpr all_t() = default;
};
inline constexpr all_t all{};

/// A block index tuple: one entry per array dimension (S7).
template <std::size_t R>
using index_tuple = std::array<index_t, R>;

/// idx(i, j, ...) builds a block-index tuple from integers (static or run-time).
template <class... I>
    requires(integer<I> && ...)
constexpr index_tuple<sizeof...(I)> idx(I... i) {
    return {value_of(i)...};
}

}  // namespace ptpu
