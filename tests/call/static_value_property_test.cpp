// The static front ends and the value-level ones describe a configuration the same way: over
// random configurations, a static pallas_call and the dynamic_call with its values, and a static
// emit_pipeline over bounded slices and the dynamic_pipeline with its values, give the same events,
// the same outputs (to the bit) and the same predicted times. (The random grids, revisits, buffer
// counts, lookahead and core splits of emit_pipeline: tests/call/dynamic_pipeline_test.cpp.)
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace ptpu;

namespace {

// ---- pallas_call: a gather whose block table is scalar prefetch ---------------------------------
// Step i copies row block tab[i] of x (8 row blocks) to row block i of y: repeated entries are
// revisits (no fetch), Buffered<1> or <2>, one core or v5p's two (the grid split by semantics).
constexpr index_t steps = 16;
using X = Array<float, 64, 128>;
using Y = Array<float, steps * 8, 128>;
using Tab = Array<std::int32_t, steps>;
constexpr auto gather_map = [](index_t i, const auto& t) { return idx(t[i], 0); };
constexpr auto row_map = [](index_t i, const auto&) { return idx(i, 0); };
constexpr auto gather_body = [](auto, auto x, auto y) { store(y, load(x) * 2.0f + 1.0f); };

template <int B, bool TwoCores>
using Gather = pallas_call<Grid<steps>, ScalarPrefetch<Tab>,
                           In<Arg<X, BlockSpec<Block<8, 128>, gather_map, Buffered<B>>>>,
                           Out<Arg<Y, BlockSpec<Block<8, 128>, row_map>>>,
                           Semantics<TwoCores ? parallel : arbitrary>, Chip<TwoCores ? tpu::v5p : tpu::v5e>>;

using I1 = Operand<std::int32_t, 1>;
using F2 = Operand<float, 2>;
using DynGather = dynamic_call<ScalarPrefetch<I1>, In<F2>, Out<F2>>;

DynGather dyn_gather(int buffers, bool two_cores) {
    DynGather d;
    d.grid = {steps};
    d.semantics = {two_cores ? parallel : arbitrary};
    d.chip = two_cores ? tpu::v5p : tpu::v5e;
    d.in[0] = {.shape = {64, 128}, .block = {8, 128}, .index_map = gather_map, .buffer_count = buffers};
    d.out[0] = {.shape = {steps * 8, 128}, .block = {8, 128}, .index_map = row_map};
    return d;
}

template <int B, bool TwoCores>
void same_gather(const std::vector<std::int32_t>& tab, const host_array<X>& x, const std::string& what) {
    using S = Gather<B, TwoCores>;
    auto [y, rep] = S{}(gather_body, tab, x);
    const DynGather d = dyn_gather(B, TwoCores);
    auto [dy, drep] = d(gather_body, tab, x);
    ASSERT_EQ(dy, y.vector()) << what;
    ASSERT_EQ(drep.device_time, rep.device_time) << what;
    ASSERT_EQ(drep.stats.op_dmas[0], rep.stats.op_dmas[0]) << what;
    std::vector<event> static_events;
    const ref<const std::int32_t, smem, 1> t(tab.data(), {steps});
    const std::tuple ctx{t};
    (void)plan(S::desc, S::maps.data(), &ctx, [&](const event& e) { static_events.push_back(e); });
    ASSERT_EQ(d.events(tab), static_events) << what;
    for (index_t i = 0; i < steps * 8; ++i)
        for (index_t j = 0; j < 128; ++j)
            ASSERT_EQ(dy(i, j), x(tab[static_cast<std::size_t>(i / 8)] * 8 + i % 8, j) * 2.0f + 1.0f) << what;
}

// ---- emit_pipeline: bounded slices read from an SMEM table --------------------------------------
// Inner step i copies rows [start_i, start_i + size_i) of x (a bounded_slice block of at most 16
// rows) into row block i of y (16 rows); the table is the host call's scalar prefetch, passed to
// the maps as an extra value.
using I2 = Operand<std::int32_t, 2>;
using AnyF2 = Operand<float, 2, any>;
using SliceHost = dynamic_call<ScalarPrefetch<I2>, In<AnyF2>, Out<AnyF2>>;
using SmemTable = ref<std::int32_t, smem, 2>;
constexpr auto slice_map = [](index_t i, const auto& s) { return idx(ds(s(i, 0), s(i, 1)), 0); };
constexpr auto block_map = [](index_t i, const auto&) { return idx(i, 0); };
constexpr auto copy_body = [](auto in, auto out) { store(out, load(in)); };

SliceHost slice_host(index_t rows, index_t n) {
    SliceHost h;
    h.in[0].shape = {rows, 128};
    h.out[0].shape = {16 * n, 128};
    return h;
}

template <int B, bool L>
std::vector<float> slices_static(index_t rows, index_t n, const std::vector<std::int32_t>& tab,
                                 const std::vector<float>& x, std::vector<event>& t, report& rep) {
    using In0 = BlockSpec<Block<bounded_slice{16}, 128>, slice_map, Buffered<B, L>>;
    using Out0 = BlockSpec<Block<16, 128>, block_map>;
    std::vector<float> y(static_cast<std::size_t>(16 * n * 128));
    const host_view<const std::int32_t> tv{tab.data(), 2, {n, 2}};
    rep = slice_host(rows, n).into(
        std::tie(y),
        [&](auto s, auto xh, auto yh) {
            emit_pipeline(copy_body, {n}, in_specs<In0>, out_specs<Out0>, {.trace = &t}, s)(xh, yh);
        },
        tv, x);
    return y;
}

std::vector<float> slices_values(index_t rows, index_t n, int b, bool look,
                                 const std::vector<std::int32_t>& tab, const std::vector<float>& x,
                                 std::vector<event>& t, report& rep) {
    dynamic_pipeline<In<F2>, Out<F2>, Extra<SmemTable>> cfg;
    cfg.grid = {n};
    cfg.in[0] = {
        .block = {bounded_slice{16}, 128}, .index_map = slice_map, .buffer_count = b, .lookahead = look};
    cfg.out[0] = {.block = {16, 128}, .index_map = block_map};
    cfg.options.trace = &t;
    std::vector<float> y(static_cast<std::size_t>(16 * n * 128));
    const host_view<const std::int32_t> tv{tab.data(), 2, {n, 2}};
    rep = slice_host(rows, n).into(
        std::tie(y), [&](auto s, auto xh, auto yh) { emit_pipeline(copy_body, cfg, s)(xh, yh); }, tv, x);
    return y;
}

}  // namespace

