// One translation unit with a static pallas_call plan of PTPU_STEPS grid steps (3 operands,
// double-buffered), compiled by benchmarks/compile_time/run.sh. PTPU_EVENTS=1 also materializes
// the whole event list as a constant (what a static_assert over Call::events costs); PTPU_EXEC=1
// also instantiates the executor and a kernel body (a program that runs the call).
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
int main() {
#if PTPU_EXEC
    // Instantiate the executor too, as a program that runs the kernel does.
    host_array<X> x, y;
    auto [z, rep] = Call{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);
    return static_cast<int>(rep.stats.steps % 2);
#else
    return static_cast<int>(Call::info.vmem_bytes % 2);
#endif
}
#endif
