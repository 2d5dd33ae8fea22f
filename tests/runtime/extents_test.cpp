// Extent arithmetic (rule V3) below the front ends: the planner on pipeline_desc values (grids,
// element paddings), refs' slices and shapes, host_view sizes, the DMA engine's block regions for
// indices an index map computes at run time; then a short sample of the extents fuzz driver
// (extents_fuzz.hpp; the long run is benchmarks/fuzz_extents.cpp). Every overflow is a
// ptpu::error naming what overflowed, never UB (the ASan+UBSan preset runs these).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "extents_fuzz.hpp"

using namespace ptpu;

namespace {
template <class F>
std::string message_of(F&& fn) {
    try {
        fn();
    } catch (const ptpu::error& e) {
        return std::string(e.rule()) + "|" + e.what();
    }
    return "no error";
}
bool has(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}
constexpr index_t big = index_t{1} << 62;

index_tuple<max_rank> zero_block(const index_t*, const void*) {
    return {};
}
index_tuple<max_rank> row_block(const index_t* p, const void*) {
    index_tuple<max_rank> b{};
    b.v[0] = {p[0], -1};
    return b;
}
// An index map whose block index comes from host state (the context), as a map reading SMEM.
index_tuple<max_rank> host_block(const index_t*, const void* ctx) {
    index_tuple<max_rank> b{};
    b.v[0] = {*static_cast<const index_t*>(ctx), -1};
    return b;
}

// One f32 input of `shape` in (8, 128)-able blocks, on a grid.
pipeline_desc one_input(std::initializer_list<index_t> grid, index_t rows, index_t cols, block_dim b0) {
    pipeline_desc p;
    p.grid_rank = static_cast<int>(grid.size());
    int g = 0;
    for (index_t e : grid) p.grid[static_cast<std::size_t>(g++)] = e;
    p.n_in = 1;
    operand_desc& o = p.ops[0];
    o.rank = 2;
    o.block_rank = 2;
    o.shape = {rows, cols};
    o.block[0] = b0;
    o.block[1] = block_dim{dim_kind::blocked, cols, 0, 0};
    return p;
}
std::string plan_message(const pipeline_desc& p, const void* ctx = nullptr, block_fn map = &zero_block) {
    const block_fn maps[1] = {map};
    return message_of([&] { raise(analyze_pipeline(p, emit_pipeline_caps, 5, maps, ctx).info.problem); });
}
}  // namespace

TEST(ExtentsOverflow, GridStepCountIsV3NamingTheDim) {
    // 2^22 x 2^22 x 2^22 = 2^66 steps: the product overflows at dim 2.
    const std::string m = plan_message(one_input({1 << 22, 1 << 22, 1 << 22}, 8, 128, {dim_kind::blocked, 8, 0, 0}));
    EXPECT_TRUE(has(m, "V3|ptpu[V3]") && has(m, "dim 2") && has(m, "the grid's step count overflows")) << m;
    // {INT64_MAX}: the count fits, the planner's tables (steps x (operands + 2)) do not.
    const std::string t = plan_message(one_input({INT64_MAX}, 8, 128, {dim_kind::blocked, 8, 0, 0}));
    EXPECT_TRUE(has(t, "V3|ptpu[V3]") && has(t, "planner's tables")) << t;
    // A grid that fits is planned.
    EXPECT_EQ(plan_message(one_input({1, 1, 1}, 8, 128, {dim_kind::blocked, 8, 0, 0})), "no error");
}

TEST(ExtentsOverflow, ArrayBlockAndSlotBytesAreV3NamingOperandAndDim) {
    // 2^31 x 2^31 floats: 2^62 elements fit, 2^64 bytes do not.
    std::string m = plan_message(one_input({1}, index_t{1} << 31, index_t{1} << 31, {dim_kind::blocked, 8, 0, 0}));
    EXPECT_TRUE(has(m, "V3|") && has(m, "operand 0, dim 1") && has(m, "the array's bytes")) << m;
    // A block of 2^40 x 128 floats over a small array: its bytes fit (2^49); of 2^60 rows not.
    m = plan_message(one_input({1}, 8, 128, {dim_kind::blocked, index_t{1} << 60, 0, 0}));
    EXPECT_TRUE(has(m, "V3|") && has(m, "operand 0, dim 1") && has(m, "one block's bytes")) << m;
    // One row of 2^58 floats: block bytes 2^60 fit, the slot padded to 8 sublanes (2^63) not.
    pipeline_desc p = one_input({1}, 1, index_t{1} << 58, {dim_kind::blocked, 1, 0, 0});
    m = plan_message(p);
    EXPECT_TRUE(has(m, "V3|") && has(m, "operand 0") && has(m, "window slot's bytes (tile-padded)")) << m;
    // int8, an input and an output of 2^31 x 2^31 in two blocks of 2^61 bytes: each window's
    // two buffers fit (2^62), both windows (2^63) do not.
    p = one_input({2}, index_t{1} << 31, index_t{1} << 31, {dim_kind::blocked, index_t{1} << 30, 0, 0});
    p.ops[0].type = dtype::i8;
    p.n_out = 1;
    p.ops[1] = p.ops[0];
    p.ops[1].role = operand_role::output;
    const block_fn rows[2] = {&row_block, &row_block};
    auto windows = [&] { return message_of([&] { raise(analyze_pipeline(p, emit_pipeline_caps, 5, rows, nullptr).info.problem); }); };
    m = windows();
    EXPECT_TRUE(has(m, "V3|") && has(m, "operand 1") && has(m, "the windows' bytes")) << m;
    p.ops[0].buffer_count = p.ops[1].buffer_count = 1;  // one buffer each: fits
    EXPECT_EQ(windows(), "no error");
}

