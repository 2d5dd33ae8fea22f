// Tests static shapes at run time (rule OP1): one kernel written once and run with every
// spelling of its refs' extents (all dynamic, all static, and the two mixes) must compute the
// same values and charge exactly the same work, with values and in timing-only mode; shapes that
// are dynamic are still checked at run time (ptpu::error, OP1; R1 for refs); pallas_call bodies
// get statically shaped refs and still accept bodies written for dynamic ones.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

// ---- One kernel, every spelling of its extents --------------------------------------------------

struct Dynamic {
    template <index_t R, index_t C>
    using ext = extents<dyn, dyn>;
};
struct Static {
    template <index_t R, index_t C>
    using ext = extents<R, C>;
};
struct StaticRows {
    template <index_t R, index_t C>
    using ext = extents<R, dyn>;
};
struct StaticCols {
    template <index_t R, index_t C>
    using ext = extents<dyn, C>;
};

struct buffers {
    std::vector<float> x, w, bias, out;
    buffers() : x(16 * 256), w(256 * 128), bias(128), out(16 * 128, -1.0f) {
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.25f;
        for (std::size_t i = 0; i < w.size(); ++i)
            w[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.125f;
        for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) - 2.0f;
    }
};

// A body touching every op family: load, dot, broadcasting arithmetic, compare, where, compound
// assignment, reductions (static, run-time and no axis), broadcast_to, transpose, concatenate,
// windows, casts, store.
template <class S>
void kernel(buffers& b) {
    using E = S;
    ref<float, vmem, 2, typename E::template ext<16, 256>> x(b.x.data(), {16, 256});
    ref<float, vmem, 2, typename E::template ext<256, 128>> w(b.w.data(), {256, 128});
    ref<float, vmem, 2, typename E::template ext<1, 128>> bias(b.bias.data(), {1, 128});
    ref<float, vmem, 2, typename E::template ext<16, 128>> o(b.out.data(), {16, 128});
    const auto h = dot(load(x), load(w)) + load(bias);
    auto y = where(h > 0.0f, h, h * 0.125f);
    y -= max(y, c<1>);
    y += sum(y, 0) * 0.5f;
    y *= broadcast_to(mean(y), 16, 128);
    const auto t = transpose(transpose(y));
    const auto top = t(ds(0, 8), ds(0, 128));
    const auto both = concatenate(top, y(ds(8, 8), ds(0, 128)), c<0>);
    const auto r = cast<float>(cast<bf16>(both)) + zeros_like(o);
    store(o, r + dot(load(x), load(w), {.prec = precision::high}) * 0.0f);
}

template <class S>
class StaticShapes : public ::testing::Test {};
using spellings = ::testing::Types<Dynamic, Static, StaticRows, StaticCols>;
struct spelling_name {
    template <class S>
    static std::string GetName(int) {
        if (std::is_same_v<S, Dynamic>) return "Dynamic";
        if (std::is_same_v<S, Static>) return "Static";
        if (std::is_same_v<S, StaticRows>) return "StaticRows_DynCols";
        return "DynRows_StaticCols";
    }
};
TYPED_TEST_SUITE(StaticShapes, spellings, spelling_name);

TYPED_TEST(StaticShapes, SameValuesAndChargesAsTheDynamicSpelling) {
    buffers want, got;
    work want_w, got_w;
    {
        env e;
        kernel<Dynamic>(want);
        want_w = e.w();
    }
    {
        env e;
        kernel<TypeParam>(got);
        got_w = e.w();
    }
    EXPECT_EQ(got.out, want.out);
    EXPECT_EQ(got_w, want_w);
    EXPECT_GT(got_w.vreg_cheap, 0);
    EXPECT_GT(got_w.mxu_passes_flops, 0);
}

TYPED_TEST(StaticShapes, TimingOnlyChargesExactlyTheFullRun) {
    buffers full, timing;
    work full_w, timing_w;
    {
        env e;
        kernel<TypeParam>(full);
        full_w = e.w();
    }
    {
        env e(true);
        kernel<TypeParam>(timing);
        timing_w = e.w();
    }
    EXPECT_EQ(timing_w, full_w);
    EXPECT_EQ(timing.out, std::vector<float>(16 * 128, -1.0f));  // nothing computed or stored
}

// ---- Dynamic extents keep the run-time check -----------------------------------------------------

template <index_t R, index_t C>
using block = vmem_ref<float, 2, extents<R, C>>;

