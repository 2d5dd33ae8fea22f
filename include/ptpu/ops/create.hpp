// Defines the ops that make vecs from nothing: zeros, full, iota (lax.broadcasted_iota), and
// zeros_like / full_like of a vec or a VMEM ref. Each charges one cheap op per output vreg (a
// splat or an index computation per vreg). Extents given as C<N> (c<8>), or taken from a static
// vec or ref, give a static shape; run-time integers a dynamic one.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <type_traits>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/elementwise.hpp"
#include "ptpu/ops/load_store.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/ref.hpp"

namespace ptpu {

namespace detail {
/// full's values, checked (OP1) and charged: into `out`; false in timing-only mode (no values).
/// Compiled once per dtype, whatever the static shape.
template <element_type T>
bool full_values(block_values<compute_t<T>>& out, index_t r, index_t c, compute_t<T> value) {
    check_extents("full", r, c);
    charge_vpu(vpu_class::cheap, vregs(r, c, dtype_of<T>));
    if (timing_only()) return false;
    auto a = array_cache<compute_t<T>>::take(r, c);
    a.setConstant(value);
    out = block_values<compute_t<T>>(std::move(a));
    return true;
}
#define PTPU_FULL_VALUES_OF(T) \
    PTPU_INSTANTIATED(bool full_values<T>(block_values<compute_t<T>>&, index_t, index_t, compute_t<T>))
PTPU_FULL_VALUES_OF(float)
PTPU_FULL_VALUES_OF(bf16)
PTPU_FULL_VALUES_OF(std::int32_t)
#undef PTPU_FULL_VALUES_OF
}  // namespace detail

/// full<T>(rows, cols, value): every element `value`, converted to T first (bf16 rounds). A
/// static extent (c<8>) gives a static shape: full<float>(c<8>, c<128>, 0.0f) is a
/// vec<float, 8, 128>.
template <element_type T, integer Rows, integer Cols, scalar_value S>
[[nodiscard]] vec<T, detail::extent_arg<Rows>, detail::extent_arg<Cols>> full(Rows rows, Cols cols, S value) {
    using out_t = vec<T, detail::extent_arg<Rows>, detail::extent_arg<Cols>>;
    if constexpr (!detail::scalar_ok<T, S>()) {
        return {};
    } else {
        const index_t r = value_of(rows);
        const index_t c = value_of(cols);
        detail::block_values<compute_t<T>> values;
        out_t w = detail::full_values<T>(values, r, c, detail::scalar_as<T>(value))
                      ? detail::vec_access::make<out_t>(std::move(values), r, c)
                      : out_t(shape_only, r, c);
        detail::chain_result(w, detail::vpu_chain(vpu_class::cheap, vregs(r, c, dtype_of<T>)), {});
        return w;
    }
}

// full of run-time extents (zeros_like and full_like of a ref or vec of run-time shape, in every
// body of a run-time configured call), compiled once for the common dtypes.
#define PTPU_DYNAMIC_FULL(T) PTPU_INSTANTIATED(vec<T, dyn, dyn> full<T, index_t, index_t, T>(index_t, index_t, T))
PTPU_DYNAMIC_FULL(float)
PTPU_DYNAMIC_FULL(bf16)
PTPU_DYNAMIC_FULL(std::int32_t)
#undef PTPU_DYNAMIC_FULL

/// zeros<T>(rows, cols) (false for masks); static extents as for full.
template <element_type T, integer Rows, integer Cols>
[[nodiscard]] auto zeros(Rows rows, Cols cols) {
    return full<T>(rows, cols, T{});
}

/// A vec of zeros / of `value` with the shape (static shape included) and dtype of `v`.
template <class T, index_t Rows, index_t Cols>
[[nodiscard]] vec<T, Rows, Cols> zeros_like(const vec<T, Rows, Cols>& v) {
    return vec<T, Rows, Cols>(zeros<T>(v.rows(), v.cols()));
}
template <class T, index_t Rows, index_t Cols, scalar_value S>
[[nodiscard]] vec<T, Rows, Cols> full_like(const vec<T, Rows, Cols>& v, S value) {
    return vec<T, Rows, Cols>(full<T>(v.rows(), v.cols(), value));
}
/// The same for the shape (collapsed to 2-D, static where the ref's extents are) and dtype of a
/// ref: store(acc, zeros_like(acc)).
template <class T, class S, std::size_t R, class E>
requires(R >= 1) [[nodiscard]] detail::loaded_t<T, E> zeros_like(const ref<T, S, R, E>& r) {
    const auto [rows, cols] = detail::shape_2d(r);
    return detail::loaded_t<T, E>(zeros<std::remove_const_t<T>>(rows, cols));
}
template <class T, class S, std::size_t R, class E, scalar_value V>
requires(R >= 1) [[nodiscard]] detail::loaded_t<T, E> full_like(const ref<T, S, R, E>& r, V value) {
    const auto [rows, cols] = detail::shape_2d(r);
    return detail::loaded_t<T, E>(full<std::remove_const_t<T>>(rows, cols, value));
}

namespace detail {
// iota's implementation: a function object, so that the name `iota` is a variable and a call to
// it is never an overload set. With an ordinary function template, an unqualified
// iota<std::int32_t>(c<8>, c<128>, c<1>) also finds std::iota by argument-dependent lookup (C<N>
// derives from std::integral_constant, so namespace std is associated) and the call is
// ambiguous; iota<T>(8, 128, c<1>) silently picks std::iota. Lookup that finds a variable does
// no argument-dependent lookup at all.
template <class T>
struct iota_fn {
    template <integer Rows, integer Cols, integer Axis>
    [[nodiscard]] vec<T, extent_arg<Rows>, extent_arg<Cols>> operator()(Rows rows_arg, Cols cols_arg,
                                                                        Axis axis_arg) const {
        using out_t = vec<T, extent_arg<Rows>, extent_arg<Cols>>;
        static_assert(numeric_element<T>,
                      "ptpu[OP3] iota: masks have no iota; use iota<std::int32_t> and compare");
        if constexpr (!numeric_element<T>) {
            return {};
        } else {
            const index_t rows = value_of(rows_arg);
            const index_t cols = value_of(cols_arg);
            check_extents("iota", rows, cols);
            // (clamped into int first: an axis of 2^40 stays out of range, and says so)
            const index_t a = std::clamp<index_t>(value_of(axis_arg), INT_MIN, INT_MAX);
            const int axis = check_axis("iota", static_cast<int>(a));
            charge_vpu(vpu_class::cheap, vregs(rows, cols, dtype_of<T>));
            const chain_work own = vpu_chain(vpu_class::cheap, vregs(rows, cols, dtype_of<T>));
            if (timing_only()) {
                out_t w(shape_only, rows, cols);
                chain_result(w, own, {});
                return w;
            }
            using A = typename out_t::array_type;
            const round_fn<T> round;
            A out = A::NullaryExpr(rows, cols, [axis, round](Eigen::Index i, Eigen::Index j) {
                return round(static_cast<compute_t<T>>(axis == 0 ? i : j));
            });
            out_t w(std::move(out));
            chain_result(w, own, {});
            return w;
        }
    }
};
}  // namespace detail

/// iota<T>(rows, cols, axis): each element its index along `axis` (0: row, 1: col; -1 the last,
/// -2 the first), as lax.broadcasted_iota. Numeric T only (OP3); bf16 rounds indices above 256.
/// The axis may be static (c<1>) like the extents. `iota<T>` is a function object, not a
/// function: argument-dependent lookup never brings std::iota into a call to it.
template <element_type T>
inline constexpr detail::iota_fn<T> iota{};

}  // namespace ptpu
