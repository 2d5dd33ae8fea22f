// Defines ptpu::vec<T, Rows, Cols>, a block value held "in vector registers" (what ops compute
// on), the vreg arithmetic every op charges by, and the charging and checking helpers the ops
// share.
//
// Shapes (rule OP1, checked once, where the information is):
// - Rows and Cols are static extents or `dyn` (the default: vec<T> is fully dynamic). load() of a
//   ref with static extents (pallas_call hands bodies such refs) gives a static vec, and every op
//   computes its result's static shape from its operands', so a chain of ops is checked end to
//   end: two static extents that do not fit are a compile error (a static_assert whose message
//   starts with ptpu[OP1]), anything involving a dyn extent is checked at run time (ptpu::error
//   with rule OP1). Mixed shapes, e.g. (8, dyn), are checked per dim.
// - A vec converts implicitly to one with fewer static extents (vec<T, 8, 128> to vec<T>),
//   explicitly (checked at run time) to one with more, and never between different static
//   shapes. The values live in a dynamic Eigen array either way: the static shape is only in the
//   type and costs no storage (and no large fixed-size Eigen types on the stack).
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
#include "ptpu/core/extents.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/hw/tiling.hpp"  // vreg_lanes, rows_per_vreg
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

namespace detail {
/// True when a (from_rows, from_cols) vec converts implicitly to (rows, cols): no extent goes
/// from dyn to static (that takes a run-time check, so an explicit conversion). Two different
/// static extents convert "implicitly" only to reach the static_assert that names the mistake.
constexpr bool shape_converts_implicitly(index_t from_rows, index_t from_cols, index_t rows, index_t cols) {
    return (rows == dyn || from_rows != dyn) && (cols == dyn || from_cols != dyn);
}
}  // namespace detail

/// A 2-D row-major block value "in vector registers". A rank-1 ref loads as 1×n; rank ≥ 3 refs
/// collapse their leading dims into rows. Values live in an Eigen array of compute_t<T>. Rows and
/// Cols are static extents, or dyn (see the header comment).
template <element_type T, index_t Rows = dyn, index_t Cols = dyn>
class vec {
    static_assert((Rows == dyn || Rows >= 0) && (Cols == dyn || Cols >= 0),
                  "ptpu[OP1] vec<T, Rows, Cols>: a static extent must be >= 0; use dyn for a run-time one");

public:
    using value_type = T;
    using compute_type = compute_t<T>;
    using array_type = Eigen::Array<compute_type, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    static constexpr dtype element_dtype = dtype_of<T>;
    /// The static shape (dyn where the extent is known at run time only).
    static constexpr index_t static_rows = Rows;
    static constexpr index_t static_cols = Cols;
    /// True when both extents are static.
    static constexpr bool is_static = Rows != dyn && Cols != dyn;

    /// An empty vec: 0×0 when dynamic; a static shape and no values otherwise (assign to it).
    vec() : rows_(Rows == dyn ? 0 : Rows), cols_(Cols == dyn ? 0 : Cols), has_data_(rows_ * cols_ == 0) {
        if (has_data_) values_.resize(rows_, cols_);  // no elements: nothing allocated
    }
    /// A vec holding `values` (not charged: for tests and values built outside ops/). OP1 when
    /// they do not have the static shape.
    explicit vec(array_type values) : rows_(values.rows()), cols_(values.cols()), values_(std::move(values)) {
        check_static_shape("vec(values)");
    }
    /// A vec with a shape and no values (what timing-only mode computes).
    vec(shape_only_t, index_t rows, index_t cols) : rows_(rows), cols_(cols), has_data_(false) {
        check_static_shape("vec(shape_only)");
    }
    /// From a vec of another static shape: implicit where no static extent is gained, explicit
    /// (checked at run time, OP1) where one is; two different static extents are a compile error
    /// (OP1). An rvalue's values are taken over.
    template <index_t R2, index_t C2>
    explicit(!detail::shape_converts_implicitly(R2, C2, Rows, Cols))
        vec(const vec<T, R2, C2>& o)  // NOLINT(google-explicit-constructor): static -> dyn
        : rows_(o.rows()), cols_(o.cols()), values_(o.values_), has_data_(o.has_data_) {
        converted_from<R2, C2>();
    }
    template <index_t R2, index_t C2>
    explicit(!detail::shape_converts_implicitly(R2, C2, Rows, Cols))
        vec(vec<T, R2, C2>&& o)  // NOLINT(google-explicit-constructor): static -> dyn
        : rows_(o.rows()), cols_(o.cols()), values_(std::move(o.values_)), has_data_(o.has_data_) {
        converted_from<R2, C2>();
    }

