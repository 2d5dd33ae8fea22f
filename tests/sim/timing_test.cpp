// Known answers of the timing model on whole pallas_calls (docs/model.md, "Known answers"):
// each expected time is derived from the model's own equations, by hand, in the test.
#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace ptpu;

namespace {

constexpr chip hw = tpu::v5e;
constexpr double bw = hw.hbm_bytes_per_s * hw.dma_efficiency;  // B·η
constexpr double lat = hw.dma_latency_s;
constexpr double issue = hw.dma_issue_s;
constexpr double o = hw.step_overhead_s;

// A copy of N blocks of (512, 2048) f32 = 4 MiB each, with C seconds of charged compute per step.
constexpr index_t rows = 512, cols = 2048, n_steps = 8;
constexpr double X = rows * cols * 4.0;
// What one block DMA costs HBM (docs/model.md, "DMA shape costs"): a block of whole rows is one
// contiguous run, so its bytes plus one run cost plus the descriptor's time at B·η.
constexpr double Xc = X + hw.dma_run_cost_bytes + hw.dma_descriptor_s * bw;
using Big = Array<float, n_steps * rows, cols>;
constexpr auto row_map = [](auto i) { return idx(i, 0); };
template <int BC, chip C = hw, class Sem = Semantics<arbitrary>>
using Copy = pallas_call<Grid<n_steps>, Chip<C>, Sem, VmemLimit<(64 << 20)>,
                         In<Arg<Big, BlockSpec<Block<rows, cols>, row_map, Buffered<BC>>>>,
                         Out<Arg<Big, BlockSpec<Block<rows, cols>, row_map, Buffered<BC>>>>>;

template <class K>
report run(double compute_s, bool timing_only_run = false) {
    static const host_array<Big> x;  // zeros; contents do not matter for time
    K k{};
    k.options.timing_only = timing_only_run;
    auto [y, rep] = k(
        [compute_s](auto in, auto out) {
            // The copy's own vector work is deliberately left uncharged (the escape hatch):
            // the known answers below have exactly compute_s of compute per step.
            if (!timing_only()) out.uncharged_array() = in.uncharged_array();
            charge(work{.explicit_seconds = compute_s});
        },
        x);
    return rep;
}

}  // namespace

TEST(TimingKnownAnswer, DmaBoundDoubleBufferedCopy) {
    const double C = 1e-6;  // far below a block's transfer time: DMA-bound
    const report r = run<Copy<2>>(C);
    // HBM is the bottleneck: the kernel lasts until its channel has moved every byte, plus the
    // time before the channel first moves and its idle gaps. Step 0's overhead comes first (the
    // prologue is code of step 0), then fetch 0 is issued and its latency runs: o + issue + L.
    // Fetches 0 and 1 then share HBM back to back (2X/(B·η)); the channel idles while step 0
    // computes and write 0 is issued and in its latency (C + L, the issue of fetch 1 having been
    // inside the transfers). From then on each step's fetch and write keep it busy
    // (max(o + C, 2X/(B·η)) = 2X/(B·η)) until the last write-back ends.
    const double expected = o + issue + lat + 2 * n_steps * Xc / bw + C + lat;
    EXPECT_NEAR(r.device_time, expected, 0.01 * expected) << r;
    EXPECT_GT(r.exposed_dma, 0.8 * r.device_time);  // the core mostly waits
    EXPECT_TRUE(r.memory_bound);
    EXPECT_EQ(r.hbm_bytes, static_cast<std::int64_t>(2 * n_steps * X));
}

