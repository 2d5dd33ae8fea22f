// Defines ptpu::sim::simulate, the event-level timing model: in-order TensorCore streams that
// issue and wait on DMAs, and DMAs that share the chip's HBM bandwidth (docs/model.md).
//
// The model knows nothing about pallas_call: it pulls a generic stream of ops per core from a
// source, lazily and in simulated-time order, so the executor behind the source can run kernel
// bodies on demand.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/sim/cost.hpp"

namespace ptpu::sim {

enum class op_kind : std::uint8_t { overhead, dma_start, dma_wait, compute };

/// One operation of a core stream.
struct op {
    op_kind kind = op_kind::overhead;
    std::uint32_t dma = 0;    ///< dma_start/dma_wait: the DMA's id, unique among a core's live DMAs
    double seconds = 0;       ///< overhead/compute: busy time of the core stream
    std::int64_t bytes = 0;   ///< dma_start: bytes moved (0: latency only)
    bool far = true;          ///< dma_start: one end is HBM (shares HBM); false: VMEM->VMEM
    std::uint32_t label = 0;  ///< opaque, passed back in the timeline
    std::uint32_t step = 0;   ///< opaque grid step number, passed back (per-step breakdown)
};

/// Anything that hands out the ops of each core in order; `next` returns false at a stream's end.
/// simulate() asks for a core's next op only once the core has reached it in simulated time.
template <class S>
concept op_source = requires(S& s, int core, op& out) {
    { s.next(core, out) } -> std::convertible_to<bool>;
};

struct options {
    bool timeline = false;  ///< record result::timeline
    bool per_step = false;  ///< record result::steps
    cost_model costs = default_costs;
};

/// One interval of the timeline. Stream spans: overhead, issue (kind dma_start), compute, wait
/// (kind dma_wait, only when the core really blocked). DMA spans (track dma, kind dma_start): from
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

/// Time of one core in one grid step: a row per run of consecutive ops with the same step value.
struct step_times {
    int core = 0;
    std::uint32_t step = 0;
    double begin = 0;  ///< start of the first op carrying this step value
    double end = 0;    ///< end of the last one (for a wait: when the core unblocked)
    double overhead = 0;
    double issue = 0;
    double compute = 0;
    double wait = 0;
};

struct result {
    int cores = 0;
    /// Kernel time on the device: the last core stream end or DMA completion, whichever is later.
    double device_time = 0;
    /// End of each core's stream: its last op. Dangling DMAs are not waited for, so that
    /// core_time = busy_overhead + busy_issue + busy_compute + wait_dma holds for every core.
    std::array<double, 2> core_time{};
    std::array<double, 2> busy_overhead{};
    std::array<double, 2> busy_issue{};    ///< dma_issue_s per DMA start
    std::array<double, 2> busy_compute{};
    std::array<double, 2> wait_dma{};      ///< blocked in waits: exposed DMA time
    std::int64_t hbm_bytes = 0;            ///< bytes of far DMAs
    std::int64_t onchip_bytes = 0;         ///< bytes of VMEM->VMEM DMAs
    double hbm_busy_time = 0;              ///< time with at least one far transfer moving bytes
    std::int64_t dma_count = 0;
    std::int64_t dangling_dmas = 0;        ///< started but never waited (a semaphore leak, 39)
    std::int64_t op_count = 0;             ///< ops pulled from the source
    std::vector<span> timeline;            ///< when options::timeline
    std::vector<step_times> steps;         ///< when options::per_step, in stream order per core
};

namespace detail {

inline constexpr double never = std::numeric_limits<double>::infinity();

enum class dma_phase : std::uint8_t { latency, transfer, done };

// A DMA from its start until its wait (or, for a dangling one, its completion).
struct live_dma {
    double ready;  // end of the latency: the transfer starts
    double tag;    // transfer: its channel's virtual byte count at which it completes
    double begin;  // end of the issue: the DMA exists
    std::int64_t bytes;
    std::uint32_t id;
    std::uint32_t label;
    std::uint32_t step;
    std::uint8_t core;
    std::uint8_t channel;  // 0: HBM; 1 + core: that core's on-chip path
    dma_phase phase;
    bool orphan;           // its core's stream has ended: nobody will wait for it
};

// A bandwidth shared equally by its active transfers (processor sharing). Instead of decrementing
// every transfer's remaining bytes at each event, `v` counts the bytes each active transfer has
// received since the channel was last idle; a transfer joining at v completes when v reaches
// v + bytes. Equal tags complete at exactly the same time.
struct channel {
    double bw = 0;          // B/s
    double v = 0;
    double t_last = 0;      // time at which v was last brought up to date
    int active = 0;
    double busy_since = 0;  // start of the current busy period

