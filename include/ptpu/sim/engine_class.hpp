// Defines sim::detail::engine, the timing model's event simulator: its state and its small
// members. Its larger members are defined in engine_events_impl.hpp (running the cores' ops, the
// DMA channels' events, semaphores) and engine_steady_impl.hpp (the state a boundary records and
// the skip of whole periods, for the steady-state lane and the folds). The parts below it are
// classes of their own: where each core's ops come from (op_feed.hpp), the steady-state lane
// (steady_lane.hpp, with its history in lane_history.hpp), folded repeats (folds.hpp), the
// per-step rows (step_rows.hpp), the timeline (timeline_book.hpp) and the DMA channels
// (channel.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/sim/channel.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/sim/folds.hpp"
#include "ptpu/sim/op_feed.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/sim/steady.hpp"
#include "ptpu/sim/steady_lane.hpp"
#include "ptpu/sim/step_rows.hpp"
#include "ptpu/sim/timeline_book.hpp"
#include "ptpu/sim/work_times.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim {

using stream::batch;  // as sim/engine.hpp: the stream's vocabulary

namespace detail {

enum class core_state : std::uint8_t { ready, blocked, done };

// The simulation proper. DMAs live in slots with stable numbers; each core keeps the DMAs it has
// started and not yet waited (looked up by id on a wait) and, in start order, those still in
// their latency (their ends are in time order, since a core's time only grows); each channel
// keeps its transfers and its next completion. The next DMA event is then the earliest of at
// most 1 + 2 x cores candidates (each core's latency queue, HBM and each core's on-chip path).
template <class Source>
class engine {
public:
    engine(const chip& c, int cores, Source& src, const options& opt)
        : chip_(c), times_(c, opt.costs, opt.works), cores_(cores), src_(src), opt_(opt) {
        dmas_.reserve(64);
        free_.reserve(64);
        for (auto& l : live_) l.reserve(32);
        const double onchip = onchip_bytes_per_s(c, opt.costs);
        channels_[0].set_bandwidth(c.hbm_bytes_per_s * c.dma_efficiency);
        desc_bytes_ = c.dma_descriptor_s * c.hbm_bytes_per_s * c.dma_efficiency;
        for (int k = 1; k <= cores; ++k) channels_[static_cast<std::size_t>(k)].set_bandwidth(onchip);
        res_.cores = cores;
        for (int k = 0; k < static_cast<int>(max_cores); ++k)
            state_[static_cast<std::size_t>(k)] = k < cores ? core_state::ready : core_state::done;
        ff_on_ = opt.steady_state;
        if (ff_on_) lane_.open(cores);
    }
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    result run();

private:
    live_dma& at(int s) { return dmas_[static_cast<std::size_t>(s)]; }
    // Moves core c and its live DMAs on by whole periods of the lane or a fold: `dt` in time, `starts`
    // of its DMA starts, `seqs` of every core's, `ops` of its ops, `steps` of its step values.
    void shift_core(int c, double dt, std::uint32_t starts, std::uint64_t seqs, std::uint64_t ops,
                    std::uint32_t steps) {
        const auto u = static_cast<std::size_t>(c);
        t_[u] += dt;
        const auto shift = [&](int sl) {
            live_dma& d = at(sl);
            d.ready += dt;
            d.begin += dt;
            d.id += starts;
            d.seq += seqs;
            d.ord += ops;
            d.step += steps;
            if (spans_.in_lane()) d.label = spans_.label(c, d.ord);
        };
        for (const int sl : live_[u].slots()) shift(sl);
        for (const int sl : sem_dmas_[u]) shift(sl);
        live_[u].shift_ids(starts);
        starts_[u] += starts;
        ord_[u] += ops;
    }

    // The next DMA event: the earliest latency end (the front of each core's queue) or channel
    // completion. Kept in scalar members: copying a small event struct made g++ emit overlapping
    // stores and loads that defeat store forwarding, which doubled the run time.
    void find_next_event();

