// Defines what a sweep returns: sweep::result (the ranked points with their reports, the
// rejected ones with the rule that rejects each (ptpu::error's id: 24 VMEM, 15 tiling, 19 buffer
// count, ...), top(k), a table printer, a summary of the rejections by rule, CSV and JSON
// writers), sweep::options, the thread pool that evaluates the points, and html_section, the
// result as one kernel's section of the HTML comparison report. Nothing here depends
// on a configuration or a body, and nothing needs Hana: with ptpu::runtime linked
// (PTPU_SEPARATE_RUNTIME) a sweeping file sees declarations only, and ptpu::runtime compiles the
// definitions (sweep/result_impl.hpp) once (core/linkage.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/report/html.hpp"
#include "ptpu/report/report.hpp"

namespace ptpu::sweep {

/// A chip's name as users say it: the TPU generations are v4 … v6e, then 7x (its preset is v7x).
PTPU_COMPILED std::string chip_label(const chip& c);

namespace detail {
/// A point's label from its values' texts: joined by ", ", value i as `names[i]=value` when
/// names[i] is given and not empty (default_label).
PTPU_COMPILED std::string join_label(std::span<const std::string> values, std::span<const std::string> names);

/// One value of a point whose text the compiled part writes (label_of's rules): an integer, a
/// truth value or a chip (null: no chip).
struct label_value {
    enum class kind : std::uint8_t {
        signed_integer,
        unsigned_integer,
        boolean,
        chip
    } k = kind::signed_integer;
    long long i = 0;
    unsigned long long u = 0;
    const ptpu::chip* c = nullptr;
};
/// The default labels of n points of `width` such values each, `values` holding them point by
/// point, named by the n_names axis names at `names`. (Pointers, not spans: a span made from a
/// container costs a sweeping file the range concepts' checks.)
PTPU_COMPILED std::vector<std::string> default_labels(const label_value* values, std::size_t n,
                                                      std::size_t width, const std::string* names,
                                                      std::size_t n_names);
}  // namespace detail

// ---- Options and results ----------------------------------------------------------------------

/// When a sweep draws its progress bar (on stderr).
enum class progress {
    automatic,  ///< when stderr is a terminal and the sweep runs longer than options::progress_after
    off,
    on,  ///< always (also when stderr is not a terminal), after options::progress_after
};

struct options {
    /// Worker threads; 0: std::thread::hardware_concurrency().
    unsigned threads = 0;
    progress bar = progress::automatic;
    double progress_after = 1.0;  ///< seconds before the bar appears
    /// The point (its position in the space's order) the others are compared with: the table's
    /// and the files' speedup = its time / the point's time.
    std::optional<std::size_t> baseline{};
    /// Names of the axes for the default labels ("bm" → "bm=256").
    std::vector<std::string> axis_names{};
    /// Record no per-step rows and no timeline: both cost memory and time at every point
    /// (run_options::per_step, timeline), and a sweep reads neither. Off: the
    /// configurations' own run_options are kept.
    bool lean = true;
};

/// One point of a sweep: predicted (ok) with its report, or rejected with the rule that rejects it.
struct entry {
    std::size_t index = 0;  ///< position in the space's order
    std::string label;
    bool ok = false;
    double time = 0;  ///< what the ranking reads: device time, or the total over the shapes
    report rep{};     ///< ok: the report (of the first shape for run_shapes)
    std::vector<report> shapes{};  ///< run_shapes: one report per shape
    std::string rule{};     ///< rejected: the rule id, "24"
    std::string message{};  ///< rejected: the whole `ptpu[ID] where: what; fix`

    // Compiled once (an entry holds a report: its copies and destructor are long).
    PTPU_COMPILED entry();
    PTPU_COMPILED entry(const entry&);
    PTPU_COMPILED entry(entry&&) noexcept;
    PTPU_COMPILED entry& operator=(const entry&);
    PTPU_COMPILED entry& operator=(entry&&) noexcept;
    PTPU_COMPILED ~entry();

    /// The VMEM one core allocates (the largest over cores; check 24's sum).
    [[nodiscard]] PTPU_COMPILED index_t vmem_bytes() const;
    /// Time the cores sat waiting for DMAs, as a share of their time (Σ over cores and shapes).
    [[nodiscard]] PTPU_COMPILED double exposed_dma_share() const;
};

/// What a rule a sweep often meets is about, in a word or two ("VMEM limit" for 24), or "" for
/// the others (docs/rules.md has the whole text of every rule; the message too).
PTPU_COMPILED std::string_view rule_topic(std::string_view rule);

/// What a sweep returns: the feasible points ranked best first (by time; equal times keep the
/// space's order), the rejected ones in the space's order, the baseline for speedups.
class result {
public:
    std::vector<entry> ranked;    ///< predicted, best first
    std::vector<entry> rejected;  ///< in the space's order
    std::optional<std::size_t> baseline{};  ///< the baseline's index (position in the space)
    std::vector<std::string> shape_labels{};  ///< run_shapes: the shapes' names
    unsigned threads = 0;  ///< worker threads used
    double seconds = 0;    ///< wall time of the sweep

    // Compiled once, as entry's.
    PTPU_COMPILED result();
    PTPU_COMPILED result(const result&);
    PTPU_COMPILED result(result&&) noexcept;
    PTPU_COMPILED result& operator=(const result&);
    PTPU_COMPILED result& operator=(result&&) noexcept;
    PTPU_COMPILED ~result();

