// Defines sweep::run: every point of a run-time space (sweep::space or any range of points) made
// into a configuration (a dynamic_call, or anything with predict(body)), predicted in timing-only
// mode on all host cores, and ranked by predicted device time; and sweep::result, what a sweep
// returns: the ranked points with their reports, the rejected ones with the rule that rejects
// each (ptpu::error's id: 24 VMEM, 15 tiling, 19 buffer count, ...), top(k), a table printer, a
// summary of the rejections by rule, and CSV and JSON writers (one row/object per point).
//
// A sweep over sizes as well (the mixture of problem shapes a user cares about) ranks by the
// total time over them: sweep::run_shapes. sweep/run_static.hpp evaluates compile-time spaces of
// configuration types into the same result.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <range/v3/range/concepts.hpp>
#include <range/v3/range/conversion.hpp>

#include "ptpu/call/options.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/sweep/space.hpp"

#if __has_include(<unistd.h>)
#include <unistd.h>
#define PTPU_SWEEP_HAS_ISATTY 1
#endif

namespace ptpu::sweep {

// ---- Labels -----------------------------------------------------------------------------------

/// A chip's name as users say it: the TPU generations are v4 … v6e, then 7x (its preset is v7x).
inline std::string chip_label(const chip& c) {
    const std::string_view n = c.name;
    return n == "v7x" ? std::string("7x") : std::string(n);
}

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
    std::string s;
    std::size_t i = 0;
    auto add = [&](const auto& v) {
        if (!s.empty()) s += ", ";
        if (i < names.size() && !names[i].empty()) s += names[i] + "=";
        s += label_of(v);
        ++i;
    };
    if constexpr (detail::tuple_like<P>)
        std::apply([&](const auto&... v) { (add(v), ...); }, p);
    else
        add(p);
    return s;
}

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

    /// The VMEM one core allocates (the largest over cores; check 24's sum).
    [[nodiscard]] index_t vmem_bytes() const {
        index_t v = 0;
        for (const report& r : shapes.empty() ? std::span<const report>(&rep, 1) : std::span<const report>(shapes))
            for (int c = 0; c < r.cores; ++c) v = std::max(v, r.core[static_cast<std::size_t>(c)].vmem_high_water);
        return v;
    }
    /// Time the cores sat waiting for DMAs, as a share of their time (Σ over cores and shapes).
    [[nodiscard]] double exposed_dma_share() const {
        double wait = 0, total = 0;
        for (const report& r : shapes.empty() ? std::span<const report>(&rep, 1) : std::span<const report>(shapes))
            for (int c = 0; c < r.cores; ++c) {
                wait += r.core[static_cast<std::size_t>(c)].exposed_dma;
                total += r.core[static_cast<std::size_t>(c)].time;
            }
        return total > 0 ? wait / total : 0;
    }
};

/// What a rule a sweep often meets is about, in a word or two ("VMEM limit" for 24), or "" for
/// the others (docs/rules.md has the whole text of every rule; the message too).
inline std::string_view rule_topic(std::string_view rule) {
    constexpr std::pair<std::string_view, std::string_view> topics[] = {
        {"13", "block rank"},        {"14", "ANY/HBM window"},      {"15", "tiling"},
        {"16", "rank-1 tiling"},     {"18", "block dim type"},      {"19", "pipeline mode/buffers"},
        {"20", "grid vs semantics"}, {"24", "VMEM limit"},          {"25", "grid"},
        {"27", "buffer count"},      {"S34", "index map bounds"},   {"SMEM1", "SMEM limit"},
        {"MC1", "megacore split"},   {"V1", "shape"},               {"PRED1", "SMEM window"},
    };
    for (const auto& [id, topic] : topics)
        if (id == rule) return topic;
    return {};
}

