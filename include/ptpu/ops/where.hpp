// Defines where(mask, a, b): the elementwise select of two vecs or scalars by a mask, with NumPy
// broadcasting of all three; one cheap vreg op per output vreg, counted in the result's dtype.
#pragma once

#include <Eigen/Core>

#include <type_traits>
#include <utility>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/elementwise.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

// ---- where -------------------------------------------------------------------------------------

namespace detail {

template <class M, class A, class B>
constexpr bool where_ok() {
    static_assert(std::is_same_v<M, bool>,
                  "ptpu[OP3] where: the condition must be a mask (vec<bool>); compare first "
                  "(where(v > 0, a, b))");
    if constexpr (std::is_same_v<M, bool>)
        return same_dtype_ok<A, B>();
    else
        return false;
}

// A scalar then/else arm of where: a (1, 1) value of T's compute type.
template <class T>
struct scalar_arm {
    static constexpr index_t static_rows = 1;
    static constexpr index_t static_cols = 1;
    static constexpr bool is_static = true;
    compute_t<T> c{};
    [[nodiscard]] static shape2 shape() { return {1, 1}; }
};

template <index_t MR, index_t MC, index_t AR, index_t AC, index_t BR, index_t BC>
constexpr bool static_where_ok() {
    constexpr bool ok = broadcastable(MR, AR) && broadcastable(MC, AC) &&
                        broadcastable(broadcast_extent(MR, AR), BR) &&
                        broadcastable(broadcast_extent(MC, AC), BC);
#define PTPU_RULE_TEXT_OP1_WHERE                                                                     \
    "ptpu[OP1] where: the static shapes of the mask and the two values do not broadcast (a scalar is " \
    "(1, 1)); make each dim equal, or 1 (NumPy rules), or broadcast_to() first"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(sizeof(compile_error<with_shapes(PTPU_RULE_TEXT_OP1_WHERE,
                                                       {{"mask", MR, MC}, {"a", AR, AC}, {"b", BR, BC}})>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_WHERE);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_WHERE
    return ok;
}

/// The result type of where(m, a, b) with element type T: the broadcast static shape.
template <class T, class M, class A, class B>
using where_result_t =
    vec<T, broadcast_extent(broadcast_extent(M::static_rows, A::static_rows), B::static_rows),
        broadcast_extent(broadcast_extent(M::static_cols, A::static_cols), B::static_cols)>;

// Branch-free select over contiguous arrays (linear index i), with a scalar arm read at 0. A
// branch on a data-dependent mask mispredicts half the time: Eigen's select() was 8× slower on
// a random mask than this bit blend, which the compiler vectorises.
template <class C, bool ScalarA, bool ScalarB>
struct blend_fn {
    const bool* m;
    const C* a;
    const C* b;
    C operator()(Eigen::Index i) const {
        const C x = a[ScalarA ? 0 : i];
        const C y = b[ScalarB ? 0 : i];
        if constexpr (sizeof(C) == 4) {
            const std::uint32_t k = 0u - static_cast<std::uint32_t>(m[i]);
            return std::bit_cast<C>((std::bit_cast<std::uint32_t>(x) & k) |
                                    (std::bit_cast<std::uint32_t>(y) & ~k));
        } else {
            return m[i] ? x : y;
        }
    }
};

/// The selected values over shape s (one array type per dtype, whatever the static shapes).
template <class A, bool ScalarA, bool ScalarB, class C = typename A::Scalar>
A blend_values(shape2 s, const bool* pm, const C* px, const C* py) {
    return A(A::NullaryExpr(s[0], s[1], blend_fn<C, ScalarA, ScalarB>{pm, px, py}));
}

// Then/else (X, Y) are vecs of T or scalar_arm<T>, each broadcast to the output shape.
template <class T, class M, class X, class Y>
where_result_t<T, M, X, Y> apply_where_values(const M& m, const X& x, const Y& y) {
    using out_t = where_result_t<T, M, X, Y>;
    const char* where = "where";
    shape2 s{out_t::static_rows, out_t::static_cols};
    if constexpr (!(M::is_static && X::is_static && Y::is_static))
        s = broadcast_shape(where, broadcast_shape(where, m.shape(), x.shape()), y.shape());
    drain_mxu(m);
    drain_mxu(x);
    drain_mxu(y);
    charge_vpu(vpu_class::cheap, vregs(s[0], s[1], dtype_of<T>));
    if (timing_only()) return out_t(shape_only, s[0], s[1]);
    constexpr bool vx = is_vec_v<X>;
    constexpr bool vy = is_vec_v<Y>;
    m.require_data(where);
    if constexpr (vx) x.require_data(where);
    if constexpr (vy) y.require_data(where);
    using A = typename out_t::array_type;
    using C = compute_t<T>;
    typename M::array_type tm;
    A tx, ty;
    const bool* pm = expand(m.array(), s, tm).data();
    const C* px = nullptr;
    const C* py = nullptr;
    if constexpr (vx)
        px = expand(x.array(), s, tx).data();
    else
        px = &x.c;
    if constexpr (vy)
        py = expand(y.array(), s, ty).data();
    else
        py = &y.c;
    return out_t(blend_values<A, !vx, !vy>(s, pm, px, py));
}

/// where(m, x, y): the values, then the result's dependence chain (a select per output vreg).
template <class T, class M, class X, class Y>
where_result_t<T, M, X, Y> apply_where(const M& m, const X& x, const Y& y) {
    const chain_in cm = chain_of(m), cx = chain_of(x), cy = chain_of(y);
    where_result_t<T, M, X, Y> r = apply_where_values<T>(m, x, y);
    chain_result(r, vpu_chain(vpu_class::cheap, vregs(r.rows(), r.cols(), dtype_of<T>)), {cm, cx, cy});
    return r;
}

}  // namespace detail

/// where(m, a, b): a where the mask m holds, b elsewhere (select, cheap); m, a and b broadcast
/// (OP1 at compile time where static).
template <class M, index_t MR, index_t MC, class A, index_t AR, index_t AC, class B, index_t BR, index_t BC>
[[nodiscard]] detail::where_result_t<A, vec<M, MR, MC>, vec<A, AR, AC>, vec<B, BR, BC>> where(
    const vec<M, MR, MC>& m, const vec<A, AR, AC>& a, const vec<B, BR, BC>& b) {
    if constexpr (!detail::where_ok<M, A, B>())
        return {};
    else if constexpr (!detail::static_where_ok<MR, MC, AR, AC, BR, BC>())
        return {};
    else
        return detail::apply_where<A>(m, a, b);
}
template <class M, index_t MR, index_t MC, class T, index_t AR, index_t AC, scalar_value S>
[[nodiscard]] detail::where_result_t<T, vec<M, MR, MC>, vec<T, AR, AC>, detail::scalar_arm<T>> where(
    const vec<M, MR, MC>& m, const vec<T, AR, AC>& a, S b) {
    if constexpr (!detail::where_ok<M, T, T>())
        return {};
    else if constexpr (!detail::scalar_ok<T, S>())
        return {};
    else if constexpr (!detail::static_where_ok<MR, MC, AR, AC, 1, 1>())
        return {};
    else
        return detail::apply_where<T>(m, a, detail::scalar_arm<T>{detail::scalar_as<T>(b)});
}
template <class M, index_t MR, index_t MC, class T, index_t BR, index_t BC, scalar_value S>
[[nodiscard]] detail::where_result_t<T, vec<M, MR, MC>, detail::scalar_arm<T>, vec<T, BR, BC>> where(
    const vec<M, MR, MC>& m, S a, const vec<T, BR, BC>& b) {
    if constexpr (!detail::where_ok<M, T, T>())
        return {};
    else if constexpr (!detail::scalar_ok<T, S>())
        return {};
    else if constexpr (!detail::static_where_ok<MR, MC, 1, 1, BR, BC>())
        return {};
    else
        return detail::apply_where<T>(m, detail::scalar_arm<T>{detail::scalar_as<T>(a)}, b);
}

}  // namespace ptpu
