// Predicting a long pipeline written by hand. Its body asks program_id and branches on it (the
// prologue, the next fetch, the epilogue), so a prediction runs it at every step: the body memo
// reuses only runs that charge work. Its copies and waits repeat every two steps (the slots and
// semaphores alternate) except at the first step and the last, and declaring that
// (run_options::steady_body) lets the prediction skip whole periods of steps, running the body
// after each skipped stretch to check that it still does the same. The prediction is the same.
#include <ptpu/ptpu.hpp>

#include <cmath>
#include <iostream>
#include <utility>

using namespace ptpu;

constexpr index_t steps = 65536;
using X = Array<float, steps * 8, 512>;
using AnyX = BlockSpec<Full, zero_map, any>;        // the body gets the whole HBM array
using Buf = Scratch<vmem, float, 2, 8, 512>;        // two VMEM slots
using Sems = Scratch<semaphore, dma_semaphore, 2>;  // one DMA semaphore per slot
using Hand =
    pallas_call<Grid<steps>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Buf, Buf, Sems, Sems, Chip<tpu::v5e>>;

int main() {
    int runs = 0;
    auto body = [&runs](auto x_hbm, auto o_hbm, auto xbuf, auto obuf, auto in_sem, auto out_sem) {
        ++runs;
        const index_t i = program_id(0), n = num_programs(0);
        auto fetch = [&](index_t j) {
            return make_async_copy(x_hbm.at(ds(j * 8, 8), ds(0, 512)), xbuf.at(j % 2), in_sem.at(j % 2));
        };
        auto write = [&](index_t j) {
            return make_async_copy(obuf.at(j % 2), o_hbm.at(ds(j * 8, 8), ds(0, 512)), out_sem.at(j % 2));
        };
        if (i == 0) fetch(0).start();
        if (i + 1 < n) fetch(i + 1).start();
        fetch(i).wait();
        store(obuf.at(i % 2), load(xbuf.at(i % 2)) * 2.0f + 1.0f);
        write(i).start();
        if (i > 0) write(i - 1).wait();
        if (i == n - 1) write(i).wait();
    };

    const report every = Hand{{.per_step = per_step_rows::never}}.predict(body);
    const int every_runs = std::exchange(runs, 0);
    // Steady but for the first step (the prologue) and the last (the epilogue).
    const run_options declared{.per_step = per_step_rows::never,
                               .steady_body = body_edges{.first = 1, .last = 1}};
    const report steady = Hand{declared}.predict(body);

    const bool same = std::abs(steady.device_time - every.device_time) <= 1e-9 * every.device_time &&
                      steady.stats.body_dmas == every.stats.body_dmas;
    std::cout << "steady_pipeline: " << (same ? "same prediction" : "MISMATCH") << ", "
              << steady.device_time * 1e6 << " us for " << steps << " steps; the body ran " << every_runs
              << " times, declared steady " << runs << " times\n";
    return same && runs < 100 ? 0 : 1;
}