namespace detail {
inline void csv_field(std::ostream& os, std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
        os << s;
        return;
    }
    os << '"';
    for (char c : s) {
        if (c == '"') os << '"';
        os << c;
    }
    os << '"';
}
inline void json_string(std::ostream& os, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    os << '"';
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"': os << "\\\""; break;
            case '\\': os << "\\\\"; break;
            case '\n': os << "\\n"; break;
            case '\r': os << "\\r"; break;
            case '\t': os << "\\t"; break;
            default:
                if (u < 0x20)
                    os << "\\u00" << hex[u >> 4] << hex[u & 15];
                else
                    os << c;  // UTF-8 passes through
        }
    }
    os << '"';
}
// The shortest text that reads back as the same double (files are compared exactly).
inline std::string exact(double v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}
inline std::ofstream open_out(const std::filesystem::path& p) {
    std::ofstream f(p, std::ios::binary);
    if (!f) throw error("IO1", "sweep::result", "cannot write " + p.string(), "check that the folder exists");
    return f;
}
}  // namespace detail

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
    [[nodiscard]] std::string rejections() const {
        if (rejected.empty()) return {};
        struct group {
            std::string rule;
            std::size_t count;
            const entry* first;
        };
        std::vector<group> g;
        for (const entry& e : rejected) {
            auto it = std::find_if(g.begin(), g.end(), [&](const group& x) { return x.rule == e.rule; });
            if (it == g.end())
                g.push_back({e.rule, 1, &e});
            else
                ++it->count;
        }
        // Largest first, ties in order of appearance: an insertion sort (a few rules at most).
        for (std::size_t i = 1; i < g.size(); ++i)
            for (std::size_t j = i; j > 0 && g[j - 1].count < g[j].count; --j) std::swap(g[j - 1], g[j]);
        std::string s = std::to_string(rejected.size()) + (rejected.size() == 1 ? " point" : " points") +
                        " rejected:";
        for (std::size_t i = 0; i < g.size(); ++i) {
            s += (i == 0 ? " " : ", ") + std::to_string(g[i].count) + " by ptpu[" + g[i].rule + "]";
            if (const std::string_view t = rule_topic(g[i].rule); !t.empty()) s += " " + std::string(t);
        }
        for (const group& x : g) s += "\n  e.g. " + x.first->label + ": " + x.first->message;
        return s;
    }

    /// The best k as a table (rank, configuration, time, bound, exposed-DMA share, VMEM, MXU
    /// utilization, speedup over the baseline when there is one), then the rejections.
    void print(std::ostream& os, std::size_t k = 10) const {
        const auto rows = top(k);
        std::size_t w = 13;
        for (const entry& e : rows) w = std::max(w, e.label.size());
        const bool with_speedup = baseline_entry() && baseline_entry()->ok;
        const std::ios::fmtflags flags = os.flags();
        os << std::right << std::setw(4) << "rank" << "  " << std::left << std::setw(static_cast<int>(w))
           << "configuration" << std::right << std::setw(13) << (shape_labels.empty() ? "time" : "total time")
           << "  " << std::left << std::setw(13) << "bound" << std::right << std::setw(12) << "exposed DMA"
           << std::setw(12) << "VMEM MiB" << std::setw(7) << "MXU";
        if (with_speedup) os << std::setw(9) << "speedup";
        os << "\n";
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const entry& e = rows[i];
            os << std::right << std::setw(4) << i + 1 << "  " << std::left << std::setw(static_cast<int>(w)) << e.label
               << std::right << std::setw(13) << ptpu::detail::fmt_time(e.time) << "  " << std::left << std::setw(13)
               << e.rep.bound << std::right << std::setw(12) << ptpu::detail::fmt_pct(e.exposed_dma_share())
               << std::setw(12) << ptpu::detail::fmt_num(static_cast<double>(e.vmem_bytes()) / (1 << 20), 2)
               << std::setw(7) << ptpu::detail::fmt_pct(e.rep.mxu_utilization);
            if (with_speedup) {
                const auto s = speedup(e);
                os << std::setw(8) << (s ? ptpu::detail::fmt_num(*s, 2) : "-") << "x";
                if (baseline && e.index == *baseline) os << "  (baseline)";
            }
            os << "\n";
        }
        if (ranked.size() > rows.size()) os << "  … " << ranked.size() - rows.size() << " more feasible points\n";
        if (const entry* b = baseline_entry(); b && !b->ok) os << "baseline " << b->label << " is rejected\n";
        if (!rejected.empty()) os << rejections() << "\n";
        os.flags(flags);
    }

    /// One row per point, ranked ones first (best first), then the rejected ones. Columns: index,
    /// label, status (ok/rejected), rank, time_s, device_time_s, bound, bound_operand,
    /// exposed_dma_share, overhead_share, vmem_bytes, mxu_utilization, speedup, rule, message.
    void write_csv(std::ostream& os) const {
        os << "index,label,status,rank,time_s,device_time_s,bound,bound_operand,exposed_dma_share,overhead_share,"
              "vmem_bytes,mxu_utilization,speedup,rule,message\n";
        auto row = [&](const entry& e, std::size_t rank) {
            os << e.index << ',';
            detail::csv_field(os, e.label);
            os << ',' << (e.ok ? "ok" : "rejected") << ',';
            if (e.ok) {
                os << rank << ',' << detail::exact(e.time) << ',' << detail::exact(e.rep.device_time) << ',';
                detail::csv_field(os, e.rep.bound);
                os << ',';
                detail::csv_field(os, e.rep.bound_operand);
                os << ',' << detail::exact(e.exposed_dma_share()) << ',' << detail::exact(e.rep.overhead_share)
                   << ',' << e.vmem_bytes() << ',' << detail::exact(e.rep.mxu_utilization) << ',';
                if (const auto s = speedup(e)) os << detail::exact(*s);
                os << ",,\n";
            } else {
                os << ",,,,,,,,,,";
                detail::csv_field(os, e.rule);
                os << ',';
                detail::csv_field(os, e.message);
                os << '\n';
            }
        };
        for (std::size_t i = 0; i < ranked.size(); ++i) row(ranked[i], i + 1);
        for (const entry& e : rejected) row(e, 0);
    }
    void write_csv(const std::filesystem::path& p) const {
        std::ofstream f = detail::open_out(p);
        write_csv(f);
    }

    /// {"points": n, "feasible": n, "rejected": n, "threads": n, "seconds": s, "baseline": index
    /// or null, "shapes": [...], "entries": [one object per point, ranked ones first]}.
    void write_json(std::ostream& os) const {
        using detail::exact;
        using detail::json_string;
        os << "{\n  \"points\": " << size() << ",\n  \"feasible\": " << ranked.size() << ",\n  \"rejected\": "
           << rejected.size() << ",\n  \"threads\": " << threads << ",\n  \"seconds\": " << exact(seconds)
           << ",\n  \"baseline\": ";
        if (baseline)
            os << *baseline;
        else
            os << "null";
        os << ",\n  \"shapes\": [";
        for (std::size_t i = 0; i < shape_labels.size(); ++i) {
            if (i) os << ", ";
            json_string(os, shape_labels[i]);
        }
        os << "],\n  \"entries\": [";
        bool first = true;
        auto obj = [&](const entry& e, std::size_t rank) {
            os << (first ? "\n    {" : ",\n    {");
            first = false;
            os << "\"index\": " << e.index << ", \"label\": ";
            json_string(os, e.label);
            os << ", \"status\": " << (e.ok ? "\"ok\"" : "\"rejected\"");
            if (e.ok) {
                os << ", \"rank\": " << rank << ", \"time_s\": " << exact(e.time)
                   << ", \"device_time_s\": " << exact(e.rep.device_time) << ", \"bound\": ";
                json_string(os, e.rep.bound);
                os << ", \"bound_operand\": ";
                json_string(os, e.rep.bound_operand);
                os << ", \"exposed_dma_share\": " << exact(e.exposed_dma_share())
                   << ", \"overhead_share\": " << exact(e.rep.overhead_share) << ", \"vmem_bytes\": " << e.vmem_bytes()
                   << ", \"mxu_utilization\": " << exact(e.rep.mxu_utilization) << ", \"speedup\": ";
                if (const auto s = speedup(e))
                    os << exact(*s);
                else
                    os << "null";
                if (!e.shapes.empty()) {
                    os << ", \"shape_times_s\": [";
                    for (std::size_t i = 0; i < e.shapes.size(); ++i)
                        os << (i ? ", " : "") << exact(e.shapes[i].device_time);
                    os << "]";
                }
            } else {
                os << ", \"rule\": ";
                json_string(os, e.rule);
                os << ", \"message\": ";
                json_string(os, e.message);
            }
            os << "}";
        };
        for (std::size_t i = 0; i < ranked.size(); ++i) obj(ranked[i], i + 1);
        for (const entry& e : rejected) obj(e, 0);
        os << "\n  ]\n}\n";
    }
    void write_json(const std::filesystem::path& p) const {
        std::ofstream f = detail::open_out(p);
        write_json(f);
    }
};

