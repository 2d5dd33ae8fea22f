// Defines what report/report.hpp declares: the report built from the model's result, and its
// text (operator<<, print_steps). Read where the compiled part is compiled (core/linkage.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ptpu/report/report.hpp"

namespace ptpu {

PTPU_COMPILED report::report() = default;
PTPU_COMPILED report::report(const report&) = default;
PTPU_COMPILED report::report(report&&) noexcept = default;
PTPU_COMPILED report& report::operator=(const report&) = default;
PTPU_COMPILED report& report::operator=(report&&) noexcept = default;
PTPU_COMPILED report::~report() = default;

PTPU_COMPILED report make_report(const chip& hw, const kernel_facts& info, const run_stats& stats, sim::result&& r,
                          std::vector<dma_note>&& notes, const sim::cost_model& costs) {
    report rep;
    rep.chip = hw.name;
    rep.cores = info.cores;
    rep.device_time = r.device_time;
    double sum_time = 0, sum_overhead = 0;
    for (int c = 0; c < info.cores; ++c) {
        const auto u = static_cast<std::size_t>(c);
        core_report& k = rep.core[u];
        k.time = r.core_time[u];
        k.overhead = r.busy_overhead[u];
        k.dma_issue = r.busy_issue[u];
        k.compute = r.busy_compute[u];
        k.exposed_dma = r.wait_dma[u];
        k.semaphore_stall = r.wait_sem[u];
        k.steps = stats.core_steps[u];
        // The call's windows and scratch, or more while an inner pipeline's windows were live.
        k.vmem_high_water = k.steps > 0 ? std::max(info.vmem_bytes, stats.vmem_peak[u]) : 0;
        k.smem_high_water = k.steps > 0 ? info.smem_bytes : 0;
        rep.exposed_dma += k.exposed_dma;
        rep.semaphore_stall += k.semaphore_stall;
        sum_time += k.time;
        sum_overhead += k.overhead;
    }
    const sim::work_time wt = sim::time_of(stats.total_work, hw, costs);
    rep.mxu_time = wt.mxu;
    rep.vpu_time = wt.vpu;
    rep.flops = stats.total_work.mxu_passes_flops + stats.total_work.mxu_int8_ops;
    const double span = rep.device_time * info.cores;
    rep.mxu_utilization = span > 0 ? rep.mxu_time / span : 0;
    rep.vpu_utilization = span > 0 ? rep.vpu_time / span : 0;
    rep.eup_time = wt.eup;
    rep.mxu_drain_time = wt.drain;
    rep.eup_utilization = span > 0 ? rep.eup_time / span : 0;
    {
        double issue = 0;
        for (int c = 0; c < info.cores; ++c) issue += rep.core[static_cast<std::size_t>(c)].dma_issue;
        const double n = info.cores;
        const std::pair<double, const char*> cand[] = {
            {static_cast<double>(r.hbm_bytes) / (hw.hbm_bytes_per_s * hw.dma_efficiency), "HBM"},
            {wt.mxu / n, "MXU"},
            {wt.vpu / n, "VPU"},
            {wt.eup / n, "EUP"},
            {wt.load / n, "vector loads"},
            {wt.store / n, "vector stores"},
            {wt.xlu / n, "XLU"},
            {wt.scalar / n, "scalar"},
            {wt.chain > wt.slots * (1 + 1e-12) ? wt.chain / n : 0.0, "dependence chain"},
            {wt.drain / n, "MXU drain"},
            {(sum_overhead + issue) / n, "step overhead"},
        };
        const auto* best = &cand[0];
        for (const auto& x : cand)
            if (x.first > best->first) best = &x;
        rep.bound = best->second;
        rep.compute_bound = sim::name(wt.bound);
    }
    rep.hbm_bytes = r.hbm_bytes;
    rep.achieved_bandwidth = rep.device_time > 0 ? static_cast<double>(rep.hbm_bytes) / rep.device_time : 0;
    rep.bandwidth_fraction = rep.achieved_bandwidth / hw.hbm_bytes_per_s;
    rep.overhead_share = sum_time > 0 ? sum_overhead / sum_time : 0;
    // Roofline: all the bodies' work (busiest unit plus MXU drains and explicit charges) spread
    // over the cores used, against HBM bytes at the spec bandwidth (not the DMA efficiency: that
    // is part of what the roofline does not see).
    const double compute_bound = wt.total / info.cores;
    const double memory_bound = static_cast<double>(rep.hbm_bytes) / hw.hbm_bytes_per_s;
    rep.roofline_time = std::max(compute_bound, memory_bound);
    rep.memory_bound = memory_bound >= compute_bound;
    rep.roofline_fraction = rep.device_time > 0 ? rep.roofline_time / rep.device_time : 0;
    rep.dangling_dmas = r.dangling_dmas;
    rep.ops = r.op_count;
    rep.steady_ops = r.steady_ops;
    rep.stats = stats;
    rep.steps = std::move(r.steps);
    rep.inner_steps = std::move(r.inner_steps);
    rep.timeline = std::move(r.timeline);
    rep.notes = std::move(notes);
    for (int i = 0; i < info.n_ops; ++i) {
        const std::string_view n = info.names[static_cast<std::size_t>(i)];
        rep.operand_names.push_back(!n.empty()      ? std::string(n)
                                    : i < info.n_in ? "in" + std::to_string(i)
                                                    : "out" + std::to_string(i - info.n_in));
        const auto u = static_cast<std::size_t>(i);
        rep.operands.push_back({rep.operand_names.back(), stats.op_dmas[u], stats.op_bytes[u],
                                r.wait_by_operand[u + 1]});
    }
    rep.body_exposed_dma = r.wait_by_operand[0];
    double worst = 0;
    for (const operand_report& o : rep.operands)
        if (o.exposed_dma > worst) worst = o.exposed_dma, rep.bound_operand = o.name;
    if (hw.pallas_cores() > 1 && info.cores == 1)
        rep.lints.push_back("uses 1 of " + std::to_string(hw.pallas_cores()) + " TensorCores of " + std::string(hw.name) +
                            ": mark a grid dim parallel (Semantics<parallel, ...>) so the grid splits over both, "
                            "or split an inner pipeline with core_axis");
    return rep;
}

namespace detail {
PTPU_COMPILED void nest_inner_rows(report& r) {
    bool nested = false;
    for (const auto& t : r.inner_rows)
        for (const stream::inner_row& w : t) nested = nested || w.parent != 0;
    if (!nested) return;
    const std::vector<sim::step_times> own = std::move(r.inner_steps);
    std::vector<sim::step_times>& out = r.inner_steps;
    out.clear();
    out.reserve(own.size());
    std::map<std::tuple<int, std::uint32_t, std::uint32_t>, std::size_t> at;  // (core, step, sub) -> row
    std::vector<std::uint32_t> chain;  // a row's sub, its parent's, ... to depth 1
    for (const sim::step_times& x : own) {
        const auto& t = r.inner_rows[static_cast<std::size_t>(x.core) % max_cores];
        chain.clear();
        // (Parents are numbered before their children: parent < k, so the walk ends.)
        for (std::uint32_t k = x.sub; k != 0 && k <= t.size(); k = t[k - 1].parent < k ? t[k - 1].parent : 0)
            chain.push_back(k);
        if (chain.empty()) {  // not a row the runner numbered: left as it is
            out.push_back(x);
            continue;
        }
        for (auto k = chain.rbegin(); k != chain.rend(); ++k) {
            const auto [it, added] = at.try_emplace({x.core, x.step, *k}, out.size());
            if (added) {
                sim::step_times z{};
                z.core = x.core;
                z.step = x.step;
                z.begin = x.begin;
                z.end = x.end;
                z.sub = *k;
                out.push_back(z);
            }
            sim::step_times& a = out[it->second];
            a.begin = std::min(a.begin, x.begin);
            a.end = std::max(a.end, x.end);
            a.overhead += x.overhead;
            a.issue += x.issue;
            a.compute += x.compute;
            a.wait += x.wait;
            a.sem_wait += x.sem_wait;
            a.waited_on |= *k == x.sub ? x.waited_on : (x.waited_on != 0 ? 1u : 0u);
        }
    }
}

PTPU_COMPILED std::string fmt_time(double s) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(3);
    if (s < 1e-3)
        o << s * 1e6 << " us";
    else
        o << s * 1e3 << " ms";
    return o.str();
}

PTPU_COMPILED std::string fmt_num(double v, int digits) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
}

