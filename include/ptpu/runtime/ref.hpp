// Defines ref<T, Space, Rank, Extents>, what a kernel body receives: a typed view whose memory
// space decides what compiles (the accessibility table, via memory/rules.hpp): vmem refs give
// vector access (through the charged ops load / store; uncharged_array() is the named escape
// hatch, R3), smem refs scalar access, any/hbm refs DMA only (S3, S4, check 21). Extents (default: all dynamic) carries the shape where it is static: pallas_call hands
// bodies refs of their block shape, ref<float, vmem, 2, extents<8, 128>>, and ops check shapes
// against it at compile time (OP1).
#pragma once

#include <Eigen/Core>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "ptpu/core/error.hpp"
#include "ptpu/core/extents.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/message.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

namespace detail {
// ref_label and ref_where are in runtime/context.hpp (a pending async copy keeps its refs' labels).

// `p` moved on by `n` elements. A ref of a call predicted without data points at no memory (its
// array's address is null): its sub-refs' addresses are still numbers moved as on data, so that
// refs keep telling apart where they point, but moved as integers: arithmetic on a null pointer
// is undefined behaviour.
template <class T>
constexpr T* advanced(T* p, index_t n) {
    if (std::is_constant_evaluated()) return p + n;
    return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) +
                                static_cast<std::uintptr_t>(n) * sizeof(T));
}

// A ref's construction errors, built out of line: no copy per ref type.
/// V3: the elements of a ref of this shape, times `itemsize` bytes, overflow index_t.
[[noreturn, gnu::cold]] PTPU_COMPILED void raise_extent_overflow(ref_label l, const index_t* shape, std::size_t rank,
                                                                std::size_t d, std::size_t itemsize);
/// R1: a run-time extent differs from the ref's static one.
[[noreturn, gnu::cold]] PTPU_COMPILED void raise_extent_mismatch(index_t got, std::size_t d, index_t expected);
/// R2: index i, or the slice ds(start, size), lies outside dim d (of extent `extent`).
[[noreturn, gnu::cold]] PTPU_COMPILED void raise_index_outside(ref_label l, index_t i, std::size_t d,
                                                               index_t extent);