TEST(TimingKnownAnswer, SevenXCopyMovesOneDevicesShareOfHbm) {
    // A 7x chip is two JAX devices, one TensorCore each, and its preset describes one device
    // (docs/model.md, "The chip presets"): B = 7.40e12 / 2 = 3.70e12 B/s [src], η = 0.87 [est]
    // (XLA copies on 7x). The same DMA-bound double-buffered copy as above, with 7x's constants:
    //   t = o + i + L + 2·n·Xc/(B·η) + C + L
    // and, once the channel streams, it moves X bytes per Xc/(B·η) seconds:
    //   B·η · X/Xc = 3.219e12 · 4194304 / (4194304 + 64 + 10.67 ns · 3.219e12) ≈ 3.193e12 B/s
    // (the descriptor's 34 KB-equivalent is 0.8% of a 4 MiB block): the ≈3.2 TB/s a
    // memory-bound copy reaches on one 7x device, 0.431 of the whole chip's 7.40e12.
    constexpr chip c = tpu::v7x;
    static_assert(c.hbm_bytes_per_s == 3.70e12);
    const double bw7 = c.hbm_bytes_per_s * c.dma_efficiency;
    const double xc7 = X + c.dma_run_cost_bytes + c.dma_descriptor_s * bw7;
    // C = 0.2 µs: a 7x block moves in Xc/(B·η) = 1.31 µs, so with v5e's C = 1 µs the channel
    // would idle inside the run too (the write-back of step s joins after C + i + L, section 8 of
    // docs/model.md); with o + C + i + L well under one block's transfer it idles only at the
    // first gap, and the formula is exact.
    const double C = 0.2e-6;
    const report r = run<Copy<2, c>>(C);
    const double fixed = c.step_overhead_s + c.dma_issue_s + 2 * c.dma_latency_s + C;
    const double expected = fixed + 2 * n_steps * xc7 / bw7;
    EXPECT_NEAR(r.device_time, expected, 1e-6 * expected) << r;
    EXPECT_TRUE(r.memory_bound);
    const double streaming = static_cast<double>(r.hbm_bytes) / (r.device_time - fixed);
    EXPECT_NEAR(streaming, 3.193e12, 0.001 * 3.193e12) << r;
    EXPECT_NEAR(streaming / 7.40e12, 0.4315, 0.0005);  // of the whole chip's bandwidth
}

TEST(TimingKnownAnswer, SingleBufferedCopySerializes) {
    const double C = 3e-6;
    const report r = run<Copy<1>>(C);
    // Buffered<1>: fetch, wait, compute, blocking write-back, one after the other (S28, S29):
    // per step o + (issue + L + Xc/(B·η)) + C + (issue + L + Xc/(B·η)).
    const double per_step = o + 2 * (issue + lat + Xc / bw) + C;
    EXPECT_NEAR(r.device_time, n_steps * per_step, 0.01 * n_steps * per_step) << r;
    // Double buffering hides the transfers behind each other: strictly faster.
    EXPECT_LT(run<Copy<2>>(C).device_time, r.device_time);
}

TEST(TimingKnownAnswer, ComputeBoundStepsTakeOverheadPlusCompute) {
    const double C = 40e-6;  // far above a block's transfer time (~5.6 us)
    const report r = run<Copy<2>>(C);
    // Step 0 waits for fetch 0, which shares HBM with fetch 1 once that starts (processor
    // sharing): fetch 0 moves alone for o + issue seconds, then at half rate.
    const double alone = o + issue;
    const double rest0 = Xc - alone * bw;
    const double t0 = 2 * issue + o + lat + 2 * rest0 / bw;  // fetch 0 completes, step 0 computes
    // Then every step is compute-bound: max(o + C, X/(B·η)) = o + C, plus its DMA issues (step 0:
    // its write; steps 1..6: fetch and write; step 7: its write); the last write is exposed.
    const double expected = t0 + (C + issue) + 6 * (o + C + 2 * issue) + (o + C + issue) + lat + Xc / bw;
    EXPECT_NEAR(r.device_time, expected, 0.01 * expected) << r;
    EXPECT_FALSE(r.memory_bound);
}