TEST(ExtentsOverflow, ElementPaddingNear2To62IsV3) {
    // dim 16 padded by 2^62 on both sides: 2^63 + 16 does not fit.
    std::string m = plan_message(one_input({1}, 16, 128, {dim_kind::element, 8, big, big}));
    EXPECT_TRUE(has(m, "V3|") && has(m, "operand 0, dim 0") && has(m, "dim + pad_lo + pad_hi")) << m;
    // Padded by 2^62 on one side: fits; an element offset near INT64_MAX is then out of bounds.
    const index_t start = INT64_MAX - 4;
    m = plan_message(one_input({1}, 16, 128, {dim_kind::element, 8, big, 0}), &start, &host_block);
    EXPECT_TRUE(has(m, "S34|") && has(m, "operand 0, dim 0")) << m;
    // A bounded slice ds(INT64_MAX - 1, 4): outside the array (S38), start + size never formed.
    pipeline_desc p = one_input({1}, 16, 128, {dim_kind::bounded_slice, 8, 0, 0});
    m = plan_message(p, nullptr, [](const index_t*, const void*) {
        index_tuple<max_rank> b{};
        b.v[0] = index_entry::of_slice(INT64_MAX - 1, 4);
        return b;
    });
    EXPECT_TRUE(has(m, "S38|") && has(m, "operand 0, dim 0")) << m;
}

TEST(ExtentsOverflow, RefSlicesNearInt64MaxAreR2AndShapesV3) {
    float buf[8 * 128] = {};
    const ref<float, vmem, 2> x(buf, {8, 128});
    std::string m = message_of([&] { (void)x.at(ds(INT64_MAX - 1, 4), ds(0, 128)); });
    EXPECT_TRUE(has(m, "R2|") && has(m, "outside dim 0 of extent 8")) << m;
    m = message_of([&] { (void)x.at(ds(0, 8), ds(4, INT64_MAX)); });
    EXPECT_TRUE(has(m, "R2|") && has(m, "outside dim 1 of extent 128")) << m;
    EXPECT_EQ(message_of([&] { (void)x.at(ds(8, 0), ds(0, 128)); }), "no error");  // empty, at the end
    // A contiguous ref whose strides or bytes overflow: V3 naming the dim.
    m = message_of([&] { (void)ref<const float, any, 2>(nullptr, {index_t{1} << 32, index_t{1} << 32}); });
    EXPECT_TRUE(has(m, "V3|") && has(m, "dim 0")) << m;
    m = message_of([&] { (void)ref<const float, any, 2>(nullptr, {index_t{1} << 31, index_t{1} << 31}); });
    EXPECT_TRUE(has(m, "V3|") && has(m, "bytes overflow")) << m;
    // A host_view of 2^66 elements.
    const host_view<const float> h{nullptr, 3, {1 << 22, 1 << 22, 1 << 22}};
    m = message_of([&] { (void)h.size(); });
    EXPECT_TRUE(has(m, "V3|") && has(m, "host_view, dim 2")) << m;
}

TEST(ExtentsOverflow, RegionOfAnIndexFromHostStateIsV3) {
    // What the DMA engine copies for a block index the planner never saw (a map reading host
    // state that changed): block 2^62 of 8 rows has no offset in index_t.
    const pipeline_desc p = one_input({1}, 64, 128, {dim_kind::blocked, 8, 0, 0});
    index_tuple<max_rank> b{};
    b.v[0] = {big, -1};
    std::string m = message_of([&] { (void)region_of(p.ops[0], b); });
    EXPECT_TRUE(has(m, "V3|") && has(m, "the block index of an input, dim 0: entry 4611686018427387904")) << m;
    // A large index that does have an offset: nothing to copy, nothing outside the array.
    b.v[0] = {big / 8, -1};
    const block_region r = region_of(p.ops[0], b);
    EXPECT_EQ(r.elems(), 0);
    // An element offset near INT64_MIN (start - pad_lo) and near INT64_MAX (its end).
    pipeline_desc e = one_input({1}, 64, 128, {dim_kind::element, 8, 4, 4});
    b.v[0] = {INT64_MIN + 2, -1};
    EXPECT_TRUE(has(message_of([&] { (void)region_of(e.ops[0], b); }), "V3|"));
    b.v[0] = {INT64_MAX - 2, -1};
    EXPECT_TRUE(has(message_of([&] { (void)region_of(e.ops[0], b); }), "V3|"));
    b.v[0] = {-big, -1};  // far before the array: fits, copies nothing
    EXPECT_EQ(region_of(e.ops[0], b).elems(), 0);
}

// The short sample of the fuzz driver: each case succeeds or is a ptpu::error, overflows are
// always errors and V3 never fires below 2^56; the sample must reach plans, runs and V3s.
TEST(ExtentsOverflow, FuzzSample) {
    const ptpu_extents_fuzz::totals t = ptpu_extents_fuzz::fuzz(7, 3000);
    EXPECT_EQ(t.failure, "");
    EXPECT_EQ(t.cases, 3000);
    EXPECT_GT(t.planned, 30);
    EXPECT_GT(t.ran, 10);
    EXPECT_GT(t.v3, 100);
    EXPECT_GT(t.errors, t.v3);
}
