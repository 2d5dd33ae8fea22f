// Compile-fail cases of emit_pipeline: a static inner schedule breaking a rule gives that rule's
// message; a wrong number of refs; a source that is not an ANY/HBM ref.
//! ko 1 S34
//! ko 2 ARG1
//! ko 3 29
#include <ptpu/ptpu.hpp>

using namespace ptpu;

using X = Array<float, 32, 128>;
using Rows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
using Past = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i + 4, 0); }>;

#if !defined(PTPU_KO)
static_assert(emit_pipeline_schedule<Grid<4>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>>::dma_count() == 8);
#elif PTPU_KO == 1
constexpr std::size_t n = emit_pipeline_schedule<Grid<4>, In<Arg<X, Past>>, Out<Arg<X, Rows>>>::info.events;  // S34
#endif

void body([[maybe_unused]] ref<float, any, 2> x, [[maybe_unused]] ref<float, any, 2> o,
          [[maybe_unused]] ref<float, vmem, 2> v) {
    auto pipe = emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Rows>, out_specs<Rows>);
#if !defined(PTPU_KO)
    pipe(x, o);
#elif PTPU_KO == 2
    pipe(x);  // ARG1: one ref per spec
#elif PTPU_KO == 3
    pipe(v, o);  // 29: a VMEM source (aliasing, S56) is not supported
#endif
}

int main() {}
