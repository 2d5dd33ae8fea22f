// Tests hw/presets.hpp: every preset against the table of docs/model.md §9, rule H1 (chip_problem,
// validate), preset lookup, and user-defined chips as non-type template parameters.
#include <gtest/gtest.h>

#include <ptpu/hw/presets.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace {

using ptpu::chip;
namespace tpu = ptpu::tpu;

constexpr std::int64_t MiB = std::int64_t{1} << 20;

// ---- Every preset is valid, at compile time -------------------------------------------------

static_assert(ptpu::chip_problem(tpu::v4).empty());
static_assert(ptpu::chip_problem(tpu::v5e).empty());
static_assert(ptpu::chip_problem(tpu::v5p).empty());
static_assert(ptpu::chip_problem(tpu::v6e).empty());
static_assert(ptpu::chip_problem(tpu::v7x).empty());
static_assert((ptpu::validate(tpu::v5e), true));  // validate is usable in constant expressions

constexpr bool all_presets_valid() {
    for (const chip* c : tpu::all_presets) {
        if (!ptpu::chip_problem(*c).empty()) return false;
    }
    return true;
}
static_assert(all_presets_valid());
static_assert(std::size(tpu::all_presets) == 5);

// ---- docs/model.md §9, written out again independently of the presets ------------------------

struct model_row {
    std::string_view name;
    int generation;
    int cores;
    bool megacore;
    int pallas_cores;
    double bf16_peak;   // per TC
    double int8_peak;   // per TC, 0 = n/a
    // Per device (docs/model.md, "The chip presets"): the chip's figure [src] on the megacore and
    // one-core chips; on 7x, two devices per chip, half of it (7.40e12 / 2, 206e9 / 2).
    double hbm_bw;
    std::int64_t hbm;
    std::int64_t vmem;  // per TC
    std::int64_t vmem_limit;
    std::int64_t smem;
    int mxus;
    int mxu_dim;
    double clock;  // 0 = unknown in the table (estimated in the preset)
    int vpu_alus;
    // docs/model.md §9: the whole steady-state step of the (128,128,128) bf16 matmul, 0.35 us on
    // v5e [meas]; the others scaled by clock (v4, v5p: 1.5 GHz / their clock) or, for v6e and 7x
    // (no usable clock), v5e's scalar-core time with their own 128³ MXU time (docs/model.md).
    double tiny_step;
};

constexpr model_row table[] = {
    {"v4", 4, 2, true, 2, 1.375e14, 0, 1.23e12, 34'400'000'000, 16 * MiB, 16 * MiB, 1 * MiB, 4, 128, 1.05e9,
     2, 0.35e-6 * 1.5 / 1.049},
    {"v5e", 5, 1, false, 1, 1.97e14, 3.94e14, 8.20e11, 17'200'000'000, 128 * MiB, 16 * MiB, 1 * MiB, 4, 128,
     1.5e9, 4, 0.35e-6},
    {"v5p", 5, 2, true, 2, 2.295e14, 4.59e14, 2.46e12, 103'000'000'000, 64 * MiB, 16 * MiB, 1 * MiB, 4, 128,
     1.75e9, 4, 0.30e-6},
    {"v6e", 6, 1, false, 1, 9.20e14, 1.84e15, 1.64e12, 34'400'000'000, 128 * MiB, 32 * MiB, 1 * MiB, 2, 256,
     0, 4, 0.333e-6},
    {"v7x", 7, 2, false, 1, 1.155e15, 0, 3.70e12, 103'000'000'000, 64 * MiB, 32 * MiB, 1 * MiB, 2, 256, 0, 4,
     0.332e-6},
};

