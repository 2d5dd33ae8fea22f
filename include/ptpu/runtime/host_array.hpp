// Defines the HBM side of a call: host_array<A> (owning, typed by an Array<T, dims...>; a
// contiguous range of its elements, so range-for, <algorithm> and <ranges> take it),
// host_array<dyn_array<T, Rank>> (the same of run-time extents: dynamic_call's outputs) and
// host_view<T> (non-owning, over user memory), all contiguous row-major.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/linkage.hpp"

namespace ptpu {

/// A non-owning view of a contiguous row-major array in host memory ("HBM").
template <class T>
struct host_view {
    T* data = nullptr;
    int rank = 0;
    std::array<index_t, max_rank> shape{};

    /// The element count; ptpu[V3] naming the dim when it overflows index_t.
    [[nodiscard]] constexpr index_t size() const {
        index_t n = 1;
        for (int i = 0; i < rank; ++i)
            n = checked_mul(n, shape[static_cast<std::size_t>(i)],
                            [i] { return "host_view, dim " + std::to_string(i) + ": the element count"; });
        return n;
    }
};

namespace detail {
/// The elements of an array of this shape (host_array<dyn_array>), or ptpu[V3] naming the dim
/// whose product overflows index_t.
PTPU_COMPILED index_t element_count(const index_t* shape, std::size_t rank);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED index_t element_count(const index_t* shape, std::size_t rank) {
    index_t n = 1;
    for (std::size_t d = 0; d < rank; ++d)
        n = checked_mul(n, shape[d],
                        [d] { return "host_array, dim " + std::to_string(d) + ": the element count"; });
    return n;
}
#endif

/// What both kinds of host_array are: an owning, contiguous, row-major range of elements, indexed
/// by a multi-index. `Derived::shape()` gives the extents (static or run-time).
template <class T, std::size_t Rank, class Derived>
class host_storage {
public:
    using value_type = T;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using reference = value_type&;
    using const_reference = const value_type&;
    using pointer = value_type*;
    using const_pointer = const value_type*;
    using iterator = value_type*;  // contiguous: ranges see a contiguous_range
    using const_iterator = const value_type*;
    static constexpr std::size_t rank = Rank;

    [[nodiscard]] value_type* data() { return data_.data(); }
    [[nodiscard]] const value_type* data() const { return data_.data(); }
    [[nodiscard]] std::size_t size() const { return data_.size(); }
    [[nodiscard]] bool empty() const { return data_.empty(); }
    [[nodiscard]] iterator begin() { return data_.data(); }
    [[nodiscard]] iterator end() { return data_.data() + data_.size(); }
    [[nodiscard]] const_iterator begin() const { return data_.data(); }
    [[nodiscard]] const_iterator end() const { return data_.data() + data_.size(); }
    [[nodiscard]] const_iterator cbegin() const { return begin(); }
    [[nodiscard]] const_iterator cend() const { return end(); }
    [[nodiscard]] std::span<value_type> span() { return data_; }
    [[nodiscard]] std::span<const value_type> span() const { return data_; }
    [[nodiscard]] std::vector<value_type>& vector() { return data_; }
    [[nodiscard]] const std::vector<value_type>& vector() const { return data_; }

    /// Element at a multi-index (row-major); one index per dim (a compile error otherwise).
    template <class... I>
    [[nodiscard]] value_type& operator()(I... i) {
        static_assert(sizeof...(I) == rank, "ptpu[ARG1] host_array: give one index per dim");
        return data_[static_cast<std::size_t>(offset({static_cast<index_t>(i)...}))];
    }
    template <class... I>
    [[nodiscard]] const value_type& operator()(I... i) const {
        static_assert(sizeof...(I) == rank, "ptpu[ARG1] host_array: give one index per dim");
        return data_[static_cast<std::size_t>(offset({static_cast<index_t>(i)...}))];
    }
    /// The k-th element in row-major order.
    [[nodiscard]] value_type& operator[](std::size_t k) { return data_[k]; }
    [[nodiscard]] const value_type& operator[](std::size_t k) const { return data_[k]; }

    [[nodiscard]] host_view<value_type> view() { return make_view<value_type>(data_.data()); }
    [[nodiscard]] host_view<const value_type> view() const { return make_view<const value_type>(data_.data()); }

protected:
    host_storage() = default;
    explicit host_storage(std::vector<value_type> v) : data_(std::move(v)) {}
    std::vector<value_type> data_;

private:
    [[nodiscard]] const std::array<index_t, Rank>& extents() const {
        return static_cast<const Derived&>(*this).shape();
    }
    [[nodiscard]] index_t offset(const std::array<index_t, Rank>& i) const {
        const std::array<index_t, Rank>& e = extents();
        index_t o = 0;
        for (std::size_t d = 0; d < Rank; ++d) o = o * e[d] + i[d];
        return o;
    }
    template <class U>
    [[nodiscard]] host_view<U> make_view(U* p) const {
        host_view<U> v{p, static_cast<int>(Rank), {}};
        for (std::size_t d = 0; d < Rank; ++d) v.shape[d] = extents()[d];
        return v;
    }
};
}  // namespace detail

/// An owning array of Array type A (value-initialized), the form outputs are returned in. It is a
/// contiguous range of its elements in row-major order: `for (float& v : x)`, std::fill(x.begin(),
/// x.end(), 1.0f), std::ranges::iota(x, 0.0f), std::span<float>(x).
template <class A>
class host_array : public detail::host_storage<typename A::value_type, A::rank, host_array<A>> {
    using base = detail::host_storage<typename A::value_type, A::rank, host_array<A>>;

public:
    using typename base::value_type;
    using array_type = A;