/// The top 10 and the rejections (result::print).
inline std::ostream& operator<<(std::ostream& os, const result& r) {
    r.print(os);
    return os;
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
    point_result(result r, std::vector<P> pts, std::function<Config(const P&)> configure = {})
        : result(std::move(r)), points(std::move(pts)), configure_(std::move(configure)) {}

    /// The point of an entry of this result.
    [[nodiscard]] const P& point(const entry& e) const { return points.at(e.index); }
    /// The configuration of an entry made again, as the sweep made it before predicting it (but
    /// with the configuration's own run_options: the sweep's `lean` is not applied).
    [[nodiscard]] Config config(const entry& e) const
        requires(!std::is_void_v<Config>)
    {
        return configure_(point(e));
    }
    /// The best entry, its point and (for run) its configuration: SW1 when none is feasible.
    [[nodiscard]] chosen<P, Config> best() const {
        const entry& e = result::best();
        if constexpr (std::is_void_v<Config>)
            return {e, point(e)};
        else
            return {e, point(e), configure_(point(e))};
    }
    /// The best entry itself (result::best): no copy, no configuration made.
    [[nodiscard]] const entry& best_entry() const { return result::best(); }

private:
    std::function<Config(const P&)> configure_{};
};

// ---- The evaluation ---------------------------------------------------------------------------

