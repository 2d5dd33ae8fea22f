// Defines pass 1 of the planner: the walk of the grid that evaluates every index map once per
// step, checks each block index (4, 5, S34, S38) and output revisits (S39, MC1), and records where
// each operand's block changes. Index maps are inlined into the walk (scan_operand) or called
// through a block_fn.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/schedule/geometry.hpp"
#include "ptpu/schedule/info.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// The host bytes a plan's tables may take by default (run_options::memory_budget): pass 1's change
/// bits (which take memory for the distinct chunks of their period, change_table) and the output
/// runs kept for the revisit checks when they are not in order. Past it, MEM1.
inline constexpr index_t default_memory_budget = index_t{1} << 30;

/// Pass 1's change bits, per operand and step (see plan_tables), kept in chunks of `len` steps:
/// chunk k of an operand holds steps [k len, (k + 1) len). Equal chunks are stored once, so a grid
/// whose change bits repeat with a period (which is what lets a run skip whole periods) takes
/// memory for the distinct chunks that period gives, not for the grid's length (docs/model.md
/// §11, "Memory"). A grid of at most flat_steps steps is one chunk per operand: a flat row, as
/// static plans read it at compile time.
class change_table {
public:
    static constexpr index_t flat_steps = index_t{1} << 16;
    static constexpr int chunk_shift = 12;  // 4096 steps a chunk past flat_steps

