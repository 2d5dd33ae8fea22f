// Defines sim::detail::engine, the timing model's event simulator: its members and its small
// member functions. The larger ones are defined in engine_events_impl.hpp (running the cores'
// ops, the DMA channels' events, semaphores). Its state is an event_state (event_state.hpp). The
// parts beside it are classes of their own: where each core's ops come from (op_feed.hpp), the
// steady-state lane (steady_lane.hpp, with its history in lane_history.hpp), folded repeats
// (folds.hpp), what both do to the state (period_skip.hpp), the per-step rows (step_rows.hpp),
// the timeline (timeline_book.hpp) and the DMA channels (channel.hpp).
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
#include "ptpu/sim/event_state.hpp"
#include "ptpu/sim/folds.hpp"
#include "ptpu/sim/op_feed.hpp"
#include "ptpu/sim/period_skip.hpp"
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

// The simulation proper. A core's DMAs still in their latency end in start order (a core's time
// only grows), and each channel keeps its next completion: the next DMA event is the earliest
// of at most 1 + 2 x cores candidates (each core's latency queue, HBM and each core's on-chip
// path).
template <class Source>
class engine {
public:
    engine(const chip& c, int cores, Source& src, const options& opt)
        : chip_(c), times_(c, opt.costs, opt.works), cores_(cores), src_(src), opt_(opt) {
        st_.dmas.reserve(64);
        st_.free_slots.reserve(64);
        for (auto& l : st_.live) l.reserve(32);
        const double onchip = onchip_bytes_per_s(c, opt.costs);
        st_.channels[0].set_bandwidth(c.hbm_bytes_per_s * c.dma_efficiency);
        desc_bytes_ = c.dma_descriptor_s * c.hbm_bytes_per_s * c.dma_efficiency;
        for (int k = 1; k <= cores; ++k) st_.channels[static_cast<std::size_t>(k)].set_bandwidth(onchip);
        res_.cores = cores;
        for (int k = 0; k < static_cast<int>(max_cores); ++k)
            st_.state[static_cast<std::size_t>(k)] = k < cores ? core_state::ready : core_state::done;
        ff_on_ = opt.steady_state;
        if (ff_on_) lane_.open(cores, opt_.signals_across_cores);
    }
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    result run();

private:
    live_dma& at(int s) { return st_.at(s); }
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
        auto& v = st_.sem_val[static_cast<std::size_t>(c)];
        if (v.size() <= sem) v.resize(static_cast<std::size_t>(sem) + 1, 0);
        return v[sem];
    }
    std::int64_t sem_value(int c, std::uint32_t sem) const {
        const auto& v = st_.sem_val[static_cast<std::size_t>(c)];
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
        const bool blocked = st_.state[o.core] == core_state::blocked;
        raise(o.core, o.sem, o.bytes, st_.t[c]);
        return blocked && st_.state[o.core] == core_state::ready;
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
    // next ones against them; folded repeats (folds) find periods of their repetitions. What
    // both record of the state and how whole periods move it on is period_skip's.

    // Records the lane's next boundary (the lead about to run o, the first op of step o.step)
    // and looks for a period ending there; true when the lane takes over (holding o).
    [[gnu::noinline]] bool at_boundary(const op& o) {
        skip_.record(lane_.boundary_to_record(), lane_.cores());
        return lane_.close(o);
    }

    // Runs the lane, which holds the cores, to the end of its periods and applies them.
    [[gnu::noinline]] void run_lane() {
        const std::int64_t m = lane_.run();
        if (m > 0) skip_.apply(lane_.history(), lane_.last_steps(), m);
        lane_.left(m);
        dirty_ = true;
    }

    void start_transfer(int s, double t);

    void finish(int s, double t) {
        const live_dma& d = at(s);
        channel& ch = st_.channels[d.channel];
        ch.depart(t, st_.dmas);
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
    event_state st_;                   // the cores, their semaphores and DMAs, the channels
    step_rows book_{res_, opt_};       // the per-step rows (options::per_step)
    timeline_book spans_{res_, opt_};  // the timeline (options::timeline)
    // The next DMA event (unless dirty_): its time, its DMA, and whether it completes or starts
    // transferring.
    double ev_t_ = never;
    int ev_slot_ = -1;
    bool ev_finish_ = false;
    bool dirty_ = true;
    std::int64_t orphans_ = 0;  // DMAs of ended streams still in flight
    // Steady state (see above).
    bool ff_on_ = false;
    folds folds_;                                        // per core: the repeat op being made
    period_skip skip_{st_, res_, book_, spans_, opt_};   // the state recorded, and moved on by periods
    op_feed<Source> feed_{src_, spans_};  // each core's ops: the source's, or given back by the lane
    steady_lane<Source> lane_{feed_, book_, spans_, times_, st_.starts};
};

}  // namespace detail

}  // namespace ptpu::sim
