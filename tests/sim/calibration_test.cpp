// The model against published measurements and its own regimes, with kernels written with ops/
// (docs/model.md §9): the fused MLP calibration example on v5e, a compute-bound matmul that
// approaches the MXU peak, and a small-block matmul that the per-step overhead dominates.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cmath>

using namespace ptpu;

namespace {

// docs/model.md §9: E=1152, H=6912 f32 weights, T=256, block_t=128, block_h=384, grid (2,18):
// a gated MLP (gate, up, down weights: 3 x 1152 x 384 x 4 B = 5.31 MB per grid step), measured at
// 258.4 us of device time on v5e.
constexpr index_t E = 1152, H = 6912, T = 256, bt = 128, bh = 384;
using Mlp = pallas_call<
    Grid<T / bt, H / bh>, Semantics<parallel, arbitrary>, Chip<tpu::v5e>,
    In<Arg<Array<float, T, E>, BlockSpec<Block<bt, E>, [](auto i, auto) { return idx(i, 0); }>>,
       Arg<Array<float, E, H>, BlockSpec<Block<E, bh>, [](auto, auto j) { return idx(0, j); }>>,
       Arg<Array<float, E, H>, BlockSpec<Block<E, bh>, [](auto, auto j) { return idx(0, j); }>>,
       Arg<Array<float, H, E>, BlockSpec<Block<bh, E>, [](auto, auto j) { return idx(j, 0); }>>>,
    Out<Arg<Array<float, T, E>, BlockSpec<Block<bt, E>, [](auto i, auto) { return idx(i, 0); }>>>>;

constexpr auto mlp_body = [](auto x, auto wg, auto wu, auto wd, auto o) {
    const auto xv = load(x);
    const auto g = dot(xv, load(wg));
    const auto h = g * logistic(g) * dot(xv, load(wu));  // SiLU(x Wg) * (x Wu)
    const auto y = dot(h, load(wd));
    if (program_id(1) == 0)
        store(o, y);
    else
        store(o, load(o) + y);
};

}  // namespace

TEST(Calibration, FusedMlpOnV5eWithinFivePercentOfMeasured) {
    static_assert(Mlp::info.ops[1].block_bytes * 3 == 5308416);  // 5.31 MB of weights per step
    const report r = Mlp{}.predict(mlp_body);
    EXPECT_NEAR(r.device_time, 258.4e-6, 0.05 * 258.4e-6) << r;
    // Per step, the weight DMAs take ~7 us (the profile's rigid 7.02 us per step): DMA-bound.
    EXPECT_TRUE(r.memory_bound);
    EXPECT_GT(r.bandwidth_fraction, 0.85);
    // Two MXU results per step are read by vector work (g by logistic, x Wu by the product),
    // both of level 1 (computed from loaded values): one wait per step; y is stored or folded
    // into load(o) + y (docs/model.md §5, "The MXU drain", "Levels").
    EXPECT_EQ(r.stats.total_work.mxu_drains, (T / bt) * (H / bh));
}

namespace {
template <index_t N, index_t B, chip C>
using Matmul = pallas_call<
    Grid<N / B, N / B, N / B>, Semantics<parallel, parallel, arbitrary>, Chip<C>,
    In<Arg<Array<float, N, N>, BlockSpec<Block<B, B>, [](auto i, auto, auto k) { return idx(i, k); }>>,
       Arg<Array<float, N, N>, BlockSpec<Block<B, B>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
    Out<Arg<Array<float, N, N>, BlockSpec<Block<B, B>, [](auto i, auto j, auto) { return idx(i, j); }>>>>;

template <precision P>
constexpr auto matmul_body = [](auto x, auto y, auto o) {
    const auto p = dot(load(x), load(y), dot_options{.prec = P});
    if (program_id(2) == 0)
        store(o, p);
    else
        store(o, load(o) + p);
};
}  // namespace

TEST(Calibration, ComputeBoundMatmulApproachesMxuPeak) {
    // f32 at HIGHEST: 6 bf16 passes per block product, so (512,512,512) blocks are compute-bound.
    const report r = Matmul<2048, 512, tpu::v5e>{}.predict(matmul_body<precision::highest>);
    EXPECT_FALSE(r.memory_bound) << r;
    EXPECT_GT(r.mxu_utilization, 0.85) << r;
    EXPECT_GT(r.roofline_fraction, 0.85) << r;
    const double flops = 6.0 * 2 * 2048.0 * 2048 * 2048;
    EXPECT_DOUBLE_EQ(r.flops, flops);
    EXPECT_NEAR(r.mxu_time, flops / tpu::v5e.peak_bf16_flops, 1e-12);
    EXPECT_EQ(r.stats.total_work.mxu_drains, 0);  // products stored or folded: no drain
}

TEST(Calibration, SmallBlockMatmulIsDominatedByStepOverhead) {
    const report r = Matmul<1024, 128, tpu::v5e>{}.predict(matmul_body<precision::default_>);
    EXPECT_GT(r.overhead_share, 0.5) << r;
    EXPECT_LT(r.mxu_utilization, 0.2) << r;
    // The roofline alone is far too optimistic here (docs/model.md §2): 71.3 MB over 820 GB/s is
    // 87 us, while each of the 512 steps takes at least the whole tiny step o + 2i + C ≈ 0.35 us
    // (179 us), so at most ≈ 0.49 of the roofline is reached.
    EXPECT_LT(r.roofline_fraction, 0.5) << r;
    EXPECT_GT(r.device_time, 512 * 0.35e-6 * 0.95) << r;
    EXPECT_EQ(r.stats.total_work.mxu_drains, 0);
}

TEST(Calibration, FullRunAndPredictAgreeWithOps) {
    using Small = Matmul<512, 128, tpu::v5p>;
    host_array<Array<float, 512, 512>> x, y;
    for (std::size_t i = 0; i < x.size(); ++i) {
        x.vector()[i] = static_cast<float>(i % 5);
        y.vector()[i] = static_cast<float>(i % 3);
    }
    auto [z, full] = Small{}(matmul_body<precision::highest>, x, y);
    const report fast = Small{}.predict(matmul_body<precision::highest>);
    EXPECT_EQ(full.device_time, fast.device_time);
    EXPECT_EQ(full.flops, fast.flops);
    // And the full run computed: z = x @ y exactly (small integers, HIGHEST is full f32).
    for (index_t i = 0; i < 512; i += 31)
        for (index_t j = 0; j < 512; j += 29) {
            double ref = 0;
            for (index_t k = 0; k < 512; ++k) ref += double(x(i, k)) * y(k, j);
            ASSERT_EQ(z(i, j), static_cast<float>(ref));
        }
}