    constexpr change_table() = default;
    /// Room for n_ops operands of `steps` steps: false (nothing allocated) when the chunks' index
    /// alone would take more than `budget` bytes.
    constexpr bool reset(int n_ops, index_t steps, index_t budget) {
        n_ops_ = n_ops;
        steps_ = steps;
        flat_ = steps <= flat_steps;
        shift_ = flat_ ? 62 : chunk_shift;
        len_ = flat_ ? steps : index_t{1} << chunk_shift;
        mask_ = flat_ ? ~index_t{0} : len_ - 1;
        n_chunks_ = flat_ ? 1 : (steps + len_ - 1) / len_;
        const index_t n = static_cast<index_t>(n_ops) * n_chunks_;
        if (!flat_ && n > budget / static_cast<index_t>(sizeof(index_t))) return false;
        at_.assign(static_cast<std::size_t>(n), 0);
        pool_.clear();
        index_.clear();
        if (flat_) {  // each operand's row at op * steps
            pool_.assign(static_cast<std::size_t>(n_ops * steps), 0);
            for (int i = 0; i < n_ops; ++i) at_[static_cast<std::size_t>(i)] = i * steps;
        }
        return true;
    }
    [[nodiscard]] constexpr bool flat() const { return flat_; }
    [[nodiscard]] constexpr index_t chunk_steps() const { return len_; }
    [[nodiscard]] constexpr index_t chunks() const { return n_chunks_; }
    /// Operand op's change bit at step g (0 or 1).
    [[nodiscard]] constexpr std::uint8_t operator()(int op, index_t g) const {
        const index_t at = at_[static_cast<std::size_t>(op * n_chunks_ + (g >> shift_))];
        return pool_[static_cast<std::size_t>(at + (g & mask_))];
    }
    /// Operand op's bits from step g on, as far as they are contiguous (to the end of g's chunk):
    /// their count in `n`.
    [[nodiscard]] constexpr const std::uint8_t* from(int op, index_t g, index_t& n) const {
        const index_t k = g >> shift_;
        const index_t off = g & mask_;
        n = std::min(len_ - off, steps_ - g);
        return pool_.data() + at_[static_cast<std::size_t>(op * n_chunks_ + k)] + off;
    }
    /// A flat table's row of operand op (flat() only): its bits at steps 0..steps-1.
    [[nodiscard]] constexpr std::uint8_t* row(int op) { return pool_.data() + op * steps_; }
    [[nodiscard]] constexpr const std::uint8_t* row(int op) const { return pool_.data() + op * steps_; }
    /// Host bytes the table holds.
    [[nodiscard]] constexpr index_t bytes() const {
        return static_cast<index_t>(pool_.capacity() + sizeof(index_t) * (at_.capacity() + index_.capacity()));
    }
    /// Stores chunk k of operand op (`bits`, len bytes, zero past the last step), or points it at
    /// an equal chunk already stored. False (nothing stored) when a new chunk would take the
    /// table past `budget` bytes.
    constexpr bool commit(int op, index_t k, const std::uint8_t* bits, index_t budget) {
        index_t& at = at_[static_cast<std::size_t>(op * n_chunks_ + k)];
        // The chunk before is the usual match (a period dividing the chunk); then any stored one.
        if (k > 0 && same(pool_.data() + at_[static_cast<std::size_t>(op * n_chunks_ + k - 1)], bits)) {
            at = at_[static_cast<std::size_t>(op * n_chunks_ + k - 1)];
            return true;
        }
        const std::uint64_t h = hash(bits);
        const std::size_t slots = index_.size();
        if (slots > 0)
            for (std::size_t j = h & (slots - 1);; j = (j + 1) & (slots - 1)) {
                const index_t e = index_[j];
                if (e == 0) break;
                if (same(pool_.data() + (e - 1), bits)) {
                    at = e - 1;
                    return true;
                }
            }
        const auto used = static_cast<index_t>(pool_.size());
        const auto cap = static_cast<index_t>(pool_.capacity());
        const index_t stored = used / len_;
        const bool grow = 2 * (stored + 1) > static_cast<index_t>(slots);
        // Growth at most doubles the pool and the index: the budget must hold both.
        const index_t pool_next = used + len_ > cap ? 2 * (used + len_) : cap;
        index_t index_next = static_cast<index_t>(slots);  // a power of two, at least twice the chunks stored
        if (grow) index_next = std::max<index_t>(16, 2 * index_next);
        constexpr auto word = static_cast<index_t>(sizeof(index_t));
        if (pool_next + word * (index_next + static_cast<index_t>(at_.capacity())) > budget) return false;
        at = static_cast<index_t>(pool_.size());
        pool_.insert(pool_.end(), bits, bits + len_);
        if (grow) {
            rehash(static_cast<std::size_t>(index_next));
        } else {
            insert(at, h);
        }
        return true;
    }

private:
    [[nodiscard]] constexpr bool same(const std::uint8_t* a, const std::uint8_t* b) const {
        if (!std::is_constant_evaluated()) return std::memcmp(a, b, static_cast<std::size_t>(len_)) == 0;
        for (index_t j = 0; j < len_; ++j)
            if (a[j] != b[j]) return false;
        return true;
    }
    [[nodiscard]] constexpr std::uint64_t hash(const std::uint8_t* b) const {
        std::uint64_t h = 1469598103934665603ull;
        for (index_t j = 0; j < len_; j += 8) {
            std::uint64_t w = 0;
            for (index_t q = 0; q < 8 && j + q < len_; ++q) w |= std::uint64_t{b[j + q]} << (8 * q);
            h = (h ^ w) * 1099511628211ull;
        }
        return h ^ (h >> 29);
    }
    constexpr void insert(index_t at, std::uint64_t h) {
        const std::size_t slots = index_.size();
        std::size_t j = h & (slots - 1);
        while (index_[j] != 0) j = (j + 1) & (slots - 1);
        index_[j] = at + 1;
    }
    constexpr void rehash(std::size_t slots) {
        index_.assign(slots, 0);
        for (index_t at = 0; at < static_cast<index_t>(pool_.size()); at += len_) insert(at, hash(pool_.data() + at));
    }

    int n_ops_ = 0;
    index_t steps_ = 0;
    bool flat_ = true;
    int shift_ = 62;
    index_t len_ = 0, mask_ = 0, n_chunks_ = 0;
    std::vector<std::uint8_t> pool_;  // the distinct chunks, len_ bytes each (flat: the rows)
    std::vector<index_t> at_;         // at_[op * n_chunks_ + k]: where chunk k of op is in pool_
    std::vector<index_t> index_;      // the stored chunks by hash: offset + 1 (0: empty slot)
};