TEST(ChipPresets, MatchTpuModelTable) {
    ASSERT_EQ(std::size(table), std::size(tpu::all_presets));
    for (std::size_t i = 0; i < std::size(table); ++i) {
        const model_row& r = table[i];
        const chip& c = *tpu::all_presets[i];
        SCOPED_TRACE(r.name);
        EXPECT_EQ(std::string_view(c.name), r.name);
        EXPECT_EQ(c.generation, r.generation);
        EXPECT_EQ(c.cores_per_chip, r.cores);
        EXPECT_EQ(c.megacore, r.megacore);
        EXPECT_EQ(c.pallas_cores(), r.pallas_cores);
        EXPECT_DOUBLE_EQ(c.peak_bf16_flops, r.bf16_peak);
        EXPECT_DOUBLE_EQ(c.peak_f32_default_flops(), r.bf16_peak);
        EXPECT_DOUBLE_EQ(c.peak_int8_ops, r.int8_peak);
        EXPECT_DOUBLE_EQ(c.hbm_bytes_per_s, r.hbm_bw);
        EXPECT_EQ(c.hbm_bytes, r.hbm);
        EXPECT_EQ(c.vmem_bytes, r.vmem);
        EXPECT_EQ(c.vmem_limit_bytes, r.vmem_limit);
        EXPECT_EQ(c.smem_bytes, r.smem);
        EXPECT_EQ(c.mxu_count, r.mxus);
        EXPECT_EQ(c.mxu_dim, r.mxu_dim);
        EXPECT_EQ(c.sublanes, 8);
        EXPECT_EQ(c.lanes, 128);
        EXPECT_EQ(c.vpu_alus_per_lane, r.vpu_alus);
        EXPECT_EQ(c.vmem_loads_per_cycle, 3);
        EXPECT_EQ(c.vmem_stores_per_cycle, 1);
        // The step decomposes into overhead, two DMA issues and the 128³ product (docs/model.md).
        const double tiny = c.step_overhead_s + 2 * c.dma_issue_s + 2.0 * 128 * 128 * 128 / c.peak_bf16_flops;
        EXPECT_NEAR(tiny, r.tiny_step, 0.01 * r.tiny_step) << r.name;
        if (r.clock > 0) {
            EXPECT_DOUBLE_EQ(c.clock_hz, r.clock);
        }
        // Every clock agrees with the MXU peak within 1% (v4's table clock is itself derived).
        const double mxu_clock = c.peak_bf16_flops / (2.0 * c.mxu_count * c.mxu_dim * c.mxu_dim);
        EXPECT_NEAR(c.clock_hz / mxu_clock, 1.0, 0.01);
        EXPECT_DOUBLE_EQ(c.vreg_ops_per_s(), c.vector_hz() * c.vpu_alus_per_lane);
        EXPECT_DOUBLE_EQ(c.eup_vregs_per_s(), c.vector_hz() * c.eup_vregs_per_cycle);
        // Overheads: documented estimates, within sane bounds.
        EXPECT_GT(c.dma_efficiency, 0.8);
        EXPECT_LE(c.dma_efficiency, 1.0);
        EXPECT_GT(c.dma_latency_s, 0.0);
        EXPECT_LT(c.dma_latency_s, 2e-6);
        EXPECT_GT(c.dma_issue_s, 0.0);
        EXPECT_LT(c.dma_issue_s, c.step_overhead_s);
    }
}

TEST(ChipPresets, OverheadDecisions) {
    // η re-derived from the fused MLP's 7.02 us per step [meas] under the shape costs: the
    // measured 756 GB/s (0.92 of spec) is its mix of strided and contiguous weight blocks.
    const chip& e = tpu::v5e;
    const double runs = 2 * 1152 + 1, bytes = 3 * 1152 * 384 * 4.0;
    EXPECT_NEAR((bytes + runs * e.dma_run_cost_bytes) / (e.hbm_bytes_per_s * e.dma_efficiency) +
                    3 * e.dma_descriptor_s,
                7.02e-6, 1e-12);
    EXPECT_NEAR(bytes / 7.02e-6 / e.hbm_bytes_per_s, 0.92, 0.005);
    EXPECT_DOUBLE_EQ(tpu::v7x.dma_efficiency, 0.87);      // the 7x XLA-copy measurement
    EXPECT_DOUBLE_EQ(tpu::v5p.hbm_bytes_per_s, 2.46e12);  // tpu_info, not the Cloud page
    EXPECT_NEAR(tpu::v6e.clock_hz, 3.509e9, 1e6);         // [est] peak / (2 · 256² · 2)
    EXPECT_NEAR(tpu::v7x.clock_hz, 4.406e9, 1e6);
    EXPECT_NEAR(tpu::v5e.vreg_ops_per_s(), 6e9, 1);
}

TEST(ChipPresets, MegacoreAndPallasCores) {
    EXPECT_TRUE(tpu::v4.megacore);
    EXPECT_FALSE(tpu::v5e.megacore);
    EXPECT_TRUE(tpu::v5p.megacore);
    EXPECT_FALSE(tpu::v6e.megacore);
    EXPECT_FALSE(tpu::v7x.megacore);  // two TensorCores, but each is its own device
    EXPECT_EQ(tpu::v4.pallas_cores(), 2);
    EXPECT_EQ(tpu::v5e.pallas_cores(), 1);
    EXPECT_EQ(tpu::v5p.pallas_cores(), 2);
    EXPECT_EQ(tpu::v6e.pallas_cores(), 1);
    EXPECT_EQ(tpu::v7x.pallas_cores(), 1);
}

static_assert(tpu::find_preset("v5e") == &tpu::v5e);
static_assert(tpu::find_preset("v7x") == &tpu::v7x);
static_assert(tpu::find_preset("v5") == nullptr);  // no prefix matches
static_assert(tpu::find_preset("") == nullptr);

