// Vector- and transcendental-bound kernels (docs/model.md, "Work to time"): a
// flash-attention-style forward body on v7x is bound by its per-score-element VPU and EUP work,
// not by the MXU, so doubling the head dimension (the MXU work) moves its time little.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include "flash_body.hpp"


using namespace ptpu;

namespace {

constexpr index_t S = 2048, bq = 512, bkv = 512;

template <index_t D>
using Flash = pallas_call<
    Grid<S / bq, S / bkv>, Semantics<parallel, arbitrary>, Chip<tpu::v7x>,
    In<Arg<Array<bf16, S, D>, BlockSpec<Block<bq, D>, [](auto i, auto) { return idx(i, 0); }>>,
       Arg<Array<bf16, S, D>, BlockSpec<Block<bkv, D>, [](auto, auto j) { return idx(j, 0); }>>,
       Arg<Array<bf16, S, D>, BlockSpec<Block<bkv, D>, [](auto, auto j) { return idx(j, 0); }>>>,
    Out<Arg<Array<float, S, D>, BlockSpec<Block<bq, D>, [](auto i, auto) { return idx(i, 0); }>>>,
    Scratch<vmem, float, bq, 128>, Scratch<vmem, float, bq, 128>, Scratch<vmem, float, bq, D>>;

using flash_body = test_kernels::flash_body<bq>;  // online softmax (flash_body.hpp)

}  // namespace

TEST(VectorBound, FlashAttentionOnV7xIsBoundByVectorWork) {
    const report r128 = Flash<128>{}.predict(flash_body{});
    const report r256 = Flash<256>{}.predict(flash_body{});
    // The MXU work doubles with the head dimension, except that 7x's 256-wide MXU already pads
    // a head dimension of 128 to 256 (docs/model.md §9), so the padded FLOPs stay the same ...
    EXPECT_DOUBLE_EQ(r256.flops, r128.flops);
    // ... and the time moves little (tokamax's splash attention on 7x: +8%): the per-score-element
    // exp/max/sum work bounds the body, the (bq, D) accumulator work grows with D.
    EXPECT_LT(r256.device_time / r128.device_time, 1.15) << r128 << r256;
    EXPECT_LT(r128.mxu_utilization, 0.75) << r128;
    // The busiest unit is the VPU. At head_dim 128 the body's chain (q · k, the softmax on its
    // scores, then p · v) is longer still, and bounds the kernel (docs/model.md §5); at 256 the
    // (bq, D) accumulator work makes the VPU's total the longer.
    EXPECT_GT(r128.vpu_time, r128.mxu_time) << r128;
    EXPECT_EQ(r128.bound, "dependence chain") << r128;
    EXPECT_EQ(r128.compute_bound, "dependence chain") << r128;
    EXPECT_EQ(r256.bound, "VPU") << r256;
    EXPECT_GT(r128.eup_time, 0.0);
    EXPECT_GT(r256.device_time, r128.device_time);
}

// docs/model.md §5, "The MXU drain": the scores s = dot(q, k) * scale are read by vector work,
// one drain per step; p · v is folded into the accumulator (load(acc) * alpha + dot), none. The
// body is bound by its dependence chain and its DMAs hidden, so each drain adds to the time in
// full.
TEST(VectorBound, FlashAttentionWaitsForItsScoresOncePerStep) {
    Flash<128> off{};
    off.options.costs.mxu_drain_cycles_per_dim = 0;
    off.options.costs.mxu_pop_cycles = 0;
    const report r = Flash<128>{}.predict(flash_body{});
    const report o = off.predict(flash_body{});
    constexpr index_t steps = (S / bq) * (S / bkv);
    EXPECT_EQ(r.stats.total_work.mxu_drains, steps);
    EXPECT_EQ(r.stats.total_work, o.stats.total_work);
    const double drain = sim::mxu_drain_seconds(tpu::v7x);  // 520 cycles at 2.203 GHz: 236 ns
    EXPECT_NEAR(r.device_time - o.device_time, steps * drain, 1e-9 * steps * drain) << r << o;
    EXPECT_NEAR(r.mxu_drain_time, steps * drain, 1e-9 * steps * drain);
    EXPECT_EQ(o.bound, "dependence chain") << o;
}
