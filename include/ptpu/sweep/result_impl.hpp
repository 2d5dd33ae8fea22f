// Defines what sweep/result.hpp declares: the result's text, tables and files, the thread pool
// and the ranking. Read where the compiled part is compiled (core/linkage.hpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <ostream>
#include <thread>
#include <utility>

#include "ptpu/sweep/result.hpp"

#if __has_include(<unistd.h>)
#include <unistd.h>
#define PTPU_SWEEP_HAS_ISATTY 1
#endif

namespace ptpu::sweep {

PTPU_COMPILED std::string chip_label(const chip& c) {
    const std::string_view n = c.name;
    return n == "v7x" ? std::string("7x") : std::string(n);
}

PTPU_COMPILED std::string detail::join_label(std::span<const std::string> values,
                                             std::span<const std::string> names) {
    std::string s;
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (!s.empty()) s += ", ";
        if (i < names.size() && !names[i].empty()) s += names[i] + "=";
        s += values[i];
    }
    return s;
}

PTPU_COMPILED std::vector<std::string> detail::default_labels(const label_value* values, std::size_t n,
                                                              std::size_t width, const std::string* names,
                                                              std::size_t n_names) {
    std::vector<std::string> labels;
    labels.reserve(n);
    std::vector<std::string> text(width);
    for (std::size_t p = 0; p < n; ++p) {
        for (std::size_t k = 0; k < width; ++k) {
            const label_value& v = values[p * width + k];
            switch (v.k) {
                case label_value::kind::signed_integer:
                    text[k] = std::to_string(v.i);
                    break;
                case label_value::kind::unsigned_integer:
                    text[k] = std::to_string(v.u);
                    break;
                case label_value::kind::boolean:
                    text[k] = v.i != 0 ? "true" : "false";
                    break;
                case label_value::kind::chip:
                    text[k] = v.c != nullptr ? chip_label(*v.c) : std::string("null");
                    break;
            }
        }
        labels.push_back(join_label(text, {names, n_names}));
    }
    return labels;
}

PTPU_COMPILED entry::entry() = default;
PTPU_COMPILED entry::entry(const entry&) = default;
PTPU_COMPILED entry::entry(entry&&) noexcept = default;
PTPU_COMPILED entry& entry::operator=(const entry&) = default;
PTPU_COMPILED entry& entry::operator=(entry&&) noexcept = default;
PTPU_COMPILED entry::~entry() = default;

PTPU_COMPILED result::result() = default;
PTPU_COMPILED result::result(const result&) = default;
PTPU_COMPILED result::result(result&&) noexcept = default;
PTPU_COMPILED result& result::operator=(const result&) = default;
PTPU_COMPILED result& result::operator=(result&&) noexcept = default;
PTPU_COMPILED result::~result() = default;

PTPU_COMPILED index_t entry::vmem_bytes() const {
    index_t v = 0;
    for (const report& r : shapes.empty() ? std::span<const report>(&rep, 1) : std::span<const report>(shapes))
        for (int c = 0; c < r.cores; ++c) v = std::max(v, r.core[static_cast<std::size_t>(c)].vmem_high_water);
    return v;
}

PTPU_COMPILED double entry::exposed_dma_share() const {
    double wait = 0, total = 0;
    for (const report& r : shapes.empty() ? std::span<const report>(&rep, 1) : std::span<const report>(shapes))
        for (int c = 0; c < r.cores; ++c) {
            wait += r.core[static_cast<std::size_t>(c)].exposed_dma;
            total += r.core[static_cast<std::size_t>(c)].time;
        }
    return total > 0 ? wait / total : 0;
}

PTPU_COMPILED std::string_view rule_topic(std::string_view rule) {
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
PTPU_COMPILED void csv_field(std::ostream& os, std::string_view s) {
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
PTPU_COMPILED void json_string(std::ostream& os, std::string_view s) {
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
PTPU_COMPILED std::string exact(double v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}
PTPU_COMPILED std::ofstream open_out(const std::filesystem::path& p) {
    std::ofstream f(p, std::ios::binary);
    if (!f) throw error("IO1", "sweep::result", "cannot write " + p.string(), "check that the folder exists");
    return f;
}
}  // namespace detail

PTPU_COMPILED std::string result::rejections() const {
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

PTPU_COMPILED void result::print(std::ostream& os, std::size_t k) const {
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

PTPU_COMPILED void result::write_csv(std::ostream& os) const {
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

PTPU_COMPILED void result::write_csv(const std::filesystem::path& p) const {
    std::ofstream f = detail::open_out(p);
    write_csv(f);
}

PTPU_COMPILED void result::write_json(std::ostream& os) const {
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

PTPU_COMPILED void result::write_json(const std::filesystem::path& p) const {
    std::ofstream f = detail::open_out(p);
    write_json(f);
}

PTPU_COMPILED std::ostream& operator<<(std::ostream& os, const result& r) {
    r.print(os);
    return os;
}

PTPU_COMPILED html_kernel html_section(const result& r, const html_section_options& options,
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

namespace detail {

PTPU_COMPILED bool stderr_is_terminal() {
#ifdef PTPU_SWEEP_HAS_ISATTY
    return ::isatty(2) == 1;
#else
    return false;
#endif
}

/// Draws `[=====     ] done/n  elapsed, ~left` on stderr, over itself.
PTPU_COMPILED void draw_progress(std::size_t done, std::size_t n, double elapsed) {
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

PTPU_COMPILED std::vector<outcome> run_pool(std::size_t n, job_ref job, const options& opt, unsigned& used,
                                            double& seconds) {
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

PTPU_COMPILED result make_result(std::vector<outcome>&& out, std::vector<std::string>&& labels, const options& opt,
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

}  // namespace detail

}  // namespace ptpu::sweep