TEST(ChipPresets, FindPreset) {
    for (const chip* c : tpu::all_presets) EXPECT_EQ(tpu::find_preset(c->name), c);
    EXPECT_EQ(tpu::find_preset("v4"), &tpu::v4);
    EXPECT_EQ(tpu::find_preset("v6e"), &tpu::v6e);
    EXPECT_EQ(tpu::find_preset("v8"), nullptr);
    EXPECT_EQ(tpu::find_preset("V5E"), nullptr);
    EXPECT_EQ(tpu::find_preset("v5e "), nullptr);
}

// ---- A user-defined chip is just another value, usable as an NTTP -----------------------------

constexpr chip calibrated_v5e = [] {
    chip c = tpu::v5e;
    c.step_overhead_s = 0.30e-6;  // as if measured by the user
    const char name[] = "my-v5e";
    for (std::size_t i = 0; i < sizeof name; ++i) c.name[i] = name[i];
    return c;
}();

template <chip C>
struct on_chip {
    static constexpr double overhead = C.step_overhead_s;
    static constexpr int cores = C.pallas_cores();
};

static_assert(ptpu::chip_problem(calibrated_v5e).empty());
static_assert(on_chip<calibrated_v5e>::overhead == 0.30e-6);
static_assert(on_chip<tpu::v5e>::overhead == tpu::v5e.step_overhead_s);
static_assert(on_chip<tpu::v5p>::cores == 2);
static_assert(!std::is_same_v<on_chip<calibrated_v5e>, on_chip<tpu::v5e>>);
static_assert(std::is_same_v<on_chip<tpu::v5e>, on_chip<tpu::v5e>>);

TEST(UserChip, WorksAsTemplateArgument) {
    EXPECT_EQ(std::string_view(calibrated_v5e.name), "my-v5e");
    EXPECT_EQ(on_chip<calibrated_v5e>::cores, 1);
    EXPECT_DOUBLE_EQ(on_chip<calibrated_v5e>::overhead, 0.30e-6);
    EXPECT_NO_THROW(ptpu::validate(calibrated_v5e));
    EXPECT_EQ(tpu::find_preset("my-v5e"), nullptr);  // only presets are found
}

// ---- Rule H1 ---------------------------------------------------------------------------------

struct broken_case {
    const char* label;
    void (*breaks)(chip&);
    std::string_view field;  // must appear in chip_problem()
};

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

const broken_case broken_cases[] = {
    {"empty name", [](chip& c) { c.name[0] = '\0'; }, "name"},
    {"unterminated name",
     [](chip& c) {
         for (char& ch : c.name) ch = 'x';
     },
     "name"},
    {"generation 3", [](chip& c) { c.generation = 3; }, "generation"},
    {"no cores", [](chip& c) { c.cores_per_chip = 0; }, "cores_per_chip"},
    {"more cores than max_cores", [](chip& c) { c.cores_per_chip = static_cast<int>(ptpu::max_cores) + 1; },
     "cores_per_chip"},
    {"megacore on one core", [](chip& c) { c.megacore = true; }, "megacore"},
    {"no vmem", [](chip& c) { c.vmem_bytes = 0; }, "vmem_bytes"},
    {"zero vmem limit", [](chip& c) { c.vmem_limit_bytes = 0; }, "vmem_limit_bytes"},
    {"vmem limit above vmem", [](chip& c) { c.vmem_limit_bytes = c.vmem_bytes + 1; },
     "vmem_limit_bytes exceeds vmem_bytes"},
    {"negative smem", [](chip& c) { c.smem_bytes = -1; }, "smem_bytes"},
    {"no hbm", [](chip& c) { c.hbm_bytes = 0; }, "hbm_bytes"},
    {"zero bandwidth", [](chip& c) { c.hbm_bytes_per_s = 0; }, "hbm_bytes_per_s"},
    {"NaN bandwidth", [](chip& c) { c.hbm_bytes_per_s = nan; }, "hbm_bytes_per_s"},
    {"negative peak", [](chip& c) { c.peak_bf16_flops = -1; }, "peak_bf16_flops"},
    {"negative int8", [](chip& c) { c.peak_int8_ops = -1; }, "peak_int8_ops"},
    {"no MXU", [](chip& c) { c.mxu_count = 0; }, "mxu_count"},
    {"16 sublanes", [](chip& c) { c.sublanes = 16; }, "sublanes"},
    {"256 lanes", [](chip& c) { c.lanes = 256; }, "lanes"},
    {"no VALU", [](chip& c) { c.vpu_alus_per_lane = 0; }, "vpu_alus_per_lane"},
    {"no stores", [](chip& c) { c.vmem_stores_per_cycle = 0; }, "vmem_stores_per_cycle"},
    {"NaN clock", [](chip& c) { c.clock_hz = nan; }, "clock_hz"},
    {"negative overhead", [](chip& c) { c.step_overhead_s = -1e-9; }, "step_overhead_s"},
    {"NaN latency", [](chip& c) { c.dma_latency_s = nan; }, "dma_latency_s"},
    {"zero efficiency", [](chip& c) { c.dma_efficiency = 0; }, "dma_efficiency"},
    {"efficiency above 1", [](chip& c) { c.dma_efficiency = 1.5; }, "dma_efficiency"},
    {"NaN efficiency", [](chip& c) { c.dma_efficiency = nan; }, "dma_efficiency"},
};

