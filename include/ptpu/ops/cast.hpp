// Defines cast<U>(v): a vec converted to element type U (to bf16 and f16 rounded to nearest
// even, from floating point to integers saturated with NaN to 0, between integers wrapped); one
// cheap vreg op per output vreg.
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

// ---- cast --------------------------------------------------------------------------------------

namespace detail {

// One element from T's compute value (already on T's grid) to U's. Float → integer saturates
// to U's range and sends NaN to 0 (ptpu's choice: C++ leaves it undefined, TPUs saturate);
// integer → integer wraps; → bf16/f16 rounds to nearest even; → bool is x != 0.
template <class T, class U>
struct cast_fn {
    compute_t<U> operator()(compute_t<T> x) const {
        if constexpr (std::is_same_v<U, bool>) {
            return x != compute_t<T>{};
        } else if constexpr (floating_element<U>) {
            return round_fn<U>{}(static_cast<float>(x));
        } else if constexpr (floating_element<T>) {
            constexpr float lo = static_cast<float>(std::numeric_limits<U>::min());
            constexpr float hi = static_cast<float>(std::numeric_limits<U>::max());
            if (std::isnan(x)) return 0;
            if (x <= lo) return std::numeric_limits<U>::min();
            if (x >= hi) return std::numeric_limits<U>::max();  // hi may round up: ≥ is safe
            return static_cast<std::int32_t>(x);
        } else {
            return round_fn<U>{}(static_cast<std::int32_t>(x));
        }
    }
};

/// The values of a vec<T> converted to U (one function per pair of dtypes).
template <class T, class U>
typename vec<U>::array_type cast_values(const cmap<compute_t<T>>& x) {
    using A = typename vec<U>::array_type;
    if constexpr (std::is_same_v<T, U>)
        return A(rounded<T>(x));
    else
        return A(rounded<T>(x).unaryExpr(cast_fn<T, U>{}));
}

}  // namespace detail

namespace detail {
template <class T, class U, class Out, class V>
Out cast_checked(const V& v) {
    v.require_data("cast");
    return Out(cast_values<T, U>(values_of(v, "cast")));
}
}  // namespace detail

/// cast<U>(v): convert_element_type. v's values are first rounded onto T (a bf16 vec's f32
/// intermediates are rounded to bf16 even for cast<float>), then converted (see cast_fn).
/// Cheap, one op per vreg of the source; cast<T> of a vec<T> is free (no op on a TPU: an MXU
/// result stays one, ops/vec.hpp).
template <element_type U, class T, index_t Rows, index_t Cols>
[[nodiscard]] vec<U, Rows, Cols> cast(const vec<T, Rows, Cols>& v) {
    using out_t = vec<U, Rows, Cols>;
    const bool mxu_result = detail::vec_access::is_mxu_result(v);
    const detail::chain_in in = detail::chain_of(v);
    chain_work own;
    if constexpr (!std::is_same_v<T, U>) {
        detail::drain_mxu(v);
        detail::charge_vpu(vpu_class::cheap, v.vreg_count());
        own = detail::vpu_chain(vpu_class::cheap, v.vreg_count());
    }
    out_t r = timing_only() ? out_t(shape_only, v.rows(), v.cols()) : detail::cast_checked<T, U, out_t>(v);
    if (std::is_same_v<T, U> && mxu_result) detail::vec_access::mark_mxu_result(r);
    detail::chain_result(r, own, {in});
    return r;
}

}  // namespace ptpu