[[noreturn, gnu::cold]] PTPU_COMPILED void raise_slice_outside(ref_label l, index_t start, index_t size,
                                                               std::size_t d, index_t extent);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void raise_index_outside(ref_label l, index_t i, std::size_t d, index_t extent) {
    throw error("R2", ref_where(l),
                "index " + std::to_string(i) + " is outside dim " + std::to_string(d) + " of extent " +
                    std::to_string(extent),
                "keep indices within the ref");
}
PTPU_COMPILED void raise_slice_outside(ref_label l, index_t start, index_t size, std::size_t d,
                                       index_t extent) {
    throw error("R2", ref_where(l),
                "slice ds(" + std::to_string(start) + ", " + std::to_string(size) + ") is outside dim " +
                    std::to_string(d) + " of extent " + std::to_string(extent),
                "keep ds(start, size) within the ref");
}
PTPU_COMPILED void raise_extent_overflow(ref_label l, const index_t* shape, std::size_t rank, std::size_t d,
                                         std::size_t itemsize) {
    std::string text = "(";
    for (std::size_t k = 0; k < rank; ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
    throw error(std::string(PTPU_RULE_TEXT_V3) + " (" + ref_where(l) + " of shape " + text + "), dim " +
                std::to_string(d) + ": its elements times " + std::to_string(itemsize) + " bytes overflow)");
}
PTPU_COMPILED void raise_extent_mismatch(index_t got, std::size_t d, index_t expected) {
    std::string what = "extent ";
    what += std::to_string(got);
    what += " of dim ";
    what += std::to_string(d);
    what += " differs from the static extent ";
    what += std::to_string(expected);
    throw error("R1", "ref", what, "give the ref the shape of its extents<...>, or use dyn extents");
}
#endif

template <class>
inline constexpr bool always_false_v = false;

/// What x[all], x.mat() and x(ds, ds) give after their R3 error: it absorbs the Eigen
/// expressions code written for them used (=, +=, arithmetic, setZero, noalias, (i, j)), so the
/// error is the only message.
struct removed_view {
    template <class U>
    removed_view& operator=(const U&) {
        return *this;
    }
    template <class U>
    removed_view& operator+=(const U&) {
        return *this;
    }
    template <class U>
    removed_view& operator-=(const U&) {
        return *this;
    }
    template <class U>
    removed_view& operator*=(const U&) {
        return *this;
    }
    template <class U>
    removed_view& operator/=(const U&) {
        return *this;
    }
    removed_view& setZero() { return *this; }
    removed_view& noalias() { return *this; }
    template <class... I>
    removed_view& operator()(I...) {
        return *this;
    }
    removed_view operator-() const { return {}; }
#define PTPU_REF_REMOVED_OP(op)                                                        \
    friend removed_view operator op(const removed_view&, const removed_view&) {       \
        return {};                                                                     \
    }                                                                                  \
    template <class U>                                                                 \
    friend removed_view operator op(const removed_view&, const U&) {                   \
        return {};                                                                     \
    }                                                                                  \
    template <class U>                                                                 \
    friend removed_view operator op(const U&, const removed_view&) {                   \
        return {};                                                                     \
    }
    PTPU_REF_REMOVED_OP(+)
    PTPU_REF_REMOVED_OP(-)
    PTPU_REF_REMOVED_OP(*)
    PTPU_REF_REMOVED_OP(/)
#undef PTPU_REF_REMOVED_OP
};

// One function per removed spelling, instantiated once whatever the ref: one message per TU.
template <class A>
removed_view removed_x_all() {
    static_assert(always_false_v<A>,
                  "ptpu[R3] x[all]: a raw Eigen view of a ref computes without charging TPU work; use "
                  "load(x) and store(x, v) (charged), or x.uncharged_array() for work you charge yourself");
    return {};
}
template <class A>
removed_view removed_x_window() {
    static_assert(always_false_v<A>,
                  "ptpu[R3] x(ds, ds): a raw Eigen view of a window computes without charging TPU work; use "
                  "load(x, ds(..), ds(..)) and store(x, ds(..), ds(..), v) (charged), or "
                  "x.at(ds(..), ds(..)).uncharged_array()");
    return {};
}
template <class A>
removed_view removed_x_mat() {
    static_assert(always_false_v<A>,
                  "ptpu[R3] x.mat(): a raw Eigen matrix view of a ref computes products without charging "
                  "MXU work; use dot(load(a), load(b)) (charged), or x.uncharged_matrix() for work you "
                  "charge yourself");
    return {};
}

// A ref converts implicitly where no static extent is gained (static -> dyn, or equal), and
// explicitly, checked at run time, where one is (dyn -> static). Two different static extents
// never convert: the conversion is declared implicit only to reach the static_assert (R1).
template <class From, class To>
constexpr bool extents_convert_implicitly() {
    for (std::size_t d = 0; d < To::rank; ++d)
        if (To::values[d] != dyn && From::values[d] == dyn) return false;
    return true;
}
// A ref as a compile-time message names it: "source `weights` (8, 128)", "destination (16, dyn)".
template <class S, class E>
constexpr void put_ref(rule_message& m, std::string_view role) {
    m << role;
    if (!space_operand<S>.empty()) m << " `" << space_operand<S> << "`";
    m << " (";
    for (std::size_t d = 0; d < E::rank; ++d) {
        m << (d ? ", " : "");
        if (E::values[d] == dyn)
            m << "dyn";
        else
            m << E::values[d];
    }
    m << ")";
}
// `literal` about a copy from a ref of (S1, E1) to one of (S2, E2): "...; source `w` (8, 128),
// destination (16, 128); fix" (DMA1).
template <class S1, class E1, class S2, class E2>
constexpr rule_message about_copy(std::string_view literal) {
    rule_message about;
    put_ref<S1, E1>(about, "source");
    about << ", ";
    put_ref<S2, E2>(about, "destination");
    return with_subject(literal, about.view());
}
// `literal` about a copy's destination, named when it is a named operand's ref (R4).
template <class S>
constexpr rule_message about_destination(std::string_view literal) {
    rule_message about;
    if (!space_operand<S>.empty()) about << "the destination is `" << space_operand<S> << "`";
    return with_subject(literal, about.view());
}

// The static extents of ref.at(s...): a slice's size per slice (dyn unless ds(start, c<N>)),
// nothing for an integer (the dim is squeezed out), the ref's own for the dims past the indices.
template <class... S>
inline constexpr std::size_t squeezed = (std::size_t{0} + ... + (any_slice<S> ? 0 : 1));
template <class E, class... S>
constexpr auto at_extents_values() {
    constexpr bool is_slice[] = {any_slice<S>...};
    constexpr index_t size[] = {slice_extent<std::remove_cvref_t<S>>...};
    std::array<index_t, E::rank - squeezed<S...>> out{};
    std::size_t k = 0;
    for (std::size_t d = 0; d < sizeof...(S); ++d)
        if (is_slice[d]) out[k++] = size[d];
    for (std::size_t d = sizeof...(S); d < E::rank; ++d) out[k++] = E::values[d];
    return out;
}
template <class E, class... S>
using at_extents_t = extents_from_t<at_extents_values<E, S...>()>;

template <class From, class To>
constexpr bool extents_compatible() {
    for (std::size_t d = 0; d < To::rank; ++d)
        if (!extents_agree(From::values[d], To::values[d])) return false;
    return true;
}
}  // namespace detail

