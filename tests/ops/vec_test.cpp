// Tests ops/vec.hpp and ops/load_store.hpp: vreg counting, loads and stores of every shape and
// dtype (bf16 rounding, integer wrap), windows, scalar access, charges, timing-only mode, and the
// rules (OP1, OP3/S3/S4 in-process where SFINAE-friendly, OP4, R2).
#include <gtest/gtest.h>

#include <ptpu/ops/ops.hpp>

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

// ---- vreg counting ---------------------------------------------------------------------------

static_assert(rows_per_vreg(dtype::f32) == 8 && rows_per_vreg(dtype::i32) == 8);
static_assert(rows_per_vreg(dtype::bf16) == 16 && rows_per_vreg(dtype::f16) == 16);
static_assert(rows_per_vreg(dtype::i8) == 32 && rows_per_vreg(dtype::u8) == 32);
static_assert(rows_per_vreg(dtype::boolean) == 8);  // masks tile as i32
static_assert(vregs(8, 128, dtype::f32) == 1 && vregs(1, 1, dtype::f32) == 1);
static_assert(vregs(16, 256, dtype::f32) == 4 && vregs(9, 129, dtype::f32) == 4);
static_assert(vregs(16, 128, dtype::bf16) == 1 && vregs(17, 128, dtype::bf16) == 2);
static_assert(vregs(32, 128, dtype::i8) == 1 && vregs(0, 128, dtype::f32) == 0);

// ---- Compile-time rules that are SFINAE-friendly ---------------------------------------------

// (Requirements must depend on a template parameter to be checked rather than fail hard.)
template <class R>
concept loadable_window2 = requires(R r) {
    load(r, ds(0, 1), ds(0, 1));
};
template <class R, class I>
concept loadable_at = requires(R r, I i) {
    load(r, i);
};
template <class R, class... I>
concept scalar_loadable_at = requires(R r, I... i) {
    sload(r, i...);
};
template <class R, class V>
concept scalar_storable_value = requires(R r, V v) {
    sstore(r, v, 0);
};
static_assert(loadable_window2<vmem_ref<float, 2>>);
static_assert(!loadable_window2<vmem_ref<float, 3>>);  // one ds per dim
static_assert(loadable_at<vmem_ref<float, 1>, slice>);
static_assert(!loadable_at<vmem_ref<float, 1>, int>);  // ints are not windows
static_assert(scalar_loadable_at<smem_ref<int, 2>, int, int>);
static_assert(!scalar_loadable_at<smem_ref<int, 2>, int>);     // one index per dim
static_assert(!scalar_loadable_at<smem_ref<int, 1>, double>);  // integer indices
static_assert(scalar_storable_value<smem_ref<int, 1>, int>);
static_assert(!scalar_storable_value<smem_ref<int, 1>, const char*>);  // not a scalar
static_assert(std::is_same_v<decltype(load(std::declval<vmem_ref<const bf16, 2>>())), vec<bf16>>);
static_assert(std::is_same_v<vec<bf16>::compute_type, float>);
static_assert(std::is_same_v<vec<std::int8_t>::compute_type, std::int32_t>);
static_assert(std::is_same_v<vec<bool>::compute_type, bool>);

// ---- Loads and stores ------------------------------------------------------------------------

TEST(OpsVec, LoadStoreRoundTripF32) {
    env e;
    std::vector<float> in(16 * 256), out(16 * 256, -1.0f);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
    vmem_ref<float, 2> x(in.data(), {16, 256}), y(out.data(), {16, 256});
    const vec<float> v = load(x);
    EXPECT_EQ(v.rows(), 16);
    EXPECT_EQ(v.cols(), 256);
    EXPECT_EQ(v(3, 7), in[3 * 256 + 7]);
    store(y, v);
    EXPECT_EQ(in, out);
    EXPECT_EQ(e.w().vector_loads, 4);
    EXPECT_EQ(e.w().vector_stores, 4);
    EXPECT_EQ(e.w().vreg_cheap, 0);
}

TEST(OpsVec, Rank1LoadsAsOneRowAndRank3CollapsesLeadingDims) {
    env e;
    std::vector<float> a(300), b(2 * 4 * 128);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) + 0.25f;
    const vec<float> v = load(vmem_ref<float, 1>(a.data(), {300}));
    EXPECT_EQ(v.shape(), (std::array<index_t, 2>{1, 300}));
    EXPECT_EQ(v(0, 299), 299.0f);
    EXPECT_EQ(e.w().vector_loads, 3);  // (1, 300): ceil(1/8) · ceil(300/128)
    const vec<float> w = load(vmem_ref<float, 3>(b.data(), {2, 4, 128}));
    EXPECT_EQ(w.shape(), (std::array<index_t, 2>{8, 128}));
    EXPECT_EQ(w(5, 3), b[5 * 128 + 3]);  // row 5 is [1, 1, :]
}