    void advance(double t) {
        if (active > 0) v += (t - t_last) * bw / active;
        t_last = t;
    }
    [[nodiscard]] double finish_time(double tag) const {
        const double left = tag > v ? tag - v : 0.0;  // rounding may leave v a hair past tag
        return t_last + left * active / bw;
    }
};

enum class core_state : std::uint8_t { ready, blocked, done };

// The event order: time, then core, then DMA id; DMA events come before core events at equal time
// (a wait at t sees a completion at t).
struct dma_event {
    double t = never;
    int index = -1;
    bool finish = false;  // false: the latency ends and the transfer starts
};

constexpr bool before(double t, int core, std::uint32_t id, double t2, int core2,
                      std::uint32_t id2) {
    if (t != t2) return t < t2;
    if (core != core2) return core < core2;
    return id < id2;
}

template <class Source>
class engine {
public:
    engine(const chip& c, int cores, Source& src, const options& opt)
        : chip_(c), cores_(cores), src_(src), opt_(opt) {
        dmas_.reserve(32);
        const double hbm = c.hbm_bytes_per_s * c.dma_efficiency;
        const double onchip = onchip_bytes_per_s(c, opt.costs);
        channels_[0].bw = hbm;
        channels_[1].bw = onchip;
        channels_[2].bw = onchip;
        res_.cores = cores;
        for (int k = 0; k < 2; ++k) state_[k] = k < cores ? core_state::ready : core_state::done;
    }

    result run() {
        for (;;) {
            const dma_event ev = next_dma_event();
            int c = -1;
            double tc = never;
            for (int k = 0; k < cores_; ++k) {
                if (state_[k] == core_state::ready && t_[k] < tc) {
                    c = k;
                    tc = t_[k];
                }
            }
            if (c >= 0 && tc < ev.t) {
                run_core(c, ev.t);
            } else if (ev.index >= 0) {
                if (ev.finish)
                    finish(static_cast<std::size_t>(ev.index), ev.t);
                else
                    start_transfer(static_cast<std::size_t>(ev.index), ev.t);
            } else if (c >= 0) {
                run_core(c, never);
            } else {
                break;
            }
        }
        res_.device_time = last_done_;
        for (int k = 0; k < cores_; ++k) {
            res_.core_time[k] = t_[k];
            if (t_[k] > res_.device_time) res_.device_time = t_[k];
        }
        return std::move(res_);
    }

private:
    // The earliest pending DMA event: a latency ending, or a channel's next completion.
    dma_event next_dma_event() const {
        dma_event ev;
        int ev_core = 0;
        std::uint32_t ev_id = 0;
        std::array<int, 3> first{-1, -1, -1};  // per channel: the transfer with the smallest tag
        const std::size_t n = dmas_.size();
        for (std::size_t i = 0; i < n; ++i) {
            const live_dma& d = dmas_[i];
            if (d.phase == dma_phase::latency) {
                if (before(d.ready, d.core, d.id, ev.t, ev_core, ev_id)) {
                    ev = {d.ready, static_cast<int>(i), false};
                    ev_core = d.core;
                    ev_id = d.id;
                }
            } else if (d.phase == dma_phase::transfer) {
                int& f = first[d.channel];
                if (f < 0) {
                    f = static_cast<int>(i);
                } else {
                    const live_dma& g = dmas_[static_cast<std::size_t>(f)];
                    if (before(d.tag, d.core, d.id, g.tag, g.core, g.id)) f = static_cast<int>(i);
                }
            }
        }
        for (std::size_t ch = 0; ch < 3; ++ch) {
            if (first[ch] < 0) continue;
            const live_dma& d = dmas_[static_cast<std::size_t>(first[ch])];
            const double t = channels_[ch].finish_time(d.tag);
            if (before(t, d.core, d.id, ev.t, ev_core, ev_id)) {
                ev = {t, first[ch], true};
                ev_core = d.core;
                ev_id = d.id;
            }
        }
        return ev;
    }