TEST(ChipRuleH1, ProblemNamesTheField) {
    for (const broken_case& b : broken_cases) {
        SCOPED_TRACE(b.label);
        chip c = tpu::v5e;
        b.breaks(c);
        const std::string_view problem = ptpu::chip_problem(c);
        EXPECT_NE(problem.find(b.field), std::string_view::npos) << problem;
        EXPECT_EQ(problem.find("ptpu["), std::string_view::npos) << "only the description";
        EXPECT_EQ(problem.find(';'), std::string_view::npos) << "no fix part";
    }
}

TEST(ChipRuleH1, ValidateThrowsWithRuleH1) {
    for (const broken_case& b : broken_cases) {
        SCOPED_TRACE(b.label);
        chip c = tpu::v5e;
        b.breaks(c);
        EXPECT_THROW(ptpu::validate(c), ptpu::error);
        try {
            ptpu::validate(c);
            ADD_FAILURE() << "validate did not throw";
        } catch (const ptpu::error& e) {
            EXPECT_EQ(e.rule(), "H1");
            const std::string what = e.what();
            EXPECT_EQ(what.rfind("ptpu[H1] ", 0), 0u) << what;
            EXPECT_NE(what.find(ptpu::chip_problem(c)), std::string::npos) << what;
        }
    }
}

TEST(ChipRuleH1, ExactMessage) {
    chip c = tpu::v6e;
    c.vmem_limit_bytes = 2 * c.vmem_bytes;
    EXPECT_EQ(ptpu::chip_problem(c), "vmem_limit_bytes exceeds vmem_bytes");
    try {
        ptpu::validate(c);
        ADD_FAILURE() << "validate did not throw";
    } catch (const ptpu::error& e) {
        EXPECT_STREQ(e.what(),
                     "ptpu[H1] chip: vmem_limit_bytes exceeds vmem_bytes; lower it to at "
                     "most vmem_bytes");
    }
}

TEST(ChipRuleH1, FirstProblemWins) {
    chip c = tpu::v5e;
    c.generation = 2;
    c.dma_efficiency = 2;
    EXPECT_NE(ptpu::chip_problem(c).find("generation"), std::string_view::npos);
}

TEST(ChipRuleH1, EdgeValuesAccepted) {
    chip c = tpu::v5e;
    c.vmem_limit_bytes = c.vmem_bytes;  // the whole VMEM may be the limit
    c.dma_efficiency = 1.0;             // ideal DMA
    c.step_overhead_s = 0;              // what-if: no overhead
    c.dma_latency_s = 0;
    c.dma_issue_s = 0;
    c.peak_int8_ops = 0;                                          // int8 unsupported
    c.hbm_bytes_per_s = std::numeric_limits<double>::infinity();  // what-if: free HBM
    EXPECT_EQ(ptpu::chip_problem(c), "");
    EXPECT_NO_THROW(ptpu::validate(c));
}

}  // namespace

TEST(ChipPresets, DescribeOneJaxDevice) {
    // docs/model.md, "The chip presets": a chip holds cores_per_chip / pallas_cores() devices
    // (v4, v5p: one megacore device of two cores; v5e, v6e: one core; 7x: two devices of one
    // core), and the devices of a chip share its HBM [src: tpu_info.py, per chip].
    struct per_chip {
        const chip* c;
        double hbm_bw;
        std::int64_t hbm;
    };
    const per_chip chips[] = {{&tpu::v4, 1.23e12, 34'400'000'000},
                              {&tpu::v5e, 8.20e11, 17'200'000'000},
                              {&tpu::v5p, 2.46e12, 103'000'000'000},
                              {&tpu::v6e, 1.64e12, 34'400'000'000},
                              {&tpu::v7x, 7.40e12, 206'000'000'000}};
    for (const per_chip& p : chips) {
        const int devices = p.c->cores_per_chip / p.c->pallas_cores();
        EXPECT_EQ(devices, p.c == &tpu::v7x ? 2 : 1) << p.c->name;
        EXPECT_DOUBLE_EQ(p.c->hbm_bytes_per_s * devices, p.hbm_bw) << p.c->name;
        EXPECT_EQ(p.c->hbm_bytes * devices, p.hbm) << p.c->name;
    }
}
