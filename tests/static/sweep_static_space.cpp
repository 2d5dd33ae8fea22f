// Pins sweep/static_space.hpp: the cartesian product of type and value axes (count, order, the
// exact configuration types), joined spaces, and for_each visiting each configuration once, in
// order. Compiling is the test.
#include <ptpu/hw/presets.hpp>
#include <ptpu/sweep/static_space.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

namespace {

namespace sweep = ptpu::sweep;
namespace hana = boost::hana;
namespace tpu = ptpu::tpu;
using sweep::value_t;

template <int R, int C>
struct block {};

template <class Shape, class Buffers, class Chip>
struct config {
    using shape = Shape;
    static constexpr int buffers = Buffers::value;
    static constexpr ptpu::chip hw = Chip::value;
};

// The configuration at position I of a space, as a type.
template <std::size_t I, class Configs>
using at_t = typename std::remove_cvref_t<decltype(std::declval<Configs>()[hana::size_c<I>])>::type;

// 2 block shapes (types) × 2 buffer counts (values) × 3 chips (values) = 12 configurations.
constexpr auto space = sweep::product(sweep::types<block<8, 128>, block<16, 128>>, sweep::values<1, 2>,
                                      sweep::values<tpu::v5e, tpu::v6e, tpu::v7x>);
static_assert(sweep::size(space) == 12);
using configs = decltype(sweep::configurations<config>(space));
static_assert(decltype(hana::length(std::declval<configs>()))::value == 12);

// The first axis varies slowest, the last fastest.
static_assert(std::is_same_v<at_t<0, configs>, config<block<8, 128>, value_t<1>, value_t<tpu::v5e>>>);
static_assert(std::is_same_v<at_t<1, configs>, config<block<8, 128>, value_t<1>, value_t<tpu::v6e>>>);
static_assert(std::is_same_v<at_t<3, configs>, config<block<8, 128>, value_t<2>, value_t<tpu::v5e>>>);
static_assert(std::is_same_v<at_t<6, configs>, config<block<16, 128>, value_t<1>, value_t<tpu::v5e>>>);
static_assert(std::is_same_v<at_t<11, configs>, config<block<16, 128>, value_t<2>, value_t<tpu::v7x>>>);
// A chip travels as a value: its fields are constants of the configuration.
static_assert(at_t<2, configs>::hw.generation == 7 && at_t<2, configs>::buffers == 1);

// Joined products: the points of each, in order; a one-value axis is a fixed setting.
constexpr auto joined = sweep::join(
    sweep::product(sweep::types<block<8, 128>>, sweep::values<1, 2>, sweep::values<tpu::v5e>),
    sweep::product(sweep::types<block<16, 128>>, sweep::values<2>, sweep::values<tpu::v6e, tpu::v5p>));
static_assert(sweep::size(joined) == 4);
using joined_configs = decltype(sweep::configurations<config>(joined));
static_assert(std::is_same_v<at_t<1, joined_configs>, config<block<8, 128>, value_t<2>, value_t<tpu::v5e>>>);
static_assert(std::is_same_v<at_t<3, joined_configs>, config<block<16, 128>, value_t<2>, value_t<tpu::v5p>>>);

// for_each visits every configuration exactly once, in the space's order.
template <class Shape>
constexpr int rows_of = 0;
template <int R, int C>
constexpr int rows_of<block<R, C>> = R;

constexpr std::array<int, 12> visited() {
    std::array<int, 12> seen{};
    std::size_t n = 0;
    sweep::for_each<config>(space, [&](auto t) {
        using K = typename decltype(t)::type;
        seen[n++] = rows_of<typename K::shape> * 100 + K::buffers * 10 + K::hw.generation;
    });
    return seen;
}
static_assert(visited() == std::array<int, 12>{815, 816, 817, 825, 826, 827,  //
                                               1615, 1616, 1617, 1625, 1626, 1627});

}  // namespace