PTPU_COMPILED std::string fmt_pct(double f) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << f * 100 << "%";
    return o.str();
}

}  // namespace detail
PTPU_COMPILED std::ostream& operator<<(std::ostream& os, const report& r) {
    using detail::fmt_pct;
    using detail::fmt_time;
    os << "ptpu report (" << r.chip << ", " << r.cores << (r.cores == 1 ? " core" : " cores") << ")\n";
    os << "  device time        " << fmt_time(r.device_time) << "\n";
    for (int c = 0; c < r.cores; ++c) {
        const core_report& k = r.core[static_cast<std::size_t>(c)];
        os << "  core " << c << "             " << fmt_time(k.time) << " over " << k.steps
           << " steps: overhead " << fmt_time(k.overhead) << ", DMA issue " << fmt_time(k.dma_issue)
           << ", compute " << fmt_time(k.compute) << ", exposed DMA " << fmt_time(k.exposed_dma);
        if (k.semaphore_stall > 0) os << ", semaphore stall " << fmt_time(k.semaphore_stall);
        os << "\n";
        os << "                     VMEM high-water " << k.vmem_high_water << " B, SMEM " << k.smem_high_water
           << " B\n";
    }
    os << "  HBM                " << r.hbm_bytes << " B at " << detail::fmt_num(r.achieved_bandwidth / 1e9, 1)
       << " GB/s (" << fmt_pct(r.bandwidth_fraction) << " of spec)\n";
    os << "  MXU utilization    " << fmt_pct(r.mxu_utilization) << ", VPU " << fmt_pct(r.vpu_utilization)
       << ", EUP " << fmt_pct(r.eup_utilization) << "\n";
    if (r.mxu_drain_time > 0)
        os << "  MXU drains         " << r.stats.total_work.mxu_drains << " waited for, "
           << fmt_time(r.mxu_drain_time) << " of core time (docs/model.md §5)\n";
    os << "  bound by           " << r.bound;
    if (!r.bound_operand.empty()) os << "; longest DMA waits on " << r.bound_operand;
    os << "\n";
    if (!r.compute_bound.empty()) os << "  bodies bound by    " << r.compute_bound << " (docs/model.md §5)\n";
    if (!r.operands.empty()) {
        os << "  operands           " << std::left << std::setw(16) << "name" << std::right << std::setw(8) << "DMAs"
           << std::setw(14) << "bytes" << std::setw(14) << "exposed DMA" << "\n";
        for (const operand_report& o : r.operands)
            os << "                     " << std::left << std::setw(16) << o.name << std::right << std::setw(8)
               << o.dmas << std::setw(14) << o.bytes << std::setw(14) << fmt_time(o.exposed_dma) << "\n";
        if (r.body_exposed_dma > 0)
            os << "                     " << std::left << std::setw(16) << "(body copies)" << std::right
               << std::setw(8) << r.stats.body_dmas << std::setw(14) << r.stats.body_dma_bytes << std::setw(14)
               << fmt_time(r.body_exposed_dma) << "\n";
    }
    os << "  control overhead   " << fmt_pct(r.overhead_share) << " of core time, exposed DMA "
       << fmt_time(r.exposed_dma) << "\n";
    os << "  roofline           " << (r.memory_bound ? "memory" : "compute") << "-bound at "
       << fmt_time(r.roofline_time) << "; reached " << fmt_pct(r.roofline_fraction) << "\n";
    if (r.steady_ops > 0)
        os << "  model              " << r.ops << " ops, "
           << fmt_pct(static_cast<double>(r.steady_ops) / static_cast<double>(r.ops))
           << " fast-forwarded in steady periods\n";
    for (const std::string& l : r.lints) os << "  note               " << l << "\n";
    if (r.stats.inner_steps > 0)
        os << "  inner pipelines    " << r.stats.inner_steps << " steps, " << r.stats.inner_dmas << " DMAs, "
           << r.stats.inner_bytes << " B (emit_pipeline)\n";
    if (r.stats.sem_signals + r.stats.sem_waits > 0)
        os << "  semaphores         " << r.stats.sem_signals << " signals, " << r.stats.sem_waits << " waits, stalled "
           << fmt_time(r.semaphore_stall) << "\n";
    return os;
}

