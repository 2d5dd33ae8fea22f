// Defines run-time configuration spaces, built with range-v3: a space is the cartesian product
// of axes of values (block sizes, buffer counts, chips, ...), walked lazily; `where` keeps the
// points a predicate accepts; `ranked` sorts results by a key. Nothing is materialized until
// ranked: a sweep over a large space evaluates one point at a time.
//
// Points are values, not types, so a point costs nothing to compile; sweep/static_space.hpp
// holds compile-time spaces of types instead.
#pragma once

#include <cstddef>
#include <functional>
#include <range/v3/algorithm/stable_sort.hpp>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/cartesian_product.hpp>
#include <range/v3/view/filter.hpp>
#include <tuple>
#include <utility>
#include <vector>

namespace ptpu::sweep {

/// The cartesian product of axes of values: space<int, int, const chip*>{{128, 384}, {1, 2},
/// {&tpu::v5e, &tpu::v6e}}. The first axis varies slowest.
template <class... T>
class space {
public:
    /// A point as a value: one value per axis.
    using point = std::tuple<T...>;

    explicit space(std::vector<T>... axes) : axes_(std::move(axes)...) {}

    /// The number of points: the product of the axis sizes.
    [[nodiscard]] std::size_t size() const {
        return std::apply([](const auto&... a) { return (std::size_t{1} * ... * a.size()); }, axes_);
    }

    /// Every point, lazily, as a tuple of the axes' values (references into this space, which
    /// must outlive the view).
    [[nodiscard]] auto points() const {
        return std::apply([](const auto&... a) { return ranges::views::cartesian_product(a...); }, axes_);
    }

    /// The points for which pred(values...) is true, lazily, in the same order.
    template <class Pred>
    [[nodiscard]] auto where(Pred pred) const {
        return points() |
               ranges::views::filter([pred](const auto& point) { return std::apply(pred, point); });
    }

    /// The values of axis I.
    template <std::size_t I>
    [[nodiscard]] const auto& axis() const {
        return std::get<I>(axes_);
    }

private:
    std::tuple<std::vector<T>...> axes_;
};

/// The elements of a range, sorted by key(element) ascending; equal keys keep their order.
template <class Range, class Key>
[[nodiscard]] auto ranked(Range&& range, Key key) {
    auto v = ranges::to<std::vector>(std::forward<Range>(range));
    ranges::stable_sort(v, std::less<>{}, key);
    return v;
}

}  // namespace ptpu::sweep
