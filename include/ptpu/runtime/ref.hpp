// Defines ref<T, Space, Rank>, what a kernel body receives: a typed view whose memory space
// decides what compiles (the accessibility table, via memory/rules.hpp): vmem refs give vector
// access (as Eigen arrays), smem refs scalar access, any/hbm refs DMA only (S3, S4, check 21).
#pragma once

#include <Eigen/Core>

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"

namespace ptpu {

/// A view of Rank dims over T in memory space Space. Strides are in elements; the last dim is
/// contiguous for every ref ptpu hands out.
template <class T, class Space, std::size_t Rank>
class ref {
public:
    using value_type = T;
    using memory = Space;
    static constexpr std::size_t rank = Rank;

    using eigen_array = Eigen::Array<std::remove_const_t<T>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using eigen_matrix =
        Eigen::Matrix<std::remove_const_t<T>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using array_map = Eigen::Map<std::conditional_t<std::is_const_v<T>, const eigen_array, eigen_array>, 0,
                                 Eigen::OuterStride<>>;
    using matrix_map = Eigen::Map<std::conditional_t<std::is_const_v<T>, const eigen_matrix, eigen_matrix>, 0,
                                  Eigen::OuterStride<>>;

    constexpr ref() = default;
    constexpr ref(T* data, const std::array<index_t, Rank>& shape, const std::array<index_t, Rank>& strides)
        : data_(data), shape_(shape), strides_(strides) {}
    /// A contiguous row-major ref.
    constexpr ref(T* data, const std::array<index_t, Rank>& shape) : data_(data), shape_(shape) {
        index_t s = 1;
        for (std::size_t d = Rank; d-- > 0;) {
            strides_[d] = s;
            s *= shape_[d];
        }
    }

    [[nodiscard]] constexpr const std::array<index_t, Rank>& shape() const { return shape_; }
    [[nodiscard]] constexpr const std::array<index_t, Rank>& strides() const { return strides_; }
    [[nodiscard]] constexpr index_t shape(std::size_t d) const { return shape_[d]; }
    [[nodiscard]] constexpr index_t size() const {
        index_t n = 1;
        for (index_t e : shape_) n *= e;
        return n;
    }
    /// The raw pointer (for DMA engines and tests; bodies use the typed accessors).
    [[nodiscard]] constexpr T* data() const { return data_; }

    /// `x[all]`: the whole ref as a 2-D Eigen array (leading dims collapsed into rows), for vector
    /// loads and stores (VMEM only: S3, S4, check 21).
    [[nodiscard]] array_map operator[](all_t) const {
        static_assert(rules::require_vector_load<Space>());
        return as_2d<array_map>(0, rows(), 0, cols());
    }
    /// `x(ds(r, n), ds(c, m))`: a 2-D window of a rank-2 VMEM ref (Pallas `x[ds, ds]`; C++20 has
    /// no multi-argument operator[]).
    [[nodiscard]] array_map operator()(slice r, slice c) const {
        static_assert(rules::require_vector_load<Space>());
        static_assert(Rank == 2, "ptpu[R1] ref: x(ds, ds) needs a rank-2 ref; use at(i) first");
        check_window(r, 0);
        check_window(c, 1);
        return as_2d<array_map>(r.start, r.size, c.start, c.size);
    }
    /// `x.mat()`: the whole ref as a 2-D Eigen matrix, for dot products (VMEM only).
    [[nodiscard]] matrix_map mat() const {
        static_assert(rules::require_vector_load<Space>());
        return as_2d<matrix_map>(0, rows(), 0, cols());
    }

    /// Scalar access: `s(i, j)` / `s[i]`. SMEM: load and store; VMEM: load only (S4).
    template <class... I>
    requires(sizeof...(I) == Rank && (std::is_integral_v<I> && ...)) [[nodiscard]] decltype(auto) operator()(
        I... i) const {
        static_assert(rules::require_scalar_load<Space>());
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

    /// Pallas `.at[...]`: the sub-ref at leading index i (rank drops by one).
    [[nodiscard]] ref<T, Space, Rank - 1> at(index_t i) const requires(Rank > 1) {
        check_index(i, 0);
        std::array<index_t, Rank - 1> s{}, st{};
        for (std::size_t d = 1; d < Rank; ++d) {
            s[d - 1] = shape_[d];
            st[d - 1] = strides_[d];
        }
        return {data_ + i * strides_[0], s, st};
    }
    /// Pallas `.at[ds, ...]`: a sub-ref of the same rank (any space: DMA sources/destinations).
    template <class... S>
    requires(sizeof...(S) == Rank && (std::is_same_v<S, slice> && ...)) [[nodiscard]] ref at(S... s) const {
        const std::array<slice, Rank> sl{s...};
        ref r = *this;
        for (std::size_t d = 0; d < Rank; ++d) {
            check_window(sl[d], d);
            r.data_ += sl[d].start * strides_[d];
            r.shape_[d] = sl[d].size;
        }
        return r;
    }

    /// A read-only ref of the same memory.
    [[nodiscard]] ref<const T, Space, Rank> as_const() const { return {data_, shape_, strides_}; }

private:
    [[nodiscard]] index_t rows() const {
        index_t r = 1;
        for (std::size_t d = 0; d + 1 < Rank; ++d) r *= shape_[d];
        return r;
    }
    [[nodiscard]] index_t cols() const { return Rank == 0 ? 1 : shape_[Rank - 1]; }
    template <class Map>
    [[nodiscard]] Map as_2d(index_t r0, index_t nr, index_t c0, index_t nc) const {
        // Leading dims collapse into rows only when they are laid out contiguously.
        for (std::size_t d = 0; d + 2 < Rank; ++d)
            check(strides_[d] == strides_[d + 1] * shape_[d + 1], "R1", "ref",
                  "the leading dims of this view are not contiguous",
                  "index with at(i) down to rank 2 first");
        const index_t row_stride = Rank >= 2 ? strides_[Rank - 2] : cols();
        return Map(data_ + r0 * row_stride + c0, nr, nc, Eigen::OuterStride<>(row_stride));
    }
    // Bounds checks run on every access: the message is only built on the way to the error.
    void check_window(const slice& s, std::size_t d) const {
        if (s.start >= 0 && s.size >= 0 && s.start + s.size <= shape_[d]) return;
        throw error("R2", "ref",
                    "slice ds(" + std::to_string(s.start) + ", " + std::to_string(s.size) +
                        ") is outside dim " + std::to_string(d) + " of extent " + std::to_string(shape_[d]),
                    "keep ds(start, size) within the ref");
    }
    void check_index(index_t i, std::size_t d) const {
        if (i >= 0 && i < shape_[d]) return;
        throw error("R2", "ref",
                    "index " + std::to_string(i) + " is outside dim " + std::to_string(d) + " of extent " +
                        std::to_string(shape_[d]),
                    "keep indices within the ref");
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

    template <class, class, std::size_t>
    friend class ref;
};

template <class T, std::size_t R>
using vmem_ref = ref<T, vmem, R>;
template <class T, std::size_t R>
using smem_ref = ref<T, smem, R>;
template <class T, std::size_t R>
using any_ref = ref<T, any, R>;

}  // namespace ptpu
