// dynamic_call (call/dynamic.hpp): a configuration given by values plans, runs and times exactly as
// the equal static pallas_call (same events, same outputs, same predicted time, on the examples'
// kernels), and breaks the same rules with the same ids, naming the operand and dim.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace ptpu;

namespace {
template <class F>
std::string message_of(F&& fn) {
    try {
        fn();
    } catch (const ptpu::error& e) {
        return e.what();
    }
    return "no error";
}
template <class F>
std::string rule_of(F&& fn) {
    try {
        fn();
    } catch (const ptpu::error& e) {
        return e.rule();
    }
    return "no error";
}
bool has(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}
template <std::size_t N>
std::vector<event> as_vector(const std::array<event, N>& a) {
    return {a.begin(), a.end()};
}

using F2 = Operand<float, 2>;

// ---- examples/quickstart.cpp ------------------------------------------------------------------
using X = Array<float, 1024, 512>;
using Blk = BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<4>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;
using DynAdd = dynamic_call<In<F2, F2>, Out<F2>>;
constexpr auto add_body = [](auto a, auto b, auto c) { store(c, load(a) + load(b)); };

DynAdd dyn_add(index_t rows, index_t cols, index_t block_rows, chip hw = tpu::v5e) {
    DynAdd d;
    d.grid = {rows / block_rows};
    d.chip = hw;
    d.in[0] = {.shape = {rows, cols}, .block = {block_rows, cols}, .index_map = [](index_t i) { return idx(i, 0); }};
    d.in[1] = d.in[0];
    d.out[0] = d.in[0];
    return d;
}
}  // namespace

TEST(DynamicCall, QuickstartSameEventsResultAndTime) {
    host_array<X> x, y;
    std::iota(x.begin(), x.end(), 0.0f);
    std::ranges::fill(y, 1.0f);
    const DynAdd d = dyn_add(1024, 512, 256);
    EXPECT_EQ(d.events(), as_vector(Add::events));
    const plan_info i = d.info();
    EXPECT_TRUE(i.problem.ok());
    EXPECT_EQ(i.vmem_bytes, Add::info.vmem_bytes);
    auto [z, rep] = Add{}(add_body, x, y);
    auto [dz, drep] = d(add_body, x, y);
    EXPECT_EQ(dz, z.vector());
    EXPECT_EQ(drep.device_time, rep.device_time);
    EXPECT_EQ(drep.stats.dma_in, rep.stats.dma_in);
    EXPECT_EQ(d.predict(add_body).device_time, Add{}.predict(add_body).device_time);
    // Inputs as ranges and host_views, outputs into the caller's memory.
    std::vector<float> out(x.size());
    const report r2 = d.into(std::tie(out), add_body, x.vector(), y.view());
    EXPECT_EQ(out, z.vector());
    EXPECT_EQ(r2.device_time, rep.device_time);
}

