// Defines what each elementwise op is (ops/elementwise.hpp): its dtype rules (OP3, one
// static_assert per mistake) and its functor, how it computes on Eigen expressions of the
// compute type, with its cost class.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/vec.hpp"

namespace ptpu::detail {

template <class>
inline constexpr bool always_false = false;

// ---- dtype rules (OP3): one static_assert per mistake, so one message ------------------------

enum class op_domain : unsigned char {
    any,       ///< every element type (==, !=)
    numeric,   ///< integers and floats, not masks (+ - * / < max ...)
    floating,  ///< f32, bf16, f16 (exp, log, ...)
    integer,   ///< integers only (%)
    bitwise    ///< integers and masks (& | ^ ~)
};

template <op_domain D, class T>
constexpr bool domain_ok() {
    if constexpr (D == op_domain::numeric) {
        static_assert(numeric_element<T>,
                      "ptpu[OP3] elementwise op: arithmetic and ordering are not defined on "
                      "masks (vec<bool>); use & | ^ ~ and where(), or cast<std::int32_t>(m)");
        return numeric_element<T>;
    } else if constexpr (D == op_domain::floating) {
        static_assert(floating_element<T>,
                      "ptpu[OP3] elementwise op: this op needs a floating-point vec (f32, bf16, "
                      "f16); cast<float>(v) first");
        return floating_element<T>;
    } else if constexpr (D == op_domain::integer) {
        static_assert(integer_element<T>,
                      "ptpu[OP3] elementwise op: % needs an integer vec; for floats write "
                      "a - floor(a / b) * b");
        return integer_element<T>;
    } else if constexpr (D == op_domain::bitwise) {
        static_assert(!floating_element<T>,
                      "ptpu[OP3] elementwise op: & | ^ ~ need an integer vec or a mask "
                      "(vec<bool>); compare first (v > 0) to get a mask");
        return !floating_element<T>;
    } else {
        return true;
    }
}

template <class A, class B>
constexpr bool same_dtype_ok() {
    static_assert(std::is_same_v<A, B>,
                  "ptpu[OP3] elementwise op: the operands have different dtypes; cast<T>() one "
                  "of them first (ptpu never promotes implicitly)");
    return std::is_same_v<A, B>;
}

template <class T, class S>
constexpr bool scalar_ok() {
    constexpr bool mask_mix = std::is_same_v<T, bool> != std::is_same_v<S, bool>;
    static_assert(!mask_mix,
                  "ptpu[OP3] elementwise op: bool scalars go with masks (vec<bool>) only, and "
                  "masks with bool scalars only; cast<T>() first");
    constexpr bool float_into_int = integer_element<T> && !std::is_integral_v<S>;
    static_assert(mask_mix || !float_into_int,
                  "ptpu[OP3] elementwise op: a floating-point scalar with an integer vec; write "
                  "an integer scalar, or cast<float>(v) first");
    return !mask_mix && !float_into_int;
}

// ---- The functors: how each op computes on Eigen expressions of the compute type -------------

template <class X>
inline constexpr bool int_expr = std::is_same_v<typename X::Scalar, std::int32_t>;

// int32 arithmetic wraps as on the TPU: compute in uint32 (well defined), convert back (C++20
// conversions to signed are modular). Never signed overflow.
template <class X>
auto u32(const X& x) {
    return x.template cast<std::uint32_t>();
}
template <class X>
auto i32(const X& x) {
    return x.template cast<std::int32_t>();
}

// Integer division and remainder by zero and INT_MIN / -1 have no C++ meaning; ptpu follows
// XLA on CPU/GPU: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
struct int_div_fn {
    std::int32_t operator()(std::int32_t a, std::int32_t b) const {
        if (b == 0) return -1;
        if (b == -1) return static_cast<std::int32_t>(0u - static_cast<std::uint32_t>(a));
        return a / b;
    }
};
struct int_rem_fn {
    std::int32_t operator()(std::int32_t a, std::int32_t b) const {
        if (b == 0) return a;
        if (b == -1) return 0;
        return a % b;
    }
};
struct int_abs_fn {
    std::int32_t operator()(std::int32_t a) const {
        return a < 0 ? static_cast<std::int32_t>(0u - static_cast<std::uint32_t>(a)) : a;
    }
};
struct bit_and_fn {
    template <class S>
    S operator()(S a, S b) const {
        return static_cast<S>(a & b);
    }
};
struct bit_or_fn {
    template <class S>
    S operator()(S a, S b) const {
        return static_cast<S>(a | b);
    }
};
struct bit_xor_fn {
    template <class S>
    S operator()(S a, S b) const {
        return static_cast<S>(a ^ b);
    }
};
struct bit_not_fn {
    bool operator()(bool a) const { return !a; }
    std::int32_t operator()(std::int32_t a) const { return ~a; }
};

template <vpu_class C, op_domain D, bool Compares = false>
struct op_traits {
    static constexpr vpu_class cost = C;
    static constexpr op_domain domain = D;
    static constexpr bool compares = Compares;
};

struct op_add : op_traits<vpu_class::cheap, op_domain::numeric> {
    static constexpr const char* name = "a + b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        if constexpr (int_expr<X>)
            return i32(u32(x) + u32(y));
        else
            return x + y;
    }
};
struct op_sub : op_traits<vpu_class::cheap, op_domain::numeric> {
    static constexpr const char* name = "a - b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        if constexpr (int_expr<X>)
            return i32(u32(x) - u32(y));
        else
            return x - y;
    }
};
struct op_mul : op_traits<vpu_class::cheap, op_domain::numeric> {
    static constexpr const char* name = "a * b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        if constexpr (int_expr<X>)
            return i32(u32(x) * u32(y));
        else
            return x * y;
    }
};
struct op_div : op_traits<vpu_class::medium, op_domain::numeric> {
    static constexpr const char* name = "a / b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        if constexpr (int_expr<X>)
            return x.binaryExpr(y, int_div_fn{});
        else
            return x / y;
    }
};
struct op_rem : op_traits<vpu_class::medium, op_domain::integer> {
    static constexpr const char* name = "a % b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x.binaryExpr(y, int_rem_fn{});
    }
};
// maximum/minimum propagate NaN like jnp.maximum (Eigen's default leaves it unspecified).
struct op_max : op_traits<vpu_class::cheap, op_domain::numeric> {
    static constexpr const char* name = "maximum";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        using S = typename X::Scalar;
        return x.binaryExpr(y, Eigen::internal::scalar_max_op<S, S, Eigen::PropagateNaN>());
    }
};
struct op_min : op_traits<vpu_class::cheap, op_domain::numeric> {
    static constexpr const char* name = "minimum";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        using S = typename X::Scalar;
        return x.binaryExpr(y, Eigen::internal::scalar_min_op<S, S, Eigen::PropagateNaN>());
    }
};
struct op_pow : op_traits<vpu_class::medium, op_domain::floating> {
    static constexpr const char* name = "pow";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x.pow(y);
    }
};
struct op_and : op_traits<vpu_class::cheap, op_domain::bitwise> {
    static constexpr const char* name = "a & b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x.binaryExpr(y, bit_and_fn{});
    }
};
struct op_or : op_traits<vpu_class::cheap, op_domain::bitwise> {
    static constexpr const char* name = "a | b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x.binaryExpr(y, bit_or_fn{});
    }
};
struct op_xor : op_traits<vpu_class::cheap, op_domain::bitwise> {
    static constexpr const char* name = "a ^ b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x.binaryExpr(y, bit_xor_fn{});
    }
};
struct op_eq : op_traits<vpu_class::cheap, op_domain::any, true> {
    static constexpr const char* name = "a == b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x == y;
    }
};
struct op_ne : op_traits<vpu_class::cheap, op_domain::any, true> {
    static constexpr const char* name = "a != b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x != y;
    }
};
struct op_lt : op_traits<vpu_class::cheap, op_domain::numeric, true> {
    static constexpr const char* name = "a < b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x < y;
    }
};
struct op_le : op_traits<vpu_class::cheap, op_domain::numeric, true> {
    static constexpr const char* name = "a <= b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x <= y;
    }
};
struct op_gt : op_traits<vpu_class::cheap, op_domain::numeric, true> {
    static constexpr const char* name = "a > b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x > y;
    }
};
struct op_ge : op_traits<vpu_class::cheap, op_domain::numeric, true> {
    static constexpr const char* name = "a >= b";
    template <class X, class Y>
    auto operator()(const X& x, const Y& y) const {
        return x >= y;
    }
};

