// Defines ptpu::vec<T>, a block value held "in vector registers" (what ops compute on), the vreg
// arithmetic every op charges by, and the charging and checking helpers the ops share.
//
// Numerics (ptpu's choice, documented once here):
// - A vec holds its values in a compute type: float for f32/bf16/f16 (the VPU computes in f32),
//   int32 for i32/i16/i8/u8, bool for masks. Values of a bf16/f16 vec may carry f32 precision
//   between ops; they are rounded to nearest even to their type whenever they leave the vec: on
//   store, on cast (also cast<float>) and on entering the MXU (dot). JAX rounds after every op
//   instead, so a chain of bf16 ops can differ from it by the rounding of the intermediates.
// - Narrow integer vecs compute in int32 and wrap (two's complement) on store and cast; int32
//   arithmetic wraps too, as on the TPU (never C++ signed overflow).
// - In timing-only mode (timing_only()) a vec has a shape and no values; every op still checks
//   shapes and charges exactly the same work, and skips the arithmetic.
//
// Rules of ops/ (ptpu's own ids): OP1 shapes and axes, OP2 dot operand dtypes, OP3 element
// dtypes of the other ops (compile time), OP4 a vec without values used outside timing-only mode.
#pragma once

#include <Eigen/Core>

#include <array>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

namespace detail {
template <class T>
struct compute_of {
    using type = std::int32_t;  // i32, i16, i8, u8
};
template <>
struct compute_of<float> {
    using type = float;
};
template <>
struct compute_of<bf16> {
    using type = float;
};
template <>
struct compute_of<f16> {
    using type = float;
};
template <>
struct compute_of<bool> {
    using type = bool;
};
}  // namespace detail

/// The type a vec<T> computes in: float for f32/bf16/f16, int32 for integers, bool for masks.
template <element_type T>
using compute_t = typename detail::compute_of<T>::type;

/// Element types by what the VPU does with them.
template <class T>
concept floating_element = element_type<T> && is_floating(dtype_of<T>);
template <class T>
concept integer_element = element_type<T> && !is_floating(dtype_of<T>) && !std::same_as<T, bool>;
template <class T>
concept numeric_element = floating_element<T> || integer_element<T>;

/// A C++ scalar an op accepts next to a vec: arithmetic types (bool included), bf16 and f16.
template <class S>
concept scalar_value = std::is_arithmetic_v<S> || std::same_as<S, bf16> || std::same_as<S, f16>;

// ---- vregs: the unit every vector op is charged in -------------------------------------------

/// Lanes of one vreg (tpu-model.md §1: 8 sublanes × 128 lanes × 32 bit on every generation).
inline constexpr index_t vreg_lanes = 128;

/// Rows of a block one vreg holds: 8 sublanes of 32-bit words, 16-bit types packed two per word
/// (16 rows), 8-bit types four per word (32 rows). Masks count as their memref type i32
/// (memref_dtype): a mask register covers an 8×128 tile.
constexpr index_t rows_per_vreg(dtype d) {
    return 8 * 32 / bitwidth(memref_dtype(d));
}

/// Vregs a (rows, cols) block of `d` occupies: every vector op is padded to whole vregs, so a 1×1
/// add costs as much as an 8×128 one (tpu-model.md §1, Tiling).
constexpr index_t vregs(index_t rows, index_t cols, dtype d) {
    const index_t rpv = rows_per_vreg(d);
    return ((rows + rpv - 1) / rpv) * ((cols + vreg_lanes - 1) / vreg_lanes);
}

/// Tag of the shape-only constructor.
struct shape_only_t {
    explicit constexpr shape_only_t() = default;
};
inline constexpr shape_only_t shape_only{};

// ---- vec ---------------------------------------------------------------------------------------

/// A 2-D row-major block value "in vector registers". A rank-1 ref loads as 1×n; rank ≥ 3 refs
/// collapse their leading dims into rows. Values live in an Eigen array of compute_t<T>.
template <element_type T>
class vec {
public:
    using value_type = T;
    using compute_type = compute_t<T>;
    using array_type = Eigen::Array<compute_type, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    static constexpr dtype element_dtype = dtype_of<T>;