    // The static extents when there are; with values the array is the truth otherwise (code
    // outside ops/ may resize a dynamic vec's array through array(), never a static one's).
    [[nodiscard]] index_t rows() const {
        if constexpr (Rows != dyn)
            return Rows;
        else
            return has_data_ ? values_.rows() : rows_;
    }
    [[nodiscard]] index_t cols() const {
        if constexpr (Cols != dyn)
            return Cols;
        else
            return has_data_ ? values_.cols() : cols_;
    }
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
    /// v(ds(r, n), ds(c, m)): a window of the value (lax.slice on a value; static extents where
    /// the sizes are, ds(r, c<8>)). Free when it starts on a vreg tile boundary (whole vregs are
    /// picked), otherwise one cheap op per output vreg for the sublane/lane shifts [est]. OP1 when
    /// the window leaves the value.
    template <any_slice SR, any_slice SC>
    [[nodiscard]] vec<T, slice_extent<SR>, slice_extent<SC>> operator()(SR r, SC c) const;

    /// OP4: throws unless the vec holds values.
    void require_data(const char* where) const {
        if (!has_data_)
            throw error("OP4", where,
                        "this vec has a shape and no values: it was computed in timing-only "
                        "mode (or default-constructed with a static shape)",
                        "use values computed in the same mode (timing_only() is false)");
    }

private:
    template <element_type, index_t, index_t>
    friend class vec;

    [[noreturn]] void out_of_range(index_t i, index_t j) const;
    [[noreturn]] void static_shape_mismatch(const char* where) const;
    // OP1 on a conversion: at compile time between two static extents, at run time otherwise.
    template <index_t R2, index_t C2>
    void converted_from() const {
        static_assert(extents_agree(R2, Rows) && extents_agree(C2, Cols),
                      "ptpu[OP1] vec: converting between two different static shapes (template arguments: "
                      "the source's rows and cols, then the target's); a vec converts only to its own static "
                      "shape or to dyn extents");
        check_static_shape("vec conversion");
    }
    // OP1: a vec made or converted at run time has its static shape.
    void check_static_shape(const char* where) const {
        if constexpr (Rows != dyn || Cols != dyn) {
            const index_t r = has_data_ ? values_.rows() : rows_;
            const index_t c = has_data_ ? values_.cols() : cols_;
            if ((Rows != dyn && r != Rows) || (Cols != dyn && c != Cols)) static_shape_mismatch(where);
        }
    }

    index_t rows_ = 0;  // the shape of a vec without values
    index_t cols_ = 0;
    array_type values_;
    bool has_data_ = true;
};