// Outputs are host_arrays of the configured (run-time) shape, indexable as o(i, j), and still a
// contiguous row-major range of their elements.
TEST(DynamicCall, OutputsAreArraysOfTheConfiguredShape) {
    std::vector<float> x(256 * 384), y(256 * 384, 0.5f);
    std::iota(x.begin(), x.end(), 0.0f);
    const DynAdd d = dyn_add(256, 384, 64);
    auto [z, rep] = d(add_body, x, y);
    static_assert(std::is_same_v<decltype(z), host_array<dyn_array<float, 2>>>);
    EXPECT_EQ(z.shape(), (std::array<index_t, 2>{256, 384}));
    EXPECT_EQ(z.shape(1), 384);
    ASSERT_EQ(z.size(), x.size());
    for (index_t i = 0; i < 256; i += 17)
        for (index_t j = 0; j < 384; j += 23) ASSERT_EQ(z(i, j), static_cast<float>(i * 384 + j) + 0.5f) << i << ", " << j;
    // The range of its elements, row-major: data(), [k], iteration, a std::vector's equality.
    EXPECT_EQ(z.data() + 5 * 384 + 7, &z(5, 7));
    EXPECT_EQ(z[5 * 384 + 7], z(5, 7));
    std::vector<float> want(x.size());
    std::transform(x.begin(), x.end(), y.begin(), want.begin(), [](float a, float b) { return a + b; });
    EXPECT_EQ(z, want);
    EXPECT_TRUE(std::ranges::equal(z, want));
    // An output feeds another call as an input (a contiguous range), and a view names its shape.
    auto [z2, rep2] = d(add_body, z, y);
    EXPECT_EQ(z2(255, 383), z(255, 383) + 0.5f);
    // So does a static pallas_call, the shape checked against its Array type (ARG1).
    using Z = Array<float, 256, 384>;
    using ZBlk = BlockSpec<Block<64, 384>, [](auto i) { return idx(i, 0); }>;
    using StaticAdd = pallas_call<Grid<4>, In<Arg<Z, ZBlk>, Arg<Z, ZBlk>>, Out<Arg<Z, ZBlk>>, Chip<tpu::v5e>>;
    auto [zs, rs] = StaticAdd{}(add_body, z, y);
    EXPECT_EQ(z2, zs.vector());
    EXPECT_EQ(rs.device_time, rep2.device_time);
    const auto& z_out = z;  // (clang 14 lambdas cannot capture a structured binding)
    EXPECT_EQ(rule_of([&] { (void)Add{}(add_body, z_out, host_array<X>{}); }), "ARG1");
    const host_view<const float> v = std::as_const(z).view();
    EXPECT_EQ(v.rank, 2);
    EXPECT_EQ(v.shape[0], 256);
    EXPECT_EQ(v.shape[1], 384);
    // Equal arrays have equal shapes too; a wrong element count is ARG1.
    const host_array<dyn_array<float, 2>> flat({384, 256}, z.vector());
    EXPECT_FALSE(flat == z);
    EXPECT_TRUE(flat == z.vector());
    EXPECT_TRUE((host_array<dyn_array<float, 2>>({256, 384}, z.vector()) == z));
    EXPECT_EQ(rule_of([&] { (void)host_array<dyn_array<float, 2>>({2, 3}, std::vector<float>(5)); }), "ARG1");
}

// ---- examples/blocked_matmul.cpp (scratch accumulator, three axes) ----------------------------
namespace {
constexpr index_t n = 512, bm = 128, bn = 256, bk = 256;
using Mat = Array<float, n, n>;
template <index_t M, index_t N, index_t K>
using Matmul =
    pallas_call<Grid<n / M, n / N, n / K>, Semantics<parallel, parallel, arbitrary>, Chip<tpu::v5e>,
                In<Arg<Mat, BlockSpec<Block<M, K>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<Mat, BlockSpec<Block<K, N>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<Mat, BlockSpec<Block<M, N>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Scratch<vmem, float, M, N>>;
using DynMatmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;
constexpr auto matmul_body = [](auto xb, auto yb, auto ob, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(xb), load(yb)));
    if (program_id(2) == num_programs(2) - 1) store(ob, load(acc));
};

DynMatmul dyn_matmul(index_t m, index_t nn, index_t k) {
    DynMatmul d;
    d.grid = {n / m, n / nn, n / k};
    d.semantics = {parallel, parallel, arbitrary};
    d.chip = tpu::v5e;
    d.in[0] = {.shape = {n, n}, .block = {m, k}, .index_map = [](index_t i, index_t, index_t kk) { return idx(i, kk); }};
    d.in[1] = {.shape = {n, n}, .block = {k, nn}, .index_map = [](auto, auto j, auto kk) { return idx(kk, j); }};
    d.out[0] = {.shape = {n, n}, .block = {m, nn}, .index_map = [](index_t i, index_t j, index_t) { return idx(i, j); }};
    d.scratch[0] = {m, nn};
    return d;
}
}  // namespace

TEST(DynamicCall, BlockedMatmulSameEventsResultAndTime) {
    using S = Matmul<bm, bn, bk>;
    host_array<Mat> x, y;
    for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j) {
            x(i, j) = static_cast<float>((i * 7 + j * 3) % 11) - 5.0f;
            y(i, j) = static_cast<float>((i * 5 + j) % 13) - 6.0f;
        }
    const DynMatmul d = dyn_matmul(bm, bn, bk);
    EXPECT_EQ(d.events(), as_vector(S::events));
    auto [z, rep] = S{}(matmul_body, x, y);
    auto [dz, drep] = d(matmul_body, x, y);
    EXPECT_EQ(dz, z.vector());
    EXPECT_EQ(drep.device_time, rep.device_time);
    EXPECT_EQ(drep.mxu_utilization, rep.mxu_utilization);
    // And the product is right (small integers: exact in bf16 and f32).
    double ref = 0;
    for (index_t k = 0; k < n; ++k) ref += static_cast<double>(x(3, k)) * y(k, 5);
    EXPECT_EQ(dz[3 * n + 5], static_cast<float>(ref));
}