TEST(StaticShapesRuntime, MixedStaticAndDynamicShapesAreCheckedAtRunTime) {
    for (const bool timing : {false, true}) {
        env e(timing);
        std::vector<float> buf(16 * 256, 1.0f);
        const block<8, 128> x(buf.data(), {8, 128});
        const vmem_ref<float, 2> d(buf.data(), {16, 128});
        const vec<float, 8, 128> v = load(x);
        const vec<float> wrong = load(d);  // (16, 128)
        EXPECT_EQ(rule_of([&] { (void)(v + wrong); }), "OP1");
        EXPECT_EQ(rule_of([&] { (void)(wrong < v); }), "OP1");
        EXPECT_EQ(rule_of([&] { store(x, wrong); }), "OP1");
        EXPECT_EQ(rule_of([&] { store(d, v); }), "OP1");
        EXPECT_EQ(rule_of([&] { (void)where(v > 0.0f, v, wrong); }), "OP1");
        EXPECT_EQ(rule_of([&] { (void)dot(v, v, dot_options{}); }), "OP1");  // run-time options
        EXPECT_EQ(rule_of([&] { (void)dot(v, wrong); }), "OP1");             // 128 vs dyn 16
        EXPECT_EQ(rule_of([&] { (void)broadcast_to(v, 16, 256); }), "OP1");
        EXPECT_EQ(rule_of([&] {
                      (void)concatenate(v, load(block<8, 256>(buf.data(), {8, 256})), 0);
                  }),
                  "OP1");
        EXPECT_EQ(rule_of([&] { (void)sum(v, 2); }), "OP1");
        EXPECT_EQ(rule_of([&] {
                      auto a = v;
                      a += wrong;
                  }),
                  "OP1");
        EXPECT_EQ(rule_of([&] {
                      vec<float> a = sum(v, c<0>);  // (1, 128), dynamic type
                      a *= v;                       // would broadcast a to (8, 128)
                  }),
                  "OP1");
        EXPECT_EQ(rule_of([&] { (void)(v + load(d, ds(0, 8), ds(0, 128))); }), "no error");
    }
}

TEST(StaticShapesRuntime, ConversionsToStaticShapesAreChecked) {
    env e;
    const vec<float> d = zeros<float>(8, 128);
    const vec<float, 8, 128> s(d);  // explicit: checked, fits
    EXPECT_EQ(s.rows(), 8);
    EXPECT_EQ(rule_of([&] { (void)vec<float, 16, 128>(d); }), "OP1");
    EXPECT_EQ(rule_of([&] { (void)vec<float, 8, dyn>(zeros<float>(4, 4)); }), "OP1");
    EXPECT_EQ(rule_of([] { (void)vec<float, 8, 128>(farr::Zero(8, 64)); }), "OP1");
    EXPECT_EQ(rule_of([] { (void)vec<float, 8, 128>(shape_only, 8, 64); }), "OP1");
    const vec<float> back = s;  // implicit: static to dynamic
    EXPECT_EQ(back.shape(), (std::array<index_t, 2>{8, 128}));
    // A default-constructed static vec has its shape and no values (OP4 when used).
    const vec<float, 8, 128> empty;
    EXPECT_EQ(empty.shape(), (std::array<index_t, 2>{8, 128}));
    EXPECT_FALSE(empty.has_data());
    EXPECT_EQ(rule_of([&] { (void)(empty + 1.0f); }), "OP4");
}

TEST(StaticShapesRuntime, RefsAgreeWithTheirStaticExtents) {
    std::vector<float> buf(16 * 128);
    EXPECT_EQ(rule_of([&] { (void)block<8, 128>(buf.data(), {16, 128}); }), "R1");
    const vmem_ref<float, 2> d(buf.data(), {16, 128});
    EXPECT_EQ(rule_of([&] { (void)block<8, 128>(d); }), "R1");
    const block<16, 128> s(d);  // explicit: checked, fits
    const vmem_ref<const float, 2> back = s;
    EXPECT_EQ(back.shape(), (std::array<index_t, 2>{16, 128}));
    EXPECT_EQ(s.at(3).shape(0), 128);
}