    /// An empty 0×0 vec.
    vec() = default;
    /// A vec holding `values` (not charged: for tests and values built outside ops/).
    explicit vec(array_type values)
        : rows_(values.rows()), cols_(values.cols()), values_(std::move(values)) {}
    /// A vec with a shape and no values (what timing-only mode computes).
    vec(shape_only_t, index_t rows, index_t cols) : rows_(rows), cols_(cols), has_data_(false) {}

    // With values the array is the truth (code outside ops/ may resize it through array()).
    [[nodiscard]] index_t rows() const { return has_data_ ? values_.rows() : rows_; }
    [[nodiscard]] index_t cols() const { return has_data_ ? values_.cols() : cols_; }
    [[nodiscard]] index_t size() const { return rows() * cols(); }
    [[nodiscard]] std::array<index_t, 2> shape() const { return {rows(), cols()}; }
    /// Vregs this value occupies (the unit its ops are charged in).
    [[nodiscard]] index_t vreg_count() const { return vregs(rows(), cols(), element_dtype); }

    /// False for a vec made in timing-only mode: it has a shape and no values.
    [[nodiscard]] bool has_data() const { return has_data_; }
    /// The values in the compute type (OP4 when there are none).
    [[nodiscard]] const array_type& array() const {
        require_data("vec::array");
        return values_;
    }
    [[nodiscard]] array_type& array() {
        require_data("vec::array");
        return values_;
    }
    /// One value in the compute type, unrounded (for tests and debugging: a TPU would pay a
    /// vector-to-scalar move, which is not charged).
    [[nodiscard]] compute_type operator()(index_t i, index_t j) const {
        require_data("vec(i, j)");
        if (i < 0 || i >= rows() || j < 0 || j >= cols()) out_of_range(i, j);
        return values_(i, j);
    }
    /// v(ds(r, n), ds(c, m)): a window of the value (lax.slice on a value). Free when it starts
    /// on a vreg tile boundary (whole vregs are picked), otherwise one cheap op per output vreg
    /// for the sublane/lane shifts [est]. OP1 when the window leaves the value.
    [[nodiscard]] vec operator()(slice r, slice c) const;

    /// OP4: throws unless the vec holds values.
    void require_data(const char* where) const {
        if (!has_data_)
            throw error("OP4", where,
                        "this vec has a shape and no values: it was computed in timing-only "
                        "mode",
                        "use values computed in the same mode (timing_only() is false)");
    }

private:
    [[noreturn]] void out_of_range(index_t i, index_t j) const;

    index_t rows_ = 0;  // the shape of a vec without values
    index_t cols_ = 0;
    array_type values_;
    bool has_data_ = true;
};

template <class V>
inline constexpr bool is_vec_v = false;
template <class T>
inline constexpr bool is_vec_v<vec<T>> = true;

