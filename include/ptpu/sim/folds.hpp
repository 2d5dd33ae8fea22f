// Defines sim::detail::folds, the timing model's folded repeats (op_kind::repeat, docs/model.md
// §11): what each core's repeat op stands for, the ops of its repetitions, and the search for a
// period of repetitions that the engine may skip.
//
// A repeat op stands for `bytes` more repetitions of the `sem` ops after it. The first
// repetition comes from the stream and is recorded as it is simulated; the others are made from
// the record, their DMA ids `dma` higher each time (and inner rows `sub` higher), and simulated as
// the stream's ops would be. On a core running alone without a timeline, the core's state is
// recorded at the start of each repetition (mark()): once it equals the state p repetitions
// earlier, the next p repetitions repeat those p exactly (the same ops relative to the core's
// starts, from the same state), so every whole period of p left is skipped at once
// (period_skip::fold; with per-step rows, step_rows::replicate as far as step_rows::fold_fit
// allows) and the rest simulated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/sim/steady.hpp"
#include "ptpu/sim/step_rows.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim::detail {

class folds {
public:
    // Where core c's fold is: 0 no repeat op (or all its repetitions made), 1 recording the first
    // repetition, 2 making the others from it. One byte, read at every op.
    [[nodiscard]] std::uint8_t where(int c) const { return at_[static_cast<std::size_t>(c)]; }

    // Core c's repeat op o: the next o.sem ops are its first repetition. SIM2 for a repeat op
    // within another's repetitions, or one of no ops or no more repetitions.
    void begin(int c, const op& o) {
        fold& f = of(c);
        const bool within = where(c) != 0;
        if (within || o.sem == 0 || o.bytes < 1)
            throw error("SIM2", "simulate, step " + std::to_string(o.step),
                        within ? "a repeat op within the repetition of another"
                               : "a repeat op of " + std::to_string(o.sem) + " ops made " +
                                     std::to_string(o.bytes) + " more times",
                        "repeat one or more ops, one or more more times, and not within another repeat");
        f.len = o.sem;
        f.ids = o.dma;
        f.step = o.step;
        f.rows = o.sub;
        f.left = o.bytes;
        f.made = 0;
        f.pos = 0;
        f.marks = 0;
        f.ops.clear();
        at_[static_cast<std::size_t>(c)] = 1;
    }

    // Op o of core c's first repetition. SIM2 for a repeat op or an op of another step among
    // them, or a repetition that starts other than its DMA ids advance by.
    void record(int c, const op& o) {
        fold& f = of(c);
        if (o.kind == op_kind::repeat || o.step != f.step)
            throw error(
                "SIM2", "simulate, step " + std::to_string(f.step),
                "the ops a repeat op repeats include " +
                    std::string(o.kind == op_kind::repeat ? "another repeat op" : "an op of another step"),
                "repeat ops of the repeat op's step only");
        f.ops.push_back(o);
        if (f.ops.size() < f.len) return;
        std::uint32_t starts = 0;
        for (const op& x : f.ops) starts += x.kind == op_kind::dma_start ? 1u : 0u;
        if (starts != f.ids)
            throw error("SIM2", "simulate, step " + std::to_string(f.step),
                        "a repeat op's ops start " + std::to_string(starts) +
                            " DMAs and advance their ids by " + std::to_string(f.ids) + " each repetition",
                        "advance the ids by the DMAs one repetition starts");
        f.made = 1;
        at_[static_cast<std::size_t>(c)] = 2;
    }

    // Whether core c's next made op begins a repetition (where period_skip::fold records the state).
    [[nodiscard]] bool at_start(int c) const { return folds_[static_cast<std::size_t>(c)].pos == 0; }
    // The state to record at the start of core c's next repetition (period_skip::record, rows).
    boundary& mark(int c) {
        fold& f = of(c);
        if (f.seen.empty()) f.seen.resize(static_cast<std::size_t>(ring));
        return f.seen[static_cast<std::size_t>(f.marks % ring)];
    }

    // A skip of q periods of p repetitions, the state at their first repetition's start a and at
    // the last p repetitions' end b.
    struct skip {
        std::int64_t q = 0;  // 0: none
        std::int64_t p = 0;
        const boundary* a = nullptr;
        const boundary* b = nullptr;
        std::uint32_t dsub = 0;  // inner rows per period
    };
    // After mark(c) was recorded: the shortest period (up to `period` repetitions) whose start
    // state the last one repeats, and how many whole ones of it are left whose rows `book` can
    // make again.
    skip find(int c, const step_rows& book) {
        fold& f = of(c);
        const boundary& b = f.seen[static_cast<std::size_t>(f.marks % ring)];
        ++f.marks;
        for (std::int64_t p = 1; p <= period && p < f.marks; ++p) {
            const boundary& a = f.seen[static_cast<std::size_t>((f.marks - 1 - p) % ring)];
            if (!same_state(a, b)) continue;
            const auto dsub = static_cast<std::uint32_t>(p) * f.rows;
            const std::int64_t q = book.fold_fit(a.rows, b.rows, c, f.step, dsub, f.left / p);
            return q == 0 ? skip{} : skip{q, p, &a, &b, dsub};
        }
        return {};
    }
    // period_skip::fold skipped s: its repetitions are made, and the search starts again.
    void skipped(int c, const skip& s) {
        fold& f = of(c);
        f.made += static_cast<std::uint32_t>(s.q * s.p);
        f.left -= s.q * s.p;
        f.marks = 0;
        at_[static_cast<std::size_t>(c)] = f.left > 0 ? 2 : 0;
    }

    // The next made op of core c's fold.
    void next(int c, op& o) {
        fold& f = of(c);
        o = f.ops[f.pos];
        if (o.kind == op_kind::dma_start || o.kind == op_kind::dma_wait)
            o.dma += f.made * f.ids;  // (mod 2^32, as ids)
        if (o.sub != 0 && f.rows != 0) [[unlikely]] {
            // Its inner row, as many rows on as the repetitions before it made; none past
            // stream::max_inner_rows (the op counts in its step's row only, its wait as a body copy's).
            const std::uint64_t sub = o.sub + std::uint64_t{f.made} * f.rows;
            o.sub = sub <= stream::max_inner_rows ? static_cast<std::uint16_t>(sub) : std::uint16_t{0};
            if (o.sub == 0) o.waits_on = {};
        }
        if (++f.pos == f.len) {
            f.pos = 0;
            ++f.made;
            if (--f.left == 0) at_[static_cast<std::size_t>(c)] = 0;
        }
    }

    // Core c's stream ended: SIM2 within the ops of a repeat op.
    void check_end(int c) const {
        if (where(c) == 0) return;
        const fold& f = folds_[static_cast<std::size_t>(c)];
        throw error("SIM2", "simulate, step " + std::to_string(f.step),
                    "the stream ended within the ops of a repeat op (" + std::to_string(f.ops.size()) +
                        " of " + std::to_string(f.len) + ")",
                    "end a stream after the ops its last repeat op repeats");
    }

private:
    static constexpr std::int64_t period = 16, ring = period + 1;
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
        std::vector<boundary> seen;  // the last `ring` states, at repetition starts
    };
    fold& of(int c) { return folds_[static_cast<std::size_t>(c)]; }

    per_core<fold> folds_;
    per_core<std::uint8_t> at_{};
};

}  // namespace ptpu::sim::detail