TEST(TimingKnownAnswer, MegacoreSharesHbm) {
    // Bandwidth-bound: two cores share one HBM, so splitting gains little.
    const double t1 = run<Copy<2, tpu::v5p, Semantics<arbitrary>>>(0.5e-6).device_time;
    const double t2 = run<Copy<2, tpu::v5p, Semantics<parallel>>>(0.5e-6).device_time;
    EXPECT_GT(t2 / t1, 0.85) << t1 << " vs " << t2;
    // Compute-bound: the cores' compute runs in parallel, close to 2x.
    const double c1 = run<Copy<2, tpu::v5p, Semantics<arbitrary>>>(200e-6).device_time;
    const double c2 = run<Copy<2, tpu::v5p, Semantics<parallel>>>(200e-6).device_time;
    EXPECT_NEAR(c1 / c2, 2.0, 0.1) << c1 << " vs " << c2;
}

namespace {
// The reference kernel of the grid step (docs/model.md, "The grid step"): a bf16
// matmul with (128,128,128) blocks, k innermost, accumulating into its f32 output block.
template <index_t N>
using Tiny = pallas_call<
    Grid<N / 128, N / 128, N / 128>, Semantics<parallel, parallel, arbitrary>, Chip<hw>,
    In<Arg<Array<bf16, N, N>, BlockSpec<Block<128, 128>, [](auto i, auto, auto k) { return idx(i, k); }>>,
       Arg<Array<bf16, N, N>, BlockSpec<Block<128, 128>, [](auto, auto j, auto k) { return idx(k, j); }>>>,
    Out<Arg<Array<float, N, N>, BlockSpec<Block<128, 128>, [](auto i, auto j, auto) { return idx(i, j); }>>>>;
constexpr auto tiny_body = [](auto x, auto y, auto out) {
    const auto p = dot(load(x), load(y));
    if (program_id(2) == 0)
        store(out, p);
    else
        store(out, load(out) + p);
};
template <index_t N>
void expect_tiny_step(const report& r) {
    const double n = double(N / 128) * (N / 128) * (N / 128), tiles = double(N / 128) * (N / 128);
    // Every step: its overhead, the issue of the next step's two 32 KiB fetches and the 128³ MXU
    // product (the busiest unit of the body). The fetches, issued one step ahead, are hidden:
    // L + 2·(32 KiB + r0 + d·B·η)/(B·η) ≈ 0.31 us < the step. Once per output tile, a write
    // issue. Exposed: the prologue's first fetches (issue, latency, both transfers) and the
    // last write-back (latency and transfer).
    const double C = 2.0 * 128 * 128 * 128 / hw.peak_bf16_flops;
    const double fetch = 128 * 128 * 2 + hw.dma_run_cost_bytes + hw.dma_descriptor_s * bw;
    const double write = 128 * 128 * 4 + hw.dma_run_cost_bytes + hw.dma_descriptor_s * bw;
    const double expected = n * (o + 2 * issue + C) + tiles * issue + (issue + lat + 2 * fetch / bw) +
                            (lat + write / bw);
    EXPECT_NEAR(r.device_time, expected, 0.01 * expected) << r;
    // The whole steady-state step is the quoted 0.35 us (docs/model.md §9), within 5%.
    EXPECT_NEAR(r.device_time / n, 0.35e-6, 0.05 * 0.35e-6) << N;
    EXPECT_LT(r.exposed_dma, 0.02 * r.device_time) << r;
    // Steady periods fast-forwarded (N > 1024) still attribute every exposed wait to an operand.
    double sum = r.body_exposed_dma;
    for (const auto& op : r.operands) sum += op.exposed_dma;
    EXPECT_NEAR(sum, r.exposed_dma, 1e-9 * r.device_time);
    EXPECT_EQ(r.bound, "step overhead") << r;
}
}  // namespace

TEST(TimingKnownAnswer, TinyBlockMatmulStepIsTheQuotedStep) {
    expect_tiny_step<1024>(Tiny<1024>{}.predict(tiny_body));
    expect_tiny_step<4096>(Tiny<4096>{}.predict(tiny_body));
    expect_tiny_step<8192>(Tiny<8192>{}.predict(tiny_body));
}