namespace detail {

/// What one point gave: its report(s), or the ptpu::error that rejected it.
struct outcome {
    bool ok = false;
    std::vector<report> reps;
    std::string rule, message;
};

inline bool stderr_is_terminal() {
#ifdef PTPU_SWEEP_HAS_ISATTY
    return ::isatty(2) == 1;
#else
    return false;
#endif
}

/// Draws `[=====     ] done/n  elapsed, ~left` on stderr, over itself.
inline void draw_progress(std::size_t done, std::size_t n, double elapsed) {
    constexpr int width = 30;
    const double f = n ? static_cast<double>(done) / static_cast<double>(n) : 1.0;
    const int full = static_cast<int>(f * width);
    char bar[width + 1];
    for (int i = 0; i < width; ++i) bar[i] = i < full ? '=' : ' ';
    bar[width] = 0;
    const double left = done > 0 ? elapsed * (1.0 - f) / f : 0;
    std::fprintf(stderr, "\rsweep [%s] %zu/%zu points  %.1f s, ~%.1f s left ", bar, done, n, elapsed, left);
    std::fflush(stderr);
}

/// Runs job(i, reports) for i in [0, n) on a pool of threads taking indices from one atomic
/// counter; a ptpu::error rejects point i, any other exception stops the sweep and is rethrown.
/// Each job builds its own configuration, so workers share nothing but the body (called
/// concurrently: it must not write shared state) and the space (read only).
// Not a template: one pool per translation unit however many sweeps it runs (a std::function
// call per point costs nothing next to a prediction).
inline std::vector<outcome> run_pool(std::size_t n, const std::function<void(std::size_t, std::vector<report>&)>& job,
                                     const options& opt, unsigned& used, double& seconds) {
    std::vector<outcome> out(n);
    const auto t0 = std::chrono::steady_clock::now();
    unsigned threads = opt.threads ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(n, 1)));
    used = threads;
    std::atomic<std::size_t> next{0}, done{0};
    std::atomic<bool> stop{false};
    std::exception_ptr failure;
    std::size_t failure_at = n;
    std::mutex m;
    std::condition_variable cv;
    unsigned running = threads;
    auto work = [&] {
        for (;;) {
            const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= n || stop.load(std::memory_order_relaxed)) break;
            try {
                job(i, out[i].reps);
                out[i].ok = true;
            } catch (const ptpu::error& e) {
                out[i].reps.clear();
                out[i].rule = e.rule();
                out[i].message = e.what();
            } catch (...) {
                const std::lock_guard<std::mutex> lk(m);
                if (i < failure_at) failure = std::current_exception(), failure_at = i;
                stop = true;
            }
            done.fetch_add(1, std::memory_order_relaxed);
        }
        const std::lock_guard<std::mutex> lk(m);
        if (--running == 0) cv.notify_all();
    };
    std::vector<std::thread> pool;
    pool.reserve(threads);
    try {
        for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
    } catch (...) {  // no more threads: the ones started finish the points (or none ran: stop)
        const std::lock_guard<std::mutex> lk(m);
        running -= threads - static_cast<unsigned>(pool.size());
        if (pool.empty()) throw;
        used = static_cast<unsigned>(pool.size());
    }
    const bool may_draw =
        opt.bar == progress::on || (opt.bar == progress::automatic && stderr_is_terminal());
    bool drawn = false;
    {
        std::unique_lock<std::mutex> lk(m);
        while (running > 0) {
            cv.wait_for(lk, std::chrono::milliseconds(100));
            const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (may_draw && running > 0 && el >= opt.progress_after) {
                draw_progress(done.load(), n, el);
                drawn = true;
            }
        }
    }
    for (std::thread& t : pool) t.join();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (drawn || (may_draw && seconds >= opt.progress_after)) {  // the final state, once
        draw_progress(done.load(), n, seconds);
        std::fputc('\n', stderr);
    }
    if (failure) std::rethrow_exception(failure);
    return out;
}

