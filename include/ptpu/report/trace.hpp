// Defines the exporters of a report's timeline: Chrome trace-event JSON (opens in Perfetto and
// chrome://tracing: a process per TensorCore, a thread for its in-order stream and one per DMA
// lane, events named by operand, block index and slot) and a self-contained SVG timeline (DMA
// versus compute per core, its grid steps marked, titled by the kernel's configuration) that any
// browser opens; both can show a time window of a long run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/report/report.hpp"

namespace ptpu {

namespace detail {

PTPU_COMPILED void require_timeline(const report& r, const char* where);

PTPU_COMPILED const char* kind_name(stream::copy_kind k);

PTPU_COMPILED bool inbound(stream::copy_kind k);

/// "in0 fetch (2, 0) slot 1" for a pipeline DMA, "sync_copy (body)" for a body's own.
PTPU_COMPILED std::string dma_name(const report& r, std::uint32_t label);

PTPU_COMPILED std::string span_name(const report& r, const sim::span& s);

PTPU_COMPILED std::string json_escape(const std::string& in);

/// DMA lanes, one per operand (named by it; body copies share one), and within an operand
/// greedy sub-lanes: a span goes to the first of its operand's lanes free at its start, so spans
/// in one lane never overlap. `names` holds each lane's label, the same lanes on every core.
struct dma_lane_set {
    std::vector<int> lane;  ///< per timeline span: its lane (-1: not a DMA span)
    std::vector<std::string> names;
};
PTPU_COMPILED dma_lane_set dma_lanes(const report& r);

/// A round tick step for an axis of length `t`: 1, 2 or 5 times a power of ten, about t/8.
PTPU_COMPILED double tick_step(double t);

/// Where each grid step starts on each core: the begin of the first step-overhead span carrying
/// a new step value (an inner pipeline's overhead ops carry the enclosing step: one mark), in
/// time order. (core, step, time) per mark.
struct step_mark {
    int core = 0;
    std::uint32_t step = 0;
    double t = 0;
};
PTPU_COMPILED std::vector<step_mark> step_marks(const report& r);
/// The smallest of 1, 2, 5, 10, 20, … at least `x`.
PTPU_COMPILED long long round_stride(double x);

/// The time window an exporter shows: [begin, end] within the run; t_end 0 is the device time.
struct window {
    double begin = 0;
    double end = 0;
    /// The part of [a, b] inside the window; false when none of it is.
    [[nodiscard]] bool clip(double& a, double& b) const {
        if (b < begin || a > end || (a == b && (a < begin || a > end))) return false;
        a = std::max(a, begin);
        b = std::min(b, end);
        return true;
    }
};
PTPU_COMPILED window make_window(const report& r, double t_begin, double t_end, const char* where);

/// The default SVG title: what the report knows of the kernel and its configuration.
PTPU_COMPILED std::string default_title(const report& r);

/// Characters of s XML text may not hold as they are.
PTPU_COMPILED std::string xml_escape(const std::string& in);

PTPU_COMPILED void write_file(const std::string& path, const std::string& text, const char* where);

}  // namespace detail

struct trace_options {
    /// A time window of the run, in seconds (t_end 0: the end of the run): only the spans that
    /// overlap it, clipped to it. Throws REP3 unless 0 <= t_begin < t_end.
    double t_begin = 0;
    double t_end = 0;
};

/// Chrome trace-event JSON of the report's timeline (times in microseconds).
PTPU_COMPILED std::string to_chrome_trace(const report& r, const trace_options& opt = {});

PTPU_COMPILED void write_chrome_trace(const report& r, const std::string& path, const trace_options& opt = {});

struct svg_options {
    int width = 1400;  ///< drawing width in pixels
    int row_height = 22;
    /// A time window of the run, in seconds (t_end 0: the end of the run): the axis spans it,
    /// its ticks are round values inside it, and spans are clipped to it. Throws REP3 unless
    /// 0 <= t_begin < t_end.
    double t_begin = 0;
    double t_end = 0;
    /// The heading ("": one naming the operands, grid steps, chip, cores, device time and bound).
    std::string title;
    /// Grid-step marks: a strip above each core's stream with a tick where each step's overhead
    /// op starts, thinned to every m-th step (m in 1, 2, 5, 10, …) so that ticks are at least
    /// `step_mark_px` apart on average, and labelled with the step every k-th (a multiple of m)
    /// so that labels never overlap.
    bool step_marks = true;
    double step_mark_px = 4;
};

/// A self-contained SVG timeline: per core a row for the stream (overhead, issue, compute,
/// exposed waits) and a row per DMA lane (inbound and outbound DMAs), a time axis and a legend.
PTPU_COMPILED std::string to_svg(const report& r, const svg_options& opt = {});

PTPU_COMPILED void write_svg(const report& r, const std::string& path, const svg_options& opt = {});

}  // namespace ptpu

// The definitions, where this translation unit compiles them (core/linkage.hpp).
#if defined(PTPU_DEFINE_COMPILED)
#include "ptpu/report/trace_impl.hpp"
#endif
