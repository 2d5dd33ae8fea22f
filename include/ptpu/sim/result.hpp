// Defines what the timing model is asked for (sim::options) and what it answers (sim::result:
// device and per-core times split by kind, traffic, the timeline's spans and per-step rows). The
// report and the exporters read these; only sim/engine.hpp computes them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ptpu/sim/cost.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim {

using stream::op_kind;

struct options {
    bool timeline = false;  ///< record result::timeline
    bool per_step = false;  ///< record result::steps
    /// Fast-forward streams that have settled into a repeating pattern (docs/model.md §11):
    /// once the running cores' state at a step boundary of the lowest-numbered of them equals (to
    /// 1e-12 relative) their state one period of up to 64 steps earlier (every running core's
    /// DMAs in flight and semaphores, the others' clocks relative to its), and the ops of the
    /// following steps repeat that period's ops, whole periods advance by the period's time
    /// without simulating their events. Per-step rows (inner rows too) and timeline spans of
    /// skipped periods are replicated. A step signalling another core's semaphore is part of a
    /// period only with signals_across_cores, and only when the lane follows that core too.
    bool steady_state = true;
    /// With steady_state: a period may hold steps signalling another core that the lane follows
    /// (its semaphores and a wait on them are part of the state compared). Only for sources that
    /// hand out whole steps: with cores taking turns (runtime/cores.hpp) a body blocked in a wait
    /// hands out part of a step, and the lane's periods across cores are checked on whole steps
    /// only.
    bool signals_across_cores = false;
    /// The estimates beside the chip preset: the engine turns compute ops' work into time with
    /// them (time_of) and reads the on-chip DMA bandwidth from them.
    cost_model costs = default_costs;
    /// The works compute ops name (stream::op::work): the call's work table. None: every
    /// compute op must name work 0 (none).
    const stream::work_table* works = nullptr;
    /// The streams use semaphores (sem_signal / sem_wait ops, DMAs completing into a semaphore).
    /// Cores are then simulated in strict time order (a signal must not reach a core that has
    /// not yet reached the signal's time); a stream with semaphore ops and this off is rejected
    /// (SIM2).
    bool semaphores = false;
    /// Host bytes the per-step rows (result::steps, inner_steps) and the timeline may take: they
    /// grow with the grid (about 140 bytes a row, 70 a span, with their indexes). Recording past
    /// it is error MEM1 (run_options::memory_budget for a call).
    std::int64_t memory_budget = std::int64_t{1} << 30;
};

/// One interval of the timeline. Stream spans: overhead, issue (kind dma_start), compute, wait
/// (kind dma_wait or sem_wait, only when the core really blocked). DMA spans (track dma, kind dma_start): from
/// the end of the issue (start of the latency) to completion.
struct span {
    int core = 0;
    enum class track : std::uint8_t { stream, dma } track = track::stream;
    op_kind kind = op_kind::overhead;
    std::uint32_t label = 0;
    std::uint32_t step = 0;
    std::uint32_t dma = 0;
    double begin = 0;
    double end = 0;
    std::int64_t bytes = 0;  ///< DMA spans: bytes moved
    bool far = true;         ///< DMA spans: over HBM
};

/// Time of one core in one grid step: a row per (core, step value), in order of first appearance.
struct step_times {
    int core = 0;
    std::uint32_t step = 0;
    double begin = 0;  ///< start of the first op carrying this step value
    double end = 0;    ///< end of the last one (for a wait: when the core unblocked)
    // Busy and blocked time of the ops carrying this step value. When a stream interleaves step
    // values, rows overlap in time and end - begin exceeds their sum.
    double overhead = 0;
    double issue = 0;
    double compute = 0;
    double wait = 0;      ///< blocked on DMAs (DMA waits, DMA-semaphore waits)
    double sem_wait = 0;  ///< blocked on regular semaphores (signals of the other core)
    /// A bit set for each DMA wait of the step that blocked (longer than 1e-12 of the clock: not
    /// a rounding error), by its op::waits_on: bit 1 + k operand k of the row's pipeline (the
    /// call's; an inner row's own), bit 0 a body copy (the operands waited on, report's print_steps).
    std::uint32_t waited_on = 0;
    /// 0: a row of result::steps (everything the core did in the step). k >= 1: a row of
    /// result::inner_steps, the part of the step's row that the ops tagged op::sub = k did (a
    /// step of a pipeline the body ran: the runner's inner_rows()[k - 1]).
    std::uint32_t sub = 0;
    /// The slot that bounds the step's body (sim::time_of's work_time::bound), filled in by the
    /// front end that converted the bodies' work; none when the step ran no body or its row
    /// adds up several (a body split by its own DMAs).
    slot bound = slot::none;
};

/// Why a simulation could not go on: every unfinished core waits on a semaphore that nothing in
/// flight will raise (check 39: on a TPU the kernel hangs).
struct stall {
    int core = -1;  ///< -1: none
    std::uint32_t sem = 0;
    std::int64_t wanted = 0;
    std::int64_t available = 0;
    std::uint32_t step = 0;
    std::uint32_t label = 0;  ///< the wait op's label
};

struct result {
    int cores = 0;
    /// Kernel time on the device: the last core stream end or DMA completion, whichever is later.
    double device_time = 0;
    /// End of each core's stream: its last op. Dangling DMAs are not waited for, so that
    /// core_time = busy_overhead + busy_issue + busy_compute + wait_dma + wait_sem holds for
    /// every core.
    per_core<double> core_time{};
    per_core<double> busy_overhead{};
    per_core<double> busy_issue{};  ///< dma_issue_s per DMA start
    per_core<double> busy_compute{};
    per_core<double> wait_dma{};  ///< blocked in waits: exposed DMA time
    /// wait_dma of both cores by the waits' op::waits_on: [0] body copies (inner pipelines' DMAs
    /// too) and DMA semaphores, [1 + k] operand k's pipeline DMAs (the report's per-operand
    /// exposed DMA).
    std::array<double, max_operands + 1> wait_by_operand{};
    per_core<double> wait_sem{};       ///< blocked on regular semaphores: the other core's signals
    std::int64_t hbm_bytes = 0;        ///< bytes of far DMAs
    std::int64_t onchip_bytes = 0;     ///< bytes of VMEM->VMEM DMAs
    double hbm_busy_time = 0;          ///< time with at least one far transfer moving bytes
    std::int64_t dma_count = 0;
    std::int64_t dangling_dmas = 0;  ///< started but never waited (a semaphore leak, 39)
    std::int64_t op_count = 0;       ///< ops pulled from the source
    std::int64_t steady_ops = 0;     ///< of which fast-forwarded (options::steady_state)
    std::vector<span> timeline;      ///< when options::timeline
    std::vector<step_times> steps;   ///< when options::per_step, in stream order per core
    /// When options::per_step: a row per (core, step, op::sub >= 1), in stream order per core.
    /// Each is also counted in its (core, step) row of `steps`, whose totals are its own ops'
    /// plus those of its inner rows (the inner rows' begin..end lie within the step's).
    std::vector<step_times> inner_steps;
    /// Set when the streams deadlocked on semaphores: the simulation stopped there (the caller
    /// raises it as error 39 with the semaphore's name; simulate() itself returns it).
    stall deadlock{};
};

}  // namespace ptpu::sim
