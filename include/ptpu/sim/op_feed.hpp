// Defines sim::detail::op_feed, where the engine takes each core's ops: the source's current
// batch and the next op in it, the ops the steady-state lane pulled and gave back to be simulated
// (which come first), and whether the core's stream has ended. With the lane and a timeline,
// every op pulled leaves its label with the timeline (timeline_book::pulled).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ptpu/core/reuse.hpp"
#include "ptpu/sim/steady.hpp"
#include "ptpu/sim/timeline_book.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim::detail {

template <class Source>
class op_feed {
public:
    op_feed(Source& src, timeline_book& spans) : src_(src), spans_(spans) {}
    ~op_feed() {
        for (std::vector<op>& r : given_) ptpu::detail::put_buffer(r);
    }
    op_feed(const op_feed&) = delete;
    op_feed& operator=(const op_feed&) = delete;

    // The lane's buffers of given-back ops: this thread's last ones, emptied (their memory is
    // what is reused).
    void open_lane(int cores) {
        for (std::size_t c = 0; c < static_cast<std::size_t>(cores); ++c)
            given_[c] = ptpu::detail::take_empty_buffer<stream::op>();
    }

    [[nodiscard]] bool batched() const { return src_.batched(); }
    Source& source() { return src_; }

    // Where a core's next op came from.
    enum class took : std::uint8_t { given_back, pulled, ended };
    // Core c's next op: one the lane gave back, else the source's next (false once it ended).
    [[gnu::always_inline]] took next(int c, op& o) {
        const auto u = static_cast<std::size_t>(c);
        std::vector<op>& g = given_[u];
        std::size_t& at = given_at_[u];
        if (at < g.size()) {
            o = g[at++];
            if (at == g.size()) g.clear(), at = 0;
            return took::given_back;
        }
        if (ended_[u] || !pull(c, o)) return took::ended;
        return took::pulled;
    }

    // The source's next op for core c, a batch at a time.
    bool pull(int c, op& o) {
        if (!src_.batched()) {
            if (!src_.next(c, o)) return false;  // straight into o (no copy to stall on)
            if (spans_.in_lane()) [[unlikely]]
                spans_.pulled(c, o);
            return true;
        }
        const auto u = static_cast<std::size_t>(c);
        std::span<const op>& b = in_[u];
        std::size_t& k = in_pos_[u];
        if (k == b.size()) {
            const stream::batch n = src_.next_batch(c, false);
            b = n.ops;
            in_whole_[u] = n.whole_step;
            k = 0;
            if (b.empty()) return false;
            if (spans_.in_lane()) [[unlikely]]
                spans_.pulled(c, b);
        }
        o = b[k++];
        return true;
    }

    // Core c's next batch for a lane comparing it with a recorded period: taken lazily (the
    // runner may hand back a repeat of its last step without writing its ops) when the lane
    // expects a repeat, never with a timeline (every op's label is recorded as it is pulled).
    // `repeated`: the batch is such a repeat. Not through the current batch (the lane reads
    // whole batches once the current one is behind it).
    struct pulled_batch {
        stream::batch b;
        bool repeated;
    };
    pulled_batch next_batch(int c, bool expect_repeat) {
        const bool lazy = expect_repeat && !spans_.in_lane();
        const stream::batch n = src_.next_batch(c, lazy);
        if (n.ops.empty()) return {n, false};
        if (spans_.in_lane()) spans_.pulled(c, n.ops);
        return {n, lazy && n.repeat && n.whole_step};
    }

    // Core c's current batch from the source, the next op's place in it, and whether the batch
    // holds exactly one step's ops.
    [[nodiscard]] std::span<const op> current(int c) const { return in_[static_cast<std::size_t>(c)]; }
    [[nodiscard]] std::size_t position(int c) const { return in_pos_[static_cast<std::size_t>(c)]; }
    [[nodiscard]] bool whole(int c) const { return in_whole_[static_cast<std::size_t>(c)]; }
    // Whether the op core c just pulled began a new batch from the source.
    [[nodiscard]] bool fresh(int c) const {
        return src_.batched() && in_pos_[static_cast<std::size_t>(c)] == 1;
    }
    // Forgets core c's current batch (the lane pulled past it batch by batch).
    void drop_current(int c) {
        in_[static_cast<std::size_t>(c)] = {};
        in_pos_[static_cast<std::size_t>(c)] = 0;
    }

    // The ops given back to core c, the first of them still to simulate; whether any is left.
    std::vector<op>& given_back(int c) { return given_[static_cast<std::size_t>(c)]; }
    [[nodiscard]] bool giving_back(int c) const {
        return given_at_[static_cast<std::size_t>(c)] < given_[static_cast<std::size_t>(c)].size();
    }
    // Core c's given-back ops were rewritten: they start at the first again.
    void restart_given(int c) { given_at_[static_cast<std::size_t>(c)] = 0; }

    // Whether the source said core c's stream has ended (to the lane: it is not asked again).
    [[nodiscard]] bool ended(int c) const { return ended_[static_cast<std::size_t>(c)]; }
    void set_ended(int c) { ended_[static_cast<std::size_t>(c)] = true; }

private:
    Source& src_;
    timeline_book& spans_;
    per_core<std::span<const op>> in_{};  // per core: the source's current batch
    per_core<std::size_t> in_pos_{};      // and the next op in it
    per_core<bool> in_whole_{};           // and whether it holds exactly one step's ops
    per_core<std::vector<op>> given_;     // per core: ops the lane pulled and gave back
    per_core<std::size_t> given_at_{};    // and the next of them
    per_core<bool> ended_{};
};

}  // namespace ptpu::sim::detail
