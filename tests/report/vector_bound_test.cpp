// Vector- and transcendental-bound kernels (tpu-model.md §2; docs/model.md, "Work to time"): a
// flash-attention-style forward body on v7x is bound by its per-score-element VPU and EUP work,
// not by the MXU, so doubling the head dimension (the MXU work) moves its time little.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <limits>

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

// Online softmax over (bq, bkv) score blocks (the running max m and sum l kept in lane 0 of
// (bq, 128) scratch, broadcast back as (bq, 1)).
struct flash_body {
    template <class Q, class K, class V, class O, class M, class L, class A>
    void operator()(Q q, K k, V v, O o, M m, L l, A acc) const {
        if (program_id(1) == 0) {
            store(m, full<float>(c<bq>, c<128>, -std::numeric_limits<float>::infinity()));
            store(l, zeros<float>(c<bq>, c<128>));
            store(acc, zeros_like(load(acc)));
        }
        const auto s = dot(load(q), load(k), dot_options{.transpose_b = true}) * 0.125f;
        const auto m_prev = max(load(m), c<1>);
        const auto m_new = maximum(m_prev, max(s, c<1>));
        const auto p = exp(s - m_new);
        const auto alpha = exp(m_prev - m_new);
        const auto l_new = alpha * max(load(l), c<1>) + sum(p, c<1>);
        store(acc, load(acc) * alpha + dot(cast<bf16>(p), load(v)));
        store(m, m_new + zeros<float>(c<bq>, c<128>));
        store(l, l_new + zeros<float>(c<bq>, c<128>));
        if (program_id(1) == num_programs(1) - 1) store(o, load(acc) / l_new);
    }
};

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
