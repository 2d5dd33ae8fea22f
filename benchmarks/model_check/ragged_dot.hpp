// The grouped matmul (ragged dot) of tokamax's Pallas Mosaic TPU kernel as a ptpu dynamic_call,
// and the public tables of its measured device times (benchmarks/model_check/ragged_dot_*.csv):
// what the checker (check_ragged_dot.cpp) and tests/calibrate/ragged_dot_check_test.cpp share.
//
// The kernel (tokamax/_src/ops/ragged_dot/pallas_mosaic_tpu_kernel.py, a megablox-style gmm):
//
// - gmm, out[m, n] = lhs[m, k] · rhs[group(m), k, n] (rhs [g, n, k] contracted on its last dim
//   for the transposed form): grid (n tiles, active m tiles, k tiles), all of it one inner
//   pipeline of a gridless pallas_call; each step takes the lhs tile of its m tile, the rhs
//   block of its group, and accumulates the product in an f32 VMEM scratch; at the last k tile it
//   stores the rows of its group into the output tile, selecting them with a row mask against
//   the group's offsets (every tile does the select; rows of other groups keep what the tile
//   held); a K remainder tile masks both operands first.
// - tgmm (the weight gradient), out[g, k, n] = Σ over the rows of group g of lhs[r, k]ᵀ·rhs[r, n]:
//   grid (n tiles, k tiles, active m tiles, empty groups visited once); each step masks the rows
//   of its group in both tiles, multiplies lhsᵀ · rhs into the accumulator, zeroes it at a
//   group's first tile and stores it at its last.
//
// The group metadata is megablox's make_group_metadata: group offsets, and per grid index its
// group and its m tile (a tile that a group boundary crosses is visited once per group in it),
// read by the index maps and the body from SMEM (scalar prefetch).
//
// Differences from the real kernel, all stated in docs/model.md ("Checked against public
// measurements"): the kernel runs its grid as an emit_pipeline inside a gridless call, with
// input_buffer_count lookahead buffers on the lhs (tgmm: on both inputs); the checker runs a row
// with 1 or 2 buffers as the call's own grid, and a row with 3 or 4 that way too
// (dynamic_call::custom_buffered, with lookahead), where the call's own grid allows 2 (rule 19).
// The gridless call runs on one TensorCore, so every grid dim is `arbitrary` (no megacore split
// on v5p).
#pragma once

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ragged_dot_check {

using ptpu::index_t;

/// One measured row of a public table.
struct row {
    std::string kind;                 ///< gmm, gmm_t (rhs transposed) or tgmm
    index_t lhs0 = 0, lhs1 = 0;       ///< lhs dims as in the source
    index_t rhs0 = 0, rhs1 = 0, rhs2 = 0;
    int group_set = 0;
    index_t tile_m = 0, tile_k = 0, tile_n = 0;  ///< the config as in the source
    int buffers = 2;
    std::vector<double> times_ms;
    [[nodiscard]] double median_ms() const {
        std::vector<double> t = times_ms;
        std::sort(t.begin(), t.end());
        const std::size_t n = t.size();
        return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    }
};

inline std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep)) out.push_back(cur);
    return out;
}

inline std::vector<std::string> data_lines(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    std::vector<std::string> out;
    std::string line;
    bool header = true;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (header) {
            header = false;
            continue;
        }
        out.push_back(line);
    }
    return out;
}

/// ragged_dot_groups.csv: group_set -> sizes.
inline std::vector<std::vector<std::int32_t>> read_groups(const std::string& path) {
    std::vector<std::vector<std::int32_t>> sets;
    for (const std::string& line : data_lines(path)) {
        const auto f = split(line, ',');
        const auto id = static_cast<std::size_t>(std::stoi(f.at(0)));
        if (sets.size() <= id) sets.resize(id + 1);
        std::istringstream in(f.at(2));
        std::int32_t v = 0;
        while (in >> v) sets[id].push_back(v);
    }
    return sets;
}

/// ragged_dot_<chip>.csv.
inline std::vector<row> read_rows(const std::string& path) {
    std::vector<row> rows;
    for (const std::string& line : data_lines(path)) {
        const auto f = split(line, ',');
        row r;
        r.kind = f.at(0);
        r.lhs0 = std::stoll(f.at(1));
        r.lhs1 = std::stoll(f.at(2));
        r.rhs0 = std::stoll(f.at(3));
        r.rhs1 = std::stoll(f.at(4));
        r.rhs2 = std::stoll(f.at(5));
        r.group_set = std::stoi(f.at(6));
        r.tile_m = std::stoll(f.at(7));
        r.tile_k = std::stoll(f.at(8));
        r.tile_n = std::stoll(f.at(9));
        r.buffers = std::stoi(f.at(10));
        std::istringstream in(f.at(11));
        double t = 0;
        while (in >> t) r.times_ms.push_back(t);
        rows.push_back(r);
    }
    return rows;
}

