// The fuzz driver of extent arithmetic (rule V3), shared by the test suite's short sample
// (extents_test.cpp) and the long run (benchmarks/fuzz_extents.cpp). Each case draws extents
// near the integer limits (powers of two and their neighbours up to INT64_MAX, zero, negatives)
// mixed with small ones, for: a dynamic_call's grid (rank 3), array shapes, blocks (blocked and
// element dims with paddings), buffer counts, scratch shapes, the chip, and block indices an index
// map computes from host state (scalar-prefetch values joined into 64-bit entries); then slices
// of a ref, ref and host_view shapes, region_of on a validated operand with any block index, and
// an emit_pipeline-level pipeline whose bounded slice the map takes from host state. One
// instantiation (Call) serves every case. A case passes when each step either succeeds or throws
// ptpu::error, and:
//  - a configuration whose grid product, array, block or scratch bytes, or padded dims overflow
//    int64 (computed here in 128 bits) is an error, never a plan;
//  - V3 is never reported where every such quantity is below 2^56 (no false alarm);
//  - a window a ref hands out, and a region the DMA engine would copy, lie inside their buffers.
// Anything else (another exception, a sanitizer report, a crash) fails the case.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include <ptpu/ptpu.hpp>

namespace ptpu_extents_fuzz {

using namespace ptpu;
__extension__ typedef __int128 wide;  // exact products of two index_t values

using F2 = Operand<float, 2>;
using Prefetch = Operand<std::int32_t, 1>;
using Call = dynamic_call<ScalarPrefetch<Prefetch>, In<F2>, Out<F2>, ScratchShapes<F2>>;

/// The host state the index maps read: pf[0] the map's mode, then pairs (hi, lo) of 64-bit
/// entries for dims 0 and 1.
inline constexpr index_t prefetch_len = 5;
inline index_t entry_of(const auto& pf, index_t at) {
    const auto hi = static_cast<std::uint32_t>(pf[at]);
    const auto lo = static_cast<std::uint32_t>(pf[at + 1]);
    return static_cast<index_t>((static_cast<std::uint64_t>(hi) << 32) | lo);
}
// Mode 0: the block grid (j, k); 1: both entries from host state; 2: dim 0 from the grid, dim 1
// from host state. The map itself never does arithmetic that could overflow.
inline constexpr auto map = [](index_t, index_t j, index_t k, const auto& pf) {
    const std::int32_t mode = pf[0];
    if (mode == 1) return idx(entry_of(pf, 1), entry_of(pf, 3));
    if (mode == 2) return idx(j, entry_of(pf, 3));
    return idx(j, k);
};

struct totals {
    long cases = 0;
    long planned = 0;  ///< configurations the planner accepted
    long ran = 0;      ///< of those, run with data
    long errors = 0;   ///< ptpu::error outcomes (every step counted)
    long v3 = 0;       ///< of those, V3
    std::string failure;
};

class generator {
public:
    explicit generator(std::uint64_t seed) : rng_(seed) {}

