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
// MXU results (work.mxu_drains, docs/model.md §5): a vec made by dot is marked as an MXU result,
// in both modes, of level one more than the highest level its operands were computed from (a
// vec's level: the highest level of MXU result it was computed from, 0 for loaded values). The
// first op that reads it as vector work (elementwise, where, cast to another type, reductions,
// layout ops, windows) or as another dot's operand waits for the systolic array's fill and drain
// and clears the mark (later readers find the value in registers); the body waits once per level
// (work.mxu_drains is the highest level waited for), since the results of one level can all be
// issued before the first is read. Two uses wait for nothing and keep the mark: store (nothing
// in the body waits for it; the write-back is the pipeline's) and a + b of two same-shape
// operands of which one is an MXU result, e.g. acc + dot(a, b) (Mosaic folds that add into the
// matmul's accumulator, so the sum is again an MXU result). The reverse edge (dot reading a
// freshly computed vector value) waits for no drain [est]: a VALU result is in a vreg a few
// cycles after its op and the MXU takes its operands vreg by vreg.
//
// Dependence chains (work.chain, docs/model.md §5): each vec also carries the work of the longest
// chain of ops that computed it (VALU ops, dot's MXU FLOPs, XLU vregs; not loads and stores,
// which stream). An op's result carries its longest operand's chain plus its own work, and the
// running body keeps the longest chain made (the longer of two: the longer on the call's chip).
//
// Rules of ops/ (ptpu's own ids): OP1 shapes and axes, OP2 dot operand dtypes, OP3 element
// dtypes of the other ops (compile time), OP4 a vec without values used outside timing-only mode.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/extents.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/hw/tiling.hpp"  // vreg_lanes, rows_per_vreg
#include "ptpu/ops/block_values.hpp"
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
/// add costs as much as an 8×128 one (docs/ops.md, "How work is counted").
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

