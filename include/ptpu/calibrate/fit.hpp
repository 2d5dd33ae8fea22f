// Defines ptpu::calibration::calibrate: fits a chip preset's estimated fields (the [est] overheads
// of docs/model.md, section 9) to measured device times, and predict, the time the model gives one
// measurement. Rule CAL2 (a table or options the fit cannot use). docs/model.md, "Calibration".
//
// The fit is deterministic: a bounded Nelder-Mead search over the logarithms of the fields,
// minimising the mean soft-L1 loss of the log errors log(predicted / measured), so that a few
// outlying rows pull the fit less than under least squares.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ptpu/calibrate/table.hpp"
#include "ptpu/call/dynamic.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/ops/ops.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu::calibration {

/// The chip fields a calibration may fit: the overheads no public source gives, which the
/// presets estimate ([est] on some preset, docs/model.md section 9). Published figures (peaks,
/// bandwidths, capacities) are never fitted.
enum class field : std::uint8_t {
    step_overhead,   ///< chip::step_overhead_s, `o`
    dma_efficiency,  ///< chip::dma_efficiency, `η` (kept ≤ 1)
    dma_latency,     ///< chip::dma_latency_s, `L`
    dma_issue,       ///< chip::dma_issue_s, `i`
    dma_run_cost,    ///< chip::dma_run_cost_bytes, `r0`
    dma_descriptor,  ///< chip::dma_descriptor_s, `d`
};

inline constexpr field all_fields[] = {field::step_overhead, field::dma_efficiency, field::dma_latency,
                                       field::dma_issue,     field::dma_run_cost,   field::dma_descriptor};

/// The chip member a field stands for ("step_overhead_s", …).
constexpr std::string_view name(field f) {
    switch (f) {
        case field::step_overhead: return "step_overhead_s";
        case field::dma_efficiency: return "dma_efficiency";
        case field::dma_latency: return "dma_latency_s";
        case field::dma_issue: return "dma_issue_s";
        case field::dma_run_cost: return "dma_run_cost_bytes";
        case field::dma_descriptor: return "dma_descriptor_s";
    }
    return "?";
}

constexpr double get(const chip& c, field f) {
    switch (f) {
        case field::step_overhead: return c.step_overhead_s;
        case field::dma_efficiency: return c.dma_efficiency;
        case field::dma_latency: return c.dma_latency_s;
        case field::dma_issue: return c.dma_issue_s;
        case field::dma_run_cost: return c.dma_run_cost_bytes;
        case field::dma_descriptor: return c.dma_descriptor_s;
    }
    return 0;
}

constexpr void set(chip& c, field f, double v) {
    switch (f) {
        case field::step_overhead: c.step_overhead_s = v; break;
        case field::dma_efficiency: c.dma_efficiency = v; break;
        case field::dma_latency: c.dma_latency_s = v; break;
        case field::dma_issue: c.dma_issue_s = v; break;
        case field::dma_run_cost: c.dma_run_cost_bytes = v; break;
        case field::dma_descriptor: c.dma_descriptor_s = v; break;
    }
}

/// How calibrate fits.
struct options {
    /// The fields to fit, each at most once. The default three are those a table of copies and
    /// matmuls at a few block sizes and buffer counts pins down (docs/model.md, "Calibration").
    std::vector<field> fields{field::step_overhead, field::dma_efficiency, field::dma_latency};
    /// Each field stays within [start / bound_factor, start · bound_factor] (η also ≤ 1).
    double bound_factor = 8;
    /// Objective evaluations (each predicts every row) before the search stops.
    int max_evaluations = 1500;
    /// The soft-L1 loss's scale on log errors: below it a residual counts as in least squares,
    /// above it about linearly. 0.02 is a 2% error, the order of run-to-run profile noise [est].
    double loss_scale = 0.02;
};

/// A fitted field, before and after.
struct field_change {
    field which;
    double before = 0, after = 0;
};

/// One row of the table: its measured time and what the model predicted before and after.
struct row_fit {
    measurement row;
    double before = 0, after = 0;  ///< predicted seconds
    [[nodiscard]] double error_before() const { return before / row.seconds - 1; }
    [[nodiscard]] double error_after() const { return after / row.seconds - 1; }
};

/// What calibrate returns: the fitted chip (usable everywhere a preset is), each fitted field
/// before and after, and each row's residuals.
struct result {
    chip fitted{};
    std::vector<field_change> fields;
    std::vector<row_fit> rows;
    int evaluations = 0;

