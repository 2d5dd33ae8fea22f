// Two TensorCores of a v5p hand data to each other through HBM, synchronised by a regular
// semaphore (S60): core 0 doubles rows 0-7 and signals core 1, which waits, reads core 0's rows
// and writes rows 8-15. The timing model blocks core 1 until core 0's signal and reports the
// wait as semaphore stall. The same kernel with the signal left out is a deadlock: ptpu raises
// it (rule 39) instead of hanging, and race detection reports a read of a copy in flight (DMA2).
#include <ptpu/ptpu.hpp>

#include <iostream>
#include <numeric>

using namespace ptpu;

using Rows = Array<float, 16, 128>;
using AnyRows = BlockSpec<Full, zero_map, any>;
using Pair = pallas_call<Grid<2>, In<Arg<Rows, AnyRows>>, Out<Arg<Rows, AnyRows>>, Scratch<vmem, float, 8, 128>,
                         Scratch<semaphore, dma_semaphore, 1>, Scratch<semaphore, regular_semaphore, 1>,
                         Semantics<parallel>, Chip<tpu::v5p>>;  // one grid step per core

int main() {
    host_array<Rows> x;
    std::iota(x.begin(), x.end(), 1.0f);
    auto kernel = [](bool signal) {
        return [signal](auto x_hbm, auto o_hbm, auto buf, auto dma, auto ready) {
            if (program_id(0) == 0) {
                async_copy(x_hbm.at(ds(0, 8), ds(0, 128)), buf, dma.at(0)).wait();
                store(buf, load(buf) * 2.0f);
                async_copy(buf, o_hbm.at(ds(0, 8), ds(0, 128)), dma.at(0)).wait();
                if (signal) semaphore_signal(ready.at(0), 1, /*core_index=*/1);
            } else {
                semaphore_wait(ready.at(0), 1);  // until core 0's rows are in HBM
                async_copy(o_hbm.at(ds(0, 8), ds(0, 128)), buf, dma.at(0)).wait();
                store(buf, load(buf) + 1.0f);
                async_copy(buf, o_hbm.at(ds(8, 8), ds(0, 128)), dma.at(0)).wait();
            }
        };
    };
    auto [o, rep] = Pair{}(kernel(true), x);
    bool ok = o(8, 5) == 2.0f * x(0, 5) + 1.0f && o(0, 5) == 2.0f * x(0, 5);
    std::cout << "core_handshake: " << (ok ? "ok" : "MISMATCH") << "; core 1 stalled "
              << rep.core[1].semaphore_stall * 1e6 << " us for core 0's signal\n";
    try {
        (void)Pair{}(kernel(false), x);
        ok = false;
    } catch (const error& e) {
        std::cout << "without the signal: " << e.what() << "\n";
        ok = ok && e.rule() == "39";
    }
    // Race detection: a body that reads a destination before the copy's wait.
    Pair checked;
    checked.options.detect_races = true;
    try {
        (void)checked([](auto x_hbm, auto, auto buf, auto dma, auto) {
            auto c = async_copy(x_hbm.at(ds(0, 8), ds(0, 128)), buf, dma.at(0));
            (void)load(buf);  // too early: buf is undefined until c.wait()
            c.wait();
        }, x);
        ok = false;
    } catch (const error& e) {
        std::cout << "reading before the wait: " << e.what() << "\n";
        ok = ok && e.rule() == "DMA2";
    }
    return ok ? 0 : 1;
}
