// Defines the timing model's per-step rows (options::per_step): each core's row of every step
// value (result::steps) and of every inner row of a step (result::inner_steps), the marks a
// boundary keeps of them, and how the steady-state lane and the folds make a skipped period's
// rows again (docs/model.md §11). The engine adds each op's time to the rows step_rows gives it.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/sim/steady.hpp"

namespace ptpu::sim::detail {

// What the rows and the timeline of r take with `rows` more rows and `spans` more spans: each row
// with its index entry, each span with its place and its op's label. Over options::memory_budget
// (doubling a vector's capacity counted): MEM1, naming the step.
inline void within_budget(const result& r, const options& opt, std::size_t rows, std::size_t spans,
                          std::uint32_t step) {
    constexpr double row_bytes = sizeof(step_times) + 64, span_bytes = sizeof(span) + 12;
    const double have_rows = static_cast<double>(r.steps.size() + r.inner_steps.size());
    const double have_spans = static_cast<double>(r.timeline.size());
    const double bytes = row_bytes * (have_rows + 2.0 * static_cast<double>(rows)) +
                         span_bytes * (have_spans + 2.0 * static_cast<double>(spans));
    if (bytes <= static_cast<double>(opt.memory_budget)) return;
    throw error("MEM1", "timing model, step " + std::to_string(step),
                std::string("recording ") + (spans > 0 ? "the timeline" : "the per-step rows") +
                    " would take about " + std::to_string(static_cast<std::int64_t>(bytes)) +
                    " host bytes, over the budget of " + std::to_string(opt.memory_budget) +
                    " (run_options::memory_budget): per-step rows and the timeline grow with the grid",
                "raise run_options::memory_budget, or record no per-step rows (per_step = "
                "per_step_rows::never) or timeline");
}

// The rows of result::steps (book 0) and result::inner_steps (book 1), each core's current row in
// each, and an index of every row by (core, step, sub).
//
// A period's rows repeat as its ops do: each core's current row at the boundary (it may go on
// into the period) gets the increments the current row at the period's start got, and the rows
// created within the period are created again, their times moved by the period's duration and
// their steps by its steps. That holds when the rows are part of the repeating state: the
// current rows equal relative to the clock, no core went back to an older row, and each core's
// rows were created in rising step order (so a replicated row's step is new).
class step_rows {
public:
    step_rows(result& r, const options& opt) : res_(r), opt_(opt) {}
    step_rows(const step_rows&) = delete;
    step_rows& operator=(const step_rows&) = delete;

    // The row of (core c, step, sub) in book b: the current one, or found again if the value
    // recurs after other values (e.g. an op of the next step issued during this one), or a new one
    // beginning at the core's clock t.
    step_times* row(int b, int c, std::uint32_t step, std::uint32_t sub, double t) {
        const auto u = static_cast<std::size_t>(c);
        const auto bu = static_cast<std::size_t>(b);
        int& r = row_[bu][u];
        std::vector<step_times>& v = book(b);
        if (r < 0 || v[static_cast<std::size_t>(r)].step != step ||
            v[static_cast<std::size_t>(r)].sub != sub) {
            const std::uint64_t key = row_key(c, step, sub);
            const auto [it, added] = index_[bu].try_emplace(key, static_cast<int>(v.size()));
            if (added) {
                if (v.size() == v.capacity()) within_budget(res_, opt_, v.size() + 1, 0, step);
                v.push_back({c, step, t, t, 0, 0, 0, 0, 0, 0, sub});
                // (A new row of an existing step value can only be an inner row of that step.)
                if (any_[bu][u] && step < max_[bu][u]) rising_[bu][u] = false;
                max_[bu][u] = std::max(max_[bu][u], step);
                any_[bu][u] = true;
            } else {
                ++revisited_[bu];
                // The lane's row replication needs rows in step order. (Back to another row of
                // the current step, as a nested pipeline's parent row after its children, is not
                // back in time: the step's rows are all made within the period that makes them.)
                if (r < 0 || v[static_cast<std::size_t>(r)].step != step) ++recurred_[bu];
            }
            r = it->second;
        }
        return &v[static_cast<std::size_t>(r)];
    }
    // Core c's op just run is of an inner row (the current one of book 1) or not.
    void set_inner(int c, bool inner) {
        const auto u = static_cast<std::size_t>(c);
        inner_at_[u] = inner ? row_[1][u] : -1;
    }
    // Core c's current step row, and the inner row of its last op (null: none).
    step_times& current(int c) {
        return res_.steps[static_cast<std::size_t>(row_[0][static_cast<std::size_t>(c)])];
    }
    step_times* current_inner(int c) {
        const int r = inner_at_[static_cast<std::size_t>(c)];
        return r >= 0 ? &res_.inner_steps[static_cast<std::size_t>(r)] : nullptr;
    }

