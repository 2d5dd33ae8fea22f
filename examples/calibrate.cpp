// Calibration: fit a preset's estimated overheads to device times measured on your own TPU, then
// use the fitted chip like any preset. The table is the CSV format of docs/model.md
// ("Calibration"): one kernel configuration per row (a copy or a matmul of the families
// calibration::predict knows) with its device time in µs, as read off a profile.
//
// The embedded times are illustrative, not a published measurement: run
// `calibrate times.csv` on a table of your own instead.
#include <ptpu/calibrate/fit.hpp>
#include <ptpu/ptpu.hpp>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace ptpu;

constexpr const char* illustrative_table = R"(# device times of one v5e (illustrative)
kind,dtype,m,n,k,bm,bn,bk,buffers,time_us
copy,f32,4096,1024,0,512,1024,0,2,48.6
copy,f32,4096,1024,0,256,1024,0,2,47.2
copy,f32,4096,1024,0,16,1024,0,2,129.4
copy,f32,4096,1024,0,8,1024,0,2,230.2
copy,f32,4096,1024,0,512,1024,0,1,58.0
copy,f32,4096,1024,0,256,1024,0,1,69.2
copy,f32,4096,1024,0,16,1024,0,1,336.8
copy,f32,4096,1024,0,8,1024,0,1,651.7
matmul,bf16,512,512,512,128,128,128,2,31.5
matmul,bf16,512,512,512,128,128,128,1,65.3
matmul,bf16,1024,1024,1024,256,256,512,2,39.8
matmul,bf16,1024,1024,1024,512,512,256,2,23.7
)";

int main(int argc, char** argv) {
    std::vector<calibration::measurement> rows;
    if (argc > 1) {
        rows = calibration::read_csv(std::string(argv[1]));
    } else {
        std::istringstream in(illustrative_table);
        rows = calibration::read_csv(in);
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
