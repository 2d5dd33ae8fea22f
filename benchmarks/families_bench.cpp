// Benchmark families (docs/sweeps.md): real kernels, each under the configurations a kernel engineer
// would try (block shapes, buffer counts, lookahead, megacore on or off, chips), predicted by the
// timing model. Every benchmark reports what the TPU would do as counters, and what predicting
// it costs the host as Google Benchmark's own time:
//
//   device_us          predicted device time
//   mxu_util           MXU busy time at peak / (device time x TensorCores)
//   exposed_dma_share  time blocked on DMAs / (device time x TensorCores)
//   vmem_bytes         the largest VMEM high-water mark of a core (check 24's sum)
//   speedup            the family's default configuration's device time / this one's
//
// and the unit or resource that bounds it as the label (report::bound). A configuration that
// breaks a rule on a chip (VMEM, tiling, buffer counts) is not registered: the first lines of the
// output list the ones left out, with the rule. Run:
//
//   cmake --workflow --preset bench && build/bench/benchmarks/families_bench
//   build/bench/benchmarks/families_bench --benchmark_filter='matmul/'   (one family)
//
// The run-time families use dynamic_call, so one instantiation serves all their configurations
// (the deep-buffering family too: the matmul's type with custom_buffered set);
// the in-kernel families (emit_pipeline with bounded slices, lookahead, grouped matmul) and the
// flash-attention forward are types, a few configurations each.
#include <benchmark/benchmark.h>

#include <ptpu/ptpu.hpp>

#include "sim/flash_body.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace ptpu;

namespace {

// ---- Registration ---------------------------------------------------------------------------

using predictor = std::function<report()>;

/// The chips compared, with their marketing names (the v7x preset is TPU7x).
const std::vector<std::pair<const chip*, std::string>>& chips() {
    static const std::vector<std::pair<const chip*, std::string>> c = {
        {&tpu::v4, "v4"}, {&tpu::v5e, "v5e"}, {&tpu::v5p, "v5p"}, {&tpu::v6e, "v6e"}, {&tpu::v7x, "7x"}};
    return c;
}

/// Each family's default configuration, predicted once (the speedup counters' reference).
std::map<std::string, double>& defaults() {
    static std::map<std::string, double> d;
    return d;
}

void set_counters(benchmark::State& state, const report& r, double reference) {
    const double cores = r.cores;
    index_t vmem = 0;
    for (int k = 0; k < r.cores; ++k) vmem = std::max(vmem, r.core[static_cast<std::size_t>(k)].vmem_high_water);
    state.counters["device_us"] = r.device_time * 1e6;
    state.counters["mxu_util"] = r.mxu_utilization;
    state.counters["exposed_dma_share"] = r.exposed_dma / (r.device_time * cores);
    state.counters["vmem_bytes"] = static_cast<double>(vmem);
    state.counters["speedup"] = reference / r.device_time;
    state.SetLabel(r.bound);
}

/// Registers `family/config` unless its configuration breaks a rule (then it is listed as left
/// out). `is_default` marks the family's reference configuration: the speedups are measured
/// against it (Google Benchmark runs the benchmarks after all are registered).
void add(const std::string& family, const std::string& config, predictor p, bool is_default = false) {
    report probe;
    try {
        probe = p();
    } catch (const error& e) {
        std::printf("left out: %s/%s (ptpu[%s])\n", family.c_str(), config.c_str(), std::string(e.rule()).c_str());
        return;
    }
    if (is_default) defaults()[family] = probe.device_time;
    benchmark::RegisterBenchmark((family + "/" + config).c_str(), [family, p](benchmark::State& state) {
        report r;
        for (auto _ : state) {
            r = p();
            // (Not DoNotOptimize on a double: Google Benchmark 1.7's constraint can hand back garbage.)
            benchmark::DoNotOptimize(r.ops);
        }
        const auto d = defaults().find(family);
        set_counters(state, r, d == defaults().end() ? r.device_time : d->second);
    })->Unit(benchmark::kMicrosecond);
}

std::string name_of(const chip& c) {
    for (const auto& [p, n] : chips())
        if (p == &c) return n;
    return c.name;
}

// ---- 1. Elementwise add ---------------------------------------------------------------------

using F1 = Operand<float, 1>;
using F2 = Operand<float, 2>;
using I1 = Operand<std::int32_t, 1>;
using Add = dynamic_call<In<F2, F2>, Out<F2>>;
constexpr auto add_body = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };

