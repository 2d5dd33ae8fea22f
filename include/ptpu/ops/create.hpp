// Defines the ops that make vecs from nothing: zeros, full, iota (lax.broadcasted_iota), and
// zeros_like / full_like of a vec or a VMEM ref. Each charges one cheap op per output vreg (a
// splat or an index computation per vreg).
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <type_traits>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/elementwise.hpp"
#include "ptpu/ops/load_store.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/ref.hpp"

namespace ptpu {

/// full<T>(rows, cols, value): every element `value`, converted to T first (bf16 rounds).
template <element_type T, scalar_value S>
[[nodiscard]] vec<T> full(index_t rows, index_t cols, S value) {
    if constexpr (!detail::scalar_ok<T, S>()) {
        return {};
    } else {
        detail::check_extents("full", rows, cols);
        detail::charge_vpu(vpu_class::cheap, vregs(rows, cols, dtype_of<T>));
        if (timing_only()) return vec<T>(shape_only, rows, cols);
        return vec<T>(vec<T>::array_type::Constant(rows, cols, detail::scalar_as<T>(value)));
    }
}

/// zeros<T>(rows, cols) (false for masks).
template <element_type T>
[[nodiscard]] vec<T> zeros(index_t rows, index_t cols) {
    return full<T>(rows, cols, T{});
}

/// A vec of zeros / of `value` with the shape and dtype of `v`.
template <class T>
[[nodiscard]] vec<T> zeros_like(const vec<T>& v) {
    return zeros<T>(v.rows(), v.cols());
}
template <class T, scalar_value S>
[[nodiscard]] vec<T> full_like(const vec<T>& v, S value) {
    return full<T>(v.rows(), v.cols(), value);
}
/// The same for the shape (collapsed to 2-D) and dtype of a ref: store(acc, zeros_like(acc)).
template <class T, class S, std::size_t R>
requires(R >= 1) [[nodiscard]] vec<std::remove_const_t<T>> zeros_like(const ref<T, S, R>& r) {
    const auto [rows, cols] = detail::shape_2d(r);
    return zeros<std::remove_const_t<T>>(rows, cols);
}
template <class T, class S, std::size_t R, scalar_value V>
requires(R >= 1) [[nodiscard]] vec<std::remove_const_t<T>> full_like(const ref<T, S, R>& r, V value) {
    const auto [rows, cols] = detail::shape_2d(r);
    return full<std::remove_const_t<T>>(rows, cols, value);
}

/// iota<T>(rows, cols, axis): each element its index along `axis` (0: row, 1: col), as
/// lax.broadcasted_iota. Numeric T only (OP3); bf16 rounds indices above 256.
template <element_type T>
[[nodiscard]] vec<T> iota(index_t rows, index_t cols, int axis) {
    static_assert(numeric_element<T>,
                  "ptpu[OP3] iota: masks have no iota; use iota<std::int32_t> and compare");
    if constexpr (!numeric_element<T>) {
        return {};
    } else {
        detail::check_extents("iota", rows, cols);
        axis = detail::check_axis("iota", axis);
        detail::charge_vpu(vpu_class::cheap, vregs(rows, cols, dtype_of<T>));
        if (timing_only()) return vec<T>(shape_only, rows, cols);
        using A = typename vec<T>::array_type;
        const detail::round_fn<T> round;
        A out = A::NullaryExpr(rows, cols, [axis, round](Eigen::Index i, Eigen::Index j) {
            return round(static_cast<compute_t<T>>(axis == 0 ? i : j));
        });
        return vec<T>(std::move(out));
    }
}

}  // namespace ptpu