TEST(TimingKnownAnswer, TimingOnlyPredictsTheSameTime) {
    for (double C : {1e-6, 40e-6}) {
        const report full = run<Copy<2>>(C);
        const report fast = run<Copy<2>>(C, true);
        EXPECT_EQ(full.device_time, fast.device_time);
        EXPECT_EQ(full.hbm_bytes, fast.hbm_bytes);
        EXPECT_EQ(full.stats.steps, fast.stats.steps);
    }
}

TEST(Report, PerStepBreakdownCoversEveryStep) {
    const report r = run<Copy<2>>(1e-6);
    ASSERT_EQ(r.steps.size(), static_cast<std::size_t>(n_steps));
    double overhead = 0;
    for (const auto& s : r.steps) {
        EXPECT_GE(s.end, s.begin);
        overhead += s.overhead;
    }
    EXPECT_NEAR(overhead, n_steps * o, 1e-12);
    EXPECT_NEAR(r.core[0].overhead, n_steps * o, 1e-12);
    EXPECT_EQ(r.core[0].vmem_high_water, static_cast<index_t>(4 * X));  // 2 operands x 2 slots
}

TEST(Report, NegativeChargeIsC1) {
    try {
        (void)run<Copy<2>>(-1e-6);
        FAIL();
    } catch (const ptpu::error& e) {
        EXPECT_EQ(e.rule(), "C1");
    }
}

// ---- DMA shape costs (docs/model.md, "DMA shape costs") ----------------------------------------

namespace {
constexpr index_t nb = 16;  // blocks of (512, 512) bf16 = 512 KiB
// The same blocks cut from a wide row-major array (512 rows of 1 KiB each) or stacked (one run).
using Wide = Array<bf16, 512, nb * 512>;
using Tall = Array<bf16, nb * 512, 512>;
using WideCopy = pallas_call<Grid<nb>, Chip<hw>,
                             In<Arg<Wide, BlockSpec<Block<512, 512>, [](auto i) { return idx(0, i); }>>>,
                             Out<Arg<Wide, BlockSpec<Block<512, 512>, [](auto i) { return idx(0, i); }>>>>;
using TallCopy = pallas_call<Grid<nb>, Chip<hw>,
                             In<Arg<Tall, BlockSpec<Block<512, 512>, [](auto i) { return idx(i, 0); }>>>,
                             Out<Arg<Tall, BlockSpec<Block<512, 512>, [](auto i) { return idx(i, 0); }>>>>;
constexpr auto copy_body = [](auto in, auto out) {
    if (!timing_only()) out.uncharged_array() = in.uncharged_array();
};

// A kernel fetching 256 KiB per step from HBM itself, in `Pieces` async copies.
constexpr index_t rows_per_step = 512;
using Src = Array<float, nb * rows_per_step, 128>;
template <index_t Pieces>
using Gather = pallas_call<Grid<nb>, Chip<hw>, In<Arg<Src, BlockSpec<Full, zero_map, any>>>,
                           Out<Arg<Array<float, 8, 128>, BlockSpec<Full, zero_map, vmem>>>,
                           Scratch<vmem, float, rows_per_step, 128>, Scratch<semaphore, dma_semaphore, 1>>;
template <index_t Pieces>
struct gather_body {
    template <class S, class O, class B, class M>
    void operator()(S src, O, B buf, M sem) const {
        constexpr index_t r = rows_per_step / Pieces;
        const index_t base = program_id(0) * rows_per_step;
        for (index_t p = 0; p < Pieces; ++p)
            make_async_copy(src.at(ds(base + p * r, r), ds(0, 128)), buf.at(ds(p * r, r), ds(0, 128)), sem.at(0))
                .start();
        for (index_t p = 0; p < Pieces; ++p)
            make_async_copy(src.at(ds(base + p * r, r), ds(0, 128)), buf.at(ds(p * r, r), ds(0, 128)), sem.at(0))
                .wait();
    }
};
}  // namespace

