// Defines the reductions of a vec: sum, max, min and mean along an axis or over all elements.
// The reduced dim stays, with size 1 (keepdims=True): reducing (m, n) along axis 1 gives (m, 1),
// along axis 0 (1, n), over all (1, 1), so results broadcast straight back against the input.
// Static shapes: a reduction over all is (1, 1); along a static axis (sum(v, c<1>)) the kept dim
// stays static; along a run-time axis only extents that are 1 either way stay static.
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

// The reduced values of x (compiled once per dtype, whatever the vec's static shape).
template <reduce_kind K, class T>
typename vec<T>::array_type reduce_values(const typename vec<T>::array_type& x, int axis) {
    using A = typename vec<T>::array_type;
    using C = compute_t<T>;
    A out(axis == 1 ? x.rows() : 1, axis == 0 ? x.cols() : 1);
    if (x.size() == 0) {
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
    return out;
}

template <reduce_kind K, class V, class T = typename V::value_type>
vec<T> reduce(const V& v, int axis, const char* where) {
    const index_t extent = axis == 0 ? v.rows() : axis == 1 ? v.cols() : v.rows() * v.cols();
    if (K != reduce_kind::sum && extent == 0)
        throw error("OP1", where,
                    text("reducing an empty axis of a vec of shape ", shape_text(v.rows(), v.cols()),
                         ": max and min have no identity"),
                    "reduce a non-empty axis");
    const chain_in in = chain_of(v);
    drain_mxu(v);
    const index_t n = reduction_ops(v.rows(), v.cols(), dtype_of<T>, axis);
    charge_vpu(vpu_class::cheap, n);
    if (timing_only()) {
        vec<T> r(shape_only, axis == 1 ? v.rows() : 1, axis == 0 ? v.cols() : 1);
        chain_result(r, vpu_chain(vpu_class::cheap, n), {in});
        return r;
    }
    v.require_data(where);
    vec<T> r(reduce_values<K, T>(v.array(), axis));
    chain_result(r, vpu_chain(vpu_class::cheap, n), {in});
    return r;
}

/// The result type of reducing vec type V along `Axis` (0, 1, all_axes, or dyn: a run-time axis).
template <class V, index_t Axis>
using reduced_t = vec<typename V::value_type,
                      Axis == 0 || Axis == all_axes || (Axis == dyn && V::static_rows == 1) ? 1
                      : Axis == 1                                                           ? V::static_rows
                                                                                            : dyn,
                      Axis == 1 || Axis == all_axes || (Axis == dyn && V::static_cols == 1) ? 1
                      : Axis == 0                                                           ? V::static_cols
                                                                                            : dyn>;

/// An axis argument: a run-time integer, or a static one (c<0>, c<1>, c<-1>, c<-2>).
template <class A>
concept axis_arg = std::integral<A> || static_integer<A>;

/// The axis a reduction's result type follows: all_axes for a reduction over all (AxisArg =
/// void), the static axis counted from the front, or dyn (a run-time or out-of-range axis).
template <class AxisArg>
constexpr index_t axis_of() {
    if constexpr (std::is_void_v<AxisArg>) {
        return all_axes;
    } else if constexpr (static_integer<AxisArg>) {
        constexpr index_t a = static_bound<AxisArg>();
        return a >= -2 && a <= 1 ? front_axis(a) : dyn;
    } else {
        return dyn;
    }
}
template <class V, class AxisArg>
using reduce_result_t = reduced_t<V, axis_of<AxisArg>()>;

/// A reduction along a run-time axis (checked, OP1), a static one (checked at compile time) or
/// over all elements (AxisArg = void).
template <reduce_kind K, class AxisArg, class V>
reduce_result_t<V, AxisArg> reduce_checked(const V& v, [[maybe_unused]] index_t axis, const char* where) {
    using out_t = reduce_result_t<V, AxisArg>;
    if constexpr (!reduce_ok<typename V::value_type>())
        return {};
    else if constexpr (std::is_void_v<AxisArg>)
        return out_t(reduce<K>(v, all_axes, where));
    else if constexpr (!static_integer<AxisArg>)
        return out_t(reduce<K>(v, check_axis(where, static_cast<int>(axis)), where));
    else if constexpr (!static_axis_ok<static_bound<AxisArg>()>())
        return {};
    else
        return out_t(reduce<K>(v, static_cast<int>(axis_of<AxisArg>()), where));
}

/// The run-time value of an axis argument (a static one is read from its type).
template <class AxisArg>
constexpr index_t runtime_axis(AxisArg a) {
    if constexpr (static_integer<AxisArg>)
        return 0;
    else
        return static_cast<index_t>(a);
}

}  // namespace detail

