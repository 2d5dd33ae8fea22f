// Defines ptpu's integer vocabulary: static integers C<V>, bounded<Max> (a run-time value with a
// static maximum, Pallas's BoundedSlice size), value_of / static_bound to read any of them, and
// the checked arithmetic every product and sum of user-given extents goes through (rule V3).
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

/// Extent arithmetic that cannot overflow (rule V3): `r = a + b`, `r = a * b` and the product of
/// `n` extents, each false (r unspecified) when the exact result does not fit in index_t. They are
/// constant expressions, so that a static shape or grid that overflows is a compile error with
/// the rule's message rather than the compiler's "overflow in constant expression".
constexpr bool add_fits(index_t a, index_t b, index_t& r) {
    return !__builtin_add_overflow(a, b, &r);
}
constexpr bool sub_fits(index_t a, index_t b, index_t& r) {
    return !__builtin_sub_overflow(a, b, &r);
}
constexpr bool mul_fits(index_t a, index_t b, index_t& r) {
    return !__builtin_mul_overflow(a, b, &r);
}
/// The product of v[0..n) into r; false when it overflows, `*at` then the first factor whose
/// product does not fit (the dim a message names).
constexpr bool product_fits(const index_t* v, int n, index_t& r, int* at = nullptr) {
    r = 1;
    for (int i = 0; i < n; ++i)
        if (!mul_fits(r, v[i], r)) {
            if (at != nullptr) *at = i;
            return false;
        }
    return true;
}

/// The one message of rule V3 where a run-time value (a ref's slice, a shape given at run time)
/// overflows; the planner's own V3 (a call's grid, shapes, blocks and layout) is in
/// spec/validate.hpp with the other rules of a call.
#define PTPU_RULE_TEXT_V3                                                                        \
    "ptpu[V3] extents: extent arithmetic overflows int64 (index_t): a product or sum of given " \
    "extents, offsets or bytes does not fit; use smaller extents"

/// a * b, or ptpu[V3] naming `what()` (a std::string: the operand and dim) when it overflows;
/// at compile time the V3 message stops compilation.
template <class What>
constexpr index_t checked_mul(index_t a, index_t b, What&& what) {
    index_t r = 0;
    const bool ok = mul_fits(a, b, r);
    check(ok, PTPU_RULE_TEXT_V3, [&] { return what() + ": " + std::to_string(a) + " * " + std::to_string(b); });
    return r;
}
/// a + b, or ptpu[V3] as checked_mul.
template <class What>
constexpr index_t checked_add(index_t a, index_t b, What&& what) {
    index_t r = 0;
    const bool ok = add_fits(a, b, r);
    check(ok, PTPU_RULE_TEXT_V3, [&] { return what() + ": " + std::to_string(a) + " + " + std::to_string(b); });
    return r;
}

}  // namespace ptpu