TEST(TimingKnownAnswer, StridedBlockCostsMoreThanContiguous) {
    const report wide = WideCopy{}.predict(copy_body), tall = TallCopy{}.predict(copy_body);
    EXPECT_EQ(wide.hbm_bytes, tall.hbm_bytes);
    EXPECT_GT(wide.device_time, tall.device_time);
    // Both are DMA-bound (HBM never idles after the first fetch), so they differ by the run costs
    // alone: 2·nb DMAs of 512 runs against one run each.
    const double extra = 2 * nb * 511 * hw.dma_run_cost_bytes / bw;
    EXPECT_NEAR(wide.device_time - tall.device_time, extra, 0.05 * extra) << wide << tall;
}

TEST(TimingKnownAnswer, ManySmallDmasCostMoreThanFewLarge) {
    const report many = Gather<64>{}.predict(gather_body<64>{});
    const report few = Gather<2>{}.predict(gather_body<2>{});
    EXPECT_EQ(many.hbm_bytes, few.hbm_bytes);
    // Per step, 64 copies of 4 KiB: the core issues them back to back (64·i); each moves in
    // (4 KiB + r0)/(B·η) + d ≈ 16 ns < i, so HBM keeps up and the wait ends with the last one's
    // latency and transfer: o + 64·i + L + c4. Two copies of 128 KiB: HBM is busy from the
    // first's arrival (the second issue overlaps its transfer): o + i + L + 2·c128. The prologue
    // and epilogue are the same for both.
    const double c4 = (4096 + hw.dma_run_cost_bytes) / bw + hw.dma_descriptor_s;
    const double c128 = (131072 + hw.dma_run_cost_bytes) / bw + hw.dma_descriptor_s;
    const double per_step = 62 * issue + c4 - 2 * c128 + issue;
    EXPECT_NEAR(many.device_time - few.device_time, nb * per_step, 0.03 * nb * per_step) << many << few;
    EXPECT_GT(many.device_time, few.device_time);
}

// ---- Per-operand attribution --------------------------------------------------------------------

namespace {
// Two inputs, one of them a large block fetched every step (the bottleneck) and one small.
using BigIn = Array<float, n_steps * rows, cols>;
using SmallIn = Array<float, n_steps * 8, 128>;
using Attributed =
    pallas_call<Grid<n_steps>, Chip<hw>, VmemLimit<(64 << 20)>,
                In<Arg<BigIn, BlockSpec<Block<rows, cols>, row_map>, "weights">,
                   Arg<SmallIn, BlockSpec<Block<8, 128>, row_map>>>,
                Out<Arg<SmallIn, BlockSpec<Block<8, 128>, row_map>, "y">>>;
}  // namespace

TEST(Report, ExposedDmaPerOperandAndNames) {
    const report r = Attributed{}.predict([](auto, auto, auto o) { charge(work{.explicit_seconds = 1e-6}); (void)o; });
    ASSERT_EQ(r.operands.size(), 3u);
    EXPECT_EQ(r.operands[0].name, "weights");
    EXPECT_EQ(r.operands[1].name, "in1");  // unnamed: by position
    EXPECT_EQ(r.operands[2].name, "y");
    EXPECT_EQ(r.operand_names[0], "weights");
    EXPECT_EQ(r.operands[0].bytes, static_cast<index_t>(n_steps * X));
    EXPECT_EQ(r.operands[0].dmas, n_steps);
    EXPECT_EQ(r.operands[2].bytes, n_steps * 8 * 128 * 4);
    // Every exposed wait is attributed to an operand, and the 4 MiB weights cause nearly all of it.
    double sum = r.body_exposed_dma;
    for (const auto& o : r.operands) sum += o.exposed_dma;
    EXPECT_NEAR(sum, r.exposed_dma, 1e-12 * r.device_time);
    EXPECT_GT(r.operands[0].exposed_dma, 0.9 * r.exposed_dma) << r;
    EXPECT_EQ(r.bound_operand, "weights");
    EXPECT_EQ(r.bound, "HBM");
    // The same attribution with the fast lane off (every op simulated): per-step rows on.
    Attributed k{};
    k.options.per_step = per_step_rows::always;
    const report full = k.predict([](auto, auto, auto o) { charge(work{.explicit_seconds = 1e-6}); (void)o; });
    EXPECT_NEAR(full.operands[0].exposed_dma, r.operands[0].exposed_dma, 1e-9 * r.device_time);
    std::ostringstream table, text;
    print_steps(table, full);
    text << r;
    EXPECT_NE(table.str().find("exposed DMA"), std::string::npos);
    // Step 0 waits for the prologue's fetch of the weights (bit 1 + 0), and the table says so.
    ASSERT_FALSE(full.steps.empty());
    EXPECT_TRUE(full.steps[0].waited_on & (1u << 1)) << table.str();
    EXPECT_NE(table.str().find(" weights"), std::string::npos) << table.str();
    EXPECT_NE(text.str().find("weights"), std::string::npos) << text.str();
}

