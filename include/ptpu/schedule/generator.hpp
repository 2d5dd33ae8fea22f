// Defines the per-core schedule generator: one pipeline on one core, one grid step at a time,
// with any buffer count (S28–S31), the lookahead fetch policy (S32) and the change bits it needs
// either read from the planner's pass 1 (table_changes) or computed as it goes from the index
// maps (map_changes: for a pipeline whose maps can only be evaluated while it runs).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ptpu/core/index.hpp"
#include "ptpu/schedule/analyze.hpp"
#include "ptpu/schedule/event.hpp"
#include "ptpu/schedule/geometry.hpp"
#include "ptpu/schedule/info.hpp"
#include "ptpu/spec/pipeline.hpp"

namespace ptpu {

namespace detail {
inline bool same_bytes(const std::uint8_t* a, const std::uint8_t* b, index_t n) {
    return std::memcmp(a, b, static_cast<std::size_t>(n)) == 0;
}
}  // namespace detail

/// A bounded list of events: one step's (see basic_schedule::next_step).
struct step_events {
    /// The most one call of next_step appends. Per input: its sync copy, the prologue's fetches
    /// (at most max_buffers - 1), the step's fetches (a lookahead fill refills up to
    /// max_buffers slots) and its wait; per output: restore, write, wait, and the epilogue's
    /// wait and sync copy; and the step's marker and body.
    static constexpr std::size_t capacity = max_operands * (2 * max_buffers + 6) + 2;
    event v[capacity]{};
    std::size_t n = 0;
    constexpr void push_back(const event& e) { v[n++] = e; }
    constexpr void clear() { n = 0; }
    [[nodiscard]] constexpr std::size_t size() const { return n; }
    constexpr const event& operator[](std::size_t i) const { return v[i]; }
};

/// Change bits read from the planner's pass 1 (plan_tables::chg): free to query anywhere, nothing
/// to forget (basic_schedule reads a flat table's rows directly).
class table_changes {
public:
    constexpr table_changes() = default;
    constexpr explicit table_changes(const plan_tables& t) : t_(&t.chg) {}
    /// Whether operand op's block at global step g differs from step g-1's, or g starts a core.
    constexpr bool operator()(int op, index_t g) const { return (*t_)(op, g) != 0; }
    [[nodiscard]] constexpr const change_table& table() const { return *t_; }

private:
    const change_table* t_ = nullptr;
};

/// Change bits computed as the schedule goes: each operand's index map is evaluated once per
/// step of the core's range [begin, end) of the pipeline's grid, only as far ahead as the
/// schedule asks (g + bc - 1, or a lookahead fill's next distinct block), and bits behind the
/// current step are dropped. For pipelines planned while they run (an inner pipeline whose maps
/// read the outer step), where a whole-grid table before step 0 would cost too much.
class map_changes {
public:
    constexpr map_changes(const pipeline_desc& p, const block_fn* maps, const void* ctx, index_t begin, index_t end)
        : p_(&p), maps_(maps), ctx_(ctx), begin_(begin), end_(end) {
        for (auto& l : lanes_) l.base = begin;
    }
    constexpr bool operator()(int op, index_t g) {
        lane& l = lanes_[op];
        while (l.front < g && l.front + 1 < end_) advance(op, l);
        return g >= l.base && g <= l.front && l.bits[static_cast<std::size_t>(g - l.base)] != 0;
    }
    /// The schedule will not ask about steps before g again.
    constexpr void forget_before(index_t g) {
        for (lane& l : lanes_) {
            const index_t drop = std::min(g, l.front + 1) - l.base;
            if (drop < 256 || 2 * drop < static_cast<index_t>(l.bits.size())) continue;
            l.bits.erase(l.bits.begin(), l.bits.begin() + static_cast<std::ptrdiff_t>(drop));
            l.base += drop;
        }
    }
    /// Index map evaluations so far (tests: each step's map is evaluated once).
    [[nodiscard]] constexpr index_t evaluations() const { return evaluations_; }

private:
    struct lane {
        std::vector<std::uint8_t> bits;  // bits[s - base] for steps base..front
        index_t base = 0;
        index_t front = -1;
        index_tuple<max_rank> prev{};
        index_t point[max_rank]{};  // grid point of step front
    };
    constexpr void advance(int op, lane& l) {
        const index_t s = l.front + 1;
        if (s == begin_) {
            const auto p = detail::grid_point(*p_, s);
            for (std::size_t d = 0; d < max_rank; ++d) l.point[d] = p[d];
        } else {
            for (int d = p_->grid_rank - 1; d >= 0; --d) {  // S13: the odometer, last axis fastest
                if (++l.point[d] < p_->grid[static_cast<std::size_t>(d)]) break;
                l.point[d] = 0;
            }
        }
        const index_tuple<max_rank> b = maps_[op](l.point, ctx_);
        ++evaluations_;
        l.bits.push_back(s == begin_ || b != l.prev ? 1 : 0);
        l.prev = b;
        l.front = s;
    }
    const pipeline_desc* p_;
    const block_fn* maps_;
    const void* ctx_;
    index_t begin_, end_;
    lane lanes_[max_operands]{};
    index_t evaluations_ = 0;
};

/// The four slot counters of an operand's window (S20): a slot is a counter modulo the window's
/// buffer count. Upstream's pipeline keeps the same four per buffered ref.
struct slot_counters {
    index_t copy_in = 0;   ///< fetches issued: the next one fills slot copy_in
    index_t wait_in = 0;   ///< advances of an input's window: the body reads slot wait_in
    index_t copy_out = 0;  ///< writes issued: the body writes slot copy_out, the next write copies it out
    index_t wait_out = 0;  ///< writes waited: the next wait is on slot wait_out
};

/// One operand's window on its core: what the schedule knows of it (fixed) and its counters.
struct window_state {
    int buffers = 0;           ///< slots (Buffered<k>)
    bool windowed = false;     ///< the operand has a window (S17: aliased ones have none)
    bool trivial = false;      ///< one block for the whole grid: copied in once, out once (S22.2, S24)
    bool revisit_any = false;  ///< an output whose block is brought back when it changes (S40)
    bool lookahead = false;    ///< an input that fetches ahead into every released slot (S32)
    int prefetched = 0;        ///< S55: its first slots, filled by the caller
    slot_counters at{};
    index_t last_filled = 0;  ///< S32: the last step a lookahead fill considered
    /// The slot a counter names.
    [[nodiscard]] constexpr index_t slot(index_t counter) const { return counter % buffers; }
};

/// The schedule of one pipeline on one core as a generator, one grid step at a time:
/// next_step() appends the events the core issues for its next step (S21–S32, S40), the first
/// step's preceded by the trivially-windowed inputs' sync copies and the prologue, the last
/// followed by the epilogue; next() hands them out one by one. plan() drains it at compile time;
/// a runner pulls it lazily, so a run never holds more than one step of events. `Changes` gives
/// the change bits (table_changes or map_changes).
template <class Changes = table_changes>
class basic_schedule {
public:
    /// Core `core`'s schedule of the pipeline analyzed as `info` (n_in inputs, then outputs, n_ops
    /// in all); its events carry pipeline id `pipeline`.
    constexpr basic_schedule(const plan_info& info, int n_in, int n_ops, int core, Changes changes,
                             std::uint8_t pipeline = 0)
        : n_in_(n_in), n_ops_(n_ops), core_(core), pipeline_(pipeline), ch_(static_cast<Changes&&>(changes)) {
        begin_ = info.core_begin[static_cast<std::size_t>(core)];
        end_ = info.core_end[static_cast<std::size_t>(core)];
        n_ = end_ - begin_;
        for (int i = 0; i < n_ops; ++i) {
            const operand_plan& p = info.ops[static_cast<std::size_t>(i)];
            if constexpr (std::is_same_v<Changes, table_changes>)
                if (ch_.table().flat()) rows_[i] = ch_.table().row(i);
            window_state& w = w_[i];
            w.buffers = p.buffers;
            w.windowed = p.windowed;
            w.trivial = p.trivial;
            w.revisit_any = (info.revisit_any_mask >> i) & 1u;
            w.lookahead = i < n_in && p.lookahead;
            w.prefetched = i < n_in ? p.prefetched : 0;
            max_prefetched_ = std::max(max_prefetched_, w.prefetched);
            has_lookahead_ = has_lookahead_ || w.lookahead;
            depth_ = std::max(depth_, p.buffers);
            if (!p.windowed || p.trivial) continue;
            if (i < n_in)
                inputs_[n_inputs_++] = i;
            else
                outputs_[n_outputs_++] = i;
        }
        no_pipelining_ = info.no_pipelining;
        done_ = n_ <= 0;  // S21: nothing at all without steps
    }
    /// Core `core`'s schedule of a call analyzed by analyze(), its change bits from pass 1.
    constexpr basic_schedule(const plan_tables& t, int core)
        requires std::is_same_v<Changes, table_changes>
        : basic_schedule(t.info, t.n_in, t.n_ops, core, table_changes(t)) {}

