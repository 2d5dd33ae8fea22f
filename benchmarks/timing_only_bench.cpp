// Throughput of a timing-only run (issue 4): a 3-operand kernel (2 inputs, 1 output, (8, 128)
// f32 blocks, double-buffered) over a long grid, body charging its work. Reported as grid steps
// per second (items_per_second) next to a full run of the same kernel, in one process.
#include <benchmark/benchmark.h>

#include <ptpu/ptpu.hpp>

using namespace ptpu;

namespace {
constexpr index_t steps = 1 << 20;
using X = Array<float, steps * 8, 128>;
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<steps>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

const host_array<X>& input() {
    static const host_array<X> x;
    return x;
}

// The body charges what an (8,128) f32 add costs: 2 vreg loads, 1 VPU op, 1 store.
constexpr work add_work{.vreg_cheap = 1, .vector_loads = 2, .vector_stores = 1};

void BM_TimingOnly(benchmark::State& st) {
    host_array<X> z;
    Add call{{.timing_only = true, .per_step = 0}};
    for (auto _ : st) {
        auto rep = call.into(std::tie(z), [](auto, auto, auto) { charge(add_work); }, input(), input());
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}

void BM_FullRun(benchmark::State& st) {
    host_array<X> z;
    Add call{{.per_step = 0}};
    for (auto _ : st) {
        auto rep = call.into(
            std::tie(z),
            [](auto a, auto b, auto c) {
                c[all] = a[all] + b[all];
                charge(add_work);
            },
            input(), input());
        benchmark::DoNotOptimize(rep.device_time);
    }
    st.SetItemsProcessed(st.iterations() * steps);
}
}  // namespace

BENCHMARK(BM_TimingOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_FullRun)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_MAIN();