template <class V>
inline constexpr bool is_vec_v = false;
template <class T, index_t R, index_t C>
inline constexpr bool is_vec_v<vec<T, R, C>> = true;

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
/// "(8, dyn)": a static shape.
inline std::string static_shape_text(index_t rows, index_t cols) {
    const auto one = [](index_t e) { return e == dyn ? std::string("dyn") : std::to_string(e); };
    return text("(", one(rows), ", ", one(cols), ")");
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

// ---- Static shapes: the OP1 predicates the compile-time checks use --------------------------

/// NumPy broadcasting of one dim, as far as it is static: the result's static extent, or dyn
/// when only the run time knows it (dyn against dyn or 1). A static extent other than 1 fixes
/// the result: the other side must be 1 or equal to it (checked at run time if that side is dyn).
constexpr index_t broadcast_extent(index_t a, index_t b) {
    if (a == dyn) return b == dyn || b == 1 ? dyn : b;
    if (b == dyn) return a == 1 ? dyn : a;
    if (a == b || b == 1) return a;
    if (a == 1) return b;
    return dyn;  // no broadcast: the op's static_assert says so; dyn keeps later ops quiet
}
/// False only when both extents are static and do not broadcast.
constexpr bool broadcastable(index_t a, index_t b) {
    return a == dyn || b == dyn || a == b || a == 1 || b == 1;
}
/// The sum of two extents (concatenation), dyn when either is.
constexpr index_t sum_extent(index_t a, index_t b) {
    return a == dyn || b == dyn ? dyn : a + b;
}

/// The static extent an integer argument gives: its value when it is a C<N>, dyn otherwise.
template <class I>
inline constexpr index_t extent_arg = static_integer<I> ? static_bound<I>() : dyn;

/// OP1 for an axis given as a static integer (c<0>): 0, 1, -1 or -2.
template <index_t Axis>
constexpr bool static_axis_ok() {
    constexpr bool ok = Axis >= -2 && Axis <= 1;
    static_assert(ok,
                  "ptpu[OP1] axis: a static axis of a 2-D value is out of range (template argument: the "
                  "axis); use c<0> (rows) or c<1> (cols), or c<-1> / c<-2>");
    return ok;
}
/// A checked static axis counted from the front (0 or 1).
constexpr int front_axis(index_t axis) {
    return static_cast<int>(axis < 0 ? axis + 2 : axis);
}

/// vec type V with element type T instead (same static shape).
template <class T, class V>
using same_shape_t = vec<T, V::static_rows, V::static_cols>;

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

template <element_type T, index_t Rows, index_t Cols>
void vec<T, Rows, Cols>::out_of_range(index_t i, index_t j) const {
    throw error("OP1", "vec(i, j)",
                detail::text("element (", i, ", ", j, ") is outside a vec of shape ",
                             detail::shape_text(rows(), cols())),
                "keep 0 <= i < rows, 0 <= j < cols");
}

template <element_type T, index_t Rows, index_t Cols>
void vec<T, Rows, Cols>::static_shape_mismatch(const char* where) const {
    const index_t r = has_data_ ? values_.rows() : rows_;
    const index_t c = has_data_ ? values_.cols() : cols_;
    throw error("OP1", where,
                detail::text("a value of shape ", detail::shape_text(r, c), " for a vec of static shape ",
                             detail::static_shape_text(Rows, Cols)),
                "give it a value of its static shape, or use a vec with dyn extents");
}

template <element_type T, index_t Rows, index_t Cols>
template <any_slice SR, any_slice SC>
vec<T, slice_extent<SR>, slice_extent<SC>> vec<T, Rows, Cols>::operator()(SR r, SC c) const {
    using out_t = vec<T, slice_extent<SR>, slice_extent<SC>>;
    if (r.start < 0 || r.size < 0 || r.start + r.size > rows() || c.start < 0 || c.size < 0 ||
        c.start + c.size > cols())
        throw error(
            "OP1", "vec(ds, ds)",
            detail::text("window rows [", r.start, ", ", r.start + r.size, ") x cols [", c.start, ", ",
                         c.start + c.size, ") leaves a vec of shape ", detail::shape_text(rows(), cols())),
            "keep the window inside the value");
    if (r.start % rows_per_vreg(element_dtype) != 0 || c.start % vreg_lanes != 0)
        detail::charge_vpu(vpu_class::cheap, vregs(r.size, c.size, element_dtype));
    if (timing_only()) return out_t(shape_only, r.size, c.size);
    require_data("vec(ds, ds)");
    return out_t(array_type(values_.block(r.start, c.start, r.size, c.size)));
}

}  // namespace ptpu
