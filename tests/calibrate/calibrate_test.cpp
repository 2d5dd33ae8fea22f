// calibrate (include/ptpu/calibrate/): the CSV table and its rules (CAL1, CAL3), the fit's rule
// (CAL2), and the fit itself on tables a known chip generates: it recovers that chip's fields, it
// reports the residuals of a noisy table, and a chip fitted on half a table predicts the other half.
#include <gtest/gtest.h>

#include <ptpu/calibrate/fit.hpp>
#include <ptpu/ptpu.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "synthetic_table.hpp"

using namespace ptpu;
using namespace ptpu::calibration;

namespace {

using calibration_test::measured_by;
using calibration_test::shapes;
using calibration_test::truth;

double field_of(const result& r, field f) {
    for (const field_change& x : r.fields)
        if (x.which == f) return x.after;
    return -1;
}

std::string rule_of(const std::string& csv) {
    std::istringstream in(csv);
    try {
        (void)read_csv(in);
    } catch (const error& e) {
        return e.rule() + " | " + e.what();
    }
    return "no error";
}

}  // namespace

TEST(CalibrateCsv, ReadsWhatItWrites) {
    std::istringstream in(
        "# measured on one v5e, device times from the profiler\n"
        "time_us, kind,dtype,m,n,k,bm,bn,bk,buffers\n"
        "\n"
        "12.5,copy,f32,4096,1024,0,512,1024,0,2\n"
        "1578,matmul,bf16,4096,4096,4096,512,512,512,1\r\n");
    const std::vector<measurement> rows = read_csv(in);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].kind, family::copy);
    EXPECT_EQ(rows[0].type, dtype::f32);
    EXPECT_EQ(rows[0].m, 4096);
    EXPECT_EQ(rows[0].bn, 1024);
    EXPECT_EQ(rows[0].buffers, 2);
    EXPECT_DOUBLE_EQ(rows[0].seconds, 12.5e-6);
    EXPECT_EQ(rows[0].line, 4);
    EXPECT_EQ(rows[1].kind, family::matmul);
    EXPECT_EQ(rows[1].type, dtype::bf16);
    EXPECT_EQ(rows[1].bk, 512);
    EXPECT_EQ(rows[1].buffers, 1);
    EXPECT_DOUBLE_EQ(rows[1].seconds, 1578e-6);
    std::ostringstream out;
    write_csv(out, rows);
    std::istringstream back(out.str());
    const std::vector<measurement> again = read_csv(back);
    ASSERT_EQ(again.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(again[i].kind, rows[i].kind);
        EXPECT_EQ(again[i].m, rows[i].m);
        EXPECT_EQ(again[i].bk, rows[i].bk);
        EXPECT_DOUBLE_EQ(again[i].seconds, rows[i].seconds);  // every digit written (µs to s: an ulp)
    }
}

TEST(CalibrateCsv, MalformedRowsAreCAL1WithTheirLine) {
    const std::string header = "kind,dtype,m,n,k,bm,bn,bk,buffers,time_us\n";
    const std::string good = "copy,f32,64,128,0,8,128,0,2,1.5\n";
    struct bad_case {
        std::string csv, says;
    };
    const bad_case cases[] = {
        {"", "no header line"},
        {"kind,dtype,m,n,k,bm,bn,bk,buffers\n", "the header has 9 columns"},
        {"kind,dtype,m,n,k,bm,bn,bk,buffers,time\n", "no column 'time_us'"},
        {header + good + "copy,f32,64,128,0,8,128,0,2\n", "line 3: the row has 9 cells"},
        {header + "gemm,f32,64,128,0,8,128,0,2,1\n", "line 2: kind is 'gemm'"},
        {header + "copy,f16,64,128,0,8,128,0,2,1\n", "line 2: dtype is 'f16'"},
        {header + "copy,f32,64x,128,0,8,128,0,2,1\n", "line 2: m is '64x', not an integer"},
        {header + "copy,f32,64,128,0,0,128,0,2,1\n", "line 2: bm is 0, not positive"},
        {header + "matmul,f32,64,128,0,8,128,8,2,1\n", "line 2: k is 0, not positive"},
        {header + "copy,f32,64,128,8,8,128,0,2,1\n", "line 2: a copy with k or bk not 0"},
        {header + "copy,f32,64,128,0,8,128,0,3,1\n", "line 2: buffers is 3"},
        {header + "copy,f32,64,128,0,8,128,0,2,fast\n", "line 2: time_us is 'fast'"},
        {header + "copy,f32,64,128,0,8,128,0,2,-4\n", "line 2: time_us is -4, not a positive"},
    };
    for (const bad_case& c : cases) {
        const std::string got = rule_of(c.csv);
        EXPECT_EQ(got.substr(0, 4), "CAL1") << c.csv << " -> " << got;
        EXPECT_NE(got.find(c.says), std::string::npos) << c.csv << " -> " << got;
        EXPECT_NE(got.find("ptpu[CAL1] calibrate::read_csv: "), std::string::npos) << got;
    }
    EXPECT_EQ(rule_of(header + good), "no error");
}

