// Defines sweep::run: every point of a run-time space (sweep::space or any range of points) made
// into a configuration (a dynamic_call, or anything with predict(body)), predicted in timing-only
// mode on all host cores, and ranked by predicted device time, into a sweep::result
// (sweep/result.hpp): the ranked points with their reports, the rejected ones with the rule that
// rejects each.
//
// A sweep over sizes as well (the mixture of problem shapes a user cares about) ranks by the
// total time over them: sweep::run_shapes. sweep/run_static.hpp evaluates compile-time spaces of
// configuration types into the same result.
//
// Only what depends on the points, the configure function or the body is a template here; the
// pool, the ranking and the result's text and files are sweep/result.hpp's.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <stdexcept>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptpu/call/options.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/sweep/result.hpp"
#include "ptpu/sweep/space.hpp"

namespace ptpu::sweep {

// ---- Labels -----------------------------------------------------------------------------------

/// One value of a point as text: chips (by value or pointer) by their name, numbers and strings
/// as themselves, anything else through its operator<< (or "?").
template <class T>
std::string label_of(const T& v) {
    using U = std::remove_cvref_t<T>;
    if constexpr (std::is_same_v<U, chip>) {
        return chip_label(v);
    } else if constexpr (std::is_same_v<U, const chip*> || std::is_same_v<U, chip*>) {
        return v ? chip_label(*v) : std::string("null");
    } else if constexpr (std::is_same_v<U, bool>) {
        return v ? "true" : "false";
    } else if constexpr (std::is_integral_v<U>) {
        return std::to_string(v);
    } else if constexpr (std::is_convertible_v<const U&, std::string_view>) {
        return std::string(std::string_view(v));
    } else if constexpr (requires(std::ostream& os) { os << v; }) {
        std::ostringstream os;
        os << v;
        return os.str();
    } else {
        return "?";
    }
}

namespace detail {
template <class P>
concept tuple_like = requires { std::tuple_size<std::remove_cvref_t<P>>::value; };

// Calls f with a point's values when it takes them one by one (f(bm, bc, chip)), else with the
// point itself (f(point)).
template <class F, class P>
decltype(auto) call_on_point(F& f, const P& p) {
    if constexpr (tuple_like<P>) {
        if constexpr (requires { std::apply(f, p); })
            return std::apply(f, p);
        else
            return f(p);
    } else {
        return f(p);
    }
}
}  // namespace detail

/// The default label of a point: its values joined by ", ", each named `name=value` when names
/// are given (options::axis_names), e.g. "bm=256, bc=2, chip=v5e".
template <class P>
std::string default_label(const P& p, std::span<const std::string> names = {}) {
    if constexpr (detail::tuple_like<P>) {
        const auto values = std::apply(
            [](const auto&... v) { return std::array<std::string, sizeof...(v)>{label_of(v)...}; }, p);
        return detail::join_label(values, names);
    } else {
        const std::string value = label_of(p);
        return detail::join_label(std::span<const std::string>(&value, 1), names);
    }
}


/// The best entry of a sweep together with its point, what point_result::best() returns: the
/// entry's fields (label, time, rep, ...), `point`, the point as the space gave it (a std::tuple
/// of the axes' values for a sweep::space), and `config`, what configure(point) makes of it (a
/// dynamic_call most often), with its own run_options: run it on data or predict it again.
template <class P, class Config = void>
struct chosen : entry {
    P point;
    Config config;
};
/// The same for run_shapes, whose configurations depend on the shape too: the point only.
template <class P>
struct chosen<P, void> : entry {
    P point;
};

/// What sweep::run and run_shapes return: a result (it converts to one) that keeps the points,
/// so an entry leads back to its configuration. `points[e.index]` is entry e's point;
/// point(e) says so, config(e) makes its configuration again, and best() gives both.
template <class P, class Config = void>
class point_result : public result {
public:
    std::vector<P> points;  ///< every point, in the space's order (entry::index indexes it)

    point_result() = default;
    point_result(result r, std::vector<P> pts) requires(std::is_void_v<Config>)
        : result(std::move(r)), points(std::move(pts)) {}
    /// With the configure function that made the points' configurations (config(), best()).
    template <class Configure>
    requires(!std::is_void_v<Config>) point_result(result r, std::vector<P> pts, Configure configure)
        : result(std::move(r)), points(std::move(pts)) {
        if constexpr (std::is_pointer_v<Configure> && std::is_function_v<std::remove_pointer_t<Configure>>) {
            fn_ = reinterpret_cast<void (*)()>(configure);
            make_ = [](const point_result& self, const P& p) -> Config {
                auto f = reinterpret_cast<Configure>(self.fn_);
                return detail::call_on_point(f, p);
            };
        } else {
            obj_ = std::make_shared<Configure>(std::move(configure));
            make_ = [](const point_result& self, const P& p) -> Config {
                return detail::call_on_point(*static_cast<Configure*>(self.obj_.get()), p);
            };
        }
    }

