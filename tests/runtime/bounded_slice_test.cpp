// Dynamic blocks (BoundedSlice, S38) on the runtime path, below the emit_pipeline front end: one
// pipeline on one core (the runner) with slices chosen at run time. The seed's dynamic-block
// example, each S38 error with the operand, step and values in its message, check 4 kept, and a
// short sample of the fuzz driver (bounded_fuzz.hpp; the long run is benchmarks/fuzz_bounded.cpp).
#include <gtest/gtest.h>

#include <string>

#include "bounded_fuzz.hpp"

namespace {

using namespace ptpu;
using ptpu_fuzz::fuzz_case;

fuzz_case seed_example() {
    fuzz_case c;
    c.mode = fuzz_case::copy_back;
    c.rank = 2;
    c.bdim = 0;
    c.D = 8;
    c.W = 128;
    c.N = 8;
    for (const auto& [lo, hi] : {std::pair<index_t, index_t>{0, 2}, {2, 3}, {3, 5}, {5, 8}}) {
        c.start.push_back(lo);
        c.size.push_back(hi - lo);
    }
    return c;
}

std::string error_of(const fuzz_case& c) {
    const plan_tables t =
        analyze_pipeline(ptpu_fuzz::describe(c), emit_pipeline_caps, 5, ptpu_fuzz::fuzz_maps, &c);
    try {
        raise(t.info.problem);
    } catch (const error& e) {
        return e.what();
    }
    return "no error";
}

bool has(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// The seed's example: slices [[0,2],[2,3],[3,5],[5,8]] of an (8, 128) f32 array, each the block
// of one step of both the input and the output, copied back exactly; each window sees its
// slice's size as its valid extent; with 1–4 input buffers, lookahead and poisoned padding.
TEST(BoundedSlice, SeedExampleCopiesTheSlicesBackExactly) {
    for (int bc = 1; bc <= 4; ++bc)
        for (int look = 0; look < 2; ++look) {
            fuzz_case c = seed_example();
            c.bc_in = bc;
            c.lookahead = look == 1 && bc >= 2;
            c.poison = look == 1;
            EXPECT_EQ(ptpu_fuzz::run_case(c), "") << "bc " << bc << " lookahead " << c.lookahead;
        }
}

// Each broken precondition of S38 is its own message, naming the operand, the dim, the block
// index, the step and grid point, and the values.
TEST(BoundedSlice, EachBadSliceIsItsOwnS38Message) {
    fuzz_case c = seed_example();
    c.size[1] = -3;
    std::string m = error_of(c);
    EXPECT_TRUE(has(m,
                    "ptpu[S38] emit_pipeline: a bounded_slice index map returned ds(start, size) with a "
                    "negative size") &&
                has(m,
                    "(operand 0, dim 0, block (ds(2, -3), 0) at step 1, iteration (1): ds(2, -3) on a dim "
                    "of 8 elements, bound 8)"))
        << m;

    c = seed_example();
    c.size[2] = 9;
    m = error_of(c);
    EXPECT_TRUE(has(m, "with size above the dim's bound n") && has(m, "ds(3, 9)") && has(m, "at step 2"))
        << m;

    c = seed_example();
    c.start[3] = 6;  // ds(6, 3): rows 6..8 of 8
    m = error_of(c);
    EXPECT_TRUE(has(m, "outside the array") && has(m, "ds(6, 3) on a dim of 8 elements") &&
                has(m, "at step 3"))
        << m;
    c.start[3] = -1;
    EXPECT_TRUE(has(error_of(c), "outside the array")) << error_of(c);

    // With tiling, the second-minor dim of an (8, 128) f32 array has tile 8 (S36): the seed's
    // starts 2, 3, 5 are misaligned, and the first one is reported.
    c = seed_example();
    c.tiling = true;
    m = error_of(c);
    EXPECT_TRUE(has(m, "ptpu[S38] emit_pipeline: with tiling, a bounded_slice start must be a multiple") &&
                has(m, "at step 1, iteration (1): ds(2, 1) on a dim of 8 elements, bound 8, tile 8"))
        << m;
    // Without tiling the same starts are fine (the seed's example above).
    EXPECT_EQ(error_of(seed_example()), "no error");
}

TEST(BoundedSlice, TilesFollowS36) {
    operand_desc o;
    o.rank = 2;
    o.shape = {64, 256};
    EXPECT_EQ(detail::dma_tile(o, 0, 5), 8);
    EXPECT_EQ(detail::dma_tile(o, 1, 5), 128);
    o.shape = {4, 256};  // doubled only while below min(dim, 8)
    EXPECT_EQ(detail::dma_tile(o, 0, 5), 4);
    o.type = dtype::bf16;
    o.shape = {64, 256};
    EXPECT_EQ(detail::dma_tile(o, 0, 5), 8);
    o.rank = 1;
    EXPECT_EQ(detail::dma_tile(o, 0, 5), 256);  // 1-D: packing x 128
    o.rank = 3;
    EXPECT_EQ(detail::dma_tile(o, 0, 5), 1);  // leading dims
    o.space = space_kind::smem;
    EXPECT_EQ(detail::dma_tile(o, 1, 5), 1);  // SMEM is never tiled
}

// Check 4 stays the planner's: a bounded_slice dim whose map returns a scalar.
index_tuple<max_rank> scalar_map(const index_t*, const void*) {
    return {};
}
TEST(BoundedSlice, AScalarOnABoundedDimIsCheck4) {
    const fuzz_case c = seed_example();
    const block_fn maps[2] = {&scalar_map, &ptpu_fuzz::out_map};
    const plan_tables t = analyze_pipeline(ptpu_fuzz::describe(c), emit_pipeline_caps, 5, maps, &c);
    EXPECT_EQ(t.info.problem.code, rule::r4);
}

// ds(start, -1) is a slice, not the scalar marker: S38's negative size, not check 4.
TEST(BoundedSlice, NegativeSizesStayDistinctFromScalars) {
    static_assert(idx(ds(3, -1))[0].is_slice() && idx(ds(3, -1))[0].slice_size() == -1);
    static_assert(!idx(3)[0].is_slice() && idx(ds(3, 0))[0].slice_size() == 0);
    static_assert(!(idx(ds(3, -1)) == idx(3)));
    fuzz_case c = seed_example();
    c.size[0] = -1;
    EXPECT_TRUE(has(error_of(c), "negative size")) << error_of(c);
}

// pallas_call has no bounded slices: check 18 is reported, not S38, whatever the slice.
TEST(BoundedSlice, PallasCallStillReportsCheck18) {
    fuzz_case c = seed_example();
    c.size[1] = 20;
    const plan_tables t = analyze_pipeline(ptpu_fuzz::describe(c), capabilities{2, 2, false, false, false}, 5,
                                           ptpu_fuzz::fuzz_maps, &c);
    EXPECT_EQ(t.info.problem.code, rule::s34);  // out of bounds before 18, as before S38
    c = seed_example();
    const plan_tables u = analyze_pipeline(ptpu_fuzz::describe(c), capabilities{2, 2, false, false, false}, 5,
                                           ptpu_fuzz::fuzz_maps, &c);
    EXPECT_EQ(u.info.problem.code, rule::r18);
}

// A plan made from good slices whose maps answer bad ones at run time (say, SMEM values changed
// by the body): the copies are clipped to the array and the slot, nothing is written outside.
TEST(BoundedSlice, SlicesThePlannerNeverSawStayInsideTheBuffers) {
    const fuzz_case good = seed_example();
    fuzz_case bad = good;
    bad.size = {20, -4, 8, 3};
    bad.start = {-5, 2, 7, 100};
    EXPECT_EQ(ptpu_fuzz::run_case(bad, &good), "");
}

// The fuzz driver's short sample: 3000 cases, valid, invalid and unplanned.
TEST(BoundedSlice, FuzzSample) {
    const ptpu_fuzz::fuzz_totals t = ptpu_fuzz::fuzz(20260808, 3000);
    EXPECT_EQ(t.failure, "");
    EXPECT_GT(t.valid, 1800);
    EXPECT_GT(t.invalid, 400);
    EXPECT_GT(t.unplanned, 200);
}

}  // namespace
