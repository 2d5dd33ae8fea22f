// Defines how pallas_call binds the caller's arguments to its operands: host_array, host_view
// or a contiguous range of the dtype, checked against the operand's Array (ARG1).
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>

#include "ptpu/core/error.hpp"
#include "ptpu/runtime/host_array.hpp"

namespace ptpu::detail {

// ---- Operand binding ----------------------------------------------------------------------------

/// Stands for an input predict() has no data for (timing only: VMEM data is never read).
struct absent_input {};

template <class T>
inline constexpr bool is_host_array = false;
template <class B>
inline constexpr bool is_host_array<host_array<B>> = true;
template <class U, class T, std::size_t R>
inline constexpr bool is_dyn_host_array_of = false;  // of run-time extents (a dynamic_call's outputs)
template <class T, std::size_t R>
inline constexpr bool is_dyn_host_array_of<host_array<dyn_array<T, R>>, T, R> = true;
template <class T>
inline constexpr bool is_view = false;  // views may be held by value in into()'s tuple
template <class T>
inline constexpr bool is_view<host_view<T>> = true;
template <class T, std::size_t N>
inline constexpr bool is_view<std::span<T, N>> = true;

/// Operand k of `role` ("input", "scalar-prefetch") as an HBM view; ARG1 messages name it.
template <class A, class X>
auto to_view(X& x, const char* role, std::size_t k) {
    using T = typename A::value_type;
    using U = std::remove_cvref_t<X>;
    if constexpr (std::is_same_v<U, absent_input>) {
        host_view<const T> v{nullptr, static_cast<int>(A::rank), {}};
        for (std::size_t d = 0; d < A::rank; ++d) v.shape[d] = A::shape[d];
        return v;
    } else if constexpr (std::is_same_v<U, host_array<A>>)
        return x.view();
    else if constexpr (is_dyn_host_array_of<U, T, A::rank>) {
        for (std::size_t d = 0; d < A::rank; ++d)  // a dynamic_call's output: its shape is a value
            if (x.shape()[d] != A::shape[d])
                throw error("ARG1", operand_where("pallas_call", role, k),
                            "a host_array's shape does not match its Array type", "pass an array of the Array's shape");
        return host_view<const T>{x.data(), static_cast<int>(A::rank), x.view().shape};
    } else if constexpr (is_host_array<U>)
        static_assert(sizeof(X) == 0,
                      "ptpu[ARG1] pallas_call: a host_array of another Array type; pass one of the "
                      "operand's Array type, or x.span() to reinterpret its elements");
    else if constexpr (std::is_same_v<U, host_view<T>> || std::is_same_v<U, host_view<const T>>) {
        bool ok = x.rank == static_cast<int>(A::rank);
        for (std::size_t d = 0; ok && d < A::rank; ++d) ok = x.shape[d] == A::shape[d];
        if (!ok)
            throw error("ARG1", operand_where("pallas_call", role, k),
                        "a host_view's shape does not match its Array type",
                        "pass a view of the Array's shape");
        require_data(x, "pallas_call", role, k);
        return host_view<const T>{x.data, x.rank, x.shape};
    } else if constexpr (requires { std::span<const T>(x); })
        return view_as<A>(std::span<const T>(x), role, k);
    else
        static_assert(sizeof(X) == 0,
                      "ptpu[ARG1] pallas_call: an operand must be a host_array<Array>, a host_view, "
                      "or a contiguous range (std::vector, std::span) of the Array's dtype");
}

}  // namespace ptpu::detail
