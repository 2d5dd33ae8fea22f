// The fuzz driver of the dynamic-block path (S38), shared by the test suite's short sample
// (bounded_slice_test.cpp) and the long run (benchmarks/fuzz_bounded.cpp): random bounded-slice
// index sequences, array shapes (rank 1–2, the slice on either dim), buffer counts (inputs 1–4,
// lookahead on/off; outputs 1–2), run on one core by the runner with real data through a copy
// body and compared with a plain reference; and invalid sequences, which must be S38 errors with
// nothing written. Every array has guard elements on both sides, checked after each case; every
// window slot is its own allocation, so that ASan sees a copy past a slot.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/runtime/runner.hpp"

namespace ptpu_fuzz {

using namespace ptpu;

/// One case: an input operand with a bounded_slice{N} dim (its window is N along that dim and
/// the whole array along the other) and an output that is either
///  - `gather`: one blocked N-block per step, the body copying the valid part of the input
///    window and marking the rest, or
///  - `copy_back`: the input's own slices (a shuffled partition of the dim, the seed's
///    dynamic-block example), the body copying the whole window.
struct fuzz_case {
    enum mode_t { gather, copy_back } mode = gather;
    int rank = 1;
    int bdim = 0;   // the bounded dim
    index_t D = 1;  // the array's extent along it
    index_t W = 1;  // along the other dim (rank 2)
    index_t N = 1;  // the bound
    int bc_in = 2, bc_out = 2;
    bool lookahead = false;
    bool tiling = false;
    bool poison = false;               // core_memory::poison_padding
    std::vector<index_t> start, size;  // per grid step
    [[nodiscard]] index_t steps() const { return static_cast<index_t>(start.size()); }
};

inline index_tuple<max_rank> in_map(const index_t* p, const void* ctx) {
    const auto& c = *static_cast<const fuzz_case*>(ctx);
    const auto s = static_cast<std::size_t>(p[0]);
    index_tuple<max_rank> t{};
    t.v[c.bdim] = index_entry::of_slice(c.start[s], c.size[s]);
    return t;
}
inline index_tuple<max_rank> out_map(const index_t* p, const void* ctx) {
    const auto& c = *static_cast<const fuzz_case*>(ctx);
    if (c.mode == fuzz_case::copy_back) return in_map(p, ctx);
    index_tuple<max_rank> t{};
    t.v[c.bdim] = {p[0], -1};
    return t;
}
inline constexpr block_fn fuzz_maps[2] = {&in_map, &out_map};

inline pipeline_desc describe(const fuzz_case& c) {
    pipeline_desc p;
    p.grid_rank = 1;
    p.grid[0] = c.steps();
    p.n_in = 1;
    p.n_out = 1;
    p.tiling = c.tiling;
    for (int i = 0; i < 2; ++i) {
        operand_desc& o = p.ops[static_cast<std::size_t>(i)];
        const bool out = i == 1;
        o.role = out ? operand_role::output : operand_role::input;
        o.rank = c.rank;
        o.block_rank = c.rank;
        for (int d = 0; d < c.rank; ++d) {
            const auto u = static_cast<std::size_t>(d);
            if (d != c.bdim) {
                o.shape[u] = c.W;
                o.block[u] = block_dim{dim_kind::blocked, c.W, 0, 0};
            } else if (out && c.mode == fuzz_case::gather) {
                o.shape[u] = c.steps() * c.N;
                o.block[u] = block_dim{dim_kind::blocked, c.N, 0, 0};
            } else {
                o.shape[u] = c.D;
                o.block[u] = block_dim{dim_kind::bounded_slice, c.N, 0, 0};
            }
        }
        o.buffer_count = out ? c.bc_out : c.bc_in;
        o.lookahead = !out && c.lookahead;
    }
    return p;
}

// The window's element (r along the bounded dim, w along the other) in a row-major slot.
inline std::size_t at(const fuzz_case& c, index_t r, index_t w) {
    if (c.rank == 1) return static_cast<std::size_t>(r);
    return static_cast<std::size_t>(c.bdim == 0 ? r * c.W + w : w * c.N + r);
}

struct copy_body {
    const fuzz_case* c = nullptr;
    index_t step = 0;
    std::string problem;  // the first thing the body saw wrong
    static void run(void* self, core_memory& m) {
        auto& b = *static_cast<copy_body*>(self);
        const fuzz_case& c = *b.c;
        const auto s = static_cast<std::size_t>(b.step);
        const auto* in = reinterpret_cast<const float*>(m.slots[0][static_cast<std::size_t>(m.cur[0])]);
        auto* out = reinterpret_cast<float*>(m.slots[1][static_cast<std::size_t>(m.cur[1])]);
        const index_t valid = m.valid[0][static_cast<std::size_t>(c.bdim)];
        if (b.problem.empty() && valid != c.size[s])
            b.problem = "step " + std::to_string(b.step) + ": valid " + std::to_string(valid) +
                        ", slice size " + std::to_string(c.size[s]);
        const index_t W = c.rank == 1 ? 1 : c.W;
        for (index_t r = 0; r < c.N; ++r)
            for (index_t w = 0; w < W; ++w) {
                const float v = in[at(c, r, w)];
                if (r >= valid && c.poison && b.problem.empty() && !std::isnan(v))
                    b.problem = "step " + std::to_string(b.step) + ": padding row " + std::to_string(r) +
                                " is not poison";
                out[at(c, r, w)] =
                    (c.mode == fuzz_case::copy_back || r < valid) ? v : -1000.0f - static_cast<float>(b.step);
            }
        ++b.step;
    }
};

inline constexpr index_t guard = 16;
inline constexpr float guard_value = -7.0f;
inline constexpr float untouched = -3.0f;

/// An array with `guard` elements on each side.
struct guarded {
    std::vector<float> v;
    explicit guarded(index_t n) : v(static_cast<std::size_t>(n + 2 * guard), guard_value) {}
    float* data() { return v.data() + guard; }
    [[nodiscard]] bool guards_intact() const {
        for (index_t k = 0; k < guard; ++k)
            if (v[static_cast<std::size_t>(k)] != guard_value ||
                v[v.size() - 1 - static_cast<std::size_t>(k)] != guard_value)
                return false;
        return true;
    }
};

/// Runs case `c` (analyzed with `plan_seen` as the index maps' context; the runner then reads
/// `c`: the same, or values the planner never saw) and returns what went wrong, "" when
/// nothing. `expect_text`: the case is invalid and must be S38 with that text at `expect_step`
/// (naming operand 0 and the bounded dim), writing nothing.
inline std::string run_case(const fuzz_case& c, const fuzz_case* plan_seen = nullptr,
                            const char* expect_text = nullptr, index_t expect_step = -1) {
    const pipeline_desc p = describe(c);
    const operand_desc& oi = p.ops[0];
    const operand_desc& oo = p.ops[1];
    guarded in(oi.array_elems()), out(oo.array_elems());
    for (index_t k = 0; k < oi.array_elems(); ++k) in.data()[k] = static_cast<float>(k);
    for (index_t k = 0; k < oo.array_elems(); ++k) out.data()[k] = untouched;
    const plan_tables t = analyze_pipeline(p, emit_pipeline_caps, 5, fuzz_maps, plan_seen ? plan_seen : &c);
    if (expect_text != nullptr) {
        if (t.info.problem.ok()) return "accepted an invalid case";
        try {
            raise(t.info.problem);
        } catch (const error& e) {
            const std::string m = e.what();
            const std::string at = "at step " + std::to_string(expect_step) + ",";
            if (e.rule() != "S38" || m.find(expect_text) == std::string::npos ||
                m.find("operand 0, dim " + std::to_string(c.bdim)) == std::string::npos ||
                m.find(at) == std::string::npos)
                return "wrong error: " + m + " (expected " + expect_text + ", " + at + ")";
        }
        for (index_t k = 0; k < oo.array_elems(); ++k)
            if (out.data()[k] != untouched) return "an invalid case wrote its output";
        return in.guards_intact() && out.guards_intact() ? "" : "guard bytes overwritten";
    }
    if (!t.info.problem.ok()) {
        try {
            raise(t.info.problem);
        } catch (const error& e) {
            return std::string("rejected a valid case: ") + e.what();
        }
    }
    // Each slot its own allocation of one block between guards (ASan: a copy past it is an
    // error; without ASan the guards say so).
    std::vector<guarded> slots;
    slots.reserve(2 * max_buffers);
    core_memory mem;
    mem.poison_padding = c.poison;
    for (int i = 0; i < 2; ++i)
        for (int k = 0; k < t.info.ops[static_cast<std::size_t>(i)].buffers; ++k) {
            slots.emplace_back(p.ops[static_cast<std::size_t>(i)].block_elems());
            mem.slots[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)] =
                reinterpret_cast<std::byte*>(slots.back().data());
        }
    const std::array<void*, max_operands> hbm{in.data(), out.data()};
    kernel_context kctx;
    kctx.grid_rank = 1;
    kctx.grid = p.grid;
    copy_body body{&c, 0, {}};
    runner_options ro;
    runner rn(p, t, 0, fuzz_maps, &c, hbm, mem, kctx, body_call{&copy_body::run, &body}, ro, nullptr);
    while (!rn.next_batch().ops.empty()) {
    }
    if (!in.guards_intact() || !out.guards_intact()) return "guard bytes overwritten";
    for (const guarded& g : slots)
        if (!g.guards_intact()) return "guard bytes of a window slot overwritten";
    if (plan_seen != nullptr) return "";  // values the planner never saw: only memory safety counts
    if (!body.problem.empty()) return body.problem;
    if (body.step != c.steps()) return "the body ran " + std::to_string(body.step) + " times";
    // The reference: a plain loop over the steps.
    std::vector<float> ref(static_cast<std::size_t>(oo.array_elems()), untouched);
    const index_t W = c.rank == 1 ? 1 : c.W;
    for (index_t s = 0; s < c.steps(); ++s) {
        const auto u = static_cast<std::size_t>(s);
        for (index_t r = 0; r < c.N; ++r)
            for (index_t w = 0; w < W; ++w) {
                auto flat = [&](index_t row, index_t rows) {  // (row, w) of an array `rows` long
                    return static_cast<std::size_t>(c.rank == 1   ? row
                                                    : c.bdim == 0 ? row * c.W + w
                                                                  : w * rows + row);
                };
                if (c.mode == fuzz_case::copy_back) {
                    if (r < c.size[u]) ref[flat(c.start[u] + r, c.D)] = in.data()[flat(c.start[u] + r, c.D)];
                } else {
                    ref[flat(s * c.N + r, c.steps() * c.N)] = r < c.size[u]
                                                                  ? in.data()[flat(c.start[u] + r, c.D)]
                                                                  : -1000.0f - static_cast<float>(s);
                }
            }
    }
    for (std::size_t k = 0; k < ref.size(); ++k)
        if (std::memcmp(&ref[k], &out.data()[k], sizeof(float)) != 0)
            return "output element " + std::to_string(k) + " is " + std::to_string(out.data()[k]) +
                   ", expected " + std::to_string(ref[k]);
    return "";
}

