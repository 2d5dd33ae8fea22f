// Defines the ops that move values between vreg positions without arithmetic: broadcast_to,
// transpose and concatenate (windows of a value are vec::operator()(ds, ds)). Their costs are
// ptpu's estimates [est]: one cheap op per output vreg whenever data moves across sublanes or
// lanes, nothing when whole vregs are only renamed. Static shapes propagate (OP1 at compile time
// where they are static).
#pragma once

#include <string>
#include <utility>

#include "ptpu/core/error.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/elementwise.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

namespace detail {

/// The static extent broadcast_to(v, ...) gives along a dim: the target's when static, v's when
/// that is static and not 1 (the target must then equal it), dyn otherwise.
constexpr index_t broadcast_to_extent(index_t from, index_t to) {
    return to != dyn ? to : (from != 1 ? from : dyn);
}

template <index_t VR, index_t VC, index_t ToR, index_t ToC>
constexpr bool static_broadcast_to_ok() {
    constexpr bool ok = (extents_agree(VR, ToR) || VR == 1) && (extents_agree(VC, ToC) || VC == 1);
#define PTPU_RULE_TEXT_OP1_BROADCAST_TO                                                          \
    "ptpu[OP1] broadcast_to: the vec's static shape does not broadcast to the target shape; make " \
    "each dim of the vec equal the target's, or 1"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(sizeof(compile_error<with_shapes(PTPU_RULE_TEXT_OP1_BROADCAST_TO,
                                                       {{"vec", VR, VC}, {"target", ToR, ToC}})>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_BROADCAST_TO);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_BROADCAST_TO
    return ok;
}

template <int Axis, index_t AR, index_t AC, index_t BR, index_t BC>
constexpr bool static_concatenate_ok() {
    constexpr bool ok = Axis == 0 ? extents_agree(AC, BC) : extents_agree(AR, BR);
#define PTPU_RULE_TEXT_OP1_CONCATENATE                                                              \
    "ptpu[OP1] concatenate: the static shapes differ along the other axis; concatenate values whose " \
    "other dim agrees"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(sizeof(compile_error<with_shapes(PTPU_RULE_TEXT_OP1_CONCATENATE,
                                                       {{Axis == 0 ? "along axis 0: a" : "along axis 1: a", AR, AC},
                                                        {"b", BR, BC}})>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_CONCATENATE);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_CONCATENATE
    return ok;
}

/// The extent two values agree on: a static one if either is static, dyn if they differ (the
/// static_assert names that; nothing after it fails again).
constexpr index_t agreed_extent(index_t a, index_t b) {
    return !extents_agree(a, b) ? dyn : a != dyn ? a : b;
}

/// The result type of concatenate(a, b, c<Axis>): dyn along an axis that is out of range.
template <class A, int Axis, index_t AR, index_t AC, index_t BR, index_t BC>
using concatenate_result_t = std::conditional_t<
    Axis == 0, vec<A, sum_extent(AR, BR), agreed_extent(AC, BC)>,
    std::conditional_t<Axis == 1, vec<A, agreed_extent(AR, BR), sum_extent(AC, BC)>, vec<A>>>;

template <class A, class VA, class VB>
vec<A> concatenate_values(const VA& a, const VB& b, int axis) {
    axis = check_axis("concatenate", axis);
    const int other = 1 - axis;
    if (a.shape()[other] != b.shape()[other])
        throw error("OP1", "concatenate",
                    text("shapes ", shape_text(a.rows(), a.cols()), " and ", shape_text(b.rows(), b.cols()),
                         " differ along axis ", other),
                    "concatenate values whose other dim agrees");
    const index_t rows = axis == 0 ? a.rows() + b.rows() : a.rows();
    const index_t cols = axis == 1 ? a.cols() + b.cols() : a.cols();
    const index_t tile = axis == 0 ? rows_per_vreg(dtype_of<A>) : vreg_lanes;
    drain_mxu(a);
    drain_mxu(b);
    if (a.shape()[axis] % tile != 0) charge_vpu(vpu_class::cheap, vregs(rows, cols, dtype_of<A>));
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

/// concatenate_values, then the result's dependence chain (its op when the seam moves vregs).
template <class A, class VA, class VB>
vec<A> concatenate(const VA& a, const VB& b, int axis) {
    const chain_in ca = chain_of(a), cb = chain_of(b);
    vec<A> r = concatenate_values<A>(a, b, axis);
    const index_t tile = check_axis("concatenate", axis) == 0 ? rows_per_vreg(dtype_of<A>) : vreg_lanes;
    const chain_work own = a.shape()[check_axis("concatenate", axis)] % tile != 0
                               ? vpu_chain(vpu_class::cheap, vregs(r.rows(), r.cols(), dtype_of<A>))
                               : chain_work{};
    chain_result(r, own, {ca, cb});
    return r;
}

}  // namespace detail

/// broadcast_to(v, rows, cols): NumPy broadcasting to exactly (rows, cols) (OP1 otherwise: at
/// compile time where v's extent and the target's are static, c<N> giving a static target).
/// One cheap op per output vreg (sublane/lane broadcasts); free when the shape is unchanged.
template <class T, index_t VR, index_t VC, integer Rows, integer Cols>
[[nodiscard]] vec<T, detail::broadcast_to_extent(VR, detail::extent_arg<Rows>),
                  detail::broadcast_to_extent(VC, detail::extent_arg<Cols>)>
broadcast_to(const vec<T, VR, VC>& v, Rows rows_arg, Cols cols_arg) {
    constexpr index_t to_r = detail::extent_arg<Rows>;
    constexpr index_t to_c = detail::extent_arg<Cols>;
    using out_t = vec<T, detail::broadcast_to_extent(VR, to_r), detail::broadcast_to_extent(VC, to_c)>;
    if constexpr (!detail::static_broadcast_to_ok<VR, VC, to_r, to_c>()) {
        return {};
    } else {
        const index_t rows = value_of(rows_arg);
        const index_t cols = value_of(cols_arg);
        detail::check_extents("broadcast_to", rows, cols);
        const detail::shape2 to{rows, cols};
        if (detail::broadcast_shape("broadcast_to", to, v.shape()) != to)
            detail::throw_broadcast("broadcast_to", v.shape(), to);
        if constexpr (detail::fits<vec<T, VR, VC>, out_t::static_rows, out_t::static_cols>)
            if (v.shape() == to) return out_t(v);  // a copy: an MXU result stays one
        const detail::chain_in in = detail::chain_of(v);
        detail::drain_mxu(v);
        detail::charge_vpu(vpu_class::cheap, vregs(rows, cols, dtype_of<T>));
        const chain_work own = detail::vpu_chain(vpu_class::cheap, vregs(rows, cols, dtype_of<T>));
        if (timing_only()) {
            out_t r(shape_only, rows, cols);
            detail::chain_result(r, own, {in});
            return r;
        }
        typename out_t::array_type tmp;
        out_t r(detail::expand(v.array(), to, tmp));
        detail::chain_result(r, own, {in});
        return r;
    }
}

/// transpose(v): v.T, through the transpose unit (XLU): each output vreg passes it once
/// (work.xlu_vregs; Mosaic lowers a transpose to the XLU, docs/model.md §5, "Transposes").
template <class T, index_t VR, index_t VC>
[[nodiscard]] vec<T, VC, VR> transpose(const vec<T, VR, VC>& v) {
    using out_t = vec<T, VC, VR>;
    const detail::chain_in in = detail::chain_of(v);
    detail::drain_mxu(v);
    const index_t n = vregs(v.cols(), v.rows(), dtype_of<T>);
    detail::charge_xlu(n);
    chain_work own;
    own.xlu_vregs = static_cast<double>(n);
    out_t r = timing_only() ? out_t(shape_only, v.cols(), v.rows())
                            : out_t(typename out_t::array_type(v.array().transpose()));
    detail::chain_result(r, own, {in});
    return r;
}

/// concatenate(a, b, axis): a then b along axis 0 (rows) or 1 (cols); the other dim must agree
/// (OP1) and so must the dtypes (OP3). Free when the seam falls on a vreg tile boundary (a's
/// extent along axis is a multiple of the rows per vreg, or of 128 lanes), otherwise one cheap
/// op per output vreg to shift b into place [est]. A run-time axis gives a dynamic shape; a
/// static one (c<0>, c<1>) a static shape where a's and b's are, checked at compile time.
template <class A, index_t AR, index_t AC, class B, index_t BR, index_t BC>
[[nodiscard]] vec<A> concatenate(const vec<A, AR, AC>& a, const vec<B, BR, BC>& b, int axis) {
    if constexpr (!detail::same_dtype_ok<A, B>())
        return {};
    else
        return detail::concatenate<A>(a, b, axis);
}
template <class A, index_t AR, index_t AC, class B, index_t BR, index_t BC, static_integer Axis>
[[nodiscard]] detail::concatenate_result_t<A, detail::front_axis(static_bound<Axis>()), AR, AC, BR, BC>
concatenate(const vec<A, AR, AC>& a, const vec<B, BR, BC>& b, Axis) {
    constexpr int axis = detail::front_axis(static_bound<Axis>());
    using out_t = detail::concatenate_result_t<A, axis, AR, AC, BR, BC>;
    if constexpr (!detail::static_axis_ok<static_bound<Axis>()>())
        return out_t{};
    else if constexpr (!detail::same_dtype_ok<A, B>())
        return out_t{};
    else if constexpr (!detail::static_concatenate_ok<axis, AR, AC, BR, BC>())
        return out_t{};
    else
        return out_t(detail::concatenate<A>(a, b, axis));
}

}  // namespace ptpu
