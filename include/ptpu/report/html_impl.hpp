// Defines what report/html.hpp declares: the page, its bars and tables, and the writer. Read
// where the compiled part is compiled (core/linkage.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptpu/report/html.hpp"

namespace ptpu {

PTPU_COMPILED time_split split_time(const report& r) {
    time_split s;
    for (int c = 1; c < std::clamp(r.cores, 1, static_cast<int>(max_cores)); ++c)
        if (r.core[static_cast<std::size_t>(c)].time > r.core[static_cast<std::size_t>(s.core)].time) s.core = c;
    const core_report& k = r.core[static_cast<std::size_t>(s.core)];
    s.compute = k.compute;
    s.overhead = k.overhead + k.dma_issue;
    s.semaphore_stall = k.semaphore_stall;
    s.exposed_dma = k.exposed_dma + std::max(0.0, r.device_time - k.time);
    return s;
}

PTPU_COMPILED std::vector<std::size_t> rank_order(const html_kernel& k) {
    if (!k.order.empty()) return k.order;
    std::vector<std::size_t> order(k.configs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return k.configs[a].result.device_time < k.configs[b].result.device_time;
    });
    return order;
}

PTPU_COMPILED std::size_t best_of(const html_kernel& k) {
    return k.best_config ? *k.best_config : rank_order(k).front();
}

PTPU_COMPILED std::string trace_file_name(std::size_t kernel, std::size_t config, std::string_view name) {
    std::string s = "k" + std::to_string(kernel) + "-c" + std::to_string(config) + "-";
    bool dash = false;
    for (char ch : name) {
        const char c = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            s += c;
            dash = false;
        } else if (!dash && s.back() != '-') {
            s += '-';
            dash = true;
        }
    }
    while (s.back() == '-') s.pop_back();
    return s + ".trace.json";
}

namespace detail {

/// Text and attribute values for HTML and SVG: the five characters with a meaning there.
PTPU_COMPILED std::string html_escape(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (char c : in) switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    return out;
}

PTPU_COMPILED std::string fixed(double v, int digits) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(digits);
    o << v;
    return o.str();
}

/// "46.3 µs", "1.27 ms": three significant figures at most.
PTPU_COMPILED std::string html_time(double s) {
    const double us = s * 1e6;
    if (us < 10) return fixed(us, 2) + " µs";
    if (us < 1000) return fixed(us, 1) + " µs";
    return fixed(us / 1e3, us < 10000 ? 2 : 1) + " ms";
}

/// An axis label: as many decimals as the tick step needs ("0", "50 µs", "2.5 µs", "1.2 ms").
PTPU_COMPILED std::string tick_label(double t, double step) {
    const bool ms = step >= 1e-4;
    const double v = ms ? t * 1e3 : t * 1e6, st = ms ? step * 1e3 : step * 1e6;
    if (t == 0) return "0";
    return fixed(v, st >= 1 ? 0 : st >= 0.1 ? 1 : 2) + (ms ? " ms" : " µs");
}

PTPU_COMPILED std::string html_ratio(double x) { return fixed(x, x < 10 ? 2 : 1) + "×"; }

inline double vmem_high_water(const report& r) {
    index_t v = 0;
    for (int c = 0; c < std::clamp(r.cores, 1, static_cast<int>(max_cores)); ++c)
        v = std::max(v, r.core[static_cast<std::size_t>(c)].vmem_high_water);
    return static_cast<double>(v);
}

