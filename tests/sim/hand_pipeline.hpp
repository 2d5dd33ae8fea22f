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

// The same in `parts` parts of `steps` blocks each, over a grid (parts, steps) whose first axis is
// parallel (a part per core on a megacore chip).
template <index_t parts, index_t steps, class Chip = ptpu::Chip<ptpu::tpu::v5p>>
struct hand_add_parts {
    using one = hand_add<parts * steps, Chip>;
    using X = typename one::X;
    using AnyX = typename one::AnyX;
    using Slots = typename one::Slots;
    using Sems = typename one::Sems;
    using call = ptpu::pallas_call<ptpu::Grid<parts, steps>, ptpu::Semantics<ptpu::parallel, ptpu::arbitrary>,
                                   ptpu::In<ptpu::Arg<X, AnyX>, ptpu::Arg<X, AnyX>>,
                                   ptpu::Out<ptpu::Arg<X, AnyX>>, Slots, Slots, Slots, Sems, Sems, Chip>;
};

// Step i of n of the pipeline over the row blocks from `first` on: the body's work, shared by
// the one-core body and the megacore one.
template <class A, class B, class O, class AB, class BB, class OB, class IS, class OS>
void hand_add_step(index_t first, index_t i, index_t n, A a, B b, O o, AB abuf, BB bbuf, OB obuf, IS in_sem,
                   OS out_sem) {
    using namespace ptpu;
    auto rows = [&](auto r, index_t j) { return r.at(ds((first + j) * 8, 8), ds(0, 128)); };
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
}

// Its body.
inline constexpr auto hand_add_body = [](auto a, auto b, auto o, auto abuf, auto bbuf, auto obuf, auto in_sem,
                                         auto out_sem) {
    hand_add_step(0, ptpu::program_id(0), ptpu::num_programs(0), a, b, o, abuf, bbuf, obuf, in_sem, out_sem);
};

// The same over a grid (parts, steps): each part of the rows (a core's, with the first axis
// parallel) is its own pipeline of `steps` blocks.
inline constexpr auto hand_add_parts_body = [](auto a, auto b, auto o, auto abuf, auto bbuf, auto obuf,
                                               auto in_sem, auto out_sem) {
    using ptpu::num_programs, ptpu::program_id;
    hand_add_step(program_id(0) * num_programs(1), program_id(1), num_programs(1), a, b, o, abuf, bbuf, obuf,
                  in_sem, out_sem);
};

// The same as a dynamic_call (grid, shapes and chip values): `parts` parts of `steps` row blocks,
// the first axis parallel.
using DynAny = ptpu::Operand<float, 2, ptpu::any>;
using DynSlots = ptpu::Operand<float, 3>;
using DynSems = ptpu::Operand<ptpu::dma_semaphore, 1, ptpu::semaphore>;
using dyn_add_parts_call =
    ptpu::dynamic_call<ptpu::In<DynAny, DynAny>, ptpu::Out<DynAny>,
                       ptpu::ScratchShapes<DynSlots, DynSlots, DynSlots, DynSems, DynSems>>;
inline dyn_add_parts_call dyn_add_parts(index_t parts, index_t steps, const ptpu::chip& c) {
    dyn_add_parts_call d;
    d.grid = {parts, steps};
    d.semantics = {ptpu::parallel, ptpu::arbitrary};
    d.chip = c;
    d.in[0].shape = {parts * steps * 8, 128};
    d.in[1].shape = d.in[0].shape;
    d.out[0].shape = d.in[0].shape;
    for (std::size_t k = 0; k < 3; ++k) d.scratch[k] = {2, 8, 128};
    d.scratch[3] = {2};
    d.scratch[4] = {2};
    return d;
}

}  // namespace hand_test
