// Defines ptpu::report, what a call predicts and why: device time, per-core time split into
// control overhead, DMA issue, compute and exposed DMA waits; MXU/VPU utilization; HBM traffic
// and achieved bandwidth; VMEM high-water; the roofline bound and the fraction of it reached;
// a per-step breakdown; and, when asked for, the timeline the exporters draw.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptpu/core/integers.hpp"
#include "ptpu/core/linkage.hpp"
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
    double semaphore_stall = 0;  ///< blocked on regular semaphores: waiting for other cores' signals
    index_t steps = 0;
    index_t vmem_high_water = 0;  ///< bytes of VMEM the call allocates on this core (check 24)
    index_t smem_high_water = 0;
};

struct report {
    std::string chip;
    int cores = 1;
    double device_time = 0;  ///< predicted kernel time on the device (no host dispatch)
    per_core<core_report> core{};  ///< [0, cores): each core's
    double mxu_time = 0;         ///< Σ over bodies of MXU busy time at peak
    double vpu_time = 0;         ///< Σ over bodies of VPU busy time
    double mxu_utilization = 0;  ///< mxu_time / (device_time × cores)
    double vpu_utilization = 0;
    double eup_time = 0;  ///< Σ over bodies of transcendental-unit (EUP) busy time
    double eup_utilization = 0;
    /// Σ over bodies of the MXU result latency vector ops waited for (work.mxu_drains, serial)
    double mxu_drain_time = 0;
    /// What bounds the kernel: the largest of HBM (bytes at B·η), each unit's busy time (MXU,
    /// VPU, EUP, vector loads, vector stores, XLU, scalar unit), the bodies' dependence chains,
    /// the MXU result latency waited for and the step overhead (overhead and DMA issue), per
    /// core: "HBM", "MXU", "VPU", "EUP", "vector loads", "vector stores", "XLU", "scalar",
    /// "dependence chain", "MXU drain", "step overhead".
    std::string bound;
    /// The slot that bounds the bodies' summed work (sim::work_time::bound, docs/model.md §5):
    /// "MXU", "vector ALU", "EUP", "vector load", "vector store", "XLU", "scalar", "dependence
    /// chain"; "" without work. Each step's own is its row's sim::step_times::bound.
    std::string compute_bound;
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
    per_core<std::vector<stream::inner_row>> inner_rows;  ///< per core: what inner row k is
    std::vector<sim::span> timeline;         ///< when recorded
    std::vector<dma_note> notes;             ///< what each DMA span's label refers to
    std::vector<std::string> operand_names;  ///< "in0", "out0", … (exporters name DMAs with them)
    std::vector<operand_report> operands;    ///< per operand, in operand order
    double body_exposed_dma = 0;             ///< exposed DMA of body copies (sync/async_copy, inner pipelines)
    /// The operand whose DMAs the cores waited for longest ("" when no wait was exposed).
    std::string bound_operand;
    /// Advice on how the kernel uses the chip (e.g. one TensorCore of two), one line each.
    std::vector<std::string> lints;

    // Defined where the compiled part is (core/linkage.hpp): copying, moving and destroying
    // these strings and vectors is then compiled once, not in every kernel's translation unit.
    PTPU_COMPILED report();
    PTPU_COMPILED report(const report&);
    PTPU_COMPILED report(report&&) noexcept;
    PTPU_COMPILED report& operator=(const report&);
    PTPU_COMPILED report& operator=(report&&) noexcept;
    PTPU_COMPILED ~report();
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
PTPU_COMPILED report make_report(const chip& hw, const kernel_facts& info, const run_stats& stats, sim::result&& r,
                          std::vector<dma_note>&& notes, const sim::cost_model& costs);

namespace detail {
// The model counts an op in its step's row and in its deepest inner row (op::sub) only; a row of
// a pipeline nested in an inner step's body is part of that step's row as well: each row's time
// is added to its ancestors' (their begin the earliest, their end the latest, and a wait counts
// as a body copy's of the parent, bit 0), an ancestor none of whose own ops ran gets a row, and
// ancestors come before their first descendant. (Not in the model's hot path: once, here.)
PTPU_COMPILED void nest_inner_rows(report& r);

PTPU_COMPILED std::string fmt_time(double s);
PTPU_COMPILED std::string fmt_num(double v, int digits);
PTPU_COMPILED std::string fmt_pct(double f);
}  // namespace detail

/// A readable summary: time, where it went, how close to the roofline.
PTPU_COMPILED std::ostream& operator<<(std::ostream& os, const report& r);

namespace detail {
// The label of an inner row in print_steps: "pK.S", step S of the K-th pipeline its step's body
// ran (for a deeper row: the body of its parent inner step; print_steps indents it by depth).
PTPU_COMPILED std::string inner_label(const report& r, const sim::step_times& s);
// The name of an inner row's pipeline: "pK" (the K-th its step's body ran), under its parent's
// name for a deeper one ("p0/p1": the second pipeline run by the body of a step of p0).
PTPU_COMPILED std::string inner_pipeline_name(const report& r, const sim::step_times& s);
// Operand k (inputs then outputs) of an inner row's pipeline: "p0:in1", "p0/p1:out0".
PTPU_COMPILED std::string inner_operand_name(const report& r, const sim::step_times& s, std::size_t k);
}  // namespace detail

/// The per-step breakdown (report::steps, recorded with run_options::per_step) as a table: step,
/// core, begin, overhead, DMA issue, compute, the slot bounding the step's body, exposed DMA and
/// the operands waited on, each
/// step's inner rows (report::inner_steps, labelled pK.S) indented under it, two columns more per
/// level of nesting (a depth-2 row under the depth-1 row whose body ran it; its waits name its
/// pipeline's operands, "p0:in0", "p0/p1:out0", and "(body)" body copies and deeper pipelines'
/// DMAs); at most `max_rows`
/// rows, then a count of the rows left out.
PTPU_COMPILED void print_steps(std::ostream& os, const report& r, std::size_t max_rows = 32);

}  // namespace ptpu

// The definitions, where this translation unit compiles them (core/linkage.hpp).
#if defined(PTPU_DEFINE_COMPILED)
#include "ptpu/report/report_impl.hpp"
#endif
