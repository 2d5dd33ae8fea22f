// Pins what Chip<...> stands for: a preset, however it is written (tpu::v5e, a reference to it, a
// copy, a template parameter given it), is chip_preset<preset> (held by reference, so
// diagnostics name it rather than print its fields); any other chip value is chip_value<value>.
// Both give the chip as `value`, and a call reads it. Compiling is the test.
#include <ptpu/ptpu.hpp>

#include <type_traits>

namespace {

using namespace ptpu;

constexpr chip v5e_copy = tpu::v5e;
constexpr chip calibrated = [] {
    chip c = tpu::v5e;
    c.step_overhead_s = 0.30e-6;
    return c;
}();

template <chip C>
using on = Chip<C>;

static_assert(std::is_same_v<Chip<tpu::v5e>, chip_preset<tpu::v5e>>);
static_assert(std::is_same_v<Chip<tpu::v7x>, chip_preset<tpu::v7x>>);
static_assert(std::is_same_v<Chip<tpu::default_chip>, chip_preset<tpu::v5e>>);
static_assert(std::is_same_v<Chip<v5e_copy>, chip_preset<tpu::v5e>>);
static_assert(std::is_same_v<on<tpu::v5p>, chip_preset<tpu::v5p>>);
static_assert(std::is_same_v<Chip<calibrated>, chip_value<calibrated>>);
static_assert(std::is_same_v<on<calibrated>, chip_value<calibrated>>);
static_assert(&Chip<tpu::v6e>::value == &tpu::v6e);
static_assert(Chip<calibrated>::value.step_overhead_s == 0.30e-6);

using X = Array<float, 32, 128>;
using Rows = BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>;
template <chip C>
using Copy = pallas_call<Grid<4>, Chip<C>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>>;
static_assert(Copy<tpu::v5p>::desc.hw.cores_per_chip == 2);
static_assert(Copy<calibrated>::desc.hw.step_overhead_s == 0.30e-6);
static_assert(check_call<Grid<4>, Chip<tpu::v4>, In<Arg<X, Rows>>, Out<Arg<X, Rows>>>().ok());
static_assert(Copy<tpu::v5e>::valid);

}  // namespace