namespace detail {

struct run {
    index_tuple<max_rank> block;
    int op;
    int core;
    index_t first;
    index_t last;
    friend constexpr bool operator<(const run& a, const run& b) {
        if (a.op != b.op) return a.op < b.op;
        if (a.block != b.block) return a.block < b.block;
        return a.first < b.first;
    }
};

// Pass 1 of analyze() for one operand: visit(s, b) sees its block index b at every grid step s in
// order, checks it and records the change bits and output runs. The walk goes a chunk of the
// change table at a time (begin_chunk, end_chunk).
//
// The revisit checks (S39, MC1) first assume the output's runs come in strictly increasing or
// strictly decreasing order of block index (`monotone`): then no block is written twice, and
// nothing need be kept but the last run's block. The first run out of that order stops the walk
// with `rescan` set, and the caller walks the operand again keeping every run (the table or the
// list below), which finds the revisit if there is one and says where.
// (Hot loops use built-in arrays and raw pointers: g++ evaluates them several times faster than
// std::array / std::vector operator[] at compile time.)
struct operand_scan {
    const pipeline_desc& c;
    const operand_desc& o;
    plan_info& info;
    change_table& table;
    std::uint8_t* ch = nullptr;  // this operand's change bits of the current chunk: ch[s - base]
    index_t base = 0;
    std::vector<std::uint8_t> chunk;  // the current chunk (a chunked table)
    std::vector<run>& runs;
    index_t budget;  // host bytes the table and the runs may take (MEM1)
    int i;
    index_t n_steps;
    bool track_runs;
    bool monotone;   // revisit checks by the runs' order (see above)
    bool rescan = false;
    int dir = 0;     // monotone: 1 increasing, -1 decreasing, 0 not known yet
    bool have_run = false;
    index_tuple<max_rank> last_run{};
    bool all_zero = true;
    bool constant = true;
    index_tuple<max_rank> first{};
    index_tuple<max_rank> prev{};
    // Revisit bookkeeping (S39, MC1): which run last wrote each block, in a table indexed by the
    // block's linear id when the block grid is small enough, else in a list sorted afterwards.
    index_t id_stride[max_rank]{};
    index_t n_ids = 1;
    bool use_table = false;
    std::vector<index_t> writer_store;
    index_t* writer = nullptr;  // 0: unwritten; else max_cores*first_step + core + 1
    bool checked;  // its blocks must lie in the array: a window's, or an aliased view's (S17)
    // in_bounds(o, d, e) is 0 <= e.start < limit[d] when limit[d] >= 0 (no division per step).
    index_t limit[max_rank]{};
    // Bounded slices are checked against their contract (S38) when the front end has them
    // (emit_pipeline); else they stay S34's (pallas_call then reports check 18 after the walk).
    // tile[d]: the start alignment S38 requires with tiling (dma_tile), 1 (or 0) for none.
    bool check_slices = false;
    index_t tile[max_rank]{};
    bool slice_dim[max_rank]{};  // dim d's block is a bounded slice (hoisted out of the walk)