    /// How each operand's slot counters moved in the last step next_step() or skip_step() made.
    struct step_delta {
        slot_counters op[max_operands]{};
    };

    /// The shape of the next step: one bit per condition the schedule tests in it, so that two
    /// steps of equal shape issue the same events (kinds, operands, order), only their step
    /// numbers and slots differing. 0 (a shape no step has) for the first step and the last
    /// max(2, bc) - 1, whose prologue, epilogue and fetch guards (S23.1) no other step repeats,
    /// for a pipeline with lookahead inputs (a fill depends on how far ahead earlier fills got),
    /// and once the pipeline has ended.
    [[nodiscard]] constexpr std::uint64_t shape() {
        if (done_ || s_ == 0 || s_ > n_ - depth_ || s_ == n_ - 1 || has_lookahead_ || no_pipelining_ ||
            s_ < max_prefetched_)
            return 0;
        // Away from those steps, every condition make_step() tests is has_changed(op, g) or
        // has_changed(op, g + 1) of a windowed operand, and has_changed(i, g + bc - 1) of an input
        // with bc > 2, combined with facts fixed for the operand (its buffer count, revisit_any).
        const index_t g = begin_ + s_;
        std::uint64_t bits = 1;
        for (int k = 0; k < n_windowed(); ++k) {
            const int op = windowed(k);
            const int bc = w_[op].buffers;
            bits = bits << 2 | std::uint64_t{has_changed(op, g)} << 1 | std::uint64_t{has_changed(op, g + 1)};
            if (op < n_in_ && bc > 2) bits = bits << 1 | std::uint64_t{has_changed(op, g + bc - 1)};
        }
        return bits;
    }
    /// The shape of the last step made (0 before the first).
    [[nodiscard]] constexpr std::uint64_t last_shape() const { return last_shape_; }
    [[nodiscard]] constexpr const step_delta& last_delta() const { return delta_; }
    /// The global grid step the next step runs (begin + steps made).
    [[nodiscard]] constexpr index_t next_global_step() const { return begin_ + s_; }
    /// The windowed operands, inputs then outputs (their count: n_windowed()).
    [[nodiscard]] constexpr int n_windowed() const { return n_inputs_ + n_outputs_; }
    [[nodiscard]] constexpr int windowed(int k) const {
        return k < n_inputs_ ? inputs_[k] : outputs_[k - n_inputs_];
    }
    [[nodiscard]] constexpr const Changes& changes() const { return ch_; }
    /// With prefetched inputs (S55): the slot input `op`'s window is in at the last step's body
    /// (while s < prefetched_count no wait_in event says so).
    [[nodiscard]] constexpr int body_slot(int op) const { return body_slot_[op]; }
    [[nodiscard]] constexpr bool has_prefetched() const { return max_prefetched_ > 0; }