namespace detail {

struct vec_access;

/// OP4: a vec without values was read.
[[noreturn]] PTPU_COMPILED void no_values(const char* where);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void no_values(const char* where) {
    throw error("OP4", where,
                "this vec has a shape and no values: it was computed in timing-only "
                "mode (or default-constructed with a static shape, or moved from)",
                "use values computed in the same mode (timing_only() is false)");
}
#endif

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
        if (has_data_) values_ = storage_type(array_type(rows_, cols_));  // no elements: nothing allocated
    }
    /// A vec holding `values` (not charged: for tests and values built outside ops/). OP1 when
    /// they do not have the static shape.
    explicit vec(array_type values)
        : rows_(values.rows()), cols_(values.cols()), values_(std::move(values)) {
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
        : rows_(o.rows()),
          cols_(o.cols()),
          values_(o.values_),
          has_data_(o.has_data_),
          mxu_result_(o.mxu_result_),
          level_(o.level_),
          chain_(o.chain_) {
        converted_from<R2, C2>();
    }
    template <index_t R2, index_t C2>
    explicit(!detail::shape_converts_implicitly(R2, C2, Rows, Cols))
        vec(vec<T, R2, C2>&& o)  // NOLINT(google-explicit-constructor): static -> dyn
        : rows_(o.rows()),
          cols_(o.cols()),
          values_(std::move(o.values_)),
          has_data_(o.has_data_),
          mxu_result_(o.mxu_result_),
          level_(o.level_),
          chain_(o.chain_) {
        o.has_data_ = false;
        o.mxu_result_ = false;
        converted_from<R2, C2>();
    }
    vec(const vec&) = default;
    vec& operator=(const vec&) = default;
    /// A moved-from vec has no values (OP4 if read), as a timing-only one.
    vec(vec&& o) noexcept
        : rows_(o.rows_),
          cols_(o.cols_),
          values_(std::move(o.values_)),
          has_data_(o.has_data_),
          mxu_result_(o.mxu_result_),
          level_(o.level_),
          chain_(o.chain_) {
        o.has_data_ = false;
        o.mxu_result_ = false;
    }
    vec& operator=(vec&& o) noexcept {
        if (this != &o) {
            rows_ = o.rows_;
            cols_ = o.cols_;
            values_ = std::move(o.values_);
            has_data_ = o.has_data_;
            mxu_result_ = o.mxu_result_;
            level_ = o.level_;
            chain_ = o.chain_;
            o.has_data_ = false;
            o.mxu_result_ = false;
        }
        return *this;
    }
    ~vec() = default;

    // The static extents when there are; with values the storage is the truth otherwise (code
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
    /// The values in the compute type, as an array of their own (OP4 when there are none). A vec
    /// loaded from VMEM reads it in place until then (see detail::block_values): this copies.
    [[nodiscard]] const array_type& array() const {
        require_data("vec::array");
        return values_.array("vec::array");
    }
    [[nodiscard]] array_type& array() {
        require_data("vec::array");
        return values_.array("vec::array");
    }
    /// One value in the compute type, unrounded (for tests and debugging: a TPU would pay a
    /// vector-to-scalar move, which is not charged).
    [[nodiscard]] compute_type operator()(index_t i, index_t j) const {
        require_data("vec(i, j)");
        if (i < 0 || i >= rows() || j < 0 || j >= cols()) out_of_range(i, j);
        const detail::block_view<compute_type> v = values_.read("vec(i, j)");
        return v.data[i * v.stride + j];
    }
    /// v(ds(r, n), ds(c, m)): a window of the value (lax.slice on a value; static extents where
    /// the sizes are, ds(r, c<8>)). Free when it starts on a vreg tile boundary (whole vregs are
    /// picked), otherwise one cheap op per output vreg for the sublane/lane shifts [est]. OP1 when
    /// the window leaves the value.
    template <any_slice SR, any_slice SC>
    [[nodiscard]] vec<T, slice_extent<SR>, slice_extent<SC>> operator()(SR r, SC c) const;

    /// OP4: throws unless the vec holds values.
    void require_data(const char* where) const {
        if (!has_data_) detail::no_values(where);
    }

private:
    template <element_type, index_t, index_t>
    friend class vec;
    friend struct detail::vec_access;
    using storage_type = detail::block_values<compute_type>;

    // What ops make: a vec of `values` (a view or a pending op, see block_values).
    vec(storage_type values, index_t rows, index_t cols)
        : rows_(rows), cols_(cols), values_(std::move(values)) {
        check_static_shape("vec");
    }

    [[noreturn]] void out_of_range(index_t i, index_t j) const;
    [[noreturn]] void static_shape_mismatch(const char* where) const;
    // OP1 on a conversion: at compile time between two static extents, at run time otherwise.
    template <index_t R2, index_t C2>
    void converted_from() const {
#define PTPU_RULE_TEXT_OP1_CONVERSION                                                              \
    "ptpu[OP1] vec: converting between two different static shapes; a vec converts only to its own " \
    "static shape or to dyn extents"
        if constexpr (!(extents_agree(R2, Rows) && extents_agree(C2, Cols))) {
#if PTPU_COMPOSED_MESSAGES
            static_assert(sizeof(compile_error<detail::with_shapes(PTPU_RULE_TEXT_OP1_CONVERSION,
                                                                   {{"from", R2, C2}, {"to", Rows, Cols}})>) > 0);
#else
            static_assert(extents_agree(R2, Rows) && extents_agree(C2, Cols), PTPU_RULE_TEXT_OP1_CONVERSION);
#endif
        }
#undef PTPU_RULE_TEXT_OP1_CONVERSION
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
    storage_type values_;
    bool has_data_ = true;
    // Made by dot and not yet read by vector work (see the header comment, "MXU results").
    mutable bool mxu_result_ = false;
    // The highest level of MXU result the value was computed from (0: none; see the header
    // comment, "MXU results"), and the longest dependence chain that computed it (work.chain).
    mutable int level_ = 0;
    mutable chain_work chain_{};
};

template <class V>
inline constexpr bool is_vec_v = false;
template <class T, index_t R, index_t C>
inline constexpr bool is_vec_v<vec<T, R, C>> = true;

namespace detail {
/// How ops reach a vec's storage: read its values as a plane, make vecs of views and pending ops.
struct vec_access {
    template <class V>
    static auto& storage(const V& v) {
        return v.values_;
    }
    template <class V>
    static auto& storage(V& v) {
        return v.values_;
    }
    /// v's values as a plane (OP4 without values; a pending op is evaluated).
    template <class V>
    static block_view<typename V::compute_type> read(const V& v, const char* where) {
        v.require_data(where);
        return v.values_.read(where);
    }
    template <class V>
    static V make(typename V::storage_type s, index_t rows, index_t cols) {
        return V(std::move(s), rows, cols);
    }
    /// v gave its values to an op (an rvalue operand): it has none left (OP4 if read).
    template <class V>
    static void forget(V& v) {
        v.has_data_ = false;
    }
    /// Marks v as an MXU result (dot's, or a folded acc + dot).
    template <class V>
    static void mark_mxu_result(const V& v) {
        v.mxu_result_ = true;
    }
    template <class V>
    static bool is_mxu_result(const V& v) {
        return v.mxu_result_;
    }
    template <class V>
    static void unmark_mxu_result(const V& v) {
        v.mxu_result_ = false;
    }
    /// The level of v's value: the highest level of MXU result it was computed from.
    template <class V>
    static int level(const V& v) {
        return v.level_;
    }
    template <class V>
    static void set_chain(const V& v, const chain_work& c, int level) {
        v.chain_ = c;
        v.level_ = level;
    }
    template <class V>
    static const chain_work& chain(const V& v) {
        return v.chain_;
    }
    /// An MXU result of level `level` was read (0: none): the running body waits for the drain
    /// of that level, counted once per level (work.mxu_drains is the highest level waited for).
    static void charge_drains(int level) {
        if (kernel_context* k = current_context(); k != nullptr && level > k->body_work.mxu_drains)
            k->body_work.mxu_drains = level;
    }
    /// An op reads v: when v is an MXU result, the running body waits for its level's drain
    /// (work.mxu_drains) and v's values are in registers from then on.
    template <class V>
    static void drain(const V& v) {
        if (!v.mxu_result_) return;
        v.mxu_result_ = false;
        charge_drains(v.level_);
    }
};

/// What an op reads of one operand for its dependence chain: the operand's chain and level
/// (nothing for a scalar).
struct chain_in {
    chain_work w{};
    int level = 0;
};
template <class V>
chain_in chain_of(const V& v) {
    if constexpr (is_vec_v<V>)
        return {vec_access::chain(v), vec_access::level(v)};
    else
        return {};
}

/// The time a chain takes on the running call's chip (as the timing model counts it,
/// call_state::chain), to pick the longer of two. A context no call made has no rates: then MXU
/// FLOPs are weighed against vreg ops as on its chip (or a 128-wide, 4-MXU one), every vreg op
/// as one.
inline double chain_rank(const kernel_context& k, const chain_work& c) {
    if (k.chain != nullptr) return k.chain->seconds(c);
    const double vregs = c.vreg_cheap + c.vreg_medium + c.vreg_expensive + c.xlu_vregs;
    const double flops_per_vreg_op = k.hw != nullptr ? k.hw->peak_bf16_flops / k.hw->vreg_ops_per_s()
                                                     : 2.0 * 128 * 128 * 4 / 4;
    return (c.mxu_passes_flops + c.mxu_int8_ops) / flops_per_vreg_op + vregs;
}

/// The chain of a value an op made from operands `ins`, doing `own` (docs/model.md §5,
/// "Dependence chains"): its longest operand's chain plus own, at the level of their highest
/// (plus one for a dot's result, `mxu`); the running body's chain (work.chain) becomes the
/// longest of all. False, and nothing computed, outside a running body.
PTPU_COMPILED bool result_chain(const chain_work& own, std::initializer_list<chain_in> ins, bool mxu,
                                chain_in& out);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED bool result_chain(const chain_work& own, std::initializer_list<chain_in> ins, bool mxu,
                                chain_in& out) {
    kernel_context* k = current_context();
    if (k == nullptr) return false;
    const chain_in* longest = nullptr;
    double longest_s = -1;
    int level = 0;
    for (const chain_in& in : ins) {
        level = std::max(level, in.level);
        if (in.w == chain_work{}) continue;
        const double s = chain_rank(*k, in.w);
        if (s > longest_s) longest_s = s, longest = &in;
    }
    chain_work c = longest != nullptr ? longest->w : chain_work{};
    c += own;
    out = {c, mxu ? level + 1 : level};
    if (c == k->body_work.chain) return true;
    if (k->body_work.chain == chain_work{} || chain_rank(*k, c) > chain_rank(*k, k->body_work.chain))
        k->body_work.chain = c;
    return true;
}
#endif

/// An op made r from operands `ins`, doing `own`: r's chain and level (see result_chain).
template <class R>
void chain_result(const R& r, const chain_work& own, std::initializer_list<chain_in> ins, bool mxu = false) {
    chain_in c;
    if (result_chain(own, ins, mxu, c)) vec_access::set_chain(r, c.w, c.level);
}

/// The chain work of n vregs of VALU ops of class `cls`.
inline chain_work vpu_chain(vpu_class cls, index_t n) {
    chain_work c;
    const auto v = static_cast<double>(n);
    if (cls == vpu_class::cheap) c.vreg_cheap = v;
    if (cls == vpu_class::medium) c.vreg_medium = v;
    if (cls == vpu_class::expensive) c.vreg_expensive = v;
    return c;
}

/// An op reads v (a vec or a scalar operand) as vector work: see vec_access::drain.
template <class V>
void drain_mxu(const V& v) {
    if constexpr (is_vec_v<V>) vec_access::drain(v);
}
}  // namespace detail

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
PTPU_COMPILED std::string shape_text(index_t rows, index_t cols);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED std::string shape_text(index_t rows, index_t cols) {
    return text("(", rows, ", ", cols, ")");
}
#endif
/// "(8, dyn)": a static shape.
PTPU_COMPILED std::string static_shape_text(index_t rows, index_t cols);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED std::string static_shape_text(index_t rows, index_t cols) {
    const auto one = [](index_t e) { return e == dyn ? std::string("dyn") : std::to_string(e); };
    return text("(", one(rows), ", ", one(cols), ")");
}
#endif

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
inline void charge_xlu(index_t n) {
    if (kernel_context* k = current_context()) k->body_work.xlu_vregs += static_cast<double>(n);
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

/// "axis 2", for the OP1 message of an axis out of range.
constexpr rule_message axis_phrase(index_t axis) {
    rule_message m;
    return m << "axis " << axis;
}
/// OP1 for an axis given as a static integer (c<0>): 0, 1, -1 or -2.
template <index_t Axis>
constexpr bool static_axis_ok() {
    constexpr bool ok = Axis >= -2 && Axis <= 1;
#define PTPU_RULE_TEXT_OP1_AXIS                                                              \
    "ptpu[OP1] axis: a static axis of a 2-D value is out of range; use c<0> (rows) or c<1> " \
    "(cols), or c<-1> / c<-2>"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(
            sizeof(compile_error<with_subject(PTPU_RULE_TEXT_OP1_AXIS, axis_phrase(Axis).view())>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_AXIS);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_AXIS
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
    // (start + size is never formed: either may be near INT64_MAX.)
    if (r.start < 0 || r.size < 0 || r.size > rows() || r.start > rows() - r.size || c.start < 0 || c.size < 0 ||
        c.size > cols() || c.start > cols() - c.size)
        throw error("OP1", "vec(ds, ds)",
                    detail::text("window rows ds(", r.start, ", ", r.size, ") x cols ds(", c.start, ", ", c.size,
                                 ") leaves a vec of shape ", detail::shape_text(rows(), cols())),
                    "keep the window inside the value");
    const detail::chain_in in = detail::chain_of(*this);
    detail::drain_mxu(*this);
    chain_work own;
    if (r.start % rows_per_vreg(element_dtype) != 0 || c.start % vreg_lanes != 0) {
        detail::charge_vpu(vpu_class::cheap, vregs(r.size, c.size, element_dtype));
        own = detail::vpu_chain(vpu_class::cheap, vregs(r.size, c.size, element_dtype));
    }
    if (timing_only()) {
        out_t w(shape_only, r.size, c.size);
        detail::chain_result(w, own, {in});
        return w;
    }
    require_data("vec(ds, ds)");
    const detail::block_view<compute_type> v = values_.read("vec(ds, ds)");
    array_type out = detail::array_cache<compute_type>::take(r.size, c.size);
    detail::copy_plane(out.data(), c.size, v.data + r.start * v.stride + c.start, v.stride, r.size, c.size);
    out_t w(std::move(out));
    detail::chain_result(w, own, {in});
    return w;
}

}  // namespace ptpu