    constexpr operand_scan(const pipeline_desc& call, int op, plan_info& pi, change_table& t, std::vector<run>& r,
                           bool try_monotone, index_t bytes)
        : c(call),
          o(call.ops[static_cast<std::size_t>(op)]),
          info(pi),
          table(t),
          runs(r),
          budget(bytes),
          i(op),
          n_steps(call.steps()),
          track_runs(o.role == operand_role::output && o.windowed()),
          monotone(try_monotone && track_runs),
          checked(o.windowed() || o.aliased) {
        for (int d = 0; d < o.rank; ++d) {
            const block_dim& bd = o.block[static_cast<std::size_t>(d)];
            const index_t dim = o.shape[static_cast<std::size_t>(d)];
            slice_dim[d] = bd.kind == dim_kind::bounded_slice;
            limit[d] = bd.kind == dim_kind::blocked    ? cdiv(dim, bd.size)
                       : bd.kind == dim_kind::squeezed ? dim
                       : bd.kind == dim_kind::element  ? dim + bd.pad_lo + bd.pad_hi - bd.size + 1
                       : bd.kind == dim_kind::invalid  ? 0
                                                       : -1;  // bounded_slice: the slice's own size too
        }
        if (track_runs)
            for (int d = o.rank - 1; d >= 0; --d) {
                const block_dim& bd = o.block[static_cast<std::size_t>(d)];
                const index_t dim = o.shape[static_cast<std::size_t>(d)];
                const index_t n = bd.kind == dim_kind::blocked   ? cdiv(dim, bd.size)
                                  : bd.kind == dim_kind::element ? dim + bd.pad_lo + bd.pad_hi - bd.size + 1
                                                                 : dim;
                id_stride[d] = n_ids;
                // Past 2^22 the table is not used: stop there (the product may overflow, V3).
                if (n_ids <= (index_t{1} << 22) && !mul_fits(n_ids, std::max<index_t>(n, 1), n_ids))
                    n_ids = (index_t{1} << 22) + 1;
            }
        // The table is keyed by block starts: a bounded_slice output (whose blocks differ in
        // size too, S10) keeps the list, compared on whole block indices.
        bool sliced = false;
        for (int d = 0; d < o.rank; ++d) sliced = sliced || o.block[static_cast<std::size_t>(d)].kind == dim_kind::bounded_slice;
        use_table = track_runs && !monotone && !sliced && n_ids <= (index_t{1} << 22);
        writer_store.assign(use_table ? static_cast<std::size_t>(n_ids) : 0, 0);
        writer = writer_store.data();
        if (!t.flat()) chunk.assign(static_cast<std::size_t>(t.chunk_steps()), 0);
    }

    // The chunk of steps from s0 (a multiple of the table's chunk_steps()) is walked next.
    constexpr void begin_chunk(index_t s0) {
        base = s0;
        ch = table.flat() ? table.row(i) : chunk.data();
    }
    // The chunk from base is walked: it goes into the table. False when the table would exceed
    // the budget (MEM1).
    constexpr bool end_chunk() {
        if (table.flat()) return true;
        const index_t len = table.chunk_steps();
        for (index_t s = n_steps - base; s < len; ++s) chunk[static_cast<std::size_t>(s)] = 0;  // past the last step
        if (table.commit(i, base / len, chunk.data(), budget - held())) return true;
        over_budget(base);
        return false;
    }
    // Host bytes the revisit checks hold (the table's are the table's).
    [[nodiscard]] constexpr index_t held() const {
        return static_cast<index_t>(runs.capacity() * sizeof(run) + writer_store.capacity() * sizeof(index_t) +
                                    chunk.capacity());
    }
    constexpr void over_budget(index_t s) {
        diag p = fail(rule::mem1, i, -1, table.bytes() + held(), budget);
        p.c = s;
        p.at[0] = iteration_of(c, s);
        info.problem = p;
    }
    // Operand i's change bit at step t <= the step being walked.
    [[nodiscard]] constexpr std::uint8_t bit(index_t t) const {
        return t >= base ? ch[t - base] : table(i, t);
    }

    [[nodiscard]] constexpr bool core_start(index_t s) const {
        if (s == info.core_begin[0]) return true;
        for (int k = 1; k < info.cores; ++k)
            if (s == info.core_begin[static_cast<std::size_t>(k)]) return true;
        return false;
    }
    // The block index as the planner keeps it: `rank` entries, the rest {0, -1} (eval_map).
    [[nodiscard]] constexpr index_tuple<max_rank> padded(const index_entry* b) const {
        index_tuple<max_rank> t{};
        for (int d = 0; d < o.rank; ++d) t.v[d] = b[d];
        return t;
    }
    template <int Rank>
    [[nodiscard]] constexpr bool same(const index_entry* a, const index_entry* b) const {
        const int n = Rank > 0 ? Rank : o.rank;
        for (int d = 0; d < n; ++d)
            if (!(a[d] == b[d])) return false;
        return true;
    }