// One instantiation of dynamic_call, block sizes varied in a loop: each point predicts what the
// static call of those block sizes predicts, to the last bit.
TEST(DynamicCall, BlockSizeLoopMatchesEachStaticCall) {
    const double expect[] = {
        Matmul<128, 128, 128>{}.predict(matmul_body).device_time,
        Matmul<128, 256, 512>{}.predict(matmul_body).device_time,
        Matmul<256, 512, 128>{}.predict(matmul_body).device_time,
    };
    const index_t sizes[][3] = {{128, 128, 128}, {128, 256, 512}, {256, 512, 128}};
    DynMatmul d = dyn_matmul(128, 128, 128);
    for (int p = 0; p < 3; ++p) {
        const auto [m, nn, k] = sizes[p];
        d.grid = {n / m, n / nn, n / k};
        d.in[0].block = {m, k};
        d.in[1].block = {k, nn};
        d.out[0].block = {m, nn};
        d.scratch[0] = {m, nn};
        EXPECT_EQ(d.predict(matmul_body).device_time, expect[p]) << "point " << p;
    }
    EXPECT_NE(expect[0], expect[1]);  // the points differ, so the loop did change the call
}

// ---- examples/megacore_add.cpp (two TensorCores, S44) -----------------------------------------
namespace {
using M = Array<float, 1024, 1024>;
using Half = BlockSpec<Block<512, 1024>, [](auto i) { return idx(i, 0); }>;
using MegaAdd = pallas_call<Grid<2>, Semantics<parallel>, Chip<tpu::v5p>, In<Arg<M, Half>, Arg<M, Half>>,
                            Out<Arg<M, Half>>>;
}  // namespace

TEST(DynamicCall, MegacoreSameEventsResultAndTime) {
    DynAdd d = dyn_add(1024, 1024, 512, tpu::v5p);
    d.semantics = {parallel};
    EXPECT_EQ(d.info().cores, 2);
    EXPECT_EQ(d.events(), as_vector(MegaAdd::events));
    host_array<M> x, y;
    for (std::size_t i = 0; i < x.size(); ++i) {
        x.vector()[i] = static_cast<float>(i % 4096);
        y.vector()[i] = 1.0f - static_cast<float>(i % 17);
    }
    auto [z, rep] = MegaAdd{}(add_body, x, y);
    auto [dz, drep] = d(add_body, x, y);
    EXPECT_EQ(dz, z.vector());
    EXPECT_EQ(drep.device_time, rep.device_time);
    EXPECT_EQ(drep.stats.core_steps[1], rep.stats.core_steps[1]);
}

// ---- examples/block_sparse.cpp (scalar prefetch read by the index maps, S51) -------------------
namespace {
constexpr index_t b = 128, rows = 4, cols = 8, nnz = 6;
using A = Array<float, rows * b, cols * b>;
using V = Array<float, cols * b, b>;
using Y = Array<float, rows * b, b>;
using Idx = Array<std::int32_t, nnz>;
using Spmm = pallas_call<
    Grid<nnz>, ScalarPrefetch<Idx, Idx>,
    In<Arg<A, BlockSpec<Block<b, b>, [](auto t, const auto& r, const auto& c) { return idx(r[t], c[t]); }>>,
       Arg<V, BlockSpec<Block<b, b>, [](auto t, const auto&, const auto& c) { return idx(c[t], 0); }>>>,
    Out<Arg<Y, BlockSpec<Block<b, b>, [](auto t, const auto& r, const auto&) { return idx(r[t], 0); }>>>>;
using I1 = Operand<std::int32_t, 1>;
using DynSpmm = dynamic_call<ScalarPrefetch<I1, I1>, In<F2, F2>, Out<F2>>;
constexpr auto spmm_body = [](auto r, auto, auto ab, auto vb, auto yb) {
    const index_t t = program_id(0);
    if (t == 0 || sload(r, t) != sload(r, t - 1)) store(yb, zeros_like(yb));
    store(yb, load(yb) + dot(load(ab), load(vb)));
};
DynSpmm dyn_spmm() {
    DynSpmm d;
    d.grid = {nnz};
    d.in[0] = {.shape = {rows * b, cols * b},
               .block = {b, b},
               .index_map = [](index_t t, const auto& r, const auto& c) { return idx(r[t], c[t]); }};
    d.in[1] = {.shape = {cols * b, b},
               .block = {b, b},
               .index_map = [](index_t t, const auto&, const auto& c) { return idx(c[t], 0); }};
    d.out[0] = {.shape = {rows * b, b},
                .block = {b, b},
                .index_map = [](index_t t, const auto& r, const auto&) { return idx(r[t], 0); }};
    return d;
}
}  // namespace