    /// Makes the next step without listing its events, when its shape equals the last step's
    /// (shape() == last_shape() != 0): its counters move as the last step's did.
    constexpr void skip_step() {
        for (int i = 0; i < n_ops_; ++i) move(w_[i].at, delta_.op[i], 1);
        ++s_;
    }

    /// The window counters and the steps made: what skip_periods() moves (a runner skipping whole
    /// periods of steps compares two of them).
    struct counters {
        slot_counters op[max_operands]{};
        index_t steps = 0;
    };
    [[nodiscard]] constexpr counters counters_now() const {
        counters c;
        for (int i = 0; i < n_ops_; ++i) c.op[i] = w_[i].at;
        c.steps = s_;
        return c;
    }
    /// Makes m periods of steps without listing their events, each moving the counters as the
    /// period from `from` to now did (the caller checked with periodic_steps() that they repeat
    /// it). The last step's shape and delta stay: the step m periods on has the same.
    constexpr void skip_periods(const counters& from, index_t m) {
        for (int i = 0; i < n_ops_; ++i) move(w_[i].at, difference(w_[i].at, from.op[i]), m);
        s_ += m * (s_ - from.steps);
    }
    /// How many of the next steps (at most `want`) are certain to issue the events of the step
    /// `p` before each, slots aside: both have a nonzero shape (see shape()) and every change bit
    /// shape() reads of them is the same. The bits are compared as rows of pass 1's table, a
    /// block of bytes at a time.
    [[nodiscard]] constexpr index_t periodic_steps(index_t p, index_t want) const
        requires std::is_same_v<Changes, table_changes>
    {
        if (done_ || has_lookahead_ || no_pipelining_ || max_prefetched_ > 0 || p <= 0 || s_ - p < 1) return 0;
        index_t lim = std::min(want, n_ - depth_ + 1 - s_);  // steps up to n - depth have a shape
        const index_t g = begin_ + s_;
        const change_table& table = ch_.table();
        for (int k = 0; k < n_windowed() && lim > 0; ++k) {
            const int op = windowed(k);
            const index_t reach = op < n_in_ && w_[op].buffers > 2 ? w_[op].buffers - 1 : 1;
            // The first t >= g whose bit differs from t - p's, among those the steps read (runs of
            // bits contiguous in the table's chunks; two runs stored once are equal).
            const index_t end = g + lim + reach;
            index_t t = g;
            constexpr index_t chunk = 256;
            while (t < end) {
                index_t na = 0, nb = 0;
                const std::uint8_t* a = table.from(op, t, na);
                const std::uint8_t* b = table.from(op, t - p, nb);
                const index_t len = std::min({chunk, end - t, na, nb});
                if (std::is_constant_evaluated() || (a != b && !detail::same_bytes(a, b, len))) {
                    index_t u = 0;
                    while (u < len && a[u] == b[u]) ++u;
                    if (u < len) {
                        t += u;
                        break;
                    }
                }
                t += len;
            }
            lim = std::min(lim, t - reach - g);  // a step reads bits up to reach after it
        }
        return std::max<index_t>(lim, 0);
    }