    // Step s's block index, its first o.rank entries. False when a rule is broken (info.problem
    // says which). Rank > 0: the operand's rank, known when the map returns exactly that many
    // entries (its loops then have a constant count).
    template <int Rank = 0, std::size_t R>
    [[gnu::always_inline]] constexpr bool visit(index_t s, const index_tuple<R>& t) {
        return visit_entries<Rank, R>(s, t.v);
    }
    // The same with the block index's R entries at b (R: Rank, or max_rank when Rank is 0).
    template <int Rank, std::size_t R>
    [[gnu::always_inline]] constexpr bool visit_entries(index_t s, const index_entry* b) {
        const bool differs = s == 0 || !same<Rank>(b, prev.v);
        if (differs && constant && s > 0) constant = same<Rank>(b, first.v);
        if (differs) {
            const auto n = static_cast<std::size_t>(Rank > 0 ? Rank : o.rank);
            for (std::size_t d = 0; d < n; ++d) {
                const bool want_slice = slice_dim[d];
                if (want_slice != b[d].is_slice()) {
                    info.problem = fail(want_slice ? rule::r4 : rule::r5, i, static_cast<int>(d));
                    return false;
                }
                all_zero = all_zero && b[d].start == 0;
                const index_t lim = limit[d];
                if (lim < 0 && check_slices && checked) {
                    const rule r = slice_problem(o, d, b[d], tile[d]);
                    if (r != rule::ok) {
                        slice_failed(s, b, d, r);
                        return false;
                    }
                    continue;
                }
                const bool inside = lim >= 0 ? b[d].start >= 0 && b[d].start < lim : in_bounds(o, d, b[d]);
                if (checked && !inside) {
                    diag p = fail(rule::s34, i, static_cast<int>(d), s);
                    p.block = padded(b);
                    p.at[0] = iteration_of(c, s);
                    p.d = o.rank;
                    info.problem = p;
                    return false;
                }
            }
            // The whole tuple (R is the rank, or max_rank padded with {0, -1}), field by field: the
            // map has just stored it field by field, and wider loads would stall on store forwarding.
            for (std::size_t d = 0; d < R && d < max_rank; ++d) prev.v[d].start = b[d].start;
            for (std::size_t d = 0; d < R && d < max_rank; ++d) prev.v[d].size = b[d].size;
            if (s == 0) first = prev;
        }
        const bool starts = differs || core_start(s);
        ch[s - base] = starts ? 1 : 0;
        if (track_runs && starts && !record_run<Rank>(s, prev)) return false;
        return true;
    }

    // S38 on dim d of step s's block b: the diag names the operand, the step and the values.
    constexpr void slice_failed(index_t s, const index_entry* b, std::size_t d, rule r) {
        diag p = fail(r, i, static_cast<int>(d), s);
        p.block = padded(b);
        p.at[0] = iteration_of(c, s);
        p.d = o.rank;
        p.bytes[0] = o.block[d].size;
        p.bytes[1] = o.shape[d];
        p.bytes[2] = tile[d];
        info.problem = p;
    }

    template <int Rank>
    [[gnu::always_inline]] constexpr bool record_run(index_t s, const index_tuple<max_rank>& b) {
        if (monotone) return in_order<Rank>(b);
        int core = 0;  // the core whose range holds s (the ranges are consecutive)
        while (core + 1 < info.cores && s >= info.core_begin[static_cast<std::size_t>(core + 1)]) ++core;
        if (!use_table) {
            if (runs.size() == runs.capacity() &&
                static_cast<index_t>((2 * runs.size() + 1) * sizeof(run)) > budget - table.bytes() - held()) {
                over_budget(s);
                return false;
            }
            runs.push_back({b, i, core, s, s});
            return true;
        }
        index_t id = 0;
        const int n = Rank > 0 ? Rank : o.rank;
        for (int d = 0; d < n; ++d) id += b.v[d].start * id_stride[d];
        const index_t w = writer[id];
        if (w == 0) {
            writer[id] = static_cast<index_t>(max_cores) * s + core + 1;
            return true;
        }
        return revisit(s, b, id, w, core);
    }