TEST(DynamicCall, BlockSparseScalarPrefetchSameEventsResultAndTime) {
    const std::vector<std::int32_t> row_of = {0, 0, 1, 2, 2, 3};
    const std::vector<std::int32_t> col_of = {1, 5, 0, 2, 7, 3};
    host_array<A> a;
    host_array<V> v;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<float>(i % 9) - 4.0f;
    for (std::size_t i = 0; i < v.size(); ++i) v.vector()[i] = static_cast<float>(i % 5) - 2.0f;
    const DynSpmm d = dyn_spmm();
    auto [y, rep] = Spmm{}(spmm_body, row_of, col_of, a, v);
    auto [dy, drep] = d(spmm_body, row_of, col_of, a, v);
    EXPECT_EQ(dy, y.vector());
    EXPECT_EQ(drep.device_time, rep.device_time);
    EXPECT_EQ(drep.stats.op_dmas[0], rep.stats.op_dmas[0]);
    // The same plan as the static call's own run-time plan.
    std::vector<event> static_events;
    const std::array<ref<const std::int32_t, smem, 1>, 2> refs{ref<const std::int32_t, smem, 1>(row_of.data(), {nnz}),
                                                                ref<const std::int32_t, smem, 1>(col_of.data(), {nnz})};
    const std::tuple ctx{refs[0], refs[1]};
    (void)plan(Spmm::desc, Spmm::maps.data(), &ctx, [&](const event& e) { static_events.push_back(e); });
    EXPECT_EQ(d.events(row_of, col_of), static_events);
    // A prefetched index out of range is S34 on the operand reading it.
    const std::vector<std::int32_t> bad_col = {1, 5, 0, 2, 8, 3};
    const std::string msg = message_of([&] { (void)d(spmm_body, row_of, bad_col, a, v); });
    EXPECT_TRUE(has(msg, "ptpu[S34]") && has(msg, "operand 0, dim 1")) << msg;
}

// ---- The same rules, the same ids, naming the operand and dim ---------------------------------

TEST(DynamicCallRules, VmemOverflowOnASmallChipIs24) {
    // 3 operands x 2 slots x 4 MiB = 24 MiB: fits v6e's 32 MiB scoped limit, not v4's 16 MiB.
    DynAdd d = dyn_add(4096, 1024, 1024, tpu::v6e);
    EXPECT_TRUE(d.info().problem.ok());
    d.chip = tpu::v4;
    const std::string msg = message_of([&] { (void)d.predict(add_body); });
    EXPECT_TRUE(has(msg, "ptpu[24]") && has(msg, "operand 2: 4194304 bytes x 2 buffers") &&
                has(msg, "limit 16777216 bytes"))
        << msg;
    d.in[0].buffer_count = 1;  // Buffered<1> on two operands: 16 MiB, fits
    d.in[1].buffer_count = 1;
    EXPECT_EQ(rule_of([&] { (void)d.predict(add_body); }), "no error");
    d.vmem_limit = 8 << 20;  // VmemLimit
    EXPECT_EQ(rule_of([&] { (void)d.predict(add_body); }), "24");
}