/// A random valid case.
inline fuzz_case random_case(std::mt19937_64& rng) {
    auto pick = [&](index_t lo, index_t hi) {
        return lo + static_cast<index_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
    };
    fuzz_case c;
    c.mode = rng() % 2 ? fuzz_case::gather : fuzz_case::copy_back;
    c.rank = static_cast<int>(pick(1, 2));
    c.bdim = c.rank == 2 ? static_cast<int>(pick(0, 1)) : 0;
    c.D = pick(1, 40);
    c.W = c.rank == 2 ? pick(1, 12) : 1;
    c.N = pick(1, c.D + 3);
    c.bc_in = static_cast<int>(pick(1, 4));
    c.bc_out = static_cast<int>(pick(1, 2));
    c.lookahead = c.bc_in >= 2 && rng() % 2;
    c.poison = rng() % 2;
    // With tiling, starts are multiples of the tile (the bounded dim of rank 2 is the second-minor
    // one when bdim = 0, or the lane dim; rank 1 tiles by 128): few fit in 40 rows, so it is rare.
    c.tiling = rng() % 8 == 0;
    const pipeline_desc p = describe(c);
    const index_t tile = c.tiling ? detail::dma_tile(p.ops[0], static_cast<std::size_t>(c.bdim), 5) : 1;
    if (c.mode == fuzz_case::copy_back) {
        // A partition of [0, D) into pieces of 1..N (aligned starts with tiling), shuffled, some
        // repeated on consecutive steps (one run: one fetch, one write-back).
        std::vector<std::pair<index_t, index_t>> pieces;
        for (index_t at = 0; at < c.D;) {
            index_t n = pick(1, std::min(c.N, c.D - at));
            if (tile > 1) n = at + c.N >= c.D ? c.D - at : std::max<index_t>(c.N / tile * tile, 0);
            if (n <= 0) {  // N below the tile: no aligned partition; fall back to no tiling
                c.tiling = false;
                return random_case(rng);
            }
            pieces.emplace_back(at, n);
            at += n;
        }
        std::shuffle(pieces.begin(), pieces.end(), rng);
        for (const auto& [s, n] : pieces)
            for (index_t k = pick(1, 3) == 1 ? 2 : 1; k > 0; --k) {
                c.start.push_back(s);
                c.size.push_back(n);
            }
    } else {
        const index_t n = pick(1, 12);
        while (static_cast<index_t>(c.start.size()) < n) {
            const index_t size = pick(0, std::min(c.N, c.D));
            index_t start = pick(0, c.D - size);
            start -= start % tile;
            for (index_t k = pick(1, 3); k > 0 && static_cast<index_t>(c.start.size()) < n; --k) {
                c.start.push_back(start);
                c.size.push_back(size);
            }
        }
    }
    return c;
}