    // Whether the run of block b keeps the runs in strictly monotone order (else `rescan`).
    template <int Rank>
    [[gnu::always_inline]] constexpr bool in_order(const index_tuple<max_rank>& b) {
        if (have_run) {
            const int n = Rank > 0 ? Rank : o.rank;
            int cmp = 0;  // 1: last_run < b, -1: b < last_run
            for (int d = 0; d < n && cmp == 0; ++d) {
                const index_entry& x = last_run.v[d];
                const index_entry& y = b.v[d];
                if (x.start != y.start) cmp = x.start < y.start ? 1 : -1;
                else if (x.size != y.size) cmp = x.size < y.size ? 1 : -1;
            }
            if (cmp == 0 || (dir != 0 && cmp != dir)) {
                rescan = true;
                return false;
            }
            dir = cmp;
        }
        have_run = true;
        for (int d = 0; d < (Rank > 0 ? Rank : o.rank); ++d) last_run.v[d] = b.v[d];
        return true;
    }

    // A block written again (S39, MC1): fine only for a revisit_any output on the same core.
    constexpr bool revisit(index_t s, const index_tuple<max_rank>& b, index_t id, index_t w, int core) {
        constexpr auto n = static_cast<index_t>(max_cores);
        if (!(o.revisit_any && (w - 1) % n == core)) {
            const index_t first_step = (w - 1) / n;
            const int first_core = static_cast<int>((w - 1) % n);
            index_t last_step = first_step;
            while (last_step + 1 < s && bit(last_step + 1) == 0) ++last_step;
            diag p = fail(first_core == core ? rule::s39 : rule::mc1, i);
            p.block = b;
            p.d = o.rank;
            p.a = first_core;
            p.b = last_step;
            p.c = core;
            p.at[0] = iteration_of(c, first_step);
            p.at[1] = iteration_of(c, last_step);
            p.at[2] = iteration_of(c, s);
            info.problem = p;
            return false;
        }
        writer[id] = static_cast<index_t>(max_cores) * s + core + 1;
        return true;
    }
};

/// Walks the grid row-major, last axis fastest (S13), handing `scan` the block index `eval(point)`
/// of every step. One loop for both ways of evaluating a map: through a block_fn, and inlined
/// (scan_operand below).
template <int Rank, class Eval>
constexpr bool scan_steps_as(const pipeline_desc& c, operand_scan& scan, Eval& eval) {
    index_t point[max_rank]{};
    index_t grid[max_rank]{};
    for (int d = 0; d < c.grid_rank; ++d) grid[d] = c.grid[static_cast<std::size_t>(d)];
    const index_t n_steps = c.steps();
    const index_t len = scan.table.chunk_steps();
    for (index_t s0 = 0; s0 < n_steps; s0 += len) {
        scan.begin_chunk(s0);
        const index_t s1 = std::min(n_steps, s0 + len);
        for (index_t s = s0; s < s1; ++s) {
            if (s > 0)
                for (int d = c.grid_rank - 1; d >= 0; --d) {
                    if (++point[d] < grid[d]) break;
                    point[d] = 0;
                }
            if (!scan.template visit<Rank>(s, eval(static_cast<const index_t*>(point)))) return false;
        }
        if (!scan.end_chunk()) return false;
    }
    return true;
}
template <class T>
inline constexpr int tuple_rank = 0;
template <std::size_t R>
inline constexpr int tuple_rank<index_tuple<R>> = R < max_rank ? static_cast<int>(R) : 0;
template <std::size_t R, std::uint64_t M>
inline constexpr int tuple_rank<index_tuple_of<R, M>> = tuple_rank<index_tuple<R>>;

template <class Eval>
constexpr bool scan_steps(const pipeline_desc& c, operand_scan& scan, Eval&& eval) {
    // A map returning exactly the operand's rank of entries: the walk with constant loop counts.
    // Only that walk is instantiated for it: a map of another length is R2, which validate()
    // reports before any walk (and a walk over it would read past the entries it returns).
    constexpr int r = tuple_rank<std::remove_cvref_t<decltype(eval(static_cast<const index_t*>(nullptr)))>>;
    if constexpr (r > 0) {
        if (scan.o.rank != r) {
            scan.info.problem = fail(rule::r2, scan.i, -1, r, scan.o.rank);
            return false;
        }
        return scan_steps_as<r>(c, scan, eval);
    } else {
        return scan_steps_as<0>(c, scan, eval);
    }
}

}  // namespace detail

