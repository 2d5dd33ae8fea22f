// Pins rows of the check against public measurements (docs/model.md, "Checked against public
// measurements"): tokamax's Pallas grouped matmul, measured on 7x, v5p and v5e
// (benchmarks/model_check/ragged_dot_*.csv, with their source and license), predicted as the
// checker does (benchmarks/model_check/ragged_dot.hpp). Each row's absolute prediction is pinned
// tightly, so any model change that moves it shows here, and each must stay within the ±10% the
// docs report for it.
#include "../../benchmarks/model_check/ragged_dot.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace ragged_dot_check;

namespace {

const std::string dir = std::string(PTPU_SOURCE_DIR) + "/benchmarks/model_check";

struct pick {
    const char* chip;
    const char* kind;
    index_t lhs0, lhs1, rhs1, tm, tk, tn;  // as in the table (tiles as its config)
    double predicted_ms;                  // ptpu's prediction, pinned
    int buffers = 2;                      // input_buffer_count (3, 4: the grid as one inner pipeline)
};

// The row of the chip's table that `p` names (exactly one).
row find_row(const pick& p) {
    std::vector<row> found;
    for (const row& r : read_rows(dir + "/ragged_dot_" + p.chip + ".csv"))
        if (r.kind == p.kind && r.lhs0 == p.lhs0 && r.lhs1 == p.lhs1 && r.rhs1 == p.rhs1 &&
            r.tile_m == p.tm && r.tile_k == p.tk && r.tile_n == p.tn && r.buffers == p.buffers)
            found.push_back(r);
    EXPECT_EQ(found.size(), 1u) << p.chip << " " << p.kind;
    return found.empty() ? row{} : found.front();
}

}  // namespace

TEST(RaggedDotCheck, MetadataGivesMegabloxStepCounts) {
    // Groups of 100, 0, 156 and 256 rows in 128-row tiles: group 0 owns tile 0, group 2 starts
    // inside it (a second visit) and owns tile 1, group 3 owns tiles 2 and 3; the empty group
    // is skipped by gmm and visited once by tgmm (one more visit of tile 0, where it starts).
    const std::vector<std::int32_t> sizes = {100, 0, 156, 256};
    const metadata g = make_metadata(sizes, 512, 128, false);
    EXPECT_EQ(g.active, 5);
    EXPECT_EQ(g.offsets, (std::vector<std::int32_t>{0, 100, 100, 256, 512}));
    EXPECT_EQ(g.group_ids, (std::vector<std::int32_t>{0, 2, 2, 3, 3, 3, 3}));
    EXPECT_EQ(g.m_tile_ids, (std::vector<std::int32_t>{0, 0, 1, 2, 3, 3, 3}));
    const metadata t = make_metadata(sizes, 512, 128, true);
    EXPECT_EQ(t.active, 6);
    EXPECT_EQ(t.group_ids, (std::vector<std::int32_t>{0, 1, 2, 2, 3, 3, 3}));
    EXPECT_EQ(t.m_tile_ids, (std::vector<std::int32_t>{0, 0, 0, 1, 2, 3, 3}));
}

TEST(RaggedDotCheck, PinnedRowsPredictedWithinTenPercentOfTheirMeasuredTimes) {
    const auto groups = read_groups(dir + "/ragged_dot_groups.csv");
    const pick picks[] = {
        {"v7x", "gmm", 65536, 7168, 7168, 128, 7168, 1024, 4.812653},      // measured 5.281 ms
        {"v7x", "tgmm", 524288, 4096, 1536, 256, 2048, 1536, 9.478885},    // measured 9.667 ms
        {"v5p", "gmm_t", 131072, 1024, 7168, 128, 1792, 1024, 11.869650},  // measured 11.801 ms
        {"v5p", "tgmm", 131072, 7168, 1024, 128, 1792, 1024, 12.931445},   // measured 13.758 ms
        {"v5e", "gmm", 4096, 4096, 4096, 1024, 512, 1024, 0.749348},       // measured 0.763 ms
        // 4 lookahead buffers on both inputs: custom_buffered, as the kernel runs it.
        {"v7x", "tgmm", 131072, 7168, 1024, 256, 1792, 1024, 5.066692, 4},  // measured 5.196 ms
    };
    for (const pick& p : picks) {
        const row r = find_row(p);
        const ptpu::chip* hw = ptpu::tpu::find_preset(p.chip);
        ASSERT_NE(hw, nullptr);
        const double predicted = predict(r, groups.at(static_cast<std::size_t>(r.group_set)), *hw).device_time * 1e3;
        EXPECT_NEAR(predicted, p.predicted_ms, 1e-5 * p.predicted_ms) << p.chip << " " << p.kind;
        EXPECT_LE(std::abs(predicted / r.median_ms() - 1), 0.10) << p.chip << " " << p.kind;
    }
}
