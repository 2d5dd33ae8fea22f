// Peak memory and throughput of timing-only predictions as the grid grows: a streaming copy
// (one input, one output, (8, 128) f32 blocks, double-buffered) of 10^K steps on v5e, K the
// first argument (6, 7, 8 or 9), predicted once. Prints the steps per second of the prediction and
// the process's peak resident set (getrusage ru_maxrss), which a timing-only prediction keeps
// bounded by the schedule's period, not its length (docs/model.md, "Memory"). Not built by CMake:
// see docs/performance.md ("Timing-only memory") for the command. Each size runs in its own process, so
// that each peak is its own.
#include <ptpu/ptpu.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace ptpu;

namespace {
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
template <index_t Steps>
using X = Array<float, Steps * 8, 128>;
template <index_t Steps>
using Copy = pallas_call<Grid<Steps>, In<Arg<X<Steps>, Blk>>, Out<Arg<X<Steps>, Blk>>, Chip<tpu::v5e>>;

template <index_t Steps>
double copy_seconds(double& device_time) {
    const Copy<Steps> call{{.per_step = per_step_rows::never}};
    const auto t0 = std::chrono::steady_clock::now();
    const report r = call.predict([](auto x, auto o) { store(o, load(x)); });
    const auto t1 = std::chrono::steady_clock::now();
    device_time = r.device_time;
    return std::chrono::duration<double>(t1 - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
    const int k = argc > 1 ? std::atoi(argv[1]) : 6;
    double device = 0, host = 0;
    index_t steps = 0;
    switch (k) {
        case 6: host = copy_seconds<1'000'000>(device), steps = 1'000'000; break;
        case 7: host = copy_seconds<10'000'000>(device), steps = 10'000'000; break;
        case 8: host = copy_seconds<100'000'000>(device), steps = 100'000'000; break;
        case 9: host = copy_seconds<1'000'000'000>(device), steps = 1'000'000'000; break;
        default: std::fprintf(stderr, "usage: %s 6|7|8|9\n", argv[0]); return 2;
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("10^%d steps: %.3f s host, %.3g steps/s, peak RSS %.1f MB, device time %.9g s\n", k, host,
                static_cast<double>(steps) / host, static_cast<double>(ru.ru_maxrss) / 1024.0, device);
}
