// Lookahead (S32) on a gather whose per-step compute varies: an inner pipeline walks runs of four
// steps over the same 2 MiB block (block indices 0,0,0,0,1,1,1,1,...); the first step of each run
// computes little and the others more. Without lookahead the next block is fetched one step ahead
// (S23.1), at the last step of a run, and its transfer is exposed; with Buffered<2, true> the slot
// freed at the run's start is refilled at once, and the transfer hides under the whole run. The
// counters are the predicted device times and their ratio; the host time is what predicting costs.
#include <benchmark/benchmark.h>

#include <ptpu/ptpu.hpp>

using namespace ptpu;

namespace {

constexpr index_t runs = 16, run_len = 4, rows = 512, cols = 1024;
using Src = Array<float, runs * rows, cols>;
using Dst = Array<float, runs * run_len * 8, 128>;
using AnyFull = BlockSpec<Full, zero_map, any>;
using Gather = pallas_call<Grid<>, In<Arg<Src, AnyFull>>, Out<Arg<Dst, AnyFull>>, Chip<tpu::v5e>>;
using OutRows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;

// (The two specs are written out at namespace scope: g++ 12 miscompiled a lambda-carrying
// BlockSpec declared inside a function template into a call that simulates nothing.)
constexpr auto run_map = [](index_t i) { return idx(i / run_len, 0); };
using Standard = BlockSpec<Block<rows, cols>, run_map, Buffered<2>>;
using Ahead = BlockSpec<Block<rows, cols>, run_map, Buffered<2, true>>;

template <class In4>
report predict_gather() {
    return Gather{}.predict([](auto src, auto dst) {
        emit_pipeline(
            [](auto, auto) {
                // The run's first step is cheap, the others cost 1 us each [a stand-in for a body
                // whose work depends on the data].
                charge_seconds(pipeline_index(0) % run_len == 0 ? 0.2e-6 : 1e-6);
            },
            {runs * run_len}, in_specs<In4>, out_specs<OutRows>)(src, dst);
    });
}

template <class In4>
void BM_Gather(benchmark::State& state) {
    double device = 0, exposed = 0;
    for (auto _ : state) {
        const report r = predict_gather<In4>();
        device = r.device_time;
        exposed = r.exposed_dma;
        // (Not DoNotOptimize(device): Google Benchmark 1.7's "+m,r" constraint lets g++ keep a
        // double in a general register and hand back garbage.)
        benchmark::DoNotOptimize(r.ops);
    }
    const double standard = predict_gather<Standard>().device_time;
    state.counters["device_us"] = device * 1e6;
    state.counters["exposed_dma_us"] = exposed * 1e6;
    state.counters["speedup_vs_standard"] = standard / device;
}
BENCHMARK(BM_Gather<Standard>);
BENCHMARK(BM_Gather<Ahead>);

}  // namespace

BENCHMARK_MAIN();