/// The kernel's own view of a row: m rows (the ragged dim), k contracted (tgmm: the output's
/// rows), n the output's columns; tiles (tm, tk, tn) as the backend takes them.
struct problem {
    bool tgmm = false, transpose_rhs = false;
    index_t m = 0, k = 0, n = 0, groups = 0, tm = 0, tk = 0, tn = 0;
    int buffers = 2;
};

/// tokamax's tile search space for a dim of size d (pallas_mosaic_tpu.py, _get_autotuning_configs):
/// powers of two from 128 up to d rounded up to 128, that rounded size halved down to 128, and d.
inline bool in_search_space(index_t tile, index_t d) {
    const index_t r = (d + 127) / 128 * 128;
    if (tile == d) return true;
    for (index_t t = 128; t <= r; t *= 2)
        if (t == tile) return true;
    for (index_t t = r, i = 0; i < 6 && t >= 128; t /= 2, ++i)
        if (t == tile) return true;
    return false;
}

/// Which dims a gmm_t row's tile_k and tile_n tile. The current op searches tile_k over the
/// output dim (rhs dim 1) and tile_n over the contraction (lhs dim 1), and swaps them for the
/// kernel; the tables also hold rows of an older op (their keys lack the newer op's fields, as the
/// v7x and v5e files do) whose tile_k tiles the contraction. A row's values tell which search
/// space they came from; when both or neither contain them, `current_op` (the table's key format)
/// decides.
inline bool gmm_t_swapped(const row& r, bool current_op) {
    const bool direct = in_search_space(r.tile_k, r.lhs1) && in_search_space(r.tile_n, r.rhs1);
    const bool swapped = in_search_space(r.tile_k, r.rhs1) && in_search_space(r.tile_n, r.lhs1);
    return direct == swapped ? current_op : swapped;
}

/// `current_op`: the table was written by the current op (its keys carry group_offset and the
/// quantization fields: the v5p file), see gmm_t_swapped.
inline problem problem_of(const row& r, bool current_op) {
    problem p;
    p.m = r.lhs0;
    p.buffers = r.buffers;
    p.tm = r.tile_m;
    if (r.kind == "gmm") {  // lhs [m, k], rhs [g, k, n]
        p.k = r.lhs1, p.n = r.rhs2, p.groups = r.rhs0, p.tk = r.tile_k, p.tn = r.tile_n;
    } else if (r.kind == "gmm_t") {  // lhs [m, k], rhs [g, n, k]
        p.transpose_rhs = true;
        p.k = r.lhs1, p.n = r.rhs1, p.groups = r.rhs0;
        const bool sw = gmm_t_swapped(r, current_op);
        p.tk = sw ? r.tile_n : r.tile_k;
        p.tn = sw ? r.tile_k : r.tile_n;
    } else if (r.kind == "tgmm") {  // lhs [m, k], rhs [m, n], out [g, k, n]
        p.tgmm = true;
        p.k = r.lhs1, p.n = r.rhs1, p.tk = r.tile_k, p.tn = r.tile_n;
    } else {
        throw std::runtime_error("unknown kind " + r.kind);
    }
    return p;
}

/// The table of a chip was written by the current op (see problem_of).
inline bool current_op_table(const std::string& chip) { return chip == "v5p"; }

/// megablox's make_group_metadata (one shard holding every group).
struct metadata {
    std::vector<std::int32_t> offsets;   ///< [groups + 1]
    std::vector<std::int32_t> group_ids;  ///< [tiles_m + groups - 1]
    std::vector<std::int32_t> m_tile_ids;
    index_t active = 0;  ///< grid indices to run
};