    /// Points in the space (ranked + rejected).
    [[nodiscard]] std::size_t size() const { return ranked.size() + rejected.size(); }
    /// The best k (or all when fewer).
    [[nodiscard]] std::span<const entry> top(std::size_t k) const {
        return std::span<const entry>(ranked).first(std::min(k, ranked.size()));
    }
    [[nodiscard]] const entry& best() const {
        if (ranked.empty())
            throw error("SW1", "sweep::result::best", "no point of the sweep is feasible",
                        "see rejections() for the rules that reject them");
        return ranked.front();
    }
    /// The point with this label (ranked or rejected), or null.
    [[nodiscard]] const entry* find(std::string_view label) const {
        for (const auto* v : {&ranked, &rejected})
            for (const entry& e : *v)
                if (e.label == label) return &e;
        return nullptr;
    }
    /// The point at this position of the space, or null.
    [[nodiscard]] const entry* at_index(std::size_t index) const {
        for (const auto* v : {&ranked, &rejected})
            for (const entry& e : *v)
                if (e.index == index) return &e;
        return nullptr;
    }
    /// The baseline point, or null when none was designated.
    [[nodiscard]] const entry* baseline_entry() const { return baseline ? at_index(*baseline) : nullptr; }
    /// Designates the baseline by label; false when no point has it.
    bool set_baseline(std::string_view label) {
        const entry* e = find(label);
        if (e) baseline = e->index;
        return e != nullptr;
    }
    /// The baseline's time over e's (above 1: e is faster); none without a feasible baseline.
    [[nodiscard]] std::optional<double> speedup(const entry& e) const {
        const entry* b = baseline_entry();
        if (!b || !b->ok || !e.ok || e.time <= 0) return std::nullopt;
        return b->time / e.time;
    }
    /// The 1-based rank of a feasible point (0 when rejected).
    [[nodiscard]] std::size_t rank_of(const entry& e) const {
        if (!e.ok) return 0;
        for (std::size_t i = 0; i < ranked.size(); ++i)
            if (&ranked[i] == &e || ranked[i].index == e.index) return i + 1;
        return 0;
    }

    /// "12 points rejected: 9 by ptpu[24] VMEM limit, 3 by ptpu[15] tiling" (the rules by count,
    /// then first appearance), then per rule the first point it rejects with its message,
    /// "  e.g. <label>: ptpu[24] ..."; "" when none is rejected.
    [[nodiscard]] PTPU_COMPILED std::string rejections() const;

    /// The best k as a table (rank, configuration, time, bound, exposed-DMA share, VMEM, MXU
    /// utilization, speedup over the baseline when there is one), then the rejections.
    PTPU_COMPILED void print(std::ostream& os, std::size_t k = 10) const;

    /// One row per point, ranked ones first (best first), then the rejected ones. Columns: index,
    /// label, status (ok/rejected), rank, time_s, device_time_s, bound, bound_operand,
    /// exposed_dma_share, overhead_share, vmem_bytes, mxu_utilization, speedup, rule, message.
    PTPU_COMPILED void write_csv(std::ostream& os) const;
    PTPU_COMPILED void write_csv(const std::filesystem::path& p) const;

    /// {"points": n, "feasible": n, "rejected": n, "threads": n, "seconds": s, "baseline": index
    /// or null, "shapes": [...], "entries": [one object per point, ranked ones first]}.
    PTPU_COMPILED void write_json(std::ostream& os) const;
    PTPU_COMPILED void write_json(const std::filesystem::path& p) const;
};

/// The top 10 and the rejections (result::print).
PTPU_COMPILED std::ostream& operator<<(std::ostream& os, const result& r);

// ---- The HTML report ---------------------------------------------------------------------------

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
PTPU_COMPILED html_kernel html_section(const result& r, const html_section_options& options,
                                const timeline_fn& with_timeline);

namespace detail {

/// What one point gave: its report(s), or the ptpu::error that rejected it.
struct outcome {
    bool ok = false;
    std::vector<report> reps;
    std::string rule, message;
};

/// Runs job(i, reports) for i in [0, n) on a pool of threads taking indices from one atomic
/// counter; a ptpu::error rejects point i, any other exception stops the sweep and is rethrown.
/// Each job builds its own configuration, so workers share nothing but the body (called
/// concurrently: it must not write shared state) and the space (read only).
// Not a template: one pool however many sweeps a program runs. The job is passed by reference
// (job_ref: a function pointer and the callable's address), which costs a sweeping file one
// small function where a std::function costs its manager and its invoker.
class job_ref {
public:
    template <class F>
    job_ref(const F& f)  // NOLINT(google-explicit-constructor)
        : self_(&f), call_([](const void* self, std::size_t i, std::vector<report>& reps) {
              (*static_cast<const F*>(self))(i, reps);
          }) {}
    void operator()(std::size_t i, std::vector<report>& reps) const { call_(self_, i, reps); }

private:
    const void* self_;
    void (*call_)(const void*, std::size_t, std::vector<report>&);
};
PTPU_COMPILED std::vector<outcome> run_pool(std::size_t n, job_ref job, const options& opt, unsigned& used,
                                            double& seconds);

/// Ranks the outcomes into a result (labels in the space's order).
PTPU_COMPILED result make_result(std::vector<outcome>&& out, std::vector<std::string>&& labels, const options& opt,
                          unsigned threads, double seconds);

}  // namespace detail

}  // namespace ptpu::sweep

// The definitions, where this translation unit compiles them (core/linkage.hpp).
#if defined(PTPU_DEFINE_COMPILED)
#include "ptpu/sweep/result_impl.hpp"
#endif
