// Defines the loads and stores between refs and vecs: load / store (VMEM vector access, charged
// in vregs) and sload / sstore (scalar access, one scalar op each), checked against the memory
// space table at compile time (S3, S4, 21) and against the ref's shape (OP1: at compile time
// where the ref's extents and the vec's shape are static, at run time otherwise; R2).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/ops/vec.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/ref.hpp"

namespace ptpu {

namespace detail {
// OP1: store of a vec of shape (rows, cols) into a ref whose 2-D plane is (ref_rows, ref_cols).
[[noreturn, gnu::cold]] PTPU_COMPILED void store_shape_mismatch(index_t rows, index_t cols, index_t ref_rows,
                                                                index_t ref_cols);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void store_shape_mismatch(index_t rows, index_t cols, index_t ref_rows, index_t ref_cols) {
    throw error("OP1", "store",
                text("the vec has shape ", shape_text(rows, cols), " and the ref (collapsed to 2-D) ",
                     shape_text(ref_rows, ref_cols)),
                "store a value of the ref's shape, or store into a window store(x, ds(...), ..., v)");
}
#endif

template <class>
inline constexpr bool dependent_false = false;

/// The 2-D shape a ref loads as: leading dims collapse into rows; rank 1 is one row.
template <class T, class S, std::size_t R, class E>
std::array<index_t, 2> shape_2d(const ref<T, S, R, E>& r) {
    index_t rows = 1;
    for (std::size_t d = 0; d + 1 < R; ++d) rows *= r.shape(d);
    return {rows, r.shape(R - 1)};
}

/// The same, statically: rows are dyn when a leading extent is, cols the last extent.
template <class E>
constexpr index_t static_rows_2d() {
    index_t rows = 1;
    for (std::size_t d = 0; d + 1 < E::rank; ++d) {
        if (E::values[d] == dyn) return dyn;
        rows *= E::values[d];
    }
    return rows;
}
/// The vec type a load of a ref with extents E and element type T gives.
template <class T, class E>
using loaded_t = vec<std::remove_const_t<T>, static_rows_2d<E>(), E::values[E::rank - 1]>;
/// What load() of a ref in space S returns: loaded_t, or a dynamic vec when S takes no vector
/// loads (the S3/S4/21 static_assert names the mistake; a dyn value keeps later ops quiet).
template <class T, class S, class E>
using load_result_t = std::conditional_t<vector_loadable<S>, loaded_t<T, E>, vec<std::remove_const_t<T>>>;

template <index_t RR, index_t RC, index_t VR, index_t VC, operand_name Operand = operand_name{}>
constexpr bool static_store_ok() {
    constexpr bool ok = extents_agree(RR, VR) && extents_agree(RC, VC);
#define PTPU_RULE_TEXT_OP1_STORE                                                                   \
    "ptpu[OP1] store: the vec's static shape differs from the ref's (collapsed to 2-D); store a value " \
    "of the ref's shape, or store into a window store(x, ds(...), ..., v)"
    if constexpr (!ok) {
#if PTPU_COMPOSED_MESSAGES
        static_assert(sizeof(compile_error<with_shapes(PTPU_RULE_TEXT_OP1_STORE,
                                                       {{"ref", RR, RC, Operand}, {"vec", VR, VC}})>) > 0);
#else
        static_assert(ok, PTPU_RULE_TEXT_OP1_STORE);
#endif
    }
#undef PTPU_RULE_TEXT_OP1_STORE
    return ok;
}

// Compute type → stored type, per element (wrap for narrow integers, RNE for bf16/f16).
template <class T>
struct store_fn {
    T operator()(compute_t<T> x) const { return static_cast<T>(x); }
};
template <>
struct store_fn<bf16> {
    bf16 operator()(float x) const { return bf16(x); }
};
template <>
struct store_fn<f16> {
    f16 operator()(float x) const { return f16(x); }
};
template <class T>
struct load_fn {
    compute_t<T> operator()(T x) const { return static_cast<compute_t<T>>(x); }
};

// The copies between a ref's memory (a plane) and a vec's array, for dtypes a vec cannot read in
// place (bf16, f16, narrow integers: converted on the way): compiled once per dtype, whatever
// the static shapes.
template <class U, class P>
typename vec<U>::array_type load_values(const P& p) {
    using C = compute_t<U>;
    auto a = array_cache<C>::take(p.rows, p.cols);
    C* out = a.data();
    for (index_t i = 0; i < p.rows; ++i)
        for (index_t j = 0; j < p.cols; ++j) out[i * p.cols + j] = load_fn<U>{}(p.data[i * p.stride + j]);
    return a;
}
template <class T, class P, class C>
void store_values(const P& p, block_view<C> src, index_t rows, index_t cols) {
    for (index_t i = 0; i < rows; ++i)
        for (index_t j = 0; j < cols; ++j) p.data[i * p.stride + j] = store_fn<T>{}(src.data[i * src.stride + j]);
}

/// load() of the plane (data, stride, rows, cols) of a VMEM ref, once its shape is checked: into
/// `out` (a view inside a body, for f32/i32/bool), charged; false in timing-only mode (no
/// values). Compiled once per dtype, whatever the ref's shape.
template <class U>
bool load_plane(block_values<compute_t<U>>& out, const U* data, index_t stride, index_t rows, index_t cols) {
    using C = compute_t<U>;
    if (rows > 0 && cols > 0)
        check_dma_access(data, data + (rows - 1) * stride + cols, false, "load");  // DMA2, with detect_races
    else
        check_dma_access(data, data, false, "load");
    charge_loads(vregs(rows, cols, dtype_of<U>));
    if (timing_only()) return false;
    if constexpr (std::is_same_v<U, C>) {
        if (kernel_context* k = current_context(); k != nullptr && rows > 0 && cols > 0) {
            out = block_values<C>::view(data, stride, rows, cols, *k);
            return true;
        }
        auto a = array_cache<C>::take(rows, cols);
        copy_plane(a.data(), cols, data, stride, rows, cols);
        out = block_values<C>(std::move(a));
    } else {
        struct {
            const U* data;
            index_t rows, cols, stride;
        } p{data, rows, cols, stride};
        out = block_values<C>(load_values<U>(p));
    }
    return true;
}

/// store() of `values` (of the plane's shape, checked) into the plane (data, stride, rows, cols)
/// of a VMEM ref, charged. Compiled once per dtype, whatever the shapes.
template <class T>
void store_plane(T* data, index_t stride, index_t rows, index_t cols,
                 const block_values<compute_t<T>>& values, bool has_data) {
    using C = compute_t<T>;
    const T* lo = data;
    const T* hi = rows == 0 || cols == 0 ? data : data + (rows - 1) * stride + cols;
    check_dma_access(lo, hi, true, "store");  // DMA2, with detect_races
    charge_stores(vregs(rows, cols, dtype_of<T>));
    if (timing_only()) return;
    if (!has_data) no_values("store");
    // Vecs still reading this memory take their copy first; the vec itself is written (a pending
    // op evaluated) straight into it.
    if (kernel_context* k = current_context()) k->borrows.before_write(lo, hi, k->step, k->core, &values);
    if constexpr (std::is_same_v<T, C>) {
        values.store_to(data, stride, "store");
    } else {
        struct {
            T* data;
            index_t rows, cols, stride;
        } p{data, rows, cols, stride};
        store_values<T>(p, values.read("store"), rows, cols);
    }
}

#define PTPU_LOAD_STORE_OF(T)                                                                        \
    PTPU_INSTANTIATED(bool load_plane<T>(block_values<compute_t<T>>&, const T*, index_t, index_t, index_t)) \
    PTPU_INSTANTIATED(void store_plane<T>(T*, index_t, index_t, index_t, const block_values<compute_t<T>>&, bool))
PTPU_LOAD_STORE_OF(float)
PTPU_LOAD_STORE_OF(bf16)
PTPU_LOAD_STORE_OF(std::int32_t)
#undef PTPU_LOAD_STORE_OF

/// The address of element (i...) of `r` (already bounds-checked), for race detection.
template <class T, class S, std::size_t R, class E, class... I>
const T* element_at(const ref<T, S, R, E>& r, I... i) {
    const std::array<index_t, R> at{static_cast<index_t>(i)...};
    index_t off = 0;
    for (std::size_t d = 0; d < R; ++d) off += at[d] * r.strides()[d];
    return detail::advanced(r.data(), off);
}

/// The first and one-past-the-last element of a plane (for the borrow registry).
template <class P>
std::pair<const void*, const void*> plane_range(const P& p) {
    if (p.rows == 0 || p.cols == 0) return {p.data, p.data};
    return {p.data, p.data + (p.rows - 1) * p.stride + p.cols};
}

}  // namespace detail

/// Loads the whole VMEM ref `r` into a vec (x[...]), of the ref's static shape collapsed to 2-D
/// (vec<T, 8, 128> from a ref with extents<8, 128>). Charges its vregs as vector loads. Inside a
/// body an f32/i32/bool vec reads the ref in place (copy-on-write: a later write to the ref
/// through ptpu gives the vec its own copy first, so it keeps the loaded value; see
/// detail::block_values); other dtypes are converted into the vec's compute type.
template <class T, class S, std::size_t R, class E>
requires(R >= 1) [[nodiscard]] detail::load_result_t<T, S, E> load(const ref<T, S, R, E>& r) {
    using U = std::remove_const_t<T>;
    using C = compute_t<U>;
    using out_t = detail::load_result_t<T, S, E>;
    if constexpr (!vector_loadable<S>) {
        static_assert(rules::require_vector_load<S>());
        return {};
    } else {
        const auto p = r.plane();  // checks the view collapses to 2-D (R1) in both modes
        detail::block_values<C> values;
        if (!detail::load_plane<U>(values, p.data, p.stride, p.rows, p.cols))
            return out_t(shape_only, p.rows, p.cols);
        return detail::vec_access::make<out_t>(std::move(values), p.rows, p.cols);
    }
}

// load of a whole VMEM ref of run-time shape (every window in a body of a run-time configured
// call), compiled once for the common dtypes.
#define PTPU_DYNAMIC_LOAD(T)                                                                  \
    PTPU_INSTANTIATED(detail::load_result_t<T, vmem, extents<dyn, dyn>> load<T, vmem, 2, extents<dyn, dyn>>( \
        const ref<T, vmem, 2, extents<dyn, dyn>>&))
PTPU_DYNAMIC_LOAD(float)
PTPU_DYNAMIC_LOAD(const float)
PTPU_DYNAMIC_LOAD(std::int32_t)
#undef PTPU_DYNAMIC_LOAD

/// Loads the window ds(...) per dim of a VMEM ref: load(x, ds(r, n), ds(c, m)) is Pallas's
/// x[pl.ds(r, n), pl.ds(c, m)]. The window must lie within the ref (R2); its shape is static
/// where the sizes are (ds(r, c<8>)), dynamic otherwise.
template <class T, class S, std::size_t R, class E, class... Sl>
requires(R >= 1 && sizeof...(Sl) == R && (any_slice<Sl> && ...))
    [[nodiscard]] detail::load_result_t<T, S, extents<slice_extent<Sl>...>> load(const ref<T, S, R, E>& r,
                                                                                  Sl... s) {
    return load(r.at(s...));
}

/// Stores `v` into the whole VMEM ref `r` (x[...] = v). The shapes must be equal (OP1: at
/// compile time per dim where both are static) and the dtypes too (OP3: cast<T>(v) first).
/// Charges v's vregs as vector stores. bf16/f16 values are rounded to nearest even, narrow
/// integers wrap.
template <class T, class S, std::size_t R, class E, class U, index_t VR, index_t VC>
requires(R >= 1) void store(const ref<T, S, R, E>& r, const vec<U, VR, VC>& v) {
    constexpr index_t rr = detail::static_rows_2d<E>();
    constexpr index_t rc = E::values[R - 1];
    if constexpr (!vector_storable<S>) {
        static_assert(rules::require_vector_store<S>());
    } else if constexpr (std::is_const_v<T>) {
        static_assert(detail::dependent_false<T>,
                      "ptpu[OP3] store: the ref is read-only (ref<const T>); store into an "
                      "output or scratch ref");
    } else if constexpr (!std::is_same_v<T, U>) {
        static_assert(detail::dependent_false<T>,
                      "ptpu[OP3] store: the vec's dtype differs from the ref's; cast<T>(v) "
                      "first (ptpu never converts implicitly)");
    } else if constexpr (!detail::static_store_ok<rr, rc, VR, VC, space_operand<S>>()) {
    } else {
        const auto p = r.plane();  // R1, as for load
        if (!(rr != dyn && rc != dyn && VR != dyn && VC != dyn) && (p.rows != v.rows() || p.cols != v.cols()))
            detail::store_shape_mismatch(v.rows(), v.cols(), p.rows, p.cols);
        detail::store_plane<T>(p.data, p.stride, p.rows, p.cols, detail::vec_access::storage(v),
                               v.has_data());
    }
}

/// Stores `v` into a window of a rank-1, 2 or 3 VMEM ref: store(x, ds(r, n), ds(c, m), v) (the
/// window's shape is static where the sizes are, ds(r, c<8>), checked at run time otherwise).
template <class T, class S, class E, any_slice S0, class U, index_t VR, index_t VC>
void store(const ref<T, S, 1, E>& r, S0 s0, const vec<U, VR, VC>& v) {
    store(r.at(s0), v);
}
template <class T, class S, class E, any_slice S0, any_slice S1, class U, index_t VR, index_t VC>
void store(const ref<T, S, 2, E>& r, S0 s0, S1 s1, const vec<U, VR, VC>& v) {
    store(r.at(s0, s1), v);
}
template <class T, class S, class E, any_slice S0, any_slice S1, any_slice S2, class U, index_t VR,
          index_t VC>
void store(const ref<T, S, 3, E>& r, S0 s0, S1 s1, S2 s2, const vec<U, VR, VC>& v) {
    store(r.at(s0, s1, s2), v);
}

/// Reads one scalar (s[i, j] in Pallas): SMEM, or VMEM (a vector load and an extract). Charges
/// one scalar op, plus one vector load on VMEM [est]. Runs in timing-only mode too: scalars
/// steer control flow and index maps.
template <class T, class S, std::size_t R, class E, std::integral... I>
requires(sizeof...(I) == R) [[nodiscard]] std::remove_const_t<T> sload(const ref<T, S, R, E>& r, I... i) {
    if constexpr (!scalar_loadable<S>) {
        static_assert(rules::require_scalar_load<S>());
        return {};
    } else {
        const std::remove_const_t<T> v = r(i...);  // bounds first (R2): a failed op charges nothing
        if (const kernel_context* k = detail::current_context(); k != nullptr && !k->pending.empty()) {
            const T* at = detail::element_at(r, i...);
            detail::check_dma_access(at, at + 1, false, "sload");
        }
        detail::charge_scalar(1);
        if constexpr (S::kind == space_kind::vmem) detail::charge_loads(1);
        return v;
    }
}

/// Writes one scalar to SMEM (s[i, j] = v). VMEM takes no scalar stores (S4). Charges one scalar
/// op; runs in timing-only mode too.
template <class T, class S, std::size_t R, class E, class V, std::integral... I>
requires(sizeof...(I) == R && scalar_value<V>) void sstore(const ref<T, S, R, E>& r, V v, I... i) {
    if constexpr (!scalar_storable<S>) {
        static_assert(rules::require_scalar_store<S>());
    } else if constexpr (std::is_const_v<T>) {
        static_assert(detail::dependent_false<T>,
                      "ptpu[OP3] sstore: the ref is read-only (ref<const T>); store into an "
                      "output or scratch ref");
    } else {
        if (const kernel_context* k = detail::current_context(); k != nullptr && !k->pending.empty()) {
            const T* at = detail::element_at(r, i...);
            detail::check_dma_access(at, at + 1, true, "sstore");
        }
        if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)
            r(i...) = T(static_cast<float>(v));
        else
            r(i...) = static_cast<T>(v);
        detail::charge_scalar(1);
    }
}

}  // namespace ptpu