inline metadata make_metadata(const std::vector<std::int32_t>& sizes, index_t m, index_t tm, bool visit_empty) {
    const auto g = static_cast<index_t>(sizes.size());
    const index_t tiles_m = m / tm;
    metadata md;
    md.offsets.assign(static_cast<std::size_t>(g + 1), 0);
    for (index_t i = 0; i < g; ++i)
        md.offsets[static_cast<std::size_t>(i + 1)] = md.offsets[static_cast<std::size_t>(i)] + sizes[static_cast<std::size_t>(i)];
    const index_t len = tiles_m + g - 1;
    std::vector<index_t> group_tiles(static_cast<std::size_t>(g)), visits(static_cast<std::size_t>(tiles_m), 1);
    for (index_t i = 0; i < g; ++i) {
        const index_t start = md.offsets[static_cast<std::size_t>(i)], end = md.offsets[static_cast<std::size_t>(i + 1)];
        const index_t size = sizes[static_cast<std::size_t>(i)];
        index_t tiles = size == 0 ? 0 : ((end + tm - 1) / tm * tm - start / tm * tm) / tm;
        if (visit_empty && size == 0) tiles = 1;
        group_tiles[static_cast<std::size_t>(i)] = tiles;
        // A group starting inside a tile visits it once more (an empty group too when visited).
        const bool partial = (start % tm != 0) && (size != 0 || visit_empty);
        const bool empty_visit = visit_empty && size == 0;
        if ((partial || empty_visit) && start / tm < tiles_m) ++visits[static_cast<std::size_t>(start / tm)];
        md.active += tiles;
    }
    // jnp.repeat with total_repeat_length: truncated, or padded with the last value.
    auto repeat = [len](const std::vector<index_t>& counts) {
        std::vector<std::int32_t> out;
        for (std::size_t i = 0; i < counts.size() && static_cast<index_t>(out.size()) < len; ++i)
            for (index_t c = 0; c < counts[i] && static_cast<index_t>(out.size()) < len; ++c)
                out.push_back(static_cast<std::int32_t>(i));
        const std::int32_t last = out.empty() ? 0 : out.back();
        while (static_cast<index_t>(out.size()) < len) out.push_back(last);
        return out;
    };
    md.group_ids = repeat(group_tiles);
    md.m_tile_ids = repeat(visits);
    return md;
}

using I1 = ptpu::Operand<std::int32_t, 1>;
using B2 = ptpu::Operand<ptpu::bf16, 2>;
using B3in2 = ptpu::Operand<ptpu::bf16, 3, ptpu::vmem, 2>;  // a (squeezed, r, c) block of a 3-d array
using F2 = ptpu::Operand<float, 2>;
using Gmm = ptpu::dynamic_call<ptpu::ScalarPrefetch<I1, I1, I1>, ptpu::In<B2, B3in2>, ptpu::Out<B2>,
                               ptpu::ScratchShapes<F2>>;
using Tgmm = ptpu::dynamic_call<ptpu::ScalarPrefetch<I1, I1, I1>, ptpu::In<B2, B2>, ptpu::Out<B3in2>,
                                ptpu::ScratchShapes<F2>>;

inline index_t cdiv(index_t a, index_t b) { return (a + b - 1) / b; }

