// Defines sweep::html_section: a sweep::result made into one kernel's section of the HTML
// comparison report (report/html.hpp): its ranked entries as the configurations (best first,
// at most a chosen number), its rejected entries with their rule's message, its baseline as the
// default. The page draws the timelines of the best and the default only, and a sweep predicts
// lean (no timeline, so the timing model's fast lane runs): those two points alone are predicted
// again with a timeline, through a callback, so a sweep of 1,000 points costs two more
// predictions, not 1,000. sweep::timeline_predictor makes that callback from the sweep's own
// points, configure function and body.
//
// Its own header (not in report/html.hpp, which stays free of range-v3; cmake/layers.txt lets
// sweep/ include report/, not the other way round). Opt-in: ptpu.hpp does not include it.
#pragma once

#include <algorithm>
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

/// What the section says besides the sweep's entries.
struct html_section_options {
    std::string title{};    ///< the section's heading
    std::string summary{};  ///< the problem in a sentence
    std::vector<std::string> notes{};  ///< plain-text lines under the table
    /// The ranked entries shown (best first); the default is shown too when it ranks lower, and
    /// a note counts the others.
    std::size_t top = 20;
    /// Rejected entries listed one by one; past this, result::rejections()'s summary instead.
    std::size_t max_rejected = 40;
    /// The best k are predicted again with a timeline (k ≥ 1: the page draws the best), so their
    /// Perfetto traces are written and linked; the default always is.
    std::size_t timelines = 1;
};

/// A point's report with its timeline: predict the point at entry::index again with
/// run_options::timeline on.
using timeline_fn = std::function<report(const entry&)>;

/// The section of the page for a sweep's result. `with_timeline(e)` returns entry e's report
/// with a timeline (timeline_predictor makes one); it is called for the best options.timelines
/// entries and the baseline, nothing else. The result needs a feasible baseline (the page
/// measures speedups against the default): otherwise ptpu[SW2].
inline html_kernel html_section(const result& r, const html_section_options& options,
                                const timeline_fn& with_timeline) {
    const entry* base = r.baseline_entry();
    if (!base)
        throw error("SW2", "sweep::html_section (" + options.title + ")", "the sweep has no baseline",
                    "set sweep::options::baseline (or result::set_baseline) to the default configuration");
    if (!base->ok)
        throw error("SW2", "sweep::html_section (" + options.title + ")",
                    "the baseline '" + base->label + "' is rejected: " + base->message,
                    "choose a feasible default configuration as the baseline");
    html_kernel k;
    k.title = options.title;
    k.summary = options.summary;
    k.notes = options.notes;
    const std::size_t shown = std::min(std::max<std::size_t>(options.top, 1), r.ranked.size());
    const std::size_t timelines = std::max<std::size_t>(options.timelines, 1);
    for (std::size_t i = 0; i < r.ranked.size(); ++i) {
        const entry& e = r.ranked[i];
        const bool is_default = e.index == base->index;
        if (i >= shown && !is_default) continue;
        if (is_default) k.default_config = k.configs.size();
        k.order.push_back(k.configs.size());
        k.configs.push_back({e.label, i < timelines || is_default ? with_timeline(e) : e.rep});
    }
    // The sweep's ranking, kept (a report predicted again with a timeline may fast-forward other
    // periods, which may round its device time differently from the lean one: no reorder).
    k.best_config = 0;
    if (!r.shape_labels.empty())
        k.notes.push_back("ranked by the total time over " + std::to_string(r.shape_labels.size()) +
                          " problem shapes; the times, bars and timelines are the first shape's (" +
                          r.shape_labels.front() + ")");
    if (shown < r.ranked.size())
        k.notes.push_back(std::to_string(r.ranked.size() - shown) + " more feasible configurations not shown (" +
                          std::to_string(r.ranked.size()) + " in all)");
    if (r.rejected.size() <= options.max_rejected) {
        for (const entry& e : r.rejected) k.rejected.emplace_back(e.label, e.message);
    } else {
        k.notes.push_back(r.rejections());
    }
    return k;
}

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
            config.options.per_step = 0;  // the page reads the timeline, not the rows
            config.options.timeline = true;
        }  // else: no timeline to draw, and the page says so (ptpu[REP1])
        return config.predict(body);
    };
}

}  // namespace ptpu::sweep
