// Defines what a runner is handed besides its pipeline: its options and the body it calls, as
// a plain function and the front end's closure. Kernel-facing headers include this, not the
// runner itself, so a kernel's translation unit parses none of the runner where the runner is
// compiled once (ptpu::runtime, PTPU_SEPARATE_RUNTIME).
#pragma once

#include <cstdint>
#include <vector>

#include "ptpu/runtime/arena.hpp"
#include "ptpu/schedule/event.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu {

struct runner_options {
    bool timing_only = false;  ///< skip vector data movement and floating-point work
    bool notes = false;        ///< keep a dma_note per DMA for the timeline (labels index it)
    /// Where the works its compute ops do are numbered (stream::op::work): the call's table,
    /// which the timing model reads to turn them into time. None: every compute op names work 0.
    stream::work_table* works = nullptr;
    std::uint8_t pipeline = 0;  ///< the pipeline id its notes carry
    /// The kernel has semaphores: bodies may block mid-step (runtime/semaphore.hpp), so steps
    /// are never made from the last one's ops ("Repeated steps" below).
    bool semaphores = false;
    /// A pipeline a body runs (emit_pipeline): its body sees the enclosing kernel's program ids
    /// and core, so the runner leaves them in the context as they are.
    bool nested = false;
    /// When set, every schedule event the runner handles is appended here (tests, tracing).
    std::vector<event>* trace = nullptr;
    /// Timing-only: run the body once per distinct set of answers to what it asks ("Body memo"
    /// below; run_options::memoize_body).
    bool memoize_body = false;
    /// The model records per-step rows: the steps of pipelines the body runs get inner rows
    /// (op::sub). Without them no op carries a row.
    bool inner_rows = true;
    /// A nested runner whose driver folds the periods it skips into repeat ops
    /// (call/emit_pipeline_impl.hpp): skip_periods may skip, as for the call's own runner.
    bool fold_repeats = false;
    /// run_options::steady_body (the call's own runner, timing-only, one core): the body may be
    /// skipped over whole periods of steps between the first `steady_first` and the last
    /// `steady_last` ("Steady bodies" below).
    bool steady = false;
    index_t steady_first = 0;
    index_t steady_last = 0;
};

/// How a runner runs the body on its core's current windows: a plain function and the object it
/// calls (the front end's closure over the body), so that no runner code depends on the body.
struct body_call {
    void (*fn)(void* obj, core_memory& mem) = nullptr;
    void* obj = nullptr;
    void operator()(core_memory& m) const { fn(obj, m); }
};

}  // namespace ptpu