    /// Appends the events of the core's next grid step to `out` (anything with push_back(event));
    /// false, appending nothing, once the pipeline has ended.
    template <class Out>
    constexpr bool next_step(Out& out) {
        if (done_) return false;
        // The shape and counter moves serve the runner's repeated steps (run time only; a
        // static plan's compile time does without them).
        if (std::is_constant_evaluated()) {
            make_step(out);
            return true;
        }
        last_shape_ = shape();
        const counters before = counters_now();
        make_step(out);
        for (int i = 0; i < n_ops_; ++i) delta_.op[i] = difference(w_[i].at, before.op[i]);
        return true;
    }

    /// The next event, in issue order; false once the pipeline has ended.
    constexpr bool next(event& e) {
        if (pos_ == buf_.size()) {
            buf_.clear();
            pos_ = 0;
            if (!next_step(buf_)) return false;
        }
        e = buf_[pos_++];
        return true;
    }

private:
    static constexpr slot_counters difference(const slot_counters& a, const slot_counters& b) {
        return {a.copy_in - b.copy_in, a.wait_in - b.wait_in, a.copy_out - b.copy_out, a.wait_out - b.wait_out};
    }
    // c += m · d
    static constexpr void move(slot_counters& c, const slot_counters& d, index_t m) {
        c.copy_in += m * d.copy_in;
        c.wait_in += m * d.wait_in;
        c.copy_out += m * d.copy_out;
        c.wait_out += m * d.wait_out;
    }

    // The questions each step asks of an operand's blocks, as upstream's pipeline names them.
    // (Pass 1's table is read directly: a static plan makes these calls at compile time, where
    // every call level costs.)