TEST(StaticShapesRuntime, WindowsOfStaticSizeMatchRunTimeOnes) {
    std::vector<float> buf(16 * 256);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
    const vmem_ref<float, 2> x(buf.data(), {16, 256});
    work ws, wd;
    vec<float> s, d;
    {
        env e;
        const auto v = load(x, ds(8, c<8>), ds(128, c<128>));
        static_assert(std::is_same_v<decltype(v), const vec<float, 8, 128>>);
        s = v(ds(1, c<4>), ds(3, c<64>));
        store(x, ds(0, c<8>), ds(0, c<128>), v);
        ws = e.w();
    }
    std::vector<float> again(16 * 256);
    for (std::size_t i = 0; i < again.size(); ++i) again[i] = static_cast<float>(i);
    const vmem_ref<float, 2> y(again.data(), {16, 256});
    {
        env e;
        const vec<float> v = load(y, ds(8, 8), ds(128, 128));
        d = v(ds(1, 4), ds(3, 64));
        store(y, ds(0, 8), ds(0, 128), v);
        wd = e.w();
    }
    EXPECT_EQ(buf, again);
    EXPECT_EQ(s.shape(), d.shape());
    EXPECT_TRUE((s.array() == d.array()).all());
    EXPECT_EQ(ws, wd);
    env e;
    EXPECT_EQ(rule_of([&] { (void)load(x, ds(12, c<8>), ds(0, c<128>)); }), "R2");  // bounds: run time
    EXPECT_EQ(rule_of([&] { store(x, ds(0, c<8>), ds(0, 128), zeros<float>(8, 64)); }), "OP1");
}

// ---- pallas_call bodies -------------------------------------------------------------------------

using X = Array<float, 64, 256>;
using W = Array<float, 256, 128>;
using O = Array<float, 64, 128>;
using Mlp =
    pallas_call<Grid<8>, In<Arg<X, BlockSpec<Block<8, 256>, [](auto i) { return idx(i, 0); }>>, Arg<W>>,
                Out<Arg<O, BlockSpec<Block<8, 128>, [](auto i) { return idx(i, 0); }>>>,
                Scratch<vmem, float, 8, 128>>;

TEST(StaticShapesCall, BodiesGetTheirBlockShapesAndComputeTheSame) {
    host_array<X> x;
    host_array<W> w;
    for (std::size_t i = 0; i < x.size(); ++i) x.vector()[i] = static_cast<float>(i % 7) - 3.0f;
    for (std::size_t i = 0; i < w.size(); ++i) w.vector()[i] = static_cast<float>(i % 5) * 0.25f;
    const auto typed = [](auto xr, auto wr, auto orf, auto acc) {
        static_assert(std::is_same_v<decltype(xr), ref<float, vmem, 2, extents<8, 256>>>);
        static_assert(std::is_same_v<decltype(wr), ref<float, vmem, 2, extents<256, 128>>>);
        static_assert(std::is_same_v<decltype(acc), ref<float, vmem, 2, extents<8, 128>>>);
        const auto h = dot(load(xr), load(wr));
        static_assert(std::is_same_v<decltype(h), const vec<float, 8, 128>>);
        store(acc, maximum(h, 0.0f));
        store(orf, load(acc) - max(load(acc), c<1>));
    };
    // The same body written for dynamic refs (as before static extents): still accepted.
    const auto dynamic = [](vmem_ref<const float, 2> xr, vmem_ref<float, 2> wr, vmem_ref<float, 2> orf,
                            vmem_ref<float, 2> acc) {
        const vec<float> h = dot(load(xr), load(wr));
        store(acc, maximum(h, 0.0f));
        store(orf, load(acc) - max(load(acc), 1));
    };
    auto [a, ra] = Mlp{}(typed, x, w);
    auto [b, rb] = Mlp{}(dynamic, x, w);
    EXPECT_EQ(a.vector(), b.vector());
    EXPECT_EQ(ra.device_time, rb.device_time);  // the same charges
    EXPECT_EQ(Mlp{}.predict(typed).device_time, ra.device_time);
    // Against a plain reference (small integers and quarters: exact in bf16 and in f32 sums).
    for (index_t i = 0; i < 64; ++i) {
        std::vector<float> h(128);
        for (index_t j = 0; j < 128; ++j) {
            float s = 0;
            for (index_t k = 0; k < 256; ++k) s += x(i, k) * w(k, j);
            h[static_cast<std::size_t>(j)] = std::max(s, 0.0f);
        }
        const float m = *std::max_element(h.begin(), h.end());
        for (index_t j = 0; j < 128; ++j)
            ASSERT_EQ(a(i, j), h[static_cast<std::size_t>(j)] - m) << i << ", " << j;
    }
}


// ---- x.at(...) with integers and slices mixed, as Pallas's ref.at[ds(4, 8), 1] -------------------

template <class R>
concept at_all_integers = requires(R r) { r.at(1, 2, 3); };
template <class R>
concept at_too_many = requires(R r) { r.at(1, 2, ds(0, 1), 0); };