// Unary functors.
struct op_neg : op_traits<vpu_class::cheap, op_domain::numeric> {
    static constexpr const char* name = "-a";
    template <class X>
    auto operator()(const X& x) const {
        if constexpr (int_expr<X>)
            return i32(-u32(x));
        else
            return -x;
    }
};
struct op_abs : op_traits<vpu_class::cheap, op_domain::numeric> {
    static constexpr const char* name = "abs";
    template <class X>
    auto operator()(const X& x) const {
        if constexpr (int_expr<X>)
            return x.unaryExpr(int_abs_fn{});
        else
            return x.abs();
    }
};
struct op_not : op_traits<vpu_class::cheap, op_domain::bitwise> {
    static constexpr const char* name = "~a";
    template <class X>
    auto operator()(const X& x) const {
        return x.unaryExpr(bit_not_fn{});
    }
};

// The floating-point unary functions, one functor each (Eigen's vectorised kernels).
#define PTPU_OPS_UNARY_FN(fn, eigen_fn, cls)                          \
    struct op_##fn : op_traits<vpu_class::cls, op_domain::floating> { \
        static constexpr const char* name = #fn;                      \
        template <class X>                                            \
        auto operator()(const X& x) const {                           \
            return x.eigen_fn();                                      \
        }                                                             \
    };
