// Tests how vecs hold their values (ops/vec.hpp, detail::block_values): load() reads VMEM in
// place and keeps the value it was loaded with whatever is written to that memory afterwards
// (store, sync_copy, uncharged views); an elementwise op over views is evaluated straight into
// the ref it is stored to, also when it reads that ref; moved-from operands have no values; and
// none of it changes what is charged.
#include <gtest/gtest.h>

#include <ptpu/ops/ops.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "support.hpp"

namespace {

using namespace ptpu;
using namespace ops_test;

using blk = ref<float, vmem, 2, extents<16, 256>>;

// A (16, 256) block of VMEM filled from `seed`, and a copy of what it held.
struct block {
    std::vector<float> mem = std::vector<float>(16 * 256);
    explicit block(float seed) {
        for (std::size_t i = 0; i < mem.size(); ++i) mem[i] = seed + static_cast<float>(i % 97) * 0.25f;
    }
    [[nodiscard]] blk r() { return blk(mem.data(), {16, 256}); }
};

void expect_values(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
}

TEST(OpsCopyOnWrite, LoadReadsInPlaceAndKeepsItsValueAcrossStores) {
    env e;
    block x(1.0f), y(0.0f);
    const std::vector<float> x0 = x.mem;
    auto v = load(x.r());
    EXPECT_EQ(e.ctx.borrows.size(), 1u);  // a view of x, registered with the call
    store(x.r(), v * 2.0f);               // x changes: v takes its copy first
    EXPECT_EQ(e.ctx.borrows.size(), 0u);  // v holds its own values now
    store(y.r(), v);
    expect_values(y.mem, x0);
    for (std::size_t i = 0; i < x0.size(); ++i) ASSERT_EQ(x.mem[i], 2.0f * x0[i]);
    EXPECT_EQ(v(3, 7), x0[3 * 256 + 7]);
}

TEST(OpsCopyOnWrite, SyncCopyAndWritableUnchargedViewsDetachReaders) {
    env e;
    block x(1.0f), src(50.0f), y(0.0f), z(0.0f);
    const std::vector<float> x0 = x.mem;
    const auto v = load(x.r());
    sync_copy(src.r(), x.r());  // a local DMA over x
    store(y.r(), v);
    expect_values(y.mem, x0);
    expect_values(x.mem, src.mem);
    const auto w = load(x.r());
    const auto k = w;  // a copy of a view is a view too, and detaches on its own
    x.r().uncharged_array() = 0.0f;
    store(z.r(), k);
    expect_values(z.mem, src.mem);
    EXPECT_EQ(w(0, 0), src.mem[0]);
    // A read-only uncharged view writes nothing: it leaves views alone.
    const auto u = load(z.r());
    (void)z.r().as_const().uncharged_array();
    EXPECT_EQ(e.ctx.borrows.size(), 1u);  // u still reads z in place
    EXPECT_EQ(u(1, 1), src.mem[257]);
}

TEST(OpsCopyOnWrite, PendingOpsEvaluateIntoTheirDestination) {
    env e;
    block a(1.0f), b(-3.0f), c(0.0f), d(0.0f);
    const std::vector<float> a0 = a.mem, b0 = b.mem;
    auto p = load(a.r()) + load(b.r());
    store(c.r(), p);
    for (std::size_t i = 0; i < a0.size(); ++i) ASSERT_EQ(c.mem[i], a0[i] + b0[i]);
    // p now reads c, which holds its value: doubling c in place leaves p's value alone.
    store(c.r(), p * 2.0f);
    store(d.r(), p);
    for (std::size_t i = 0; i < a0.size(); ++i) {
        ASSERT_EQ(c.mem[i], (a0[i] + b0[i]) * 2.0f);
        ASSERT_EQ(d.mem[i], a0[i] + b0[i]);
    }
    // Accumulating into the ref an operand reads (the same plane: elementwise, safe).
    store(a.r(), load(a.r()) + load(b.r()));
    for (std::size_t i = 0; i < a0.size(); ++i) ASSERT_EQ(a.mem[i], a0[i] + b0[i]);
}

TEST(OpsCopyOnWrite, PendingOpsIntoAnOverlappingWindowReadTheOldValues) {
    env e;
    block x(2.0f);
    const std::vector<float> x0 = x.mem;
    const blk r = x.r();
    // Rows [0, 8) from rows [4, 12) and [8, 16): the sources overlap the destination shifted.
    store(r, ds(0, c<8>), ds(0, c<256>),
          load(r, ds(4, c<8>), ds(0, c<256>)) + load(r, ds(8, c<8>), ds(0, c<256>)));
    for (index_t i = 0; i < 16; ++i)
        for (index_t j = 0; j < 256; ++j) {
            const auto at = [&](index_t row) { return x0[static_cast<std::size_t>(row * 256 + j)]; };
            ASSERT_EQ(x.mem[static_cast<std::size_t>(i * 256 + j)], i < 8 ? at(i + 4) + at(i + 8) : at(i));
        }
    // A view stored onto a shifted window of itself.
    block y(5.0f);
    const std::vector<float> y0 = y.mem;
    const blk s = y.r();
    store(s, ds(2, c<8>), ds(0, c<256>), load(s, ds(0, c<8>), ds(0, c<256>)));
    for (index_t i = 2; i < 10; ++i)
        ASSERT_EQ(y.mem[static_cast<std::size_t>(i * 256 + 5)], y0[static_cast<std::size_t>((i - 2) * 256 + 5)]);
}

TEST(OpsCopyOnWrite, ChainsMatchTheElementwiseReference) {
    env e;
    block a(1.5f), b(-0.75f), c(0.0f);
    const std::vector<float> a0 = a.mem, b0 = b.mem;
    store(c.r(), (load(a.r()) * 0.5f - load(b.r())) * load(a.r()) + (-load(b.r())));
    for (std::size_t i = 0; i < a0.size(); ++i) {
        const float t = (a0[i] * 0.5f - b0[i]) * a0[i];
        ASSERT_EQ(c.mem[i], t + -b0[i]) << i;
    }
    // Unary pending ops: the same as the value computed on its own.
    store(c.r(), sqrt(load(a.r())));
    const auto own = sqrt(vec<float>(load(a.r()).array()));
    for (index_t i = 0; i < 16; ++i)
        for (index_t j = 0; j < 256; ++j) ASSERT_EQ(c.mem[static_cast<std::size_t>(i * 256 + j)], own(i, j));
}

TEST(OpsCopyOnWrite, MovedFromOperandsHaveNoValues) {
    env e;
    block a(1.0f);
    auto v = load(a.r());
    auto w = std::move(v) + 1.0f;  // NOLINT(bugprone-use-after-move): the point of the test
    EXPECT_FALSE(v.has_data());    // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(rule_of([&] { (void)v(0, 0); }), "OP4");
    EXPECT_EQ(w(0, 0), a.mem[0] + 1.0f);
    auto o = vec<float>(farr::Constant(8, 128, 2.0f));
    const auto s = std::move(o) * 3.0f;
    EXPECT_FALSE(o.has_data());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(s(7, 127), 6.0f);
}

TEST(OpsCopyOnWrite, ChargesDoNotDependOnHowValuesAreHeld) {
    block a(1.0f), b(2.0f), c(0.0f);
    work fused, eager;
    {
        env e;
        store(c.r(), load(a.r()) + load(b.r()));  // views, a pending add stored in place
        fused = e.w();
    }
    {
        env e;
        auto s = vec<float, 16, 256>(load(a.r()).array());  // an array of its own
        s += vec<float, 16, 256>(load(b.r()).array());
        store(c.r(), s);
        eager = e.w();
    }
    // (16, 256) f32 is 2 × 2 vregs: two loads of 4, one add, one store of 4.
    work want;
    want.vector_loads = 8;
    want.vreg_cheap = 4;
    want.vector_stores = 4;
    want.chain.vreg_cheap = 4;  // the add, on the chain of the stored value
    EXPECT_EQ(fused, want);
    EXPECT_EQ(eager, want);
}

TEST(OpsCopyOnWrite, OutsideABodyLoadsCopy) {
    block a(1.0f), b(0.0f);
    const auto v = load(a.r());  // no running call to register a view with
    a.r().uncharged_array() = 9.0f;
    store(b.r(), v);
    EXPECT_EQ(b.mem[5], 1.0f + 5 * 0.25f);
}

TEST(OpsCopyOnWrite, ViewsOfAnEarlierStepAreOP4) {
    env e;
    block a(1.0f), b(0.0f);
    const auto v = load(a.r());
    e.ctx.step = 1;  // the next body step: a's memory may have been refilled by a DMA
    EXPECT_EQ(rule_of([&] { store(b.r(), v); }), "OP4");
    EXPECT_EQ(rule_of([&] { (void)v(0, 0); }), "OP4");
    const auto w = load(b.r());           // the registry notices the new step
    EXPECT_EQ(e.ctx.borrows.size(), 1u);  // and has dropped the old view: only w's
    EXPECT_EQ(w(0, 0), 0.0f);
    EXPECT_EQ(rule_of([&] { (void)vec<float>(v); }), "OP4");
}

// acc + dot(a, b) with acc a view: one GEMM accumulating into acc where it is stored.
TEST(OpsCopyOnWrite, AccumulatedProductsMatchTheirReference) {
    std::vector<float> am(64 * 128), bm(128 * 32), accm(64 * 32), om(64 * 32, 0.0f);
    for (std::size_t i = 0; i < am.size(); ++i) am[i] = std::sin(0.3f * static_cast<float>(i));
    for (std::size_t i = 0; i < bm.size(); ++i) bm[i] = std::cos(0.7f * static_cast<float>(i));
    for (std::size_t i = 0; i < accm.size(); ++i) accm[i] = static_cast<float>(i % 11) - 5.0f;
    const std::vector<float> acc0 = accm;
    const vmem_ref<float, 2> a(am.data(), {64, 128}), b(bm.data(), {128, 32}), acc(accm.data(), {64, 32}),
        o(om.data(), {64, 32});
    const auto want = [&](index_t i, index_t j, float start) {
        double s = start;
        for (index_t k = 0; k < 128; ++k)
            s += double(ref_bf16(am[static_cast<std::size_t>(i * 128 + k)])) *
                 double(ref_bf16(bm[static_cast<std::size_t>(k * 32 + j)]));
        return s;
    };
    work fused, eager;
    {
        env e;
        store(acc, load(acc) + dot(load(a), load(b)));  // accumulates in place
        fused = e.w();
    }
    for (index_t i = 0; i < 64; ++i)
        for (index_t j = 0; j < 32; ++j)
            ASSERT_NEAR(accm[static_cast<std::size_t>(i * 32 + j)], want(i, j, acc0[static_cast<std::size_t>(i * 32 + j)]),
                        1e-4);
    {
        env e;
        const auto d = dot(load(a), load(b));  // an lvalue: read on its own
        const auto s = vec<float>(load(o).array()) + d;
        (void)s(0, 0);
        eager = e.w();
        EXPECT_NEAR(d(5, 7), want(5, 7, 0.0f), 1e-4);
        // Stored where it is not accumulated: the GEMM writes o directly.
        store(o, dot(load(a), load(b)));
        EXPECT_NEAR(om[5 * 32 + 7], want(5, 7, 0.0f), 1e-4);
        // Stored, then the destination overwritten: the value stays.
        auto p = load(o) + dot(load(a), load(b));
        store(o, p);
        store(o, zeros_like(o));
        EXPECT_NEAR(p(5, 7), 2 * want(5, 7, 0.0f), 2e-4);
        EXPECT_EQ(om[5 * 32 + 7], 0.0f);
    }
    EXPECT_EQ(fused.mxu_passes_flops, eager.mxu_passes_flops);
    EXPECT_EQ(fused.vreg_cheap, eager.vreg_cheap);
    EXPECT_EQ(fused.vector_loads, eager.vector_loads);
    EXPECT_EQ(fused.vector_stores, eager.vector_stores + 8);  // the store of (64, 32): 8 vregs
}

TEST(OpsCopyOnWrite, AccumulatorOverlappingTheDestinationShifted) {
    env e;
    std::vector<float> xm(24 * 128), wm(128 * 128);
    for (std::size_t i = 0; i < xm.size(); ++i) xm[i] = static_cast<float>(i % 13) - 6.0f;
    for (std::size_t i = 0; i < wm.size(); ++i) wm[i] = static_cast<float>(i % 5) - 2.0f;
    const std::vector<float> x0 = xm;
    const vmem_ref<float, 2> x(xm.data(), {24, 128}), w(wm.data(), {128, 128});
    // rows [0, 16) = rows [8, 24) + rows [0, 16) · w: the accumulator is a shifted window of the
    // destination (small integers: exact).
    store(x, ds(0, 16), ds(0, 128), load(x, ds(8, 16), ds(0, 128)) + dot(load(x, ds(0, 16), ds(0, 128)), load(w)));
    for (index_t i = 0; i < 16; i += 3)
        for (index_t j = 0; j < 128; j += 7) {
            double s = x0[static_cast<std::size_t>((i + 8) * 128 + j)];
            for (index_t k = 0; k < 128; ++k)
                s += double(x0[static_cast<std::size_t>(i * 128 + k)]) * double(wm[static_cast<std::size_t>(k * 128 + j)]);
            ASSERT_EQ(xm[static_cast<std::size_t>(i * 128 + j)], static_cast<float>(s)) << i << "," << j;
        }
}

TEST(OpsDotFast, RoundingMatchesTheBf16ConversionBitForBit) {
    // Every class of input: ties both ways, carries into the exponent, the largest finite
    // values (round to infinity), subnormals, infinities, and NaNs with payloads only in the
    // half that is rounded off.
    std::vector<std::uint32_t> bits = {0x3F80'8000u, 0x3F81'8000u, 0x3F80'7FFFu, 0x3FFF'FFFFu, 0x7F7F'FFFFu,
                                       0xFF7F'8000u, 0x0000'0001u, 0x8000'8000u, 0x7F80'0000u, 0xFF80'0000u,
                                       0x7F80'0001u, 0xFF80'4000u, 0x7FC0'0000u, 0x0000'0000u, 0x8000'0000u};
    std::uint32_t s = 12345;
    for (int i = 0; i < 4096; ++i) bits.push_back(s = s * 1664525u + 1013904223u);
    std::vector<float> in, out(bits.size());
    for (std::uint32_t b : bits) in.push_back(std::bit_cast<float>(b));
    detail::round_plane_to_bf16(out.data(), in.data(), static_cast<index_t>(in.size()), 1,
                                static_cast<index_t>(in.size()));
    for (std::size_t i = 0; i < in.size(); ++i) {
        const float want = static_cast<float>(bf16(in[i]));
        ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(want)) << std::hex << bits[i];
        if (!std::isnan(in[i])) {
            ASSERT_EQ(out[i], ref_bf16(in[i]));
        }
    }
}

TEST(OpsDotFast, DotOfStridedWindowsMatchesItsEmulation) {
    env e;
    std::vector<float> mem(64 * 384);
    std::uint32_t s = 7;
    for (float& f : mem) f = static_cast<float>((s = s * 1664525u + 1013904223u) >> 8) * 0x1p-23f - 1.0f;
    const vmem_ref<float, 2> x(mem.data(), {64, 384});
    // a = rows [8, 40) x cols [128, 384) of x: a view with row stride 384.
    const auto a = load(x, ds(8, 32), ds(128, 256));
    std::vector<float> bmem(256 * 16);
    for (index_t k = 0; k < 256; ++k)
        for (index_t j = 0; j < 16; ++j) bmem[static_cast<std::size_t>(k * 16 + j)] = std::sin(0.1f * float(k + j));
    const vmem_ref<float, 2> bref(bmem.data(), {256, 16});
    const auto r = dot(a, load(bref));
    for (index_t i = 0; i < 32; ++i)
        for (index_t j = 0; j < 16; ++j) {
            double want = 0;
            for (index_t k = 0; k < 256; ++k)
                want += double(ref_bf16(mem[static_cast<std::size_t>((8 + i) * 384 + 128 + k)])) *
                        double(ref_bf16(bmem[static_cast<std::size_t>(k * 16 + j)]));
            ASSERT_NEAR(r(i, j), want, 1e-4) << i << "," << j;
        }
}

}  // namespace
