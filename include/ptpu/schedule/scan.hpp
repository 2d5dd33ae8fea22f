// Defines pass 1 of the planner: the walk of the grid that evaluates every index map once per
// step, checks each block index (4, 5, S34, S38) and output revisits (S39, MC1), and records where
// each operand's block changes. Index maps are inlined into the walk (scan_operand) or called
// through a block_fn.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/schedule/geometry.hpp"
#include "ptpu/schedule/info.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

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
// order, checks it and records the change bits and output runs.
// (Hot loops use built-in arrays and raw pointers: g++ evaluates them several times faster than
// std::array / std::vector operator[] at compile time.)
struct operand_scan {
    const pipeline_desc& c;
    const operand_desc& o;
    plan_info& info;
    std::uint8_t* ch;  // this operand's change bits
    std::vector<run>& runs;
    int i;
    index_t n_steps;
    bool track_runs;
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
    index_t* writer = nullptr;  // 0: unwritten; else 2*first_step + core + 1
    bool checked;  // its blocks must lie in the array: a window's, or an aliased view's (S17)
    // in_bounds(o, d, e) is 0 <= e.start < limit[d] when limit[d] >= 0 (no division per step).
    index_t limit[max_rank]{};
    // Bounded slices are checked against their contract (S38) when the front end has them
    // (emit_pipeline); else they stay S34's (pallas_call then reports check 18 after the walk).
    // tile[d]: the start alignment S38 requires with tiling (dma_tile), 1 (or 0) for none.
    bool check_slices = false;
    index_t tile[max_rank]{};
    bool slice_dim[max_rank]{};  // dim d's block is a bounded slice (hoisted out of the walk)

    constexpr operand_scan(const pipeline_desc& call, int op, plan_info& pi, std::uint8_t* bits,
                           std::vector<run>& r)
        : c(call),
          o(call.ops[static_cast<std::size_t>(op)]),
          info(pi),
          ch(bits),
          runs(r),
          i(op),
          n_steps(call.steps()),
          track_runs(o.role == operand_role::output && o.windowed()),
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
        use_table = track_runs && !sliced && n_ids <= (index_t{1} << 22);
        writer_store.assign(use_table ? static_cast<std::size_t>(n_ids) : 0, 0);
        writer = writer_store.data();
    }

    [[nodiscard]] constexpr bool core_start(index_t s) const {
        return s == info.core_begin[0] || (info.cores > 1 && s == info.core_begin[1]);
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
        const index_entry* b = t.v;
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
        ch[s] = starts ? 1 : 0;
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
        const int core = (info.cores > 1 && s >= info.core_begin[1]) ? 1 : 0;
        if (!use_table) {
            runs.push_back({b, i, core, s, s});
            return true;
        }
        index_t id = 0;
        const int n = Rank > 0 ? Rank : o.rank;
        for (int d = 0; d < n; ++d) id += b.v[d].start * id_stride[d];
        const index_t w = writer[id];
        if (w == 0) {
            writer[id] = 2 * s + core + 1;
            return true;
        }
        return revisit(s, b, id, w, core);
    }

    // A block written again (S39, MC1): fine only for a revisit_any output on the same core.
    constexpr bool revisit(index_t s, const index_tuple<max_rank>& b, index_t id, index_t w, int core) {
        if (!(o.revisit_any && (w - 1) % 2 == core)) {
            const index_t first_step = (w - 1) / 2;
            const int first_core = static_cast<int>((w - 1) % 2);
            index_t last_step = first_step;
            while (last_step + 1 < n_steps && ch[last_step + 1] == 0) ++last_step;
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
        writer[id] = 2 * s + core + 1;
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
    for (index_t s = 0; s < n_steps; ++s) {
        if (s > 0)
            for (int d = c.grid_rank - 1; d >= 0; --d) {
                if (++point[d] < grid[d]) break;
                point[d] = 0;
            }
        if (!scan.template visit<Rank>(s, eval(static_cast<const index_t*>(point)))) return false;
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
    constexpr int r = tuple_rank<std::remove_cvref_t<decltype(eval(static_cast<const index_t*>(nullptr)))>>;
    if constexpr (r > 0)
        if (scan.o.rank == r) return scan_steps_as<r>(c, scan, eval);
    return scan_steps_as<0>(c, scan, eval);
}

}  // namespace detail

namespace detail {
// An error an index map raised while reading scalar-prefetch refs (R2 for an index out of
// range), again with the operand and the grid iteration it was evaluated at.
[[noreturn, gnu::cold, gnu::noinline]] inline void rethrow_from_map(const error& e, const pipeline_desc& c,
                                                                    int op, const index_t* p) {
    std::string at = "(";
    for (int d = 0; d < c.grid_rank; ++d) at += (d ? ", " : "") + std::to_string(p[d]);
    throw error(std::string(e.what()) + " (in the index map of " + (op < c.n_in ? "input " : "output ") +
                std::to_string(op < c.n_in ? op : op - c.n_in) + " at iteration " + at + "))");
}
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

}  // namespace ptpu
