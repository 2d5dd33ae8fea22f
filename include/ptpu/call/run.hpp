// Defines how one pallas_call runs once its operands are bound: the HBM aliases (S50), one arena
// and one runner per TensorCore (S44: each core runs its own pipeline), the timing model pulling
// the runners' op streams, and the report. Nothing here depends on the kernel body or on the
// option types: the body arrives as a body_call, so this code is compiled once per translation
// unit however many kernels it runs.
#pragma once

#include <array>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "ptpu/call/options.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/runtime/arena.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/runner.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/sim/engine.hpp"
#include "ptpu/spec/describe.hpp"

namespace ptpu::detail {

/// S50: an aliased output starts as a copy of its input, and the input then reads the output's
/// buffer. (Without data, predict(), nothing to copy.)
inline void alias_hbm(const call_desc& desc, std::array<void*, max_operands>& hbm) {
    for (int k = 0; k < desc.n_alias; ++k) {
        const auto [in, out] = desc.aliases[static_cast<std::size_t>(k)];
        void*& src = hbm[static_cast<std::size_t>(in)];
        void* const dst = hbm[static_cast<std::size_t>(desc.n_in + out)];
        if (src == nullptr || dst == nullptr) continue;
        const auto& o = desc.ops[static_cast<std::size_t>(desc.n_in + out)];
        std::memcpy(dst, src, static_cast<std::size_t>(o.array_elems() * itemsize(o.type)));
        src = dst;
    }
}

/// The run-time plan of a call: the same planner as at compile time, its checks raised as
/// ptpu::error before any byte moves (S51). (A template for the same reason as run_call; never
/// inlined, so that each kernel's call site does not get a copy of the planner.)
template <int = 0>
[[gnu::noinline]] plan_tables plan_call(const call_desc& desc, const block_fn* maps, const void* ctx, const scan_fn* scans) {
    plan_tables tables = analyze(desc, maps, ctx, scans);
    raise(tables.info.problem);
    return tables;
}

/// The timing model's view of a call's runners: core c's stream is runner c's.
struct core_streams {
    std::array<runner*, 2> r{};
    stream::batch next_batch(int core, bool lazy) { return r[static_cast<std::size_t>(core)]->next_batch(lazy); }
};

/// Runs call `desc` (analyzed as `tables`; block indices from `maps` with `ctx`) on the HBM arrays
/// `hbm`, with the scalar-prefetch data `prefetch`, calling `body` for each grid step, and
/// predicts its time on the call's chip. (A template only so that it is compiled where a call
/// runs, once per translation unit, or once per program with PTPU_SEPARATE_RUNTIME; never inlined,
/// so that each kernel's call site does not get a copy of the machinery.)
template <int = 0>
[[gnu::noinline]] report run_call(const call_desc& desc, const plan_tables& tables, const block_fn* maps, const void* ctx,
                       const std::array<void*, max_operands>& hbm, const std::array<const void*, max_operands>& prefetch,
                       body_call body, const run_options& opt) {
    const plan_info& pinfo = tables.info;
    const memory_layout layout = layout_of(desc, pinfo);
    std::array<core_memory, 2> mem{};
    // The per-core memories are reused from call to call on this thread (allocating and
    // faulting in megabytes of fresh pages per call would dominate small kernels); a call made
    // while another is running on the thread gets its own.
    arena_lease lease;
    for (int core = 0; core < pinfo.cores; ++core)
        place(mem[static_cast<std::size_t>(core)], lease.get(core, static_cast<std::size_t>(layout.arena_bytes)), desc,
              pinfo, layout, prefetch);

    kernel_context kctx;
    kctx.grid_rank = desc.grid_rank;
    kctx.grid = desc.grid;
    kctx.hw = &desc.hw;
    kctx.timing_only = opt.timing_only;
    context_guard guard(kctx);
    runner_options ro;
    ro.timing_only = opt.timing_only;
    ro.notes = opt.timeline;
    ro.step_overhead_s = desc.hw.step_overhead_s;
    // The timing model turns charged work into time (sim::time_of on this chip).
    struct cost_ctx {
        const chip* hw;
        const sim::cost_model* costs;
    } const cc{&desc.hw, &opt.costs};
    ro.seconds_of = [](const work& w, const void* c) {
        const auto* k = static_cast<const cost_ctx*>(c);
        return sim::time_of(w, *k->hw, *k->costs).total;
    };
    ro.seconds_ctx = &cc;
    std::vector<dma_note> notes;
    std::array<std::unique_ptr<runner>, 2> runners;
    core_streams streams;
    for (int core = 0; core < pinfo.cores; ++core) {
        const auto u = static_cast<std::size_t>(core);
        runners[u] = std::make_unique<runner>(desc, tables, core, maps, ctx, hbm, mem[u], kctx, body, ro, &notes);
        streams.r[u] = runners[u].get();
    }
    sim::options so;
    so.timeline = opt.timeline;
    so.per_step = opt.per_step > 0 || (opt.per_step < 0 && desc.steps() <= 65536);
    so.costs = opt.costs;
    so.steady_state = opt.steady_state;
    sim::result r = sim::simulate(desc.hw, pinfo.cores, streams, so);
    run_stats stats;
    for (int core = 0; core < pinfo.cores; ++core) stats += runners[static_cast<std::size_t>(core)]->stats();
    stats.body_dmas = kctx.body_dma_count;
    stats.body_dma_bytes = kctx.body_dma_bytes;
    const kernel_facts facts{pinfo.cores, pinfo.vmem_bytes, pinfo.smem_bytes, desc.n_in, desc.n_ops()};
    return make_report(desc.hw, facts, stats, std::move(r), std::move(notes), opt.costs);
}

// PTPU_SEPARATE_RUNTIME: run_call (runners, the model, the report) is compiled once, in the
// translation unit that defines PTPU_RUNTIME_IMPLEMENTATION; kernel translation units compile only
// their bodies and calls.
#if defined(PTPU_SEPARATE_RUNTIME) && !defined(PTPU_RUNTIME_IMPLEMENTATION)
extern template plan_tables plan_call<0>(const call_desc&, const block_fn*, const void*, const scan_fn*);
extern template report run_call<0>(const call_desc&, const plan_tables&, const block_fn*, const void*,
                                   const std::array<void*, max_operands>&,
                                   const std::array<const void*, max_operands>&, body_call, const run_options&);
#elif defined(PTPU_RUNTIME_IMPLEMENTATION)
template plan_tables plan_call<0>(const call_desc&, const block_fn*, const void*, const scan_fn*);
template report run_call<0>(const call_desc&, const plan_tables&, const block_fn*, const void*,
                            const std::array<void*, max_operands>&, const std::array<const void*, max_operands>&,
                            body_call, const run_options&);
#endif

}  // namespace ptpu::detail