/// A view of Rank dims over T in memory space Space. Strides are in elements; the last dim is
/// contiguous for every ref ptpu hands out. Extents are the static extents (dyn where the extent
/// is known at run time only); the run-time shape always agrees with them (checked on
/// construction, R1).
template <class T, class Space, std::size_t Rank, class Extents = dextents<Rank>>
class ref {
    static_assert(any_extents<Extents> && Extents::rank == Rank,
                  "ptpu[R1] ref<T, Space, Rank, Extents>: Extents must be extents<...> with Rank values");

public:
    using value_type = T;
    using memory = Space;
    using extents_type = Extents;
    static constexpr std::size_t rank = Rank;

    using eigen_array = Eigen::Array<std::remove_const_t<T>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using eigen_matrix =
        Eigen::Matrix<std::remove_const_t<T>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using array_map = Eigen::Map<std::conditional_t<std::is_const_v<T>, const eigen_array, eigen_array>, 0,
                                 Eigen::OuterStride<>>;
    using matrix_map = Eigen::Map<std::conditional_t<std::is_const_v<T>, const eigen_matrix, eigen_matrix>, 0,
                                  Eigen::OuterStride<>>;

    /// A null ref (of the static extents, zero where dynamic).
    constexpr ref() {
        for (std::size_t d = 0; d < Rank; ++d) shape_[d] = Extents::values[d] == dyn ? 0 : Extents::values[d];
    }
    constexpr ref(T* data, const std::array<index_t, Rank>& shape, const std::array<index_t, Rank>& strides)
        : data_(data), shape_(shape), strides_(strides) {
        check_extents();
    }
    /// A contiguous row-major ref.
    constexpr ref(T* data, const std::array<index_t, Rank>& shape) : data_(data), shape_(shape) {
        index_t s = 1;
        for (std::size_t d = Rank; d-- > 0;) {
            strides_[d] = s;
            if (!mul_fits(s, shape_[d], s)) extent_overflow(d);
        }
        if (!mul_fits(s, static_cast<index_t>(sizeof(T)), s)) extent_overflow(0);  // its bytes too (V3)
        check_extents();
    }
    /// From a ref of other extents (and T to const T): implicit where no static extent is gained,
    /// explicit (and checked, R1) where one is; two different static extents do not convert.
    /// A named operand's ref (named_space) and a ref of its plain space convert both ways.
    template <class U, class S, class E>
    requires std::is_convertible_v<U (*)[], T (*)[]> && std::is_same_v<unnamed_space_t<S>, unnamed_space_t<Space>>
    constexpr explicit(!detail::extents_convert_implicitly<E, Extents>())
        ref(const ref<U, S, Rank, E>& o)  // NOLINT(google-explicit-constructor): static -> dyn
        : data_(o.data_), shape_(o.shape_), strides_(o.strides_), label_(o.label_) {
        static_assert(detail::extents_compatible<E, Extents>(),
                      "ptpu[R1] ref: the static extents of the two refs differ; a ref converts only to "
                      "equal extents or to dyn ones");
        check_extents();
    }

