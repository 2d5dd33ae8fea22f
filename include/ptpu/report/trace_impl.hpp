// Defines what report/trace.hpp declares: the Chrome trace (Perfetto) and SVG timeline writers.
// Read where the compiled part is compiled (core/linkage.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/report/trace.hpp"

namespace ptpu {

namespace detail {
PTPU_COMPILED void require_timeline(const report& r, const char* where) {
    if (r.timeline.empty())
        throw error("REP1", where, "the report has no timeline",
                    "run the call with run_options{.timeline = true}: Call{{.timeline = true}}(body, ...)");
}

PTPU_COMPILED const char* kind_name(stream::copy_kind k) {
    switch (k) {
        case stream::copy_kind::fetch:
            return "fetch";
        case stream::copy_kind::sync_in:
            return "sync_in";
        case stream::copy_kind::restore:
            return "restore";
        case stream::copy_kind::write:
            return "write";
        case stream::copy_kind::write_sync:
            return "write_sync";
        case stream::copy_kind::sync_out:
            return "sync_out";
        case stream::copy_kind::body:
            return "sync_copy";
        case stream::copy_kind::body_async:
            return "async_copy";
        default:
            return "dma";
    }
}

PTPU_COMPILED bool inbound(stream::copy_kind k) {
    return k == stream::copy_kind::fetch || k == stream::copy_kind::sync_in || k == stream::copy_kind::restore;
}

PTPU_COMPILED std::string dma_name(const report& r, std::uint32_t label) {
    if (label >= r.notes.size()) return "dma";
    const dma_note& n = r.notes[label];
    if (n.kind == stream::copy_kind::body || n.kind == stream::copy_kind::body_async)
        return std::string(kind_name(n.kind)) + " (body, step " + std::to_string(n.block_step) + ")";
    // An inner pipeline's DMA (emit_pipeline) names its pipeline and its own operand numbers.
    std::string s = n.pipeline > 0 ? "pipeline " + std::to_string(n.pipeline) + " op" + std::to_string(n.op)
                    : (n.op < r.operand_names.size() ? r.operand_names[n.op] : "op" + std::to_string(n.op));
    s += " ";
    s += kind_name(n.kind);
    s += " (";
    for (int d = 0; d < n.block.rank; ++d) s += (d ? ", " : "") + std::to_string(n.block.v[d]);
    s += ") slot " + std::to_string(n.slot);
    return s;
}

PTPU_COMPILED std::string span_name(const report& r, const sim::span& s) {
    if (s.track == sim::span::track::dma) return dma_name(r, s.label);
    switch (s.kind) {
        case sim::op_kind::overhead:
            return "step " + std::to_string(s.step) + " overhead";
        case sim::op_kind::compute:
            return "body step " + std::to_string(s.step);
        case sim::op_kind::dma_start:
            return "issue " + dma_name(r, s.label);
        case sim::op_kind::dma_wait:
            return "wait " + dma_name(r, s.label);
        case sim::op_kind::sem_signal:
            return "signal semaphore " + std::to_string(s.dma);
        case sim::op_kind::sem_wait:
            return (s.far ? "DMA semaphore wait " : "semaphore wait ") + std::to_string(s.dma) + " (step " +
                   std::to_string(s.step) + ")";
        case sim::op_kind::repeat:  // (no span: it stands for the ops after it)
            break;
    }
    return "op";
}

PTPU_COMPILED std::string json_escape(const std::string& in) {
    std::string out;
    for (char c : in) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

PTPU_COMPILED dma_lane_set dma_lanes(const report& r) {
    dma_lane_set out;
    out.lane.assign(r.timeline.size(), -1);
    const std::size_t n_ops = r.operand_names.size();
    auto group = [&](const sim::span& s) -> std::size_t {
        if (s.label >= r.notes.size()) return n_ops + 1;
        const dma_note& n = r.notes[s.label];
        if (n.kind == stream::copy_kind::body || n.kind == stream::copy_kind::body_async) return n_ops;
        return n.op < n_ops ? n.op : n_ops + 1;
    };
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < r.timeline.size(); ++i)
        if (r.timeline[i].track == sim::span::track::dma) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return r.timeline[a].begin < r.timeline[b].begin; });
    // busy[core][group]: when each sub-lane frees; sub[i]: the span's sub-lane.
    std::vector<std::vector<std::vector<double>>> busy(max_cores,
                                                       std::vector<std::vector<double>>(n_ops + 2));
    std::vector<std::size_t> sub(r.timeline.size(), 0), width(n_ops + 2, 0);
    for (std::size_t i : order) {
        const sim::span& s = r.timeline[i];
        const std::size_t g = group(s);
        auto& lanes = busy[static_cast<std::size_t>(s.core)][g];
        std::size_t k = 0;
        while (k < lanes.size() && lanes[k] > s.begin) ++k;
        if (k == lanes.size()) lanes.push_back(0);
        lanes[k] = s.end;
        sub[i] = k;
        width[g] = std::max(width[g], k + 1);
    }
    std::vector<int> first(n_ops + 2, 0);
    for (std::size_t g = 0; g < n_ops + 2; ++g) {
        first[g] = static_cast<int>(out.names.size());
        const std::string base = g < n_ops ? r.operand_names[g] : g == n_ops ? "body copies" : "DMA";
        for (std::size_t k = 0; k < width[g]; ++k)
            out.names.push_back(k == 0 ? base : base + " (" + std::to_string(k + 1) + ")");
    }
    for (std::size_t i : order) out.lane[i] = first[group(r.timeline[i])] + static_cast<int>(sub[i]);
    return out;
}

