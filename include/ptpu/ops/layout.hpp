// Defines the ops that move values between vreg positions without arithmetic: broadcast_to,
// transpose and concatenate (windows of a value are vec::operator()(ds, ds)). Their costs are
// ptpu's estimates [est]: one cheap op per output vreg whenever data moves across sublanes or
// lanes, nothing when whole vregs are only renamed.
#pragma once

#include <string>
#include <utility>

#include "ptpu/core/error.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/elementwise.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

/// broadcast_to(v, rows, cols): NumPy broadcasting to exactly (rows, cols) (OP1 otherwise).
/// One cheap op per output vreg (sublane/lane broadcasts); free when the shape is unchanged.
template <class T>
[[nodiscard]] vec<T> broadcast_to(const vec<T>& v, index_t rows, index_t cols) {
    detail::check_extents("broadcast_to", rows, cols);
    const detail::shape2 to{rows, cols};
    if (detail::broadcast_shape("broadcast_to", to, v.shape()) != to)
        detail::throw_broadcast("broadcast_to", v.shape(), to);
    if (v.shape() == to) return v;
    detail::charge_vpu(vpu_class::cheap, vregs(rows, cols, dtype_of<T>));
    if (timing_only()) return vec<T>(shape_only, rows, cols);
    typename vec<T>::array_type tmp;
    return vec<T>(detail::expand(v.array(), to, tmp));
}

/// transpose(v): v.T, through the transpose unit: one cheap op per output vreg [est].
template <class T>
[[nodiscard]] vec<T> transpose(const vec<T>& v) {
    detail::charge_vpu(vpu_class::cheap, vregs(v.cols(), v.rows(), dtype_of<T>));
    if (timing_only()) return vec<T>(shape_only, v.cols(), v.rows());
    return vec<T>(typename vec<T>::array_type(v.array().transpose()));
}

/// concatenate(a, b, axis): a then b along axis 0 (rows) or 1 (cols); the other dim must agree
/// (OP1) and so must the dtypes (OP3). Free when the seam falls on a vreg tile boundary (a's
/// extent along axis is a multiple of the rows per vreg, or of 128 lanes), otherwise one cheap
/// op per output vreg to shift b into place [est].
template <class A, class B>
[[nodiscard]] vec<A> concatenate(const vec<A>& a, const vec<B>& b, int axis) {
    if constexpr (!detail::same_dtype_ok<A, B>()) {
        return {};
    } else {
        axis = detail::check_axis("concatenate", axis);
        const int other = 1 - axis;
        if (a.shape()[other] != b.shape()[other])
            throw error("OP1", "concatenate",
                        detail::text("shapes ", detail::shape_text(a.rows(), a.cols()), " and ",
                                     detail::shape_text(b.rows(), b.cols()), " differ along axis ", other),
                        "concatenate values whose other dim agrees");
        const index_t rows = axis == 0 ? a.rows() + b.rows() : a.rows();
        const index_t cols = axis == 1 ? a.cols() + b.cols() : a.cols();
        const index_t tile = axis == 0 ? rows_per_vreg(dtype_of<A>) : vreg_lanes;
        if (a.shape()[axis] % tile != 0) detail::charge_vpu(vpu_class::cheap, vregs(rows, cols, dtype_of<A>));
        if (timing_only()) return vec<A>(shape_only, rows, cols);
        typename vec<A>::array_type out(rows, cols);
        if (axis == 0) {
            out.topRows(a.rows()) = a.array();
            out.bottomRows(b.rows()) = b.array();
        } else {
            out.leftCols(a.cols()) = a.array();
            out.rightCols(b.cols()) = b.array();
        }
        return vec<A>(std::move(out));
    }
}

}  // namespace ptpu
