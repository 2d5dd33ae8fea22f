// What stays a type in a dynamic_call is checked at compile time, one message each: the options
// (each given once, listing Operands), the Operand types (dtype, the body's ref rank), index maps
// that capture state, scratch spaces, semaphore scratch cells and the body's return type.
//! ko 1 10
//! ko 2 T1
//! ko 3 S7
//! ko 4 V1
//! ko 5 S5
//! ko 6 12
//! ko 7 10
//! ko 8 10
//! ko 9 36
//! ko 10 36
#include <ptpu/call/dynamic.hpp>
#include <ptpu/ops/ops.hpp>

using namespace ptpu;

using F2 = Operand<float, 2>;

int main() {
#if !defined(PTPU_KO)
    dynamic_call<In<F2>, Out<F2>, ScratchShapes<Operand<float, 2, smem>>> d;
    d.grid = {2};
    d.in[0] = {.shape = {16, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.out[0] = d.in[0];
    d.scratch[0] = {1, 1};
    (void)d.predict([](auto a, auto b, auto) { store(b, load(a)); });
#elif PTPU_KO == 1
    dynamic_call<In<F2>, Out<F2>, Grid<2>> d;  // 10: the grid is a value here
    (void)d;
#elif PTPU_KO == 2
    using D = Operand<double, 2>;  // T1: no such dtype
    (void)D::rank;
#elif PTPU_KO == 3
    dynamic_call<In<F2>, Out<F2>> d;
    const index_t rows = 8;
    d.in[0].index_map = [rows](index_t i) { return idx(i * rows, 0); };  // S7: captures state
#elif PTPU_KO == 4
    using Wide = Operand<float, 2, vmem, 3>;  // V1: a ref of more dims than the array
    (void)Wide::rank;
#elif PTPU_KO == 5
    dynamic_call<In<F2>, Out<F2>, ScratchShapes<Operand<float, 2, any>>> d;  // S5: no HBM scratch
    (void)d.describe();
#elif PTPU_KO == 6
    dynamic_call<In<F2>, Out<F2>> d;
    (void)d.predict([](auto, auto) { return 1; });  // 12: bodies return void
#elif PTPU_KO == 7
    dynamic_call<In<F2>, In<F2>, Out<F2>> d;  // 10: In twice
    (void)d;
#elif PTPU_KO == 8
    dynamic_call<In<Arg<Array<float, 16, 128>>>, Out<F2>> d;  // 10: a static Arg, not an Operand
    (void)d;
#elif PTPU_KO == 9
    using Cells = Operand<dma_semaphore, 1, vmem>;  // 36: semaphore cells in VMEM
    (void)Cells::rank;
#elif PTPU_KO == 10
    using Floats = Operand<float, 1, semaphore>;  // 36: semaphore scratch of floats
    (void)Floats::rank;
#endif
}