    // Whether operand op's block at global step g differs from step g - 1's (or g starts the core).
    [[nodiscard]] constexpr bool has_changed(int op, index_t g) {
        if constexpr (std::is_same_v<Changes, table_changes>)
            return rows_[op] != nullptr ? rows_[op][g] != 0 : ch_(op, g);
        else
            return ch_(op, g);
    }
    // Whether the block of step s (global g) is not the last step's: the first step, or changed.
    [[nodiscard]] constexpr bool is_new_block(int op, index_t s, index_t g) {
        return s == 0 || has_changed(op, g);
    }
    // Whether the block of step s (global g) is the last of its run: the last step, or the next
    // step's differs (its window then advances, or its output block is written back).
    [[nodiscard]] constexpr bool will_change_current(int op, index_t s, index_t g) {
        return s == n_ - 1 || has_changed(op, g + 1);
    }
    // Whether step s (global g) fetches input op's block of step s + bc - 1 into its free slot
    // (bc >= 2, S23.1): that step exists and its block differs from the one before it.
    [[nodiscard]] constexpr bool will_change_fetch(int op, index_t s, index_t g, int bc) {
        return s <= n_ - bc && has_changed(op, g + bc - 1);
    }
    template <class Out>
    constexpr void put(Out& out, event_kind k, int op, index_t slot, index_t step, index_t block_step) const {
        out.push_back(event{k, static_cast<std::uint8_t>(core_), static_cast<std::uint8_t>(op),
                            static_cast<std::uint8_t>(slot), static_cast<std::uint32_t>(step),
                            static_cast<std::uint32_t>(block_step), pipeline_});
    }

    // S32: fetch the next distinct blocks after the last one considered into the slots the
    // window has released, at most `max` of them (lookahead_fill).
    template <class Out>
    constexpr void fill(Out& out, int i, index_t g, index_t max) {
        window_state& w = w_[i];
        const index_t limit = std::min(w.at.wait_in + w.buffers, w.at.copy_in + max);
        for (index_t q = w.last_filled + 1; w.at.copy_in < limit && q < n_; ++q) {
            if (has_changed(i, begin_ + q)) put(out, event_kind::fetch, i, w.slot(w.at.copy_in++), g, begin_ + q);
            w.last_filled = q;
        }
    }

