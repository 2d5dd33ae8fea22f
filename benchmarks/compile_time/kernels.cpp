// A file of PTPU_KERNELS (1-9) static matmul kernels, one per block configuration, each run on
// data and its report printed: what anyone comparing configurations by type writes. Compiled by
// benchmarks/compile_time/loop.sh; (9 kernels - 1 kernel) / 8 is what each further kernel costs.
#include <ptpu/ptpu.hpp>

#include <iostream>

#ifndef PTPU_KERNELS
#define PTPU_KERNELS 9
#endif

using namespace ptpu;

using A = Array<float, 512, 512>;

// C = A B through (BM, BK) x (BK, BN) blocks, accumulated in a VMEM scratch over the k axis.
template <index_t BM, index_t BN, index_t BK>
using Matmul =
    pallas_call<Grid<512 / BM, 512 / BN, 512 / BK>,
                In<Arg<A, BlockSpec<Block<BM, BK>, [](auto i, auto, auto k) { return idx(i, k); }>, "x">,
                   Arg<A, BlockSpec<Block<BK, BN>, [](auto, auto j, auto k) { return idx(k, j); }>, "w">>,
                Out<Arg<A, BlockSpec<Block<BM, BN>, [](auto i, auto j, auto) { return idx(i, j); }>, "y">>,
                Scratch<vmem, float, BM, BN>, Semantics<parallel, parallel, arbitrary>>;

template <class Call>
double run(const host_array<A>& x, const host_array<A>& w) {
    auto [y, rep] = Call{}(
        [](auto a, auto b, auto c, auto acc) {
            if (program_id(2) == 0) store(acc, zeros_like(acc));
            store(acc, load(acc) + dot(load(a), load(b)));
            if (program_id(2) == num_programs(2) - 1) store(c, load(acc));
        },
        x, w);
    std::cout << rep;
    return y(0, 0);
}

int main() {
    host_array<A> x, w;
    double s = run<Matmul<128, 128, 128>>(x, w);
#if PTPU_KERNELS >= 2
    s += run<Matmul<256, 128, 128>>(x, w);
#endif
#if PTPU_KERNELS >= 3
    s += run<Matmul<128, 256, 128>>(x, w);
#endif
#if PTPU_KERNELS >= 4
    s += run<Matmul<128, 128, 256>>(x, w);
#endif
#if PTPU_KERNELS >= 5
    s += run<Matmul<256, 256, 128>>(x, w);
#endif
#if PTPU_KERNELS >= 6
    s += run<Matmul<256, 128, 256>>(x, w);
#endif
#if PTPU_KERNELS >= 7
    s += run<Matmul<128, 256, 256>>(x, w);
#endif
#if PTPU_KERNELS >= 8
    s += run<Matmul<256, 256, 256>>(x, w);
#endif
#if PTPU_KERNELS >= 9
    s += run<Matmul<512, 128, 128>>(x, w);
#endif
    return s == 0 ? 0 : 1;
}