/// A round step for an axis up to t: 1, 2 or 5 times a power of ten, about t/6.
PTPU_COMPILED double html_tick(double t) {
    const double raw = t / 6;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    const double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/// to_svg's drawing with a viewBox, so CSS can scale it to its column (it sets only width and
/// height); unchanged when it already has one or the attributes are not found.
PTPU_COMPILED std::string scalable_svg(std::string svg) {
    const auto open = svg.find("<svg");
    if (open == std::string::npos) return svg;
    const auto end = svg.find('>', open);
    const std::string tag = svg.substr(open, end - open);
    if (tag.find("viewBox") != std::string::npos) return svg;
    auto attr = [&](const char* name) -> std::string {
        const std::string key = std::string(" ") + name + "=\"";
        const auto at = tag.find(key);
        if (at == std::string::npos) return {};
        const auto from = at + key.size();
        return tag.substr(from, tag.find('"', from) - from);
    };
    const std::string w = attr("width"), h = attr("height");
    if (w.empty() || h.empty()) return svg;
    svg.insert(open + 4, " viewBox=\"0 0 " + w + " " + h + "\" preserveAspectRatio=\"xMinYMin meet\"");
    return svg;
}

// Colours shared with to_svg's timeline, so a segment reads the same in both pictures.
inline constexpr const char* c_compute = "#2f6fd0";
inline constexpr const char* c_exposed = "#d03030";
inline constexpr const char* c_overhead = "#9a9a9a";
inline constexpr const char* c_semaphore = "#8e44ad";

/// The stacked bars, one per configuration in rank order.
PTPU_COMPILED std::string bar_chart(const html_kernel& k, const std::vector<std::size_t>& order, std::size_t best,
                             std::size_t id, bool any_semaphore) {
    // The label column fits the longest label (about 7.5 px a character at 13 px; "★ " and
    // " (default)" included), so no name is cut.
    std::size_t chars = 0;
    for (const html_config& c : k.configs) chars = std::max(chars, c.name.size());
    const int label_w = std::clamp(static_cast<int>(static_cast<double>(chars + 12) * 7.5) + 10, 200, 560);
    const int plot_w = 520, value_w = 140, row_h = 26, top = 8, axis_h = 30;
    const int width = label_w + plot_w + value_w;
    const int height = top + static_cast<int>(order.size()) * row_h + axis_h;
    double t_max = 0;
    for (const html_config& c : k.configs) t_max = std::max(t_max, c.result.device_time);
    if (t_max <= 0) t_max = 1e-9;
    const double tick = html_tick(t_max);
    const double axis_max = std::ceil(t_max / tick * (1 - 1e-9)) * tick;
    auto x = [&](double t) { return label_w + t / axis_max * plot_w; };
    const double t_default = k.configs[k.default_config].result.device_time;
    std::ostringstream o;
    o << "<svg class=\"bars\" id=\"k" << id << "-bars\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << width
      << ' ' << height << "\" width=\"" << width << "\" height=\"" << height
      << "\" role=\"img\" aria-label=\"predicted time per configuration\">\n";
    for (double t = 0; t <= axis_max * (1 + 1e-9); t += tick)
        o << "<line x1=\"" << fixed(x(t), 1) << "\" y1=\"" << top - 4 << "\" x2=\"" << fixed(x(t), 1) << "\" y2=\""
          << height - axis_h + 4 << "\" class=\"grid\"/><text x=\"" << fixed(x(t), 1) << "\" y=\"" << height - 10
          << "\" text-anchor=\"middle\" class=\"tick\">" << html_escape(tick_label(t, tick)) << "</text>\n";
    for (std::size_t row = 0; row < order.size(); ++row) {
        const std::size_t i = order[row];
        const report& r = k.configs[i].result;
        const time_split s = split_time(r);
        const int y = top + static_cast<int>(row) * row_h;
        std::string label = k.configs[i].name;
        if (i == best) label = "★ " + label;
        if (i == k.default_config) label += " (default)";
        o << "<g class=\"bar" << (i == best ? " best" : "") << (i == k.default_config ? " default" : "") << "\">";
        o << "<text x=\"" << label_w - 8 << "\" y=\"" << y + 17 << "\" text-anchor=\"end\" class=\"label\">"
          << html_escape(label) << "</text>";
        double at = 0;
        const std::pair<double, const char*> parts[] = {{s.compute, c_compute},
                                                        {s.exposed_dma, c_exposed},
                                                        {s.overhead, c_overhead},
                                                        {s.semaphore_stall, c_semaphore}};
        for (const auto& [v, colour] : parts) {
            if (v <= 0) continue;
            o << "<rect x=\"" << fixed(x(at), 2) << "\" y=\"" << y + 4 << "\" width=\""
              << fixed(std::max(0.5, x(at + v) - x(at)), 2) << "\" height=\"" << row_h - 8 << "\" fill=\"" << colour
              << "\"/>";
            at += v;
        }
        std::string tip = k.configs[i].name + ": " + html_time(r.device_time) + " = compute " + html_time(s.compute) +
                          " + exposed DMA " + html_time(s.exposed_dma) + " + overhead " + html_time(s.overhead);
        if (any_semaphore) tip += " + semaphore stall " + html_time(s.semaphore_stall);
        tip += " (core " + std::to_string(s.core) + ")";
        o << "<rect x=\"" << label_w << "\" y=\"" << y + 2 << "\" width=\"" << fixed(x(at) - label_w + 1, 2)
          << "\" height=\"" << row_h - 4 << "\" fill=\"transparent\"><title>" << html_escape(tip) << "</title></rect>";
        o << "<text x=\"" << fixed(x(at) + 6, 1) << "\" y=\"" << y + 17 << "\" class=\"value\">"
          << html_escape(html_time(r.device_time));
        if (i != k.default_config && r.device_time > 0)
            o << " · " << html_escape(html_ratio(t_default / r.device_time));
        o << "</text></g>\n";
    }
    o << "</svg>";
    return o.str();
}

PTPU_COMPILED void check_kernel(const html_kernel& k, std::size_t id) {
    const std::string where = "html report, kernel " + std::to_string(id) + " (" + k.title + ")";
    if (k.configs.empty()) throw error("REP4", where, "no configuration", "add at least one html_config");
    if (k.default_config >= k.configs.size())
        throw error("REP4", where, "default_config " + std::to_string(k.default_config) + " is past its " +
                                       std::to_string(k.configs.size()) + " configurations",
                    "give the index of the default configuration in configs");
    if (k.best_config && *k.best_config >= k.configs.size())
        throw error("REP4", where, "best_config " + std::to_string(*k.best_config) + " is past its " +
                                       std::to_string(k.configs.size()) + " configurations",
                    "give an index into configs, or leave it empty for the fastest");
    if (!k.order.empty()) {
        std::vector<bool> seen(k.configs.size());
        for (std::size_t i : k.order) {
            if (i >= k.configs.size() || seen[i])
                throw error("REP4", where, "order is not a permutation of the " + std::to_string(k.configs.size()) +
                                               " configurations' indices",
                            "give each index into configs once, best first, or leave order empty");
            seen[i] = true;
        }
        if (k.order.size() != k.configs.size())
            throw error("REP4", where, "order ranks " + std::to_string(k.order.size()) + " of the " +
                                           std::to_string(k.configs.size()) + " configurations",
                        "give each index into configs once, best first, or leave order empty");
    }
    for (std::size_t i : {k.default_config, best_of(k)})
        if (k.configs[i].result.timeline.empty())
            throw error("REP1", where, "configuration '" + k.configs[i].name + "' has no timeline to draw",
                        "predict the best and the default configuration with run_options{.timeline = true}");
}

inline constexpr std::string_view page_css = R"css(
:root{--ink:#1d2430;--muted:#5b6576;--line:#dfe3ea;--card:#fff;--bg:#f4f6f9;--accent:#2f6fd0}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header.page{background:#1d2430;color:#fff;padding:22px 32px}
header.page h1{margin:0;font-size:24px;font-weight:650}
header.page p{margin:4px 0 0;color:#c9d1dd}
nav.toc{padding:10px 32px;background:#fff;border-bottom:1px solid var(--line)}
nav.toc a{margin-right:18px;color:var(--accent);text-decoration:none;font-weight:600}
main{padding:20px 32px;max-width:1900px}
section.kernel{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 24px;margin:0 0 24px}
section.kernel h2{margin:0 0 2px;font-size:21px}
p.summary{margin:0 0 12px;color:var(--muted)}
p.verdict{font-size:18px;margin:8px 0 14px;padding:10px 14px;background:#eef4ff;border-left:4px solid var(--accent);border-radius:4px}
h3{font-size:15px;margin:18px 0 6px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
table.ranked{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
table.ranked th,table.ranked td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
table.ranked th{font-size:12px;color:var(--muted);font-weight:600;background:#fafbfc}
table.ranked td.name,table.ranked th.name{text-align:left}
table.ranked tr.best td{background:#eefaf0;font-weight:600}
table.ranked tr.default td{background:#fff8e6}
.tag{display:inline-block;font-size:11px;font-weight:700;padding:0 6px;border-radius:8px;margin-left:6px;vertical-align:1px}
.tag.best{background:#2e8b57;color:#fff}.tag.default{background:#c98a00;color:#fff}
svg.bars{width:100%;max-width:1200px;height:auto;display:block}
svg.bars .label{font-size:13px;fill:var(--ink)}svg.bars .best .label{font-weight:700}
svg.bars .value{font-size:12px;fill:var(--muted)}svg.bars .tick{font-size:11px;fill:var(--muted)}
svg.bars .grid{stroke:#e6e9ef}
ul.legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:6px 22px;font-size:13px;color:var(--muted)}
ul.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
div.timelines{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:16px}
figure.timeline{margin:0;border:1px solid var(--line);border-radius:6px;padding:8px;cursor:zoom-in;background:#fff}
figure.timeline.wide{grid-column:1/-1;cursor:zoom-out}
figure.timeline svg{width:100%;height:auto;display:block}
figure.timeline figcaption{font-weight:600;margin:0 0 6px}
p.note{margin:8px 0 0;color:var(--muted)}
ul.rejected{margin:4px 0;padding-left:20px;color:var(--muted)}
code{font-family:"DejaVu Sans Mono",monospace;font-size:13px}
a{color:var(--accent)}
footer{padding:0 32px 28px;color:var(--muted);font-size:13px}
#ptpu-errors{background:#fee;color:#900;padding:8px 32px;margin:0}
)css";

}  // namespace detail

PTPU_COMPILED std::string to_html(const std::vector<html_kernel>& kernels, const html_options& options) {
    using detail::html_escape;
    using detail::html_ratio;
    using detail::html_time;
    for (std::size_t id = 0; id < kernels.size(); ++id) detail::check_kernel(kernels[id], id);
    std::ostringstream o;
    o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
      << html_escape(options.title) << "</title>\n<style>" << detail::page_css << "</style>\n</head>\n<body>\n";
    // Any script error is written into the page, where a reader and the browser test see it.
    o << "<pre id=\"ptpu-errors\" hidden></pre>\n<script>\n"
         "window.addEventListener('error', function (e) {\n"
         "  var el = document.getElementById('ptpu-errors');\n"
         "  el.hidden = false; el.setAttribute('data-ptpu-error', '1');\n"
         "  el.textContent += 'script error: ' + e.message + '\\n';\n"
         "});\n</script>\n";
    o << "<header class=\"page\"><h1>" << html_escape(options.title) << "</h1>";
    if (!options.subtitle.empty()) o << "<p>" << html_escape(options.subtitle) << "</p>";
    o << "</header>\n<nav class=\"toc\">";
    for (std::size_t id = 0; id < kernels.size(); ++id)
        o << "<a href=\"#k" << id << "\">" << html_escape(kernels[id].title) << "</a>";
    o << "</nav>\n<main>\n";
    for (std::size_t id = 0; id < kernels.size(); ++id) {
        const html_kernel& k = kernels[id];
        const std::vector<std::size_t> order = rank_order(k);
        const std::size_t best = best_of(k);
        const html_config& b = k.configs[best];
        const html_config& d = k.configs[k.default_config];
        bool any_semaphore = false;
        for (const html_config& c : k.configs) any_semaphore |= split_time(c.result).semaphore_stall > 0;

        o << "<section class=\"kernel\" id=\"k" << id << "\">\n<h2>" << html_escape(k.title) << "</h2>\n";
        if (!k.summary.empty()) o << "<p class=\"summary\">" << html_escape(k.summary) << "</p>\n";
        o << "<p class=\"verdict\">";
        if (best == k.default_config)
            o << "The default configuration, <strong>" << html_escape(d.name) << "</strong>, is the best of "
              << k.configs.size() << ": " << html_escape(html_time(d.result.device_time)) << ", bound by "
              << html_escape(d.result.bound) << ".";
        else
            o << "Best: <strong>" << html_escape(b.name) << "</strong> at "
              << html_escape(html_time(b.result.device_time)) << ", <strong>"
              << html_escape(html_ratio(d.result.device_time / b.result.device_time))
              << "</strong> faster than the default (" << html_escape(d.name) << ", "
              << html_escape(html_time(d.result.device_time)) << "); bound by " << html_escape(b.result.bound)
              << ".";
        o << "</p>\n";

        // The ranked table.
        o << "<h3>Ranked by predicted device time</h3>\n<table class=\"ranked\" id=\"k" << id
          << "-table\">\n<tr><th>#</th><th class=\"name\">configuration</th><th>chip</th><th>time</th>"
             "<th>vs default</th><th class=\"name\">bound by</th><th>exposed DMA</th><th>overhead</th>"
             "<th>VMEM</th><th>MXU</th><th>HBM BW</th>";
        if (options.write_traces) o << "<th>trace</th>";
        o << "</tr>\n";
        for (std::size_t row = 0; row < order.size(); ++row) {
            const std::size_t i = order[row];
            const html_config& c = k.configs[i];
            const report& r = c.result;
            const time_split s = split_time(r);
            const double t = r.device_time > 0 ? r.device_time : 1;
            o << "<tr class=\"" << (i == best ? "best" : i == k.default_config ? "default" : "") << "\"><td>"
              << row + 1 << "</td><td class=\"name\">" << html_escape(c.name);
            if (i == best) o << "<span class=\"tag best\">best</span>";
            if (i == k.default_config) o << "<span class=\"tag default\">default</span>";
            o << "</td><td>" << html_escape(r.chip) << (r.cores > 1 ? " ×" + std::to_string(r.cores) : "")
              << "</td><td>" << html_escape(html_time(r.device_time)) << "</td><td>"
              << html_escape(html_ratio(d.result.device_time / t)) << "</td><td class=\"name\">"
              << html_escape(r.bound) << (r.compute_bound.empty() ? "" : " (bodies: " + html_escape(r.compute_bound) + ")")
              << "</td><td>" << detail::fixed(s.exposed_dma / t * 100, 1)
              << "%</td><td>" << detail::fixed(s.overhead / t * 100, 1) << "%</td><td>"
              << detail::fixed(detail::vmem_high_water(r) / (1 << 20), 1) << " MiB</td><td>"
              << detail::fixed(r.mxu_utilization * 100, 0) << "%</td><td>"
              << detail::fixed(r.bandwidth_fraction * 100, 0) << "%</td>";
            if (options.write_traces) {
                o << "<td>";
                if (!r.timeline.empty())
                    o << "<a href=\"" << html_escape(trace_file_name(id, i, c.name)) << "\">json</a>";
                o << "</td>";
            }
            o << "</tr>\n";
        }
        o << "</table>\n";
        for (const std::string& n : k.notes) o << "<p class=\"note\">" << html_escape(n) << "</p>\n";
        if (!k.files.empty()) {
            o << "<p class=\"note files\" id=\"k" << id << "-files\">Files:";
            for (std::size_t f = 0; f < k.files.size(); ++f)
                o << (f ? " · " : " ") << "<a href=\"" << html_escape(k.files[f].second) << "\">"
                  << html_escape(k.files[f].first) << "</a>";
            o << "</p>\n";
        }
        if (!k.rejected.empty()) {
            o << "<p>Not run: rejected before any byte moved, by the rule named:</p>\n<ul class=\"rejected\">";
            for (const auto& [name, why] : k.rejected)
                o << "<li><code>" << html_escape(name) << "</code>: " << html_escape(why) << "</li>";
            o << "</ul>\n";
        }

        // The bars and their legend.
        o << "<h3>Where the time goes</h3>\n"
          << detail::bar_chart(k, order, best, id, any_semaphore) << "\n<ul class=\"legend\">"
          << "<li><i style=\"background:" << detail::c_compute
          << "\"></i>compute: the kernel bodies (MXU, VPU, EUP, vector loads and stores)</li>"
          << "<li><i style=\"background:" << detail::c_exposed
          << "\"></i>exposed DMA: the core waits for a copy that compute did not hide</li>"
          << "<li><i style=\"background:" << detail::c_overhead
          << "\"></i>overhead: per-step control overhead and issuing DMAs</li>";
        if (any_semaphore)
            o << "<li><i style=\"background:" << detail::c_semaphore
              << "\"></i>semaphore stall: waiting for the other core's signal</li>";
        o << "<li>Each bar is the TensorCore that finishes last; its parts add up to the predicted device "
             "time.</li></ul>\n";

        // The timelines, best and default side by side.
        o << "<h3>Timelines</h3>\n<div class=\"timelines\">\n";
        auto figure = [&](std::size_t i, const char* role, const char* label) {
            const html_config& c = k.configs[i];
            o << "<figure class=\"timeline\" id=\"k" << id << "-timeline-" << role << "\" title=\"click to widen\">"
              << "<figcaption>" << label << ": " << html_escape(c.name) << " — "
              << html_escape(html_time(c.result.device_time)) << "</figcaption>\n"
              << detail::scalable_svg(to_svg(c.result, options.timeline)) << "</figure>\n";
        };
        figure(best, "best", best == k.default_config ? "Best (and default)" : "Best");
        if (best != k.default_config) figure(k.default_config, "default", "Default");
        o << "</div>\n";
        if (options.write_traces)
            o << "<p class=\"summary\">Each configuration's full trace is linked in the table (Chrome trace "
                 "JSON): open it in Perfetto (ui.perfetto.dev, “Open trace file”) or chrome://tracing.</p>\n";
        o << "</section>\n";
    }
    o << "</main>\n<footer>Predicted by ptpu's timing model (docs/model.md); no TPU was used. "
         "This page needs no network.</footer>\n";
    // Clicking a timeline widens it to the whole row (and back).
    o << "<script>\n"
         "document.querySelectorAll('figure.timeline').forEach(function (f) {\n"
         "  f.addEventListener('click', function () { f.classList.toggle('wide'); });\n"
         "});\n"
         "document.body.setAttribute('data-ptpu-script', 'ran');\n"
         "</script>\n</body>\n</html>\n";
    return o.str();
}

PTPU_COMPILED std::string write_html_report(const std::string& dir, const std::vector<html_kernel>& kernels,
                                     const html_options& options) {
    const std::string page = to_html(kernels, options);  // checks the input before writing anything
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw error("REP2", "write_html_report", "cannot create " + dir + ": " + ec.message(),
                        "give a directory that can be created and written");
    const std::filesystem::path base(dir);
    if (options.write_traces)
        for (std::size_t id = 0; id < kernels.size(); ++id)
            for (std::size_t i = 0; i < kernels[id].configs.size(); ++i) {
                const html_config& c = kernels[id].configs[i];
                if (!c.result.timeline.empty())
                    write_chrome_trace(c.result, (base / trace_file_name(id, i, c.name)).string());
            }
    const std::string path = (base / "index.html").string();
    detail::write_file(path, page, "write_html_report");
    return path;
}

}  // namespace ptpu
