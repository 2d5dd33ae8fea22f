// Instruction counts of dynamic_call against the equal static pallas_call, free of the shared
// machine's load (dynamic_call_bench.cpp measures time): the three kernels of that benchmark, each
// predicted a fixed number of times, static (-DDYN=0) or dynamic (-DDYN=1), -DKERNEL=0 quickstart
// (1000 calls), 1 matmul (5 calls), 2 the 2^20-step add (1 call). Not built by CMake; see
// docs/performance.md ("Run-time configurations") for the callgrind command.
#include <ptpu/ptpu.hpp>

#include <cstdio>

using namespace ptpu;
using F2 = Operand<float, 2>;

int main() {
    double t = 0;
#if KERNEL == 0
    using X = Array<float, 1024, 512>;
    using Blk = BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>;
    using Static = pallas_call<Grid<4>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;
    dynamic_call<In<F2, F2>, Out<F2>> dyn{
        .grid = {4}, .chip = tpu::v5e, .options = {.per_step = per_step_rows::never}};
    dyn.in[0] = {.shape = {1024, 512}, .block = {256, 512}, .index_map = [](index_t i) { return idx(i, 0); }};
    dyn.in[1] = dyn.out[0] = dyn.in[0];
    const auto body = [](auto a, auto b, auto c) { store(c, load(a) + load(b)); };
    constexpr int calls = 1000;
#elif KERNEL == 1
    using A = Array<float, 32 * 128, 16 * 128>;
    using B = Array<float, 16 * 128, 32 * 128>;
    using O = Array<float, 32 * 128, 32 * 128>;
    using Static =
        pallas_call<Grid<32, 32, 16>, Semantics<parallel, parallel, arbitrary>,
                    In<Arg<A, BlockSpec<Block<128, 128>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                       Arg<B, BlockSpec<Block<128, 128>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                    Out<Arg<O, BlockSpec<Block<128, 128>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                    Chip<tpu::v5e>>;
    dynamic_call<In<F2, F2>, Out<F2>> dyn{.grid = {32, 32, 16},
                                          .semantics = {parallel, parallel, arbitrary},
                                          .chip = tpu::v5e,
                                          .options = {.per_step = per_step_rows::never}};
    dyn.in[0] = {.shape = {32 * 128, 16 * 128},
                 .block = {128, 128},
                 .index_map = [](index_t i, index_t, index_t k) { return idx(i, k); }};
    dyn.in[1] = {.shape = {16 * 128, 32 * 128},
                 .block = {128, 128},
                 .index_map = [](index_t, index_t j, index_t k) { return idx(k, j); }};
    dyn.out[0] = {.shape = {32 * 128, 32 * 128},
                  .block = {128, 128},
                  .index_map = [](index_t i, index_t j, index_t) { return idx(i, j); }};
    const auto body = [](auto x, auto w, auto o) {
        when(program_id(2) == 0, [&] { store(o, zeros<float>(128, 128)); });
        store(o, load(o) + dot(load(x), load(w)));
    };
    constexpr int calls = 5;
#else
    constexpr index_t steps = 1 << 20;
    using Long = Array<float, steps * 8, 128>;
    using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
    using Static = pallas_call<Grid<steps>, In<Arg<Long, Blk>, Arg<Long, Blk>>, Out<Arg<Long, Blk>>, Chip<tpu::v5e>>;
    dynamic_call<In<F2, F2>, Out<F2>> dyn{
        .grid = {steps}, .chip = tpu::v5e, .options = {.per_step = per_step_rows::never}};
    dyn.in[0] = {.shape = {steps * 8, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    dyn.in[1] = dyn.out[0] = dyn.in[0];
    const auto body = [](auto, auto, auto) { charge(work{.vreg_cheap = 1, .vector_loads = 2, .vector_stores = 1}); };
    constexpr int calls = 1;
#endif
#if DYN
    const auto& call = dyn;
#else
    (void)dyn;
    const Static call{{.per_step = per_step_rows::never}};
#endif
    for (int r = 0; r < calls; ++r) t += call.predict(body).device_time;
    std::printf("%g\n", t);
}