/// Breaks one step of a valid case in one of the four ways S38 names; returns the text its
/// error must contain, and the step in `step`.
inline const char* corrupt(fuzz_case& c, std::mt19937_64& rng, index_t& step) {
    const auto s = static_cast<std::size_t>(rng() % c.start.size());
    step = static_cast<index_t>(s);
    switch (rng() % 4) {
        case 0:
            c.size[s] = -1 - static_cast<index_t>(rng() % 5);
            return "negative size";
        case 1:
            c.size[s] = c.N + 1 + static_cast<index_t>(rng() % 3);
            return "size above the dim's bound";
        case 2:
            if (rng() % 2) {
                c.start[s] = -1 - static_cast<index_t>(rng() % 4);
                c.size[s] = std::min(c.size[s], c.N);
            } else {
                c.size[s] = std::min<index_t>(std::max<index_t>(c.size[s], 1), c.N);
                c.start[s] = c.D - c.size[s] + 1 + static_cast<index_t>(rng() % 3);
            }
            return "outside the array";
        default: {
            c.tiling = true;
            const index_t tile = detail::dma_tile(describe(c).ops[0], static_cast<std::size_t>(c.bdim), 5);
            // Every other step aligned (start 0, which the tiling needs), this one off by a row.
            for (std::size_t k = 0; k < c.start.size(); ++k) {
                c.start[k] = 0;
                c.size[k] = std::min(c.N, c.D);
            }
            if (tile <= 1 || c.D < 2) {  // no misaligned start fits: out of range instead
                c.tiling = false;
                c.start[s] = c.D;
                c.size[s] = 1;
                return "outside the array";
            }
            c.start[s] = 1;
            c.size[s] = 1;
            return "multiple of the dim's tile";
        }
    }
}