    host_array() : base(std::vector<value_type>(static_cast<std::size_t>(A::size))) {}
    explicit host_array(std::vector<value_type> v) : base(std::move(v)) {
        if (static_cast<index_t>(this->data_.size()) != A::size)
            throw error("ARG1", "host_array",
                        "holds " + std::to_string(this->data_.size()) + " elements, its Array type has " +
                            std::to_string(A::size),
                        "give exactly as many elements as the Array shape");
    }

    [[nodiscard]] static constexpr const std::array<index_t, A::rank>& shape() { return A::shape; }
};

/// The array type of a host_array whose extents are run-time values (dynamic_call's outputs):
/// element type and rank only.
template <class T, std::size_t Rank>
struct dyn_array {
    using value_type = T;
    static constexpr std::size_t rank = Rank;
};

/// An owning row-major array of run-time extents, host_array<dyn_array<T, Rank>>: what a
/// dynamic_call returns per output. `o(i, j)` is an element, `o.shape()` the extents; it is a
/// contiguous range of its elements as the static host_array is, `o[k]` is the k-th element in
/// row-major order, and it compares equal to a std::vector holding its elements in that order.
template <class T, std::size_t Rank>
class host_array<dyn_array<T, Rank>> : public detail::host_storage<T, Rank, host_array<dyn_array<T, Rank>>> {
    using base = detail::host_storage<T, Rank, host_array<dyn_array<T, Rank>>>;

public:
    using typename base::value_type;
    using array_type = dyn_array<T, Rank>;

    /// Empty: every extent 0.
    host_array() = default;
    /// Value-initialized, of this shape (V3 when its element count overflows index_t).
    explicit host_array(const std::array<index_t, Rank>& shape)
        : base(std::vector<value_type>(static_cast<std::size_t>(count(shape)))), shape_(shape) {}
    /// Of this shape, holding `v` (row-major); ARG1 when the element count differs.
    host_array(const std::array<index_t, Rank>& shape, std::vector<value_type> v)
        : base(std::move(v)), shape_(shape) {
        if (static_cast<index_t>(this->data_.size()) != count(shape))
            throw error("ARG1", "host_array",
                        "holds " + std::to_string(this->data_.size()) + " elements, its shape has " +
                            std::to_string(count(shape)),
                        "give exactly as many elements as the shape");
    }

    [[nodiscard]] const std::array<index_t, Rank>& shape() const { return shape_; }
    [[nodiscard]] index_t shape(std::size_t d) const { return shape_[d]; }

    /// Equal shapes and elements.
    friend bool operator==(const host_array& a, const host_array& b) {
        return a.shape_ == b.shape_ && a.data_ == b.data_;
    }
    /// The same elements in row-major order (the shape is not compared).
    friend bool operator==(const host_array& a, const std::vector<value_type>& v) { return a.data_ == v; }

private:
    static index_t count(const std::array<index_t, Rank>& shape) {
        return detail::element_count(shape.data(), Rank);
    }
    std::array<index_t, Rank> shape_{};
};

namespace detail {
// Where an operand of a call is, for ARG1 messages: e.g. "pallas_call input 1" (`role` null:
// plain "operand"). Built only on the way to an error.
[[gnu::cold]] PTPU_COMPILED std::string operand_where(const char* call, const char* role, std::size_t k);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED std::string operand_where(const char* call, const char* role, std::size_t k) {
    if (role == nullptr) return "operand";
    return std::string(call) + " " + role + " " + std::to_string(k);
}
#endif
// ARG1 for a caller's host_view with no memory behind it (a null data pointer): the call would
// copy from or into address 0.
template <class T>
void require_data(const host_view<T>& v, const char* call, const char* role, std::size_t k) {
    if (v.data == nullptr && v.size() > 0)
        throw error("ARG1", operand_where(call, role, k), "the host_view's data pointer is null",
                    "pass a view of the memory that holds the array");
}
}  // namespace detail

/// A view of user memory as Array type A; throws ARG1 when the element count differs. `role` and
/// `k` name the operand in the message (pallas_call: "input", "output" or "scalar-prefetch").
template <class A, class T>
host_view<T> view_as(std::span<T> s, const char* role = nullptr, std::size_t k = 0,
                     const char* call = "pallas_call") {
    if (static_cast<index_t>(s.size()) != A::size)
        throw error(
            "ARG1", detail::operand_where(call, role, k),
            std::to_string(s.size()) + " elements given, the Array type has " + std::to_string(A::size),
            "pass a buffer of exactly the Array's size");
    host_view<T> v{s.data(), static_cast<int>(A::rank), {}};
    for (std::size_t d = 0; d < A::rank; ++d) v.shape[d] = A::shape[d];
    return v;
}

}  // namespace ptpu
