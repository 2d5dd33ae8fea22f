// One translation unit with a static pallas_call plan of PTPU_STEPS grid steps (3 operands,
// double-buffered), compiled by benchmarks/compile_time/run.sh. PTPU_EVENTS=1 also materializes
// the whole event list as a constant (what a static_assert over Call::events costs); PTPU_EXEC=1
// also instantiates the runner and a kernel body (a program that runs the call); PTPU_KERNELS=n
// (1–5) runs n different kernels in the one translation unit, as a new user writes a file of
// kernels (each further kernel should cost only its own body and call).
#include <ptpu/ptpu.hpp>

#ifndef PTPU_STEPS
#define PTPU_STEPS 1024
#endif

using namespace ptpu;
using X = Array<float, PTPU_STEPS * 8, 128>;
using Blk = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
#if PTPU_BASELINE
int main() {
    return 0;
}
#else
using Call = pallas_call<Grid<PTPU_STEPS>, In<Arg<X, Blk>, Arg<X, Blk> >, Out<Arg<X, Blk> > >;
static_assert(Call::dma_count() == 3 * PTPU_STEPS);
#if PTPU_EVENTS
static_assert(Call::events.size() > 5 * PTPU_STEPS);
#endif
#ifndef PTPU_KERNELS
#define PTPU_KERNELS 1
#endif
// Kernels 2–5: other block shapes, dtypes and bodies (each a different call type and body).
using Y = Array<float, 1024, 256>;
using YBlk = BlockSpec<Block<256, 256>, [](auto i) { return idx(i, 0); }>;
using Z = Array<bf16, 512, 512>;
using ZBlk = BlockSpec<Block<128, 512>, [](auto i) { return idx(i, 0); }>;
using Call2 = pallas_call<Grid<4>, In<Arg<Y, YBlk>>, Out<Arg<Y, YBlk>>>;
using Call3 = pallas_call<Grid<4>, In<Arg<Y, YBlk>, Arg<Y, YBlk>>, Out<Arg<Y, YBlk>>>;
using Call4 = pallas_call<Grid<4>, In<Arg<Z, ZBlk>>, Out<Arg<Z, ZBlk>>>;
using Call5 = pallas_call<Grid<4>, In<Arg<Y, YBlk>>, Out<Arg<Y, YBlk>>, Chip<tpu::v5p>>;
int main() {
#if PTPU_EXEC
    // Instantiate the runner too, as a program that runs the kernel does.
    host_array<X> x, y;
    auto [z, rep] = Call{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);
    int r = static_cast<int>(rep.stats.steps % 2);
#if PTPU_KERNELS >= 2
    host_array<Y> u, v;
    auto [w2, rep2] = Call2{}([](auto a, auto o) { store(o, exp(load(a)) * 2.0f); }, u);
    r += static_cast<int>(rep2.stats.steps % 2);
#endif
#if PTPU_KERNELS >= 3
    auto [w3, rep3] = Call3{}([](auto a, auto b, auto o) { store(o, where(load(a) > load(b), load(a), load(b))); }, u, v);
    r += static_cast<int>(rep3.stats.steps % 2);
#endif
#if PTPU_KERNELS >= 4
    host_array<Z> q;
    auto [w4, rep4] = Call4{}([](auto a, auto o) { store(o, load(a) + load(a)); }, q);
    r += static_cast<int>(rep4.stats.steps % 2);
#endif
#if PTPU_KERNELS >= 5
    auto [w5, rep5] = Call5{}([](auto a, auto o) { store(o, broadcast_to(sum(load(a), c<1>), c<256>, c<256>)); }, u);
    r += static_cast<int>(rep5.stats.steps % 2);
#endif
    return r;
#else
    return static_cast<int>(Call::info.vmem_bytes % 2);
#endif
}
#endif
