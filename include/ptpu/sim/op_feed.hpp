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

// One core's part of the feed.
struct core_feed {
    std::span<const op> in{};  // the source's current batch
    std::size_t pos = 0;       // and the next op in it
    bool whole = false;        // and whether it holds exactly one step's ops
    bool ended = false;        // the source said the stream has ended (the lane asks no more)
    bool blocked = false;      // the source's last batch was empty, the stream going on (a
                               // core blocked in a wait: stream::batch::blocked)
    std::size_t given_at = 0;  // the next of the given-back ops
    std::vector<op> given;     // ops the lane pulled and gave back
};

template <class Source>
class op_feed {
public:
    op_feed(Source& src, timeline_book& spans) : src_(src), spans_(spans), labels_(spans.in_lane()) {}
    ~op_feed() {
        for (core_feed& f : cores_) ptpu::detail::put_buffer(f.given);
    }
    op_feed(const op_feed&) = delete;
    op_feed& operator=(const op_feed&) = delete;

    // The lane's buffers of given-back ops: this thread's last ones, emptied (their memory is
    // what is reused).
    void open_lane(int cores) {
        for (std::size_t c = 0; c < static_cast<std::size_t>(cores); ++c)
            cores_[c].given = ptpu::detail::take_empty_buffer<op>();
    }

    [[nodiscard]] bool batched() const { return src_.batched(); }
    Source& source() { return src_; }

    // Core c's part: a loop over one core's ops takes it once, out of the loop.
    core_feed& of(int c) { return cores_[static_cast<std::size_t>(c)]; }

    // Where a core's next op came from.
    enum class took : std::uint8_t { given_back, pulled, ended };
    // Core c's next op (f: of(c)): one the lane gave back, else the source's next.
    [[gnu::always_inline]] took next(int c, core_feed& f, op& o) {
        if (f.given_at < f.given.size()) {
            o = f.given[f.given_at++];
            if (f.given_at == f.given.size()) f.given.clear(), f.given_at = 0;
            return took::given_back;
        }
        if (f.ended || !pull(c, f, o)) return took::ended;
        return took::pulled;
    }

    // The source's next op for core c (f: of(c)), a batch at a time.
    [[gnu::always_inline]] bool pull(int c, core_feed& f, op& o) {
        if (!src_.batched()) {
            if (!src_.next(c, o)) return false;  // straight into o (no copy to stall on)
            if (labels_) [[unlikely]]
                spans_.pulled(c, o);
            return true;
        }
        if (f.pos == f.in.size()) {
            const stream::batch n = src_.next_batch(c, false);
            f.in = n.ops;
            f.whole = n.whole_step;
            f.pos = 0;
            f.blocked = n.blocked;
            if (f.in.empty()) return false;
            if (labels_) [[unlikely]]
                spans_.pulled(c, f.in);
        }
        o = f.in[f.pos++];
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
        const bool lazy = expect_repeat && !labels_;
        const stream::batch n = src_.next_batch(c, lazy);
        if (n.ops.empty()) return {n, false};
        if (labels_) spans_.pulled(c, n.ops);
        return {n, lazy && n.repeat && n.whole_step};
    }

    // Core c's current batch from the source, the next op's place in it, and whether the batch
    // holds exactly one step's ops.
    [[nodiscard]] std::span<const op> current(int c) const { return at(c).in; }
    [[nodiscard]] std::size_t position(int c) const { return at(c).pos; }
    [[nodiscard]] bool whole(int c) const { return at(c).whole; }
    // Whether the op core c just pulled began a new batch from the source.
    [[nodiscard]] bool fresh(int c) const { return src_.batched() && at(c).pos == 1; }
    // Forgets core c's current batch (the lane pulled past it batch by batch).
    void drop_current(int c) {
        of(c).in = {};
        of(c).pos = 0;
    }

    // The ops given back to core c, the first of them still to simulate; whether any is left.
    std::vector<op>& given_back(int c) { return of(c).given; }
    [[nodiscard]] bool giving_back(int c) const { return at(c).given_at < at(c).given.size(); }
    // Core c's given-back ops were rewritten: they start at the first again.
    void restart_given(int c) { of(c).given_at = 0; }

    // The source said core c's stream has ended (the lane asks no more of it).
    void set_ended(int c) { of(c).ended = true; }

private:
    [[nodiscard]] const core_feed& at(int c) const { return cores_[static_cast<std::size_t>(c)]; }

    Source& src_;
    timeline_book& spans_;
    const bool labels_;  // spans_.in_lane(), fixed for the run: every op pulled leaves its label
    per_core<core_feed> cores_;
};

}  // namespace ptpu::sim::detail
