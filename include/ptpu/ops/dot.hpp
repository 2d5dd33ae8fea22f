// Defines dot(a, b, dot_options): the block matmul on the MXU (jnp.dot / lax.dot_general with
// one contracting dim), its TPU numerics per precision, and its charge in padded MXU FLOPs.
//
// Numerics (what a TPU computes; the math itself is Eigen's GEMM):
// - f32 operands, precision::default_: each input rounded to bf16 (RNE), products exact, summed
//   in f32: one bf16 MXU pass.
// - f32, precision::high (bf16x3): x = hi + lo with hi = bf16(x), lo = bf16(x - hi); the result
//   sums hi·hi + hi·lo + lo·hi in f32 (the lo·lo term is dropped): 3 passes.
// - f32, precision::highest: a full f32 product; charged as the 6 bf16 passes a TPU runs
//   (docs/ops.md, "dot"), whose result agrees with f32 to within a few ulps.
// - f16 operands are converted to f32 (exactly) and follow the f32 rules, as XLA does on TPU.
// - bf16 operands: one pass whatever the precision; exact products summed in f32.
// - int8 operands: summed in int32, charged to the MXU's int8 rate.
// The result is a vec<float> (vec<int32_t> for int8); preferred = preferred<bf16> or
// preferred<f16> rounds its values to that type once at the end (the MXU still accumulates in
// f32): cast<bf16>(r) then gives a vec<bf16> exactly, for one cheap op as on a TPU.
// - acc + dot(a, b), acc a vec loaded from a ref (the accumulator of a blocked matmul): the
//   products are summed into acc's values, as Mosaic folds that add into the matmul's
//   accumulator, by one GEMM run where the sum is stored. Sums are in f32 in the GEMM's order
//   (the same as rounding dot(a, b) first and adding it, when the GEMM's depth blocking covers
//   K, as for 512 on the project's machines; otherwise they differ in the last bits).
// - On the CPU the one-pass product rounds each operand once into cached buffers (O(n²) next to
//   the O(n³) GEMM) and, inside a body, is pending until read or stored (ops/vec.hpp).
//
// Shapes (OP1): with no options or options given as a template argument (dot<opts>(a, b)) the
// transposes are known at compile time, so static contracting dims are checked then and the
// result (M, N) is static where M and N are; options given at run time are checked at run time.
//
// Cost: K and N padded up to a multiple of the chip's mxu_dim (128 without a chip), M to the
// operand's sublane tile and at least the rows one weight tile takes to latch (mxu_charge_of),
// 2·M'·N'·K' FLOPs per pass into mxu_passes_flops (int8: mxu_int8_ops); transpose_a: a's vregs
// through the transpose unit (work.xlu_vregs), transpose_b nothing more; a and b's vregs as
// vector loads (pushed into the MXU once, whatever the passes [est]); the result's vregs are
// popped through the bundle's matrix pop slot, not the vector store slot, and never charged
// (docs/model.md §5, "Slots": one pop a cycle never outlasts the product). The result is an MXU result: the
// first vector op (or dot) that reads it charges one work.mxu_drains, a store or the
// acc + dot(a, b) fold none (ops/vec.hpp, "MXU results"; docs/model.md §5).
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

/// lax.Precision for f32 operands: default_ one bf16 pass, high bf16x3, highest ~f32 (6 passes).
enum class precision : unsigned char { default_, high, highest };

/// An element type named by its type, for dot_options::preferred: `preferred<bf16>`. Only a type
/// makes one (no dtype enumerator); `value` is public so that dot_options stays a template argument.
struct preferred_type {
    dtype value;
    template <element_type T>
    consteval explicit preferred_type(std::type_identity<T>) : value(dtype_of<T>) {}
    friend constexpr bool operator==(preferred_type, preferred_type) = default;
};
/// dot's preferred element type T (lax's preferred_element_type): float (the default), bf16 or
/// f16 for floating operands, std::int32_t for int8 ones (OP2 otherwise).
template <element_type T>
inline constexpr preferred_type preferred{std::type_identity<T>{}};