    // The rows now, as a boundary keeps them.
    [[nodiscard]] row_mark mark() const {
        row_mark m;
        if (!opt_.per_step) return m;
        for (std::size_t b = 0; b < 2; ++b) {
            book_mark& k = m.book[b];
            const std::vector<step_times>& v = book(static_cast<int>(b));
            k.rows = v.size();
            k.recurred = recurred_[b];
            k.revisited = revisited_[b];
            for (std::size_t c = 0; c < max_cores; ++c) {
                k.open[c] = row_[b][c];
                if (row_[b][c] >= 0) k.open_row[c] = v[static_cast<std::size_t>(row_[b][c])];
            }
        }
        return m;
    }

    // The rows of the period from a (at time ta) to b (at tb) repeat, for the cores cs, whose
    // steps advance by dstep per period: in both books (a step's inner rows are replicated with
    // it).
    [[gnu::noinline]] inline bool repeat(const row_mark& ma, const row_mark& mb, double ta, double tb,
                                         const core_set& cs, const per_core<std::uint32_t>& dstep) const;

    // Mark x, recorded within the period from a to b, n periods later (the history rebuilt after
    // a skip): rows made in the period moved by n periods' rows; the current row at a, which
    // the period went on adding to, is then b's current row n - 1 periods later.
    [[gnu::noinline]] inline row_mark shifted(row_mark x, const row_mark& ma, const row_mark& mb,
                                              std::int64_t n, double dt,
                                              const per_core<std::uint32_t>& dstep) const;

    // Adds m periods' rows (the period from a to b, of duration dt, steps advancing by dstep and
    // inner rows by dsub), in both books.
    [[gnu::noinline]] inline void replicate(const row_mark& ma, const row_mark& mb, std::int64_t m, double dt,
                                            const per_core<std::uint32_t>& dstep, std::uint32_t dsub = 0);

    // How many of q periods of core c's fold of step `step` (its rows from a to b, inner rows
    // advancing by dsub a period) replicate() can make again: none when the period made a row of
    // an outer step or went back to an older row, and only as many as keep the inner rows within
    // stream::max_inner_rows (none past it made no rows: all of them).
    [[nodiscard]] inline std::int64_t fold_fit(const row_mark& ma, const row_mark& mb, int c,
                                               std::uint32_t step, std::uint32_t dsub, std::int64_t q) const;

private:
    std::vector<step_times>& book(int b) { return b == 0 ? res_.steps : res_.inner_steps; }
    [[nodiscard]] const std::vector<step_times>& book(int b) const {
        return b == 0 ? res_.steps : res_.inner_steps;
    }
    static std::uint64_t row_key(int c, std::uint32_t step, std::uint32_t sub) {
        return std::uint64_t{static_cast<std::uint32_t>(c)} << 48 | std::uint64_t{sub} << 32 | step;
    }

