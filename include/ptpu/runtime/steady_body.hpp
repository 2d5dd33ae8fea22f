// Defines what a runner keeps of a steady body (run_options::steady_body): the ops of the steps
// run since the last period mark, the kernel state at that mark that a skipped stretch must find
// again (semaphores, copies in flight, the bodies' counts), and, after a skip, the period the
// next steps must make again (runtime/runner.hpp, "Steady bodies").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "ptpu/core/index.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu::detail {

class steady_body {
public:
    /// Whether two records are the same op (the fields a body's copy, signal or wait sets).
    static bool same_op(const body_op_record& a, const body_op_record& b) noexcept {
        return a.kind == b.kind && a.far == b.far && a.dma_sem == b.dma_sem && a.core == b.core &&
               a.sem == b.sem && a.amount == b.amount && a.run == b.run && a.before == b.before;
    }

    /// A body run of the ops `ops` and the work after them: kept as a step since the mark (up to
    /// a cap: beyond, no period ends there).
    void record(std::span<const body_op_record> ops, const work& end) {
        if (lost_ || steps_.size() >= max_steps) {
            lost_ = true;
            return;
        }
        steps_.push_back(
            {static_cast<std::uint32_t>(ops_.size()), static_cast<std::uint32_t>(ops.size()), end});
        ops_.insert(ops_.end(), ops.begin(), ops.end());
    }
    /// A body run that cannot be part of a steady period (it read scalar memory, ran a pipeline,
    /// or moved data): nothing since the mark can be skipped again, and a check under way ends
    /// (the runs after it would be compared out of phase).
    void lose() noexcept {
        lost_ = true;
        expect_at_ = expect_steps_.size();
    }

    /// The period mark: the state at the step `next` about to run, and nothing recorded since.
    void mark(const kernel_context& k, index_t next) {
        ops_.clear();
        steps_.clear();
        lost_ = false;
        at_ = next;
        cells_.clear();
        for (const semaphore_range& r : k.semaphores) {
            const std::size_t n = static_cast<std::size_t>(r.hi - r.lo) / 4;
            const std::size_t was = cells_.size();
            cells_.resize(was + n);
            std::memcpy(cells_.data() + was, r.lo, n * 4);
        }
        pending_.clear();
        for (const pending_dma& d : k.pending) pending_.push_back({d.sem, d.bytes, d.step - next, d.move});
        counts_ = counts_of(k);
    }

    /// Whether the p steps since the mark, with the state at step `next` now, can be made again
    /// in bulk: each ran as a steady body, and the semaphores and the copies in flight (relative
    /// to the step) are those at the mark.
    [[nodiscard]] bool repeats(const kernel_context& k, index_t next, index_t p) const {
        if (lost_ || static_cast<index_t>(steps_.size()) != p || k.pending.size() != pending_.size())
            return false;
        for (std::size_t j = 0; j < pending_.size(); ++j) {
            const pending_dma& d = k.pending[j];
            const flight& f = pending_[j];
            if (d.move || d.sem != f.sem || d.bytes != f.bytes || d.step - next != f.step) return false;
        }
        std::size_t at = 0;
        for (const semaphore_range& r : k.semaphores) {
            const std::size_t n = static_cast<std::size_t>(r.hi - r.lo) / 4;
            if (std::memcmp(cells_.data() + at, r.lo, n * 4) != 0) return false;
            at += n;
        }
        return true;
    }

    /// Makes m more periods of what happened since the mark, `n` steps in all: the copies in
    /// flight move on by n steps, the bodies' counts by m periods' worth; the period becomes
    /// the one the next steps must make again.
    void skipped(kernel_context& k, index_t m, index_t n) {
        for (pending_dma& d : k.pending) d.step += n;
        const counts now = counts_of(k);
        k.body_dma_count += m * (now.dmas - counts_.dmas);
        k.body_dma_bytes += m * (now.bytes - counts_.bytes);
        k.sem_signals += m * (now.signals - counts_.signals);
        k.sem_waits += m * (now.waits - counts_.waits);
        expect_ops_ = ops_;
        expect_steps_ = steps_;
        expect_at_ = 0;
        expect_from_ = at_;
    }

    /// After a skip, whether a body run of `ops` and `end` is the period's step it stands for
    /// (true once the period has been checked, or when nothing is expected).
    [[nodiscard]] bool check(std::span<const body_op_record> ops, const work& end) {
        if (expect_at_ >= expect_steps_.size()) return true;
        const step& s = expect_steps_[expect_at_++];
        bool same = s.n == ops.size() && s.end == end;
        for (std::size_t j = 0; same && j < ops.size(); ++j) same = same_op(expect_ops_[s.first + j], ops[j]);
        if (!same) expect_at_ = expect_steps_.size();  // (checked once)
        return same;
    }
    /// The first step of the period the last skip made again (the one a check compares with).
    [[nodiscard]] index_t expected_from() const noexcept { return expect_from_; }

private:
    static constexpr std::size_t max_steps = 4096;
    struct step {
        std::uint32_t first = 0, n = 0;  // its ops in ops_
        work end{};                      // the work after its last op
    };
    struct flight {
        const std::int32_t* sem = nullptr;
        index_t bytes = 0;
        index_t step = 0;  // started this many steps from the mark (negative: before)
        bool move = false;
    };
    struct counts {
        index_t dmas = 0, bytes = 0, signals = 0, waits = 0;
    };
    static counts counts_of(const kernel_context& k) noexcept {
        return {k.body_dma_count, k.body_dma_bytes, k.sem_signals, k.sem_waits};
    }
    std::vector<body_op_record> ops_;  // the steps since the mark
    std::vector<step> steps_;
    bool lost_ = true;  // no mark yet, or a step since that cannot repeat
    index_t at_ = 0;
    std::vector<std::int32_t> cells_;  // the mark's semaphores, in scratch order
    std::vector<flight> pending_;
    counts counts_{};
    std::vector<body_op_record> expect_ops_;  // the period the last skip made again
    std::vector<step> expect_steps_;
    std::size_t expect_at_ = 0;
    index_t expect_from_ = 0;
};

}  // namespace ptpu::detail