TEST(DynamicCallRules, BlockBreakingTilingIs15And16) {
    DynAdd d = dyn_add(1024, 512, 256);
    d.in[1].block = {256, 100};  // last dim neither a multiple of 128 nor the array's 512
    const std::string msg = message_of([&] { (void)d.predict(add_body); });
    EXPECT_TRUE(has(msg, "ptpu[15]") && has(msg, "operand 1, dim 1") && has(msg, "value 100")) << msg;
    // The message itself names the operand, the dim and the values, before the fix.
    EXPECT_TRUE(has(msg, "(TPU tiling); input 1, dim 1: block 100, array dim 512; pick (8k, 128m) blocks")) << msg;
    d.in[1].block = {12, 512};  // second-to-last not a multiple of 8
    EXPECT_TRUE(has(message_of([&] { (void)d.events(); }), "operand 1, dim 0"));
    using D1 = dynamic_call<In<Operand<float, 1>>, Out<Operand<float, 1>>>;
    D1 r;
    r.grid = {8};
    r.in[0] = r.out[0] = {.shape = {8 * 96}, .block = {96}, .index_map = [](index_t i) { return idx(i); }};
    EXPECT_EQ(rule_of([&] { (void)r.events(); }), "16");
}

TEST(DynamicCallRules, OutOfBoundsIndexMapIsS34) {
    DynAdd d = dyn_add(1024, 512, 256);
    d.out[0].index_map = [](index_t i) { return idx(i + 1, 0); };  // block 4 of 4 at the last step
    const std::string msg = message_of([&] { (void)d.predict(add_body); });
    EXPECT_TRUE(has(msg, "ptpu[S34]") && has(msg, "operand 2, dim 0") && has(msg, "block (4, 0) at iteration (3)"))
        << msg;
    // A grid larger than the array is the same mistake.
    d = dyn_add(1024, 512, 256);
    d.grid = {5};
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "S34");
}

TEST(DynamicCallRules, WrongBufferCountIs19) {
    DynAdd d = dyn_add(1024, 512, 256);
    d.in[0].buffer_count = 3;
    const std::string msg = message_of([&] { (void)d.predict(add_body); });
    EXPECT_TRUE(has(msg, "ptpu[19]") && has(msg, "operand 0") && has(msg, "value 3")) << msg;
    d.in[0].buffer_count = 0;
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "19");
    d.in[0].buffer_count = 2;
    d.in[0].lookahead = true;  // lookahead is emit_pipeline's
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "19");
}

TEST(DynamicCallRules, ShapesGridAndMapsAtRunTime) {
    DynAdd d = dyn_add(1024, 512, 256);
    d.in[0].block = {256, 512, 1};  // block rank differs from the array's
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "1");
    d = dyn_add(1024, 512, 256);
    d.grid = {4, 1};  // the maps take one grid index
    EXPECT_TRUE(has(message_of([&] { (void)d.events(); }), "ptpu[2] BlockSpec: the index map cannot be called"));
    d = dyn_add(1024, 512, 256);
    d.in[0].index_map = [](index_t i) { return idx(i); };  // one entry for a rank-2 block
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "2");
    d = dyn_add(1024, 512, 256);
    d.grid = {4, 0};
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "25");
    d = dyn_add(1024, 512, 256);
    d.semantics = {arbitrary, parallel};
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "20");
    d = dyn_add(1024, 512, 256);
    d.in[1].shape = {1024, 512, 1};  // the Operand has rank 2
    const std::string msg = message_of([&] { (void)d.events(); });
    EXPECT_TRUE(has(msg, "ptpu[V1] dynamic_call input 1") && has(msg, "rank 2")) << msg;
    // The argument must have the configured shape (ARG1), and nothing runs.
    d = dyn_add(1024, 512, 256);
    const std::vector<float> short_input(1024 * 512 - 1), ok(1024 * 512);
    EXPECT_TRUE(has(message_of([&] { (void)d(add_body, ok, short_input); }), "ptpu[ARG1] dynamic_call input 1"));
    // Options a dynamic call takes at run time: aliases (S50, rule 11).
    d.aliases = {{0, 1}};
    EXPECT_EQ(rule_of([&] { (void)d.events(); }), "11");
}

