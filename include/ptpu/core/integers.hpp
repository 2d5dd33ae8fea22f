// Defines ptpu's integer vocabulary: static integers C<V>, bounded<Max> (a run-time value with a
// static maximum, Pallas's BoundedSlice size), and value_of / static_bound to read any of them.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ptpu/core/error.hpp"

namespace ptpu {

using index_t = std::int64_t;

/// A static integer. Costs no storage; arithmetic on two statics stays static.
template <index_t V>
struct C : std::integral_constant<index_t, V> {};

template <index_t V>
inline constexpr C<V> c{};

template <index_t A, index_t B>
constexpr C<A + B> operator+(C<A>, C<B>) {
    return {};
}
template <index_t A, index_t B>
constexpr C<A * B> operator*(C<A>, C<B>) {
    return {};
}
template <index_t A, index_t B>
constexpr C<A - B> operator-(C<A>, C<B>) {
    return {};
}

namespace detail {
template <class T>
inline constexpr bool is_static_int = false;
template <index_t V>
inline constexpr bool is_static_int<C<V>> = true;
template <class T, T V>
inline constexpr bool is_static_int<std::integral_constant<T, V>> = std::is_integral_v<T>;
}  // namespace detail

/// A compile-time integer (C<V> or any std::integral_constant of an integral type).
template <class T>
concept static_integer = detail::is_static_int<std::remove_cvref_t<T>>;

/// A run-time integer, or a static one.
template <class T>
concept integer = std::integral<std::remove_cvref_t<T>> || static_integer<T>;

/// A run-time extent bounded by a static maximum (Pallas BoundedSlice). The value is checked on
/// construction (rule V2); VMEM budgets use `max`.
template <index_t Max>
class bounded {
    static_assert(Max > 0, "ptpu[V1] bounded<Max>: the maximum must be positive; use Max >= 1");

public:
    static constexpr index_t max = Max;

    constexpr bounded() = default;
    template <std::integral I>
    constexpr explicit bounded(I i) : v_(static_cast<index_t>(i)) {
        const index_t v = v_;
        check(v > 0 && v <= Max,
              "ptpu[V2] bounded<Max>: value outside [1, Max]; a bounded extent holds a positive "
              "value no larger than its static maximum",
              [&] { return "got " + std::to_string(v) + ", Max " + std::to_string(Max); });
    }
    template <index_t V>
    requires(V > 0 && V <= Max) constexpr bounded(C<V>)
        : v_(V) {}  // NOLINT(google-explicit-constructor): static → bounded

    [[nodiscard]] constexpr index_t value() const { return v_; }
    constexpr operator index_t() const { return v_; }  // NOLINT(google-explicit-constructor)

private:
    index_t v_ = Max;
};

namespace detail {
template <class T>
inline constexpr bool is_bounded = false;
template <index_t M>
inline constexpr bool is_bounded<bounded<M>> = true;
}  // namespace detail

template <class T>
concept bounded_extent = detail::is_bounded<std::remove_cvref_t<T>>;

/// The value of any integer-like (static, bounded, or run-time).
template <class T>
constexpr index_t value_of(const T& v) {
    if constexpr (static_integer<T>)
        return std::remove_cvref_t<T>::value;
    else if constexpr (bounded_extent<T>)
        return v.value();
    else
        return static_cast<index_t>(v);
}

/// The static upper bound of an extent: its value if static, Max if bounded, -1 if unknown.
template <class T>
constexpr index_t static_bound() {
    if constexpr (static_integer<T>)
        return std::remove_cvref_t<T>::value;
    else if constexpr (bounded_extent<T>)
        return std::remove_cvref_t<T>::max;
    else
        return -1;
}

}  // namespace ptpu
