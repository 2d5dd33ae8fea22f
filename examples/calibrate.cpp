// Calibration: fit a preset's estimated overheads to device times measured on your own TPU, then
// use the fitted chip like any preset. The table is the CSV format of docs/model.md
// ("Calibration"): one kernel configuration per row (a copy or a matmul of the families
// calibration::predict knows) with its device time in µs, as read off a profile.
//
// Without a file, the example makes its own stand-in table and says so: the times a v5e whose
// step overhead, DMA efficiency and DMA latency differ from the preset's estimates would show
// (predicted by the model for that chip, with a deterministic ±3% scatter standing in for
// measurement noise). The fit should find that chip again.
#include <ptpu/calibrate/fit.hpp>
#include <ptpu/ptpu.hpp>

#include <iostream>
#include <string>
#include <vector>

using namespace ptpu;

// The configurations of the stand-in table: copies over a range of block sizes (the step overhead
// shows at small blocks, the DMA efficiency at large ones) and a few matmuls.
std::vector<calibration::measurement> stand_in_table() {
    chip device = tpu::v5e;  // the "measured" device: other overheads than the preset's estimates
    device.step_overhead_s = 0.45e-6;
    device.dma_efficiency = 0.82;
    device.dma_latency_s = 0.6e-6;
    std::vector<calibration::measurement> rows;
    for (int buffers : {1, 2})
        for (index_t bm : {8, 16, 64, 256, 512})
            rows.push_back({.kind = calibration::family::copy, .type = dtype::f32, .m = 4096, .n = 1024,
                            .bm = bm, .bn = 1024, .buffers = buffers});
    for (index_t b : {128, 256, 512})
        rows.push_back({.kind = calibration::family::matmul, .type = dtype::bf16, .m = 1024, .n = 1024, .k = 1024,
                        .bm = b, .bn = b, .bk = b, .buffers = 2});
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const double scatter = 1.0 + 0.03 * static_cast<double>(static_cast<int>(i * 7 % 5) - 2) / 2.0;
        rows[i].seconds = calibration::predict(device, rows[i]) * scatter;
    }
    return rows;
}

int main(int argc, char** argv) {
    std::vector<calibration::measurement> rows;
    if (argc > 1) {
        rows = calibration::read_csv(std::string(argv[1]));
    } else {
        std::cout << "No table given: a stand-in table, times of a v5e with o = 0.45 us, eta = 0.82, L = 0.6 us "
                     "(the model's, with a +-3% scatter)\n\n";
        rows = stand_in_table();
    }
    // Fit the default fields (step overhead, DMA efficiency, DMA latency) of the v5e preset.
    const calibration::result fit = calibration::calibrate(tpu::v5e, rows);
    std::cout << fit;

    // The fitted chip is a chip like tpu::v5e: a dynamic_call (or calibration::predict) takes it.
    const calibration::measurement big{.kind = calibration::family::matmul, .type = dtype::bf16, .m = 4096,
                                       .n = 4096, .k = 4096, .bm = 512, .bn = 512, .bk = 512, .buffers = 2};
    std::cout << "4096^3 bf16 matmul, 512^3 blocks: preset " << calibration::predict(tpu::v5e, big) * 1e6
              << " us, calibrated " << calibration::predict(fit.fitted, big) * 1e6 << " us\n";
    return fit.median_error() < fit.median_error(false) ? 0 : 1;
}
