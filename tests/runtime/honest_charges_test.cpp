// Tests that the kernels the README, the examples and the benchmarks write compute on real data
// AND charge it (R3: there is no uncharged natural spelling left): the exact work their
// bodies charge over a call, their numerics against a reference, and the lifetime rules of vecs
// that read VMEM in place (a vec kept past its body step is OP4; one kept from the last step
// outlives the call with its value).
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace {

using namespace ptpu;

// The README's first kernel and the add benchmark's body, on (256, 512) blocks of (1024, 512).
using X = Array<float, 1024, 512>;
using Blk = BlockSpec<Block<256, 512>, [](auto i) { return idx(i, 0); }>;
using Add = pallas_call<Grid<4>, In<Arg<X, Blk>, Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

TEST(HonestCharges, AddBodyChargesItsLoadsAddsAndStores) {
    host_array<X> x, y;
    for (std::size_t i = 0; i < x.size(); ++i) {
        x.vector()[i] = static_cast<float>(i % 1000) * 0.5f;
        y.vector()[i] = 3.0f - static_cast<float>(i % 7);
    }
    auto [z, rep] = Add{}([](auto a, auto b, auto c) { store(c, load(a) + load(b)); }, x, y);
    for (std::size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z.vector()[i], x.vector()[i] + y.vector()[i]);
    // A (256, 512) f32 block is 32 × 4 = 128 vregs; 4 steps of two loads, one add, one store.
    work want;
    want.vector_loads = 4 * 2 * 128;
    want.vreg_cheap = 4 * 128;
    want.vector_stores = 4 * 128;
    want.chain.vreg_cheap = 4 * 128;  // each step's chain: the add (loads and stores stream)
    EXPECT_EQ(rep.stats.total_work, want);
    EXPECT_GT(rep.core[0].compute, 0.0);
}

// The blocked matmul of examples/blocked_matmul.cpp and the matmul benchmark: an f32 accumulator
// in VMEM scratch, dot at DEFAULT precision, on a (2, 2, 2) grid of 128 blocks.
constexpr index_t n = 256, b = 128;
using Mat = Array<float, n, n>;
using Matmul =
    pallas_call<Grid<n / b, n / b, n / b>, Semantics<parallel, parallel, arbitrary>, Chip<tpu::v5e>,
                In<Arg<Mat, BlockSpec<Block<b, b>, [](auto i, auto, auto k) { return idx(i, k); }>>,
                   Arg<Mat, BlockSpec<Block<b, b>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
                Out<Arg<Mat, BlockSpec<Block<b, b>, [](auto i, auto j, auto) { return idx(i, j); }>>>,
                Scratch<vmem, float, b, b>>;

constexpr auto matmul_body = [](auto xb, auto yb, auto ob, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(xb), load(yb)));
    if (program_id(2) == num_programs(2) - 1) store(ob, load(acc));
};

float bf16_of(float f) {
    return static_cast<float>(bf16(f));
}

TEST(HonestCharges, MatmulBodyChargesMxuAndVectorWork) {
    host_array<Mat> x, y;
    for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j) {
            x(i, j) = std::sin(0.37f * static_cast<float>(i * n + j));
            y(i, j) = std::cos(0.11f * static_cast<float>(i + 3 * j));
        }
    auto [z, rep] = Matmul{}(matmul_body, x, y);
    // DEFAULT precision: inputs rounded to bf16, products exact, sums in f32 (per block).
    for (index_t i = 0; i < n; i += 9)
        for (index_t j = 0; j < n; j += 7) {
            double ref = 0;
            for (index_t k = 0; k < n; ++k) ref += double(bf16_of(x(i, k))) * double(bf16_of(y(k, j)));
            ASSERT_NEAR(z(i, j), ref, 1e-4) << i << "," << j;
        }
    // Per step (8): dot 2·128³ MXU FLOPs, its operands' 16 + 16 vregs pushed (its 16 result
    // vregs are popped through the MXU's pop slot, uncharged); load x, y and acc (16 vregs each),
    // the add (16), the store into acc (16). First k step (4 of them): zeros_like (16 cheap) and
    // its store; last k step (4): load acc, store o.
    const double per = 16;
    work want;
    want.mxu_passes_flops = 8 * 2.0 * b * b * b;
    want.vector_loads = 8 * (3 * per + 2 * per) + 4 * per;
    want.vector_stores = 8 * per + 4 * per + 4 * per;
    want.vreg_cheap = 8 * per + 4 * per;
    // Each step's longest chain is the product (the add folds into it; zeros_like is shorter).
    want.chain.mxu_passes_flops = want.mxu_passes_flops;
    EXPECT_EQ(rep.stats.total_work, want);
    EXPECT_EQ(rep.flops, want.mxu_passes_flops);
    EXPECT_GT(rep.mxu_utilization, 0.0);
}

TEST(HonestCharges, MatmulOfSmallIntegersIsExact) {
    host_array<Mat> x, y;
    for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j) {
            x(i, j) = static_cast<float>((i * 7 + j * 3) % 11) - 5.0f;
            y(i, j) = static_cast<float>((i * 5 + j) % 13) - 6.0f;
        }
    auto [z, rep] = Matmul{}(matmul_body, x, y);
    for (index_t i = 0; i < n; i += 5)
        for (index_t j = 0; j < n; j += 3) {
            double ref = 0;
            for (index_t k = 0; k < n; ++k) ref += double(x(i, k)) * double(y(k, j));
            ASSERT_EQ(z(i, j), static_cast<float>(ref)) << i << "," << j;
        }
}

// A vec kept in a variable that outlives its body step reads a window the pipeline refills.
using Copy = pallas_call<Grid<4>, In<Arg<X, Blk>>, Out<Arg<X, Blk>>, Chip<tpu::v5e>>;

TEST(HonestCharges, AVecKeptPastItsBodyStepIsOP4) {
    host_array<X> x;
    std::optional<vec<float, 256, 512>> kept;
    try {
        (void)Copy{}(
            [&](auto in, auto out) {
                if (program_id(0) == 0) kept.emplace(load(in));
                store(out, *kept);  // step 1: kept reads step 0's window
            },
            x);
        FAIL() << "expected ptpu::error";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "OP4");
    }
    kept.reset();
}

TEST(HonestCharges, AVecKeptFromTheLastStepOutlivesTheCall) {
    host_array<X> x;
    for (std::size_t i = 0; i < x.size(); ++i) x.vector()[i] = static_cast<float>(i);
    std::optional<vec<float, 256, 512>> kept;
    const auto body = [&](auto in, auto out) {
        store(out, load(in));
        if (program_id(0) == 3) kept.emplace(load(in));
    };
    auto [y, rep] = Copy{}(body, x);
    ASSERT_TRUE(kept.has_value());
    EXPECT_EQ((*kept)(0, 0), x(768, 0));
    EXPECT_EQ((*kept)(255, 511), x(1023, 511));
    // Timing-only runs charge the same work and compute nothing.
    kept.reset();
    Copy k{{.timing_only = true}};
    auto [y2, rep2] = k(body, x);
    EXPECT_FALSE(kept->has_data());
    EXPECT_EQ(rep2.stats.total_work, rep.stats.total_work);
    EXPECT_EQ(rep2.device_time, rep.device_time);
}

}  // namespace