namespace detail {
// An error an index map raised while reading scalar-prefetch refs (R2 for an index out of
// range), again with the operand and the grid iteration it was evaluated at.
#if defined(PTPU_DEFINE_COMPILED)
[[noreturn, gnu::cold, gnu::noinline]] PTPU_COMPILED void rethrow_from_map(const error& e,
                                                                           const pipeline_desc& c, int op,
                                                                           const index_t* p) {
    std::string at = "(";
    for (int d = 0; d < c.grid_rank; ++d) at += (d ? ", " : "") + std::to_string(p[d]);
    throw error(std::string(e.what()) + " (in the index map of " + (op < c.n_in ? "input " : "output ") +
                std::to_string(op < c.n_in ? op : op - c.n_in) + " at iteration " + at + "))");
}
#else
[[noreturn, gnu::cold, gnu::noinline]] PTPU_COMPILED void rethrow_from_map(const error& e,
                                                                           const pipeline_desc& c, int op,
                                                                           const index_t* p);
#endif
}  // namespace detail

/// Pass 1 of analyze for one operand with its index map inlined (several times faster at run
/// time than calling it through a block_fn): `&scan_operand<Spec, G, Ctx>` for eval_map's
/// arguments.
using scan_fn = bool (*)(const pipeline_desc&, const void* ctx, detail::operand_scan&);
template <class Spec, std::size_t G, class Ctx>
constexpr bool scan_operand(const pipeline_desc& c, const void* ctx, detail::operand_scan& scan) {
    using Map = std::remove_cvref_t<decltype(Spec::index_map)>;
    if constexpr (std::is_same_v<Map, zero_map_t>) {
        return detail::scan_steps(c, scan, [](const index_t*) { return index_tuple<max_rank>{}; });
    } else if constexpr (detail::is_index_tuple<
                             std::remove_cvref_t<typename detail::map_call_t<Spec, G, Ctx>::result>>) {
        // The map's own index_tuple<rank>, not padded (its size is the rank: validate() ran first).
        return detail::scan_steps(c, scan, [&](const index_t* p) {
            if constexpr (std::is_void_v<Ctx>) {
                return detail::map_call_t<Spec, G, Ctx>::call(Spec::index_map, p, ctx);
            } else {  // the map reads prefetch refs: say where a bad read happened (R2)
                try {
                    return detail::map_call_t<Spec, G, Ctx>::call(Spec::index_map, p, ctx);
                } catch (const error& e) {
                    detail::rethrow_from_map(e, c, scan.i, p);
                }
            }
        });
    } else {  // a malformed map: analyze() stops before pass 1
        return detail::scan_steps(c, scan,
                                  [ctx](const index_t* p) { return detail::eval_map<Spec, G, Ctx>(p, ctx); });
    }
}

