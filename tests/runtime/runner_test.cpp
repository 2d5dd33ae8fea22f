// The runner on its own: one pipeline on one core with 1–4 buffers and lookahead (what
// emit_pipeline will drive), on random block-index sequences. With data, the body sees the
// right block in its window at every step (a gather through the pipeline); timing only, the
// repeated-steps lane writes exactly the op stream the full run writes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ptpu/runtime/runner.hpp"

namespace {

using namespace ptpu;

constexpr index_t blk = 8;       // elements per block
constexpr index_t n_blocks = 6;  // of the input array

struct sequences {
    std::vector<index_t> in;
};
constexpr index_tuple<max_rank> in_map(const index_t* p, const void* ctx) {
    index_tuple<max_rank> t{};
    t.v[0] = {static_cast<const sequences*>(ctx)->in[static_cast<std::size_t>(p[0])], -1};
    return t;
}
constexpr index_tuple<max_rank> out_map(const index_t* p, const void*) {
    index_tuple<max_rank> t{};
    t.v[0] = {p[0], -1};
    return t;
}
constexpr block_fn maps[2] = {&in_map, &out_map};

pipeline_desc gather(index_t n, int bc, bool lookahead) {
    pipeline_desc p;
    p.grid_rank = 1;
    p.grid[0] = n;
    p.n_in = 1;
    p.n_out = 1;
    for (int i = 0; i < 2; ++i) {
        operand_desc& o = p.ops[static_cast<std::size_t>(i)];
        o.role = i == 0 ? operand_role::input : operand_role::output;
        o.rank = 1;
        o.shape[0] = (i == 0 ? n_blocks : n) * blk;
        o.block_rank = 1;
        o.block[0] = block_dim{dim_kind::blocked, blk, 0, 0};
        o.buffer_count = i == 0 ? bc : 2;
        o.lookahead = i == 0 && lookahead;
    }
    return p;
}

struct copy_body {
    bool timing_only = false;
    static void run(void* self, core_memory& m) {
        if (static_cast<copy_body*>(self)->timing_only) return;
        std::memcpy(m.slots[1][static_cast<std::size_t>(m.cur[1])], m.slots[0][static_cast<std::size_t>(m.cur[0])],
                    blk * sizeof(float));
    }
};

struct result {
    std::vector<float> out;
    std::vector<stream::op> ops;
    run_stats stats;
    index_t repeated = 0;
};

result run(const pipeline_desc& p, const sequences& seq, bool timing_only) {
    const plan_tables t = analyze_pipeline(p, emit_pipeline_caps, 5, maps, &seq);
    EXPECT_TRUE(t.info.problem.ok());
    std::vector<float> in(static_cast<std::size_t>(n_blocks * blk));
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    result r;
    r.out.assign(static_cast<std::size_t>(p.steps() * blk), -1.0f);
    std::vector<std::vector<float>> slots(2 * max_buffers, std::vector<float>(blk));
    core_memory mem;
    for (std::size_t k = 0; k < max_buffers; ++k) {
        mem.slots[0][k] = reinterpret_cast<std::byte*>(slots[k].data());
        mem.slots[1][k] = reinterpret_cast<std::byte*>(slots[max_buffers + k].data());
    }
    const std::array<void*, max_operands> hbm{in.data(), r.out.data()};
    kernel_context kctx;
    kctx.grid_rank = 1;
    kctx.grid = p.grid;
    copy_body body{timing_only};
    runner_options ro;
    ro.timing_only = timing_only;
    runner rn(p, t, 0, maps, &seq, hbm, mem, kctx, body_call{&copy_body::run, &body}, ro, nullptr);
    for (stream::batch b = rn.next_batch(); !b.ops.empty(); b = rn.next_batch())
        r.ops.insert(r.ops.end(), b.ops.begin(), b.ops.end());
    r.stats = rn.stats();
    r.repeated = rn.repeated_steps();
    return r;
}

bool same_ops(const std::vector<stream::op>& a, const std::vector<stream::op>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].kind != b[i].kind || a[i].dma != b[i].dma || a[i].bytes != b[i].bytes || a[i].step != b[i].step ||
            a[i].work != b[i].work)
            return false;
    return true;
}

TEST(Runner, DeepBuffersAndLookaheadGatherTheRightBlocks) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const index_t n = 1 + static_cast<index_t>(rng() % 40);
        const int bc = 1 + static_cast<int>(rng() % 4);
        const bool look = bc >= 2 && rng() % 2 == 0;
        sequences seq;
        // Runs of repeated blocks, as a gather kernel sees them.
        while (static_cast<index_t>(seq.in.size()) < n) {
            const index_t b = static_cast<index_t>(rng() % n_blocks);
            for (unsigned k = 1 + rng() % 6; k > 0 && static_cast<index_t>(seq.in.size()) < n; --k)
                seq.in.push_back(b);
        }
        const pipeline_desc p = gather(n, bc, look);
        const result full = run(p, seq, false);
        for (index_t s = 0; s < n; ++s)
            for (index_t e = 0; e < blk; ++e)
                ASSERT_EQ(full.out[static_cast<std::size_t>(s * blk + e)], static_cast<float>(seq.in[s] * blk + e))
                    << "trial " << trial << " step " << s << " bc " << bc << " lookahead " << look;
        index_t runs = 1;
        for (index_t s = 1; s < n; ++s) runs += seq.in[s] != seq.in[s - 1];
        EXPECT_EQ(full.stats.op_dmas[0], runs);  // A4: one fetch per run of equal indices
        EXPECT_EQ(full.stats.op_dmas[1], n);
        const result fast = run(p, seq, true);
        EXPECT_TRUE(same_ops(full.ops, fast.ops)) << "trial " << trial << " bc " << bc << " lookahead " << look;
        EXPECT_EQ(fast.stats.dma_in, full.stats.dma_in);
        EXPECT_EQ(fast.stats.bytes_out, full.stats.bytes_out);
    }
}

TEST(Runner, RepeatedStepsWithThreeSlotsMatchTheFullRun) {
    // A long steady stream with bc = 3: the timing-only lane repeats steps (window slots moving
    // by one of three per step) and must write the full run's ops.
    sequences seq;
    for (index_t s = 0; s < 600; ++s) seq.in.push_back(s % n_blocks);
    const pipeline_desc p = gather(600, 3, false);
    const result full = run(p, seq, false);
    const result fast = run(p, seq, true);
    EXPECT_TRUE(same_ops(full.ops, fast.ops));
    EXPECT_EQ(full.stats.op_dmas[0], 600);
    EXPECT_EQ(full.repeated, 0);
    EXPECT_GT(fast.repeated, 580);  // all but the first steps and the last bc - 1
}

}  // namespace