/// sum(v, axis): sums along axis 0 or 1 (-1, -2 count from the end), keeping it as size 1; the
/// axis is an int or a static c<0> / c<1> (which keeps the result's shape static). Integers wrap;
/// bf16/f16 accumulate in f32.
template <class T, index_t Rows, index_t Cols, detail::axis_arg A>
[[nodiscard]] detail::reduce_result_t<vec<T, Rows, Cols>, A> sum(const vec<T, Rows, Cols>& v, A axis) {
    return detail::reduce_checked<detail::reduce_kind::sum, A>(v, detail::runtime_axis(axis), "sum");
}
/// sum(v): the sum of all elements, as a (1, 1) vec.
template <class T, index_t Rows, index_t Cols>
[[nodiscard]] vec<T, 1, 1> sum(const vec<T, Rows, Cols>& v) {
    return detail::reduce_checked<detail::reduce_kind::sum, void>(v, 0, "sum");
}
/// max(v, axis) / max(v): the largest element (NaN if any is NaN); OP1 on an empty axis.
template <class T, index_t Rows, index_t Cols, detail::axis_arg A>
[[nodiscard]] detail::reduce_result_t<vec<T, Rows, Cols>, A> max(const vec<T, Rows, Cols>& v, A axis) {
    return detail::reduce_checked<detail::reduce_kind::max, A>(v, detail::runtime_axis(axis), "max");
}
template <class T, index_t Rows, index_t Cols>
[[nodiscard]] vec<T, 1, 1> max(const vec<T, Rows, Cols>& v) {
    return detail::reduce_checked<detail::reduce_kind::max, void>(v, 0, "max");
}
/// min(v, axis) / min(v): the smallest element (NaN if any is NaN); OP1 on an empty axis.
template <class T, index_t Rows, index_t Cols, detail::axis_arg A>
[[nodiscard]] detail::reduce_result_t<vec<T, Rows, Cols>, A> min(const vec<T, Rows, Cols>& v, A axis) {
    return detail::reduce_checked<detail::reduce_kind::min, A>(v, detail::runtime_axis(axis), "min");
}
template <class T, index_t Rows, index_t Cols>
[[nodiscard]] vec<T, 1, 1> min(const vec<T, Rows, Cols>& v) {
    return detail::reduce_checked<detail::reduce_kind::min, void>(v, 0, "min");
}

/// mean(v, axis) / mean(v): the sum times 1/n (floating-point vecs): a sum plus one cheap
/// multiply per output vreg. 1/n stays f32 (not rounded to a bf16 vec's type).
template <class T, index_t Rows, index_t Cols, detail::axis_arg A>
[[nodiscard]] detail::reduce_result_t<vec<T, Rows, Cols>, A> mean(const vec<T, Rows, Cols>& v, A axis) {
    if constexpr (!detail::domain_ok<detail::op_domain::floating, T>()) {
        return {};
    } else {
        int a = 0;
        if constexpr (static_integer<A>)
            a = detail::front_axis(static_bound<A>());
        else
            a = detail::check_axis("mean", static_cast<int>(axis));
        const auto n = static_cast<float>(a == 0 ? v.rows() : v.cols());
        return detail::apply_scalar<detail::op_mul, false>(sum(v, axis), 1.0f / n);
    }
}
template <class T, index_t Rows, index_t Cols>
[[nodiscard]] vec<T, 1, 1> mean(const vec<T, Rows, Cols>& v) {
    if constexpr (!detail::domain_ok<detail::op_domain::floating, T>())
        return {};
    else
        return detail::apply_scalar<detail::op_mul, false>(sum(v), 1.0f / static_cast<float>(v.size()));
}

}  // namespace ptpu