Add make_add(index_t rows, index_t cols, index_t br, int bc, const chip& hw, dim_semantics sem) {
    Add a;
    a.grid = {rows / br};
    a.semantics = {sem};
    a.chip = hw;
    a.in[0] = a.in[1] = a.out[0] = {.shape = {rows, cols}, .block = {br, cols},
                                    .index_map = [](index_t i) { return idx(i, 0); }};
    a.in[0].buffer_count = a.in[1].buffer_count = a.out[0].buffer_count = bc;
    a.options.per_step = per_step_rows::never;
    return a;
}

void register_add() {
    constexpr index_t rows = 4096, cols = 2048;
    add("add", "v5e/rows256/Buffered2",
        [a = make_add(rows, cols, 256, 2, tpu::v5e, parallel)] { return a.predict(add_body); }, true);
    for (const auto& [hw, cn] : chips())
        for (index_t br : {8, 64, 256, 512})
            for (int bc : {1, 2}) {
                if (hw == &tpu::v5e && br == 256 && bc == 2) continue;
                add("add", cn + "/rows" + std::to_string(br) + "/Buffered" + std::to_string(bc),
                    [a = make_add(rows, cols, br, bc, *hw, parallel)] { return a.predict(add_body); });
            }
}

// ---- 2. Blocked matmul with an f32 accumulator -----------------------------------------------

using Matmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;
constexpr auto matmul_body = [](auto x, auto y, auto o, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(x), load(y)));
    if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
};

Matmul make_matmul(index_t n, index_t bm, index_t bk, int bc, const chip& hw, bool split = true) {
    Matmul mm;
    mm.grid = {n / bm, n / bm, n / bk};
    mm.semantics = {split ? parallel : arbitrary, split ? parallel : arbitrary, arbitrary};
    mm.chip = hw;
    mm.in[0] = {.shape = {n, n}, .block = {bm, bk}, .index_map = [](index_t i, index_t, index_t k) { return idx(i, k); }};
    mm.in[1] = {.shape = {n, n}, .block = {bk, bm}, .index_map = [](index_t, index_t j, index_t k) { return idx(k, j); }};
    mm.out[0] = {.shape = {n, n}, .block = {bm, bm}, .index_map = [](index_t i, index_t j, index_t) { return idx(i, j); }};
    mm.in[0].buffer_count = mm.in[1].buffer_count = bc;
    mm.scratch[0] = {bm, bm};
    mm.options.per_step = per_step_rows::never;
    return mm;
}

void register_matmul() {
    constexpr index_t n = 4096;
    add("matmul", "v5e/bm512_bk512/Buffered2",
        [m = make_matmul(n, 512, 512, 2, tpu::v5e)] { return m.predict(matmul_body); }, true);
    for (const auto& [hw, cn] : chips())
        for (auto [bm, bk] : {std::pair<index_t, index_t>{128, 128}, {256, 512}, {512, 512}, {512, 1024}, {1024, 1024}})
            for (int bc : {1, 2}) {
                if (hw == &tpu::v5e && bm == 512 && bk == 512 && bc == 2) continue;
                add("matmul",
                    cn + "/bm" + std::to_string(bm) + "_bk" + std::to_string(bk) + "/Buffered" + std::to_string(bc),
                    [m = make_matmul(n, bm, bk, bc, *hw)] { return m.predict(matmul_body); });
            }
}

// ---- 10. Deep buffering: the matmul's grid as one inner pipeline -----------------------------