    // Runs core c's ops while it is ready and strictly before the next DMA event (which a new DMA
    // may bring forward). Another core only affects this one through the DMAs it starts, which
    // cannot reach a channel before its next op's time + issue + latency, so core c may run ahead
    // of the others until the earliest of those: fewer switches between cores, the same times.
    // With zero issue and latency this is plain time order, ties going to the lower core.
    void run_core(int c);

    // Ops carry work, not time: an overhead op is one grid step's control overhead (the chip's),
    // a compute op names its work in the call's work table, which times_ converts (work_times).
    double busy_seconds(const op& o) {
        return o.kind == op_kind::overhead ? chip_.step_overhead_s : times_.seconds(o.work);
    }
    // ---- Semaphores (S60): per core, counted in the op's units (bytes for DMA semaphores) ----

    void check_sem(int c, const op& o) const;
    std::int64_t& sem_at(int c, std::uint32_t sem) {
        auto& v = sem_val_[static_cast<std::size_t>(c)];
        if (v.size() <= sem) v.resize(static_cast<std::size_t>(sem) + 1, 0);
        return v[sem];
    }
    std::int64_t sem_value(int c, std::uint32_t sem) const {
        const auto& v = sem_val_[static_cast<std::size_t>(c)];
        return sem < v.size() ? v[sem] : 0;
    }
    // Core c signals; true when that ended another core's wait (that core is ready again, at
    // core c's time).
    bool signal(int c, const op& o) {
        check_sem(c, o);
        if (o.core >= cores_ || o.bytes < 0)
            throw error("SIM2", "simulate",
                        "core " + std::to_string(c) + " signals core " + std::to_string(o.core) + " by " +
                            std::to_string(o.bytes),
                        "signal a simulated core by a non-negative amount");
        const bool blocked = state_[o.core] == core_state::blocked;
        raise(o.core, o.sem, o.bytes, t_[c]);
        return blocked && state_[o.core] == core_state::ready;
    }
    // Semaphore `sem` of core k goes up by n at time t: a wait it satisfies ends then.
    void raise(int k, std::uint32_t sem, std::int64_t n, double t);
    void wait_sem(int c, const op& o);

    void start_dma(int c, const op& o);

    // What a far DMA costs HBM, in bytes at B·η (docs/model.md, "DMA shape costs"): its bytes,
    // `dma_run_cost_bytes` per contiguous run and the descriptor's `dma_descriptor_s`.
    double hbm_cost(const op& o) const {
        const double bytes = static_cast<double>(o.bytes);
        const double runs = o.run == 0 ? 1.0 : std::ceil(bytes / o.run);
        return bytes + runs * chip_.dma_run_cost_bytes + desc_bytes_;
    }

    void wait_dma(int c, const op& o);

    void end_stream(int c);

    // ---- Steady state (options::steady_state, docs/model.md §11) --------------------------------
    //
    // The lane (steady_lane) finds periods of the running cores' ops and state and matches the
    // next ones against them; the engine records the state at each boundary and applies the
    // whole periods matched. Folded repeats (below) skip their own periods.

    // A DMA in flight as a boundary records it, relative to the clock t and to its core's count
    // of starts (`starts`): what a period must repeat of it (steady.hpp, same_snaps).
    [[nodiscard]] dma_snap snap_of(const live_dma& d, std::uint32_t starts, double t) const;

    // Records in b the state of cores `cs` (what same_state compares, and what a skip adds up):
    // their clocks relative to the lead's, DMAs in flight, semaphores, blocked waits, op counts,
    // the totals. Not the step values, rows or ops.
    void record_state(boundary& b, const core_set& cs);

    // Records the lane's next boundary (the lead about to run o, the first op of step o.step)
    // and looks for a period ending there; true when the lane takes over (holding o).
    [[gnu::noinline]] bool at_boundary(const op& o) {
        record_state(lane_.boundary_to_record(), lane_.cores());
        return lane_.close(o);
    }

    // Runs the lane, which holds the cores, to the end of its periods and applies them.
    [[gnu::noinline]] void run_lane() {
        const std::int64_t m = lane_.run();
        if (m > 0) apply(m);
        lane_.left(m);
        dirty_ = true;
    }