// Sweeps read neither per-step rows nor timelines, which cost memory and time at every point.
template <class C>
void make_lean(C& c) {
    if constexpr (requires { requires std::same_as<std::remove_cvref_t<decltype(c.options)>, run_options>; }) {
        c.options.per_step = 0;
        c.options.timeline = false;
    }
}

/// Ranks the outcomes into a result (labels in the space's order).
inline result make_result(std::vector<outcome>&& out, std::vector<std::string>&& labels, const options& opt,
                          unsigned threads, double seconds) {
    result r;
    r.threads = threads;
    r.seconds = seconds;
    r.baseline = opt.baseline;
    for (std::size_t i = 0; i < out.size(); ++i) {
        entry e;
        e.index = i;
        e.label = std::move(labels[i]);
        e.ok = out[i].ok;
        if (e.ok) {
            for (const report& x : out[i].reps) e.time += x.device_time;
            if (out[i].reps.size() == 1) {
                e.rep = std::move(out[i].reps.front());
            } else {
                e.rep = out[i].reps.front();
                e.shapes = std::move(out[i].reps);
            }
            r.ranked.push_back(std::move(e));
        } else {
            e.rule = std::move(out[i].rule);
            e.message = std::move(out[i].message);
            r.rejected.push_back(std::move(e));
        }
    }
    // Best first; equal times keep the space's order (the entries are in it).
    // (Sorting positions and moving each entry once compiles to far less than sorting entries.)
    std::vector<std::size_t> order(r.ranked.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return r.ranked[a].time < r.ranked[b].time; });
    std::vector<entry> sorted;
    sorted.reserve(order.size());
    for (std::size_t i : order) sorted.push_back(std::move(r.ranked[i]));
    r.ranked = std::move(sorted);
    return r;
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
        using V = ranges::range_value_t<Points>;
        if constexpr (std::is_same_v<std::remove_cvref_t<Points>, std::vector<V>>)
            return std::vector<V>(points);  // a vector of points: a copy
        else
            return ranges::to<std::vector<V>>(std::forward<Points>(points));
    }
}

}  // namespace detail

/// The labels of the points: label(point) (or label(values...)), or the default labels.
template <class P, class Label>
std::vector<std::string> labels_of(const std::vector<P>& pts, Label& label, const options& opt) {
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
    // The result keeps the points and configure (shared: a copy of the result shares it).
    auto shared = std::make_shared<Configure>(std::move(configure));
    return point_result<P, Config>(detail::make_result(std::move(out), std::move(labels), opt, threads, seconds),
                                   std::move(pts),
                                   [shared](const P& p) -> Config { return detail::call_on_point(*shared, p); });
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