TEST(DynamicCall, AliasedOutputStartsAsItsInput) {
    // out = in + 1 over half the blocks: the other half keeps the input's values (S50).
    using D = dynamic_call<In<F2>, Out<F2>>;
    D d;
    d.grid = {2};
    d.in[0] = {.shape = {32, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(2 * i, 0); }};
    d.out[0] = d.in[0];
    d.aliases = {{0, 0}};
    std::vector<float> x(32 * 128);
    std::iota(x.begin(), x.end(), 0.0f);
    auto [z, rep] = d([](auto a, auto o) { store(o, load(a) + 1.0f); }, x);
    for (std::size_t i = 0; i < z.size(); ++i) {
        const bool touched = (i / 128 / 8) % 2 == 0;
        ASSERT_EQ(z[i], x[i] + (touched ? 1.0f : 0.0f)) << i;
    }
}

// Element dims with a halo (S8) and a single-buffered revisit_any output (S40), as in the static
// tests of pallas_call_test.cpp: the same events and outputs.
namespace {
constexpr auto halo_map = [](auto i) { return idx(i * 8, 0); };
using H = Array<float, 32, 128>;
using Halo = pallas_call<Grid<4>, In<Arg<H, BlockSpec<Block<element{16, 4, 4}, element{128}>, halo_map>>>,
                         Out<Arg<H, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>>;
constexpr auto halo_body = [](auto win, auto out) {
    const auto row = iota<std::int32_t>(c<8>, c<128>, 0) + static_cast<std::int32_t>(8 * program_id(0));
    auto s = load(win, ds(4, c<8>), ds(0, c<128>));
    s = s + where(row > 0, load(win, ds(3, c<8>), ds(0, c<128>)), 0.0f);
    s = s + where(row < 31, load(win, ds(5, c<8>), ds(0, c<128>)), 0.0f);
    store(out, s);
};
using Revisit = pallas_call<Grid<6>, Out<Arg<Array<float, 16, 128>,
                                             BlockSpec<Block<8, 128>, [](auto i) { return idx(i % 2, 0); },
                                                       Buffered<1>, revisit_any>>>>;
}  // namespace