void register_deep_buffering() {
    // The blocked matmul with custom_buffered: its grid runs as one inner pipeline of a gridless
    // call (upstream's way to more than two buffers), y's window 1 to 4 deep, with and without
    // lookahead; the reference is the same matmul as a top-level call, double-buffered. One
    // dynamic_call type for all of them.
    constexpr index_t n = 4096, bm = 512, bk = 512;
    add(
        "deep_buffering", "v5e/top_level/Buffered2",
        [m = make_matmul(n, bm, bk, 2, tpu::v5e)] { return m.predict(matmul_body); }, true);
    for (const auto& [hw, cn] : chips())
        for (int bc = 1; bc <= 4; ++bc)
            for (const bool ahead : {false, true}) {
                if (bc == 1 && ahead) continue;  // Q1
                Matmul m = make_matmul(n, bm, bk, 2, *hw);
                m.custom_buffered = true;
                m.in[1].buffer_count = bc;
                m.in[1].lookahead = ahead;
                add("deep_buffering",
                    cn + "/custom/Buffered" + std::to_string(bc) + (ahead ? "_lookahead" : ""),
                    [m] { return m.predict(matmul_body); });
            }
}

// ---- 9. The megacore split ------------------------------------------------------------------

void register_megacore() {
    // A compute-bound matmul and a memory-bound add, their grid axes parallel (split over both
    // TensorCores of a megacore chip) or arbitrary (one core runs them). The matmul gains until
    // the two cores' fetches saturate their shared HBM; the add, bound by HBM already, gains
    // nothing.
    add("megacore_matmul", "v5p/parallel",
        [m = make_matmul(4096, 512, 512, 2, tpu::v5p)] { return m.predict(matmul_body); }, true);
    add("megacore_matmul", "v5p/arbitrary",
        [m = make_matmul(4096, 512, 512, 2, tpu::v5p, false)] { return m.predict(matmul_body); });
    add("megacore_matmul", "v4/parallel",
        [m = make_matmul(4096, 512, 512, 2, tpu::v4)] { return m.predict(matmul_body); });
    add("megacore_matmul", "v4/arbitrary",
        [m = make_matmul(4096, 512, 512, 2, tpu::v4, false)] { return m.predict(matmul_body); });
    constexpr index_t rows = 8192, cols = 1024;
    for (const chip* hw : {&tpu::v5p, &tpu::v4})
        for (dim_semantics sem : {parallel, arbitrary})
            add("megacore_add", name_of(*hw) + (sem == parallel ? "/parallel" : "/arbitrary"),
                [a = make_add(rows, cols, 256, 2, *hw, sem)] { return a.predict(add_body); },
                hw == &tpu::v5p && sem == parallel);
}

// ---- 3. The fused MLP (docs/model.md's calibration kernel) -----------------------------------

using Mlp = dynamic_call<In<F2, F2, F2, F2>, Out<F2>>;
constexpr auto mlp_body = [](auto x, auto wg, auto wu, auto wd, auto o) {
    const auto xv = load(x);
    const auto g = dot(xv, load(wg));
    const auto y = dot(g * logistic(g) * dot(xv, load(wu)), load(wd));
    store(o, program_id(1) == 0 ? y : load(o) + y);
};

Mlp make_mlp(index_t bh, int bc, const chip& hw) {
    constexpr index_t E = 1152, H = 6912, T = 256, bt = 128;
    Mlp m;
    m.grid = {T / bt, H / bh};
    m.semantics = {parallel, arbitrary};
    m.chip = hw;
    m.in[0] = {.shape = {T, E}, .block = {bt, E}, .index_map = [](index_t i, index_t) { return idx(i, 0); }};
    m.in[1] = m.in[2] = {.shape = {E, H}, .block = {E, bh}, .index_map = [](index_t, index_t j) { return idx(0, j); }};
    m.in[3] = {.shape = {H, E}, .block = {bh, E}, .index_map = [](index_t, index_t j) { return idx(j, 0); }};
    m.out[0] = m.in[0];
    m.in[1].buffer_count = m.in[2].buffer_count = m.in[3].buffer_count = bc;
    m.options.per_step = per_step_rows::never;
    return m;
}