namespace detail {

// Messages are built by appending: g++ 12 at -O3 misreports `"literal" + std::string` as an
// overlapping memcpy (-Wrestrict, GCC PR105329), which -Werror turns into a build failure.
inline void append_text(std::string& s, std::string_view v) {
    s += v;
}
template <std::integral I>
void append_text(std::string& s, I v) {
    s += std::to_string(v);
}
/// The concatenation of string pieces and integers.
template <class... P>
std::string text(const P&... p) {
    std::string s;
    (append_text(s, p), ...);
    return s;
}

/// "(8, 128)": how messages print a 2-D shape.
inline std::string shape_text(index_t rows, index_t cols) {
    return text("(", rows, ", ", cols, ")");
}

// ---- Charging: one field of the running body's work, no work struct on the hot path ---------

inline void charge_vpu(vpu_class c, index_t n) {
    kernel_context* k = current_context();
    if (k == nullptr) return;
    const auto v = static_cast<double>(n);
    switch (c) {
        case vpu_class::cheap:
            k->body_work.vreg_cheap += v;
            break;
        case vpu_class::medium:
            k->body_work.vreg_medium += v;
            break;
        case vpu_class::expensive:
            k->body_work.vreg_expensive += v;
            break;
    }
}
inline void charge_loads(index_t n) {
    if (kernel_context* k = current_context()) k->body_work.vector_loads += static_cast<double>(n);
}
inline void charge_stores(index_t n) {
    if (kernel_context* k = current_context()) k->body_work.vector_stores += static_cast<double>(n);
}
inline void charge_scalar(index_t n) {
    if (kernel_context* k = current_context()) k->body_work.scalar_ops += static_cast<double>(n);
}

/// OP1: a negative extent asked of an op that makes a vec.
inline void check_extents(const char* where, index_t rows, index_t cols) {
    if (rows < 0 || cols < 0)
        throw error("OP1", where, text("negative shape ", shape_text(rows, cols)), "give rows, cols >= 0");
}

/// OP1: the axis of a 2-D value, 0 (rows) or 1 (cols); -1 and -2 count from the end as in NumPy.
inline int check_axis(const char* where, int axis) {
    if (axis < -2 || axis > 1)
        throw error("OP1", where, text("axis ", axis, " is out of range for a 2-D value"),
                    "use axis 0 (rows) or 1 (cols), or -1 / -2");
    return axis < 0 ? axis + 2 : axis;
}

// ---- Rounding: from the compute type to the nominal type --------------------------------------

template <class T>
struct round_fn {
    compute_t<T> operator()(compute_t<T> x) const {
        if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)
            return static_cast<float>(T(x));
        else if constexpr (integer_element<T>)
            return static_cast<std::int32_t>(static_cast<T>(x));  // wraps (C++20 modular)
        else
            return x;
    }
};

/// True when values of compute type may lie off T's grid (bf16, f16, narrow integers).
template <class T>
inline constexpr bool needs_rounding =
    std::is_same_v<T, bf16> || std::is_same_v<T, f16> || std::is_same_v<T, std::int16_t> ||
    std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t>;

/// The values of `a`, a vec<T>'s array, rounded onto T (an expression; no copy for exact types).
template <class T, class A>
decltype(auto) rounded(const A& a) {  // NOLINT(readability-const-return-type): Eigen expression
    if constexpr (needs_rounding<T>)
        return a.unaryExpr(round_fn<T>{});
    else
        return (a);
}

/// A scalar as a vec<T> sees it: converted to T first (a weakly typed scalar takes the vec's
/// type, as in JAX), then to the compute type.
template <class T, class S>
compute_t<T> scalar_as(S s) {
    if constexpr (std::is_same_v<T, bool>)
        return static_cast<bool>(s);
    else if constexpr (floating_element<T>)
        return round_fn<T>{}(static_cast<float>(s));
    else
        return round_fn<T>{}(static_cast<std::int32_t>(s));
}

}  // namespace detail

template <element_type T>
void vec<T>::out_of_range(index_t i, index_t j) const {
    throw error("OP1", "vec(i, j)",
                detail::text("element (", i, ", ", j, ") is outside a vec of shape ",
                             detail::shape_text(rows(), cols())),
                "keep 0 <= i < rows, 0 <= j < cols");
}

template <element_type T>
vec<T> vec<T>::operator()(slice r, slice c) const {
    if (r.start < 0 || r.size < 0 || r.start + r.size > rows() || c.start < 0 || c.size < 0 ||
        c.start + c.size > cols())
        throw error(
            "OP1", "vec(ds, ds)",
            detail::text("window rows [", r.start, ", ", r.start + r.size, ") x cols [", c.start, ", ",
                         c.start + c.size, ") leaves a vec of shape ", detail::shape_text(rows(), cols())),
            "keep the window inside the value");
    if (r.start % rows_per_vreg(element_dtype) != 0 || c.start % vreg_lanes != 0)
        detail::charge_vpu(vpu_class::cheap, vregs(r.size, c.size, element_dtype));
    if (timing_only()) return vec(shape_only, r.size, c.size);
    require_data("vec(ds, ds)");
    return vec(array_type(values_.block(r.start, c.start, r.size, c.size)));
}

}  // namespace ptpu
