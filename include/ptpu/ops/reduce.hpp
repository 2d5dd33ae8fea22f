// Defines the reductions of a vec: sum, max, min and mean along an axis or over all elements.
// The reduced dim stays, with size 1 (keepdims=True): reducing (m, n) along axis 1 gives (m, 1),
// along axis 0 (1, n), over all (1, 1), so results broadcast straight back against the input.
//
// Cost [est]: the input's vregs are first combined elementwise (one cheap op per input vreg),
// then each output vreg is reduced across lanes (log2(128) = 7 cheap rotate-and-combine steps,
// axis 1) or sublanes (log2(rows per vreg): 3 for 32-bit types, axis 0); a reduction over all
// does both on one vreg.
#pragma once

#include <Eigen/Core>

#include <bit>
#include <cstdint>
#include <utility>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/elementwise.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

namespace detail {

enum class reduce_kind : unsigned char { sum, max, min };
inline constexpr int all_axes = 2;  // internal axis value: reduce over both dims

template <class T>
constexpr bool reduce_ok() {
    static_assert(numeric_element<T>,
                  "ptpu[OP3] reduction: masks cannot be reduced; cast<std::int32_t>(m) first "
                  "(its sum counts the true elements)");
    return numeric_element<T>;
}

/// Cheap vreg ops of a reduction of a (rows, cols) block of `d` (see the header comment).
constexpr index_t reduction_ops(index_t rows, index_t cols, dtype d, int axis) {
    constexpr index_t lane_steps = std::bit_width(static_cast<std::uint64_t>(vreg_lanes)) - 1;
    const index_t sublane_steps = std::bit_width(static_cast<std::uint64_t>(rows_per_vreg(d))) - 1;
    const index_t in = vregs(rows, cols, d);
    if (axis == 1) return in + lane_steps * vregs(rows, 1, d);
    if (axis == 0) return in + sublane_steps * vregs(1, cols, d);
    return in + lane_steps + sublane_steps;
}

template <reduce_kind K, class T>
vec<T> reduce(const vec<T>& v, int axis, const char* where) {
    const index_t out_rows = axis == 1 ? v.rows() : 1;
    const index_t out_cols = axis == 0 ? v.cols() : 1;
    const index_t extent = axis == 0 ? v.rows() : axis == 1 ? v.cols() : v.rows() * v.cols();
    if (K != reduce_kind::sum && extent == 0)
        throw error("OP1", where,
                    text("reducing an empty axis of a vec of shape ", shape_text(v.rows(), v.cols()),
                         ": max and min have no identity"),
                    "reduce a non-empty axis");
    charge_vpu(vpu_class::cheap, reduction_ops(v.rows(), v.cols(), dtype_of<T>, axis));
    if (timing_only()) return vec<T>(shape_only, out_rows, out_cols);
    v.require_data(where);
    using A = typename vec<T>::array_type;
    using C = compute_t<T>;
    const A& x = v.array();
    A out(out_rows, out_cols);
    if (extent == 0) {
        out.setZero();
    } else if constexpr (K == reduce_kind::sum) {
        if constexpr (std::is_same_v<C, std::int32_t>) {  // wraps, as int32 adds do
            const auto u = u32(x);
            if (axis == 1)
                out = i32(u.rowwise().sum());
            else if (axis == 0)
                out = i32(u.colwise().sum());
            else
                out(0, 0) = static_cast<std::int32_t>(u.sum());
        } else {
            if (axis == 1)
                out = x.rowwise().sum();
            else if (axis == 0)
                out = x.colwise().sum();
            else
                out(0, 0) = x.sum();
        }
    } else {
        // NaN propagates, as in jnp.max (Eigen's default leaves it unspecified).
        using F = std::conditional_t<K == reduce_kind::max,
                                     Eigen::internal::scalar_max_op<C, C, Eigen::PropagateNaN>,
                                     Eigen::internal::scalar_min_op<C, C, Eigen::PropagateNaN>>;
        if (axis == 1)
            out = x.rowwise().redux(F{});
        else if (axis == 0)
            out = x.colwise().redux(F{});
        else
            out(0, 0) = x.redux(F{});
    }
    return vec<T>(std::move(out));
}

/// `all` reduces over both dims; otherwise `axis` is checked (OP1).
template <reduce_kind K, class T>
vec<T> reduce_checked(const vec<T>& v, int axis, bool all, const char* where) {
    if constexpr (!reduce_ok<T>())
        return {};
    else
        return reduce<K>(v, all ? all_axes : check_axis(where, axis), where);
}

}  // namespace detail

/// sum(v, axis): sums along axis 0 or 1 (-1, -2 count from the end), keeping it as size 1.
/// Integers wrap; bf16/f16 accumulate in f32.
template <class T>
[[nodiscard]] vec<T> sum(const vec<T>& v, int axis) {
    return detail::reduce_checked<detail::reduce_kind::sum>(v, axis, false, "sum");
}
/// sum(v): the sum of all elements, as a (1, 1) vec.
template <class T>
[[nodiscard]] vec<T> sum(const vec<T>& v) {
    return detail::reduce_checked<detail::reduce_kind::sum>(v, 0, true, "sum");
}
/// max(v, axis) / max(v): the largest element (NaN if any is NaN); OP1 on an empty axis.
template <class T>
[[nodiscard]] vec<T> max(const vec<T>& v, int axis) {
    return detail::reduce_checked<detail::reduce_kind::max>(v, axis, false, "max");
}
template <class T>
[[nodiscard]] vec<T> max(const vec<T>& v) {
    return detail::reduce_checked<detail::reduce_kind::max>(v, 0, true, "max");
}
/// min(v, axis) / min(v): the smallest element (NaN if any is NaN); OP1 on an empty axis.
template <class T>
[[nodiscard]] vec<T> min(const vec<T>& v, int axis) {
    return detail::reduce_checked<detail::reduce_kind::min>(v, axis, false, "min");
}
template <class T>
[[nodiscard]] vec<T> min(const vec<T>& v) {
    return detail::reduce_checked<detail::reduce_kind::min>(v, 0, true, "min");
}

/// mean(v, axis) / mean(v): the sum times 1/n (floating-point vecs): a sum plus one cheap
/// multiply per output vreg. 1/n stays f32 (not rounded to a bf16 vec's type).
template <class T>
[[nodiscard]] vec<T> mean(const vec<T>& v, int axis) {
    if constexpr (!detail::domain_ok<detail::op_domain::floating, T>()) {
        return {};
    } else {
        axis = detail::check_axis("mean", axis);
        const auto n = static_cast<float>(axis == 0 ? v.rows() : v.cols());
        return detail::apply_scalar<detail::op_mul, false>(sum(v, axis), 1.0f / n);
    }
}
template <class T>
[[nodiscard]] vec<T> mean(const vec<T>& v) {
    if constexpr (!detail::domain_ok<detail::op_domain::floating, T>())
        return {};
    else
        return detail::apply_scalar<detail::op_mul, false>(sum(v), 1.0f / static_cast<float>(v.size()));
}

}  // namespace ptpu
