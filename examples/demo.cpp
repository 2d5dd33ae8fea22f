// ptpu's demo: one fused-MLP kernel (the calibration example of tpu-model.md §2), written once,
// checked at compile time, run on real data, and predicted under several pipelining
// configurations and chips, ranked by predicted device time. Writes a Perfetto trace and an SVG
// timeline of the fastest configuration. The configurations are generated from a compile-time
// space (sweep/static_space.hpp) and ranked with sweep/space.hpp.
#include <ptpu/ptpu.hpp>
#include <ptpu/sweep/space.hpp>
#include <ptpu/sweep/static_space.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

using namespace ptpu;

constexpr index_t E = 1152, H = 6912, T = 256, bt = 128;

// The kernel body: a gated MLP, y = (SiLU(x Wg) * (x Wu)) Wd, accumulated over H blocks.
constexpr auto mlp = [](auto x, auto wg, auto wu, auto wd, auto o) {
    const auto xv = load(x);
    const auto g = dot(xv, load(wg));
    const auto y = dot(g * logistic(g) * dot(xv, load(wu)), load(wd));
    store(o, program_id(1) == 0 ? y : load(o) + y);
};

// The index maps over the (row block i, H block j) grid: x and y by rows, the weights by H.
// (Named rather than written inside Mlp: g++ 12 mis-instantiates lambdas in an alias template
// whose arguments are dependent, as in mlp_config below.)
constexpr auto by_row = [](auto i, auto) { return idx(i, 0); };
constexpr auto by_h_col = [](auto, auto j) { return idx(0, j); };
constexpr auto by_h_row = [](auto, auto j) { return idx(j, 0); };

// One configuration: H block size, weight buffer count, chip.
template <index_t BH, int BC, chip C, index_t TT = T, index_t HH = H>
using Mlp = pallas_call<Grid<TT / bt, HH / BH>, Semantics<parallel, arbitrary>, Chip<C>,
                        In<Arg<Array<float, TT, E>, BlockSpec<Block<bt, E>, by_row>>,
                           Arg<Array<float, E, HH>, BlockSpec<Block<E, BH>, by_h_col, Buffered<BC>>>,
                           Arg<Array<float, E, HH>, BlockSpec<Block<E, BH>, by_h_col, Buffered<BC>>>,
                           Arg<Array<float, HH, E>, BlockSpec<Block<BH, E>, by_h_row, Buffered<BC>>>>,
                        Out<Arg<Array<float, TT, E>, BlockSpec<Block<bt, E>, by_row>>>>;

// The schedule is a constant: each weight block is fetched once per step, x and y once per row.
static_assert(Mlp<384, 2, tpu::v5e>::dma_count(1) == 36 && Mlp<384, 2, tpu::v5e>::dma_count(0) == 2);
// VMEM is checked against the chip: Mlp<768, 2, tpu::v5e> would not compile (check 24: 2 x 3 x
// 3.5 MB of weight windows exceed v5e's 16 MiB scoped limit); on v6e (32 MiB) it fits.
static_assert(Mlp<768, 2, tpu::v6e>::info.vmem_bytes > 16 * (1 << 20));

// One point of the comparison, from the axes' types: H block size, weight buffer count, chip.
// The partial specialization deduces the values (g++ 12 crashes on `Chip::value`, a class-type
// value, as a dependent template argument).
template <class BlockH, class Buffers, class Chip>
struct mlp_config;
template <index_t BH, int BC, chip C>
struct mlp_config<sweep::value_t<BH>, sweep::value_t<BC>, sweep::value_t<C>> {
    using call = Mlp<BH, BC, C>;
    static std::string name() {
        const chip& c = C;
        // TPU generations are called v4 ... v6e, then 7x (its preset is named v7x).
        const std::string label = std::string(c.name) == "v7x" ? "7x" : c.name;
        std::string n = label + std::string(5 - label.size(), ' ') + "block_h " + std::to_string(BH) +
                        "  Buffered<" + std::to_string(BC) + ">";
        if (c.pallas_cores() > 1) n += " (" + std::to_string(c.pallas_cores()) + " cores)";
        return n;
    }
};

// The configurations compared: on v5e the measured one (block_h 384, Buffered<2>) and its
// neighbours (smaller blocks; single buffering, which lets block_h 768 fit 16 MiB), on v6e the
// larger block its 32 MiB allow, and the measured one on v5p and 7x.
constexpr auto configurations = sweep::join(
    sweep::product(sweep::values<index_t{128}, index_t{384}>, sweep::values<2>, sweep::values<tpu::v5e>),
    sweep::product(sweep::values<index_t{384}, index_t{768}>, sweep::values<1>, sweep::values<tpu::v5e>),
    sweep::product(sweep::values<index_t{384}, index_t{768}>, sweep::values<2>, sweep::values<tpu::v6e>),
    sweep::product(sweep::values<index_t{384}>, sweep::values<2>, sweep::values<tpu::v5p, tpu::v7x>));