    /// Median and largest |predicted / measured − 1| over the rows, before or after the fit.
    [[nodiscard]] double median_error(bool after = true) const { return stat(after, true); }
    [[nodiscard]] double max_error(bool after = true) const { return stat(after, false); }

private:
    [[nodiscard]] double stat(bool after, bool median) const {
        std::vector<double> e;
        for (const row_fit& r : rows) e.push_back(std::abs(after ? r.error_after() : r.error_before()));
        if (e.empty()) return 0;
        std::sort(e.begin(), e.end());
        if (!median) return e.back();
        const std::size_t h = e.size() / 2;
        return e.size() % 2 ? e[h] : (e[h - 1] + e[h]) / 2;
    }
};

namespace detail {

template <class T>
report predict_copy(const chip& c, const measurement& r) {
    using O = Operand<T, 2>;
    dynamic_call<In<O>, Out<O>> k;
    k.grid = {(r.m + r.bm - 1) / r.bm, (r.n + r.bn - 1) / r.bn};
    k.semantics = {parallel, parallel};
    k.chip = c;
    k.vmem_limit = c.vmem_bytes;  // the measured kernel ran: check against the physical VMEM
    k.in[0] = k.out[0] = {.shape = {r.m, r.n},
                          .block = {r.bm, r.bn},
                          .index_map = [](index_t i, index_t j) { return idx(i, j); }};
    k.in[0].buffer_count = k.out[0].buffer_count = r.buffers;
    k.options.per_step = per_step_rows::never;
    return k.predict([](auto x, auto y) { store(y, load(x)); });
}

template <class T>
report predict_matmul(const chip& c, const measurement& r) {
    using O = Operand<T, 2>;
    dynamic_call<In<O, O>, Out<O>, ScratchShapes<Operand<float, 2>>> k;
    k.grid = {(r.m + r.bm - 1) / r.bm, (r.n + r.bn - 1) / r.bn, (r.k + r.bk - 1) / r.bk};
    k.semantics = {parallel, parallel, arbitrary};
    k.chip = c;
    k.vmem_limit = c.vmem_bytes;
    k.in[0] = {.shape = {r.m, r.k},
               .block = {r.bm, r.bk},
               .index_map = [](index_t i, index_t, index_t kk) { return idx(i, kk); }};
    k.in[1] = {.shape = {r.k, r.n},
               .block = {r.bk, r.bn},
               .index_map = [](index_t, index_t j, index_t kk) { return idx(kk, j); }};
    k.out[0] = {.shape = {r.m, r.n},
                .block = {r.bm, r.bn},
                .index_map = [](index_t i, index_t j, index_t) { return idx(i, j); }};
    k.in[0].buffer_count = k.in[1].buffer_count = k.out[0].buffer_count = r.buffers;
    k.scratch[0] = {r.bm, r.bn};
    k.options.per_step = per_step_rows::never;
    return k.predict([](auto x, auto y, auto o, auto acc) {
        if (program_id(2) == 0) store(acc, zeros_like(acc));
        store(acc, load(acc) + dot(load(x), load(y)));
        if (program_id(2) == num_programs(2) - 1) {
            if constexpr (std::is_same_v<T, float>)
                store(o, load(acc));
            else
                store(o, cast<T>(load(acc)));
        }
    });
}

[[noreturn]] inline void cal2(const std::string& what, std::string_view fix) {
    throw error("CAL2", "calibrate", what, fix);
}

}  // namespace detail

/// The model's report for one measurement's kernel on chip `c` (timing only, no data).
inline report predict_report(const chip& c, const measurement& r) {
    const bool bf = r.type == dtype::bf16;
    if (r.kind == family::copy) return bf ? detail::predict_copy<bf16>(c, r) : detail::predict_copy<float>(c, r);
    return bf ? detail::predict_matmul<bf16>(c, r) : detail::predict_matmul<float>(c, r);
}

/// The device time the model predicts for one measurement's kernel on chip `c`.
inline double predict(const chip& c, const measurement& r) { return predict_report(c, r).device_time; }

namespace detail {

// The search space: u_j = ln(x_j / x0_j), within [lo_j, hi_j].
struct search {
    const chip& base;
    std::span<const measurement> rows;
    const options& opt;
    std::vector<double> x0, lo, hi;
    int evaluations = 0;

