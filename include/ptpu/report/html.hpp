// Defines the HTML comparison report: one self-contained page (inline CSS, inline SVG, a few
// lines of inline JS; no network, no external file needed to render) comparing configurations
// of one or more kernels, per kernel a one-sentence verdict, a ranked table, stacked bars of
// where each configuration's predicted time goes, the timelines of the best and the default
// configuration side by side, and relative links to Perfetto traces written next to the page.
// Opt-in: ptpu.hpp does not include it. Its definitions (report/html_impl.hpp) are compiled once
// in ptpu::runtime when a program links it (core/linkage.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/report/trace.hpp"

namespace ptpu {

/// One configuration of a kernel: a name a person reads ("v5e block_h 384 Buffered<2>") and its
/// report. The best and the default configuration need a timeline (run_options::timeline).
struct html_config {
    std::string name;
    report result;
};

/// One kernel's comparison.
struct html_kernel {
    std::string title;    ///< heading, e.g. "Fused MLP"
    std::string summary;  ///< the problem in a sentence (shape, dtype); plain text
    std::vector<html_config> configs;  ///< in any order: the page ranks them
    std::size_t default_config = 0;    ///< index into configs: what speedups are measured against
    std::optional<std::size_t> best_config{};  ///< none: the fastest
    std::vector<std::string> notes;            ///< plain-text lines, e.g. the numerics check
    /// Configurations that were not run, with the rule that rejects each (e.g. "ptpu[24] ...").
    std::vector<std::pair<std::string, std::string>> rejected;
    /// The ranking, best first, as indices into configs (a sweep's, kept as it ranked); empty:
    /// by device time.
    std::vector<std::size_t> order{};
    /// Files next to the page to link under the table, as (text, relative path), e.g. a sweep's
    /// CSV and JSON.
    std::vector<std::pair<std::string, std::string>> files{};
};

struct html_options {
    std::string title = "ptpu: comparing pipelining configurations";
    std::string subtitle;        ///< a line under the title (plain text)
    svg_options timeline{};      ///< passed to to_svg for the embedded timelines
    bool write_traces = true;    ///< write_html_report: a Perfetto trace per configuration with a timeline
};

/// Where a configuration's predicted time goes, on the TensorCore that finishes last. The parts
/// sum to report::device_time: a core's stream is never idle, so its time is overhead + DMA
/// issue + compute + exposed DMA + semaphore stall (the engine's identity, sim/result.hpp); what
/// the device spends after that core's last op (dangling DMAs still in flight) counts as exposed
/// DMA.
struct time_split {
    int core = 0;
    double compute = 0;
    double exposed_dma = 0;
    double overhead = 0;  ///< per-step control overhead plus the scalar core's DMA issue
    double semaphore_stall = 0;
    [[nodiscard]] double total() const { return compute + exposed_dma + overhead + semaphore_stall; }
};

PTPU_COMPILED time_split split_time(const report& r);

/// The configurations' indices, fastest first (ties keep their order), or html_kernel::order.
PTPU_COMPILED std::vector<std::size_t> rank_order(const html_kernel& k);

/// The configuration the page calls best: best_config, or the fastest.
PTPU_COMPILED std::size_t best_of(const html_kernel& k);

/// The file name of a configuration's trace, relative to the page: k<kernel>-c<config>-<name>.json
/// with the name reduced to [a-z0-9-].
PTPU_COMPILED std::string trace_file_name(std::size_t kernel, std::size_t config, std::string_view name);

/// The page as a string. Trace links point at trace_file_name(kernel, config, name) next to
/// the page when options.write_traces (write_html_report writes them).
PTPU_COMPILED std::string to_html(const std::vector<html_kernel>& kernels, const html_options& options = {});

/// Writes `dir`/index.html (created with its parents) and, when options.write_traces, a
/// Perfetto trace per configuration with a timeline next to it. Returns the page's path.
PTPU_COMPILED std::string write_html_report(const std::string& dir, const std::vector<html_kernel>& kernels,
                                            const html_options& options = {});

namespace detail {
/// Text made safe inside HTML elements and attribute values (&, <, >, ", ').
PTPU_COMPILED std::string html_escape(std::string_view in);
}  // namespace detail

}  // namespace ptpu

// The definitions, where this translation unit compiles them (core/linkage.hpp).
#if defined(PTPU_DEFINE_COMPILED)
#include "ptpu/report/html_impl.hpp"
#endif