    /// An extent: small, a tile multiple, or near a limit (2^k - 1, 2^k, 2^k + 1, INT64_MAX - d),
    /// sometimes 0 or negative.
    index_t extent(int extreme_percent = 40) {
        const int r = uniform(0, 99);
        if (r < extreme_percent) return extreme();
        if (r < extreme_percent + 5) return uniform(0, 3) == 0 ? -uniform(0, 4) : 0;
        if (r < extreme_percent + 15) return 8 * uniform(1, 4) * (uniform(0, 1) ? 16 : 1);
        return uniform(1, 8);
    }
    index_t extreme() {
        switch (uniform(0, 5)) {
            case 0:
                return INT64_MAX - uniform(0, 3);
            case 1:
                return INT64_MIN + uniform(0, 3);
            case 2:
                return INT64_MAX / uniform(2, 130);
            default: {
                const int k = uniform(16, 62);
                return (index_t{1} << k) + uniform(-1, 1);
            }
        }
    }
    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    index_t any_index() { return uniform(0, 2) == 0 ? extreme() : extent(0) - 4; }

private:
    std::mt19937_64 rng_;
};

namespace detail_fuzz {
inline bool fits(wide v) {
    return v <= wide{INT64_MAX} && v >= wide{INT64_MIN};
}
// Products saturating at +-(2^63 + 1), just outside index_t: factors below 2^64 in magnitude,
// so one step cannot wrap.
inline wide sat_mul(wide a, wide b) {
    const wide p = a * b;
    constexpr wide cap = (wide{1} << 63) + 1;
    return p > cap ? cap : p < -cap ? -cap : p;
}
inline wide product(const index_t* v, int n) {
    wide p = 1;
    for (int i = 0; i < n; ++i) p = sat_mul(p, v[i]);
    return p;
}
/// The largest magnitude of the quantities validation guards (V3) in a configuration: the grid
/// product (and times operands + 2), array, block and scratch bytes, padded dims (and their last
/// offset); more than INT64_MAX when one overflows. With `padded`, also each block's bytes
/// padded to the largest tiles (32 sublanes, 128 lanes), which the planner checks.
inline wide largest(const call_desc& c, bool padded = false) {
    wide m = product(c.grid.data(), c.grid_rank);
    if (m < 0) m = -m;
    auto note = [&](wide v) {
        if (v < 0) v = -v;
        if (v > m) m = v;
    };
    note(sat_mul(product(c.grid.data(), c.grid_rank), c.n_ops() + 2));
    for (int i = 0; i < c.n_ops(); ++i) {
        const operand_desc& o = c.ops[static_cast<std::size_t>(i)];
        note(sat_mul(product(o.shape.data(), o.rank), 4));
        wide b = 4;
        for (int d = 0; d < o.block_rank; ++d) {
            const block_dim& bd = o.block[static_cast<std::size_t>(d)];
            b = sat_mul(b, bd.size);
            if (bd.kind == dim_kind::element) {  // dim + lo, the padded extent, the last offset + 1
                const wide padded = wide(o.shape[static_cast<std::size_t>(d)]) + bd.pad_lo + bd.pad_hi;
                note(wide(o.shape[static_cast<std::size_t>(d)]) + bd.pad_lo);
                note(padded);
                note(padded - bd.size + 1);
            }
        }
        note(b);
        if (padded && o.block_rank == 2) {
            const wide r0 = (wide(o.block[0].size) + 31) / 32 * 32, r1 = (wide(o.block[1].size) + 127) / 128 * 128;
            note(sat_mul(sat_mul(r0, r1), 4));
        }
    }
    for (int k = 0; k < c.n_scratch; ++k) note(sat_mul(product(c.scratch[static_cast<std::size_t>(k)].shape.data(), 2), 4));
    return m;
}
}  // namespace detail_fuzz

/// An operand's shape and block, for a failing case's message.
inline std::string text_of(const operand_desc& o) {
    std::string t = "shape (";
    for (int d = 0; d < o.rank; ++d) t += (d ? ", " : "") + std::to_string(o.shape[static_cast<std::size_t>(d)]);
    t += "), block (";
    for (int d = 0; d < o.block_rank; ++d) {
        const block_dim& b = o.block[static_cast<std::size_t>(d)];
        t += (d ? ", " : "") + std::to_string(static_cast<int>(b.kind)) + ":" + std::to_string(b.size) + "/" +
             std::to_string(b.pad_lo) + "/" + std::to_string(b.pad_hi);
    }
    return t + ")";
}

/// One case; returns "" or what went wrong.
inline std::string run_case(generator& g, totals& t) {
    using detail_fuzz::fits;
    Call call;
    const bool small = g.uniform(0, 3) == 0;  // a configuration that can run with data
    const int xp = small ? 0 : 40;
    // Shapes, blocks, grid.
    auto dims2 = [&] { return dims_value{g.extent(xp), g.extent(xp)}; };
    const dims_value shape = small ? dims_value{g.uniform(1, 3) * 8, g.uniform(1, 2) * 128} : dims2();
    call.in[0].shape = shape;
    call.out[0].shape = g.uniform(0, 3) == 0 ? dims2() : shape;
    auto block_for = [&](const dims_value& s, Call::spec& sp) {
        switch (g.uniform(0, small ? 1 : 3)) {
            case 0:  // Full
                return;
            case 1:  // blocks dividing a small shape, or any
                if (small)
                    sp.block = {s[0] / (1 + (s[0] % 16 == 0 ? g.uniform(0, 1) : 0)), s[1]};
                else
                    sp.block = {g.extent(xp), g.extent(xp)};
                return;
            case 2:  // element dims with paddings
                sp.block = {element{g.extent(xp), g.extent(xp), g.extent(xp)},
                            element{g.extent(xp), g.extent(xp), g.extent(xp)}};
                return;
            default:
                sp.block = {g.extent(xp), s[1]};
        }
    };
    block_for(call.in[0].shape, call.in[0]);
    block_for(call.out[0].shape, call.out[0]);
    call.in[0].index_map = map;
    call.out[0].index_map = map;
    if (g.uniform(0, 2) == 0) call.in[0].buffer_count = g.uniform(0, 3);
    if (g.uniform(0, 2) == 0) call.out[0].buffer_count = g.uniform(1, 2);
    call.scratch[0] = small ? dims_value{8, 128} : dims2();
    // The grid: the output's block grid (then the plan may hold), or extremes.
    auto blocks_along = [&](int d) -> index_t {
        const Call::spec& o = call.out[0];
        const index_t n = o.shape[static_cast<std::size_t>(d)];
        if (o.block.empty()) return 1;
        const block_dim& bd = o.block[static_cast<std::size_t>(d)].dim;
        if (bd.size <= 0 || n <= 0) return 1;
        return bd.kind == dim_kind::element ? 1 : n / bd.size + (n % bd.size != 0);
    };
    if (g.uniform(0, 2) != 0)
        call.grid = {small ? 1 : g.extent(xp), blocks_along(0), blocks_along(1)};
    else
        call.grid = {g.extent(xp), g.extent(xp), g.extent(xp)};
    if (g.uniform(0, 3) == 0) {
        call.chip = tpu::v5p;  // two TensorCores: the megacore split
        call.semantics = {parallel, parallel, arbitrary};
    }
    if (g.uniform(0, 7) == 0) call.vmem_limit = g.uniform(0, 1) ? g.extreme() : index_t{64} << 20;
    // Host state for the maps.
    const int mode = g.uniform(0, 2);
    std::vector<std::int32_t> pf(static_cast<std::size_t>(prefetch_len));
    pf[0] = mode;
    for (int e = 0; e < 2; ++e) {
        const index_t v = g.any_index();
        pf[static_cast<std::size_t>(1 + 2 * e)] = static_cast<std::int32_t>(static_cast<std::uint64_t>(v) >> 32);
        pf[static_cast<std::size_t>(2 + 2 * e)] = static_cast<std::int32_t>(static_cast<std::uint64_t>(v) & 0xffffffffU);
    }

    auto step = [&](const char* what, auto&& fn) -> std::string {
        try {
            fn();
        } catch (const ptpu::error& e) {
            ++t.errors;
            if (e.rule() == "V3") ++t.v3;
            return e.rule() == "V3" ? "V3" : "error";
        } catch (const std::exception& e) {
            return std::string("FAIL ") + what + ": " + typeid(e).name() + ": " + e.what();
        }
        return "";
    };
    auto failed = [](const std::string& s) { return s.rfind("FAIL", 0) == 0; };

    // 1. The call's configuration: describe (V1/V3 for shapes given at run time), validate, and
    // plan (pass 1 walks every step: only a grid of a few thousand steps is planned).
    call_desc desc;
    std::string r = step("describe", [&] { desc = call.describe({dims_value{prefetch_len}}); });
    if (failed(r)) return r;
    if (r.empty()) {
        const wide big = detail_fuzz::largest(desc);
        const wide big_padded = detail_fuzz::largest(desc, true);
        const bool overflows = !fits(big);
        const diag v = validate(desc);
        r = step("validate", [&] { raise(v); });
        if (failed(r)) return r;
        if (r == "V3" && big < (wide{1} << 56))
            return "FAIL validate: V3 with every quantity below 2^56: " + describe(v) + "; input " +
                   text_of(desc.ops[0]) + ", output " + text_of(desc.ops[1]);
        if (overflows && r.empty()) return "FAIL validate: an overflowing configuration passed";
        const index_t steps = desc.steps();
        if (r.empty() && steps <= 4096) {
            plan_info info;
            r = step("plan", [&] {
                info = call.info(pf);
                raise(info.problem);
            });
            if (failed(r)) return r;
            if (r == "V3" && big_padded < (wide{1} << 56))
                return "FAIL plan: V3 with every quantity below 2^56: " + describe(info.problem);
            if (r.empty()) {
                ++t.planned;
                // 2. Run it with data where every buffer is small.
                if (small && detail_fuzz::product(shape.begin(), 2) <= 4096 &&
                    detail_fuzz::product(call.out[0].shape.begin(), 2) <= 4096) {
                    std::vector<float> x(static_cast<std::size_t>(shape[0] * shape[1]), 1.5f);
                    r = step("run", [&] {
                        auto body = [](auto, auto xr, auto o, auto) {
                            if (xr.shape() == o.shape())
                                store(o, load(xr));
                            else
                                store(o, zeros_like(o));
                        };
                        auto [z, rep] = call(body, pf, x);
                        (void)rep;
                    });
                    if (failed(r)) return r;
                    if (r.empty()) ++t.ran;
                }
            }
        }
        // 3. region_of on a validated input with any block index (an index map answering at run
        // time what the planner never saw).
        if (v.ok()) {
            const operand_desc& o = desc.ops[0];
            index_tuple<max_rank> b{};
            for (int d = 0; d < 2; ++d) b.v[d] = {g.any_index(), -1};
            block_region reg{};
            r = step("region_of", [&] { reg = region_of(o, b); });
            if (failed(r)) return r;
            if (r.empty() && reg.elems() != 0)  // (nothing is copied when a count is 0)
                for (std::size_t d = 0; d < 2; ++d)
                    if (reg.count[d] < 0 || reg.array_start[d] < 0 || reg.array_start[d] > o.shape[d] - reg.count[d] ||
                        reg.slot_start[d] < 0 || reg.slot_start[d] > o.block[d].size - reg.count[d])
                        return "FAIL region_of: dim " + std::to_string(d) + " copies outside a buffer: shape " +
                               std::to_string(o.shape[d]) + ", block " + std::to_string(o.block[d].size) + " (kind " +
                               std::to_string(static_cast<int>(o.block[d].kind)) + ", pads " +
                               std::to_string(o.block[d].pad_lo) + ", " + std::to_string(o.block[d].pad_hi) +
                               "), entry " + std::to_string(b.v[d].start) + ": array_start " +
                               std::to_string(reg.array_start[d]) + ", slot_start " + std::to_string(reg.slot_start[d]) +
                               ", count " + std::to_string(reg.count[d]);
        }
    }

    // 4. A ref's windows, and shapes of refs and host_views.
    static float buf[64 * 64];
    const index_t R = g.uniform(1, 64), Cc = g.uniform(1, 64);
    const ref<float, vmem, 2> x(buf, {R, Cc});
    const index_t s0 = g.any_index(), z0 = g.any_index(), s1 = g.uniform(0, 1) ? g.any_index() : 0,
                  z1 = g.uniform(0, 1) ? g.any_index() : 1;
    r = step("ref.at", [&] {
        const auto w = x.at(ds(s0, z0), ds(s1, z1));
        const wide end = wide(w.data() - buf) + wide(w.shape()[0] - 1) * Cc + w.shape()[1];
        if (w.shape()[0] > 0 && w.shape()[1] > 0 && (w.data() < buf || end > R * Cc))
            throw std::logic_error("the window lies outside the ref");
    });
    if (failed(r)) return r;
    r = step("ref shape", [&] { (void)ref<const float, any, 3>(nullptr, {g.extent(), g.extent(), g.extent()}); });
    if (failed(r)) return r;
    r = step("host_view", [&] {
        host_view<const float> h{nullptr, 3, {g.extent(), g.extent(), g.extent()}};
        (void)h.size();
    });
    if (failed(r)) return r;

    // 5. An emit_pipeline-level pipeline whose bounded slice comes from host state (S38 or a plan).
    struct slice_ctx {
        index_t start, size;
    };
    const slice_ctx sc{g.any_index(), g.uniform(0, 1) ? g.any_index() : g.uniform(0, 9)};
    pipeline_desc p;
    p.grid_rank = 1;
    p.grid[0] = g.uniform(1, 4);
    p.n_in = 1;
    operand_desc& o = p.ops[0];
    o.rank = 1;
    o.block_rank = 1;
    o.shape[0] = g.extent();
    o.block[0] = block_dim{dim_kind::bounded_slice, g.extent(), 0, 0};
    const block_fn maps[1] = {[](const index_t*, const void* c) {
        const auto* s = static_cast<const slice_ctx*>(c);
        index_tuple<max_rank> b{};
        b.v[0] = index_entry::of_slice(s->start, s->size);
        return b;
    }};
    r = step("emit_pipeline plan", [&] {
        const plan_tables pt = analyze_pipeline(p, emit_pipeline_caps, 5, maps, &sc);
        raise(pt.info.problem);
        const block_region reg = region_of(o, maps[0](nullptr, &sc));
        if (reg.count[0] < 0 ||
            (reg.count[0] > 0 && (reg.array_start[0] > o.shape[0] - reg.count[0] || reg.count[0] > o.block[0].size)))
            throw std::logic_error("a bounded slice's region lies outside a buffer");
    });
    if (failed(r)) return r;
    ++t.cases;
    return "";
}

/// `n` cases from `seed`; stops at the first failure (totals::failure says which, with the seed
/// and the case number).
inline totals fuzz(std::uint64_t seed, long n) {
    generator g(seed);
    totals t;
    for (long k = 0; k < n; ++k) {
        const std::string f = run_case(g, t);
        if (!f.empty()) {
            t.failure = "seed " + std::to_string(seed) + ", case " + std::to_string(k) + ": " + f;
            return t;
        }
    }
    return t;
}

}  // namespace ptpu_extents_fuzz