    /// The point of an entry of this result.
    [[nodiscard]] const P& point(const entry& e) const { return points.at(e.index); }
    /// The configuration of an entry made again, as the sweep made it before predicting it (but
    /// with the configuration's own run_options: the sweep's `lean` is not applied).
    [[nodiscard]] Config config(const entry& e) const
        requires(!std::is_void_v<Config>)
    {
        return make_(*this, point(e));
    }
    /// The best entry, its point and (for run) its configuration: SW1 when none is feasible.
    [[nodiscard]] chosen<P, Config> best() const {
        const entry& e = result::best();
        if constexpr (std::is_void_v<Config>)
            return {e, point(e)};
        else
            return {e, point(e), make_(*this, point(e))};
    }
    /// The best entry itself (result::best): no copy, no configuration made.
    [[nodiscard]] const entry& best_entry() const { return result::best(); }

private:
    // The configure function, called through a plain function pointer (a std::function would cost
    // every sweeping file its manager and invoker): a function pointer kept as one, any other
    // callable shared by the copies of the result.
    void (*fn_)() = nullptr;
    std::shared_ptr<void> obj_{};
    Config (*make_)(const point_result&, const P&) = &no_configure;

    // A default-constructed result has no configure function to call.
    [[noreturn]] static Config no_configure(const point_result&, const P&) {
        throw std::logic_error("sweep::point_result: no configure function (a default-constructed result)");
    }
};

// ---- The evaluation ---------------------------------------------------------------------------

namespace detail {

// Sweeps read neither per-step rows nor timelines, which cost memory and time at every point.
template <class C>
void make_lean(C& c) {
    if constexpr (requires { requires std::same_as<std::remove_cvref_t<decltype(c.options)>, run_options>; }) {
        c.options.per_step = per_step_rows::never;
        c.options.timeline = false;
    }
}

// The points, in order, as values (a vector: the workers index it). A sweep::space gives
// std::tuples of its axes' values; another range its value type.
template <class Points>
auto materialize(Points&& points) {
    if constexpr (requires { typename std::remove_cvref_t<Points>::point; }) {
        using P = typename std::remove_cvref_t<Points>::point;
        std::vector<P> v;
        v.reserve(points.size());
        for (const auto& p : points.points())
            v.push_back(std::apply([](const auto&... x) { return P(x...); }, p));
        return v;
    } else {
        using V = std::remove_cvref_t<decltype(*std::begin(points))>;
        if constexpr (std::is_same_v<std::remove_cvref_t<Points>, std::vector<V>>) {
            return std::vector<V>(points);  // a vector of points: a copy
        } else {
            std::vector<V> v;
            for (auto&& p : points) v.push_back(std::forward<decltype(p)>(p));
            return v;
        }
    }
}

}  // namespace detail

namespace detail {
// Whether the compiled part writes a T's default label (integers, bools, chips): then a sweep's
// labels are made once for all points there, not by per-type code in every sweeping file.
template <class T>
inline constexpr bool compiled_label = std::is_integral_v<T> || std::is_same_v<T, chip> ||
                                       std::is_same_v<T, const chip*> || std::is_same_v<T, chip*>;
template <class P>
inline constexpr bool compiled_labels = compiled_label<P>;
template <class... T>
inline constexpr bool compiled_labels<std::tuple<T...>> = (compiled_label<T> && ...);

template <class T>
label_value label_value_of(const T& v) {
    label_value l;
    if constexpr (std::is_same_v<T, bool>) {
        l.k = label_value::kind::boolean;
        l.i = v ? 1 : 0;
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        l.i = v;
    } else if constexpr (std::is_integral_v<T>) {
        l.k = label_value::kind::unsigned_integer;
        l.u = v;
    } else {
        l.k = label_value::kind::chip;
        if constexpr (std::is_same_v<T, chip>)
            l.c = &v;
        else
            l.c = v;
    }
    return l;
}
}  // namespace detail

/// The labels of the points: label(point) (or label(values...)), or the default labels.
template <class P, class Label>
std::vector<std::string> labels_of(const std::vector<P>& pts, Label& label, const options& opt) {
    if constexpr (std::is_same_v<Label, std::nullptr_t> && detail::compiled_labels<P>) {
        constexpr std::size_t width = [] {
            if constexpr (detail::tuple_like<P>)
                return std::tuple_size_v<P>;
            else
                return std::size_t{1};
        }();
        const std::unique_ptr<detail::label_value[]> values(new detail::label_value[pts.size() * width]);
        detail::label_value* at = values.get();
        for (const P& p : pts) {
            if constexpr (detail::tuple_like<P>)
                std::apply([&](const auto&... v) { ((*at++ = detail::label_value_of(v)), ...); }, p);
            else
                *at++ = detail::label_value_of(p);
        }
        return detail::default_labels(values.get(), pts.size(), width, opt.axis_names.data(),
                                      opt.axis_names.size());
    } else {
        std::vector<std::string> l;
        l.reserve(pts.size());
        for (const P& p : pts) {
            if constexpr (std::is_same_v<Label, std::nullptr_t>)
                l.push_back(default_label(p, opt.axis_names));
            else
                l.push_back(std::string(detail::call_on_point(label, p)));
        }
        return l;
    }
}

/// Predicts every point of `points` (a sweep::space, or any range of points) as the configuration
/// configure(point) (or configure(values...) for tuple points) returns: anything with
/// predict(body), a dynamic_call most often, made anew per point in the worker that predicts it.
/// Points a ptpu::error rejects (VMEM 24, tiling 15, buffer count 19, index map S34, ...) are kept
/// with its rule and message; any other exception propagates. `label` names a point
/// (label(point) or label(values...)); nullptr: default_label. configure and label run
/// concurrently on several threads, as does the body: none may write shared state.
template <class Points, class Configure, class Body, class Label = std::nullptr_t>
auto run(Points&& points, Configure configure, const Body& body, const options& opt = {}, Label label = nullptr) {
    auto pts = detail::materialize(std::forward<Points>(points));
    using P = typename decltype(pts)::value_type;
    using Config = std::remove_cvref_t<decltype(detail::call_on_point(configure, pts.front()))>;
    std::vector<std::string> labels = labels_of(pts, label, opt);
    unsigned threads = 0;
    double seconds = 0;
    auto job = [&](std::size_t i, std::vector<report>& reps) {
        auto config = detail::call_on_point(configure, pts[i]);
        if (opt.lean) detail::make_lean(config);
        reps.push_back(config.predict(body));
    };
    auto out = detail::run_pool(pts.size(), job, opt, threads, seconds);
    // The result keeps the points and configure.
    return point_result<P, Config>(
        detail::make_result(std::move(out), std::move(labels), opt, threads, seconds), std::move(pts),
        std::move(configure));
}

/// As run, over several problem shapes at once (the mixture a user cares about): configure(point,
/// shape) makes the configuration of a point for one shape; a point's time is the total over the
/// shapes, its entry keeps one report per shape (entry::shapes), and a point is rejected when one
/// shape rejects it (the message ends with " [shape <its label>]"). Shapes are named by their
/// values (default_label), or by their position when those do not print.
template <class Points, class Shape, class Configure, class Body, class Label = std::nullptr_t>
auto run_shapes(Points&& points, const std::vector<Shape>& shapes, Configure configure, const Body& body,
                const options& opt = {}, Label label = nullptr) {
    if (shapes.empty())
        throw error("SW1", "sweep::run_shapes", "no shapes given", "give at least one problem shape");
    auto pts = detail::materialize(std::forward<Points>(points));
    using P = typename decltype(pts)::value_type;
    std::vector<std::string> labels = labels_of(pts, label, opt);
    std::vector<std::string> shape_labels;
    for (std::size_t s = 0; s < shapes.size(); ++s) {
        const std::string l = default_label(shapes[s]);
        shape_labels.push_back(l == "?" ? std::to_string(s) : l);
    }
    unsigned threads = 0;
    double seconds = 0;
    auto job = [&](std::size_t i, std::vector<report>& reps) {
        for (std::size_t s = 0; s < shapes.size(); ++s) {
            try {
                auto config = configure(pts[i], shapes[s]);
                if (opt.lean) detail::make_lean(config);
                reps.push_back(config.predict(body));
            } catch (const ptpu::error& e) {
                throw ptpu::error(std::string(e.what()) + " [shape " + shape_labels[s] + "]");
            }
        }
    };
    auto out = detail::run_pool(pts.size(), job, opt, threads, seconds);
    result r = detail::make_result(std::move(out), std::move(labels), opt, threads, seconds);
    r.shape_labels = std::move(shape_labels);
    return point_result<P>(std::move(r), std::move(pts));
}

}  // namespace ptpu::sweep

