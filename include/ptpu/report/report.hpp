// Defines ptpu::report, what a call predicts and why: device time, per-core time split into
// control overhead, DMA issue, compute and exposed DMA waits; MXU/VPU utilization; HBM traffic
// and achieved bandwidth; VMEM high-water; the roofline bound and the fraction of it reached;
// a per-step breakdown; and, when asked for, the timeline the exporters draw.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "ptpu/core/integers.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu {

/// Where the time went, per operand (inputs then outputs): its pipeline DMAs and the time the
/// cores were blocked waiting for them.
struct operand_report {
    std::string name;         ///< Arg's name, or in0 … out0 …
    index_t dmas = 0;         ///< pipeline DMAs (fetches, write-backs, blocking copies)
    index_t bytes = 0;        ///< bytes they moved
    double exposed_dma = 0;   ///< Σ over cores of the time blocked waiting for them
};

struct core_report {
    double time = 0;         ///< end of the core's stream
    double overhead = 0;     ///< per-step control overhead (docs/model.md §2)
    double dma_issue = 0;    ///< scalar-core time issuing DMAs
    double compute = 0;      ///< kernel bodies, as their charged work says
    double exposed_dma = 0;  ///< blocked in DMA waits (DMA semaphores included)
    double semaphore_stall = 0;  ///< blocked on regular semaphores: waiting for the other core's signals
    index_t steps = 0;
    index_t vmem_high_water = 0;  ///< bytes of VMEM the call allocates on this core (check 24)
    index_t smem_high_water = 0;
};

struct report {
    std::string chip;
    int cores = 1;
    double device_time = 0;  ///< predicted kernel time on the device (no host dispatch)
    std::array<core_report, 2> core{};
    double mxu_time = 0;         ///< Σ over bodies of MXU busy time at peak
    double vpu_time = 0;         ///< Σ over bodies of VPU busy time
    double mxu_utilization = 0;  ///< mxu_time / (device_time × cores)
    double vpu_utilization = 0;
    double eup_time = 0;  ///< Σ over bodies of transcendental-unit (EUP) busy time
    double eup_utilization = 0;
    /// Σ over bodies of the MXU result latency vector ops waited for (work.mxu_drains, serial)
    double mxu_drain_time = 0;
    /// What bounds the kernel: the largest of HBM (bytes at B·η), each unit's busy time (MXU,
    /// VPU, EUP, vector loads, vector stores, scalar unit), the MXU result latency waited for
    /// and the step overhead (overhead and DMA issue), per core: "HBM", "MXU", "VPU", "EUP",
    /// "vector loads", "vector stores", "scalar", "MXU drain", "step overhead".
    std::string bound;
    double flops = 0;               ///< MXU FLOPs charged (padded, × passes)
    std::int64_t hbm_bytes = 0;     ///< bytes moved over HBM by all DMAs
    double achieved_bandwidth = 0;  ///< hbm_bytes / device_time
    double bandwidth_fraction = 0;  ///< of the chip's spec HBM bandwidth
    double exposed_dma = 0;         ///< Σ over cores
    double semaphore_stall = 0;     ///< Σ over cores (regular semaphore waits)
    double overhead_share = 0;      ///< Σ overhead / Σ core time
    double roofline_time = 0;       ///< max(compute at peak, HBM bytes at spec bandwidth)
    bool memory_bound = false;      ///< which side of the roofline bounds it
    double roofline_fraction = 0;   ///< roofline_time / device_time
    std::int64_t dangling_dmas = 0;
    std::int64_t ops = 0;         ///< ops the timing model ran (docs/model.md)
    std::int64_t steady_ops = 0;  ///< of which fast-forwarded in steady periods
    run_stats stats{};
    std::vector<sim::step_times> steps;      ///< per core and step (when recorded)
    /// The steps of pipelines the bodies ran (emit_pipeline), a row per core, outer step and
    /// inner row (step_times::sub = k: inner_rows[core][k - 1] says which pipeline and step).
    /// Each is part of its (core, step) row of `steps`: that row's overhead, DMA issue, compute
    /// and waits are its own ops' plus its inner rows'. A pipeline nested deeper (run by an inner
    /// step's body) has rows of its own too (inner_row::parent, depth), each part of its parent
    /// row likewise: a row is its own ops plus its children, and every row comes after its parent.
    /// An inner row's waited_on: bit 1 + k operand k of its own pipeline (inputs then outputs,
    /// inner_row::inputs), bit 0 its body's copies and the DMAs of pipelines nested deeper.
    /// (A row of `steps` counts all inner pipelines' waits as body copies, bit 0.)
    std::vector<sim::step_times> inner_steps;
    std::array<std::vector<stream::inner_row>, 2> inner_rows;  ///< per core: what inner row k is
    std::vector<sim::span> timeline;         ///< when recorded
    std::vector<dma_note> notes;             ///< what each DMA span's label refers to
    std::vector<std::string> operand_names;  ///< "in0", "out0", … (exporters name DMAs with them)
    std::vector<operand_report> operands;    ///< per operand, in operand order
    double body_exposed_dma = 0;             ///< exposed DMA of body copies (sync/async_copy, inner pipelines)
    /// The operand whose DMAs the cores waited for longest ("" when no wait was exposed).
    std::string bound_operand;
    /// Advice on how the kernel uses the chip (e.g. one TensorCore of two), one line each.
    std::vector<std::string> lints;
};

