// Host overhead of ptpu's pallas_call machinery on its charged ops, measured side by side in one
// run (every ptpu body here charges its TPU work; docs/performance.md):
//  - f32 add over 4096x4096 in (512, 512) blocks, body store(c, load(a) + load(b)): ptpu vs a
//    hand-written blocked loop doing the same copies (HBM -> VMEM buffers -> HBM) and compute,
//    and vs a plain whole-array add; once on the block-shaped refs the body gets (static
//    shapes) and once on the same refs as dynamic ones (static shapes must cost nothing);
//  - f32 matmul 2048^3 in (512, 512, 512) blocks with an f32 accumulator in VMEM scratch, body
//    store(acc, load(acc) + dot(load(a), load(b))) at DEFAULT precision (bf16-rounded inputs):
//    ptpu vs Eigen's GEMM on the whole matrices (f32, no rounding);
//  - race detection on two cores (run_options::detect_races): an inner pipeline of 16,384 row
//    steps split over v5p's cores, every fetch and copy out logged (the log is indexed by
//    address, so each check costs O(log n)).
// Outputs go into preallocated buffers everywhere (pallas_call::into), so no variant pays for
// page faults of a fresh 64 MiB array.
#include <benchmark/benchmark.h>

#include <ptpu/ptpu.hpp>

#include <cstring>
#include <vector>

using namespace ptpu;

