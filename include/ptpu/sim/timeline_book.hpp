// Defines the timing model's timeline (options::timeline) as the engine records it: its spans
// and, with the steady-state lane on, what a skipped period needs to record its spans again
// (docs/model.md §11). A skipped period records the spans its cycle recorded, moved by the
// period's time, steps and DMA starts (per core). Labels do not time, so the lane compares ops
// without them; each span's label is then that of the op it stands for (a stream span's op, a
// DMA's start, a blocking wait) in the skipped period, kept as the ops were pulled: op k of core
// c's stream has label labels_[c][k], and span i of the timeline stands for op ord_[i].
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ptpu/sim/result.hpp"
#include "ptpu/sim/step_rows.hpp"

namespace ptpu::sim::detail {

class timeline_book {
public:
    timeline_book(result& r, const options& opt)
        : res_(r), opt_(opt), lane_(opt.steady_state && opt.timeline) {}
    timeline_book(const timeline_book&) = delete;
    timeline_book& operator=(const timeline_book&) = delete;

    // Whether the lane runs with a timeline: each op's label is kept as it is pulled.
    [[nodiscard]] bool in_lane() const { return lane_; }
    [[nodiscard]] std::size_t size() const { return res_.timeline.size(); }

    // Records span x, standing for op `ord` of its core's stream.
    void push(const span& x, std::uint64_t ord) {
        if (res_.timeline.size() == res_.timeline.capacity())
            within_budget(res_, opt_, 0, res_.timeline.size() + 1, x.step);
        res_.timeline.push_back(x);
        if (lane_) ord_.push_back(ord);
    }
    // Core c's ops pulled: their labels, in stream order.
    void pulled(int c, std::span<const op> b) {
        std::vector<std::uint32_t>& v = labels_[static_cast<std::size_t>(c)];
        for (const op& o : b) v.push_back(o.label);
    }
    void pulled(int c, const op& o) { labels_[static_cast<std::size_t>(c)].push_back(o.label); }
    // The label of op `ord` of core c's stream.
    [[nodiscard]] std::uint32_t label(int c, std::uint64_t ord) const {
        return labels_[static_cast<std::size_t>(c)][ord];
    }
    // Ops the lane gives back to be simulated are the last ones pulled for core c; rebuilt from
    // the cycle, they take back the labels they were pulled with.
    void relabel_tail(int c, std::vector<op>& r) const {
        if (!lane_) return;
        const std::vector<std::uint32_t>& v = labels_[static_cast<std::size_t>(c)];
        const std::size_t first = v.size() - r.size();
        for (std::size_t i = 0; i < r.size(); ++i) r[i].label = v[first + i];
    }
    // Appends m periods' spans: those the cycle recorded, in [s0, s1), moved per period by dt
    // and, for each core, by its DMA starts, steps and ops.
    [[gnu::noinline]] void replicate(std::size_t s0, std::size_t s1, std::int64_t m, double dt,
                                     const per_core<std::uint32_t>& starts,
                                     const per_core<std::uint32_t>& steps,
                                     const per_core<std::uint64_t>& ops) {
        if (!opt_.timeline || m == 0 || s1 == s0) return;
        const std::size_t add = static_cast<std::size_t>(m) * (s1 - s0);
        within_budget(res_, opt_, 0, add, res_.timeline[s1 - 1].step);
        res_.timeline.reserve(res_.timeline.size() + add);
        ord_.reserve(ord_.size() + add);
        for (std::int64_t k = 1; k <= m; ++k) {
            const double shift = static_cast<double>(k) * dt;
            const auto ku = static_cast<std::uint32_t>(k);
            for (std::size_t i = s0; i < s1; ++i) {
                span x = res_.timeline[i];
                const auto c = static_cast<std::size_t>(x.core);
                const std::uint64_t ord = ord_[i] + static_cast<std::uint64_t>(k) * ops[c];
                x.begin += shift;
                x.end += shift;
                x.step += ku * steps[c];
                if (x.kind == op_kind::dma_start || x.kind == op_kind::dma_wait) x.dma += ku * starts[c];
                x.label = labels_[c][ord];
                res_.timeline.push_back(x);
                ord_.push_back(ord);
            }
        }
    }

private:
    result& res_;
    const options& opt_;
    bool lane_;                                    // the lane with a timeline
    per_core<std::vector<std::uint32_t>> labels_;  // each core's ops' labels, as pulled
    std::vector<std::uint64_t> ord_;               // the op each span stands for
};

}  // namespace ptpu::sim::detail
