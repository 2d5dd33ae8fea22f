// emit_pipeline, the seed's megacore template: an outer pallas_call with one grid step per
// TensorCore (grid (num_cores,), parallel) runs an inner pipeline over a (4, 4) grid of tiles
// with core_axis = 0: the inner grid's parallel dim is split over the cores as upstream's
// _partition_grid does, so each core doubles its half of the tiles. Then the lookahead example:
// block indices 0,0,0,0,1,1,1,1, where Buffered<2, true> fetches block 1 at step 0 instead of 3.
#include <ptpu/ptpu.hpp>

#include <iostream>
#include <numeric>
#include <vector>

using namespace ptpu;

using X = Array<float, 64, 512>;
using AnyFull = BlockSpec<Full, zero_map, any>;
using Tile = BlockSpec<Block<16, 128>, [](index_t i, index_t j) { return idx(i, j); }>;
constexpr int num_cores = tpu::v5p.cores_per_chip;
using Kernel = pallas_call<Grid<num_cores>, In<Arg<X, AnyFull>>, Out<Arg<X, AnyFull>>, Semantics<parallel>,
                           Chip<tpu::v5p>>;

int main() {
    host_array<X> x;
    std::iota(x.begin(), x.end(), 0.0f);
    auto [y, rep] = Kernel{}(
        [](auto x_hbm, auto y_hbm) {
            emit_pipeline([](auto in, auto out) { store(out, load(in) * 2.0f); }, {4, 4}, in_specs<Tile>,
                          out_specs<Tile>, {.semantics = {parallel, arbitrary}, .core_axis = 0})(x_hbm, y_hbm);
        },
        x);
    bool ok = true;
    for (std::size_t k = 0; k < x.size(); ++k) ok = ok && y.vector()[k] == 2.0f * x.vector()[k];
    std::cout << "emit_pipeline: " << (ok ? "ok" : "MISMATCH") << "; " << rep.stats.inner_steps
              << " inner steps over " << rep.cores << " cores, predicted " << rep.device_time * 1e6 << " us\n";

    // Lookahead (S32): with block indices 0,0,0,0,1,1,1,1 the freed slot is refilled with block 1
    // at step 0; without, block 1 is fetched one step ahead, at step 3.
    using Y = Array<float, 16, 128>;
    using Out64 = Array<float, 64, 128>;
    using Gather = pallas_call<Grid<>, In<Arg<Y, AnyFull>>, Out<Arg<Out64, AnyFull>>, Chip<tpu::v5e>>;
    using Rows = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
    host_array<Y> src;
    std::iota(src.begin(), src.end(), 0.0f);
    auto fetch_steps = [&]<bool L>(std::bool_constant<L>) {
        using Half = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i / 4, 0); }, Buffered<2, L>>;
        std::vector<event> trace;
        (void)Gather{}(
            [&](auto in, auto out) {
                emit_pipeline([](auto a, auto b) { store(b, load(a)); }, {8}, in_specs<Half>, out_specs<Rows>,
                              {.trace = &trace})(in, out);
            },
            src);
        std::vector<std::uint32_t> steps;
        for (const event& e : trace)
            if (e.kind == event_kind::fetch && e.op == 0) steps.push_back(e.step);
        return steps;
    };
    const auto with = fetch_steps(std::true_type{}), without = fetch_steps(std::false_type{});
    std::cout << "lookahead: block 1 fetched at step " << with[1] << " with lookahead, at step " << without[1]
              << " without\n";
    return ok && with[1] == 0 && without[1] == 3 ? 0 : 1;
}