TEST(OpsVec, WindowsLoadAndStore) {
    env e;
    std::vector<float> buf(16 * 256);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
    vmem_ref<float, 2> x(buf.data(), {16, 256});
    const vec<float> v = load(x, ds(8, 8), ds(128, 128));
    EXPECT_EQ(v.shape(), (std::array<index_t, 2>{8, 128}));
    EXPECT_EQ(v(0, 0), buf[8 * 256 + 128]);
    EXPECT_EQ(v(7, 127), buf[15 * 256 + 255]);
    store(x, ds(0, 8), ds(0, 128), v);
    EXPECT_EQ(buf[0], static_cast<float>(8 * 256 + 128));
    EXPECT_EQ(buf[7 * 256 + 127], static_cast<float>(15 * 256 + 255));
    EXPECT_EQ(buf[8 * 256], static_cast<float>(8 * 256));  // outside the window: untouched
    // Rank 1 and rank 3 windows.
    std::vector<float> r1(256, 0.0f);
    vmem_ref<float, 1> y(r1.data(), {256});
    store(y, ds(128, 128), load(y, ds(0, 128)) + 1.0f);
    EXPECT_EQ(r1[200], 1.0f);
    EXPECT_EQ(r1[10], 0.0f);
    std::vector<float> r3(2 * 8 * 128, 0.0f);
    vmem_ref<float, 3> z(r3.data(), {2, 8, 128});
    store(z, ds(1, 1), ds(0, 8), ds(0, 128), full<float>(8, 128, 3.0f));
    EXPECT_EQ(r3[8 * 128], 3.0f);
    EXPECT_EQ(r3[0], 0.0f);
    EXPECT_EQ(rule_of([&] { (void)load(x, ds(8, 9), ds(0, 1)); }), "R2");
}

TEST(OpsVec, StoreAccumulatesNaturally) {
    env e;
    std::vector<float> acc(8 * 128, 1.0f), d(8 * 128, 2.0f);
    vmem_ref<float, 2> a(acc.data(), {8, 128}), b(d.data(), {8, 128});
    store(a, load(a) + load(b));
    store(a, load(a) + load(b));
    EXPECT_EQ(acc[77], 5.0f);
    EXPECT_EQ(e.w().vector_loads, 4);
    EXPECT_EQ(e.w().vector_stores, 2);
    EXPECT_EQ(e.w().vreg_cheap, 2);
}

TEST(OpsVec, Bf16LoadsExactlyAndStoresRoundToNearestEven) {
    env e;
    std::vector<bf16> buf(16 * 128, bf16(0.0f));
    vmem_ref<bf16, 2> x(buf.data(), {16, 128});
    // Values exactly between two bf16 neighbours (ties) and just off them.
    const float tie_down = 1.0f + 0x1p-8f;    // ties to 1.0 (even)
    const float tie_up = 1.0f + 3 * 0x1p-8f;  // ties to 1 + 2^-6 (even)
    const float above = 1.0f + 0x1p-8f + 0x1p-20f;
    typename vec<bf16>::array_type vals(16, 128);
    vals.setConstant(0.0f);
    vals(0, 0) = tie_down;
    vals(0, 1) = tie_up;
    vals(0, 2) = above;
    vals(0, 3) = -tie_up;
    vals(15, 127) = 3.14159265f;
    store(x, vec<bf16>(vals));
    for (int j = 0; j < 4; ++j)
        EXPECT_EQ(static_cast<float>(buf[static_cast<std::size_t>(j)]), ref_bf16(vals(0, j))) << j;
    EXPECT_EQ(static_cast<float>(buf[0]), 1.0f);
    EXPECT_EQ(static_cast<float>(buf[1]), 1.0f + 0x1p-6f);
    EXPECT_EQ(static_cast<float>(buf[16 * 128 - 1]), ref_bf16(3.14159265f));
    const vec<bf16> back = load(x);
    EXPECT_EQ(back(0, 1), 1.0f + 0x1p-6f);  // loads are exact
    EXPECT_EQ(e.w().vector_stores, 1);      // (16, 128) bf16: one packed vreg
    EXPECT_EQ(e.w().vector_loads, 1);
}

TEST(OpsVec, Bf16IntermediatesKeepF32UntilStored) {
    env e;
    std::vector<bf16> buf(8 * 128, bf16(1.0f));
    vmem_ref<bf16, 2> x(buf.data(), {8, 128});
    const vec<bf16> v = load(x) + 0x1p-9f;  // the scalar takes the vec's dtype: bf16(2^-9)
    EXPECT_EQ(v(0, 0), 1.0f + 0x1p-9f);     // held in f32 between ops
    store(x, v);
    EXPECT_EQ(static_cast<float>(buf[0]), 1.0f);  // rounded on store
}

TEST(OpsVec, NarrowIntegersComputeInInt32AndWrapOnStore) {
    env e;
    std::vector<std::int8_t> buf(32 * 128, 100);
    vmem_ref<std::int8_t, 2> x(buf.data(), {32, 128});
    const vec<std::int8_t> v = load(x) + load(x);
    EXPECT_EQ(v(0, 0), 200);  // int32 compute
    store(x, v);
    EXPECT_EQ(buf[0], static_cast<std::int8_t>(200));  // wraps to -56
    EXPECT_EQ(buf[0], -56);
    std::vector<std::uint8_t> u(4, 0);
    vmem_ref<std::uint8_t, 1> y(u.data(), {4});
    store(y, load(y) - 1);
    EXPECT_EQ(u[2], 255);
    EXPECT_EQ(e.w().vector_loads, 3);  // (32, 128) i8 is one vreg
}

