// Compile-fail cases for read-only input refs (R4): an input's any/hbm ref is the caller's array,
// so a body may not copy into it, unless an Alias<in, out> makes it the output's buffer. The ok
// twin copies from the input, and into an aliased input. One mistake, one message.
//! ko 1 R4
//! ko 2 R4
//! ko 3 R4
//! ko 4 R4
//! ko 5 R4 the destination is .table.. copy into an output
#include <ptpu/ptpu.hpp>

using namespace ptpu;

using X = Array<float, 16, 128>;
using AnyX = BlockSpec<Full, zero_map, any>;
using Tile = Scratch<vmem, float, 8, 128>;
using Sems = Scratch<semaphore, dma_semaphore, 1>;
using Plain = pallas_call<Grid<2>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Tile, Sems>;
using Aliased = pallas_call<Grid<2>, Alias<0, 0>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Tile, Sems>;
using Named = pallas_call<Grid<2>, In<Arg<X, AnyX, "table">>, Out<Arg<X, AnyX, "out">>, Tile, Sems>;
// dynamic_call's aliases are run-time values: its any inputs are read-only, aliased or not (an
// aliased input is updated through its output's ref, the same buffer).
using AnyF2 = Operand<float, 2, any>;
using Dyn = dynamic_call<In<AnyF2>, Out<AnyF2>, ScratchShapes<Operand<float, 2>>>;

void run(const host_array<X>& x) {
#if !defined(PTPU_KO)
    (void)Plain{}(
        [](auto in, auto out, auto buf, auto sem) {
            sync_copy(in.at(ds(0, 8), ds(0, 128)), buf);
            async_copy(buf, out.at(ds(8, 8), ds(0, 128)), sem.at(0)).wait();
        },
        x);
    (void)Aliased{}([](auto in, auto, auto buf, auto) { sync_copy(buf, in.at(ds(0, 8), ds(0, 128))); }, x);
    Dyn d;
    (void)d([](auto in, auto out, auto buf) {
        sync_copy(in, buf);
        sync_copy(buf, out);
    }, x.vector());
#elif PTPU_KO == 1
    (void)Plain{}([](auto in, auto, auto buf, auto) { sync_copy(buf, in.at(ds(0, 8), ds(0, 128))); }, x);
#elif PTPU_KO == 2
    (void)Plain{}([](auto in, auto, auto buf, auto sem) { (void)make_async_copy(buf, in.at(ds(0, 8), ds(0, 128)), sem.at(0)); },
                  x);
#elif PTPU_KO == 3
    (void)Plain{}([](auto in, auto out, auto, auto) { sync_copy(out, in); }, x);
#elif PTPU_KO == 4
    Dyn d;
    (void)d([](auto in, auto, auto buf) { sync_copy(buf, in); }, x.vector());
#elif PTPU_KO == 5  // the message names the operand: `table`
    (void)Named{}([](auto table, auto out, auto, auto) { sync_copy(out, table.at(ds(0, 8), ds(0, 128))); }, x);
#endif
}

int main() {}
