// Measures simulate()'s speed in ops per second on a synthetic double-buffered pipeline with two
// inputs and one output (8 ops per grid step), 1M steps per core, on 1 and 2 cores of v5p; on one
// core with every op simulated (steady_state off) and with the steady-state fast lane (on).
#include <benchmark/benchmark.h>

#include <ptpu/hw/presets.hpp>
#include <ptpu/sim/engine.hpp>

#include <array>
#include <cstdint>

namespace {

using ptpu::sim::op;
using ptpu::sim::op_kind;

// Generates each core's stream on the fly, as an executor would, without storing it:
//   prologue: start a0, start b0
//   step s:   overhead; start a(s+1), b(s+1) (if any); wait a(s), b(s); compute;
//             start out(s); wait out(s-1) (if any)
//   epilogue: wait out(n-1)
// DMA ids: 3s + operand. Operands are 2 MiB + 2 MiB in, 1 MiB out; compute ≈ the DMA time, so
// both regimes alternate as the two cores contend for HBM.
class pipeline_source {
public:
    explicit pipeline_source(std::uint32_t steps) : n_(steps) {}

    bool next(int core, op& out) {
        cursor& k = at_[static_cast<std::size_t>(core)];
        for (;;) {
            const std::uint32_t s = k.step;
            const std::uint32_t slot = k.slot++;
            if (s == n_) {  // the epilogue
                if (slot > 0) return false;
                out = wait(3 * (n_ - 1) + 2, n_ - 1);
                return true;
            }
            if (s == 0 && k.prologue) {
                if (slot == 0) {
                    out = start(0, in_bytes, 0);
                    return true;
                }
                out = start(1, in_bytes, 0);
                k.prologue = false;
                k.slot = 0;
                return true;
            }
            const bool more = s + 1 < n_;
            switch (slot) {
                case 0:
                    out = {.kind = op_kind::overhead, .step = s};  // (the chip's step overhead)
                    return true;
                case 1:
                    if (more) {
                        out = start(3 * (s + 1), in_bytes, s);
                        return true;
                    }
                    break;
                case 2:
                    if (more) {
                        out = start(3 * (s + 1) + 1, in_bytes, s);
                        return true;
                    }
                    break;
                case 3:
                    out = wait(3 * s, s);
                    return true;
                case 4:
                    out = wait(3 * s + 1, s);
                    return true;
                case 5:
                    out = {.kind = op_kind::compute, .work = 1, .step = s};  // 2.5 µs (simulate_pipeline)
                    return true;
                case 6:
                    out = start(3 * s + 2, out_bytes, s);
                    return true;
                case 7:
                    if (s > 0) {
                        out = wait(3 * (s - 1) + 2, s);
                        return true;
                    }
                    break;
                default:
                    k.step = s + 1;
                    k.slot = 0;
                    break;
            }
        }
    }

private:
    static constexpr std::int64_t in_bytes = 2 << 20;
    static constexpr std::int64_t out_bytes = 1 << 20;
    static op start(std::uint32_t id, std::int64_t bytes, std::uint32_t step) {
        return {.kind = op_kind::dma_start, .dma = id, .bytes = bytes, .label = id % 3, .step = step};
    }
    static op wait(std::uint32_t id, std::uint32_t step) {
        return {.kind = op_kind::dma_wait, .dma = id, .label = id % 3, .step = step};
    }
    struct cursor {
        std::uint32_t step = 0;
        std::uint32_t slot = 0;
        bool prologue = true;
    };
    std::uint32_t n_;
    std::array<cursor, 2> at_{};
};

void simulate_pipeline(benchmark::State& state) {
    const int cores = static_cast<int>(state.range(0));
    ptpu::sim::options opt;
    opt.steady_state = state.range(1) != 0;
    ptpu::stream::work_table works;  // work 1: the body, 2.5 µs
    works.number(ptpu::work{.explicit_seconds = 2.5e-6});
    opt.works = &works;
    ptpu::chip hw = ptpu::tpu::v5p;
    hw.step_overhead_s = 0.28e-6;
    constexpr std::uint32_t steps = 1'000'000;
    std::int64_t ops = 0;
    double device_time = 0;
    for (auto _ : state) {
        pipeline_source src(steps);
        const auto r = ptpu::sim::simulate(hw, cores, src, opt);
        ops += r.op_count;
        device_time = r.device_time;
        benchmark::DoNotOptimize(device_time);
    }
    state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}
BENCHMARK(simulate_pipeline)
    ->ArgNames({"cores", "steady"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Unit(benchmark::kMillisecond);

// Only a source's cost, to tell it apart from the simulator's.
void source_only(benchmark::State& state) {
    std::int64_t ops = 0;
    for (auto _ : state) {
        pipeline_source src(1'000'000);
        op o;
        while (src.next(0, o)) {
            benchmark::DoNotOptimize(o);
            ++ops;
        }
    }
    state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}
BENCHMARK(source_only)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