// ---- Edge blocks' runs (docs/model.md, "DMA shape costs") ----------------------------------------

namespace {
// (256, 1000) f32 in (256, 512) column blocks: block 0 is 256 runs of 2048 B; the edge block 1
// (S34) has 488 columns, so 256 runs of 1952 B. Buffered<1> on both sides serialises the DMAs,
// so each moves alone on the channel: its span lasts L + X_c/(B·η).
using EdgeArr = Array<float, 256, 1000>;
using EdgeBlk = BlockSpec<Block<256, 512>, [](auto i) { return idx(0, i); }, Buffered<1>>;
using EdgeCopy = pallas_call<Grid<2>, Chip<hw>, In<Arg<EdgeArr, EdgeBlk>>, Out<Arg<EdgeArr, EdgeBlk>>>;
// (4, 9, 512) f32 in (2, 8, 512) blocks: a whole block is 2 runs of 16 KiB (a (8, 512) plane
// each); the edge block of dim 1 holds one row per plane, 2 runs of 2 KiB, where its nominal run
// would count one.
using Edge3Arr = Array<float, 4, 9, 512>;
using Edge3Blk = BlockSpec<Block<2, 8, 512>, [](auto i, auto j) { return idx(i, j, 0); }, Buffered<1>>;
using Edge3Copy =
    pallas_call<Grid<2, 2>, Chip<hw>, In<Arg<Edge3Arr, Edge3Blk>>, Out<Arg<Edge3Arr, Edge3Blk>>>;

// Equation of docs/model.md: X_c = X + ceil(X/r)·r0 + d·B·η, here in seconds once alone.
double alone(double bytes, double runs) {
    return lat + (bytes + runs * hw.dma_run_cost_bytes + hw.dma_descriptor_s * bw) / bw;
}
// The far DMA spans of `bytes` bytes: their durations.
std::vector<double> spans_of(const report& r, std::int64_t bytes) {
    std::vector<double> d;
    for (const sim::span& s : r.timeline)
        if (s.track == sim::span::track::dma && s.far && s.bytes == bytes) d.push_back(s.end - s.begin);
    return d;
}
// No two far DMA spans overlap (the known answers above assume each DMA alone on HBM).
bool serial(const report& r) {
    std::vector<std::pair<double, double>> v;
    for (const sim::span& s : r.timeline)
        if (s.track == sim::span::track::dma && s.far) v.emplace_back(s.begin, s.end);
    std::sort(v.begin(), v.end());
    for (std::size_t k = 1; k < v.size(); ++k)
        if (v[k].first < v[k - 1].second - 1e-15) return false;
    return true;
}
}  // namespace