PTPU_OPS_UNARY_FN(log, log, medium)
PTPU_OPS_UNARY_FN(log1p, log1p, medium)
PTPU_OPS_UNARY_FN(expm1, expm1, medium)
PTPU_OPS_UNARY_FN(tanh, tanh, medium)
PTPU_OPS_UNARY_FN(reciprocal, inverse, medium)
PTPU_OPS_UNARY_FN(sin, sin, expensive)
PTPU_OPS_UNARY_FN(cos, cos, expensive)
#undef PTPU_OPS_UNARY_FN

// The functions whose Eigen kernels differ from jnp at special values (IEEE 754, and XLA's
// flush of f32 subnormal results to zero on TPU), corrected where they differ:
// - floor / ceil: Eigen's SSE2 emulation loses the sign of a zero result (ceil(-0.5) is -0);
//   a zero result takes x's sign (x * 0 is ±0 for finite x).
// - exp / logistic: Eigen clamps the argument, so exp(-inf) and logistic(-inf) were 2.9e-39;
//   a result below the smallest normal f32 is flushed to 0, as the TPU does (jnp: exactly 0
//   for -inf).
// exp(x) and logistic(x) fall below the smallest normal f32 (2^-126) for x < -126 ln 2; the
// test is on x, so the kernel is evaluated once per element.
inline constexpr float subnormal_exp_below = -87.33654475f;
struct op_floor : op_traits<vpu_class::cheap, op_domain::floating> {
    static constexpr const char* name = "floor";
    template <class X>
    auto operator()(const X& x) const {
        using S = typename X::Scalar;
        return (x.floor() == S(0)).select(x * S(0), x.floor());
    }
};
struct op_ceil : op_traits<vpu_class::cheap, op_domain::floating> {
    static constexpr const char* name = "ceil";
    template <class X>
    auto operator()(const X& x) const {
        using S = typename X::Scalar;
        return (x.ceil() == S(0)).select(x * S(0), x.ceil());
    }
};
struct op_exp : op_traits<vpu_class::medium, op_domain::floating> {
    static constexpr const char* name = "exp";
    template <class X>
    auto operator()(const X& x) const {
        using S = typename X::Scalar;
        return (x < S(subnormal_exp_below)).select(S(0), x.exp());
    }
};
struct op_logistic : op_traits<vpu_class::medium, op_domain::floating> {
    static constexpr const char* name = "logistic";
    template <class X>
    auto operator()(const X& x) const {
        using S = typename X::Scalar;
        return (x < S(subnormal_exp_below)).select(S(0), x.logistic());
    }
};
// sqrt and rsqrt are correctly rounded (std::sqrt per element), not Eigen's fast kernels: those
// start from the CPU's reciprocal-square-root estimate, whose bits differ between x86 vendors
// (rsqrt(4) came out 0.49999997 on one machine and 0.5 on another), and give NaN for sqrt(inf).
// IEEE sqrt gives jnp's special values by itself: sqrt(-0) = -0, rsqrt(±0) = ±inf, rsqrt(inf) = 0.
struct sqrt_fn {
    template <class S>
    S operator()(S v) const {
        return std::sqrt(v);
    }
};
struct rsqrt_fn {
    template <class S>
    S operator()(S v) const {
        return S(1) / std::sqrt(v);
    }
};
struct op_sqrt : op_traits<vpu_class::medium, op_domain::floating> {
    static constexpr const char* name = "sqrt";
    template <class X>
    auto operator()(const X& x) const {
        return x.unaryExpr(sqrt_fn{});
    }
};
struct op_rsqrt : op_traits<vpu_class::medium, op_domain::floating> {
    static constexpr const char* name = "rsqrt";
    template <class X>
    auto operator()(const X& x) const {
        return x.unaryExpr(rsqrt_fn{});
    }
};

}  // namespace ptpu::detail