void register_mlp() {
    add("mlp", "v5e/block_h384/Buffered2", [m = make_mlp(384, 2, tpu::v5e)] { return m.predict(mlp_body); }, true);
    for (const auto& [hw, cn] : chips())
        for (index_t bh : {128, 384, 768, 1152})
            for (int bc : {1, 2}) {
                if (hw == &tpu::v5e && bh == 384 && bc == 2) continue;
                add("mlp", cn + "/block_h" + std::to_string(bh) + "/Buffered" + std::to_string(bc),
                    [m = make_mlp(bh, bc, *hw)] { return m.predict(mlp_body); });
            }
}

// ---- 4. Block-sparse matmul with scalar-prefetched block indices -----------------------------

using Spmm = dynamic_call<ScalarPrefetch<I1, I1>, In<F2, F2>, Out<F2>>;
constexpr auto spmm_body = [](auto r, auto, auto ab, auto vb, auto yb) {
    const index_t t = program_id(0);
    if (t == 0 || sload(r, t) != sload(r, t - 1)) store(yb, zeros_like(yb));
    store(yb, load(yb) + dot(load(ab), load(vb)));
};

/// A (4096, 4096) matrix with 1 in 4 of its (512, 512) tiles non-zero, cut into (b, b) blocks:
/// the non-zero blocks' row and column indices, sorted by row.
struct sparsity {
    std::vector<std::int32_t> rows, cols;
};
sparsity pattern(index_t b) {
    constexpr index_t n = 4096, tile = 512, tiles = n / tile;
    sparsity s;
    const index_t per = tile / b;
    for (index_t tr = 0; tr < tiles; ++tr)
        for (index_t r = 0; r < per; ++r)
            for (index_t tc = 0; tc < tiles; ++tc)
                if ((tr * 5 + tc * 3) % 4 == 0)
                    for (index_t c = 0; c < per; ++c) {
                        s.rows.push_back(static_cast<std::int32_t>(tr * per + r));
                        s.cols.push_back(static_cast<std::int32_t>(tc * per + c));
                    }
    return s;
}

Spmm make_spmm(index_t b, std::size_t nnz, int bc, const chip& hw) {
    constexpr index_t n = 4096, w = 512;
    Spmm s;
    s.grid = {static_cast<index_t>(nnz)};
    s.semantics = {arbitrary};
    s.chip = hw;
    s.in[0] = {.shape = {n, n}, .block = {b, b},
               .index_map = [](index_t t, const auto& r, const auto& c) { return idx(r[t], c[t]); }};
    s.in[1] = {.shape = {n, w}, .block = {b, w},
               .index_map = [](index_t t, const auto&, const auto& c) { return idx(c[t], 0); }};
    s.out[0] = {.shape = {n, w}, .block = {b, w},
                .index_map = [](index_t t, const auto& r, const auto&) { return idx(r[t], 0); }};
    s.in[0].buffer_count = s.in[1].buffer_count = bc;
    s.options.per_step = per_step_rows::never;
    return s;
}

void register_spmm() {
    for (index_t b : {512, 256, 128}) {
        auto sp = std::make_shared<const sparsity>(pattern(b));
        for (const auto& [hw, cn] : chips())
            for (int bc : {2, 1})
                add("block_sparse", cn + "/block" + std::to_string(b) + "/Buffered" + std::to_string(bc),
                    [s = make_spmm(b, sp->rows.size(), bc, *hw), sp] {
                        return s.predict(spmm_body, sp->rows, sp->cols);
                    },
                    hw == &tpu::v5e && b == 512 && bc == 2);
    }
}

// ---- 5. Ragged copy: an inner pipeline over bounded dynamic row slices -----------------------

constexpr index_t ragged_rows = 4096, ragged_cols = 512, ragged_slices = 256;
using RaggedX = Array<float, ragged_rows, ragged_cols>;
using RaggedTable = Array<std::int32_t, ragged_slices>;
using AnyFull = BlockSpec<Full, zero_map, any>;
template <const chip& C>
using RaggedCall = pallas_call<Grid<>, In<Arg<RaggedX, AnyFull>, Arg<RaggedTable, AnyFull>, Arg<RaggedTable, AnyFull>>,
                               Out<Arg<RaggedX, AnyFull>>, Scratch<smem, std::int32_t, ragged_slices>,
                               Scratch<smem, std::int32_t, ragged_slices>, Chip<C>>;