namespace detail {
PTPU_COMPILED std::string inner_label(const report& r, const sim::step_times& s) {
    const auto& t = r.inner_rows[static_cast<std::size_t>(s.core) % max_cores];
    if (s.sub == 0 || s.sub > t.size()) return "p?";
    const stream::inner_row& w = t[s.sub - 1];
    std::string l = "p";  // (appends: g++ 12 -O3 warns falsely on "p" + std::string&&, -Wrestrict)
    l += std::to_string(w.call);
    l += '.';
    l += std::to_string(w.step);
    return l;
}

PTPU_COMPILED std::string inner_pipeline_name(const report& r, const sim::step_times& s) {
    const auto& t = r.inner_rows[static_cast<std::size_t>(s.core) % max_cores];
    std::string n;
    for (std::uint32_t k = s.sub; k != 0 && k <= t.size(); k = t[k - 1].parent < k ? t[k - 1].parent : 0) {
        std::string p = "p";
        p += std::to_string(t[k - 1].call);
        n = n.empty() ? p : p + "/" + n;
    }
    return n.empty() ? "p?" : n;
}

PTPU_COMPILED std::string inner_operand_name(const report& r, const sim::step_times& s, std::size_t k) {
    const auto& t = r.inner_rows[static_cast<std::size_t>(s.core) % max_cores];
    const std::size_t inputs = s.sub >= 1 && s.sub <= t.size() ? t[s.sub - 1].inputs : 0;
    std::string n = inner_pipeline_name(r, s);
    n += k < inputs ? ":in" : ":out";
    n += std::to_string(k < inputs ? k : k - inputs);
    return n;
}

}  // namespace detail
PTPU_COMPILED void print_steps(std::ostream& os, const report& r, std::size_t max_rows) {
    using detail::fmt_time;
    os << std::right << std::setw(8) << "step" << std::setw(6) << "core" << std::setw(14) << "begin" << std::setw(14)
       << "overhead" << std::setw(14) << "DMA issue" << std::setw(14) << "compute" << std::setw(18) << "bound by"
       << std::setw(14) << "exposed DMA" << "  waited on\n";
    // Each core's inner rows come in stream order, as its step rows do: a cursor per core.
    per_core<std::size_t> next{};
    const auto next_inner = [&](int core, std::size_t from) {
        while (from < r.inner_steps.size() && r.inner_steps[from].core != core) ++from;
        return from;
    };
    for (int c = 0; c < static_cast<int>(max_cores); ++c)
        next[static_cast<std::size_t>(c)] = next_inner(c, 0);
    const auto line = [&](const sim::step_times& s, const std::string& step) {
        os << step << std::setw(6) << s.core << std::setw(14) << fmt_time(s.begin) << std::setw(14)
           << fmt_time(s.overhead) << std::setw(14) << fmt_time(s.issue) << std::setw(14) << fmt_time(s.compute)
           << std::setw(18) << (s.bound == sim::slot::none ? "-" : sim::name(s.bound)) << std::setw(14)
           << fmt_time(s.wait) << " ";
        for (std::size_t b = 0; b < 32; ++b) {
            if ((s.waited_on >> b & 1u) == 0) continue;
            os << " "
               << (b == 0                             ? std::string("(body)")
                   : s.sub != 0                       ? detail::inner_operand_name(r, s, b - 1)
                   : b - 1 < r.operand_names.size() ? r.operand_names[b - 1]
                                                    : "op" + std::to_string(b - 1));
        }
        os << "\n";
    };
    const std::size_t total = r.steps.size() + r.inner_steps.size();
    std::size_t n = 0;
    for (const sim::step_times& s : r.steps) {
        if (n == max_rows) break;
        std::ostringstream step;
        step << std::setw(8) << s.step;
        line(s, step.str());
        ++n;
        std::size_t& k = next[static_cast<std::size_t>(s.core) % max_cores];
        while (k < r.inner_steps.size() && r.inner_steps[k].step == s.step) {
            if (n == max_rows) break;
            // Indented two columns per level of nesting: a deeper pipeline's rows under the inner
            // step whose body ran them.
            const sim::step_times& x = r.inner_steps[k];
            const auto& t = r.inner_rows[static_cast<std::size_t>(x.core) % max_cores];
            const int depth = x.sub >= 1 && x.sub <= t.size() ? std::max(1, int{t[x.sub - 1].depth}) : 1;
            std::ostringstream in;
            in << std::string(static_cast<std::size_t>(2 * depth), ' ') << std::left
               << std::setw(std::max(0, 8 - 2 * depth)) << detail::inner_label(r, x) << std::right;
            line(r.inner_steps[k], in.str());
            ++n;
            k = next_inner(s.core, k + 1);
        }
    }
    if (total > max_rows) os << "  … " << total - max_rows << " more rows\n";
    if (!r.inner_steps.empty()) {
        os << "  (pK.S: step S of the K-th pipeline its step's body ran, emit_pipeline; part of that step's row";
        bool deeper = false;
        for (const auto& t : r.inner_rows)
            for (const stream::inner_row& w : t) deeper = deeper || w.depth > 1;
        if (deeper) os << "; indented further: run by the body of the inner step above, part of its row";
        os << ")\n";
    }
    if (r.steps.empty()) os << "  (no per-step rows: run with run_options::per_step)\n";
}

}  // namespace ptpu