TEST(TimingKnownAnswer, EdgeBlockDmaChargesItsOwnRuns) {
    constexpr double whole = 256 * 512 * 4, edge = 256 * 488 * 4;
    const double t_whole = alone(whole, 256), t_edge = alone(edge, 256);
    const double t_nominal = alone(edge, std::ceil(edge / 2048));  // 244 runs of the nominal 2048 B
    ASSERT_EQ(std::ceil(edge / 2048), 244);
    ASSERT_GT(t_edge - t_nominal, 0.5 * 12 * hw.dma_run_cost_bytes / bw);
    static const host_array<EdgeArr> x;
    const auto body = [](auto in, auto out) {
        if (!timing_only()) out.uncharged_array() = in.uncharged_array();
    };
    EdgeCopy k{{.timeline = true}};
    auto [y, full] = k(body, x);
    const report fast = EdgeCopy{{.timeline = true}}.predict(body);
    for (const report* r : std::array<const report*, 2>{&full, &fast}) {
        ASSERT_TRUE(serial(*r));
        const std::vector<double> w = spans_of(*r, static_cast<std::int64_t>(whole));
        const std::vector<double> e = spans_of(*r, static_cast<std::int64_t>(edge));
        ASSERT_EQ(w.size(), 2u);  // fetch and write-back of each block
        ASSERT_EQ(e.size(), 2u);
        for (double t : w) EXPECT_NEAR(t, t_whole, 1e-9 * t_whole);
        for (double t : e) {
            EXPECT_NEAR(t, t_edge, 1e-9 * t_edge);
            EXPECT_GT(std::abs(t - t_nominal), 0.5 * (t_edge - t_nominal));
        }
    }
    EXPECT_EQ(full.device_time, fast.device_time);
}

TEST(TimingKnownAnswer, EdgeBlockOfAMajorDimCountsItsRuns) {
    constexpr double whole = 2 * 8 * 512 * 4, edge = 2 * 1 * 512 * 4;
    const double t_edge = alone(edge, 2);
    const double t_nominal = alone(edge, std::ceil(edge / (8 * 512 * 4)));  // one run of 16 KiB
    const report r = Edge3Copy{{.timeline = true}}.predict([](auto, auto) {});
    ASSERT_TRUE(serial(r));
    const std::vector<double> w = spans_of(r, static_cast<std::int64_t>(whole));
    const std::vector<double> e = spans_of(r, static_cast<std::int64_t>(edge));
    ASSERT_EQ(w.size(), 4u);
    ASSERT_EQ(e.size(), 4u);
    for (double t : w) EXPECT_NEAR(t, alone(whole, 2), 1e-9 * t);
    for (double t : e) {
        EXPECT_NEAR(t, t_edge, 1e-9 * t_edge);
        EXPECT_GT(t - t_nominal, 0.5 * hw.dma_run_cost_bytes / bw);
    }
}

namespace {
// emit_pipeline's tiling option (S35): a (256, 600) f32 array in (256, 512) blocks; the edge
// block's 88 columns are DMA'd rounded up to the lane tile, 128 columns: 256 runs of 512 B (not
// the 64 of the nominal 2048 B run); without tiling 256 runs of 352 B.
using TArr = Array<float, 256, 600>;
using TAny = BlockSpec<Full, zero_map, any>;
using TOuter = pallas_call<Grid<>, Chip<hw>, In<Arg<TArr, TAny>>, Out<Arg<TArr, TAny>>>;
using TBlk = BlockSpec<Block<256, 512>, [](index_t j) { return idx(0, j); }, Buffered<1>>;
}  // namespace

TEST(TimingKnownAnswer, TiledEdgeBlockDmaTakesTheTiledRuns) {
    for (const bool tiled : {true, false}) {
        const report r = TOuter{{.timeline = true}}.predict([&](auto xh, auto oh) {
            emit_pipeline([](auto, auto) {}, {2}, in_specs<TBlk>, out_specs<TBlk>, {.tiling = tiled})(xh, oh);
        });
        ASSERT_TRUE(serial(r));
        const double edge = 256.0 * (tiled ? 128 : 88) * 4;
        const std::vector<double> e = spans_of(r, static_cast<std::int64_t>(edge));
        ASSERT_EQ(e.size(), 2u) << tiled;
        for (double t : e) {
            EXPECT_NEAR(t, alone(edge, 256), 1e-9 * t) << tiled;
            EXPECT_GT(t - alone(edge, std::ceil(edge / 2048)), 0.5 * hw.dma_run_cost_bytes / bw) << tiled;
        }
    }
}