constexpr auto ragged_map = [](index_t i, const auto& start, const auto& size) { return idx(ds(start(i), size(i)), 0); };
template <index_t Bound, int BC>
using RaggedIn = BlockSpec<Block<bounded_slice{Bound}, ragged_cols>, ragged_map, Buffered<BC>>;
template <index_t Bound>
using RaggedOut = BlockSpec<Block<bounded_slice{Bound}, ragged_cols>, ragged_map>;

/// Slices of 1 to 16 rows, one after another (sizes vary pseudo-randomly, as ragged batches do).
struct ragged_tables {
    host_array<RaggedX> x;
    host_array<RaggedTable> start, size;
    ragged_tables() {
        std::int32_t at = 0;
        for (index_t i = 0; i < ragged_slices; ++i) {
            const auto s = static_cast<std::int32_t>(1 + (i * 7 + 3) % 16);
            start(i) = at, size(i) = s;
            at += s;
        }
    }
};

template <const chip& C, index_t Bound, int BC>
report predict_ragged(const ragged_tables& t) {
    // Timing only: the tables (copied into SMEM by the body) drive the copies; the rows are not read.
    return std::get<1>(RaggedCall<C>{{.timing_only = true, .per_step = per_step_rows::never}}(
        [](auto x_hbm, auto start_hbm, auto size_hbm, auto y_hbm, auto start, auto size) {
            sync_copy(start_hbm, start);
            sync_copy(size_hbm, size);
            emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {ragged_slices},
                          in_specs<RaggedIn<Bound, BC>>, out_specs<RaggedOut<Bound>>, {}, start,
                          size)(x_hbm, y_hbm);
        },
        t.x, t.start, t.size));
}

void register_ragged() {
    auto t = std::make_shared<const ragged_tables>();
    add("ragged_copy", "v5e/bound16/Buffered2", [t] { return predict_ragged<tpu::v5e, 16, 2>(*t); }, true);
    add("ragged_copy", "v5e/bound16/Buffered1", [t] { return predict_ragged<tpu::v5e, 16, 1>(*t); });
    add("ragged_copy", "v5e/bound16/Buffered3", [t] { return predict_ragged<tpu::v5e, 16, 3>(*t); });
    add("ragged_copy", "v5e/bound16/Buffered4", [t] { return predict_ragged<tpu::v5e, 16, 4>(*t); });
    add("ragged_copy", "v5e/bound32/Buffered2", [t] { return predict_ragged<tpu::v5e, 32, 2>(*t); });
    add("ragged_copy", "v6e/bound16/Buffered2", [t] { return predict_ragged<tpu::v6e, 16, 2>(*t); });
    add("ragged_copy", "7x/bound16/Buffered2", [t] { return predict_ragged<tpu::v7x, 16, 2>(*t); });
}

// ---- 6. Gather with varying per-step compute: lookahead on and off ---------------------------

constexpr index_t g_runs = 16, g_run_len = 4, g_rows = 512, g_cols = 1024;
using GatherSrc = Array<float, g_runs * g_rows, g_cols>;
using GatherDst = Array<float, g_runs * g_run_len * 8, 128>;
template <const chip& C>
using GatherCall = pallas_call<Grid<>, In<Arg<GatherSrc, AnyFull>>, Out<Arg<GatherDst, AnyFull>>, Chip<C>>;
using GatherOut = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
constexpr auto gather_map = [](index_t i) { return idx(i / g_run_len, 0); };
template <int BC, bool Ahead>
using GatherIn = BlockSpec<Block<g_rows, g_cols>, gather_map, Buffered<BC, Ahead>>;

