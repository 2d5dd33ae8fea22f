// Seed: a blocked matmul with an f32 accumulator in VMEM scratch over (parallel, parallel,
// arbitrary): the reduction axis k is last, so each output block is written once, after its
// last k step (S27), and the accumulator persists across steps (S57). Every access is a charged
// op: the report's compute is the MXU's (dot, padded to its shape) plus the VPU's (loads,
// stores, the accumulating add).
#include <ptpu/ptpu.hpp>

#include <cmath>
#include <iostream>

using namespace ptpu;

constexpr index_t n = 1024, bm = 256, bn = 256, bk = 512;
using Mat = Array<float, n, n>;
using Matmul =
    pallas_call<Grid<n / bm, n / bn, n / bk>, Semantics<parallel, parallel, arbitrary>, Chip<tpu::v5e>,
                In<Arg<Mat, BlockSpec<Block<bm, bk>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<Mat, BlockSpec<Block<bk, bn>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<Mat, BlockSpec<Block<bm, bn>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Scratch<vmem, float, bm, bn>>;

// x and y are fetched once per step (their blocks change every step); o once per (i, j).
static_assert(Matmul::dma_count(0) == 32 && Matmul::dma_count(1) == 32 && Matmul::dma_count(2) == 16);

int main() {
    host_array<Mat> x, y;
    for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j) {
            x(i, j) = static_cast<float>((i * 7 + j * 3) % 11) - 5.0f;
            y(i, j) = static_cast<float>((i * 5 + j) % 13) - 6.0f;
        }
    auto [z, rep] = Matmul{}(
        [](auto xb, auto yb, auto ob, auto acc) {
            if (program_id(2) == 0) store(acc, zeros_like(acc));
            store(acc, load(acc) + dot(load(xb), load(yb)));  // DEFAULT precision: bf16 inputs
            if (program_id(2) == num_programs(2) - 1) store(ob, load(acc));
        },
        x, y);
    // Small integers: exact in bf16 (dot's inputs at DEFAULT precision) and every partial sum is
    // exact in f32, so the reference must match exactly.
    for (index_t i = 0; i < n; i += 61)
        for (index_t j = 0; j < n; j += 59) {
            double ref = 0;
            for (index_t k = 0; k < n; ++k) ref += static_cast<double>(x(i, k)) * y(k, j);
            if (z(i, j) != static_cast<float>(ref)) {
                std::cerr << "mismatch at (" << i << ", " << j << ")\n";
                return 1;
            }
        }
    std::cout << "blocked_matmul: ok; " << rep.stats.steps << " steps, " << rep.stats.dma_in << " fetches, "
              << rep.stats.dma_out << " write-backs; predicted " << rep.device_time * 1e6 << " us, MXU "
              << rep.mxu_utilization * 100 << "%\n";
    return 0;
}
