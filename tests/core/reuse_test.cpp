// The working buffers a thread keeps from one prediction to the next (core/reuse.hpp): what is
// kept, its bound, release, and that predictions made with kept buffers equal those made afresh.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <thread>
#include <vector>

using namespace ptpu;

namespace {

// A type of its own, so that no other user of the shelf interferes.
struct item {
    std::int64_t a = 0, b = 0;
};

}  // namespace

TEST(KeptBuffers, AVectorPutBackIsTheNextOneTakenContentsAndAll) {
    release_kept_buffers();
    std::vector<item> v(1000, item{7, 8});
    const item* storage = v.data();
    detail::put_buffer(v);
    EXPECT_EQ(v.capacity(), 0u);  // given away
    std::vector<item> w = detail::take_buffer<item>();
    EXPECT_EQ(w.data(), storage);  // the same memory
    ASSERT_EQ(w.size(), 1000u);
    EXPECT_EQ(w[999].b, 8);
    EXPECT_TRUE(detail::take_buffer<item>().empty());  // nothing more kept
    detail::put_buffer(w);                             // taken emptied: the memory without the contents
    const std::vector<item> e = detail::take_empty_buffer<item>();
    EXPECT_EQ(e.data(), storage);
    EXPECT_TRUE(e.empty());
    EXPECT_GE(e.capacity(), 1000u);
    // The largest first, whatever the order they came back in.
    std::vector<item> x(10), y(30), z(20);
    detail::put_buffer(x);
    detail::put_buffer(y);
    detail::put_buffer(z);
    EXPECT_EQ(detail::take_buffer<item>().size(), 30u);
    EXPECT_EQ(detail::take_buffer<item>().size(), 20u);
    EXPECT_EQ(detail::take_buffer<item>().size(), 10u);
    EXPECT_TRUE(detail::take_buffer<item>().empty());
}

TEST(KeptBuffers, WhatIsKeptIsBounded) {
    release_kept_buffers();
    const std::size_t half = detail::shelf_bytes / sizeof(item) / 2;
    std::vector<item> a(half), b(half), c(16);
    std::vector<item> big(detail::shelf_bytes / sizeof(item) + 1);
    detail::put_buffer(big);  // over the bound: freed
    EXPECT_EQ(big.capacity(), 0u);
    EXPECT_TRUE(detail::take_buffer<item>().empty());
    detail::put_buffer(a);
    detail::put_buffer(b);  // the two halves fill the shelf
    detail::put_buffer(c);  // no room left: freed
    EXPECT_EQ(detail::shelf<item>().kept.size(), 2u);
    EXPECT_EQ(detail::shelf<item>().bytes, 2 * half * sizeof(item));
    std::vector<item> empty;
    detail::put_buffer(empty);  // nothing to keep
    EXPECT_EQ(detail::shelf<item>().kept.size(), 2u);
    release_kept_buffers();
    EXPECT_TRUE(detail::shelf<item>().kept.empty());
    EXPECT_EQ(detail::shelf<item>().bytes, 0u);
    EXPECT_TRUE(detail::take_buffer<item>().empty());
    // At most shelf_count vectors.
    for (std::size_t k = 0; k <= detail::shelf_count; ++k) {
        std::vector<item> small(4);
        detail::put_buffer(small);
    }
    EXPECT_EQ(detail::shelf<item>().kept.size(), detail::shelf_count);
    release_kept_buffers();
}

TEST(KeptBuffers, EachThreadKeepsItsOwn) {
    release_kept_buffers();
    std::vector<item> v(100);
    detail::put_buffer(v);
    std::size_t seen = 1;
    std::thread([&seen] {
        seen = detail::take_buffer<item>().size();  // another thread's shelf: empty
        std::vector<item> w(5);
        detail::put_buffer(w);  // freed with the thread's shelf when it exits
    }).join();
    EXPECT_EQ(seen, 0u);
    EXPECT_EQ(detail::take_buffer<item>().size(), 100u);
}

namespace {
constexpr index_t steps = 4096;
using X = Array<float, steps * 8, 128>;
using AnyX = BlockSpec<Full, zero_map, any>;
using Tile = BlockSpec<Block<8, 128>, [](index_t i) { return idx(i, 0); }>;
using Once = pallas_call<Grid<>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>, Chip<tpu::v5e>>;
using Mc = pallas_call<Grid<64>, Semantics<parallel>, In<Arg<X, AnyX>, Arg<X, AnyX>>, Out<Arg<X, AnyX>>,
                       Chip<tpu::v5p>>;
constexpr auto once_body = [](auto a, auto b, auto c) {
    emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, {steps}, in_specs<Tile, Tile>,
                  out_specs<Tile>)(a, b, c);
};
constexpr auto grid_body = [](auto a, auto b, auto c) {
    const index_t i = program_id(0);
    emit_pipeline([](auto x, auto y, auto z) { store(z, load(x) + load(y)); }, {64}, in_specs<Tile, Tile>,
                  out_specs<Tile>)(a.at(ds(i * 512, 512), ds(0, 128)), b.at(ds(i * 512, 512), ds(0, 128)),
                                   c.at(ds(i * 512, 512), ds(0, 128)));
};

void expect_same(const report& x, const report& y) {
    EXPECT_EQ(x.device_time, y.device_time);
    EXPECT_EQ(x.ops, y.ops);
    EXPECT_EQ(x.steady_ops, y.steady_ops);
    EXPECT_EQ(x.stats.steps, y.stats.steps);
    EXPECT_EQ(x.stats.dma_in, y.stats.dma_in);
    for (int c = 0; c < y.cores; ++c)
        EXPECT_EQ(x.core[static_cast<std::size_t>(c)].time, y.core[static_cast<std::size_t>(c)].time);
    ASSERT_EQ(x.inner_steps.size(), y.inner_steps.size());
    for (std::size_t i = 0; i < y.inner_steps.size(); ++i)
        EXPECT_EQ(x.inner_steps[i].end, y.inner_steps[i].end) << i;
}
}  // namespace

TEST(KeptBuffers, PredictionsWithKeptBuffersEqualFreshOnes) {
    // Nested pipelines (the runners' batches, the memo's kept invocations, the lanes' histories
    // and cycles all come from the shelf), one after the other and interleaved, equal the same
    // predictions made with nothing kept.
    Once once{};
    once.options.per_step = per_step_rows::always;
    Mc mc{};
    mc.options.per_step = per_step_rows::always;
    release_kept_buffers();
    const report once_fresh = once.predict(once_body);
    release_kept_buffers();
    const report mc_fresh = mc.predict(grid_body);
    EXPECT_GT(mc_fresh.steady_ops, 0);
    for (int k = 0; k < 3; ++k) {
        expect_same(once.predict(once_body), once_fresh);
        expect_same(mc.predict(grid_body), mc_fresh);
    }
    release_kept_buffers();
    expect_same(mc.predict(grid_body), mc_fresh);
}

namespace {
// The API from generic code: a prediction of any call, then its thread's buffers freed.
template <class Call, class Body>
report predict_then_release(const Call& call, const Body& body) {
    report r = call.predict(body);
    release_kept_buffers();
    return r;
}
}  // namespace

TEST(KeptBuffers, ReleasedFromGenericCode) {
    Once once{};
    once.options.per_step = per_step_rows::always;
    const report kept = once.predict(once_body);  // with whatever this thread kept
    const report a = predict_then_release(once, once_body);
    EXPECT_TRUE(detail::shelf<stream::op>().kept.empty());
    const report b = predict_then_release(once, once_body);  // nothing kept: made afresh
    expect_same(a, kept);
    expect_same(b, kept);
}