template <const chip& C, int BC, bool Ahead>
report predict_gather() {
    return GatherCall<C>{{.per_step = per_step_rows::never}}.predict([](auto src, auto dst) {
        emit_pipeline(
            [](auto, auto) {
                // A run's first step is cheap, the others cost 1 us each [a stand-in for a body
                // whose work depends on the data].
                charge_seconds(pipeline_index(0) % g_run_len == 0 ? 0.2e-6 : 1e-6);
            },
            {g_runs * g_run_len}, in_specs<GatherIn<BC, Ahead>>, out_specs<GatherOut>)(src, dst);
    });
}

void register_gather() {
    add("gather", "v5e/Buffered2", [] { return predict_gather<tpu::v5e, 2, false>(); }, true);
    add("gather", "v5e/Buffered2_lookahead", [] { return predict_gather<tpu::v5e, 2, true>(); });
    add("gather", "v5e/Buffered3", [] { return predict_gather<tpu::v5e, 3, false>(); });
    add("gather", "v5e/Buffered3_lookahead", [] { return predict_gather<tpu::v5e, 3, true>(); });
    add("gather", "v5e/Buffered4_lookahead", [] { return predict_gather<tpu::v5e, 4, true>(); });
    add("gather", "v5e/Buffered1", [] { return predict_gather<tpu::v5e, 1, false>(); });
    add("gather", "v6e/Buffered2_lookahead", [] { return predict_gather<tpu::v6e, 2, true>(); });
}

// ---- 7. Grouped matmul (the MoE ragged dot) ---------------------------------------------------

constexpr index_t gm_M = 4096, gm_K = 1024, gm_N = 512, gm_G = 8, gm_tm = 256, gm_bk = 512, gm_tiles = gm_M / gm_tm;
using GmLhs = Array<bf16, gm_M, gm_K>;
using GmRhs = Array<bf16, gm_G, gm_K, gm_N>;
using GmRes = Array<float, gm_M, gm_N>;
using GmMeta = Array<std::int32_t, gm_tiles>;
template <const chip& C>
using GroupedCall =
    pallas_call<Grid<>, In<Arg<GmLhs, AnyFull>, Arg<GmRhs, AnyFull>, Arg<GmMeta, AnyFull>, Arg<GmMeta, AnyFull>>,
                Out<Arg<GmRes, AnyFull>>, Scratch<vmem, float, gm_tm, gm_N>, Scratch<smem, std::int32_t, gm_tiles>,
                Scratch<smem, std::int32_t, gm_tiles>, Chip<C>>;
constexpr auto gm_lhs_map = [](index_t t, index_t k, const auto& row, const auto&) { return idx(row(t), k); };
template <int BC, bool Ahead>
using GmLhsTile = BlockSpec<Block<gm_tm, gm_bk>, gm_lhs_map, Buffered<BC, Ahead>>;
using GmRhsTile = BlockSpec<Block<squeezed, gm_bk, gm_N>,
                            [](index_t t, index_t k, const auto&, const auto& group) { return idx(group(t), k, 0); }>;
using GmOutTile =
    BlockSpec<Block<gm_tm, gm_N>, [](index_t t, index_t, const auto& row, const auto&) { return idx(row(t), 0); }>;

/// Groups of 1 to 3 row tiles (uneven, as tokens routed to experts are), in order.
struct grouped_tables {
    host_array<GmLhs> lhs;
    host_array<GmRhs> rhs;
    host_array<GmMeta> row, group;
    grouped_tables() {
        std::int32_t g = 0, left = 1;
        for (index_t t = 0; t < gm_tiles; ++t) {
            row(t) = static_cast<std::int32_t>(t);
            group(t) = g;
            if (--left == 0 && g + 1 < gm_G) ++g, left = 1 + (g % 3);
        }
    }
};