TEST(StaticValueProperty, PallasCallEqualsDynamicCallOnRandomGathers) {
    std::mt19937 gen(4242);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
    for (int n = 0; n < 500; ++n) {
        std::vector<std::int32_t> tab(steps);
        for (std::size_t i = 0; i < tab.size(); ++i)  // runs of repeated blocks: revisits
            tab[i] = (i > 0 && pick(0, 1) == 1) ? tab[i - 1] : pick(0, 7);
        host_array<X> x;
        std::iota(x.begin(), x.end(), static_cast<float>(n));
        const int b = pick(1, 2);
        const bool two = pick(0, 1) == 1;
        const std::string what =
            "case " + std::to_string(n) + ": buffers " + std::to_string(b) + (two ? " v5p" : " v5e");
        if (b == 1)
            two ? same_gather<1, true>(tab, x, what) : same_gather<1, false>(tab, x, what);
        else
            two ? same_gather<2, true>(tab, x, what) : same_gather<2, false>(tab, x, what);
        if (HasFatalFailure()) return;
    }
}

TEST(StaticValueProperty, EmitPipelineBoundedSlicesEqualTheirValues) {
    std::mt19937 gen(777);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
    for (int k = 0; k < 500; ++k) {
        const index_t rows = 8 * pick(4, 16), n = pick(1, 8);
        std::vector<std::int32_t> tab(static_cast<std::size_t>(2 * n));
        for (index_t i = 0; i < n; ++i) {
            const int size = pick(1, 16);
            tab[static_cast<std::size_t>(2 * i)] = pick(0, static_cast<int>(rows) - size);
            tab[static_cast<std::size_t>(2 * i + 1)] = size;
        }
        std::vector<float> x(static_cast<std::size_t>(rows * 128));
        std::iota(x.begin(), x.end(), static_cast<float>(k));
        const bool deep = pick(0, 1) == 1;  // Buffered<3, true>, else Buffered<2>
        std::vector<event> ts, tv;
        report rs, rv;
        const std::vector<float> ys = deep ? slices_static<3, true>(rows, n, tab, x, ts, rs)
                                           : slices_static<2, false>(rows, n, tab, x, ts, rs);
        const std::vector<float> yv = slices_values(rows, n, deep ? 3 : 2, deep, tab, x, tv, rv);
        const std::string what = "case " + std::to_string(k) + ": rows " + std::to_string(rows) + ", steps " +
                                 std::to_string(n) + (deep ? ", Buffered<3, true>" : ", Buffered<2>");
        ASSERT_EQ(tv, ts) << what;
        ASSERT_EQ(std::memcmp(yv.data(), ys.data(), ys.size() * sizeof(float)), 0)
            << what;  // bits: poison is NaN
        ASSERT_EQ(rv.device_time, rs.device_time) << what;
        ASSERT_EQ(rv.stats.inner_bytes, rs.stats.inner_bytes) << what;
        for (index_t i = 0; i < n; ++i)  // the slice's rows arrived; the rest of the window is not data
            for (index_t r = 0; r < tab[static_cast<std::size_t>(2 * i + 1)]; ++r)
                for (index_t j = 0; j < 128; ++j)
                    ASSERT_EQ(
                        yv[static_cast<std::size_t>((16 * i + r) * 128 + j)],
                        x[static_cast<std::size_t>((tab[static_cast<std::size_t>(2 * i)] + r) * 128 + j)])
                        << what << " at step " << i << ", row " << r;
    }
}