struct fuzz_totals {
    long valid = 0, invalid = 0, unplanned = 0;
    std::string failure;  // the first failing case, described
};

/// `cases` cases from `seed`: about 70% valid, 20% invalid (S38), 10% valid plans whose maps
/// then answer invalid values at run time (region clipping: no write outside any buffer).
inline fuzz_totals fuzz(std::uint64_t seed, long cases) {
    std::mt19937_64 rng(seed);
    fuzz_totals t;
    for (long k = 0; k < cases; ++k) {
        fuzz_case c = random_case(rng);
        const unsigned kind = static_cast<unsigned>(rng() % 10);
        std::string r;
        if (kind < 7) {
            r = run_case(c);
            ++t.valid;
        } else if (kind < 9) {
            index_t step = 0;
            const char* text = corrupt(c, rng, step);
            r = run_case(c, nullptr, text, step);
            ++t.invalid;
        } else {
            fuzz_case bad = c;
            index_t step = 0;
            corrupt(bad, rng, step);
            bad.tiling = c.tiling;  // the same pipeline, only the maps' values differ
            r = run_case(bad, &c);
            ++t.unplanned;
        }
        if (!r.empty()) {
            t.failure = "case " + std::to_string(k) + " (seed " + std::to_string(seed) + "): " + r;
            return t;
        }
    }
    return t;
}

}  // namespace ptpu_fuzz
