// Defines the body-independent machinery of one pallas_call run (declared in call/run.hpp): the
// timing model's view of the call's runners, the checks at kernel exit and run_call itself. Read
// by every translation unit in the header-only mode, and only by the one that defines
// PTPU_RUNTIME_IMPLEMENTATION (ptpu::runtime) with PTPU_SEPARATE_RUNTIME.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/call/options.hpp"
#include "ptpu/call/run.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/runtime/arena.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/cores.hpp"
#include "ptpu/runtime/runner.hpp"
#include "ptpu/runtime/semaphore.hpp"
#include "ptpu/sim/engine.hpp"

namespace ptpu::detail {

/// The timing model's view of a call's runners: core c's stream is runner c's (run on the
/// core's own thread when bodies may block on the other core's signals).
struct core_streams {
    per_core<runner*> r{};
    core_turns* turns = nullptr;
    stream::batch next_batch(int core, bool lazy) {
        if (turns != nullptr) return turns->next_batch(core, lazy);
        return r[static_cast<std::size_t>(core)]->next_batch(lazy);
    }
    // Cores taking turns are asked (from this thread, while every core's waits for its turn)
    // only between two steps, never with a body blocked in a wait.
    std::int64_t skippable_periods(int core, std::int64_t p, std::uint32_t starts) const {
        if (turns != nullptr && !turns->between_steps(core)) return 0;
        return r[static_cast<std::size_t>(core)]->skippable_periods(p, starts);
    }
    void skip_periods(int core, std::int64_t m) {
        if (turns == nullptr || turns->between_steps(core))
            r[static_cast<std::size_t>(core)]->skip_periods(m);
    }
};

/// Check 39 at kernel exit, per core: every async copy waited, every semaphore back at 0.
/// `skipped_steady`: the core's steps made without running its body, declared steady
/// (run_options::steady_body): the message then says a wait or a copy may have been skipped.
inline void check_exit(const call_desc& desc, const kernel_context& k, const core_memory& mem,
                       index_t skipped_steady) {
    const std::string cause = skipped_steady == 0
                                  ? std::string{}
                                  : "; this prediction made " + std::to_string(skipped_steady) +
                                        " of the core's steps without running its body, declared steady "
                                        "(run_options::steady_body): a step among them whose semaphore ops "
                                        "differ from the period's was skipped with them";
    const std::string steady_fix =
        skipped_steady == 0 ? std::string{}
                            : "; a body declared steady: widen body_edges over the steps whose copies or "
                              "semaphore ops differ, or leave steady_body unset";
    if (!k.pending.empty()) {
        const pending_dma& d = k.pending.front();
        throw error("39", "core " + std::to_string(k.core) + ": kernel exit",
                    "an async copy from " + detail::ref_where(d.src_label) + " to " +
                        detail::ref_where(d.dst_label) + " started at step " + std::to_string(d.step) +
                        " was never waited (" + std::to_string(k.pending.size()) +
                        " copies in all): on a TPU its semaphore is left raised and the kernel crashes" +
                        cause,
                    "wait on every copy you start (desc.wait()) before the last step ends" + steady_fix);
    }
    for (int s = 0; s < desc.n_scratch; ++s) {
        const scratch_desc& sd = desc.scratch[static_cast<std::size_t>(s)];
        if (sd.space != space_kind::semaphore) continue;
        const auto* cells = reinterpret_cast<const std::int32_t*>(mem.scratch[static_cast<std::size_t>(s)]);
        for (index_t j = 0; j < sd.elems(); ++j)
            if (cells[j] != 0)
                throw error(
                    "39", "core " + std::to_string(k.core) + ": kernel exit",
                    "semaphore scratch " + std::to_string(s) + "[" + std::to_string(j) + "] holds " +
                        std::to_string(cells[j]) +
                        ": semaphores must be 0 when the kernel ends (on a TPU leftover signals crash it)" +
                        cause,
                    "wait for everything signalled (and every copy started) before the last step ends" +
                        steady_fix);
    }
}

/// The deadlock the timing model stopped at (sim::result::deadlock), as error 39.
[[noreturn]] inline void raise_stall(const kernel_context& k, const sim::stall& d) {
    const void* cell = semaphore_cell(k, d.sem);
    throw error("39", "core " + std::to_string(d.core) + ", step " + std::to_string(d.step) + ": semaphore wait",
                "waits for " + std::to_string(d.wanted) + " on " + semaphore_name(k, cell) + ", which holds " +
                    std::to_string(d.available) +
                    ", while every other core is blocked or done and nothing in flight can raise it: on a TPU "
                    "the kernel hangs here",
                "signal the semaphore before waiting on it, and wait for no more than is signalled");
}

/// The advice a timing-only prediction that could have skipped its body's periods gives
/// (report::lints): its body ran at each of many steps, since its copies or semaphore ops keep the
/// body memo from answering for it, while the model found most of its ops repeating, so a
/// declaration (run_options::steady_body) would let the runner skip whole periods. Not given
/// below `steady_advice_steps` body runs, where a prediction takes a millisecond or less anyway.
inline constexpr index_t steady_advice_steps = 1024;
inline void steady_body_advice(report& rep) {
    const run_stats& s = rep.stats;
    const bool synchronizes = s.body_dmas > 0 || s.sem_signals > 0 || s.sem_waits > 0;
    if (!synchronizes || s.inner_steps > 0 || s.skipped_steps > 0 || s.steps < steady_advice_steps ||
        rep.steady_ops * 2 < rep.ops)
        return;
    rep.lints.push_back(
        "the body ran at each of its " + std::to_string(s.steps) +
        " steps (a body that issues copies or semaphore ops is not reused from an earlier step), and " +
        std::to_string(rep.ops > 0 ? 100 * rep.steady_ops / rep.ops : 0) +
        "% of the ops repeated a period: if its copies, semaphore ops and charges repeat but near "
        "each core's first and last steps, run_options::steady_body = body_edges{} skips whole "
        "periods of it, checking the body after each stretch (K4)");
}

/// Whether the call has semaphore scratch.
inline bool has_semaphores(const call_desc& desc) {
    for (int s = 0; s < desc.n_scratch; ++s)
        if (desc.scratch[static_cast<std::size_t>(s)].space == space_kind::semaphore) return true;
    return false;
}

/// run_call (below), once: with `turns`, the cores of a megacore call with semaphores run on
/// threads of their own, taking turns; without, on this thread, a body's wait on a semaphore
/// that another core signals later taking its amount on credit (call_state::waits_on_credit),
/// and what credit cannot answer throwing needs_turns.
inline report run_call_once(const call_desc& desc, const plan_tables& tables, const block_fn* maps,
                            const void* ctx, const std::array<void*, max_operands>& hbm,
                            const std::array<const void*, max_operands>& prefetch, body_call body,
                            const run_options& opt, bool take_turns) {
    const plan_info& pinfo = tables.info;
    const memory_layout layout = layout_of(desc, pinfo);
    per_core<core_memory> mem{};
    // The per-core memories are reused from call to call on this thread (allocating and
    // faulting in megabytes of fresh pages per call would dominate small kernels); a call made
    // while another is running on the thread gets its own.
    arena_lease lease;
    for (int core = 0; core < pinfo.cores; ++core)
        place(mem[static_cast<std::size_t>(core)], lease.get(core, static_cast<std::size_t>(layout.arena_bytes)), desc,
              pinfo, layout, prefetch, opt.poison_buffers,
              opt.poison_buffers || opt.out_of_bounds_reads == oob_reads::uninitialized, !opt.timing_only);

    const bool semaphores = has_semaphores(desc);
    // The works the bodies charge, numbered for the ops (the timing model turns them into time).
    stream::work_table works;
    // What a dependence chain costs on this chip, for the ops that keep the longer of two.
    const chain_rates chain = sim::chain_rates_of(desc.hw, opt.costs);
    // Per-step rows: always, or automatically for grids small enough to list.
    const bool rows = opt.per_step == per_step_rows::always ||
                      (opt.per_step == per_step_rows::automatic && desc.steps() <= 65536);
    // One context per core: each core's body sees its own program ids, work and copies in flight.
    per_core<kernel_context> kctx;
    // detect_races on two or more cores: one happens-before log for all (MC2, A13).
    race_log races(opt.detect_races && pinfo.cores > 1 ? pinfo.cores : 0);
    for (int core = 0; core < pinfo.cores; ++core) {
        kernel_context& k = kctx[static_cast<std::size_t>(core)];
        k.grid_rank = desc.grid_rank;
        k.grid = desc.grid;
        k.hw = &desc.hw;
        k.timing_only = opt.timing_only;
        k.memoize_bodies = opt.memoize_body;
        k.inner_rows = rows;
        k.fold_inner_rows = opt.fold_inner_rows;
        k.detect_races = opt.detect_races;
        if (opt.detect_races && pinfo.cores > 1) k.races = &races;
        k.core = core;
        k.cores = pinfo.cores;
        k.vmem_limit = desc.vmem_limit;
        k.vmem_used = pinfo.vmem_bytes;
        k.vmem_peak = pinfo.vmem_bytes;
        k.poison_buffers = opt.poison_buffers;
        k.poison_padding = opt.poison_buffers || opt.out_of_bounds_reads == oob_reads::uninitialized;
        k.works = &works;
        k.chain = &chain;
        for (int c = 0; c < pinfo.cores; ++c) k.arena[static_cast<std::size_t>(c)] = mem[static_cast<std::size_t>(c)].arena;
        for (int s = 0; s < desc.n_scratch; ++s) {
            const scratch_desc& sd = desc.scratch[static_cast<std::size_t>(s)];
            if (sd.space != space_kind::semaphore) continue;
            const std::byte* lo = mem[static_cast<std::size_t>(core)].scratch[static_cast<std::size_t>(s)];
            k.semaphores.push_back({lo, lo + sd.elems() * 4, s});
        }
    }
    runner_options ro;
    ro.timing_only = opt.timing_only;
    ro.semaphores = semaphores;
    ro.memoize_body = opt.memoize_body;
    ro.notes = opt.timeline;
    ro.works = &works;
    ro.inner_rows = rows;
    if (opt.steady_body) {
        const body_edges& e = *opt.steady_body;
        if (e.first < 0 || e.last < 0)
            throw error("K4", "run_options::steady_body",
                        "the edges are " + std::to_string(e.first) + " first and " + std::to_string(e.last) +
                            " last steps: a number of steps cannot be negative",
                        "give each edge 0 or more steps");
        ro.steady = true;
        ro.steady_first = std::min(e.first, desc.steps());  // (edges past the grid: all of it)
        ro.steady_last = std::min(e.last, desc.steps());
    }
    std::vector<dma_note> notes;
    per_core<std::unique_ptr<runner>> runners;
    core_streams streams;
    for (int core = 0; core < pinfo.cores; ++core) {
        const auto u = static_cast<std::size_t>(core);
        runners[u] = std::make_unique<runner>(desc, tables, core, maps, ctx, hbm, mem[u], kctx[u], body, ro, &notes);
        streams.r[u] = runners[u].get();
    }
    // A body on one core may wait for another core's signal: each core runs on a thread of its own,
    // one at a time (runtime/cores.hpp), or, until such a wait, on this thread. With one core an
    // unmet wait is a deadlock at once.
    std::unique_ptr<core_turns> turns;
    if (semaphores && pinfo.cores > 1) {
        per_core<kernel_context*> k{};
        for (std::size_t c = 0; c < max_cores; ++c) k[c] = &kctx[c];
        if (take_turns) {
            turns = std::make_unique<core_turns>(streams.r, k, pinfo.cores);
            streams.turns = turns.get();
        } else {
            for (int c = 0; c < pinfo.cores; ++c) {
                kernel_context& kc = *k[static_cast<std::size_t>(c)];
                kc.yield = [](void*) { throw needs_turns{}; };
                // (Not under detect_races: its log orders accesses by the signals a wait took.)
                kc.waits_on_credit = !opt.detect_races;
            }
        }
    }
    sim::options so;
    so.timeline = opt.timeline;
    so.per_step = rows;
    so.costs = opt.costs;
    so.works = &works;
    so.steady_state = opt.steady_state;
    so.signals_across_cores = turns == nullptr;  // every source hands out whole steps
    so.semaphores = semaphores;
    so.memory_budget = opt.memory_budget;
    sim::result r = sim::simulate(desc.hw, pinfo.cores, streams, so);
    const bool took_turns = turns != nullptr;
    turns.reset();  // every core's thread has ended (a deadlocked one is unwound)
    if (r.deadlock.core >= 0) raise_stall(kctx[static_cast<std::size_t>(r.deadlock.core)], r.deadlock);
    run_stats stats;
    for (int core = 0; core < pinfo.cores; ++core) {
        const auto u = static_cast<std::size_t>(core);
        const run_stats core_stats = runners[u]->stats();
        check_exit(desc, kctx[u], mem[u], opt.steady_body ? core_stats.skipped_steps : 0);
        stats += core_stats;
        stats.body_dmas += kctx[u].body_dma_count;
        stats.body_dma_bytes += kctx[u].body_dma_bytes;
        stats.sem_signals += kctx[u].sem_signals;
        stats.sem_waits += kctx[u].sem_waits;
        stats.inner_steps += kctx[u].inner_steps;
        stats.inner_dmas += kctx[u].inner_dmas;
        stats.inner_bytes += kctx[u].inner_bytes;
        stats.total_work += kctx[u].inner_work;
        stats.vmem_peak[u] = kctx[u].vmem_peak;
    }
    if (!detail::finite_work(stats.total_work))
        throw error("C1", "kernel exit", "the work all cores charged together is not finite: the charges overflow a double",
                    "charge work and seconds of realistic size (e.g. not DBL_MAX); a time is in seconds");
    if (r.dangling_dmas > 0)  // a pipeline never leaves one; a stream that did is a leak (39)
        throw error("39", "kernel exit", std::to_string(r.dangling_dmas) + " DMAs were started and never waited",
                    "wait on every DMA started");
    kernel_facts facts{pinfo.cores, pinfo.vmem_bytes, pinfo.smem_bytes, desc.n_in, desc.n_ops()};
    for (int i = 0; i < desc.n_ops() && i < static_cast<int>(max_operands); ++i) {
        const char* n = desc.ops[static_cast<std::size_t>(i)].name;
        std::size_t len = 0;
        while (len < sizeof desc.ops[0].name && n[len] != '\0') ++len;
        facts.names[static_cast<std::size_t>(i)] = std::string_view(n, len);
    }
    // The slot of each row whose compute is one body's time: the bodies' works, each with the
    // slot bounding it (a work of nothing but a chain is no body's); a time two bodies with other
    // slots share names neither.
    std::vector<std::pair<double, sim::slot>> body_bounds;
    for (std::size_t k = 1; k < works.size(); ++k) {
        work units = works[k];
        units.chain = {};
        if (units.empty()) continue;
        const sim::work_time t = sim::time_of(works[k], desc.hw, opt.costs);
        body_bounds.emplace_back(t.total, t.bound);
    }
    if (!body_bounds.empty()) {
        std::sort(body_bounds.begin(), body_bounds.end());
        const auto bound_of = [&body_bounds](double t) {
            auto it = std::lower_bound(body_bounds.begin(), body_bounds.end(), std::pair{t, sim::slot{}});
            if (it == body_bounds.end() || it->first != t) return sim::slot::none;
            const sim::slot s = it->second;
            for (; it != body_bounds.end() && it->first == t; ++it)
                if (it->second != s) return sim::slot::none;
            return s;
        };
        for (auto* rows : {&r.steps, &r.inner_steps})
            for (sim::step_times& row : *rows)
                if (row.compute > 0) row.bound = bound_of(row.compute);
    }
    report rep = make_report(desc.hw, facts, stats, std::move(r), std::move(notes), opt.costs);
    if (!rep.inner_steps.empty())
        for (int core = 0; core < pinfo.cores; ++core)
            rep.inner_rows[static_cast<std::size_t>(core)] = runners[static_cast<std::size_t>(core)]->inner_rows();
    detail::nest_inner_rows(rep);  // rows of deeper pipelines into their parents'
    bool steady_allowed = !opt.steady_body && !took_turns;
    for (int core = 0; core < pinfo.cores; ++core)
        steady_allowed = steady_allowed && runners[static_cast<std::size_t>(core)]->steady_allowed();
    if (steady_allowed) steady_body_advice(rep);
    return rep;
}

/// Runs call `desc` (analyzed as `tables`; block indices from `maps` with `ctx`) on the HBM arrays
/// `hbm`, with the scalar-prefetch data `prefetch`, calling `body` for each grid step, and
/// predicts its time on the call's chip.
///
/// A timing-only run of a megacore call with semaphores runs its cores on this thread: handing
/// the turn to a core's thread at every batch costs the host microseconds. It moves no data, so
/// a wait for another core's signal need not stop the body: it takes its amount on credit, and
/// the timing model, which sees the wait's op and the signal's, blocks the core until the signal
/// (a wait no core ever pays is the model's deadlock, 39). Where credit cannot answer (a wait on
/// a DMA semaphore that its own copies do not fill, a debt or a signal past the int32 range,
/// semaphore_read, detect_races) it starts over with the cores taking turns on threads. Nothing is left of
/// the first attempt but what the body itself did on the host: a body counting its runs counts those too.
PTPU_COMPILED report run_call(const call_desc& desc, const plan_tables& tables, const block_fn* maps,
                              const void* ctx, const std::array<void*, max_operands>& hbm,
                              const std::array<const void*, max_operands>& prefetch, body_call body,
                              const run_options& opt) {
    if (opt.timing_only && tables.info.cores > 1 && has_semaphores(desc)) {
        try {
            return run_call_once(desc, tables, maps, ctx, hbm, prefetch, body, opt, false);
        } catch (const needs_turns&) {
        }
    }
    return run_call_once(desc, tables, maps, ctx, hbm, prefetch, body, opt, true);
}

}  // namespace ptpu::detail
