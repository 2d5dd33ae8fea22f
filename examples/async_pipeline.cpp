// A pipeline written by hand with async copies and DMA semaphores, as Pallas TPU kernels that
// manage their own DMAs do (paged attention, ring collectives): the input stays in HBM (ANY),
// each step starts the copy of the next block before waiting for its own, and writes its result
// back asynchronously, waiting for it one step later. ptpu runs it on real data and times it as
// it does the pallas_call pipeline with the same blocks: the same result, the same predicted time.
#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <iostream>
#include <numeric>

using namespace ptpu;

using X = Array<float, 1024, 512>;
using AnyX = BlockSpec<Full, zero_map, any>;        // the body gets the whole HBM array
using Buf = Scratch<vmem, float, 2, 128, 512>;      // two VMEM slots
using Sems = Scratch<semaphore, dma_semaphore, 2>;  // one DMA semaphore per slot
using Hand = pallas_call<Grid<8>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Buf, Buf, Sems, Sems, Chip<tpu::v5e>>;

// The same kernel with the pipeline pallas_call builds from BlockSpecs.
using Blk = BlockSpec<Block<128, 512>, [](auto i) { return idx(i, 0); }>;
using Piped = pallas_call<Grid<8>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

int main() {
    host_array<X> x;
    std::iota(x.begin(), x.end(), 0.0f);

    auto body = [](auto x_hbm, auto o_hbm, auto xbuf, auto obuf, auto in_sem, auto out_sem) {
        const index_t i = program_id(0), n = num_programs(0);
        auto fetch = [&](index_t j) {  // rows [128 j, 128 j + 128) into slot j % 2
            return make_async_copy(x_hbm.at(ds(j * 128, 128), ds(0, 512)), xbuf.at(j % 2), in_sem.at(j % 2));
        };
        auto write = [&](index_t j) {
            return make_async_copy(obuf.at(j % 2), o_hbm.at(ds(j * 128, 128), ds(0, 512)), out_sem.at(j % 2));
        };
        if (i == 0) fetch(0).start();      // the prologue
        if (i + 1 < n) fetch(i + 1).start();  // the next block moves while this one computes
        fetch(i).wait();                      // a new descriptor of the same shape waits for it
        store(obuf.at(i % 2), load(xbuf.at(i % 2)) * 2.0f + 1.0f);
        write(i).start();
        if (i > 0) write(i - 1).wait();  // the previous write-back, one step later
        if (i == n - 1) write(i).wait();  // the epilogue: nothing is left in flight (check 39)
    };
    auto [y, hand] = Hand{}(body, x);
    auto [z, piped] = Piped{}([](auto a, auto b) { store(b, load(a) * 2.0f + 1.0f); }, x);

    const bool ok = std::ranges::equal(y, z) && y.vector()[1000] == 2001.0f;
    std::cout << "async_pipeline: " << (ok ? "ok" : "MISMATCH") << "; by hand " << hand.stats.body_dmas
              << " async copies, " << hand.stats.sem_waits << " semaphore waits, "
              << hand.device_time * 1e6 << " us; pallas_call " << piped.device_time * 1e6 << " us\n";
    return ok && hand.device_time == piped.device_time ? 0 : 1;
}
