// Defines sim::detail::engine, the timing model's event simulator: its state and its small
// members. Its larger members are defined in engine_events_impl.hpp (pulling ops, the cores' and
// the DMA channels' events, semaphores), engine_steady_impl.hpp (the state a boundary records,
// the skips, folded repeats) and engine_lane_impl.hpp (the
// steady-state lane: recording boundaries, matching the cores' ops against the cycle, applying
// the periods skipped). The lane's history and its period search are sim/lane_history.hpp.
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
#include "ptpu/sim/lane_history.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/sim/steady.hpp"
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
        if (ff_on_) {
            history_.open(cores);
            // The lane's replays: this thread's last ones, emptied (their memory is what is
            // reused).
            for (std::size_t k = 0; k < static_cast<std::size_t>(cores); ++k)
                replays_[k] = ptpu::detail::take_empty_buffer<op>();
        }
    }
    ~engine() {
        for (std::size_t c = 0; c < max_cores; ++c) ptpu::detail::put_buffer(replays_[c]);
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

    // Core c's next batch for a lane comparing it with a recorded period: taken lazily (the
    // runner may hand back a repeat of its last step without writing its ops) when the lane
    // expects a repeat, never with a timeline (every op's label is recorded as it is pulled).
    // `repeated`: the batch is such a repeat.
    struct pulled_batch {
        batch b;
        bool repeated;
    };
    pulled_batch next_lane_batch(int c, bool expect_repeat) {
        const bool lazy = expect_repeat && !spans_.in_lane();
        const batch n = src_.next_batch(c, lazy);
        if (n.ops.empty()) return {n, false};
        if (spans_.in_lane()) spans_.pulled(c, n.ops);
        return {n, lazy && n.repeat && n.whole_step};
    }

    // The core's next op from the source, a batch at a time.
    bool pull(int c, op& o);

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
    // What the lane compares of an op's work: a compute op's canonical work number (two
    // works of equal time are the same to them), any other op's work field as it is.
    std::uint32_t canon(const op& o) { return o.kind == op_kind::compute ? times_.canonical(o.work) : o.work; }
    // Whether ops x and y of one kind do work of equal time: the same number (a canonical number
    // is its own: a recorded op's equals a pulled op's of that work), or equal canonical ones.
    bool same_work(const op& x, const op& y) { return x.work == y.work || canon(x) == canon(y); }

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
    void signal(int c, const op& o) {
        check_sem(c, o);
        if (o.core >= cores_ || o.bytes < 0)
            throw error("SIM2", "simulate",
                        "core " + std::to_string(c) + " signals core " + std::to_string(o.core) + " by " +
                            std::to_string(o.bytes),
                        "signal a simulated core by a non-negative amount");
        raise(o.core, o.sem, o.bytes, t_[c]);
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
    // The lane follows the cores still running (when no ended core's DMA still moves): their
    // state repeats only as a whole, since they share HBM. At every step boundary of the lead
    // core, the lowest-numbered of them (about to run the first op of a new step value), the
    // engine records the lane's state relative to the lead's clock: each DMA started and not yet
    // waited, by id relative to its core's count of starts, with its phase, bytes and what is
    // left of it (latency until ready, or bytes still to move); the semaphores; the other cores'
    // clocks and blocked waits relative to the lead's; and the ops each lane core runs until the
    // lead's next boundary. When the state equals the one recorded p boundaries earlier
    // (p <= max_period, the shortest first) and the ops of the last p boundaries repeat the p
    // before them, the next p boundaries evolve the same way if the cores bring the same ops
    // again (ids and step numbers relative): the engine's decisions depend only on that state
    // and on the ops. The lane then pulls and compares every lane core's ops of each period (the
    // lead's up to its next step value, each other core's the cycle's number), and at the first
    // that differs, or a stream's end, applies all whole periods at once (their time, DMA starts
    // and totals) and gives the ops pulled since back to be simulated. Not through a step
    // signalling another core's semaphore, nor, with more than one lane core, within a fold.
    // The history of boundaries, the period search and the cycle are lane_history's; the engine
    // records each boundary's state into it and does the matching and the skip.

    // The result's totals now (a boundary's snapshot).
    tally totals() const;
    // Adds m periods that each add `per` to the result's totals (the lane's and the folds' skips).
    void add_periods(const tally& per, std::int64_t m) {
        const auto md = static_cast<double>(m);
        res_.op_count += m * per.ops;
        res_.steady_ops += m * per.ops;
        res_.dma_count += m * per.dmas;
        res_.hbm_bytes += m * per.hbm_bytes;
        res_.onchip_bytes += m * per.onchip_bytes;
        for (int c = 0; c < cores_; ++c) {
            const auto u = static_cast<std::size_t>(c);
            res_.busy_overhead[u] += md * per.overhead[u];
            res_.busy_issue[u] += md * per.issue[u];
            res_.busy_compute[u] += md * per.compute[u];
            res_.wait_dma[u] += md * per.wait[u];
            res_.wait_sem[u] += md * per.wait_sem[u];
        }
        for (std::size_t w = 0; w < per.wait_by_operand.size(); ++w)
            res_.wait_by_operand[w] += md * per.wait_by_operand[w];
        res_.hbm_busy_time += md * per.hbm_busy;
    }

    // A DMA in flight as a boundary records it, relative to the clock t and to its core's count
    // of starts (`starts`): what a period must repeat of it (steady.hpp, same_snaps).
    [[nodiscard]] dma_snap snap_of(const live_dma& d, std::uint32_t starts, double t) const;

    // Records in b the state of cores `cs` (what same_state compares, and what a skip adds up):
    // their clocks relative to the lead's, DMAs in flight, semaphores, blocked waits, op counts,
    // the totals. Not the step values, rows or ops.
    void record_state(boundary& b, const core_set& cs);

    // Records the lane's next boundary (the lead about to run o, the first op of step o.step)
    // and looks for a period ending there; true when the lane takes over (holding o).
    [[gnu::noinline]] bool at_boundary(const op& o);

    // The period of p boundaries the history found becomes the cycle to match.
    [[gnu::noinline]] void enter_lane(int p, const op& first);

    // The lane by whole batches: when the lead's boundary is the first op of a whole-step batch,
    // and each other core's ops of the cycle fall into its source's batches so that its next q
    // batches are known: the cycle's batches after its first cut, then the batch the core is in
    // (its part before the boundary ends the cycle, its part after begins the next period, which
    // must be the cycle's start).
    [[gnu::noinline]] bool batches_ready(int p);

    // Batch x is d one period k later: ids relative to `base`, steps to `step0`.
    bool same_batch_ops(std::span<const op> x, std::span<const op> d, std::uint32_t base,
                        std::uint32_t step0) {
        if (x.size() != d.size()) return false;
        for (std::size_t k = 0; k < x.size(); ++k)
            if (!matches(x[k], d[k], base, step0)) return false;
        return true;
    }

    // The lane a batch at a time: batch b of a period must equal the cycle's batch b (ids and
    // steps relative); a batch the source says repeats the previous one matches when the cycle's
    // batch b repeats its batch b - 1, without reading it. At the end of each whole period the
    // sources make as many more in bulk as all of them can (period_source), which the lane then
    // counts as skipped (not with a timeline: each skipped op's label is recorded as it is
    // pulled). On a mismatch or a stream's end, the matched batches of the unfinished period are
    // rebuilt from the cycle for every lane core.
    [[gnu::noinline]] void fast_forward_batches();

    // x is the cycle's op y one period later (DMA ids relative to `base`, steps to `step0`).
    // (With a timeline, labels are not compared: they do not time, and the replicated spans
    // take theirs from the ops pulled.)
    // (Inlined: it is the lane's inner loop, once per op pulled.)
    [[gnu::always_inline]] bool matches(const op& x, const op& y, std::uint32_t base, std::uint32_t step0);

    // Pulls and compares whole periods op by op; at the first op that differs or a stream's end,
    // applies them and leaves the ops pulled since to be simulated. (Ops are pulled straight into
    // the replays and compared field by field: copying whole ops that the source has just
    // written field by field stalls on store forwarding.)
    [[gnu::noinline]] void fast_forward();

    // The end of a lane run: applies the whole periods skipped (none: look again in a period);
    // what the replays hold is then simulated as usual.
    [[gnu::noinline]] void leave_lane(const std::vector<op>& lead_ops);

    // Advances every lane core and its DMAs by m periods of the cycle (state: equal, times
    // shifted), and the history as if they had been simulated.
    [[gnu::noinline]] void apply(std::int64_t m);

    // Moves cores `cs`, their DMAs and the channels on by m periods that each took dt, started
    // starts[c] DMAs, made steps[c] step values and ran ops[c] ops on core c, added `per` to the
    // totals and, when `done`, completed a DMA (the lane's and the folds' skips).
    void skip_time(const core_set& cs, std::int64_t m, double dt, const per_core<std::uint32_t>& starts,
                   const per_core<std::uint32_t>& steps, const per_core<std::uint64_t>& ops, const tally& per,
                   bool done);

    // ---- Folded repeats (op_kind::repeat) ------------------------------------------------------
    //
    // A repeat op stands for `bytes` more repetitions of the `sem` ops after it. The first
    // repetition comes from the stream and is recorded as it is simulated; the others are made
    // from the record, their DMA ids `dma` higher each time (and inner rows `sub` higher), and
    // simulated as the stream's ops would be. On a core running alone without a timeline, the
    // state at the start of each repetition is recorded: once it equals the state p repetitions
    // earlier, the next p repetitions repeat those p exactly (the same ops relative to the
    // core's starts, from the same state), so every whole period of p left is skipped at once
    // (skip_time; with per-step rows, step_rows::replicate as far as step_rows::fold_fit allows) and the
    // rest simulated.
    struct fold {
        std::uint32_t len = 0;       // ops per repetition
        std::uint32_t ids = 0;       // DMA ids per repetition
        std::uint32_t step = 0;      // the repeat op's step value, every op's
        std::uint32_t rows = 0;      // inner rows per repetition (op::sub advances by them)
        std::int64_t left = 0;       // repetitions still to make, the current one included
        std::uint32_t made = 0;      // the current repetition's number (its ids: + made * ids)
        std::uint32_t pos = 0;       // its next op
        std::int64_t marks = 0;      // states recorded since the fold began or last skipped
        std::vector<op> ops;         // the first repetition
        std::vector<boundary> seen;  // the last fold_ring states, at repetition starts
    };
    static constexpr std::int64_t fold_period = 16, fold_ring = fold_period + 1;
    void begin_fold(int c, const op& o);
    void record_folded(int c, const op& o);
    // The next op of core c's fold; false when the fold skipped periods instead (the times and
    // DMAs changed: back to run() for the next event).
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
    std::int64_t orphans_ = 0;                 // DMAs of ended streams still in flight
    per_core<std::span<const op>> in_{};       // per core: the source's current batch
    per_core<std::size_t> in_pos_{};           // and the next op in it
    per_core<bool> in_whole_{};                // and whether it holds exactly one step's ops
    // Steady state (see above).
    per_core<std::uint32_t> starts_{};  // DMA starts per core (ids are relative to it)
    bool ff_on_ = false;
    per_core<std::uint64_t> ord_{};                      // ops each core has run (simulated or skipped)
    per_core<std::uint64_t> wait_ord_{};                 // the op a blocked core waits in
    per_core<bool> ends_{};                              // per core: the source said its stream has ended
    lane_history history_;                               // the lane's boundaries and the cycle found there
    per_core<std::uint32_t> last_step_{};  // step value of each core's last op
    bool fast_ = false;                    // the lane holds the cores
    std::int64_t skipped_ = 0;             // whole periods matched since
    // A lane core's batch of the period (cores other than the lead, by_batch_).
    struct period_batch {
        std::vector<op> ops;     // relative to its first start and its first op's step
        std::uint32_t sb = 0;    // its first start relative to the period's start
        std::uint32_t gb = 0;    // its first op's step relative to the period's start
        bool repeats = false;    // equals its predecessor one step on (a lazy batch matches)
    };
    bool by_batch_ = false;                          // the lane compares whole batches
    per_core<std::vector<period_batch>> batches_;    // the other lane cores' batches of a period
    std::vector<std::uint8_t> lead_same_;            // the lead's boundary batch k repeats batch k - 1
    per_core<std::size_t> batch_pos_{};      // the other cores' positions in their batch at the boundary
    per_core<fold> folds_;                   // per core: the repeat op being made
    // Per core, where its fold is: 0 no repeat op (or all its repetitions made), 1 recording the
    // first repetition, 2 making the others from it. One byte, read at every op.
    per_core<std::uint8_t> fold_at_{};
    per_core<std::vector<op>> replays_;  // per core: ops pulled by the lane, to simulate
    per_core<std::size_t> replay_at_{};
};

}  // namespace detail

}  // namespace ptpu::sim