PTPU_COMPILED double tick_step(double t) {
    const double raw = t / 8;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    const double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

PTPU_COMPILED std::vector<step_mark> step_marks(const report& r) {
    std::vector<step_mark> v;
    for (const sim::span& s : r.timeline)
        if (s.track == sim::span::track::stream && s.kind == sim::op_kind::overhead) v.push_back({s.core, s.step, s.begin});
    std::stable_sort(v.begin(), v.end(), [](const step_mark& a, const step_mark& b) {
        return a.core != b.core ? a.core < b.core : a.t < b.t;
    });
    std::vector<step_mark> out;
    for (const step_mark& m : v)
        if (out.empty() || out.back().core != m.core || out.back().step != m.step) out.push_back(m);
    return out;
}

PTPU_COMPILED long long round_stride(double x) {
    long long p = 1;
    for (;;) {
        for (long long m : {1, 2, 5})
            if (static_cast<double>(m * p) >= x) return m * p;
        p *= 10;
    }
}

PTPU_COMPILED window make_window(const report& r, double t_begin, double t_end, const char* where) {
    window w{t_begin, t_end > 0 ? t_end : (r.device_time > 0 ? r.device_time : 1e-9)};
    if (!std::isfinite(t_begin) || !std::isfinite(t_end) || t_begin < 0 || t_end < 0 || !(w.begin < w.end))
        throw error("REP3", where,
                    "the time window [" + std::to_string(t_begin) + ", " + std::to_string(t_end) +
                        "] s is empty or not finite",
                    "give 0 <= t_begin < t_end (seconds; t_end = 0 means the end of the run)");
    return w;
}

PTPU_COMPILED std::string default_title(const report& r) {
    std::ostringstream o;
    o << "ptpu timeline: ";
    if (!r.operands.empty()) {
        o << "operands ";
        for (std::size_t i = 0; i < r.operands.size(); ++i) o << (i ? ", " : "") << r.operands[i].name;
        o << "; ";
    }
    o << r.stats.steps << " grid steps on " << r.chip << ", " << r.cores << (r.cores == 1 ? " core" : " cores");
    o.precision(3);
    o << std::fixed << "; device time " << r.device_time * 1e6 << " us";
    if (!r.bound.empty()) o << ", bound by " << r.bound;
    return o.str();
}

PTPU_COMPILED std::string xml_escape(const std::string& in) {
    std::string out;
    for (char c : in) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

PTPU_COMPILED void write_file(const std::string& path, const std::string& text, const char* where) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f) throw error("REP2", where, "cannot write " + path, "check the directory exists and is writable");
}

}  // namespace detail
PTPU_COMPILED std::string to_chrome_trace(const report& r, const trace_options& opt) {
    detail::require_timeline(r, "to_chrome_trace");
    const detail::window win = detail::make_window(r, opt.t_begin, opt.t_end, "to_chrome_trace");
    const detail::dma_lane_set ls = detail::dma_lanes(r);
    const std::vector<int>& lane = ls.lane;
    const int lanes = static_cast<int>(ls.names.size());
    std::ostringstream o;
    o.precision(6);
    o << std::fixed;
    o << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"chip\":\"" << detail::json_escape(r.chip)
      << "\",\"device_time_us\":" << r.device_time * 1e6 << "},\"traceEvents\":[";
    bool first = true;
    auto sep = [&] {
        if (!first) o << ",";
        first = false;
    };
    for (int c = 0; c < r.cores; ++c) {
        sep();
        o << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << c << ",\"args\":{\"name\":\"TensorCore "
          << c << " (" << detail::json_escape(r.chip) << ")\"}}";
        sep();
        o << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << c
          << ",\"tid\":0,\"args\":{\"name\":\"core stream\"}}";
        for (int k = 0; k < lanes; ++k) {
            sep();
            o << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << c << ",\"tid\":" << k + 1
              << ",\"args\":{\"name\":\"DMA " << detail::json_escape(ls.names[static_cast<std::size_t>(k)])
              << "\"}}";
        }
    }
    for (std::size_t i = 0; i < r.timeline.size(); ++i) {
        const sim::span& s = r.timeline[i];
        double b = s.begin, e = s.end;
        if (!win.clip(b, e)) continue;
        const bool dma = s.track == sim::span::track::dma;
        const char* cat =
            dma ? (s.label < r.notes.size() && detail::inbound(r.notes[s.label].kind) ? "dma_in" : "dma_out")
                : (s.kind == sim::op_kind::compute    ? "compute"
                   : s.kind == sim::op_kind::overhead ? "overhead"
                   : s.kind == sim::op_kind::dma_wait ? "wait"
                   : s.kind == sim::op_kind::sem_wait ? (s.far ? "wait" : "semaphore_stall")
                                                      : "issue");
        sep();
        o << "{\"ph\":\"X\",\"pid\":" << s.core << ",\"tid\":" << (dma ? lane[i] + 1 : 0)
          << ",\"ts\":" << b * 1e6 << ",\"dur\":" << (e - b) * 1e6 << ",\"cat\":\"" << cat
          << "\",\"name\":\"" << detail::json_escape(detail::span_name(r, s))
          << "\",\"args\":{\"step\":" << s.step;
        if (dma) o << ",\"bytes\":" << s.bytes << ",\"hbm\":" << (s.far ? "true" : "false");
        o << "}}";
    }
    o << "]}";
    return o.str();
}

