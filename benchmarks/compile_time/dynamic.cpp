// Compile time of a dynamic_call against the equal static pallas_call (benchmarks/compile_time/
// dynamic.sh): the blocked matmul of examples/blocked_matmul.cpp predicted at PTPU_POINTS block
// sizes, as one pallas_call type per point (PTPU_DYNAMIC=0) or one dynamic_call whose block sizes
// are set in a loop (PTPU_DYNAMIC=1).
#include <ptpu/ptpu.hpp>

#include <cstdio>

using namespace ptpu;

#ifndef PTPU_POINTS
#define PTPU_POINTS 1
#endif

constexpr index_t n = 1024;
constexpr index_t sizes[] = {128, 256, 512};
constexpr auto body = [](auto x, auto y, auto o, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(x), load(y)));
    if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
};

#if PTPU_DYNAMIC
using F2 = Operand<float, 2>;
double run() {
    dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>> mm;
    mm.semantics = {parallel, parallel, arbitrary};
    mm.chip = tpu::v5e;
    mm.in[0].index_map = [](index_t i, index_t, index_t k) { return idx(i, k); };
    mm.in[1].index_map = [](index_t, index_t j, index_t k) { return idx(k, j); };
    mm.out[0].index_map = [](index_t i, index_t j, index_t) { return idx(i, j); };
    mm.in[0].shape = mm.in[1].shape = mm.out[0].shape = {n, n};
    double t = 0;
    for (int p = 0; p < PTPU_POINTS; ++p) {
        const index_t b = sizes[p];
        mm.grid = {n / b, n / b, n / b};
        mm.in[0].block = mm.in[1].block = mm.out[0].block = {b, b};
        mm.scratch[0] = {b, b};
        t += mm.predict(body).device_time;
    }
    return t;
}
#else
using Mat = Array<float, n, n>;
template <index_t B>
using Matmul =
    pallas_call<Grid<n / B, n / B, n / B>, Semantics<parallel, parallel, arbitrary>, Chip<tpu::v5e>,
                In<Arg<Mat, BlockSpec<Block<B, B>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<Mat, BlockSpec<Block<B, B>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<Mat, BlockSpec<Block<B, B>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Scratch<vmem, float, B, B>>;
// Spelled out: g++ 12 miscompiles these lambda-bearing alias templates instantiated from a pack
// expansion (Matmul<sizes[P]>... in a fold: the function compiles to nothing).
double run() {
    double t = Matmul<sizes[0]>{}.predict(body).device_time;
#if PTPU_POINTS > 1
    t += Matmul<sizes[1]>{}.predict(body).device_time;
    t += Matmul<sizes[2]>{}.predict(body).device_time;
#endif
    return t;
}
#endif

int main() { std::printf("%g\n", run()); }