/// The options of dot, as lax.dot_general's: transpose_a / transpose_b contract a's dim 0 / b's
/// dim 1 instead (a is stored (K, M) / b is stored (N, K)); preferred is the result element type
/// (preferred_element_type: preferred<float>, or preferred<bf16> / preferred<f16> to round the
/// f32 accumulation once), e.g. dot_options{.transpose_b = true, .preferred = preferred<bf16>}.
struct dot_options {
    bool transpose_a = false;
    bool transpose_b = false;
    precision prec = precision::default_;
    preferred_type preferred = ptpu::preferred<float>;
};

namespace detail {

template <class T>
using dot_acc_t = std::conditional_t<integer_element<T>, std::int32_t, float>;

template <class A, class B>
constexpr bool dot_ok() {
    if constexpr (!std::is_same_v<A, B>) {
        static_assert(std::is_same_v<A, B>,
                      "ptpu[OP2] dot: the operands have different dtypes; cast<T>() one of "
                      "them so both are f32, bf16, f16 or int8");
        return false;
    } else if constexpr (std::is_same_v<A, bool>) {
        static_assert(!std::is_same_v<A, bool>,
                      "ptpu[OP2] dot: masks (vec<bool>) do not go through the MXU; "
                      "cast<float>(m) first");
        return false;
    } else {
        constexpr bool ok = floating_element<A> || std::is_same_v<A, std::int8_t>;
        static_assert(ok,
                      "ptpu[OP2] dot: the MXU takes f32, bf16, f16 or int8 operands; "
                      "cast<float>(v) or cast<std::int8_t>(v) first");
        return ok;
    }
}

/// bf16 MXU passes of one product: 1 for bf16 (and int8, at its own rate); f32 and f16 by
/// precision: 1, 3 or 6 (docs/ops.md, "dot").
constexpr int mxu_passes(dtype d, precision p) {
    if (d != dtype::f32 && d != dtype::f16) return 1;
    switch (p) {
        case precision::default_:
            return 1;
        case precision::high:
            return 3;
        case precision::highest:
            return 6;
    }
    return 1;
}

using mxu_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using mxu_int_matrix = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// An operand as the MXU sees it: transposed into (M, K) / (K, N) orientation, each element
// mapped by f (rounding, splitting), evaluated once.
template <class M, class X, class F>
M mxu_operand(const X& x, bool transpose, F f) {
    if (transpose) return x.transpose().unaryExpr(f).matrix();
    return x.unaryExpr(f).matrix();
}

struct bf16_hi_fn {
    float operator()(float x) const { return round_fn<bf16>{}(x); }
};
struct bf16_lo_fn {
    float operator()(float x) const { return round_fn<bf16>{}(x - round_fn<bf16>{}(x)); }
};
template <class T>
struct exact_fn {  // onto T's grid (a bf16/f16 vec may carry f32 intermediates), else as is
    compute_t<T> operator()(compute_t<T> x) const { return round_fn<T>{}(x); }
};

/// A vec's values as a read-only Eigen map, in place.
template <class C>
using dot_map = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                           Eigen::OuterStride<>>;

/// Rounds a rows × cols plane of floats to bf16 (RNE, kept as floats) into the contiguous `out`:
/// float_to_bf16_bits (core/dtype.hpp) on whole rows, written so the compiler vectorises it (the
/// per-element bf16 conversion was most of a blocked matmul's overhead). A NaN keeps its high
/// half with the quiet bit set, as there.
inline void round_plane_to_bf16(float* out, const float* in, index_t stride, index_t rows, index_t cols) {
    for (index_t i = 0; i < rows; ++i) {
        const float* src = in + i * stride;
        float* dst = out + i * cols;
        for (index_t j = 0; j < cols; ++j) {
            const auto u = std::bit_cast<std::uint32_t>(src[j]);
            const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF'0000u;
            const std::uint32_t quiet = (u & 0xFFFF'0000u) | 0x0040'0000u;
            dst[j] = std::bit_cast<float>((u & 0x7FFF'FFFFu) > 0x7F80'0000u ? quiet : rounded);
        }
    }
}

/// The one-pass product's GEMM (block_values' product_fn): out (= or +=) lhs · rhs, lhs (m × k)
/// and rhs (k × n) contiguous, out with row stride os. A template so that only translation units
/// that call dot instantiate Eigen's GEMM (C is float).
template <class C>
void bf16_pass_gemm(C* out, index_t os, index_t m, index_t n, index_t k, const C* lhs, const C* rhs,
                    bool accumulate) {
    using M = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<M, 0, Eigen::OuterStride<>> o(out, m, n, Eigen::OuterStride<>(os));
    const Eigen::Map<const M> l(lhs, m, k), r(rhs, k, n);
    if (accumulate)
        o.noalias() += l * r;
    else
        o.noalias() = l * r;
}

/// True when dot takes its one-pass fast path: f32 at DEFAULT precision or bf16, no transposes,
/// an f32 result.
template <class T>
bool one_pass_fast(const dot_options& o) {
    constexpr bool bf16_grid = std::is_same_v<T, float> || std::is_same_v<T, bf16>;
    return bf16_grid && !o.transpose_a && !o.transpose_b && o.preferred.value == dtype::f32 &&
           (dtype_of<T> == dtype::bf16 || o.prec == precision::default_);
}

// The product's values. It takes the operands' planes, not their vec types, so it is compiled
// once per dtype whatever the static shapes (the GEMM is most of what ops cost to compile).
// a is (ar, ac) and b (br, bc) as stored; m, n, k are the product's dims after the transposes.
template <class T>
typename vec<dot_acc_t<T>>::array_type dot_values(const block_view<compute_t<T>>& pa, index_t ar, index_t ac,
                                                  const block_view<compute_t<T>>& pb, index_t br, index_t bc,
                                                  const dot_options& o, index_t m, index_t n, index_t k) {
    using R = typename vec<dot_acc_t<T>>::array_type;
    using C = compute_t<T>;
    const dot_map<C> x(pa.data, ar, ac, Eigen::OuterStride<>(pa.stride));
    const dot_map<C> y(pb.data, br, bc, Eigen::OuterStride<>(pb.stride));
    R out = array_cache<dot_acc_t<T>>::take(m, n);
    if constexpr (std::is_same_v<T, std::int8_t>) {
        const auto lhs = mxu_operand<mxu_int_matrix>(x, o.transpose_a, exact_fn<T>{});
        const auto rhs = mxu_operand<mxu_int_matrix>(y, o.transpose_b, exact_fn<T>{});
        out.matrix().noalias() = lhs * rhs;
    } else if (one_pass_fast<T>(o)) {
        // One bf16 pass, the common case: each operand rounded once into a cached buffer (for a
        // bf16 vec that is also its rounding onto bf16), then one GEMM: O(n²) next to O(n³).
        auto lhs = array_cache<float>::take(m, k);
        auto rhs = array_cache<float>::take(k, n);
        round_plane_to_bf16(lhs.data(), pa.data, pa.stride, m, k);
        round_plane_to_bf16(rhs.data(), pb.data, pb.stride, k, n);
        bf16_pass_gemm<float>(out.data(), n, m, n, k, lhs.data(), rhs.data(), false);
        array_cache<float>::give(lhs);
        array_cache<float>::give(rhs);
    } else if (dtype_of<T> == dtype::bf16 || o.prec == precision::default_) {
        // One bf16 pass: bf16 inputs (or f32/f16 rounded to bf16), exact products, f32 sums.
        const auto hi_fn = [](float v) { return bf16_hi_fn{}(exact_fn<T>{}(v)); };
        const auto lhs = mxu_operand<mxu_matrix>(x, o.transpose_a, hi_fn);
        const auto rhs = mxu_operand<mxu_matrix>(y, o.transpose_b, hi_fn);
        out.matrix().noalias() = lhs * rhs;
    } else if (o.prec == precision::high) {
        // bf16x3 as one GEMM over a 3K contraction: [hi hi lo] · [hi; lo; hi].
        const auto hi_fn = [](float v) { return bf16_hi_fn{}(exact_fn<T>{}(v)); };
        const auto lo_fn = [](float v) { return bf16_lo_fn{}(exact_fn<T>{}(v)); };
        mxu_matrix lhs(m, 3 * k), rhs(3 * k, n);
        lhs.leftCols(k) = mxu_operand<mxu_matrix>(x, o.transpose_a, hi_fn);
        lhs.middleCols(k, k) = lhs.leftCols(k);
        lhs.rightCols(k) = mxu_operand<mxu_matrix>(x, o.transpose_a, lo_fn);
        rhs.topRows(k) = mxu_operand<mxu_matrix>(y, o.transpose_b, hi_fn);
        rhs.middleRows(k, k) = mxu_operand<mxu_matrix>(y, o.transpose_b, lo_fn);
        rhs.bottomRows(k) = rhs.topRows(k);
        out.matrix().noalias() = lhs * rhs;
    } else {
        const auto lhs = mxu_operand<mxu_matrix>(x, o.transpose_a, exact_fn<T>{});
        const auto rhs = mxu_operand<mxu_matrix>(y, o.transpose_b, exact_fn<T>{});
        out.matrix().noalias() = lhs * rhs;
    }
    if constexpr (!std::is_same_v<T, std::int8_t>) {
        if (o.preferred.value == dtype::bf16) out = out.unaryExpr(round_fn<bf16>{});
        if (o.preferred.value == dtype::f16) out = out.unaryExpr(round_fn<f16>{});
    }
    return out;
}

template <class T>
void check_preferred(const dot_options& o) {
    const dtype p = o.preferred.value;
    if constexpr (integer_element<T>) {
        if (p != dtype::f32 && p != dtype::i32)
            throw error("OP2", "dot",
                        text("preferred ", name(p), " with int8 operands: the MXU accumulates int8 in int32"),
                        "leave preferred at its default or set preferred<std::int32_t>");
    } else {
        if (!is_floating(p))
            throw error("OP2", "dot", text("preferred ", name(p), " with floating-point operands"),
                        "use preferred<float> (the default), preferred<bf16> or preferred<f16>");
    }
}

// The products' values do not depend on the kernel body or the static shapes, only on the dtype:
// with PTPU_SEPARATE_RUNTIME they (and Eigen's GEMMs under them) are compiled once, in
// ptpu::runtime, for every dtype dot takes, and kernels' translation units only call them.
#define PTPU_DOT_VALUES_OF(T)                                                                             \
    PTPU_INSTANTIATED(typename vec<dot_acc_t<T>>::array_type dot_values<T>(                                \
        const block_view<compute_t<T>>&, index_t, index_t, const block_view<compute_t<T>>&, index_t, index_t, \
        const dot_options&, index_t, index_t, index_t))
PTPU_DOT_VALUES_OF(float)
PTPU_DOT_VALUES_OF(bf16)
PTPU_DOT_VALUES_OF(f16)
PTPU_DOT_VALUES_OF(std::int8_t)
PTPU_INSTANTIATED(void bf16_pass_gemm<float>(float*, index_t, index_t, index_t, index_t, const float*, const float*, bool))
#undef PTPU_DOT_VALUES_OF

// ---- Static shapes (OP1) ---------------------------------------------------------------------

/// The static (M, K) of a and (K, N) of b under the transposes, and the result's static shape.
template <bool TA, bool TB, class VA, class VB>
struct dot_shape {
    static constexpr index_t m = TA ? VA::static_cols : VA::static_rows;
    static constexpr index_t k = TA ? VA::static_rows : VA::static_cols;
    static constexpr index_t kb = TB ? VB::static_cols : VB::static_rows;
    static constexpr index_t n = TB ? VB::static_rows : VB::static_cols;
};

template <bool TA, bool TB, index_t AR, index_t AC, index_t BR, index_t BC>
constexpr bool static_dot_ok() {
    constexpr index_t k = TA ? AR : AC;
    constexpr index_t kb = TB ? BC : BR;
    constexpr bool ok = extents_agree(k, kb);
#define PTPU_RULE_TEXT_OP1_DOT                                                                        \
    "ptpu[OP1] dot: the static contracting dims of a and b differ; contract a (M, K) with b (K, N), or " \
    "set transpose_a / transpose_b"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(sizeof(compile_error<with_shapes(PTPU_RULE_TEXT_OP1_DOT,
                                                       {{TA ? "a (transposed)" : "a", AR, AC},
                                                        {TB ? "b (transposed)" : "b", BR, BC}})>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_DOT);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_DOT
    return ok;
}

/// The extent of a dim picked by a run-time transpose flag: static only when both choices are
/// the same static extent.
constexpr index_t either_extent(index_t a, index_t b) {
    return a == b ? a : dyn;
}

/// The result type of dot<opts>(a, b): (M, N), static where they are; all dyn when the static
/// contracting dims differ (the static_assert names that; nothing after it fails again).
template <class A, bool TA, bool TB, class VA, class VB, class S = dot_shape<TA, TB, VA, VB>>
using static_dot_result_t =
    std::conditional_t<extents_agree(S::k, S::kb), vec<dot_acc_t<A>, S::m, S::n>, vec<dot_acc_t<A>>>;
template <class A, class VA, class VB>
using runtime_dot_result_t = vec<dot_acc_t<A>, either_extent(VA::static_rows, VA::static_cols),
                                 either_extent(VB::static_rows, VB::static_cols)>;

/// What one product costs the MXU (docs/model.md §5, "The MXU's tiles"). Mosaic lowers a dot as
/// a loop over (K, N) tiles of mxu_dim × mxu_dim: K and N are padded up to a multiple of
/// mxu_dim, M only to the operand's sublane tile (8 rows of 32-bit values, 16 of 16-bit, 32 of
/// 8-bit), as the LHS streams through each latched tile one row per cycle [src: Mosaic's
/// tpu_matmul_rule, apply_vector_layout.cc]. Latching a tile's mxu_dim² bf16 weights takes
/// mxu_dim² · 2 / 4096 vreg pushes at chip::mxu_push_vregs_per_cycle [est]; the next tile
/// latches while the rows of the last stream, so a tile costs at least that many rows' time.
struct mxu_charge {
    double rows = 0;   ///< M as the MXU streams it: padded to the sublane tile, at least the latch
    double flops = 0;  ///< 2 · rows · K' · N'
};
inline mxu_charge mxu_charge_of(const chip* hw, dtype d, index_t m, index_t n, index_t k) {
    const index_t dim = hw != nullptr && hw->mxu_dim > 0 ? hw->mxu_dim : 128;
    const double push = hw != nullptr ? hw->mxu_push_vregs_per_cycle : 1.0;
    const auto up = [](index_t e, index_t t) { return static_cast<double>((e + t - 1) / t * t); };
    const double latch = static_cast<double>(dim) * static_cast<double>(dim) * 2 / 4096 / push;
    mxu_charge c;
    c.rows = m > 0 ? std::max(up(m, rows_per_vreg(d)), latch) : 0.0;
    c.flops = 2 * c.rows * up(n, dim) * up(k, dim);
    return c;
}

/// The product, charged, with the contracting dims checked at run time (OP1) unless `checked`
/// (both static and checked at compile time). Compiled once per dtype (with
/// PTPU_SEPARATE_RUNTIME in ptpu::runtime, the end of this header), whatever the static shapes.
/// One operand of a product, whatever its vec type: its values (if any), shape and chain.
template <class A>
struct dot_operand {
    const block_values<compute_t<A>>* values;
    index_t rows, cols;
    bool has_data;
    chain_in chain;
    [[nodiscard]] index_t vreg_count() const { return vregs(rows, cols, dtype_of<A>); }
    /// The values as a plane (OP4 without values; a pending op is evaluated).
    [[nodiscard]] block_view<compute_t<A>> read() const {
        if (!has_data) no_values("dot");
        return values->read("dot");
    }
};
template <class A, class V>
dot_operand<A> dot_operand_of(const V& v) {
    return {&vec_access::storage(v), v.rows(), v.cols(), v.has_data(), chain_of(v)};
}

template <class A>
vec<dot_acc_t<A>> dot_product(const dot_operand<A>& a, const dot_operand<A>& b, const dot_options& o,
                              bool checked) {
    using R = dot_acc_t<A>;
    const index_t m = o.transpose_a ? a.cols : a.rows;
    const index_t k = o.transpose_a ? a.rows : a.cols;
    const index_t kb = o.transpose_b ? b.cols : b.rows;
    const index_t n = o.transpose_b ? b.rows : b.cols;
    if (!checked && k != kb)
        throw error("OP1", "dot",
                    text("a ", shape_text(a.rows, a.cols), " and b ", shape_text(b.rows, b.cols),
                         " do not multiply: the contracting dims are ", k, " and ", kb,
                         " (transpose_a=", o.transpose_a ? "true" : "false",
                         ", transpose_b=", o.transpose_b ? "true" : "false", ")"),
                    "contract a (M, K) with b (K, N), or set transpose_a / transpose_b");
    check_preferred<A>(o);
    if (kernel_context* c = current_context()) {
        const mxu_charge ch = mxu_charge_of(c->hw, dtype_of<A>, m, n, k);
        const double flops = ch.flops;
        if constexpr (std::is_same_v<A, std::int8_t>)
            c->body_work.mxu_int8_ops += flops;
        else
            c->body_work.mxu_passes_flops += flops * mxu_passes(dtype_of<A>, o.prec);
        c->body_work.vector_loads += static_cast<double>(a.vreg_count() + b.vreg_count());
        // The result's vregs leave the MXU through the matrix pop slot, a slot of its own beside
        // the vector load/store slots (TPUv2/v3: 2 matrix slots, push and pop; Norrie et al.,
        // IEEE Micro 2021 [src], assumed unchanged [est]). At one pop a cycle it never outlasts
        // a bf16 or f32 product (each f32 vreg of the result takes 2·8·128·K' FLOPs, K' ≥
        // mxu_dim, at least a cycle of the MXU on every preset), so it is not charged
        // (docs/model.md §5).
        // A transposed lhs goes through the transpose unit first; a transposed rhs is latched
        // into the MXU transposed, at no cost of its own (docs/model.md §5, "Transposes").
        if (o.transpose_a) c->body_work.xlu_vregs += static_cast<double>(a.vreg_count());
    }
    if (timing_only()) return vec<R>(shape_only, m, n);
    const auto pa = a.read();
    const auto pb = b.read();
    if constexpr (std::is_same_v<R, float>) {
        // In a body, the one-pass product is pending: its operands rounded to bf16 once, its GEMM
        // run where it is stored, accumulating there for acc + dot(a, b) (elementwise.hpp), as
        // Mosaic folds that add into the matmul's accumulator.
        if (kernel_context* ctx = current_context(); ctx != nullptr && one_pass_fast<A>(o) && m > 0 && n > 0) {
            auto lhs = array_cache<float>::take(m, k);
            auto rhs = array_cache<float>::take(k, n);
            round_plane_to_bf16(lhs.data(), pa.data, pa.stride, m, k);
            round_plane_to_bf16(rhs.data(), pb.data, pb.stride, k, n);
            return vec_access::make<vec<R>>(
                block_values<float>::product(&bf16_pass_gemm<float>, std::move(lhs), std::move(rhs), m, n, k, *ctx), m,
                n);
        }
    }
    return vec<R>(dot_values<A>(pa, a.rows, a.cols, pb, b.rows, b.cols, o, m, n, k));
}

/// dot_product, marked as an MXU result (ops/vec.hpp, "MXU results"), with its dependence chain.
template <class A>
vec<dot_acc_t<A>> dot_result(const dot_operand<A>& a, const dot_operand<A>& b, const dot_options& o,
                             bool checked) {
    vec<dot_acc_t<A>> r = dot_product<A>(a, b, o, checked);
    vec_access::mark_mxu_result(r);
    // On the chain: the transpose of a (XLU), then the product on the MXU.
    chain_work own;
    if (const kernel_context* c = current_context()) {
        const index_t m = o.transpose_a ? a.cols : a.rows;
        const index_t k = o.transpose_a ? a.rows : a.cols;
        const double flops = mxu_charge_of(c->hw, dtype_of<A>, m, r.cols(), k).flops;
        if constexpr (std::is_same_v<A, std::int8_t>)
            own.mxu_int8_ops = flops;
        else
            own.mxu_passes_flops = flops * mxu_passes(dtype_of<A>, o.prec);
        if (o.transpose_a) own.xlu_vregs = static_cast<double>(a.vreg_count());
    }
    chain_result(r, own, {a.chain, b.chain}, /*mxu=*/true);
    return r;
}

/// dot_result of two vecs, which then are read: an operand that is itself an MXU result is popped
/// from the result buffer before it can enter the array, one drain (charged once the product
/// succeeded: a failed op charges nothing).
template <bool Checked, class A, class VA, class VB>
vec<dot_acc_t<A>> dot_checked(const VA& a, const VB& b, const dot_options& o) {
    vec<dot_acc_t<A>> r = dot_result<A>(dot_operand_of<A>(a), dot_operand_of<A>(b), o, Checked);
    drain_mxu(a);
    drain_mxu(b);
    return r;
}

#define PTPU_DOT_RESULT_OF(T) \
    PTPU_INSTANTIATED(vec<dot_acc_t<T>> dot_result<T>(const dot_operand<T>&, const dot_operand<T>&, const dot_options&, bool))
PTPU_DOT_RESULT_OF(float)
PTPU_DOT_RESULT_OF(bf16)
PTPU_DOT_RESULT_OF(f16)
PTPU_DOT_RESULT_OF(std::int8_t)
#undef PTPU_DOT_RESULT_OF

}  // namespace detail

/// dot<opts>(a, b): a (M, K) · b (K, N) → (M, N) on the MXU (see the header comment for the
/// numerics and the charge), with options known at compile time, e.g.
/// dot<dot_options{.transpose_b = true}>(a, b). Dtypes must agree and be f32, bf16, f16 or int8
/// (OP2, compile time); the contracting dims must agree (OP1: at compile time where both are
/// static, at run time otherwise). The result's shape is static where M and N are.
template <dot_options O, class A, index_t AR, index_t AC, class B, index_t BR, index_t BC>
[[nodiscard]] detail::static_dot_result_t<A, O.transpose_a, O.transpose_b, vec<A, AR, AC>, vec<B, BR, BC>>
dot(const vec<A, AR, AC>& a, const vec<B, BR, BC>& b) {
    using out_t =
        detail::static_dot_result_t<A, O.transpose_a, O.transpose_b, vec<A, AR, AC>, vec<B, BR, BC>>;
    constexpr bool all_static = vec<A, AR, AC>::is_static && vec<B, BR, BC>::is_static;
    if constexpr (!detail::dot_ok<A, B>())
        return {};
    else if constexpr (!detail::static_dot_ok<O.transpose_a, O.transpose_b, AR, AC, BR, BC>())
        return {};
    else
        return out_t(detail::dot_checked<all_static, A>(a, b, O));
}

/// dot(a, b): dot<dot_options{}>(a, b), no transposes, default precision.
template <class A, index_t AR, index_t AC, class B, index_t BR, index_t BC>
[[nodiscard]] detail::static_dot_result_t<A, false, false, vec<A, AR, AC>, vec<B, BR, BC>> dot(
    const vec<A, AR, AC>& a, const vec<B, BR, BC>& b) {
    return dot<dot_options{}>(a, b);
}

/// dot(a, b, opts): options known at run time, as lax.dot_general's. The transposes decide which
/// dims contract, so the contracting dims are checked at run time (OP1) and the result's extents
/// are static only where both choices agree; pass the options as a template argument (dot<opts>)
/// to have shapes checked at compile time.
template <class A, index_t AR, index_t AC, class B, index_t BR, index_t BC>
[[nodiscard]] detail::runtime_dot_result_t<A, vec<A, AR, AC>, vec<B, BR, BC>> dot(const vec<A, AR, AC>& a,
                                                                                  const vec<B, BR, BC>& b,
                                                                                  const dot_options& o) {
    using out_t = detail::runtime_dot_result_t<A, vec<A, AR, AC>, vec<B, BR, BC>>;
    if constexpr (!detail::dot_ok<A, B>())
        return {};
    else
        return out_t(detail::dot_checked<false, A>(a, b, o));
}

}  // namespace ptpu