/// The predicted report of one row on `hw`, timing only (no data: predict takes the metadata).
inline ptpu::report predict(const row& r, const std::vector<std::int32_t>& sizes, const ptpu::chip& hw) {
    using namespace ptpu;
    const problem p = problem_of(r, current_op_table(std::string(hw.name)));
    const metadata md = make_metadata(sizes, p.m, p.tm, p.tgmm);
    const index_t tiles_k = cdiv(p.k, p.tk), tiles_n = cdiv(p.n, p.tn);
    // 3 or 4 buffers: the kernel's own form, its grid one inner pipeline with lookahead (above).
    const bool deep = p.buffers > 2;
    const int bc = p.buffers;
    const index_t tm = p.tm, tk = p.tk, tn = p.tn;
    if (!p.tgmm) {
        Gmm c;
        c.chip = hw;
        c.vmem_limit = hw.vmem_bytes;  // the measured kernel ran: its limit was high enough
        c.grid = {tiles_n, md.active, tiles_k};
        c.semantics = {arbitrary, arbitrary, arbitrary};
        c.options.per_step = per_step_rows::never;
        c.custom_buffered = deep;
        c.in[0] = {.shape = {p.m, p.k},
                   .block = {tm, tk},
                   .index_map = [](index_t, index_t g, index_t k, const auto&, const auto&,
                                   const auto& mt) { return idx(mt[g], k); },
                   .buffer_count = bc,
                   .lookahead = deep};
        if (p.transpose_rhs)
            c.in[1] = {.shape = {p.groups, p.n, p.k}, .block = {squeezed, tn, tk},
                       .index_map = [](index_t n, index_t g, index_t k, const auto&, const auto& gid, const auto&) {
                           return idx(gid[g], n, k);
                       }};
        else
            c.in[1] = {.shape = {p.groups, p.k, p.n}, .block = {squeezed, tk, tn},
                       .index_map = [](index_t n, index_t g, index_t k, const auto&, const auto& gid, const auto&) {
                           return idx(gid[g], k, n);
                       }};
        c.out[0] = {.shape = {p.m, p.n}, .block = {tm, tn},
                    .index_map = [](index_t n, index_t g, index_t, const auto&, const auto&, const auto& mt) {
                        return idx(mt[g], n);
                    }};
        c.scratch[0] = {tm, tn};
        const index_t k_rem = p.k % tk;
        const bool tb = p.transpose_rhs;
        const auto body = [=](auto offs, auto gid, auto mt, auto x, auto w, auto o, auto acc) {
            const index_t g = program_id(1), k = program_id(2), last = num_programs(2) - 1;
            if (k == 0) store(acc, zeros_like(acc));
            auto a = load(x);
            auto b = load(w);
            if (k == last && k_rem != 0) {  // the K remainder: both operands masked first
                a = where(iota<std::int32_t>(tm, tk, 1) < static_cast<std::int32_t>(k_rem), a, bf16(0.0f));
                b = where(iota<std::int32_t>(tb ? tn : tk, tb ? tk : tn, tb ? 1 : 0) < static_cast<std::int32_t>(k_rem), b,
                          bf16(0.0f));
            }
            store(acc, load(acc) + dot(a, b, dot_options{.transpose_b = tb}));
            if (k == last) {  // the rows of this step's group, selected into the output tile
                const std::int32_t grp = sload(gid, g), row0 = sload(mt, g) * static_cast<std::int32_t>(tm);
                const std::int32_t start = sload(offs, grp), end = sload(offs, grp + 1);
                const auto rows = iota<std::int32_t>(tm, tn, 0) + row0;
                const auto mask = (rows >= start) & (rows < end);
                store(o, cast<bf16>(where(mask, load(acc), cast<float>(load(o)))));
            }
        };
        return c.predict(body, md.offsets, md.group_ids, md.m_tile_ids);
    }
    Tgmm c;
    c.chip = hw;
    c.vmem_limit = hw.vmem_bytes;
    c.grid = {tiles_n, tiles_k, md.active};
    c.semantics = {arbitrary, arbitrary, arbitrary};
    c.options.per_step = per_step_rows::never;
    c.custom_buffered = deep;
    c.in[0] = {.shape = {p.m, p.k},
               .block = {tm, tk},
               .index_map = [](index_t, index_t k, index_t g, const auto&, const auto&,
                               const auto& mt) { return idx(mt[g], k); },
               .buffer_count = bc,
               .lookahead = deep};
    c.in[1] = {.shape = {p.m, p.n},
               .block = {tm, tn},
               .index_map = [](index_t n, index_t, index_t g, const auto&, const auto&,
                               const auto& mt) { return idx(mt[g], n); },
               .buffer_count = bc,
               .lookahead = deep};
    c.out[0] = {.shape = {static_cast<index_t>(sizes.size()), p.k, p.n}, .block = {squeezed, tk, tn},
                .index_map = [](index_t n, index_t k, index_t g, const auto&, const auto& gid, const auto&) {
                    return idx(gid[g], k, n);
                }};
    c.scratch[0] = {tk, tn};
    const auto body = [=](auto offs, auto gid, auto mt, auto x, auto y, auto o, auto acc) {
        const index_t g = program_id(2), n_g = num_programs(2);
        const std::int32_t grp = sload(gid, g);
        const bool first = g == 0 || grp != sload(gid, g - 1);
        const bool last = g == n_g - 1 || grp != sload(gid, g + 1);
        const std::int32_t start = sload(offs, grp), end = sload(offs, grp + 1);
        if (first) store(acc, zeros_like(acc));
        if (end > start) {
            const std::int32_t row0 = sload(mt, g) * static_cast<std::int32_t>(tm);
            const auto ra = iota<std::int32_t>(tm, tk, 0) + row0;
            const auto rb = iota<std::int32_t>(tm, tn, 0) + row0;
            const auto a = where((ra >= start) & (ra < end), load(x), bf16(0.0f));
            const auto b = where((rb >= start) & (rb < end), load(y), bf16(0.0f));
            store(acc, load(acc) + dot(a, b, dot_options{.transpose_a = true}));
        }
        if (last) store(o, cast<bf16>(load(acc)));
    };
    return c.predict(body, md.offsets, md.group_ids, md.m_tile_ids);
}

}  // namespace ragged_dot_check
