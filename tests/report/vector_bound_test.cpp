// Vector- and transcendental-bound kernels (tpu-model.md §2; docs/model.md, "Work to time"): a
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
    // a head dimension of 128 to 256 (tpu-model.md §1), so the padded FLOPs stay the same ...
    EXPECT_DOUBLE_EQ(r256.flops, r128.flops);
    // ... and the time moves little (tokamax's splash attention on 7x: +8%): the per-score-element
    // exp/max/sum work bounds the body, the (bq, D) accumulator work grows with D.
    EXPECT_LT(r256.device_time / r128.device_time, 1.15) << r128 << r256;
    EXPECT_LT(r128.mxu_utilization, 0.75) << r128;
    EXPECT_TRUE(r128.bound == "VPU" || r128.bound == "EUP") << r128;
    EXPECT_TRUE(r256.bound == "VPU" || r256.bound == "EUP") << r256;
    EXPECT_GT(r128.eup_time, 0.0);
    EXPECT_GT(r256.device_time, r128.device_time);
}