TEST(OpsVec, BoolRefsHoldMasks) {
    env e;
    std::vector<float> f{1.0f, -2.0f, 3.0f, -4.0f};
    bool mb[4] = {};
    vmem_ref<float, 1> x(f.data(), {4});
    vmem_ref<bool, 1> m(mb, {4});
    store(m, load(x) > 0.0f);
    EXPECT_TRUE(mb[0]);
    EXPECT_FALSE(mb[1]);
    EXPECT_TRUE(mb[2]);
    EXPECT_FALSE(mb[3]);
}

TEST(OpsVec, StoreShapeMismatchIsOP1NamingBothShapes) {
    env e;
    std::vector<float> buf(16 * 128);
    vmem_ref<float, 2> x(buf.data(), {16, 128});
    try {
        store(x, zeros<float>(8, 128));
        FAIL() << "no error";
    } catch (const error& err) {
        EXPECT_EQ(err.rule(), "OP1");
        const std::string msg = err.what();
        EXPECT_NE(msg.find("(8, 128)"), std::string::npos) << msg;
        EXPECT_NE(msg.find("(16, 128)"), std::string::npos) << msg;
    }
}

TEST(OpsVec, ScalarAccessChargesOneScalarOp) {
    env e;
    int s[6] = {1, 2, 3, 4, 5, 6};
    smem_ref<int, 2> r(s, {2, 3});
    EXPECT_EQ(sload(r, 1, 2), 6);
    sstore(r, 42, 0, 1);
    EXPECT_EQ(s[1], 42);
    EXPECT_EQ(r(0, 1), 42);  // the ref's own operator() is the uncharged spelling
    EXPECT_EQ(e.w().scalar_ops, 2);
    volatile int bad = 2;  // not a constant: g++ -O3 would flag the (unreachable) access
    EXPECT_EQ(rule_of([&] { (void)sload(r, bad, 0); }), "R2");
    float vm[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    EXPECT_EQ(sload(vmem_ref<float, 1>(vm, {8}), 5), 5.0f);  // VMEM scalar: load + extract
    EXPECT_EQ(e.w().scalar_ops, 3);
    EXPECT_EQ(e.w().vector_loads, 1);
}

TEST(OpsVec, VecWindowIsFreeWhenAligned) {
    env e;
    const vec<float> v = iota<float>(16, 256, 1);
    const double before = e.w().vreg_cheap;
    const vec<float> a = v(ds(8, 8), ds(128, 128));
    EXPECT_EQ(e.w().vreg_cheap, before);  // whole vregs
    EXPECT_EQ(a(0, 0), 128.0f);
    const vec<float> b = v(ds(1, 8), ds(3, 128));
    EXPECT_EQ(e.w().vreg_cheap, before + 1);  // unaligned: one shift per output vreg
    EXPECT_EQ(b(0, 0), 3.0f);
    EXPECT_EQ(rule_of([&] { (void)v(ds(10, 8), ds(0, 1)); }), "OP1");
}

TEST(OpsVec, TimingOnlyLoadsHaveShapeNoDataAndStoreNothing) {
    std::vector<float> in(8 * 128, 1.0f), out(8 * 128, -7.0f);
    vmem_ref<float, 2> x(in.data(), {8, 128}), y(out.data(), {8, 128});
    work normal, timing;
    {
        env e;
        store(y, load(x) * 2.0f);
        normal = e.w();
    }
    std::fill(out.begin(), out.end(), -7.0f);
    {
        env e(true);
        const vec<float> v = load(x);
        EXPECT_FALSE(v.has_data());
        EXPECT_EQ(v.rows(), 8);
        store(y, v * 2.0f);
        timing = e.w();
        EXPECT_EQ(out[0], -7.0f);                                            // nothing computed or stored
        EXPECT_EQ(rule_of([&] { store(y, zeros<float>(4, 128)); }), "OP1");  // shapes still checked
    }
    EXPECT_EQ(normal, timing);
    // A value made in timing-only mode has no values to use later (OP4).
    vec<float> ghost;
    {
        env e(true);
        ghost = load(x);
    }
    env e;
    EXPECT_EQ(rule_of([&] { (void)(ghost + 1.0f); }), "OP4");
    EXPECT_EQ(rule_of([&] { (void)ghost.array(); }), "OP4");
}

TEST(OpsVec, OutsideAKernelOpsComputeAndChargeNothing) {
    std::vector<float> in(8, 2.0f);
    vmem_ref<float, 1> x(in.data(), {8});
    const vec<float> v = exp(load(x));
    EXPECT_NEAR(v(0, 7), std::exp(2.0f), 1e-5f);
}

}  // namespace
