// Ranking 1,000 configurations of a blocked matmul with an accumulator (the target: at most
// 2 s on a 2-core machine): (4096 x 5120) @ (5120 x 4096) f32, 25 block shapes (bm, bn, bk) of
// 8,192 or 10,240 grid steps each, x 8 buffer counts (x, y, out: 1 or 2) x 5 chips (v4, v5e,
// v5p, v6e, 7x), one dynamic_call type, predicted by sweep::run in timing-only mode on all host
// cores. Wall time (UseRealTime); counters: configurations, feasible, rejected, grid steps per
// configuration, threads, cpu_s (CPU seconds of all threads). Side by side in one run: one thread, the single-core chips alone, and,
// on 100 points, the sweep keeping per-step rows (options::lean off) and a plain loop of predicts.
#include <benchmark/benchmark.h>

#include <ptpu/ptpu.hpp>
#include <ptpu/sweep/run.hpp>

#include <sys/resource.h>

#include <ostream>
#include <vector>

using namespace ptpu;

namespace {

using F2 = Operand<float, 2>;
using Matmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;

constexpr auto body = [](auto x, auto y, auto o, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(x), load(y)));
    if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
};

constexpr index_t M = 4096, N = 4096, K = 5120;

struct blocks {
    index_t bm, bn, bk;
    [[nodiscard]] index_t steps() const { return (M / bm) * (N / bn) * (K / bk); }
};
std::ostream& operator<<(std::ostream& os, const blocks& b) {
    return os << "(" << b.bm << ", " << b.bn << ", " << b.bk << ")";
}

// The block shapes of 2^23 elements (10,240 steps): bm 8 … 512, bn 128 … 4096, bk 128 … 1024;
// and four of 5 x 2^21 with bk 640 (8,192 steps).
std::vector<blocks> shapes() {
    std::vector<blocks> s;
    for (index_t bm = 8; bm <= 512; bm *= 2)
        for (index_t bk = 128; bk <= 1024; bk *= 2) {
            const index_t bn = (index_t{1} << 23) / (bm * bk);
            if (bn >= 128 && bn <= 4096) s.push_back({bm, bn, bk});
        }
    for (index_t bm : {16, 32, 64, 128}) s.push_back({bm, (index_t{1} << 14) / bm, 640});
    return s;
}

Matmul configure(const blocks& b, int bx, int by, int bo, const chip* c) {
    Matmul mm;
    mm.semantics = {parallel, parallel, arbitrary};
    mm.chip = *c;
    mm.in[0].index_map = [](index_t i, index_t, index_t k) { return idx(i, k); };
    mm.in[1].index_map = [](index_t, index_t j, index_t k) { return idx(k, j); };
    mm.out[0].index_map = [](index_t i, index_t j, index_t) { return idx(i, j); };
    mm.in[0].shape = {M, K};
    mm.in[1].shape = {K, N};
    mm.out[0].shape = {M, N};
    mm.grid = {M / b.bm, N / b.bn, K / b.bk};
    mm.in[0].block = {b.bm, b.bk};
    mm.in[1].block = {b.bk, b.bn};
    mm.out[0].block = {b.bm, b.bn};
    mm.in[0].buffer_count = bx;
    mm.in[1].buffer_count = by;
    mm.out[0].buffer_count = bo;
    mm.scratch[0] = {b.bm, b.bn};
    return mm;
}

using space_t = sweep::space<blocks, int, int, int, const chip*>;
space_t space(std::vector<const chip*> chips) { return space_t{shapes(), {1, 2}, {1, 2}, {1, 2}, std::move(chips)}; }
const std::vector<const chip*> all_chips{&tpu::v4, &tpu::v5e, &tpu::v5p, &tpu::v6e, &tpu::v7x};

// The process's CPU time, all threads (the machine is shared: wall time depends on its load, the
// CPU seconds a sweep needs much less; cpu_s / 2 is its wall time on two free cores).
double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

