// Async copies and semaphores in kernel bodies (S58–S61, checks 35–39): a hand-written
// double-buffered kernel equals the pallas_call pipeline it spells out (result and predicted
// time), copies land at their wait, races are reported, and deadlocks and leaks are errors.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <numeric>
#include <string>

using namespace ptpu;

namespace {

using X = Array<float, 1024, 512>;
using Blk = BlockSpec<Block<128, 512>, [](auto i) { return idx(i, 0); }>;
using AnyX = BlockSpec<Full, zero_map, any>;
using Piped = pallas_call<Grid<8>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;
using Buf = Scratch<vmem, float, 2, 128, 512>;
using Sems = Scratch<semaphore, dma_semaphore, 2>;
using Hand = pallas_call<Grid<8>, In<Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Buf, Buf, Sems, Sems, Chip<tpu::v5e>>;

// The pipeline of Piped written by hand (S23): fetch the next block while this one computes,
// write each block back asynchronously and wait for it one step later.
struct hand_pipeline {
    template <class XR, class OR, class XB, class OB, class IS, class OS>
    void operator()(XR x, OR o, XB xbuf, OB obuf, IS isem, OS osem) const {
        const index_t i = program_id(0), n = num_programs(0);
        auto in = [&](index_t j) {
            return make_async_copy(x.at(ds(j * 128, 128), ds(0, 512)), xbuf.at(j % 2), isem.at(j % 2));
        };
        auto out = [&](index_t j) {
            return make_async_copy(obuf.at(j % 2), o.at(ds(j * 128, 128), ds(0, 512)), osem.at(j % 2));
        };
        if (i == 0) in(0).start();
        if (i + 1 < n) in(i + 1).start();
        in(i).wait();
        store(obuf.at(i % 2), load(xbuf.at(i % 2)) * 2.0f + 1.0f);
        out(i).start();
        if (i > 0) out(i - 1).wait();
        if (i == n - 1) out(i).wait();
    }
};

host_array<X> ramp() {
    host_array<X> x;
    std::iota(x.begin(), x.end(), 0.0f);
    return x;
}

}  // namespace

TEST(AsyncCopy, HandWrittenPipelineEqualsPallasCall) {
    const host_array<X> x = ramp();
    auto [yp, rp] = Piped{}([](auto a, auto b) { store(b, load(a) * 2.0f + 1.0f); }, x);
    auto [yh, rh] = Hand{}(hand_pipeline{}, x);
    for (std::size_t k = 0; k < x.size(); ++k) ASSERT_EQ(yh.vector()[k], x.vector()[k] * 2.0f + 1.0f) << k;
    EXPECT_TRUE(std::ranges::equal(yp, yh));
    EXPECT_EQ(rh.stats.body_dmas, 16);
    EXPECT_EQ(rh.stats.sem_waits, 16);
    EXPECT_EQ(rp.device_time, rh.device_time);
    EXPECT_GT(rh.device_time, 0.0);
}