TEST(CalibrateCsv, UnreadableFileIsCAL3) {
    try {
        (void)read_csv(std::string("/nonexistent-dir/times.csv"));
        FAIL() << "no error";
    } catch (const error& e) {
        EXPECT_EQ(e.rule(), "CAL3");
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/times.csv"), std::string::npos);
    }
    EXPECT_THROW(write_csv(std::string("/nonexistent-dir/times.csv"), {}), error);
}

TEST(Calibrate, UnusableTablesAndOptionsAreCAL2) {
    const std::vector<measurement> rows = measured_by(tpu::v5e, {shapes()[0], shapes()[3]});
    const auto rule = [](auto&& f) {
        try {
            f();
        } catch (const error& e) {
            return e.rule() + " | " + e.what();
        }
        return std::string("no error");
    };
    EXPECT_EQ(rule([&] { (void)calibrate(tpu::v5e, std::vector<measurement>{}); }).substr(0, 4), "CAL2");
    EXPECT_NE(rule([&] { (void)calibrate(tpu::v5e, std::vector<measurement>{}); }).find("0 measurements for 3 fields"),
              std::string::npos);
    EXPECT_NE(rule([&] { (void)calibrate(tpu::v5e, rows, {.fields = {}}); }).find("CAL2 | ptpu[CAL2] calibrate: no field"),
              std::string::npos);
    EXPECT_NE(rule([&] { (void)calibrate(tpu::v5e, rows, {.fields = {field::dma_latency, field::dma_latency}}); })
                  .find("dma_latency_s listed twice"),
              std::string::npos);
    chip zero = tpu::v5e;
    zero.dma_latency_s = 0;
    EXPECT_NE(rule([&] { (void)calibrate(zero, rows, {.fields = {field::dma_latency}}); }).find("CAL2"),
              std::string::npos);
    EXPECT_NE(rule([&] { (void)calibrate(tpu::v5e, rows, {.bound_factor = 1}); }).find("CAL2"), std::string::npos);
    // A row the model rejects names its line and the model's rule: bm 100 breaks the (8, 128)
    // tiling (15).
    std::vector<measurement> bad = rows;
    bad.push_back(bad[0]);
    bad.back().bm = 100;
    bad.back().line = 7;
    const std::string got = rule([&] { (void)calibrate(tpu::v5e, bad); });
    EXPECT_EQ(got.substr(0, 4), "CAL2") << got;
    EXPECT_NE(got.find("line 7"), std::string::npos) << got;
    EXPECT_NE(got.find("ptpu[15]"), std::string::npos) << got;
    chip broken = tpu::v5e;
    broken.dma_efficiency = 2;
    EXPECT_EQ(rule([&] { (void)calibrate(broken, rows); }).substr(0, 2), "H1");
}