template <const chip& C, int BC, bool Ahead>
report predict_grouped(const grouped_tables& t) {
    return std::get<1>(GroupedCall<C>{{.timing_only = true, .per_step = per_step_rows::never}}(
        [](auto l, auto r, auto row_hbm, auto group_hbm, auto o, auto acc, auto row_s, auto group_s) {
            sync_copy(row_hbm, row_s);
            sync_copy(group_hbm, group_s);
            emit_pipeline(
                [&](auto lt, auto rt, auto ot) {
                    const index_t k = pipeline_index(1);
                    if (k == 0) store(acc, zeros<float>(c<gm_tm>, c<gm_N>));
                    store(acc, load(acc) + dot(load(lt), load(rt)));
                    if (k == pipeline_size(1) - 1) store(ot, load(acc));
                },
                {gm_tiles, gm_K / gm_bk}, in_specs<GmLhsTile<BC, Ahead>, GmRhsTile>, out_specs<GmOutTile>, {},
                row_s, group_s)(l, r, o);
        },
        t.lhs, t.rhs, t.row, t.group));
}

void register_grouped() {
    auto t = std::make_shared<const grouped_tables>();
    add("grouped_matmul", "v5e/Buffered2", [t] { return predict_grouped<tpu::v5e, 2, false>(*t); }, true);
    add("grouped_matmul", "v5e/Buffered3_lookahead", [t] { return predict_grouped<tpu::v5e, 3, true>(*t); });
    add("grouped_matmul", "v5e/Buffered1", [t] { return predict_grouped<tpu::v5e, 1, false>(*t); });
    add("grouped_matmul", "v6e/Buffered2", [t] { return predict_grouped<tpu::v6e, 2, false>(*t); });
    add("grouped_matmul", "v6e/Buffered3_lookahead", [t] { return predict_grouped<tpu::v6e, 3, true>(*t); });
}

// ---- 8. Flash-attention forward (online softmax) ---------------------------------------------

constexpr index_t fa_S = 4096, fa_D = 128;
constexpr auto by_row_of_2d = [](auto i, auto) { return idx(i, 0); };
constexpr auto by_col_step_2d = [](auto, auto j) { return idx(j, 0); };
template <index_t BQ, index_t BKV, const chip& C>
using Flash = pallas_call<
    Grid<fa_S / BQ, fa_S / BKV>, Semantics<parallel, arbitrary>, Chip<C>,
    In<Arg<Array<bf16, fa_S, fa_D>, BlockSpec<Block<BQ, fa_D>, by_row_of_2d>>,
       Arg<Array<bf16, fa_S, fa_D>, BlockSpec<Block<BKV, fa_D>, by_col_step_2d>>,
       Arg<Array<bf16, fa_S, fa_D>, BlockSpec<Block<BKV, fa_D>, by_col_step_2d>>>,
    Out<Arg<Array<float, fa_S, fa_D>, BlockSpec<Block<BQ, fa_D>, by_row_of_2d>>>, Scratch<vmem, float, BQ, 128>,
    Scratch<vmem, float, BQ, 128>, Scratch<vmem, float, BQ, fa_D>>;

using test_kernels::flash_body;  // tests/sim/flash_body.hpp, as the vector-bound test's

template <index_t BQ, index_t BKV, const chip& C>
report predict_flash() {
    return Flash<BQ, BKV, C>{{.per_step = per_step_rows::never}}.predict(flash_body<BQ>{});
}

void register_flash() {
    add("flash_attention", "7x/bq512_bkv512", [] { return predict_flash<512, 512, tpu::v7x>(); }, true);
    add("flash_attention", "7x/bq256_bkv512", [] { return predict_flash<256, 512, tpu::v7x>(); });
    add("flash_attention", "7x/bq512_bkv1024", [] { return predict_flash<512, 1024, tpu::v7x>(); });
    add("flash_attention", "v6e/bq512_bkv512", [] { return predict_flash<512, 512, tpu::v6e>(); });
    add("flash_attention", "v5e/bq512_bkv512", [] { return predict_flash<512, 512, tpu::v5e>(); });
    add("flash_attention", "v5p/bq512_bkv512", [] { return predict_flash<512, 512, tpu::v5p>(); });
}

}  // namespace

int main(int argc, char** argv) {
    register_add();
    register_matmul();
    register_mlp();
    register_spmm();
    register_ragged();
    register_gather();
    register_grouped();
    register_flash();
    register_megacore();
    register_deep_buffering();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