    [[nodiscard]] constexpr const std::array<index_t, Rank>& shape() const { return shape_; }
    [[nodiscard]] constexpr const std::array<index_t, Rank>& strides() const { return strides_; }
    /// Extent d: the static one when there is one (a constant to the optimizer).
    [[nodiscard]] constexpr index_t shape(std::size_t d) const {
        return Extents::values[d] != dyn ? Extents::values[d] : shape_[d];
    }
    [[nodiscard]] constexpr index_t size() const {
        index_t n = 1;
        for (index_t e : shape_) n *= e;
        return n;
    }
    /// The raw pointer (for DMA engines and tests; bodies use the typed accessors). Writes
    /// through it bypass copy-on-write loads: a DMA engine writing VMEM while a body runs calls
    /// detail::before_write first (runtime/context.hpp).
    [[nodiscard]] constexpr T* data() const { return data_; }
    /// Which operand of the call this ref stands for (pallas_call's label), for messages.
    [[nodiscard]] constexpr detail::ref_label label() const { return label_; }
    /// The same ref, labelled as operand `l` of a call (pallas_call does this; R2 names it).
    [[nodiscard]] constexpr ref labelled(detail::ref_label l) const {
        ref r = *this;
        r.label_ = l;
        return r;
    }

    // The whole-ref Eigen views of earlier versions, `x[all]`, `x.mat()` and the window
    // `x(ds, ds)`, computed on real data and charged no TPU work (R3). They do not compile: the
    // charged spellings are load(x) / store(x, v) (ops/load_store.hpp) and their windows, and
    // the uncharged views are named for what they skip, uncharged_array() / uncharged_matrix().
    template <class A = all_t>
    requires std::is_same_v<A, all_t> detail::removed_view operator[](A) const {
        return detail::removed_x_all<A>();
    }
    template <any_slice A, any_slice B>
    detail::removed_view operator()(A, B) const {
        return detail::removed_x_window<slice>();
    }
    template <class A = void>
    detail::removed_view mat() const {
        return detail::removed_x_mat<A>();
    }

    /// The escape hatch: the whole VMEM ref as a 2-D Eigen array (leading dims collapsed into
    /// rows) that computes on real data and charges NOTHING: the timing model does not see what
    /// is done through it. For code whose TPU work is charged explicitly (charge(work{...}),
    /// charge_seconds) or deliberately left out (a pure-DMA test kernel). Prefer load / store.
    /// VMEM only (S3, S4, 21); a writable view first gives vecs loaded from this memory their
    /// own copy (copy-on-write loads, ops/vec.hpp).
    [[nodiscard]] array_map uncharged_array() const {
        static_assert(rules::require_vector_load<Space>());
        return uncharged_view<array_map>();
    }
    /// The same as an Eigen matrix (for products the MXU would run): charges nothing.
    [[nodiscard]] matrix_map uncharged_matrix() const {
        static_assert(rules::require_vector_load<Space>());
        return uncharged_view<matrix_map>();
    }