    // Runs core c's ops while it is ready and strictly before `limit` (the next DMA event) and
    // the other core's next op (ties go to the lower core). New DMAs may bring the limit forward.
    void run_core(int c, double limit) {
        const int other = 1 - c;
        const bool other_ready = other < cores_ && state_[other] == core_state::ready;
        const double t_other = other_ready ? t_[other] : never;
        double& t = t_[c];
        while (state_[c] == core_state::ready && t < limit &&
               (c < other ? t <= t_other : t < t_other)) {
            op o;
            if (!src_.next(c, o)) {
                end_stream(c);
                return;
            }
            ++res_.op_count;
            step_times* row = opt_.per_step ? step_row(c, o.step) : nullptr;
            const double begin = t;
            switch (o.kind) {
            case op_kind::overhead:
            case op_kind::compute: {
                check_seconds(o);
                t += o.seconds;
                const bool ovh = o.kind == op_kind::overhead;
                (ovh ? res_.busy_overhead : res_.busy_compute)[c] += o.seconds;
                if (row) (ovh ? row->overhead : row->compute) += o.seconds;
                break;
            }
            case op_kind::dma_start: {
                const double ready = start_dma(c, o);
                if (row) row->issue += chip_.dma_issue_s;
                if (ready < limit) limit = ready;
                break;
            }
            case op_kind::dma_wait:
                wait_dma(c, o);
                break;
            default:
                throw error("SIM2", "simulate",
                            "an op has an unknown op_kind (" +
                                std::to_string(static_cast<int>(o.kind)) + ")",
                            "use overhead, dma_start, dma_wait or compute");
            }
            if (row) row->end = t;
            if (opt_.timeline && (o.kind != op_kind::dma_wait || t > begin))
                res_.timeline.push_back({c, span::track::stream, o.kind, o.label, o.step, o.dma,
                                         begin, t, 0, true});
        }
    }

    void check_seconds(const op& o) const {
        if (!detail::finite_non_negative(o.seconds))
            throw error("SIM2", "simulate",
                        "an overhead or compute op has negative or non-finite seconds (" +
                            std::to_string(o.seconds) + ")",
                        "charge finite, non-negative time");
    }

    step_times* step_row(int c, std::uint32_t step) {
        int& r = row_[c];
        if (r < 0 || res_.steps[static_cast<std::size_t>(r)].step != step) {
            r = static_cast<int>(res_.steps.size());
            res_.steps.push_back({c, step, t_[c], t_[c], 0, 0, 0, 0});
        }
        return &res_.steps[static_cast<std::size_t>(r)];
    }

    int find(int c, std::uint32_t id) const {
        const std::size_t n = dmas_.size();
        for (std::size_t i = 0; i < n; ++i) {
            const live_dma& d = dmas_[i];
            if (d.id == id && d.core == c && !d.orphan) return static_cast<int>(i);
        }
        return -1;
    }

    void remove(std::size_t i) {
        dmas_[i] = dmas_.back();
        dmas_.pop_back();
    }

    double start_dma(int c, const op& o) {
        if (o.bytes < 0)
            throw error("SIM2", "simulate",
                        "DMA " + std::to_string(o.dma) + " of core " + std::to_string(c) +
                            " moves a negative number of bytes (" + std::to_string(o.bytes) + ")",
                        "use bytes >= 0");
        if (find(c, o.dma) >= 0)
            throw error("SIM1", "simulate",
                        "core " + std::to_string(c) + " starts DMA " + std::to_string(o.dma) +
                            " again while it is in flight (not yet waited); its semaphore would "
                            "count two completions (pallas-semantics check 39)",
                        "wait on a DMA before reusing its id");
        double& t = t_[c];
        t += chip_.dma_issue_s;
        res_.busy_issue[c] += chip_.dma_issue_s;
        ++res_.dma_count;
        (o.far ? res_.hbm_bytes : res_.onchip_bytes) += o.bytes;
        const double ready = t + chip_.dma_latency_s;
        dmas_.push_back({ready, 0.0, t, o.bytes, o.dma, o.label, o.step, static_cast<std::uint8_t>(c),
                         static_cast<std::uint8_t>(o.far ? 0 : 1 + c), dma_phase::latency, false});
        return ready;
    }

    void wait_dma(int c, const op& o) {
        const int i = find(c, o.dma);
        if (i < 0)
            throw error("SIM1", "simulate",
                        "core " + std::to_string(c) + " waits on DMA " + std::to_string(o.dma) +
                            ", which it never started or already waited; on a TPU this "
                            "over-wait hangs (pallas-semantics check 39)",
                        "wait exactly once on each started DMA");
        live_dma& d = dmas_[static_cast<std::size_t>(i)];
        if (d.phase == dma_phase::done) {
            remove(static_cast<std::size_t>(i));
            return;
        }
        state_[c] = core_state::blocked;
        wait_id_[c] = o.dma;
        wait_label_[c] = o.label;
        wait_step_[c] = o.step;
    }