PTPU_COMPILED void write_chrome_trace(const report& r, const std::string& path, const trace_options& opt) {
    detail::write_file(path, to_chrome_trace(r, opt), "write_chrome_trace");
}

PTPU_COMPILED std::string to_svg(const report& r, const svg_options& opt) {
    detail::require_timeline(r, "to_svg");
    const detail::dma_lane_set ls = detail::dma_lanes(r);
    const std::vector<int>& lane = ls.lane;
    const int lanes = static_cast<int>(ls.names.size());
    const detail::window win = detail::make_window(r, opt.t_begin, opt.t_end, "to_svg");
    const double span_t = win.end - win.begin;
    const int left = 150, right = 20, top = 50;
    const int plot = std::max(200, opt.width - left - right);
    const int rows_per_core = 1 + std::max(lanes, 1);
    const int strip = opt.step_marks ? 14 : 0;  // the grid-step marks above each core's stream
    const int core_h = strip + rows_per_core * opt.row_height + 16;
    const int height = top + r.cores * core_h + 60;
    auto x = [&](double t) { return left + (t - win.begin) / span_t * plot; };
    std::ostringstream o;
    o.precision(3);
    o << std::fixed;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << opt.width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    o << "<text x=\"10\" y=\"20\" font-size=\"14\">"
      << detail::xml_escape(opt.title.empty() ? detail::default_title(r) : opt.title);
    if (opt.t_begin > 0 || opt.t_end > 0) o << " [window " << win.begin * 1e6 << " - " << win.end * 1e6 << " us]";
    o << "</text>\n";
    auto color = [&](const sim::span& s) -> const char* {
        if (s.track == sim::span::track::dma)
            return s.label < r.notes.size() && detail::inbound(r.notes[s.label].kind) ? "#3a9e4f" : "#e08a1e";
        switch (s.kind) {
            case sim::op_kind::overhead:
                return "#9a9a9a";
            case sim::op_kind::dma_start:
                return "#d8c020";
            case sim::op_kind::compute:
                return "#2f6fd0";
            case sim::op_kind::dma_wait:
                return "#d03030";
            case sim::op_kind::sem_wait:
                return s.far ? "#d03030" : "#8e44ad";  // a DMA semaphore's wait is exposed DMA
            case sim::op_kind::sem_signal:
            case sim::op_kind::repeat:  // (no span: it stands for the ops after it)
                return "#000";
        }
        return "#000";
    };
    for (int c = 0; c < r.cores; ++c) {
        const int y0 = top + c * core_h + strip;
        if (strip > 0) o << "<text x=\"10\" y=\"" << y0 - 3 << "\" font-size=\"9\">core " << c << " steps</text>\n";
        o << "<text x=\"10\" y=\"" << y0 + 15 << "\">core " << c << " stream</text>\n";
        for (int k = 0; k < std::max(lanes, 1); ++k)
            o << "<text x=\"10\" y=\"" << y0 + (k + 1) * opt.row_height + 15 << "\">core " << c << " "
              << detail::json_escape(k < lanes ? ls.names[static_cast<std::size_t>(k)] : std::string("DMA"))
              << "</text>\n";
    }
    for (std::size_t i = 0; i < r.timeline.size(); ++i) {
        const sim::span& s = r.timeline[i];
        double b = s.begin, e = s.end;
        if (!win.clip(b, e)) continue;
        const int y0 = top + s.core * core_h + strip;
        const int row = s.track == sim::span::track::dma ? lane[i] + 1 : 0;
        const double x0 = x(b);
        const double w = std::max(0.5, x(e) - x0);
        o << "<rect x=\"" << x0 << "\" y=\"" << y0 + row * opt.row_height + 2 << "\" width=\"" << w
          << "\" height=\"" << opt.row_height - 4 << "\" fill=\"" << color(s) << "\"><title>"
          << detail::json_escape(detail::span_name(r, s)) << ": " << s.begin * 1e6 << " - " << s.end * 1e6
          << " us</title></rect>\n";
    }
    if (strip > 0) {
        // Thinned by each mark's rank on its core over the whole run (not the window), so that a
        // window shows a subset of the whole run's marks; the stride from the busiest core.
        const std::vector<detail::step_mark> marks = detail::step_marks(r);
        std::vector<long long> rank(marks.size(), 0), shown(static_cast<std::size_t>(r.cores), 0);
        std::uint32_t top_step = 0;
        for (std::size_t j = 0; j < marks.size(); ++j) {
            rank[j] = j > 0 && marks[j - 1].core == marks[j].core ? rank[j - 1] + 1 : 0;
            if (marks[j].t >= win.begin && marks[j].t <= win.end) {
                ++shown[static_cast<std::size_t>(marks[j].core)];
                top_step = std::max(top_step, marks[j].step);
            }
        }
        const double n = static_cast<double>(*std::max_element(shown.begin(), shown.end()));
        const long long m = detail::round_stride(n * std::max(opt.step_mark_px, 0.5) / plot);
        const double label_px = 6.0 * static_cast<double>(std::to_string(top_step).size()) + 6;
        const long long k = m * detail::round_stride(n / static_cast<double>(m) * label_px / plot);
        std::vector<double> label_end(static_cast<std::size_t>(r.cores), -1e300);
        for (std::size_t j = 0; j < marks.size(); ++j) {
            const detail::step_mark& s = marks[j];
            if (s.t < win.begin || s.t > win.end || rank[j] % m != 0) continue;
            const int y0 = top + s.core * core_h;
            const double xs = x(s.t);
            o << "<line class=\"step-mark\" x1=\"" << xs << "\" y1=\"" << y0 + strip - 5 << "\" x2=\"" << xs
              << "\" y2=\"" << y0 + strip + opt.row_height << "\" stroke=\"#555\" stroke-width=\"0.5\"/>\n";
            // Labels: every k-th, never over the last one (steps need not be evenly spaced) nor
            // past the drawing's right edge.
            double& end = label_end[static_cast<std::size_t>(s.core)];
            if (rank[j] % k != 0 || xs < end || xs + label_px > left + plot + right) continue;
            o << "<text class=\"step-label\" x=\"" << xs + 1 << "\" y=\"" << y0 + strip - 4
              << "\" font-size=\"9\">" << s.step << "</text>\n";
            end = xs + label_px;
        }
    }
    const int axis_y = height - 45;
    o << "<line x1=\"" << left << "\" y1=\"" << axis_y << "\" x2=\"" << left + plot << "\" y2=\"" << axis_y
      << "\" stroke=\"black\"/>\n";
    // Round ticks inside the window: multiples of a 1-2-5 step, labelled with the digits it needs.
    const double tick = detail::tick_step(span_t);
    const int digits = std::max(0, static_cast<int>(-std::floor(std::log10(tick * 1e6) + 1e-9)));
    const auto first = static_cast<long long>(std::ceil(win.begin / tick - 1e-9));
    std::ostringstream lab;
    lab << std::fixed;
    lab.precision(digits);
    for (long long k = first; static_cast<double>(k) * tick <= win.end + 1e-9 * span_t; ++k) {
        const double t = static_cast<double>(k) * tick;
        lab.str("");
        lab << t * 1e6;
        o << "<line x1=\"" << x(t) << "\" y1=\"" << axis_y << "\" x2=\"" << x(t) << "\" y2=\"" << axis_y + 5
          << "\" stroke=\"black\"/><text x=\"" << x(t) - 15 << "\" y=\"" << axis_y + 17 << "\">" << lab.str()
          << " us</text>\n";
    }
    const char* legend[][2] = {{"#9a9a9a", "step overhead"}, {"#d8c020", "DMA issue"},
                               {"#2f6fd0", "compute"},       {"#d03030", "exposed DMA wait"},
                               {"#8e44ad", "semaphore stall"}, {"#3a9e4f", "DMA in"},
                               {"#e08a1e", "DMA out"}};
    for (int k = 0; k < 7; ++k)
        o << "<rect x=\"" << left + k * 150 << "\" y=\"" << height - 18
          << "\" width=\"12\" height=\"12\" fill=\"" << legend[k][0] << "\"/><text x=\""
          << left + k * 150 + 16 << "\" y=\"" << height - 8 << "\">" << legend[k][1] << "</text>\n";
    o << "</svg>\n";
    return o.str();
}

PTPU_COMPILED void write_svg(const report& r, const std::string& path, const svg_options& opt) {
    detail::write_file(path, to_svg(r, opt), "write_svg");
}

}  // namespace ptpu