TEST(Calibrate, RecoversTheFieldsOfTheChipThatMadeTheTable) {
    const std::vector<measurement> table = measured_by(truth, shapes());
    const result r = calibrate(tpu::v5e, table);
    // Noise-free: the fit lands on the generating chip's fields to within 1%.
    EXPECT_NEAR(field_of(r, field::step_overhead), truth.step_overhead_s, 0.01 * truth.step_overhead_s) << r;
    EXPECT_NEAR(field_of(r, field::dma_efficiency), truth.dma_efficiency, 0.01 * truth.dma_efficiency) << r;
    EXPECT_NEAR(field_of(r, field::dma_latency), truth.dma_latency_s, 0.01 * truth.dma_latency_s) << r;
    EXPECT_LT(r.max_error(), 0.002) << r;
    EXPECT_GT(r.median_error(false), 0.05) << r;  // the preset was well off before
    // Before/after of each field, and the fitted chip is a chip like any preset: valid (H1),
    // and the fields not fitted are the preset's.
    ASSERT_EQ(r.fields.size(), 3u);
    EXPECT_EQ(r.fields[0].which, field::step_overhead);
    EXPECT_EQ(r.fields[0].before, tpu::v5e.step_overhead_s);
    EXPECT_TRUE(chip_problem(r.fitted).empty());
    EXPECT_EQ(r.fitted.dma_issue_s, tpu::v5e.dma_issue_s);
    EXPECT_EQ(r.fitted.hbm_bytes_per_s, tpu::v5e.hbm_bytes_per_s);
    EXPECT_EQ(r.rows.size(), table.size());
    for (const row_fit& x : r.rows) EXPECT_NEAR(x.after, predict(r.fitted, x.row), 1e-15);
    // The fitted chip predicts a kernel as the generating chip does, to within the fit.
    const measurement m = shapes()[9];
    EXPECT_NEAR(predict(r.fitted, m), predict(truth, m), 0.002 * predict(truth, m));
    // Deterministic: the same table gives the same chip.
    const result again = calibrate(tpu::v5e, table);
    EXPECT_EQ(again.fitted.step_overhead_s, r.fitted.step_overhead_s);
    EXPECT_EQ(again.evaluations, r.evaluations);
}

TEST(Calibrate, NoisyTableReportsItsResiduals) {
    // ±4% multiplicative noise, from a fixed seed (std::mt19937's raw output is the same everywhere).
    std::vector<measurement> table = measured_by(truth, shapes());
    std::mt19937 g(12345);
    for (measurement& m : table) m.seconds *= 1 + 0.04 * (2.0 * g() / 4294967295.0 - 1);
    const result r = calibrate(tpu::v5e, table);
    std::ostringstream text;
    text << r;
    // The residuals are reported row by row and are the noise, not more: the noisy times are
    // within 4% of the truth's predictions, so the fitted chip's are within about twice that.
    EXPECT_LT(r.median_error(), 0.04) << r;
    EXPECT_LT(r.max_error(), 0.08) << r;
    EXPECT_LT(r.median_error(), r.median_error(false)) << r;
    for (const row_fit& x : r.rows) EXPECT_NE(x.error_after(), 0) << r;  // noise stays a residual
    // The fields land near the truth's: within 15% under this noise.
    EXPECT_NEAR(field_of(r, field::step_overhead), truth.step_overhead_s, 0.15 * truth.step_overhead_s) << r;
    EXPECT_NEAR(field_of(r, field::dma_efficiency), truth.dma_efficiency, 0.15 * truth.dma_efficiency) << r;
    EXPECT_NEAR(field_of(r, field::dma_latency), truth.dma_latency_s, 0.15 * truth.dma_latency_s) << r;
    EXPECT_NE(text.str().find("step_overhead_s"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("median |error|"), std::string::npos) << text.str();
}

TEST(Calibrate, HalfATablePredictsTheOtherHalf) {
    const std::vector<measurement> table = measured_by(truth, shapes());
    std::vector<measurement> fit_half, held_out;
    for (std::size_t i = 0; i < table.size(); ++i) (i % 2 ? held_out : fit_half).push_back(table[i]);
    const result r = calibrate(tpu::v5e, fit_half);
    double worst_before = 0, worst_after = 0;
    for (const measurement& m : held_out) {
        worst_before = std::max(worst_before, std::abs(predict(tpu::v5e, m) / m.seconds - 1));
        worst_after = std::max(worst_after, std::abs(predict(r.fitted, m) / m.seconds - 1));
    }
    EXPECT_LT(worst_after, 0.01) << r;
    EXPECT_GT(worst_before, 0.05) << r;
}