    [[nodiscard]] chip at(const std::vector<double>& u) const {
        chip c = base;
        for (std::size_t j = 0; j < u.size(); ++j) set(c, opt.fields[j], x0[j] * std::exp(u[j]));
        return c;
    }
    void clamp(std::vector<double>& u) const {
        for (std::size_t j = 0; j < u.size(); ++j) u[j] = std::clamp(u[j], lo[j], hi[j]);
    }
    double loss(const std::vector<double>& u) {
        ++evaluations;
        const chip c = at(u);
        const double s = opt.loss_scale;
        double sum = 0;
        for (const measurement& r : rows) {
            const double e = std::log(predict(c, r) / r.seconds) / s;
            sum += 2 * s * s * (std::sqrt(1 + e * e) - 1);  // soft L1: e² near 0, 2|e| far out
        }
        return sum / static_cast<double>(rows.size());
    }
};

// Bounded Nelder-Mead (reflection 1, expansion 2, contraction 1/2, shrink 1/2; every point
// projected into the bounds), restarted from its best point until a restart no longer improves.
inline std::vector<double> nelder_mead(search& s, std::vector<double> best) {
    const std::size_t n = best.size();
    double f_best = s.loss(best);
    for (double step = 0.3; s.evaluations < s.opt.max_evaluations; step = std::max(step / 3, 0.01)) {
        std::vector<std::vector<double>> p(n + 1, best);
        std::vector<double> f(n + 1, f_best);
        for (std::size_t j = 0; j < n; ++j) {
            p[j + 1][j] += (best[j] + step <= s.hi[j]) ? step : -step;  // step inwards at a bound
            s.clamp(p[j + 1]);
            f[j + 1] = s.loss(p[j + 1]);
        }
        std::vector<std::size_t> order(n + 1);
        while (s.evaluations < s.opt.max_evaluations) {
            for (std::size_t i = 0; i <= n; ++i) order[i] = i;
            std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return f[a] < f[b]; });
            const std::size_t b = order[0], w = order[n], sw = order[n - 1];
            double diameter = 0;
            for (std::size_t i = 0; i <= n; ++i)
                for (std::size_t j = 0; j < n; ++j) diameter = std::max(diameter, std::abs(p[i][j] - p[b][j]));
            if (diameter < 1e-6 || f[w] - f[b] <= 1e-15 * (1 + f[b])) break;
            std::vector<double> c(n, 0.0);
            for (std::size_t i = 0; i <= n; ++i)
                if (i != w)
                    for (std::size_t j = 0; j < n; ++j) c[j] += p[i][j] / static_cast<double>(n);
            auto towards = [&](double t) {  // c + t·(c − worst), in the bounds
                std::vector<double> x(n);
                for (std::size_t j = 0; j < n; ++j) x[j] = c[j] + t * (c[j] - p[w][j]);
                s.clamp(x);
                return x;
            };
            std::vector<double> xr = towards(1);
            const double fr = s.loss(xr);
            if (fr < f[b]) {
                std::vector<double> xe = towards(2);
                const double fe = s.loss(xe);
                if (fe < fr) p[w] = xe, f[w] = fe;
                else p[w] = xr, f[w] = fr;
            } else if (fr < f[sw]) {
                p[w] = xr, f[w] = fr;
            } else {
                std::vector<double> xc = towards(fr < f[w] ? 0.5 : -0.5);
                const double fc = s.loss(xc);
                if (fc < std::min(fr, f[w])) {
                    p[w] = xc, f[w] = fc;
                } else {
                    for (std::size_t i = 0; i <= n; ++i) {
                        if (i == b) continue;
                        for (std::size_t j = 0; j < n; ++j) p[i][j] = p[b][j] + 0.5 * (p[i][j] - p[b][j]);
                        f[i] = s.loss(p[i]);
                    }
                }
            }
        }
        std::size_t b = 0;
        for (std::size_t i = 1; i <= n; ++i)
            if (f[i] < f[b]) b = i;
        const bool improved = f[b] < f_best * (1 - 1e-9) - 1e-18;
        if (f[b] < f_best) best = p[b], f_best = f[b];
        if (!improved && step <= 0.01) break;
    }
    return best;
}

}  // namespace detail