/// What a front end tells the report about the kernel, besides the model's result and the
/// runners' account (run_stats): the report needs nothing of the front end's own types.
struct kernel_facts {
    int cores = 1;             ///< TensorCores the kernel ran on
    index_t vmem_bytes = 0;    ///< VMEM one core allocates (check 24's sum)
    index_t smem_bytes = 0;    ///< SMEM one core allocates
    int n_in = 0;              ///< operands: inputs first,
    int n_ops = 0;             ///< then outputs
    std::array<std::string_view, max_operands> names{};  ///< operand names ("": by position)
};

/// Builds a report from the model's result on chip `hw`, the runners' account and the facts.
inline report make_report(const chip& hw, const kernel_facts& info, const run_stats& stats, sim::result&& r,
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
            {wt.scalar / n, "scalar"},
            {wt.drain / n, "MXU drain"},
            {(sum_overhead + issue) / n, "step overhead"},
        };
        const auto* best = &cand[0];
        for (const auto& x : cand)
            if (x.first > best->first) best = &x;
        rep.bound = best->second;
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
// The model counts an op in its step's row and in its deepest inner row (op::sub) only; a row of
// a pipeline nested in an inner step's body is part of that step's row as well: each row's time
// is added to its ancestors' (their begin the earliest, their end the latest, and a wait counts
// as a body copy's of the parent, bit 0), an ancestor none of whose own ops ran gets a row, and
// ancestors come before their first descendant. (Not in the model's hot path: once, here.)
inline void nest_inner_rows(report& r) {
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
        const auto& t = r.inner_rows[static_cast<std::size_t>(x.core) & 1u];
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

inline std::string fmt_time(double s) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(3);
    if (s < 1e-3)
        o << s * 1e6 << " us";
    else
        o << s * 1e3 << " ms";
    return o.str();
}
inline std::string fmt_num(double v, int digits) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
}
inline std::string fmt_pct(double f) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << f * 100 << "%";
    return o.str();
}
}  // namespace detail

