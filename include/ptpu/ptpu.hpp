// Defines nothing itself: includes ptpu's whole public surface.
#pragma once

#include "ptpu/call/dynamic.hpp"
#include "ptpu/call/dynamic_pipeline.hpp"
#include "ptpu/call/emit_pipeline.hpp"
#include "ptpu/call/emit_pipeline_schedule.hpp"
#include "ptpu/call/verdict.hpp"
#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/extents.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/reuse.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/ops/ops.hpp"
#include "ptpu/pallas_call.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/report/trace.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/dma.hpp"
#include "ptpu/runtime/host_array.hpp"
#include "ptpu/runtime/ref.hpp"
#include "ptpu/runtime/semaphore.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/sim/engine.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/spec/block.hpp"
#include "ptpu/spec/call.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/spec/validate.hpp"
#include "ptpu/stream/op.hpp"

// The translation unit that compiles ptpu's compiled part (core/linkage.hpp) compiles the opt-in
// headers' body-independent parts too: the HTML report's writer, and a sweep's result, its text
// and files, and its thread pool (none of it needs Hana). Kernel files get them from
// <ptpu/report/html.hpp> and <ptpu/sweep/run.hpp>.
#if defined(PTPU_RUNTIME_IMPLEMENTATION)
#include "ptpu/report/html.hpp"
#include "ptpu/sweep/result.hpp"
#endif