    /// Scalar access: `s(i, j)` / `s[i]`. SMEM: load and store; VMEM: load only (S4).
    template <class... I>
    requires(sizeof...(I) == Rank && (std::is_integral_v<I> && ...)) [[nodiscard]] decltype(auto) operator()(
        I... i) const {
        static_assert(rules::require_scalar_load<Space>());
        detail::note_scalar_access();  // its value may differ at another step (the body memo)
        T& v = data_[offset({static_cast<index_t>(i)...})];
        if constexpr (scalar_storable<Space>)
            return v;
        else
            return static_cast<std::remove_const_t<T>>(v);
    }
    template <class I>
    requires(Rank == 1 && std::is_integral_v<I>) [[nodiscard]] decltype(auto) operator[](I i) const {
        return (*this)(i);
    }

    /// Pallas `.at[...]`: the sub-ref at leading index i (rank drops by one; the other static
    /// extents stay). Down to rank 0 for semaphores (one semaphore of an array, S60).
    [[nodiscard]] ref<T, Space, (Rank > 0 ? Rank - 1 : 0), typename detail::drop_first<Extents>::type> at(
        index_t i) const requires(Rank > 1 || (Rank == 1 && Space::kind == space_kind::semaphore)) {
        check_index(i, 0);
        std::array<index_t, Rank - 1> s{}, st{};
        for (std::size_t d = 1; d < Rank; ++d) {
            s[d - 1] = shape_[d];
            st[d - 1] = strides_[d];
        }
        ref<T, Space, Rank - 1, typename detail::drop_first<Extents>::type> r{
            detail::advanced(data_, i * strides_[0]), s, st};
        // (Rank - 1 here: the function exists only for Rank >= 1.)
        r.label_ = label_;
        return r;
    }
    /// Pallas `.at[...]` with several indices, `x.at(ds(4, 8), 1)` as `x.at[pl.ds(4, 8), 1]`: one
    /// per leading dim, each a slice (ds: the dim stays, its extent the slice's size, static for
    /// ds(start, c<N>)) or an integer (the dim is squeezed out); dims past the last index stay
    /// whole. Any space (DMA sources and destinations). Out of range: R2.
    template <class... S>
    requires(sizeof...(S) >= 1 && sizeof...(S) <= Rank && ((any_slice<S> || integer<S>) && ...) &&
             !(sizeof...(S) == 1 && (integer<S> && ...)) &&
             (Rank > detail::squeezed<S...> || Space::kind == space_kind::semaphore))
        [[nodiscard]] ref<T, Space, Rank - detail::squeezed<S...>, detail::at_extents_t<Extents, S...>> at(
            S... s) const {
        constexpr std::size_t R = Rank - detail::squeezed<S...>;
        T* p = data_;
        std::array<index_t, R> shape{}, st{};
        std::size_t d = 0, k = 0;
        auto one = [&](const auto& a) {
            if constexpr (any_slice<decltype(a)>) {
                const slice sl = a;
                check_window(sl, d);
                p = detail::advanced(p, sl.start * strides_[d]);
                shape[k] = sl.size;
                st[k] = strides_[d];
                ++k;
            } else {
                const index_t i = value_of(a);
                check_index(i, d);
                p = detail::advanced(p, i * strides_[d]);
            }
            ++d;
        };
        (one(s), ...);
        if constexpr (sizeof...(S) < Rank)
            for (; d < Rank; ++d, ++k) {
                shape[k] = shape_[d];
                st[k] = strides_[d];
            }
        ref<T, Space, R, detail::at_extents_t<Extents, S...>> r{p, shape, st};
        r.label_ = label_;
        return r;
    }

    /// A read-only ref of the same memory.
    [[nodiscard]] ref<const T, Space, Rank, Extents> as_const() const { return *this; }

