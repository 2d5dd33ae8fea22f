// Defines extents<E...>, the shape a type can carry: each extent a static value or `dyn` (known
// at run time only). Refs handed to kernel bodies carry their block shape this way, so that ops
// check shapes at compile time where they are static (rule OP1) and at run time where not.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/message.hpp"

namespace ptpu {

/// An extent known at run time only. -1, as static_bound() reports for a run-time extent.
inline constexpr index_t dyn = -1;

/// Static-or-dynamic extents, one per dim: extents<8, 128>, extents<dyn, 128>. Only the type
/// carries them: they cost no storage.
template <index_t... E>
struct extents {
    static_assert(((E == dyn || E >= 0) && ...),
                  "ptpu[V1] extents: an extent is a static value >= 0 or dyn; use dyn for a run-time "
                  "extent");
    static constexpr std::size_t rank = sizeof...(E);
    /// The extents, dyn where only known at run time.
    static constexpr std::array<index_t, rank> values{E...};
    /// True when every extent is static (at rank 0 this and is_dynamic both hold).
    static constexpr bool is_static = ((E != dyn) && ...);
    /// True when no extent is static: nothing to check at compile time.
    static constexpr bool is_dynamic = ((E == dyn) && ...);
};

namespace detail {
/// A 2-D static shape a message shows: "a (8, 128)", dyn extents as "dyn"; with an operand's
/// name, "ref `out` (8, 128)".
struct named_shape {
    std::string_view name;
    index_t rows;
    index_t cols;
    operand_name operand{};
};
/// `literal` (`ptpu[OP1] where: what; fix`) with the static shapes it is about between what is
/// wrong and the fix: "...; a (8, 128), b (16, 128); fix" (a compile-time OP1 message, g++).
constexpr rule_message with_shapes(std::string_view literal, std::initializer_list<named_shape> shapes) {
    rule_message about;
    auto extent = [&](index_t e) -> rule_message& { return e == dyn ? about << "dyn" : about << e; };
    bool first = true;
    for (const named_shape& s : shapes) {
        about << (first ? "" : ", ") << s.name;
        if (!s.operand.empty()) about << " `" << s.operand << "`";
        about << " (";
        extent(s.rows) << ", ";
        extent(s.cols) << ")";
        first = false;
    }
    return with_subject(literal, about.view());
}

template <class Seq>
struct dextents_of;
template <std::size_t... I>
struct dextents_of<std::index_sequence<I...>> {
    using type = extents<(static_cast<void>(I), dyn)...>;
};

template <auto A, class Seq = std::make_index_sequence<A.size()>>
struct extents_from;
template <auto A, std::size_t... I>
struct extents_from<A, std::index_sequence<I...>> {
    using type = extents<A[I]...>;
};

template <class E>
struct drop_first;
template <index_t First, index_t... Rest>
struct drop_first<extents<First, Rest...>> {
    using type = extents<Rest...>;
};
template <>
struct drop_first<extents<>> {  // (names the return type of a rank-0 ref's unusable at(i))
    using type = extents<>;
};

template <class T>
inline constexpr bool is_extents = false;
template <index_t... E>
inline constexpr bool is_extents<extents<E...>> = true;
}  // namespace detail

/// Rank R extents, all dynamic (what a ref without static extents has).
template <std::size_t R>
using dextents = typename detail::dextents_of<std::make_index_sequence<R>>::type;

/// The extents of a std::array of values (dyn entries stay dynamic): extents_from_t<Array::shape>.
template <auto A>
using extents_from_t = typename detail::extents_from<A>::type;

/// An extents type.
template <class E>
concept any_extents = detail::is_extents<E>;

/// The extent a window taken with slice type S has: N for ds(start, c<N>), dyn for ds(start, n).
template <class S>
inline constexpr index_t slice_extent = dyn;
template <index_t N>
inline constexpr index_t slice_extent<static_slice<N>> = N;

/// True when two extents can describe the same shape: per dim equal, or dyn on either side.
constexpr bool extents_agree(index_t a, index_t b) {
    return a == dyn || b == dyn || a == b;
}

}  // namespace ptpu