/// A readable summary: time, where it went, how close to the roofline.
inline std::ostream& operator<<(std::ostream& os, const report& r) {
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
// The label of an inner row in print_steps: "pK.S", step S of the K-th pipeline its step's body
// ran (for a deeper row: the body of its parent inner step; print_steps indents it by depth).
inline std::string inner_label(const report& r, const sim::step_times& s) {
    const auto& t = r.inner_rows[static_cast<std::size_t>(s.core) & 1u];
    if (s.sub == 0 || s.sub > t.size()) return "p?";
    const stream::inner_row& w = t[s.sub - 1];
    std::string l = "p";  // (appends: g++ 12 -O3 warns falsely on "p" + std::string&&, -Wrestrict)
    l += std::to_string(w.call);
    l += '.';
    l += std::to_string(w.step);
    return l;
}
// The name of an inner row's pipeline: "pK" (the K-th its step's body ran), under its parent's
// name for a deeper one ("p0/p1": the second pipeline run by the body of a step of p0).
inline std::string inner_pipeline_name(const report& r, const sim::step_times& s) {
    const auto& t = r.inner_rows[static_cast<std::size_t>(s.core) & 1u];
    std::string n;
    for (std::uint32_t k = s.sub; k != 0 && k <= t.size(); k = t[k - 1].parent < k ? t[k - 1].parent : 0) {
        std::string p = "p";
        p += std::to_string(t[k - 1].call);
        n = n.empty() ? p : p + "/" + n;
    }
    return n.empty() ? "p?" : n;
}
// Operand k (inputs then outputs) of an inner row's pipeline: "p0:in1", "p0/p1:out0".
inline std::string inner_operand_name(const report& r, const sim::step_times& s, std::size_t k) {
    const auto& t = r.inner_rows[static_cast<std::size_t>(s.core) & 1u];
    const std::size_t inputs = s.sub >= 1 && s.sub <= t.size() ? t[s.sub - 1].inputs : 0;
    std::string n = inner_pipeline_name(r, s);
    n += k < inputs ? ":in" : ":out";
    n += std::to_string(k < inputs ? k : k - inputs);
    return n;
}
}  // namespace detail

/// The per-step breakdown (report::steps, recorded with run_options::per_step) as a table: step,
/// core, begin, overhead, DMA issue, compute, exposed DMA and the operands waited on, each
/// step's inner rows (report::inner_steps, labelled pK.S) indented under it, two columns more per
/// level of nesting (a depth-2 row under the depth-1 row whose body ran it; its waits name its
/// pipeline's operands, "p0:in0", "p0/p1:out0", and "(body)" body copies and deeper pipelines'
/// DMAs); at most `max_rows`
/// rows, then a count of the rows left out.
inline void print_steps(std::ostream& os, const report& r, std::size_t max_rows = 32) {
    using detail::fmt_time;
    os << std::right << std::setw(8) << "step" << std::setw(6) << "core" << std::setw(14) << "begin" << std::setw(14)
       << "overhead" << std::setw(14) << "DMA issue" << std::setw(14) << "compute" << std::setw(14) << "exposed DMA"
       << "  waited on\n";
    // Each core's inner rows come in stream order, as its step rows do: a cursor per core.
    std::array<std::size_t, 2> next{};
    const auto next_inner = [&](int core, std::size_t from) {
        while (from < r.inner_steps.size() && r.inner_steps[from].core != core) ++from;
        return from;
    };
    for (int c = 0; c < 2; ++c) next[static_cast<std::size_t>(c)] = next_inner(c, 0);
    const auto line = [&](const sim::step_times& s, const std::string& step) {
        os << step << std::setw(6) << s.core << std::setw(14) << fmt_time(s.begin) << std::setw(14)
           << fmt_time(s.overhead) << std::setw(14) << fmt_time(s.issue) << std::setw(14) << fmt_time(s.compute)
           << std::setw(14) << fmt_time(s.wait) << " ";
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
        std::size_t& k = next[static_cast<std::size_t>(s.core) & 1u];
        while (k < r.inner_steps.size() && r.inner_steps[k].step == s.step) {
            if (n == max_rows) break;
            // Indented two columns per level of nesting: a deeper pipeline's rows under the inner
            // step whose body ran them.
            const sim::step_times& x = r.inner_steps[k];
            const auto& t = r.inner_rows[static_cast<std::size_t>(x.core) & 1u];
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
