// Instruction counts of timing-only predictions, free of the shared machine's load
// (timing_only_bench.cpp measures time): one prediction of -DKERNEL=0 the 3-operand kernel
// (2^17 steps of (8,128) f32 blocks, body with ops) on v5e, 1 the same on v5p's two TensorCores,
// 2 the reduction-axis matmul, grid (32, 32, 32) of (128,128) f32 blocks, on v5e, 3 the
// 3-operand kernel as a pipeline written by hand (async copies and DMA semaphores, 2^16 steps,
// tests/sim/hand_pipeline.hpp: compile with -Itests), its body run at every step. Prints the
// predicted time and the fast-forwarded share of ops. Not built by CMake; see
// docs/performance.md ("Throughput") for the callgrind command.
#include <ptpu/ptpu.hpp>

#include <cstdio>

#if KERNEL == 3
#include "sim/hand_pipeline.hpp"
#endif

using namespace ptpu;

namespace {
constexpr index_t steps = 1 << 17;
using X = Array<float, steps * 8, 128>;
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<steps>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;
using AddMc = pallas_call<Grid<steps>, Semantics<parallel>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>,
                          Chip<tpu::v5p>>;
using A = Array<float, 32 * 128, 32 * 128>;
using Matmul = pallas_call<Grid<32, 32, 32>, Semantics<parallel, parallel, arbitrary>,
                           In<Arg<A, BlockSpec<Block<128, 128>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                              Arg<A, BlockSpec<Block<128, 128>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                           Out<Arg<A, BlockSpec<Block<128, 128>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                           Chip<tpu::v5e>>;
}  // namespace

int main() {
#if KERNEL == 3
    const hand_test::hand_add<steps / 2>::call call{{.per_step = per_step_rows::never}};
    const report r = call.predict(hand_test::hand_add_body);
#elif KERNEL == 2
    const Matmul call{{.per_step = per_step_rows::never}};
    const report r = call.predict([](auto x, auto w, auto o) {
        when(program_id(2) == 0, [&] { store(o, zeros<float>(128, 128)); });
        store(o, load(o) + dot(load(x), load(w)));
    });
#else
    const std::conditional_t<KERNEL == 1, AddMc, Add> call{{.per_step = per_step_rows::never}};
    const report r = call.predict([](auto a, auto b, auto c) { store(c, load(a) + load(b)); });
#endif
    std::printf("device time %.10g s, %lld of %lld ops fast-forwarded\n", r.device_time,
                static_cast<long long>(r.steady_ops), static_cast<long long>(r.ops));
}