static_assert(sweep::size(configurations) == 8);

struct row {
    std::string name;
    report r;
};

int main() {
    std::cout << "ptpu demo\n\nChip presets (per TensorCore; tpu-model.md):\n";
    for (const chip* c : tpu::all_presets)
        std::cout << "  " << std::left << std::setw(4) << c->name << std::right << std::setw(2)
                  << c->cores_per_chip << " TC" << (c->megacore ? " megacore" : "         ") << "  VMEM "
                  << std::setw(3) << (c->vmem_bytes >> 20) << " MiB  HBM " << std::setw(5)
                  << c->hbm_bytes_per_s / 1e9 << " GB/s  bf16 " << std::setw(5) << c->peak_bf16_flops / 1e12
                  << " TFLOP/s\n";

    // 1. Real execution on a smaller problem (H = 768): the result against a reference.
    {
        constexpr index_t h = 768;
        host_array<Array<float, T, E>> x;
        host_array<Array<float, E, h>> wg, wu;
        host_array<Array<float, h, E>> wd;
        for (std::size_t i = 0; i < x.size(); ++i) x.vector()[i] = std::sin(0.001f * static_cast<float>(i));
        for (std::size_t i = 0; i < wg.size(); ++i) {
            wg.vector()[i] = 0.01f * std::cos(0.003f * static_cast<float>(i));
            wu.vector()[i] = 0.01f * std::sin(0.002f * static_cast<float>(i));
            wd.vector()[i] = 0.01f * std::cos(0.005f * static_cast<float>(i));
        }
        using Small = Mlp<384, 2, tpu::v5e, T, h>;
        auto [y, rep] = Small{}(mlp, x, wg, wu, wd);
        // Reference in double, inputs rounded to bf16 as a DEFAULT-precision TPU matmul does.
        auto b = [](float v) { return static_cast<double>(static_cast<float>(bf16(v))); };
        double worst = 0;
        for (index_t t = 0; t < T; t += 17)
            for (index_t e = 0; e < E; e += 97) {
                double acc = 0;
                for (index_t k = 0; k < h; ++k) {
                    double g = 0, u = 0;
                    for (index_t c = 0; c < E; ++c) {
                        g += b(x(t, c)) * b(wg(c, k));
                        u += b(x(t, c)) * b(wu(c, k));
                    }
                    const double hk = g / (1 + std::exp(-g)) * u;
                    acc += b(static_cast<float>(hk)) * b(wd(k, e));
                }
                worst = std::max(worst, std::abs(acc - y(t, e)) / (std::abs(acc) + 1e-3));
            }
        std::cout << "\nReal run, H = 768 on v5e: max relative error vs reference " << worst << " ("
                  << (worst < 1e-2 ? "ok" : "MISMATCH") << "); predicted " << rep.device_time * 1e6
                  << " us\n";
        if (worst >= 1e-2) return 1;
    }

    // 2. The full problem (H = 6912) under several configurations, predicted without data.
    std::vector<row> predicted;
    sweep::for_each<mlp_config>(configurations, [&](auto config) {
        using K = typename decltype(config)::type;
        predicted.push_back({K::name(), typename K::call{{.timeline = true}}.predict(mlp)});
    });
    const std::vector<row> rows = sweep::ranked(predicted, [](const row& x) { return x.r.device_time; });

    std::cout
        << "\nFused MLP (E=1152, H=6912, T=256, f32), ranked by predicted device time\n"
        << "(v5e block_h 384 Buffered<2> is the configuration measured at 258.4 us):\n\n"
        << "  rank  configuration                              time      bound    HBM BW  MXU   overhead\n";
    int rank = 1;
    for (const row& x : rows)
        std::cout << "  " << std::setw(4) << rank++ << "  " << std::left << std::setw(41) << x.name
                  << std::right << std::fixed << std::setprecision(1) << std::setw(7) << x.r.device_time * 1e6
                  << " us  " << (x.r.memory_bound ? "memory " : "compute") << "  " << std::setw(4)
                  << std::setprecision(0) << x.r.bandwidth_fraction * 100 << "%  " << std::setw(3)
                  << x.r.mxu_utilization * 100 << "%  " << std::setw(4) << std::setprecision(1)
                  << x.r.overhead_share * 100 << "%\n";

    std::cout << "\nFastest: " << rows.front().name << "\n" << rows.front().r;
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ptpu_demo";
    std::filesystem::create_directories(dir);
    write_chrome_trace(rows.front().r, (dir / "trace.json").string());
    write_svg(rows.front().r, (dir / "timeline.svg").string());
    std::cout << "\nTimeline: " << (dir / "trace.json").string() << " (open in ui.perfetto.dev) and "
              << (dir / "timeline.svg").string() << " (open in a browser)\n";
    return 0;
}