TEST(DynamicCall, ElementDimsAndRevisitAnySameAsStatic) {
    dynamic_call<In<F2>, Out<F2>> h;
    h.grid = {4};
    h.in[0] = {.shape = {32, 128}, .block = {element{16, 4, 4}, element{128}}, .index_map = halo_map};
    h.out[0] = {.shape = {32, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    EXPECT_EQ(h.events(), as_vector(Halo::events));
    host_array<H> x;
    std::iota(x.begin(), x.end(), 0.0f);
    auto [y, rep] = Halo{}(halo_body, x);
    auto [dy, drep] = h(halo_body, x);
    EXPECT_EQ(dy, y.vector());
    EXPECT_EQ(drep.device_time, rep.device_time);
    EXPECT_EQ(drep.stats.op_bytes[0], (12 + 16 + 16 + 12) * 128 * 4);

    dynamic_call<Out<F2>> r;
    r.grid = {6};
    r.out[0] = {.shape = {16, 128},
                .block = {8, 128},
                .index_map = [](index_t i) { return idx(i % 2, 0); },
                .buffer_count = 1,
                .revisit_any = true};
    EXPECT_EQ(r.events(), as_vector(Revisit::events));
    const auto acc = [](auto o) { store(o, load(o) + 1.0f); };
    auto [z, zrep] = Revisit{}(acc);
    auto [dz, dzrep] = r(acc);
    EXPECT_EQ(dz, z.vector());
    EXPECT_EQ(dz[0], 3.0f);  // each block accumulated over its three visits
    EXPECT_EQ(dzrep.device_time, zrep.device_time);
    r.out[0].revisit_any = false;  // a non-consecutive revisit without revisit_any
    EXPECT_EQ(rule_of([&] { (void)r.events(); }), "S39");
}

// Squeezed dims (S11): the body's ref has the Operand's kernel rank, as Block<squeezed, 8, 128>'s.
namespace {
using Batch = Array<float, 4, 16, 128>;
using SqBlk = BlockSpec<Block<squeezed, 8, 128>, [](auto b, auto i) { return idx(b, i, 0); }>;
using Squeeze = pallas_call<Grid<4, 2>, In<Arg<Batch, SqBlk>>, Out<Arg<Batch, SqBlk>>>;
constexpr auto twice = [](auto x, auto y) {
    static_assert(decltype(x)::rank == 2);
    store(y, load(x) * 2.0f);
};
}  // namespace

TEST(DynamicCall, SqueezedDimsSameAsStatic) {
    using F3 = Operand<float, 3, vmem, 2>;
    dynamic_call<In<F3>, Out<F3>> d;
    d.grid = {4, 2};
    d.in[0] = {.shape = {4, 16, 128},
               .block = {squeezed, 8, 128},
               .index_map = [](index_t b, index_t i) { return idx(b, i, 0); }};
    d.out[0] = d.in[0];
    EXPECT_EQ(d.events(), as_vector(Squeeze::events));
    host_array<Batch> x;
    std::iota(x.begin(), x.end(), 0.0f);
    auto [y, rep] = Squeeze{}(twice, x);
    auto [dy, drep] = d(twice, x);
    EXPECT_EQ(dy, y.vector());
    EXPECT_EQ(dy[5 * 128 + 3], 2.0f * x.vector()[5 * 128 + 3]);
    EXPECT_EQ(drep.device_time, rep.device_time);
    // As many squeezed dims as the Operand's ranks say, or rule 7 naming the operand.
    d.out[0].block = {1, 8, 128};
    const std::string msg = message_of([&] { (void)d.events(); });
    EXPECT_TRUE(has(msg, "ptpu[7] dynamic_call output 0") && has(msg, "squeezes 0 dims")) << msg;
}

// Extent arithmetic that overflows int64 is V3 before any byte moves or is allocated, naming
// what overflowed, the operand and the dim (the extents fuzz driver covers the rest).
TEST(DynamicCallRules, ExtentOverflowIsV3) {
    DynAdd d = dyn_add(1024, 512, 256);
    d.grid = {1 << 22, 1 << 22, 1 << 22};  // 2^66 steps
    std::string msg = message_of([&] { raise(d.info().problem); });
    EXPECT_TRUE(has(msg, "ptpu[V3]") && has(msg, "dim 2") && has(msg, "the grid's step count overflows")) << msg;
    d.grid = {INT64_MAX};  // the count fits; the planner's per-step tables do not
    EXPECT_TRUE(has(message_of([&] { (void)d.events(); }), "planner's tables"));
    d = dyn_add(1024, 512, 256);
    d.in[1].shape = {index_t{1} << 31, index_t{1} << 31};  // 2^62 floats: 2^64 bytes
    msg = message_of([&] { (void)d.predict(add_body); });
    EXPECT_TRUE(has(msg, "ptpu[V3]") && has(msg, "operand 1, dim 1") && has(msg, "the array's bytes")) << msg;
    // An output of that shape: V3 naming it before its buffer is allocated.
    d = dyn_add(1024, 512, 256);
    d.out[0].shape = {index_t{1} << 31, index_t{1} << 31};
    msg = message_of([&] { (void)d(add_body, std::vector<float>(1024 * 512), std::vector<float>(1024 * 512)); });
    EXPECT_TRUE(has(msg, "ptpu[V3]") && has(msg, "dynamic_call output 0, dim 1")) << msg;
    // Element padding near 2^62 on both sides of a dim.
    dynamic_call<In<F2>, Out<F2>> h;
    h.grid = {4};
    h.in[0] = {.shape = {32, 128}, .block = {element{16, index_t{1} << 62, index_t{1} << 62}, element{128}},
               .index_map = halo_map};
    h.out[0] = {.shape = {32, 128}, .block = {8, 128}, .index_map = [](index_t i) { return idx(i, 0); }};
    msg = message_of([&] { (void)h.events(); });
    EXPECT_TRUE(has(msg, "ptpu[V3]") && has(msg, "operand 0, dim 0") && has(msg, "dim + pad_lo + pad_hi")) << msg;
    // A scratch buffer of 2^64 bytes.
    DynMatmul m = dyn_matmul(bm, bn, bk);
    m.scratch[0] = {index_t{1} << 31, index_t{1} << 31};
    msg = message_of([&] { (void)m.events(); });
    EXPECT_TRUE(has(msg, "ptpu[V3]") && has(msg, "scratch 0") && has(msg, "the scratch buffer's bytes")) << msg;
}