    result& res_;
    const options& opt_;
    std::array<per_core<int>, 2> row_{each_core(-1), each_core(-1)};  // each core's current row
    std::array<std::unordered_map<std::uint64_t, int>, 2> index_;     // (core, step, sub) -> row
    std::array<std::int64_t, 2> recurred_{};        // times a core went back to an older row
    std::array<std::int64_t, 2> revisited_{};       // or to any row made before
    std::array<per_core<std::uint32_t>, 2> max_{};  // the largest step of each core's rows
    std::array<per_core<bool>, 2> any_{};
    std::array<per_core<bool>, 2> rising_{each_core(true), each_core(true)};  // rows made in step order
    per_core<int> inner_at_ = each_core(-1);  // the inner row of the op each core ran last (-1: none)
};

auto step_rows::repeat(const row_mark& ma, const row_mark& mb, double ta, double tb, const core_set& cs,
                       const per_core<std::uint32_t>& dstep) const -> bool {
    if (!opt_.per_step) return true;
    const double tol = 1e-12 * std::max(std::abs(ta), std::abs(tb));
    const auto near = [tol](double x, double y) { return std::abs(x - y) <= tol; };
    for (std::size_t bk = 0; bk < 2; ++bk) {
        const book_mark& a = ma.book[bk];
        const book_mark& b = mb.book[bk];
        const std::vector<step_times>& v = book(static_cast<int>(bk));
        if (a.recurred != b.recurred) return false;
        for (const int ci : cs) {
            const auto c = static_cast<std::size_t>(ci);
            if (!rising_[bk][c] || (a.open[c] >= 0) != (b.open[c] >= 0)) return false;
            std::uint32_t lo = 0, hi = 0;
            bool any = false;
            for (std::size_t r = a.rows; r < b.rows; ++r) {
                const step_times& x = v[r];
                if (x.core != ci) continue;
                if (!any) lo = x.step;
                hi = x.step;
                any = true;
            }
            if (any && dstep[c] <= hi - lo) return false;  // a replicated row would meet an older one
            if (a.open[c] < 0) continue;
            const step_times& x = a.open_row[c];
            const step_times& y = b.open_row[c];
            if (y.step != x.step + dstep[c] || x.sub != y.sub || x.waited_on != y.waited_on ||
                !near(x.begin - ta, y.begin - tb) || !near(x.end - ta, y.end - tb) ||
                !near(x.overhead, y.overhead) || !near(x.issue, y.issue) || !near(x.compute, y.compute) ||
                !near(x.wait, y.wait) || !near(x.sem_wait, y.sem_wait))
                return false;
        }
    }
    return true;
}

auto step_rows::shifted(row_mark x, const row_mark& ma, const row_mark& mb, std::int64_t n, double dt,
                        const per_core<std::uint32_t>& dstep) const -> row_mark {
    if (!opt_.per_step) return x;
    for (std::size_t bk = 0; bk < 2; ++bk) {
        book_mark& k = x.book[bk];
        const book_mark& a = ma.book[bk];
        const book_mark& b = mb.book[bk];
        const auto made = static_cast<std::int64_t>(b.rows - a.rows);
        const auto first = static_cast<std::int64_t>(a.rows);
        k.rows += static_cast<std::size_t>(n * made);
        for (std::size_t c = 0; c < max_cores; ++c) {
            if (k.open[c] < 0) continue;
            if (k.open[c] >= first)
                k.open[c] += static_cast<int>(n * made);
            else if (b.open[c] >= first)
                k.open[c] = b.open[c] + static_cast<int>((n - 1) * made);
            k.open_row[c].step += static_cast<std::uint32_t>(n) * dstep[c];
            k.open_row[c].begin += static_cast<double>(n) * dt;
            k.open_row[c].end += static_cast<double>(n) * dt;
        }
    }
    return x;
}

auto step_rows::replicate(const row_mark& ma, const row_mark& mb, std::int64_t m, double dt,
                          const per_core<std::uint32_t>& dstep, std::uint32_t dsub) -> void {
    if (!opt_.per_step || m == 0) return;
    // A core blocked in a wait of an inner row (in the lane, any but the lead) goes on in its
    // image.
    per_core<bool> tagged{};
    for (std::size_t c = 0; c < max_cores; ++c) tagged[c] = inner_at_[c] >= 0;
    for (std::size_t bk = 0; bk < 2; ++bk) {
        const book_mark& a = ma.book[bk];
        const book_mark& b = mb.book[bk];
        std::vector<step_times>& v = book(static_cast<int>(bk));
        per_core<step_times> inc{};
        per_core<bool> has{};
        for (std::size_t c = 0; c < max_cores; ++c) {
            if (a.open[c] < 0 || b.open[c] < 0) continue;
            const step_times& now = v[static_cast<std::size_t>(a.open[c])];
            const step_times& then = a.open_row[c];
            step_times& d = inc[c];
            d.overhead = now.overhead - then.overhead;
            d.issue = now.issue - then.issue;
            d.compute = now.compute - then.compute;
            d.wait = now.wait - then.wait;
            d.sem_wait = now.sem_wait - then.sem_wait;
            d.waited_on = now.waited_on;
            d.end = now.end;  // the image in period k ends k periods later, if it was touched
            d.begin = now.end != then.end ? 1.0 : 0.0;
            has[c] = true;
        }
        const std::vector<step_times> made(v.begin() + static_cast<std::ptrdiff_t>(a.rows),
                                           v.begin() + static_cast<std::ptrdiff_t>(b.rows));
        per_core<int> open = b.open;
        within_budget(res_, opt_, static_cast<std::size_t>(m) * made.size(), 0,
                      made.empty() ? 0 : made.back().step);
        v.reserve(v.size() + static_cast<std::size_t>(m) * made.size());
        for (std::int64_t k = 1; k <= m; ++k) {
            const double shift = static_cast<double>(k) * dt;
            for (std::size_t c = 0; c < max_cores; ++c) {
                if (!has[c]) continue;
                step_times& row = v[static_cast<std::size_t>(open[c])];
                row.overhead += inc[c].overhead;
                row.issue += inc[c].issue;
                row.compute += inc[c].compute;
                row.wait += inc[c].wait;
                row.sem_wait += inc[c].sem_wait;
                row.waited_on |= inc[c].waited_on;
                if (inc[c].begin != 0) row.end = inc[c].end + shift;
            }
            for (const step_times& x : made) {
                step_times y = x;
                const auto c = static_cast<std::size_t>(x.core);
                y.step += static_cast<std::uint32_t>(k) * dstep[c];
                if (bk == 1) y.sub += static_cast<std::uint32_t>(k) * dsub;
                y.begin += shift;
                y.end += shift;
                const int idx = static_cast<int>(v.size());
                v.push_back(y);
                index_[bk].emplace(row_key(x.core, y.step, y.sub), idx);
                max_[bk][c] = std::max(max_[bk][c], y.step);
                open[c] = idx;  // the last one made is the image of core c's current row at b
            }
        }
        for (std::size_t c = 0; c < max_cores; ++c)
            if (b.open[c] >= 0) row_[bk][c] = open[c];
    }
    for (std::size_t c = 0; c < max_cores; ++c) inner_at_[c] = tagged[c] ? row_[1][c] : -1;
}

auto step_rows::fold_fit(const row_mark& ma, const row_mark& mb, int c, std::uint32_t step,
                         std::uint32_t dsub, std::int64_t q) const -> std::int64_t {
    if (!opt_.per_step) return q;
    const auto u = static_cast<std::size_t>(c);
    const book_mark &a0 = ma.book[0], &b0 = mb.book[0], &a1 = ma.book[1], &b1 = mb.book[1];
    // The fold's step keeps its row (it grows by the period's increments), and the period goes
    // back to no row made before it: it makes only inner rows of that step, in order, of fewer
    // than dsub rows (so their images are new).
    if (a0.rows != b0.rows || a0.open[u] != b0.open[u] || a0.revisited != b0.revisited ||
        a1.revisited != b1.revisited)
        return 0;
    if (a1.rows == b1.rows) return q;
    std::uint32_t lo = std::numeric_limits<std::uint32_t>::max(), hi = 0;
    for (std::size_t r = a1.rows; r < b1.rows; ++r) {
        const step_times& x = res_.inner_steps[r];
        if (x.core != c || x.step != step) return 0;
        lo = std::min(lo, x.sub);
        hi = std::max(hi, x.sub);
    }
    if (hi - lo >= dsub || hi + dsub > stream::max_inner_rows) return 0;
    return std::min<std::int64_t>(q, (stream::max_inner_rows - hi) / dsub);
}

}  // namespace ptpu::sim::detail
