// A project outside ptpu's tree using the installed sweep headers (component `sweep`).
#include <ptpu/hw/presets.hpp>
#include <ptpu/sweep/space.hpp>
#include <ptpu/sweep/static_space.hpp>

#include <iostream>

namespace sweep = ptpu::sweep;

template <class Rows, class Chip>
struct config {
    static constexpr long rows = Rows::value;
};

int main() {
    constexpr auto s = sweep::product(sweep::values<8, 16>, sweep::values<ptpu::tpu::v5e, ptpu::tpu::v6e>);
    static_assert(sweep::size(s) == 4);
    long rows = 0;
    sweep::for_each<config>(s, [&](auto t) { rows += decltype(t)::type::rows; });
    const sweep::space<int, int> r{{1, 2, 3}, {10, 20}};
    int kept = 0;
    for ([[maybe_unused]] const auto& p : r.where([](int a, int b) { return a * b > 20; })) ++kept;
    if (rows != 48 || kept != 3) return 1;
    std::cout << "consumer sweep: ok\n";
    return 0;
}
