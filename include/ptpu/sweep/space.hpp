// Defines run-time configuration spaces: a space is the cartesian product of axes of values
// (block sizes, buffer counts, chips, ...), walked lazily; `where` keeps the points a predicate
// accepts; `ranked` sorts results by a key. Nothing is materialized until ranked: a sweep over a
// large space evaluates one point at a time.
//
// A point is found from its position by mixed-radix arithmetic (the last axis is the fastest
// digit), so `points()` is a sized, random-access range of values and `where` a forward range
// over it. Both are plain iterators: a view library would cost every file that sweeps most of a
// second to parse for what is a counter and a division (docs/performance.md, "The sweep
// headers"). Any range of points, a range-v3 or <ranges> view included, is accepted by
// sweep::run as well.
//
// Points are values, not types, so a point costs nothing to compile; sweep/static_space.hpp
// holds compile-time spaces of types instead.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ptpu::sweep {

template <class... T>
class space;

namespace detail {

// The member types of an iterator whose elements are computed, not stored: its reference is a
// value, so it is an input iterator to C++17 algorithms and a `Concept` iterator to C++20's.
template <class V, class Concept>
struct computed_iterator_types {
    using value_type = V;
    using reference = V;
    using pointer = void;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = Concept;
    using iterator_category = std::input_iterator_tag;
};

// Iterator of a space's points: the position k, decoded on dereference.
template <class... T>
class point_iterator : public computed_iterator_types<std::tuple<T...>, std::random_access_iterator_tag> {
public:
    using value_type = std::tuple<T...>;
    using difference_type = std::ptrdiff_t;

    point_iterator() = default;
    point_iterator(const space<T...>* s, std::size_t k) : s_(s), k_(k) {}

    value_type operator*() const { return s_->at(k_); }
    value_type operator[](difference_type n) const { return s_->at(k_ + static_cast<std::size_t>(n)); }
    point_iterator& operator++() { return ++k_, *this; }
    point_iterator operator++(int) { return {s_, k_++}; }
    point_iterator& operator--() { return --k_, *this; }
    point_iterator operator--(int) { return {s_, k_--}; }
    point_iterator& operator+=(difference_type n) { return k_ += static_cast<std::size_t>(n), *this; }
    point_iterator& operator-=(difference_type n) { return k_ -= static_cast<std::size_t>(n), *this; }
    friend point_iterator operator+(point_iterator i, difference_type n) { return i += n; }
    friend point_iterator operator+(difference_type n, point_iterator i) { return i += n; }
    friend point_iterator operator-(point_iterator i, difference_type n) { return i -= n; }
    friend difference_type operator-(const point_iterator& a, const point_iterator& b) {
        return static_cast<difference_type>(a.k_) - static_cast<difference_type>(b.k_);
    }
    friend bool operator==(const point_iterator& a, const point_iterator& b) { return a.k_ == b.k_; }
    friend auto operator<=>(const point_iterator& a, const point_iterator& b) { return a.k_ <=> b.k_; }

private:
    const space<T...>* s_ = nullptr;
    std::size_t k_ = 0;
};

// Forward iterator of the points a predicate accepts: skips the others when advanced.
template <class It, class Pred>
class filter_iterator
    : public computed_iterator_types<typename std::iterator_traits<It>::value_type, std::forward_iterator_tag> {
public:
    using value_type = typename std::iterator_traits<It>::value_type;

    filter_iterator() = default;
    filter_iterator(It at, It end, const Pred* pred) : at_(at), end_(end), pred_(pred) { skip(); }

    value_type operator*() const { return *at_; }
    filter_iterator& operator++() { return ++at_, skip(), *this; }
    filter_iterator operator++(int) {
        filter_iterator old = *this;
        ++*this;
        return old;
    }
    friend bool operator==(const filter_iterator& a, const filter_iterator& b) { return a.at_ == b.at_; }

private:
    void skip() {
        while (at_ != end_ && !std::apply(*pred_, *at_)) ++at_;
    }
    It at_{}, end_{};
    const Pred* pred_ = nullptr;
};

// A begin/end pair as a range.
template <class It>
struct iterator_range {
    It first, last;
    [[nodiscard]] It begin() const { return first; }
    [[nodiscard]] It end() const { return last; }
};

}  // namespace detail

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

    /// The point at position k of the walk (k < size()).
    [[nodiscard]] point at(std::size_t k) const {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            std::size_t digit[sizeof...(T)];
            // The last axis is the fastest digit.
            for (std::size_t a = sizeof...(T); a-- > 0;) {
                const std::size_t radix = extent(a);
                digit[a] = k % radix;
                k /= radix;
            }
            return point(std::get<I>(axes_)[digit[I]]...);
        }(std::index_sequence_for<T...>{});
    }

    /// Every point, lazily, as a tuple of the axes' values: a sized, random-access range whose
    /// iterators refer to this space (which must outlive them).
    [[nodiscard]] auto points() const {
        using it = detail::point_iterator<T...>;
        return detail::iterator_range<it>{it(this, 0), it(this, size())};
    }

    /// The points for which pred(values...) is true, lazily, in the same order: a forward range
    /// that holds the predicate and refers to this space.
    template <class Pred>
    [[nodiscard]] auto where(Pred pred) const {
        return filtered<Pred>{this, std::move(pred)};
    }

    /// The values of axis I.
    template <std::size_t I>
    [[nodiscard]] const auto& axis() const {
        return std::get<I>(axes_);
    }

private:
    template <class Pred>
    struct filtered {
        const space* s;
        Pred pred;
        using iterator = detail::filter_iterator<detail::point_iterator<T...>, Pred>;
        [[nodiscard]] iterator begin() const {
            const auto p = s->points();
            return iterator(p.begin(), p.end(), &pred);
        }
        [[nodiscard]] iterator end() const {
            const auto p = s->points();
            return iterator(p.end(), p.end(), &pred);
        }
    };

    [[nodiscard]] std::size_t extent(std::size_t a) const {
        return std::apply(
            [a](const auto&... v) {
                std::size_t n = 0, i = 0;
                ((n = i++ == a ? v.size() : n), ...);
                return n;
            },
            axes_);
    }

    std::tuple<std::vector<T>...> axes_;
};

/// The elements of a range, sorted by key(element) ascending; equal keys keep their order.
template <class Range, class Key>
[[nodiscard]] auto ranked(Range&& range, Key key) {
    using V = std::remove_cvref_t<decltype(*std::begin(range))>;
    std::vector<V> v;
    for (auto&& x : range) v.push_back(x);
    std::stable_sort(v.begin(), v.end(),
                     [&key](const V& a, const V& b) { return std::invoke(key, a) < std::invoke(key, b); });
    return v;
}

}  // namespace ptpu::sweep
