// Defines ptpu::shape, one shape type mixing static (C<N>), dynamic (index_t) and bounded<N>
// extents. Static extents cost no storage; a zero or negative extent is a compile error when
// static (V1) and a ptpu::error when dynamic (V1 too).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <utility>

#include "ptpu/core/integers.hpp"

namespace ptpu {

/// One extent of a shape: a positive static integer, a run-time integer, or bounded<N>.
template <class E>
concept extent = (static_integer<E> && (std::remove_cvref_t<E>::value > 0)) ||
                 bounded_extent<E> || std::same_as<E, index_t>;

template <class... E>
class shape {
    static_assert(((!static_integer<E> || static_bound<E>() > 0) && ...),
                  "ptpu[V1] shape: a static extent is zero or negative; every extent must be >= 1");
    static_assert(((static_integer<E> || extent<E>)&&...),
                  "ptpu[V1] shape: an extent must be C<N>, index_t or bounded<N>");

public:
    static constexpr std::size_t rank = sizeof...(E);
    /// True when every extent is known at compile time.
    static constexpr bool is_static = (static_integer<E> && ...);

    constexpr shape() requires((!std::same_as<E, index_t> && ...)) = default;

    constexpr explicit shape(E... e) : e_(e...) {
        for (std::size_t i = 0; i < rank; ++i)
            check(extents()[i] > 0, "ptpu[V1] shape: zero or negative extent; every extent must be >= 1",
                  [&] { return "extent " + std::to_string(i) + " is " + std::to_string(extents()[i]); });
    }

    template <std::size_t I>
    [[nodiscard]] constexpr index_t get() const {
        return value_of(std::get<I>(e_));
    }

    [[nodiscard]] constexpr std::array<index_t, rank> extents() const {
        return std::apply([](const auto&... v) { return std::array<index_t, rank>{value_of(v)...}; }, e_);
    }
    /// Static maxima (bounded<N> gives N, run-time extents give -1).
    static constexpr std::array<index_t, rank> static_extents() { return {static_bound<E>()...}; }

    [[nodiscard]] constexpr index_t size() const {
        index_t n = 1;
        for (index_t v : extents()) n *= v;
        return n;
    }

private:
    [[no_unique_address]] std::tuple<E...> e_{};
};

/// A shape of static extents: sshape<8, 128>.
template <index_t... N>
using sshape = shape<C<N>...>;

template <class T>
inline constexpr bool is_shape_v = false;
template <class... E>
inline constexpr bool is_shape_v<shape<E...>> = true;

template <class T>
concept any_shape = is_shape_v<std::remove_cvref_t<T>>;

}  // namespace ptpu