    void end_stream(int c) {
        state_[c] = core_state::done;
        for (std::size_t i = 0; i < dmas_.size();) {
            live_dma& d = dmas_[i];
            if (d.core != c || d.orphan) {
                ++i;
                continue;
            }
            ++res_.dangling_dmas;
            if (d.phase == dma_phase::done) {
                remove(i);
            } else {
                d.orphan = true;
                ++i;
            }
        }
    }

    void start_transfer(std::size_t i, double t) {
        live_dma& d = dmas_[i];
        if (d.bytes == 0) {
            finish(i, t);
            return;
        }
        channel& ch = channels_[d.channel];
        if (ch.active == 0) {
            ch.v = 0;  // restart the virtual clock: keeps it small and exact
            ch.busy_since = t;
        } else {
            ch.advance(t);
        }
        ch.t_last = t;
        d.tag = ch.v + static_cast<double>(d.bytes);
        d.phase = dma_phase::transfer;
        ++ch.active;
    }

    void finish(std::size_t i, double t) {
        live_dma& d = dmas_[i];
        if (d.phase == dma_phase::transfer) {
            channel& ch = channels_[d.channel];
            ch.v = d.tag;
            ch.t_last = t;
            if (--ch.active == 0) {
                ch.v = 0;
                if (d.channel == 0) res_.hbm_busy_time += t - ch.busy_since;
            }
        }
        if (t > last_done_) last_done_ = t;
        if (opt_.timeline)
            res_.timeline.push_back({d.core, span::track::dma, op_kind::dma_start, d.label, d.step,
                                     d.id, d.begin, t, d.bytes, d.channel == 0});
        const int c = d.core;
        if (d.orphan) {
            remove(i);
        } else if (state_[c] == core_state::blocked && wait_id_[c] == d.id) {
            const double begin = t_[c];
            t_[c] = t;
            state_[c] = core_state::ready;
            res_.wait_dma[c] += t - begin;
            if (opt_.per_step) {
                step_times& row = res_.steps[static_cast<std::size_t>(row_[c])];
                row.wait += t - begin;
                row.end = t;
            }
            if (opt_.timeline && t > begin)
                res_.timeline.push_back({c, span::track::stream, op_kind::dma_wait, wait_label_[c],
                                         wait_step_[c], d.id, begin, t, 0, true});
            remove(i);
        } else {
            d.phase = dma_phase::done;
        }
    }

    const chip& chip_;
    int cores_;
    Source& src_;
    const options& opt_;
    result res_;
    std::vector<live_dma> dmas_;
    std::array<channel, 3> channels_{};
    std::array<double, 2> t_{};  // when each core's next op starts (or its stream ended)
    std::array<core_state, 2> state_{};
    std::array<std::uint32_t, 2> wait_id_{};
    std::array<std::uint32_t, 2> wait_label_{};
    std::array<std::uint32_t, 2> wait_step_{};
    std::array<int, 2> row_{-1, -1};  // current per-step row of each core
    double last_done_ = 0;
};

}  // namespace detail

/// Simulates `cores` TensorCore streams of chip `c`, pulling their ops from `src` (docs/model.md).
/// Throws H1 for an invalid chip, C3 for an invalid cost model, SIM3 when `cores` is not in
/// [1, min(2, c.cores_per_chip)], SIM2 for a malformed op and SIM1 for a wait on a DMA that is not
/// in flight or a DMA id started twice while in flight.
template <op_source Source>
result simulate(const chip& c, int cores, Source& src, const options& opt = {}) {
    ptpu::validate(c);
    validate(opt.costs);
    if (cores < 1 || cores > 2 || cores > c.cores_per_chip)
        throw error("SIM3", "simulate",
                    "cores is " + std::to_string(cores) + " but chip " +
                        std::string(ptpu::detail::name_of(c)) + " has " +
                        std::to_string(c.cores_per_chip) + " TensorCore(s)",
                    "simulate 1 core, or 2 on a dual-TensorCore chip");
    return detail::engine<Source>(c, cores, src, opt).run();
}

}  // namespace ptpu::sim