    template <class Out>
    constexpr void make_step(Out& out) {
        const index_t s = s_;
        const index_t g = begin_ + s;
        if constexpr (!std::is_same_v<Changes, table_changes>) ch_.forget_before(g);
        if (no_pipelining_) {  // S54: every block in, the body, every block out; one slot, never advanced
            put(out, event_kind::step, 0, 0, g, g);
            for (int i = 0; i < n_in_; ++i)
                if (w_[i].windowed) put(out, event_kind::sync_in, i, 0, g, g);
            put(out, event_kind::body, 0, 0, g, g);
            for (int o = n_in_; o < n_ops_; ++o)
                if (w_[o].windowed) put(out, event_kind::sync_out, o, 0, g, g);
            ++s_;
            done_ = s_ == n_;
            return;
        }
        if (s == 0) prologue(out);
        const bool last = s == n_ - 1;
        put(out, event_kind::step, 0, 0, g, g);
        for (int k = 0; k < n_inputs_; ++k) {  // S23.1: bc >= 2 fetches step g+bc-1's block when it changes
            const int i = inputs_[k];
            window_state& w = w_[i];
            if (w.lookahead) {
                fill(out, i, g, index_t{1} << 40);
            } else if (w.buffers >= 2) {
                if (will_change_fetch(i, s, g, w.buffers))
                    put(out, event_kind::fetch, i, w.slot(w.at.copy_in++), g, g + w.buffers - 1);
            } else if (is_new_block(i, s, g)) {
                ++w.at.copy_in;
                put(out, event_kind::fetch, i, 0, g, g);
            }
        }
        for (int k = 0; k < n_inputs_; ++k) {  // S23.2
            const int i = inputs_[k];
            if (is_new_block(i, s, g) && s >= w_[i].prefetched)  // S55: no wait for the caller's slots
                put(out, event_kind::wait_in, i, w_[i].slot(w_[i].at.wait_in), g, g);
        }
        for (int k = 0; k < n_outputs_; ++k) {  // S40 [M]: revisit_any outputs get their block back on a change
            const int o = outputs_[k];
            if (w_[o].revisit_any && is_new_block(o, s, g))
                put(out, event_kind::restore, o, w_[o].slot(w_[o].at.copy_out), g, g);
        }
        for (int k = 0; k < n_inputs_ && max_prefetched_ > 0; ++k)  // S55: no wait names the body's slot then
            body_slot_[inputs_[k]] = static_cast<int>(w_[inputs_[k]].slot(w_[inputs_[k]].at.wait_in));
        put(out, event_kind::body, 0, 0, g, g);
        for (int k = 0; k < n_outputs_; ++k) {  // S23.4: at the last step of each output run
            const int o = outputs_[k];
            window_state& w = w_[o];
            if (will_change_current(o, s, g))
                put(out, w.buffers == 1 ? event_kind::write_sync : event_kind::write, o, w.slot(w.at.copy_out++), g, g);
        }
        for (int k = 0; k < n_outputs_; ++k) {  // S23.5: the previous run's write, issued at step g-1
            const int o = outputs_[k];
            window_state& w = w_[o];
            if (w.buffers > 1 && s > 0 && has_changed(o, g))
                put(out, event_kind::wait_out, o, w.slot(w.at.wait_out++), g, g - 1);
        }
        for (int k = 0; k < n_inputs_; ++k) {  // S23.6 advance: an input's window moves on when the next step changes it
            const int i = inputs_[k];
            if (will_change_current(i, s, g)) ++w_[i].at.wait_in;
        }
        ++s_;
        if (last) {
            for (int k = 0; k < n_outputs_; ++k) {  // S24
                const int o = outputs_[k];
                window_state& w = w_[o];
                if (w.buffers > 1) put(out, event_kind::wait_out, o, w.slot(w.at.wait_out++), end_ - 1, end_ - 1);
            }
            for (int o = n_in_; o < n_ops_; ++o)
                if (w_[o].trivial) put(out, event_kind::sync_out, o, 0, end_ - 1, end_ - 1);
            done_ = true;
        }
    }
    // The first step's copies before its own: the trivially-windowed inputs' sync copies, then
    // the prologue's fetches.
    template <class Out>
    constexpr void prologue(Out& out) {
        for (int i = 0; i < n_in_; ++i)  // S22.2: trivially-windowed inputs, once, before the prologue
            if (w_[i].trivial && w_[i].prefetched < 1) put(out, event_kind::sync_in, i, 0, begin_, begin_);  // S55
        for (index_t t = 0; t + 1 < depth_; ++t)  // S22.3, clamped to t < n (Q2 [M])
            for (int k = 0; k < n_inputs_; ++k) {
                const int i = inputs_[k];
                window_state& w = w_[i];
                if (t + 1 >= w.buffers || t >= n_) continue;
                if (t < w.prefetched) {  // S55: the caller filled this slot; its fetch is skipped
                    if (w.lookahead) w.last_filled = t;
                    ++w.at.copy_in;
                    continue;
                }
                if (w.lookahead) {  // S32: block 0, then one fill of one fetch per t
                    if (t == 0) {
                        w.last_filled = 0;
                        put(out, event_kind::fetch, i, w.slot(w.at.copy_in++), begin_, begin_);
                    } else {
                        fill(out, i, begin_, 1);
                    }
                } else if (t == 0 || has_changed(i, begin_ + t)) {
                    put(out, event_kind::fetch, i, w.slot(w.at.copy_in++), begin_, begin_ + t);
                }
            }
    }

    int n_in_ = 0, n_ops_ = 0;
    int core_;
    std::uint8_t pipeline_ = 0;
    Changes ch_;
    const std::uint8_t* rows_[max_operands]{};  // table_changes, a flat table: each operand's change bits
    index_t begin_ = 0, end_ = 0, n_ = 0;
    int depth_ = 2;  // S = max(2, max bc)
    // The windowed operands that are not trivially windowed: inputs, outputs.
    int n_inputs_ = 0, n_outputs_ = 0;
    int inputs_[max_operands]{}, outputs_[max_operands]{};
    window_state w_[max_operands]{};
    int max_prefetched_ = 0;
    int body_slot_[max_operands]{};
    bool has_lookahead_ = false;
    bool no_pipelining_ = false;  // S54
    index_t s_ = 0;
    bool done_ = true;
    step_events buf_{};  // next()'s current step
    std::size_t pos_ = 0;
    std::uint64_t last_shape_ = 0;
    step_delta delta_{};
};

/// A call's per-core schedule, its change bits from the planner's pass 1.
using core_schedule = basic_schedule<table_changes>;

}  // namespace ptpu