    // Advances every lane core and its DMAs by m periods of the cycle (state: equal, times
    // shifted), and the history as if they had been simulated.
    void apply(std::int64_t m);

    // Moves cores `cs`, their DMAs and the channels on by m periods that each took dt, started
    // starts[c] DMAs, made steps[c] step values and ran ops[c] ops on core c, added `per` to the
    // totals and, when `done`, completed a DMA (the lane's and the folds' skips).
    void skip_time(const core_set& cs, std::int64_t m, double dt, const per_core<std::uint32_t>& starts,
                   const per_core<std::uint32_t>& steps, const per_core<std::uint64_t>& ops, const tally& per,
                   bool done);

    // The next op of core c's fold (folds.hpp); false when the fold skipped periods instead
    // (`alone`: core c runs alone, without a timeline; the times and DMAs changed: back to run()
    // for the next event).
    bool next_folded(int c, op& o, bool alone);

    void start_transfer(int s, double t);

    void finish(int s, double t) {
        const live_dma& d = at(s);
        channel& ch = channels_[d.channel];
        ch.depart(t, dmas_);
        if (d.channel == 0 && ch.idle()) res_.hbm_busy_time += t - ch.busy_since();
        complete(s, t);
    }

    // The DMA `s` has moved its last byte at time t.
    void complete(int s, double t);

    const chip& chip_;
    work_times times_;
    double desc_bytes_ = 0;  // dma_descriptor_s as bytes at B·η
    int cores_;
    Source& src_;
    const options& opt_;
    result res_;
    std::vector<live_dma> dmas_;         // slots
    std::vector<int> free_;              // free slots
    per_core<live_list> live_;           // per core: started, not yet waited
    per_core<std::vector<int>> sem_dmas_;  // per core: DMAs into a semaphore in flight, in start order
    per_core<slot_queue> pending_;       // per core: in their latency, in start order
    std::array<channel, 1 + max_cores> channels_;  // HBM, then each core's on-chip path
    per_core<double> t_{};                         // when each core's next op starts (or it ended)
    per_core<core_state> state_{};
    per_core<int> wait_slot_ = each_core(-1);      // the DMA a blocked core waits on (-1: a semaphore)
    per_core<std::uint32_t> wait_sem_{};           // or the semaphore
    per_core<std::int64_t> wait_want_{};           // and the amount
    per_core<bool> wait_is_dma_{};                 // a DMA semaphore: the stall is exposed DMA
    per_core<std::vector<std::int64_t>> sem_val_;  // semaphore values per core
    per_core<std::uint32_t> wait_label_{};
    per_core<std::uint32_t> wait_step_{};
    per_core<wait_target> wait_on_{};  // op::waits_on of the DMA wait a core is blocked in
    step_rows book_{res_, opt_};       // the per-step rows (options::per_step)
    timeline_book spans_{res_, opt_};  // the timeline (options::timeline)
    std::uint64_t seq_ = 0;
    double last_done_ = 0;
    // The next DMA event (unless dirty_): its time, its DMA, and whether it completes or starts
    // transferring.
    double ev_t_ = never;
    int ev_slot_ = -1;
    bool ev_finish_ = false;
    bool dirty_ = true;
    std::int64_t orphans_ = 0;  // DMAs of ended streams still in flight
    // Steady state (see above).
    per_core<std::uint32_t> starts_{};  // DMA starts per core (ids are relative to it)
    bool ff_on_ = false;
    per_core<std::uint64_t> ord_{};                      // ops each core has run (simulated or skipped)
    per_core<std::uint64_t> wait_ord_{};                 // the op a blocked core waits in
    folds folds_;                                        // per core: the repeat op being made
    op_feed<Source> feed_{src_, spans_};  // each core's ops: the source's, or given back by the lane
    steady_lane<Source> lane_{feed_, book_, spans_, times_, starts_};
};

}  // namespace detail

}  // namespace ptpu::sim