    /// The ref as a 2-D plane: data, rows (leading dims collapsed), cols and row stride; R1
    /// when the leading dims are not contiguous. What ops read and write through (no Eigen).
    struct plane_t {
        T* data;
        index_t rows, cols, stride;
    };
    [[nodiscard]] plane_t plane() const {
        // Leading dims collapse into rows only when they are laid out contiguously.
        for (std::size_t d = 0; d + 2 < Rank; ++d)
            check(strides_[d] == strides_[d + 1] * shape_[d + 1], "R1", "ref",
                  "the leading dims of this view are not contiguous",
                  "index with at(i) down to rank 2 first");
        return {data_, rows(), cols(), Rank >= 2 ? strides_[Rank - 2] : cols()};
    }

private:
    template <class Map>
    [[nodiscard]] Map uncharged_view() const {
        const plane_t p = plane();
        if (p.rows > 0 && p.cols > 0) {
            const T* hi = p.data + (p.rows - 1) * p.stride + p.cols;
            detail::check_dma_access(p.data, hi, !std::is_const_v<T>, "uncharged view");  // DMA2
            if constexpr (!std::is_const_v<T>) detail::before_write(p.data, hi);
        }
        return Map(p.data, p.rows, p.cols, Eigen::OuterStride<>(p.stride));
    }
    [[nodiscard]] index_t rows() const {
        index_t r = 1;
        for (std::size_t d = 0; d + 1 < Rank; ++d) r *= shape_[d];
        return r;
    }
    [[nodiscard]] index_t cols() const { return Rank == 0 ? 1 : shape_[Rank - 1]; }
    // Bounds checks run on every access: the message is only built on the way to the error.
    void check_window(const slice& s, std::size_t d) const {
        // start + size <= extent, without forming start + size (either may be near INT64_MAX).
        if (s.start >= 0 && s.size >= 0 && s.size <= shape_[d] && s.start <= shape_[d] - s.size) return;
        detail::raise_slice_outside(label_, s.start, s.size, d, shape_[d]);
    }
    void check_index(index_t i, std::size_t d) const {
        if (i >= 0 && i < shape_[d]) return;
        detail::raise_index_outside(label_, i, d, shape_[d]);
    }
    // V3: the elements (or bytes) of a contiguous ref of this shape do not fit in index_t.
    [[noreturn, gnu::cold]] void extent_overflow(std::size_t d) const {
        detail::raise_extent_overflow(label_, shape_.data(), Rank, d, sizeof(T));
    }
    // R1: the run-time shape agrees with the static extents (the ref's type states them).
    constexpr void check_extents() const {
        if constexpr (!Extents::is_dynamic)
            for (std::size_t d = 0; d < Rank; ++d)
                if (Extents::values[d] != dyn && shape_[d] != Extents::values[d]) extent_mismatch(d);
    }
    [[noreturn]] void extent_mismatch(std::size_t d) const {
        detail::raise_extent_mismatch(shape_[d], d, Extents::values[d]);
    }
    [[nodiscard]] index_t offset(const std::array<index_t, Rank>& i) const {
        index_t o = 0;
        for (std::size_t d = 0; d < Rank; ++d) {
            check_index(i[d], d);
            o += i[d] * strides_[d];
        }
        return o;
    }

    T* data_ = nullptr;
    std::array<index_t, Rank> shape_{};
    std::array<index_t, Rank> strides_{};
    detail::ref_label label_{};

    template <class, class, std::size_t, class>
    friend class ref;
};

template <class T, std::size_t R, class E = dextents<R>>
using vmem_ref = ref<T, vmem, R, E>;
template <class T, std::size_t R, class E = dextents<R>>
using smem_ref = ref<T, smem, R, E>;
template <class T, std::size_t R, class E = dextents<R>>
using any_ref = ref<T, any, R, E>;

}  // namespace ptpu
