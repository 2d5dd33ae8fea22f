// Defines the elementwise ops on vecs: arithmetic, comparison and bitwise operators (vec ⊕ vec,
// vec ⊕ scalar, scalar ⊕ vec, NumPy broadcasting), compound assignment, maximum, minimum, pow and
// the unary math functions (where() and cast<U> are in ops/where.hpp and ops/cast.hpp). Each charges one vreg op of its cost class per
// output vreg, counted in the operands' dtype (cost classes: docs/ops.md). Results have the
// broadcast static shape of their operands (vec.hpp): shapes that cannot broadcast are a compile
// error where both extents of a dim are static, a run-time OP1 otherwise.
//
// Cost classes: cheap = + - * min max select compare cast abs neg floor ceil & | ^ ~;
// medium = / % exp log log1p expm1 tanh logistic pow rsqrt sqrt reciprocal; expensive = sin cos.
// floor, ceil, the bitwise ops, %, log1p, expm1, logistic and reciprocal are not in Pallas's
// list (details.rst): their classes are ptpu's estimate [est].
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
#include "ptpu/core/error.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/ops/elementwise_functors.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

namespace detail {

// ---- The engines: shape rules, charge, then (unless timing-only) the Eigen expression ----------

template <class Op, class T>
using op_result_t = std::conditional_t<Op::compares, bool, T>;

using shape2 = std::array<index_t, 2>;

[[noreturn]] PTPU_COMPILED void throw_broadcast(const char* where, shape2 a, shape2 b);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void throw_broadcast(const char* where, shape2 a, shape2 b) {
    throw error("OP1", where,
                text("shapes ", shape_text(a[0], a[1]), " and ", shape_text(b[0], b[1]), " do not broadcast"),
                "make each dim equal, or 1 in one operand (NumPy rules), or broadcast_to() "
                "first");
}
#endif

/// NumPy broadcasting of two 2-D shapes: per dim equal, or 1 on one side (OP1 otherwise).
inline shape2 broadcast_shape(const char* where, shape2 a, shape2 b) {
    shape2 s{};
    for (std::size_t d = 0; d < 2; ++d) {
        if (a[d] == b[d] || b[d] == 1)
            s[d] = a[d];
        else if (a[d] == 1)
            s[d] = b[d];
        else
            throw_broadcast(where, a, b);
    }
    return s;
}

/// `a` broadcast to `s`: `a` itself when it has that shape, otherwise materialised into `tmp`
/// row by row (Eigen's Replicate computes a modulo per element and does not vectorise).
template <class A>
const A& expand(const A& a, shape2 s, A& tmp) {
    if (a.rows() == s[0] && a.cols() == s[1]) return a;
    tmp.resize(s[0], s[1]);
    for (index_t i = 0; i < s[0]; ++i) {
        const index_t src = a.rows() == 1 ? 0 : i;
        if (a.cols() == 1)
            tmp.row(i).setConstant(a(src, 0));
        else
            tmp.row(i) = a.row(src);
    }
    return tmp;
}

/// A vec's values as a read-only Eigen map (in place: a view of VMEM, or its own array).
template <class C>
using cmap = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                        Eigen::OuterStride<>>;
template <class V>
cmap<typename V::compute_type> values_of(const V& v, const char* where) {
    const block_view<typename V::compute_type> p = vec_access::read(v, where);
    return {p.data, v.rows(), v.cols(), Eigen::OuterStride<>(p.stride)};
}
template <class M>
block_view<typename M::Scalar> plane_of(const M& m) {
    return {m.data(), m.outerStride()};
}

// The forms of an elementwise op on planes: a ⊕ b, a ⊕ k, k ⊕ a, op(a).
enum class form : unsigned char { binary, scalar_right, scalar_left, unary };

/// out = op(args) over rows × cols planes (row stride os for out): the one Eigen assignment of
/// each op, compute type and form, whatever the static shapes, shared by eager ops and pending
/// ones (block_values). out may be an operand exactly (elementwise: safe), never a shifted one.
template <class Op, class C, form F>
void pending_eval(C* out, index_t os, index_t rows, index_t cols, const pending_args<C>& p) {
    using A2 = Eigen::Array<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<A2, 0, Eigen::OuterStride<>> o(out, rows, cols, Eigen::OuterStride<>(os));
    const cmap<C> a(p.a.data, rows, cols, Eigen::OuterStride<>(p.a.stride));
    if constexpr (F == form::binary)
        o = Op{}(a, cmap<C>(p.b.data, rows, cols, Eigen::OuterStride<>(p.b.stride)));
    else if constexpr (F == form::scalar_right)
        o = Op{}(a, A2::Constant(rows, cols, p.k));
    else if constexpr (F == form::scalar_left)
        o = Op{}(A2::Constant(rows, cols, p.k), a);
    else
        o = Op{}(a);
}

/// out = a ⊕ b over the broadcast shape `s`. Broadcast operands are read in place, row by row
/// (a (1, n) row is reused, an (m, 1) column becomes a constant row), so no temporary is
/// allocated: a fresh 1 MiB temporary per op costs more in page faults than the op itself.
/// `out` may be `a` or `b` when that operand already has shape `s` (rows are computed from the
/// same rows: cwise aliasing is safe).
template <class Op, class Out, class A>
void assign_binary(Out& out, const A& a, const A& b, shape2 s) {
    if (a.rows() == s[0] && a.cols() == s[1] && b.rows() == s[0] && b.cols() == s[1]) {
        if constexpr (std::is_same_v<typename Out::Scalar, typename A::Scalar>) {
            out.resize(s[0], s[1]);
            pending_eval<Op, typename A::Scalar, form::binary>(out.data(), out.cols(), s[0], s[1],
                                                               {plane_of(a), plane_of(b), {}});
        } else {
            out = Op{}(a, b);  // comparisons: a mask from values
        }
        return;
    }
    using row_t = Eigen::Array<typename A::Scalar, 1, Eigen::Dynamic>;
    out.resize(s[0], s[1]);
    const bool a_col = a.cols() == 1 && s[1] != 1;  // one value per row, broadcast along it
    const bool b_col = b.cols() == 1 && s[1] != 1;
    for (index_t i = 0; i < s[0]; ++i) {
        const index_t ia = a.rows() == 1 ? 0 : i;
        const index_t ib = b.rows() == 1 ? 0 : i;
        if (!a_col && !b_col)
            out.row(i) = Op{}(a.row(ia), b.row(ib));
        else if (a_col && !b_col)
            out.row(i) = Op{}(row_t::Constant(s[1], a(ia, 0)), b.row(ib));
        else if (!a_col)
            out.row(i) = Op{}(a.row(ia), row_t::Constant(s[1], b(ib, 0)));
        else
            out.row(i).setConstant(Op{}(row_t::Constant(1, a(ia, 0)), row_t::Constant(1, b(ib, 0)))(0, 0));
    }
}

// The value loops below take arrays, not vecs: they are compiled once per op and dtype, however
// many static shapes use them (the vec-typed wrappers around them are small).

/// out = x ⊕ c (or c ⊕ x); `out` may be `x`.
template <class Op, bool ScalarLeft, class Out, class A, class S>
void assign_scalar(Out& out, const A& x, S c) {
    if constexpr (std::is_same_v<typename Out::Scalar, typename A::Scalar>) {
        out.resize(x.rows(), x.cols());
        pending_eval<Op, typename A::Scalar, ScalarLeft ? form::scalar_left : form::scalar_right>(
            out.data(), out.cols(), x.rows(), x.cols(), {plane_of(x), {}, c});
    } else {
        const auto k = A::Constant(x.rows(), x.cols(), c);
        if constexpr (ScalarLeft)
            out = Op{}(k, x);
        else
            out = Op{}(x, k);
    }
}
/// x = op(x), in place.
template <class Op, class A>
void unary_in_place(A& x) {
    pending_eval<Op, typename A::Scalar, form::unary>(x.data(), x.cols(), x.rows(), x.cols(),
                                                      {{x.data(), x.cols()}, {}, {}});
}

// An rvalue vec operand whose storage the result may take over (no allocation in op chains).
template <class X>
inline constexpr bool reusable = !std::is_reference_v<X> && !std::is_const_v<X>;

// The static shape checks (OP1): one static_assert per mistake, whose instantiation line shows
// the shapes; the op then returns an empty value of a dynamic shape, so nothing else fails.
template <class Op, index_t AR, index_t AC, index_t BR, index_t BC>
constexpr bool static_broadcast_ok() {
    constexpr bool ok = broadcastable(AR, BR) && broadcastable(AC, BC);
#define PTPU_RULE_TEXT_OP1_BROADCAST                                                              \
    "ptpu[OP1] elementwise op: the static shapes of the operands do not broadcast; make each dim " \
    "equal, or 1 in one operand (NumPy rules), or broadcast_to() first"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(sizeof(compile_error<with_shapes(PTPU_RULE_TEXT_OP1_BROADCAST,
                                                       {{"a", AR, AC}, {"b", BR, BC}})>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_BROADCAST);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_BROADCAST
    return ok;
}
template <class Op, index_t AR, index_t AC, index_t BR, index_t BC>
constexpr bool static_compound_ok() {
    // b broadcasts to a: per dim equal, or 1 in b.
    constexpr bool ok =
        (AR == dyn || BR == dyn || BR == AR || BR == 1) && (AC == dyn || BC == dyn || BC == AC || BC == 1);
#define PTPU_RULE_TEXT_OP1_COMPOUND                                                                   \
    "ptpu[OP1] compound assignment: b does not broadcast to a's static shape; b's dims must equal a's " \
    "or be 1, or write a = a op b to get the broadcast value"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(sizeof(compile_error<with_shapes(PTPU_RULE_TEXT_OP1_COMPOUND,
                                                       {{"a", AR, AC}, {"b", BR, BC}})>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_COMPOUND);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_COMPOUND
    return ok;
}

/// The broadcast shape of two vec types, as far as it is static.
template <class VA, class VB>
inline constexpr index_t broadcast_rows = broadcast_extent(VA::static_rows, VB::static_rows);
template <class VA, class VB>
inline constexpr index_t broadcast_cols = broadcast_extent(VA::static_cols, VB::static_cols);

/// True when vec type V may hold a value of static shape (Rows, Cols) (no static extent differs).
template <class V, index_t Rows, index_t Cols>
inline constexpr bool fits = extents_agree(V::static_rows, Rows) && extents_agree(V::static_cols, Cols);

/// The run-time broadcast shape of a and b: a constant when both are static (checked at compile
/// time), otherwise checked here (OP1).
template <class VA, class VB>
shape2 broadcast_of(const char* where, const VA& a, const VB& b) {
    if constexpr (VA::is_static && VB::is_static)
        return {broadcast_rows<VA, VB>, broadcast_cols<VA, VB>};
    else
        return broadcast_shape(where, a.shape(), b.shape());
}

// ---- a ⊕ b on the operands' storage: compiled once per op and compute type ---------------------
// The vec-typed wrapper (apply_binary_values) checks and charges; what it does with the values
// depends on neither the static shapes nor the operands' value categories (those are flags), so
// with PTPU_SEPARATE_RUNTIME the common ops' instantiations are compiled once in ptpu::runtime
// (the end of this header).

/// The compute type of op Op's result on operands of compute type C (bool for comparisons).
template <class Op, class C>
using op_compute_t = std::conditional_t<Op::compares, bool, C>;

/// How binary_values may use its operands: an rvalue's storage may be taken (a_rvalue), and may
/// hold the result (a_holds: its vec type can also hold the result's static shape); fold_product:
/// acc + dot may fold into the product (f32 adds).
enum binary_flags : unsigned { a_rvalue = 1, b_rvalue = 2, a_holds = 4, b_holds = 8, fold_product = 16 };
/// What binary_values did: the result is in an operand's storage (computed in place), and which
/// operands gave up their values to the result.
enum binary_outcome : unsigned { result_in_a = 1, result_in_b = 2, a_consumed = 4, b_consumed = 8 };

/// `x`'s values as a read-only map of shape xs.
template <class C>
cmap<C> storage_map(const block_values<C>& x, shape2 xs, const char* where) {
    const block_view<C> p = x.read(where);
    return {p.data, xs[0], xs[1], Eigen::OuterStride<>(p.stride)};
}

/// view + product (either order): when `p` is an rvalue pending product with no accumulator and
/// `acc` a view, both of the result's shape, the result is the product accumulating into acc.
/// Returns what was consumed (p_consumed, and acc_consumed for an rvalue acc), 0 when it does not
/// apply.
template <class C>
unsigned accumulate_product(block_values<C>& out, block_values<C>& p, shape2 ps, bool p_rvalue,
                            block_values<C>& acc, shape2 accs, bool acc_rvalue, shape2 s, unsigned p_consumed,
                            unsigned acc_consumed) {
    if (!p_rvalue || !p.is_bare_product() || !acc.is_view() || ps != s || accs != s) return 0;
    const block_view<C> view = acc.read("a + b");
    out = block_values<C>::accumulate(std::move(p), view);
    if (!acc_rvalue) return p_consumed;
    acc.release();
    return p_consumed | acc_consumed;
}

/// An operand of a pending op: a view (read in place; an rvalue's registration is dropped, the
/// result makes its own) or an rvalue's own array (taken: `own`). False when it is neither.
template <class C>
bool pending_operand(block_values<C>& x, bool rvalue, block_view<C>& out, bool& taken,
                     typename block_values<C>::array_type& own) {
    if (x.is_view()) {
        out = x.read("elementwise op");
        taken = false;
        return true;
    }
    if (rvalue && x.is_owned() && own.size() == 0) {
        own = std::move(x.array("elementwise op"));
        out = {own.data(), own.cols()};
        taken = true;
        return true;
    }
    return false;
}

/// A pending op over x (and y, for the binary form), when the running body can hold one (see
/// block_values): every operand a view or an rvalue's array (one at most), shapes equal to the
/// result's, at least one view. Otherwise false and nothing taken; `consumed` gets the operands
/// that gave up their values (a_consumed for x, b_consumed for y).
template <class Op, class C, form F>
bool make_pending(block_values<C>& out, block_values<C>& x, shape2 xs, bool x_rvalue, block_values<C>* y,
                  shape2 ys, bool y_rvalue, C k, shape2 s, unsigned& consumed) {
    kernel_context* ctx = current_context();
    if (ctx == nullptr || xs != s) return false;
    if constexpr (F == form::binary) {
        if (ys != s) return false;
        const bool views = x.is_view() || y->is_view();
        const bool x_ok = x.is_view() || (x_rvalue && x.is_owned());
        const bool y_ok = y->is_view() || (y_rvalue && y->is_owned());
        if (!views || !x_ok || !y_ok) return false;
    } else {
        if (!(x.is_view() || (x_rvalue && x.is_owned()))) return false;
    }
    pending_args<C> args;
    args.k = k;
    typename block_values<C>::array_type own;
    bool x_own = false, y_own = false;
    pending_operand(x, x_rvalue, args.a, x_own, own);
    if constexpr (F == form::binary) pending_operand(*y, y_rvalue, args.b, y_own, own);
    out = block_values<C>::pending(&pending_eval<Op, C, F>, args, x_own, y_own, std::move(own), s[0], s[1],
                                   *ctx);
    if (x_rvalue) {
        x.release();
        consumed |= a_consumed;
    }
    if constexpr (F == form::binary) {
        if (y_rvalue) {
            y->release();
            consumed |= b_consumed;
        }
    }
    return true;
}

/// The values of a ⊕ b (shape s, broadcast): into `out`, or in place into an rvalue operand's
/// storage that holds the result (result_in_a / result_in_b). Both operands have values.
template <class Op, class C>
unsigned binary_values(block_values<op_compute_t<Op, C>>& out, block_values<C>& a, shape2 as,
                       block_values<C>& b, shape2 bs, shape2 s, unsigned flags) {
    using RC = op_compute_t<Op, C>;
    const bool a_rv = (flags & a_rvalue) != 0, b_rv = (flags & b_rvalue) != 0;
    if constexpr (std::is_same_v<RC, C>) {
        if ((flags & fold_product) != 0) {
            // acc + dot(x, y) with acc a view: the product accumulates into acc (block_values).
            if (const unsigned r =
                    accumulate_product(out, a, as, a_rv, b, bs, b_rv, s, a_consumed, b_consumed))
                return r;
            if (const unsigned r =
                    accumulate_product(out, b, bs, b_rv, a, as, a_rv, s, b_consumed, a_consumed))
                return r;
        }
    }
    // An rvalue operand that is itself a pending op is evaluated into its own array first, which
    // the result may then take over (an op chain needs one temporary, not one per op).
    if (a_rv && a.is_pending()) (void)a.array("elementwise op");
    if (b_rv && b.is_pending()) (void)b.array("elementwise op");
    if constexpr (std::is_same_v<RC, C>) {
        unsigned consumed = 0;
        if (make_pending<Op, C, form::binary>(out, a, as, a_rv, &b, bs, b_rv, C{}, s, consumed))
            return consumed;
    }
    // An rvalue operand of the result's shape that owns its values holds the result.
    const bool a_owns = a.is_owned(), b_owns = b.is_owned();
    if constexpr (std::is_same_v<RC, C>) {
        if ((flags & a_holds) != 0 && as == s && a_owns) {
            assign_binary<Op>(a.array("vec::array"), storage_map(a, as, Op::name),
                              storage_map(b, bs, Op::name), s);
            return result_in_a;
        }
        if ((flags & b_holds) != 0 && bs == s && b_owns) {
            assign_binary<Op>(b.array("vec::array"), storage_map(a, as, Op::name),
                              storage_map(b, bs, Op::name), s);
            return result_in_b;
        }
    }
    auto values = array_cache<RC>::take(s[0], s[1]);
    assign_binary<Op>(values, storage_map(a, as, Op::name), storage_map(b, bs, Op::name), s);
    out = block_values<RC>(std::move(values));
    return 0;
}

/// A vec's storage, for the shape-free parts of an op: an operand the op may change only when
/// it is an rvalue (the flags say so; block_values' const members change only mutable state).
template <class V>
auto& op_storage(V& v) {
    return const_cast<block_values<typename std::remove_const_t<V>::compute_type>&>(vec_access::storage(v));
}

/// The vec op(a, b) returns for vec operands of types X and Y.
template <class Op, class X, class Y>
using binary_vec_t = vec<op_result_t<Op, typename std::remove_cvref_t<X>::value_type>,
                         broadcast_rows<std::remove_cvref_t<X>, std::remove_cvref_t<Y>>,
                         broadcast_cols<std::remove_cvref_t<X>, std::remove_cvref_t<Y>>>;

template <class Op, class X, class Y>
binary_vec_t<Op, X, Y> apply_binary_values(X&& a, Y&& b) {
    using VX = std::remove_cvref_t<X>;
    using VY = std::remove_cvref_t<Y>;
    using T = typename VX::value_type;
    using R = op_result_t<Op, T>;
    using out_t = binary_vec_t<Op, X, Y>;
    const shape2 s = broadcast_of(Op::name, a, b);
    charge_vpu(Op::cost, vregs(s[0], s[1], dtype_of<T>));
    if (timing_only()) return out_t(shape_only, s[0], s[1]);
    a.require_data(Op::name);
    b.require_data(Op::name);
    constexpr bool same = std::is_same_v<R, T>;
    constexpr unsigned flags =
        (reusable<X> ? a_rvalue : 0u) | (reusable<Y> ? b_rvalue : 0u) |
        (same && reusable<X> && fits<VX, out_t::static_rows, out_t::static_cols> ? a_holds : 0u) |
        (same && reusable<Y> && fits<VY, out_t::static_rows, out_t::static_cols> ? b_holds : 0u) |
        (std::is_same_v<Op, op_add> && std::is_same_v<T, float> ? fold_product : 0u);
    block_values<compute_t<R>> out;
    const unsigned r =
        binary_values<Op, compute_t<T>>(out, op_storage(a), a.shape(), op_storage(b), b.shape(), s, flags);
    if constexpr (reusable<X>) {
        if ((r & a_consumed) != 0) vec_access::forget(a);
    }
    if constexpr (reusable<Y>) {
        if ((r & b_consumed) != 0) vec_access::forget(b);
    }
    if constexpr ((flags & a_holds) != 0) {
        if ((r & result_in_a) != 0) return out_t(std::move(a));
    }
    if constexpr ((flags & b_holds) != 0) {
        if ((r & result_in_b) != 0) return out_t(std::move(b));
    }
    return vec_access::make<out_t>(std::move(out), s[0], s[1]);
}

/// a + b of two operands of one shape, one of them an MXU result: Mosaic folds the add into the
/// matmul's accumulator (acc + dot(a, b)), so nothing drains and the sum is an MXU result
/// (ops/vec.hpp, "MXU results"). The same rule in both modes (the CPU fold is
/// accumulate_product's, which also needs a view).
template <class Op, class VX, class VY>
bool folds_into_mxu(const VX& a, const VY& b) {
    if constexpr (std::is_same_v<Op, op_add>)
        return (vec_access::is_mxu_result(a) || vec_access::is_mxu_result(b)) && a.shape() == b.shape();
    else
        return false;
}

/// The highest level of the MXU results op(a, b) reads when it does not fold (0: none; a and b
/// may be one vec).
template <class VX, class VY>
int mxu_results_read(const VX& a, const VY& b) {
    const int la = vec_access::is_mxu_result(a) ? vec_access::level(a) : 0;
    const int lb = vec_access::is_mxu_result(b) ? vec_access::level(b) : 0;
    return std::max(la, lb);
}

/// After op(a, b) succeeded (a failed op charges nothing): its result is an MXU result when the
/// op folded, otherwise the drain of the highest level of MXU result it read is charged and
/// nothing is one (an rvalue operand's mark may have moved into the result with its values).
template <class VX, class VY, class R>
void settle_mxu(bool fold, int read, const VX& a, const VY& b, const R& r) {
    if (fold) {
        vec_access::mark_mxu_result(r);
        return;
    }
    vec_access::unmark_mxu_result(r);
    vec_access::unmark_mxu_result(a);
    vec_access::unmark_mxu_result(b);
    vec_access::charge_drains(read);
}

/// a ⊕ b, both vecs: the values, then the MXU result rule.
template <class Op, class X, class Y>
binary_vec_t<Op, X, Y> apply_binary(X&& a, Y&& b) {
    const bool fold = folds_into_mxu<Op>(a, b);
    const int read = fold ? 0 : mxu_results_read(a, b);
    const chain_in ca = chain_of(a), cb = chain_of(b);
    auto r = apply_binary_values<Op>(std::forward<X>(a), std::forward<Y>(b));
    settle_mxu(fold, read, a, b, r);
    // A folded add is the matmul's accumulation: nothing of its own on the chain.
    using T = typename std::remove_cvref_t<X>::value_type;
    chain_result(r, fold ? chain_work{} : vpu_chain(Op::cost, vregs(r.rows(), r.cols(), dtype_of<T>)), {ca, cb});
    return r;
}

// A body of a run-time configured call (dynamic_call, emit_pipeline of values) works on vecs of
// run-time shape (vec<T>: both extents dyn) whatever its configuration, so its common ops on two
// temporaries (load(x) + load(y)) are the same functions in every such file: compiled once.
#define PTPU_DYNAMIC_BINARY(op, T)                                                                     \
    PTPU_INSTANTIATED(binary_vec_t<op, vec<T>, vec<T>> apply_binary_values<op, vec<T>, vec<T>>(vec<T>&&, vec<T>&&)) \
    PTPU_INSTANTIATED(binary_vec_t<op, vec<T>, vec<T>> apply_binary<op, vec<T>, vec<T>>(vec<T>&&, vec<T>&&))
PTPU_DYNAMIC_BINARY(op_add, float)
PTPU_DYNAMIC_BINARY(op_sub, float)
PTPU_DYNAMIC_BINARY(op_mul, float)
#undef PTPU_DYNAMIC_BINARY

/// The values of a ⊕ c (or c ⊕ a) for a scalar c: into `out`, or in place into an rvalue a's
/// storage (result_in_a). a has values.
template <class Op, bool ScalarLeft, class C>
unsigned scalar_values(block_values<op_compute_t<Op, C>>& out, block_values<C>& a, shape2 as, C c,
                       unsigned flags) {
    using RC = op_compute_t<Op, C>;
    const bool a_rv = (flags & a_rvalue) != 0;
    if (a_rv && a.is_pending()) (void)a.array("elementwise op");
    if constexpr (std::is_same_v<RC, C>) {
        unsigned consumed = 0;
        if (make_pending < Op, C,
            ScalarLeft ? form::scalar_left
                       : form::scalar_right > (out, a, as, a_rv, nullptr, {}, false, c, as, consumed))
            return consumed;
        if ((flags & a_holds) != 0 && a.is_owned()) {
            assign_scalar<Op, ScalarLeft>(a.array("vec::array"), storage_map(a, as, Op::name), c);
            return result_in_a;
        }
    }
    auto values = array_cache<RC>::take(as[0], as[1]);
    assign_scalar<Op, ScalarLeft>(values, storage_map(a, as, Op::name), c);
    out = block_values<RC>(std::move(values));
    return 0;
}

template <class Op, bool ScalarLeft, class X, class C>
auto apply_scalar_values(X&& a, C c) {
    using V = std::remove_cvref_t<X>;
    using T = typename V::value_type;
    using R = op_result_t<Op, T>;
    using out_t = same_shape_t<R, V>;
    drain_mxu(a);
    charge_vpu(Op::cost, a.vreg_count());
    if (timing_only()) return out_t(shape_only, a.rows(), a.cols());
    a.require_data(Op::name);
    constexpr unsigned flags =
        (reusable<X> ? a_rvalue : 0u) | (std::is_same_v<R, T> && reusable<X> ? a_holds : 0u);
    const shape2 as = a.shape();
    block_values<compute_t<R>> out;
    const unsigned r = scalar_values<Op, ScalarLeft, compute_t<T>>(out, op_storage(a), as, c, flags);
    if constexpr (reusable<X>) {
        if ((r & a_consumed) != 0) vec_access::forget(a);
    }
    if constexpr ((flags & a_holds) != 0) {
        if ((r & result_in_a) != 0) return out_t(std::move(a));
    }
    return vec_access::make<out_t>(std::move(out), as[0], as[1]);
}

/// a ⊕ c with a scalar c: the values, then the result's dependence chain.
template <class Op, bool ScalarLeft, class X, class C>
auto apply_scalar(X&& a, C c) {
    const chain_in in = chain_of(a);
    const index_t n = a.vreg_count();
    auto r = apply_scalar_values<Op, ScalarLeft>(std::forward<X>(a), c);
    chain_result(r, vpu_chain(Op::cost, n), {in});
    return r;
}

// The vec type of a binary op's operands (one of them may be a scalar) and its result: the
// broadcast of the operands' static shapes (a scalar is (1, 1)).
template <class X, class Y>
using operand_vec_t =
    std::conditional_t<is_vec_v<std::remove_cvref_t<X>>, std::remove_cvref_t<X>, std::remove_cvref_t<Y>>;
template <class X>
using shape_of_t =
    std::conditional_t<is_vec_v<std::remove_cvref_t<X>>, std::remove_cvref_t<X>, vec<bool, 1, 1>>;
template <class Op, class X, class Y>
using binary_result_t =
    vec<op_result_t<Op, typename operand_vec_t<X, Y>::value_type>,
        broadcast_rows<shape_of_t<X>, shape_of_t<Y>>, broadcast_cols<shape_of_t<X>, shape_of_t<Y>>>;

/// vec ⊕ vec, vec ⊕ scalar or scalar ⊕ vec (after remove_cvref).
template <class X, class Y>
concept binary_operands = (is_vec_v<std::remove_cvref_t<X>> &&
                           (is_vec_v<std::remove_cvref_t<Y>> || scalar_value<std::remove_cvref_t<Y>>)) ||
                          (scalar_value<std::remove_cvref_t<X>> && is_vec_v<std::remove_cvref_t<Y>>);

template <class Op, class X, class Y>
binary_result_t<Op, X, Y> binary(X&& x, Y&& y) {
    using VX = std::remove_cvref_t<X>;
    using VY = std::remove_cvref_t<Y>;
    using T = typename operand_vec_t<X, Y>::value_type;
    if constexpr (is_vec_v<VX> && is_vec_v<VY>) {
        if constexpr (!same_dtype_ok<T, typename VY::value_type>())
            return {};
        else if constexpr (!domain_ok<Op::domain, T>())
            return {};
        else if constexpr (!static_broadcast_ok<Op, VX::static_rows, VX::static_cols, VY::static_rows,
                                                VY::static_cols>())
            return {};
        else
            return apply_binary<Op>(std::forward<X>(x), std::forward<Y>(y));
    } else if constexpr (is_vec_v<VX>) {
        if constexpr (!scalar_ok<T, VY>())
            return {};
        else if constexpr (!domain_ok<Op::domain, T>())
            return {};
        else
            return apply_scalar<Op, false>(std::forward<X>(x), scalar_as<T>(y));
    } else {
        if constexpr (!scalar_ok<T, VX>())
            return {};
        else if constexpr (!domain_ok<Op::domain, T>())
            return {};
        else
            return apply_scalar<Op, true>(std::forward<Y>(y), scalar_as<T>(x));
    }
}

/// a ⊕= b: computes in place; b broadcasts to a's shape, never the other way (OP1: at compile
/// time where both extents of a dim are static, at run time otherwise).
template <class Op, class V, class B>
V& compound_values(V& a, const B& b) {
    using T = typename V::value_type;
    if constexpr (is_vec_v<B>) {
        if constexpr (!same_dtype_ok<T, typename B::value_type>()) {
        } else if constexpr (!domain_ok<Op::domain, T>()) {
        } else if constexpr (!static_compound_ok<Op, V::static_rows, V::static_cols, B::static_rows,
                                                 B::static_cols>()) {
        } else {
            const shape2 s = broadcast_of(Op::name, a, b);
            if constexpr (!(V::is_static && B::is_static)) {
                if (s != a.shape())
                    throw error("OP1", Op::name,
                                text("compound assignment would broadcast the left operand "
                                     "from ",
                                     shape_text(a.rows(), a.cols()), " to ", shape_text(s[0], s[1])),
                                "write a = a op b to get the broadcast value");
            }
            charge_vpu(Op::cost, a.vreg_count());
            if (timing_only()) {
                a = V(shape_only, a.rows(), a.cols());
                return a;
            }
            b.require_data(Op::name);
            // a takes its own copy first when it reads VMEM in place; cwise: aliasing is safe.
            auto& out = a.array();
            assign_binary<Op>(out, values_of(a, Op::name), values_of(b, Op::name), s);
        }
    } else if constexpr (!scalar_ok<T, B>()) {
    } else if constexpr (!domain_ok<Op::domain, T>()) {
    } else {
        charge_vpu(Op::cost, a.vreg_count());
        if (timing_only()) {
            a = V(shape_only, a.rows(), a.cols());
            return a;
        }
        auto& out = a.array();
        assign_scalar<Op, false>(out, values_of(a, Op::name), scalar_as<T>(b));
    }
    return a;
}

/// a ⊕= b: the values, then the MXU result rule (acc += dot(x, y) folds, see folds_into_mxu).
template <class Op, class V, class B>
V& compound(V& a, const B& b) {
    const chain_in ca = chain_of(a), cb = chain_of(b);
    const index_t n = a.vreg_count();
    if constexpr (is_vec_v<B>) {
        const bool fold = folds_into_mxu<Op>(a, b);
        const int read = fold ? 0 : mxu_results_read(a, b);
        compound_values<Op>(a, b);
        settle_mxu(fold, read, a, b, a);
        chain_result(a, fold ? chain_work{} : vpu_chain(Op::cost, n), {ca, cb});
    } else {
        const int read = vec_access::is_mxu_result(a) ? vec_access::level(a) : 0;
        compound_values<Op>(a, b);
        settle_mxu(false, read, a, a, a);
        chain_result(a, vpu_chain(Op::cost, n), {ca});
    }
    return a;
}

/// The values of op(a): into `out`, or in place into an rvalue a's storage (result_in_a). a has
/// values.
template <class Op, class C>
unsigned unary_storage(block_values<C>& out, block_values<C>& a, shape2 as, unsigned flags) {
    const bool a_rv = (flags & a_rvalue) != 0;
    if (a_rv && a.is_pending()) (void)a.array("elementwise op");
    unsigned consumed = 0;
    if (make_pending<Op, C, form::unary>(out, a, as, a_rv, nullptr, {}, false, C{}, as, consumed))
        return consumed;
    if (a_rv && a.is_owned()) {
        unary_in_place<Op>(a.array("vec::array"));
        return result_in_a;
    }
    auto values = array_cache<C>::take(as[0], as[1]);
    pending_eval<Op, C, form::unary>(values.data(), values.cols(), as[0], as[1], {a.read(Op::name), {}, {}});
    out = block_values<C>(std::move(values));
    return 0;
}

template <class Op, class X>
std::remove_cvref_t<X> unary_values(X&& a) {
    using V = std::remove_cvref_t<X>;
    using T = typename V::value_type;
    if constexpr (!domain_ok<Op::domain, T>()) {
        return {};
    } else {
        drain_mxu(a);
        charge_vpu(Op::cost, a.vreg_count());
        if (timing_only()) return V(shape_only, a.rows(), a.cols());
        a.require_data(Op::name);
        const shape2 as = a.shape();
        block_values<typename V::compute_type> out;
        const unsigned r =
            unary_storage<Op, typename V::compute_type>(out, op_storage(a), as, reusable<X> ? a_rvalue : 0u);
        if constexpr (reusable<X>) {
            if ((r & a_consumed) != 0) vec_access::forget(a);
            if ((r & result_in_a) != 0) return V(std::move(a));
        }
        return vec_access::make<V>(std::move(out), as[0], as[1]);
    }
}

/// op(a): the values, then the result's dependence chain.
template <class Op, class X>
std::remove_cvref_t<X> unary(X&& a) {
    const chain_in in = chain_of(a);
    const index_t n = a.vreg_count();
    std::remove_cvref_t<X> r = unary_values<Op>(std::forward<X>(a));
    if constexpr (domain_ok<Op::domain, typename std::remove_cvref_t<X>::value_type>())
        chain_result(r, vpu_chain(Op::cost, n), {in});
    return r;
}

// The common ops' value loops, compiled once in ptpu::runtime with PTPU_SEPARATE_RUNTIME (others
// are compiled where they are used, as in the header-only mode).
#define PTPU_BINARY_VALUES(op, C)                                                                     \
    PTPU_INSTANTIATED(unsigned binary_values<op, C>(block_values<op_compute_t<op, C>>&, block_values<C>&, \
                                                    shape2, block_values<C>&, shape2, shape2, unsigned))
#define PTPU_SCALAR_VALUES(op, left, C)                                                                    \
    PTPU_INSTANTIATED(unsigned scalar_values<op, left, C>(block_values<op_compute_t<op, C>>&, block_values<C>&, \
                                                          shape2, C, unsigned))
#define PTPU_UNARY_VALUES(op, C) \
    PTPU_INSTANTIATED(unsigned unary_storage<op, C>(block_values<C>&, block_values<C>&, shape2, unsigned))
PTPU_BINARY_VALUES(op_add, float)
PTPU_BINARY_VALUES(op_sub, float)
PTPU_BINARY_VALUES(op_mul, float)
PTPU_BINARY_VALUES(op_div, float)
PTPU_BINARY_VALUES(op_max, float)
PTPU_BINARY_VALUES(op_min, float)
PTPU_BINARY_VALUES(op_eq, float)
PTPU_BINARY_VALUES(op_ne, float)
PTPU_BINARY_VALUES(op_lt, float)
PTPU_BINARY_VALUES(op_le, float)
PTPU_BINARY_VALUES(op_gt, float)
PTPU_BINARY_VALUES(op_ge, float)
PTPU_BINARY_VALUES(op_add, std::int32_t)
PTPU_BINARY_VALUES(op_sub, std::int32_t)
PTPU_BINARY_VALUES(op_mul, std::int32_t)
PTPU_BINARY_VALUES(op_lt, std::int32_t)
PTPU_BINARY_VALUES(op_eq, std::int32_t)
PTPU_SCALAR_VALUES(op_add, false, float)
PTPU_SCALAR_VALUES(op_sub, false, float)
PTPU_SCALAR_VALUES(op_mul, false, float)
PTPU_SCALAR_VALUES(op_div, false, float)
PTPU_SCALAR_VALUES(op_max, false, float)
PTPU_SCALAR_VALUES(op_min, false, float)
PTPU_SCALAR_VALUES(op_sub, true, float)
PTPU_SCALAR_VALUES(op_mul, true, float)
PTPU_UNARY_VALUES(op_neg, float)
PTPU_UNARY_VALUES(op_exp, float)
#undef PTPU_UNARY_VALUES
#undef PTPU_SCALAR_VALUES
#undef PTPU_BINARY_VALUES

}  // namespace detail

// ---- Operators ---------------------------------------------------------------------------------

// Each binary operator and function comes as vec ⊕ vec, vec ⊕ scalar and scalar ⊕ vec; dtypes
// must agree (OP3) and shapes broadcast (OP1, at compile time where static). A scalar takes the
// vec's dtype first (JAX's weak typing: x_bf16 * 0.1 multiplies by bf16(0.1)).
#define PTPU_OPS_BINARY(decl, op)                                                  \
    template <class X, class Y>                                                    \
    requires detail::binary_operands<X, Y>                                         \
    [[nodiscard]] detail::binary_result_t<detail::op, X, Y> decl(X&& x, Y&& y) {   \
        return detail::binary<detail::op>(std::forward<X>(x), std::forward<Y>(y)); \
    }

PTPU_OPS_BINARY(operator+, op_add)
PTPU_OPS_BINARY(operator-, op_sub)
PTPU_OPS_BINARY(operator*, op_mul)
PTPU_OPS_BINARY(operator/, op_div)
PTPU_OPS_BINARY(operator%, op_rem)
PTPU_OPS_BINARY(operator&, op_and)
PTPU_OPS_BINARY(operator|, op_or)
PTPU_OPS_BINARY(operator^, op_xor)
PTPU_OPS_BINARY(operator==, op_eq)
PTPU_OPS_BINARY(operator!=, op_ne)
PTPU_OPS_BINARY(operator<, op_lt)
PTPU_OPS_BINARY(operator<=, op_le)
PTPU_OPS_BINARY(operator>, op_gt)
PTPU_OPS_BINARY(operator>=, op_ge)
/// Elementwise max / min (cheap), NaN-propagating as jnp.maximum / jnp.minimum.
PTPU_OPS_BINARY(maximum, op_max)
PTPU_OPS_BINARY(minimum, op_min)
/// Elementwise a to the power b (medium; floating-point vecs).
PTPU_OPS_BINARY(pow, op_pow)
#undef PTPU_OPS_BINARY

#define PTPU_OPS_COMPOUND(decl, op)                             \
    template <class T, index_t Rows, index_t Cols, class B>     \
    requires(is_vec_v<B> || scalar_value<B>) vec<T, Rows, Cols> \
    &decl(vec<T, Rows, Cols>& a, const B& b) {                  \
        return detail::compound<detail::op>(a, b);              \
    }
PTPU_OPS_COMPOUND(operator+=, op_add)
PTPU_OPS_COMPOUND(operator-=, op_sub)
PTPU_OPS_COMPOUND(operator*=, op_mul)
PTPU_OPS_COMPOUND(operator/=, op_div)
PTPU_OPS_COMPOUND(operator%=, op_rem)
PTPU_OPS_COMPOUND(operator&=, op_and)
PTPU_OPS_COMPOUND(operator|=, op_or)
PTPU_OPS_COMPOUND(operator^=, op_xor)
#undef PTPU_OPS_COMPOUND

/// A vec argument, taken by forwarding reference: an rvalue's storage is reused.
template <class X>
concept vec_arg = is_vec_v<std::remove_cvref_t<X>>;

/// -a (cheap). Integers wrap: -INT_MIN is INT_MIN.
template <vec_arg X>
[[nodiscard]] std::remove_cvref_t<X> operator-(X&& a) {
    return detail::unary<detail::op_neg>(std::forward<X>(a));
}
/// ~a: logical not of a mask, bitwise not of an integer vec (cheap).
template <vec_arg X>
[[nodiscard]] std::remove_cvref_t<X> operator~(X&& a) {
    return detail::unary<detail::op_not>(std::forward<X>(a));
}
/// !m: logical not of a mask (cheap).
template <vec_arg X>
requires std::is_same_v < typename std::remove_cvref_t<X>::value_type,
bool > [[nodiscard]] std::remove_cvref_t<X> operator!(X&& m) {
    return detail::unary<detail::op_not>(std::forward<X>(m));
}

/// |a| (cheap). Integers wrap: abs(INT_MIN) is INT_MIN.
template <vec_arg X>
[[nodiscard]] std::remove_cvref_t<X> abs(X&& a) {
    return detail::unary<detail::op_abs>(std::forward<X>(a));
}

#define PTPU_OPS_UNARY(fn)                                         \
    template <vec_arg X>                                           \
    [[nodiscard]] std::remove_cvref_t<X> fn(X&& a) {               \
        return detail::unary<detail::op_##fn>(std::forward<X>(a)); \
    }
PTPU_OPS_UNARY(floor)
PTPU_OPS_UNARY(ceil)
PTPU_OPS_UNARY(exp)
PTPU_OPS_UNARY(log)
PTPU_OPS_UNARY(log1p)
PTPU_OPS_UNARY(expm1)
PTPU_OPS_UNARY(tanh)
PTPU_OPS_UNARY(logistic)
PTPU_OPS_UNARY(rsqrt)
PTPU_OPS_UNARY(sqrt)
PTPU_OPS_UNARY(reciprocal)
PTPU_OPS_UNARY(sin)
PTPU_OPS_UNARY(cos)
#undef PTPU_OPS_UNARY

}  // namespace ptpu
