// Defines sweep::timeline_predictor: the callback sweep::html_section (sweep/result.hpp) calls for
// the few points whose timelines the HTML comparison report (report/html.hpp) draws. The page
// draws the timelines of the best and the default only, and a sweep predicts lean (no timeline,
// so the timing model's fast lane runs): those points alone are predicted again with a timeline,
// so a sweep of 1,000 points costs two more predictions, not 1,000. The callback is made from the
// sweep's own points, configure function and body.
//
// Its own header (not in report/html.hpp, which knows nothing of sweeps; cmake/layers.txt lets
// sweep/ include report/, not the other way round). Opt-in: ptpu.hpp does not include it.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/report/html.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/sweep/run.hpp"

namespace ptpu::sweep {

/// The timeline callback of a sweep::run(points, configure, body, ...): configure(point) again
/// (the points are copied), with run_options::timeline on, predicted. It refers to `body`, which
/// must outlive it.
template <class Points, class Configure, class Body>
timeline_fn timeline_predictor(Points&& points, Configure configure, const Body& body) {
    auto pts = detail::materialize(std::forward<Points>(points));
    return [pts = std::move(pts), configure = std::move(configure), &body](const entry& e) mutable -> report {
        if (e.index >= pts.size())
            throw error("SW2", "sweep::timeline_predictor", "entry " + std::to_string(e.index) + " is past the " +
                                    std::to_string(pts.size()) + " points",
                        "pass the points the sweep ran on");
        auto config = detail::call_on_point(configure, pts[e.index]);
        if constexpr (requires { requires std::same_as<std::remove_cvref_t<decltype(config.options)>, run_options>; }) {
            config.options.per_step = per_step_rows::never;  // the page reads the timeline, not the rows
            config.options.timeline = true;
        }  // else: no timeline to draw, and the page says so (ptpu[REP1])
        return config.predict(body);
    };
}

}  // namespace ptpu::sweep