void report_counters(benchmark::State& st, const sweep::result& r, double steps) {
    st.counters["configs"] = static_cast<double>(r.size());
    st.counters["feasible"] = static_cast<double>(r.ranked.size());
    st.counters["rejected"] = static_cast<double>(r.rejected.size());
    st.counters["threads"] = r.threads;
    st.counters["steps_per_config"] = steps;
}

double mean_steps(const space_t& s) {
    double n = 0;
    for (const blocks& b : s.axis<0>()) n += static_cast<double>(b.steps());
    return n / static_cast<double>(s.axis<0>().size());
}

// The target: 1,000 configurations on all host cores.
void BM_Rank1000(benchmark::State& st) {
    const space_t s = space(all_chips);
    sweep::result r;
    const double cpu0 = cpu_seconds();
    for (auto _ : st) {
        r = sweep::run(s, [](const blocks& b, int bx, int by, int bo, const chip* c) { return configure(b, bx, by, bo, c); },
                       body, {.threads = static_cast<unsigned>(st.range(0)), .bar = sweep::progress::off});
        benchmark::DoNotOptimize(r.ranked.data());
    }
    st.counters["cpu_s"] = (cpu_seconds() - cpu0) / static_cast<double>(st.iterations());
    report_counters(st, r, mean_steps(s));
}
BENCHMARK(BM_Rank1000)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// The same shapes and buffers on the chips a kernel runs on one TensorCore of (v5e, v6e, 7x:
// 600 configurations): the megacore chips (v4, v5p) run without the model's steady-state fast
// lane for now.
void BM_RankSingleCoreChips(benchmark::State& st) {
    const space_t s = space({&tpu::v5e, &tpu::v6e, &tpu::v7x});
    sweep::result r;
    const double cpu0 = cpu_seconds();
    for (auto _ : st) {
        r = sweep::run(s, [](const blocks& b, int bx, int by, int bo, const chip* c) { return configure(b, bx, by, bo, c); },
                       body, {.bar = sweep::progress::off});
        benchmark::DoNotOptimize(r.ranked.data());
    }
    st.counters["cpu_s"] = (cpu_seconds() - cpu0) / static_cast<double>(st.iterations());
    report_counters(st, r, mean_steps(s));
}
BENCHMARK(BM_RankSingleCoreChips)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// 100 of the points (v5e and v6e, x and out double-buffered): the sweep lean (no per-step rows:
// the fast lane on) and not (predict's default: per-step rows for grids of at most 65,536 steps),
// on all cores and on one; and the same 100 predictions in a plain loop, what the sweep adds.
const space_t& hundred() {
    static const space_t s{shapes(), {2}, {1, 2}, {2}, {&tpu::v5e, &tpu::v6e}};
    return s;
}
void BM_Rank100(benchmark::State& st) {
    sweep::result r;
    const double cpu0 = cpu_seconds();
    for (auto _ : st) {
        r = sweep::run(hundred(), [](const blocks& b, int bx, int by, int bo, const chip* c) { return configure(b, bx, by, bo, c); },
                       body, {.threads = static_cast<unsigned>(st.range(1)), .bar = sweep::progress::off, .lean = st.range(0) != 0});
        benchmark::DoNotOptimize(r.ranked.data());
    }
    st.counters["cpu_s"] = (cpu_seconds() - cpu0) / static_cast<double>(st.iterations());
    report_counters(st, r, mean_steps(hundred()));
}
BENCHMARK(BM_Rank100)->ArgNames({"lean", "threads"})->Args({1, 0})->Args({1, 1})->Args({0, 0})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_Loop100(benchmark::State& st) {
    double sum = 0;
    const double cpu0 = cpu_seconds();
    for (auto _ : st) {
        for (const auto& [b, bx, by, bo, c] : hundred().points()) {
            Matmul mm = configure(b, bx, by, bo, c);
            mm.options.per_step = per_step_rows::never;
            sum += mm.predict(body).device_time;
        }
        benchmark::DoNotOptimize(sum);
    }
    st.counters["cpu_s"] = (cpu_seconds() - cpu0) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_Loop100)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
