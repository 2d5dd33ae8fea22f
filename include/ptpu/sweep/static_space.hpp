// Defines compile-time configuration spaces, built with Boost.Hana: axes are lists of types (a
// block shape, a buffer count, a chip: values become types through value_t), a space is the
// cartesian product of axes (or several products joined), and a user template turns each point
// into a configuration type, e.g. a pallas_call. for_each visits every configuration type once.
//
// Each configuration is a distinct type, so its whole plan is a constant and every rule is
// checked at compile time for every point; that is also what each point costs to compile. For
// spaces too large for that, sweep/space.hpp holds run-time spaces of values.
#pragma once

#include <boost/hana/cartesian_product.hpp>
#include <boost/hana/flatten.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/transform.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>
#include <cstddef>

namespace ptpu::sweep {

namespace hana = boost::hana;

/// A value as a type, so that it can be an element of an axis: value_t<384>::value,
/// value_t<tpu::v5e>::value (any structural value, chips included).
template <auto V>
struct value_t {
    static constexpr auto value = V;
};

/// An axis of types: types<Block<8, 128>, Block<16, 128>>.
template <class... T>
inline constexpr auto types = hana::tuple_t<T...>;

/// An axis of values, each as value_t<V>: values<128, 384, 768>, values<tpu::v5e, tpu::v6e>.
template <auto... V>
inline constexpr auto values = hana::tuple_t<value_t<V>...>;

/// The cartesian product of axes: every combination, the first axis varying slowest. A point is
/// a hana::tuple of hana::types, one per axis.
template <class... Axes>
constexpr auto product(Axes... axes) {
    return hana::cartesian_product(hana::make_tuple(axes...));
}

/// The points of several spaces one after the other: a space that is not a single product.
template <class... Spaces>
constexpr auto join(Spaces... spaces) {
    return hana::flatten(hana::make_tuple(spaces...));
}

/// The number of points of a space, as a constant.
template <class Space>
constexpr std::size_t size(Space space) {
    return decltype(hana::length(space))::value;
}

/// The configuration type of each point: a hana::tuple of hana::type<F<A, B, ...>>, where A, B,
/// ... are the point's types in axis order.
template <template <class...> class F, class Space>
constexpr auto configurations(Space space) {
    return hana::transform(space, [](auto point) {
        return hana::unpack(point, [](auto... t) { return hana::type_c<F<typename decltype(t)::type...>>; });
    });
}

/// Calls f(hana::type_c<F<...>>) for the configuration of each point, in order. In f,
/// `using K = typename decltype(t)::type;` is the configuration.
template <template <class...> class F, class Space, class Fn>
constexpr void for_each(Space space, Fn&& f) {
    hana::for_each(configurations<F>(space), f);
}

}  // namespace ptpu::sweep