/// Fits `opt.fields` of `c` to the measured times of `rows` and returns the fitted chip, the
/// fields before and after, and every row's predicted time before and after. CAL2 when the rows
/// or options cannot be used (no rows, fewer rows than fields, a field listed twice or starting
/// at 0, a row the model rejects: that row's line and the model's rule are in the message);
/// H1 when `c` is not a valid chip.
inline result calibrate(const chip& c, std::span<const measurement> rows, const options& opt = {}) {
    validate(c);
    if (opt.fields.empty()) detail::cal2("no field to fit", "list at least one field in options::fields");
    if (rows.size() < opt.fields.size())
        detail::cal2(std::to_string(rows.size()) + " measurements for " + std::to_string(opt.fields.size()) +
                         " fields",
                     "give at least as many measurements as fields (several per field fit better)");
    if (!(opt.bound_factor > 1) || !(opt.loss_scale > 0) || opt.max_evaluations < 1)
        detail::cal2("bound_factor <= 1, loss_scale <= 0 or max_evaluations < 1",
                     "use bound_factor > 1, loss_scale > 0 and max_evaluations >= 1");
    detail::search s{c, rows, opt, {}, {}, {}};
    for (std::size_t j = 0; j < opt.fields.size(); ++j) {
        const field f = opt.fields[j];
        for (std::size_t i = 0; i < j; ++i)
            if (opt.fields[i] == f) detail::cal2(std::string(name(f)) + " listed twice", "list each field once");
        const double x = get(c, f);
        if (!(x > 0))
            detail::cal2(std::string(name(f)) + " starts at 0",
                         "the fit works on ratios: give the field a positive starting value");
        s.x0.push_back(x);
        s.lo.push_back(-std::log(opt.bound_factor));
        s.hi.push_back(f == field::dma_efficiency ? std::min(std::log(opt.bound_factor), std::log(1 / x))
                                                  : std::log(opt.bound_factor));
    }
    result res;
    for (const measurement& r : rows) {
        try {
            res.rows.push_back({r, predict(c, r), 0});
        } catch (const error& e) {
            detail::cal2("the measurement of line " + std::to_string(r.line) + " (row " +
                             std::to_string(res.rows.size()) + ") is not a valid kernel: " + e.what(),
                         "fix or drop that row");
        }
    }
    const std::vector<double> u = detail::nelder_mead(s, std::vector<double>(opt.fields.size(), 0.0));
    res.fitted = s.at(u);
    res.evaluations = s.evaluations;
    for (std::size_t j = 0; j < opt.fields.size(); ++j)
        res.fields.push_back({opt.fields[j], s.x0[j], get(res.fitted, opt.fields[j])});
    for (row_fit& r : res.rows) r.after = predict(res.fitted, r.row);
    return res;
}

inline result calibrate(const chip& c, const std::vector<measurement>& rows, const options& opt = {}) {
    return calibrate(c, std::span<const measurement>(rows), opt);
}

/// The fit as text: each field before → after, each row's measured and predicted times and
/// errors, and the median and largest error before and after.
inline std::ostream& operator<<(std::ostream& os, const result& r) {
    std::ostringstream o;
    o << std::setprecision(4);
    o << "calibration of " << ptpu::detail::name_of(r.fitted) << " on " << r.rows.size() << " measurements ("
      << r.evaluations << " model evaluations)\n";
    for (const field_change& f : r.fields) {
        // Times in µs, the others as they are.
        const bool time = f.which != field::dma_efficiency && f.which != field::dma_run_cost;
        const double k = time ? 1e6 : 1;
        o << "  " << std::left << std::setw(20) << name(f.which) << std::right << std::setw(10) << f.before * k
          << " -> " << std::setw(10) << f.after * k << (time ? " us" : "   ") << "  (x" << f.after / f.before
          << ")\n";
    }
    const auto pct = [](double e) {
        std::ostringstream p;
        p << std::fixed << std::setprecision(1) << std::showpos << 100 * e << '%';
        return p.str();
    };
    o << "  line  kind    measured us   before us    error   after us    error\n";
    for (const row_fit& x : r.rows)
        o << std::setw(6) << x.row.line << "  " << std::left << std::setw(6)
          << (x.row.kind == family::copy ? "copy" : "matmul") << std::right << std::setw(12) << x.row.seconds * 1e6
          << std::setw(12) << x.before * 1e6 << std::setw(9) << pct(x.error_before()) << std::setw(11)
          << x.after * 1e6 << std::setw(9) << pct(x.error_after()) << "\n";
    o << std::setprecision(3) << "  median |error| " << 100 * r.median_error(false) << "% -> "
      << 100 * r.median_error() << "%, max " << 100 * r.max_error(false) << "% -> " << 100 * r.max_error() << "%\n";
    return os << o.str();
}

}  // namespace ptpu::calibration