namespace detail {
// Pass 1 of a map given at run time (dynamic_map): the walk and its checks are compiled once,
// and each map compiles only a loop that evaluates it over a batch of steps (fill_fn), whose
// block indices the walk then visits. The batch is kept in memory between the two, so the walk
// is not fused with the map as scan_operand's is.
//
// fill(c, ctx, op, point, s, n, out): operand op's block index at the n steps from step s, the
// first at grid point `point` (then row-major, last axis fastest: S13), its `width` entries each
// into out (width apart); `point` is left at the last step's.
using fill_fn = void (*)(const pipeline_desc& c, const void* ctx, int op, index_t* point, index_t s,
                         index_t n, index_entry* out);
PTPU_COMPILED bool scan_filled(const pipeline_desc& c, const void* ctx, operand_scan& scan, int width,
                               fill_fn fill);

template <class Spec, std::size_t G, class Ctx>
void fill_operand(const pipeline_desc& c, const void* ctx, int op, index_t* point, index_t s, index_t n,
                  index_entry* out) {
    using R = std::remove_cvref_t<typename map_call_t<Spec, G, Ctx>::result>;
    constexpr std::size_t w = [] {
        if constexpr (is_index_tuple<R>) return R::size();
        return max_rank;
    }();
    index_t k = 0;
    const auto each = [&] {
        for (; k < n; ++k) {
            if (s + k > 0)
                for (std::size_t d = G; d-- > 0;) {
                    if (++point[d] < c.grid[d]) break;
                    point[d] = 0;
                }
            index_entry* o = out + static_cast<std::size_t>(k) * w;
            if constexpr (is_index_tuple<R>) {
                const R t = map_call_t<Spec, G, Ctx>::call(Spec::index_map, point, ctx);
                // Field by field: a whole entry loaded from the map's stores stalls on store forwarding.
                for (std::size_t d = 0; d < w; ++d) o[d].start = t.v[d].start;
                for (std::size_t d = 0; d < w; ++d) o[d].size = t.v[d].size;
            } else {  // a malformed map: analyze() stops before pass 1
                const index_tuple<max_rank> t = eval_map<Spec, G, Ctx>(point, ctx);
                for (std::size_t d = 0; d < w; ++d) o[d] = t.v[d];
            }
        }
    };
    if constexpr (std::is_void_v<Ctx>) {
        each();
    } else {  // the map reads prefetch refs: say where a bad read happened (R2)
        try {
            each();
        } catch (const error& e) {
            rethrow_from_map(e, c, op, point);
        }
    }
}
template <class Spec, std::size_t G, class Ctx>
bool scan_filled_operand(const pipeline_desc& c, const void* ctx, operand_scan& scan) {
    using R = std::remove_cvref_t<typename map_call_t<Spec, G, Ctx>::result>;
    int width = static_cast<int>(max_rank);
    if constexpr (is_index_tuple<R>) width = static_cast<int>(R::size());
    return scan_filled(c, ctx, scan, width, &fill_operand<Spec, G, Ctx>);
}

#if defined(PTPU_DEFINE_COMPILED)
template <int Rank>
bool scan_filled_as(const pipeline_desc& c, const void* ctx, operand_scan& scan, fill_fn fill) {
    constexpr std::size_t w = Rank > 0 ? static_cast<std::size_t>(Rank) : max_rank;
    constexpr index_t batch = 128;
    index_entry out[batch * w];
    index_t point[max_rank]{};
    const index_t n_steps = c.steps();
    const index_t len = scan.table.chunk_steps();
    for (index_t s0 = 0; s0 < n_steps; s0 += len) {
        scan.begin_chunk(s0);
        const index_t s1 = std::min(n_steps, s0 + len);
        for (index_t s = s0; s < s1; s += batch) {
            const index_t n = std::min(batch, s1 - s);
            fill(c, ctx, scan.i, point, s, n, out);
            for (index_t k = 0; k < n; ++k)
                if (!scan.template visit_entries<Rank, w>(s + k, out + static_cast<std::size_t>(k) * w))
                    return false;
        }
        if (!scan.end_chunk()) return false;
    }
    return true;
}
PTPU_COMPILED bool scan_filled(const pipeline_desc& c, const void* ctx, operand_scan& scan, int width,
                               fill_fn fill) {
    if (width < static_cast<int>(max_rank) && scan.o.rank != width) {  // as scan_steps: R2
        scan.info.problem = fail(rule::r2, scan.i, -1, width, scan.o.rank);
        return false;
    }
    switch (width) {
        case 1:
            return scan_filled_as<1>(c, ctx, scan, fill);
        case 2:
            return scan_filled_as<2>(c, ctx, scan, fill);
        case 3:
            return scan_filled_as<3>(c, ctx, scan, fill);
        case 4:
            return scan_filled_as<4>(c, ctx, scan, fill);
        case 5:
            return scan_filled_as<5>(c, ctx, scan, fill);
        default:
            return scan_filled_as<0>(c, ctx, scan, fill);
    }
}
#endif
}  // namespace detail

}  // namespace ptpu
