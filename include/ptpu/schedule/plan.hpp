// Defines the planner: the constexpr functions that turn a call_desc and its index maps into the
// exact Pallas TPU pipeline (S21–S32, S34, S39–S48; docs/layers.md), as a stream of events
// per core. One planner, two evaluation times: static calls evaluate it at compile time into
// std::arrays; calls whose index maps read scalar-prefetch values evaluate it at run time.
// Its parts, each its own header: events (schedule/event.hpp), block geometry (geometry.hpp),
// pass 1 over the grid (scan.hpp), the analysis and memory layout (analyze.hpp), and the
// per-core schedule generator (generator.hpp).
#pragma once

#include <cstddef>

#include "ptpu/schedule/analyze.hpp"
#include "ptpu/schedule/event.hpp"
#include "ptpu/schedule/generator.hpp"
#include "ptpu/schedule/geometry.hpp"
#include "ptpu/schedule/info.hpp"
#include "ptpu/schedule/scan.hpp"
#include "ptpu/spec/describe.hpp"

namespace ptpu {

namespace detail {
// Drains the schedules of an analyzed pipeline, core after core, into `emit`, counting each
// operand's DMAs and all events into the plan's summary.
template <class Emit>
constexpr plan_info drain(plan_tables& t, Emit& emit) {
    if (!t.info.problem.ok()) return t.info;
    std::size_t n_events = 0;
    for (int core = 0; core < t.info.cores; ++core) {
        core_schedule cs(t, core);
        step_events step;
        while (cs.next_step(step)) {
            for (std::size_t k = 0; k < step.size(); ++k) {
                const event& e = step[k];
                if (is_dma(e.kind)) ++t.info.ops[e.op].dmas;
                emit(e);
                ++n_events;
            }
            step.clear();
        }
    }
    t.info.events = n_events;
    return t.info;
}
}  // namespace detail

/// The planner. Calls `emit(event)` for each event, in issue order, core after core, and returns
/// the plan's summary. `maps[i]` is operand i's index map (inputs then outputs); `ctx` is passed to
/// them (the scalar-prefetch refs, or nullptr).
template <class Emit>
constexpr plan_info plan(const call_desc& c, const block_fn* maps, const void* ctx, Emit&& emit) {
    plan_tables t = analyze(c, maps, ctx);
    return detail::drain(t, emit);
}

/// The planner for one pipeline of a front end with capabilities `caps` (emit_pipeline's inner
/// pipelines: emit_pipeline_caps) on a chip of generation `generation`: the same analysis and
/// generator as plan(), on the pipeline's cores (one for an inner pipeline).
template <class Emit>
constexpr plan_info plan_pipeline(const pipeline_desc& p, const capabilities& caps, int generation,
                                  const block_fn* maps, const void* ctx, Emit&& emit) {
    plan_tables t = analyze_pipeline(p, caps, generation, maps, ctx);
    return detail::drain(t, emit);
}

}  // namespace ptpu
