// A pipeline written by hand with async copies and DMA semaphores (examples/async_pipeline.cpp's
// pattern), shared by the tests of the fast lane with semaphores and timing_only_bench: both
// inputs stay in HBM; each step starts the next step's two copies before waiting for its own,
// and writes its result back asynchronously, waiting for it a step later.
#pragma once

#include <ptpu/ptpu.hpp>

namespace hand_test {

using ptpu::index_t;

// The kernel over `steps` (8, 128) f32 row blocks of two inputs, on `Chip`.
template <index_t steps, class Chip = ptpu::Chip<ptpu::tpu::v5e>>
struct hand_add {
    using X = ptpu::Array<float, steps * 8, 128>;
    using AnyX = ptpu::BlockSpec<ptpu::Full, ptpu::zero_map, ptpu::any>;
    using Slots = ptpu::Scratch<ptpu::vmem, float, 2, 8, 128>;
    using Sems = ptpu::Scratch<ptpu::semaphore, ptpu::dma_semaphore, 2>;
    using call = ptpu::pallas_call<ptpu::Grid<steps>, ptpu::In<ptpu::Arg<X, AnyX>, ptpu::Arg<X, AnyX>>,
                                   ptpu::Out<ptpu::Arg<X, AnyX>>, Slots, Slots, Slots, Sems, Sems, Chip>;
};

// Its body.
inline constexpr auto hand_add_body = [](auto a, auto b, auto o, auto abuf, auto bbuf, auto obuf, auto in_sem,
                                         auto out_sem) {
    using namespace ptpu;
    const index_t i = program_id(0), n = num_programs(0);
    auto rows = [](auto r, index_t j) { return r.at(ds(j * 8, 8), ds(0, 128)); };
    auto fetch = [&](index_t j) {
        make_async_copy(rows(a, j), abuf.at(j % 2), in_sem.at(j % 2)).start();
        make_async_copy(rows(b, j), bbuf.at(j % 2), in_sem.at(j % 2)).start();
    };
    auto write = [&](index_t j) { return make_async_copy(obuf.at(j % 2), rows(o, j), out_sem.at(j % 2)); };
    if (i == 0) fetch(0);
    if (i + 1 < n) fetch(i + 1);
    make_async_copy(rows(a, i), abuf.at(i % 2), in_sem.at(i % 2)).wait();
    make_async_copy(rows(b, i), bbuf.at(i % 2), in_sem.at(i % 2)).wait();
    store(obuf.at(i % 2), load(abuf.at(i % 2)) + load(bbuf.at(i % 2)));
    write(i).start();
    if (i > 0) write(i - 1).wait();
    if (i == n - 1) write(i).wait();
};

}  // namespace hand_test
