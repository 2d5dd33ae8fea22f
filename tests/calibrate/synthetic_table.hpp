// The synthetic calibration table shared by tests/calibrate/calibrate_test.cpp and
// timing_only_bench's calibration benchmark: kernel shapes that separate the three default
// fields, the chip that "measured" them, and the table that chip's predictions make.
#pragma once

#include <ptpu/calibrate/fit.hpp>
#include <ptpu/hw/presets.hpp>

#include <vector>

namespace calibration_test {

using ptpu::chip;
using ptpu::dtype;
using ptpu::index_t;
using ptpu::calibration::family;
using ptpu::calibration::measurement;

// A table that separates the three default fields (docs/model.md, "Calibration"): DMA-bound
// copies (η), copies with Buffered(1) (each step pays 2L), small blocks whose steps are bound by
// the control overhead (o), and bf16 matmuls from overhead-bound (128³ blocks) to MXU-bound.
// Evens and odds each hold every kind, so either half pins the fields down.
inline std::vector<measurement> shapes() {
    const auto copy = [](index_t bm, int bc) {
        return measurement{.kind = family::copy,
                           .type = dtype::f32,
                           .m = 4096,
                           .n = 1024,
                           .bm = bm,
                           .bn = 1024,
                           .buffers = bc};
    };
    const auto mm = [](index_t n, index_t b, index_t bk, int bc) {
        return measurement{.kind = family::matmul,
                           .type = dtype::bf16,
                           .m = n,
                           .n = n,
                           .k = n,
                           .bm = b,
                           .bn = b,
                           .bk = bk,
                           .buffers = bc};
    };
    return {copy(512, 2),         copy(256, 2),         copy(16, 2),           copy(8, 2),
            copy(512, 1),         copy(256, 1),         copy(16, 1),           copy(8, 1),
            mm(512, 128, 128, 2), mm(512, 128, 128, 1), mm(1024, 256, 512, 2), mm(1024, 512, 256, 2)};
}

// The chip that "measured" the synthetic tables: v5e with other overheads, all three well away
// from the preset's (o 0.286 µs, η 0.952, L 0.2 µs).
constexpr chip truth = [] {
    chip c = ptpu::tpu::v5e;
    c.step_overhead_s = 0.45e-6;
    c.dma_efficiency = 0.82;
    c.dma_latency_s = 0.6e-6;
    return c;
}();

inline std::vector<measurement> measured_by(const chip& c, std::vector<measurement> rows) {
    int line = 2;
    for (measurement& r : rows) r.seconds = ptpu::calibration::predict(c, r), r.line = line++;
    return rows;
}

}  // namespace calibration_test