namespace {

constexpr index_t n = 4096, blk = 512;
using Big = Array<float, n, n>;
using Blk = BlockSpec<Block<blk, blk>, [](auto i, auto j) { return idx(i, j); }>;
using Add = pallas_call<Grid<n / blk, n / blk>, In<Arg<Big, Blk>, Arg<Big, Blk>>, Out<Arg<Big, Blk>>,
                        VmemLimit<64 << 20>>;

struct add_data {
    host_array<Big> x, y, z;
    add_data() {
        for (std::size_t i = 0; i < x.size(); ++i) {
            x.vector()[i] = static_cast<float>(i % 1024);
            y.vector()[i] = static_cast<float>(i % 77);
        }
    }
};
add_data& data() {
    static add_data d;
    return d;
}

// The add written with ops (load, +, store: each charges; load reads VMEM in place and the add
// is evaluated straight into c), once on the block-shaped refs the body gets (static shapes:
// checked at compile time) and once on the same refs converted to dynamic extents (checked at
// run time).
void BM_Add_Ptpu(benchmark::State& st) {
    auto& d = data();
    for (auto _ : st) {
        auto stats = Add{}.into(
            std::tie(d.z), [](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, d.x, d.y);
        benchmark::DoNotOptimize(stats.device_time);
    }
}
void BM_Add_Ptpu_DynamicRefs(benchmark::State& st) {
    auto& d = data();
    for (auto _ : st) {
        auto stats = Add{}.into(
            std::tie(d.z),
            [](vmem_ref<float, 2> a, vmem_ref<float, 2> b, vmem_ref<float, 2> c) {
                store(c, load(a) + load(b));
            },
            d.x, d.y);
        benchmark::DoNotOptimize(stats.device_time);
    }
}

// The same work by hand: per block, copy the x and y blocks into window buffers, add into an
// output buffer, copy it back. The same copies as the double-buffered pipeline (two slots per
// operand, used in turn), the same Eigen compute; no planner, no events, no refs.
void BM_Add_HandBlocked(benchmark::State& st) {
    auto& d = data();
    std::vector<float> slots(6 * blk * blk);
    using Map = Eigen::Map<Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
    for (auto _ : st) {
        index_t step = 0;
        for (index_t bi = 0; bi < n / blk; ++bi)
            for (index_t bj = 0; bj < n / blk; ++bj, ++step) {
                float* base = slots.data() + (step % 2) * 3 * blk * blk;
                float* xb = base;
                float* yb = base + blk * blk;
                float* zb = base + 2 * blk * blk;
                for (index_t r = 0; r < blk; ++r) {
                    const index_t off = (bi * blk + r) * n + bj * blk;
                    std::memcpy(xb + r * blk, d.x.data() + off, blk * sizeof(float));
                    std::memcpy(yb + r * blk, d.y.data() + off, blk * sizeof(float));
                }
                Map(zb, blk, blk) = Map(xb, blk, blk) + Map(yb, blk, blk);
                for (index_t r = 0; r < blk; ++r)
                    std::memcpy(d.z.data() + (bi * blk + r) * n + bj * blk, zb + r * blk,
                                blk * sizeof(float));
            }
        benchmark::DoNotOptimize(d.z.data());
    }
}

void BM_Add_WholeArray(benchmark::State& st) {
    auto& d = data();
    using Map = Eigen::Map<Eigen::ArrayXf>;
    for (auto _ : st) {
        Map(d.z.data(), n * n) = Map(d.x.data(), n * n) + Map(d.y.data(), n * n);
        benchmark::DoNotOptimize(d.z.data());
    }
}

constexpr index_t m = 2048, mb = 512;
using Sq = Array<float, m, m>;
using Matmul =
    pallas_call<Grid<m / mb, m / mb, m / mb>, Semantics<parallel, parallel, arbitrary>, VmemLimit<64 << 20>,
                In<Arg<Sq, BlockSpec<Block<mb, mb>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<Sq, BlockSpec<Block<mb, mb>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<Sq, BlockSpec<Block<mb, mb>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Scratch<vmem, float, mb, mb>>;

struct mm_data {
    host_array<Sq> x, y, z;
    mm_data() {
        for (std::size_t i = 0; i < x.size(); ++i) {
            x.vector()[i] = static_cast<float>(i % 13) * 0.25f;
            y.vector()[i] = static_cast<float>(i % 7) * 0.5f;
        }
    }
};
mm_data& mm() {
    static mm_data d;
    return d;
}

void BM_Matmul_Ptpu(benchmark::State& st) {
    auto& d = mm();
    for (auto _ : st) {
        auto stats = Matmul{}.into(
            std::tie(d.z),
            [](auto a, auto b, auto o, auto acc) {
                if (program_id(2) == 0) store(acc, zeros_like(acc));
                store(acc, load(acc) + dot(load(a), load(b)));
                if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
            },
            d.x, d.y);
        benchmark::DoNotOptimize(stats.device_time);
    }
}

void BM_Matmul_EigenWhole(benchmark::State& st) {
    auto& d = mm();
    using Mat = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
    for (auto _ : st) {
        Mat(d.z.data(), m, m).noalias() = Mat(d.x.data(), m, m) * Mat(d.y.data(), m, m);
        benchmark::DoNotOptimize(d.z.data());
    }
}

}  // namespace

// Interleaved registration: each pair runs back to back in one process.
// 16,384 inner steps over v5p's two cores with detect_races: y = 2 x by rows.
void BM_RaceLog16k(benchmark::State& state) {
    using Long = Array<float, 16384, 128>;
    using AnyFull = BlockSpec<Full, zero_map, any>;
    using Row = BlockSpec<Block<1, 128>, [](index_t i) { return idx(i, 0); }>;
    using Call = pallas_call<Grid<2>, In<Arg<Long, AnyFull>>, Out<Arg<Long, AnyFull>>, Semantics<parallel>,
                             Chip<tpu::v5p>>;
    host_array<Long> x, y;
    Call call;
    call.options.detect_races = true;
    call.options.per_step = per_step_rows::never;
    for (auto _ : state) {
        auto rep = call.into(std::tie(y),
                             [](auto xh, auto yh) {
                                 emit_pipeline([](auto i, auto w) { store(w, load(i) * 2.0f); }, {16384},
                                               in_specs<Row>, out_specs<Row>, {.semantics = {parallel}, .core_axis = 0})(
                                     xh, yh);
                             },
                             x);
        benchmark::DoNotOptimize(rep);
    }
    state.SetItemsProcessed(state.iterations() * 16384);
}

BENCHMARK(BM_Add_Ptpu)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Add_HandBlocked)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Add_Ptpu_DynamicRefs)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Add_WholeArray)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Matmul_Ptpu)->Unit(benchmark::kMillisecond)->MinTime(4.0);
BENCHMARK(BM_Matmul_EigenWhole)->Unit(benchmark::kMillisecond)->MinTime(4.0);
BENCHMARK(BM_RaceLog16k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_MAIN();