TEST(RefAt, IntegersSqueezeSlicesKeepTrailingDimsStayWhole) {
    env e;
    std::vector<float> buf(4 * 16 * 128);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
    const auto at = [&](index_t p, index_t r, index_t c) { return buf[static_cast<std::size_t>((p * 16 + r) * 128 + c)]; };
    const vmem_ref<float, 3, extents<4, 16, 128>> x(buf.data(), {4, 16, 128});

    // Plane 1, rows 4..11: (8, 128), static because the slice's size is.
    const auto a = x.at(1, ds(4, c<8>));
    static_assert(std::is_same_v<decltype(a), const vmem_ref<float, 2, extents<8, 128>>>);
    EXPECT_EQ(a.shape(), (std::array<index_t, 2>{8, 128}));
    // Row 3 of planes 0 and 1: (2, 128), the middle dim squeezed out; a run-time size is dyn.
    const auto b = x.at(ds(0, 2), 3);
    static_assert(std::is_same_v<decltype(b), const vmem_ref<float, 2, extents<dyn, 128>>>);
    EXPECT_EQ(b.shape(), (std::array<index_t, 2>{2, 128}));
    // Leading slices only: the other dims whole; every integer but the last dim: rank 1.
    const auto d = x.at(ds(1, 3));
    static_assert(std::is_same_v<decltype(d), const vmem_ref<float, 3, extents<dyn, 16, 128>>>);
    EXPECT_EQ(d.shape(), (std::array<index_t, 3>{3, 16, 128}));
    const auto g = x.at(c<2>, 5, ds(8, c<64>));
    static_assert(std::is_same_v<decltype(g), const vmem_ref<float, 1, extents<64>>>);
    // Integers alone down to rank 0 are semaphores only; more indices than dims do not compile.
    static_assert(!at_all_integers<decltype(x)> && !at_too_many<decltype(x)>);
    // The old spellings keep their types.
    static_assert(std::is_same_v<decltype(x.at(2)), vmem_ref<float, 2, extents<16, 128>>>);
    static_assert(std::is_same_v<decltype(x.at(ds(0, c<4>), ds(0, 16), ds(0, 128))),
                                 vmem_ref<float, 3, extents<4, dyn, dyn>>>);

    // Reads go to the right elements.
    const auto va = load(a);
    const auto vb = load(b);
    for (index_t i = 0; i < 8; ++i)
        for (index_t j = 0; j < 128; j += 9) ASSERT_EQ(va(i, j), at(1, 4 + i, j)) << i << ", " << j;
    for (index_t p = 0; p < 2; ++p)
        for (index_t j = 0; j < 128; j += 9) ASSERT_EQ(vb(p, j), at(p, 3, j)) << p << ", " << j;
    EXPECT_EQ(g(63), at(2, 5, 71));
    EXPECT_EQ(d(2, 15, 127), at(3, 15, 127));

    // Writes too, and nothing else moves.
    const std::vector<float> before = buf;
    store(x.at(ds(0, 2), 3), full<float>(2, 128, -1.0f));
    store(x.at(1, ds(4, c<8>)), full<float>(c<8>, c<128>, -2.0f));
    for (index_t p = 0; p < 4; ++p)
        for (index_t r = 0; r < 16; ++r)
            for (index_t col = 0; col < 128; ++col) {
                const auto k = static_cast<std::size_t>((p * 16 + r) * 128 + col);
                const float want = p < 2 && r == 3 ? -1.0f : p == 1 && r >= 4 && r < 12 ? -2.0f : before[k];
                ASSERT_EQ(buf[k], want) << p << ", " << r << ", " << col;
            }

    // SMEM: scalar writes through a mixed view.
    std::vector<std::int32_t> sbuf(3 * 8);
    const smem_ref<std::int32_t, 2> s(sbuf.data(), {3, 8});
    s.at(2, ds(4, 4))(1) = 7;
    EXPECT_EQ(sbuf[2 * 8 + 5], 7);

    // Out of range, for an integer or a slice: R2, naming the dim.
    EXPECT_EQ(rule_of([&] { (void)x.at(4, ds(0, 8)); }), "R2");
    EXPECT_EQ(rule_of([&] { (void)x.at(-1, ds(0, 8)); }), "R2");
    EXPECT_EQ(rule_of([&] { (void)x.at(1, ds(10, 8)); }), "R2");
    EXPECT_EQ(rule_of([&] { (void)x.at(ds(0, 2), 16); }), "R2");
    try {
        (void)x.at(ds(0, 2), 16);
    } catch (const error& err) {
        EXPECT_NE(std::string(err.what()).find("index 16 is outside dim 1 of extent 16"), std::string::npos)
            << err.what();
    }
}

}  // namespace
