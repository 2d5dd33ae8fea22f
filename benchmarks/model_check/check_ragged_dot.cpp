// Checks ptpu's timing model against public device times: tokamax's Pallas Mosaic TPU grouped
// matmul (ragged dot) on 7x, v5p and v5e, every row of the tables in this folder (their source
// and license are in each file's header). Per row it prints the config, the measured median, the
// prediction, the error and the report's bounds; then per chip the median error, the share of
// rows within ±10%, and the worst rows. docs/model.md, "Checked against public measurements".
//
//   check_ragged_dot [DIR] [CHIP...]     DIR: this folder (default: the source tree's); CHIP: v7x v5p v5e
//
// Build: the bench preset builds it (benchmarks/CMakeLists.txt); by hand, from the repository root:
//   g++ -std=c++20 -O2 -Iinclude -isystem /usr/include/eigen3 benchmarks/model_check/check_ragged_dot.cpp
#include "ragged_dot.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#ifndef PTPU_MODEL_CHECK_DIR
#define PTPU_MODEL_CHECK_DIR "benchmarks/model_check"
#endif

namespace {

struct result {
    ragged_dot_check::row r;
    double measured_ms = 0, predicted_ms = 0, error = 0;  // error: predicted / measured - 1
    std::string bound, compute_bound;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void summary(const char* what, const std::vector<const result*>& rs) {
    if (rs.empty()) return;
    std::vector<double> e, a;
    int within = 0;
    for (const result* r : rs) {
        e.push_back(r->error);
        a.push_back(std::abs(r->error));
        within += std::abs(r->error) <= 0.10;
    }
    std::printf("  %-26s %3zu rows: median error %+6.1f%%, median |error| %5.1f%%, within ±10%%: %3d (%4.1f%%)\n", what,
                rs.size(), 100 * median(e), 100 * median(a), within, 100.0 * within / static_cast<double>(rs.size()));
}

}  // namespace

int main(int argc, char** argv) {
    using namespace ragged_dot_check;
    const std::string dir = argc > 1 ? argv[1] : PTPU_MODEL_CHECK_DIR;
    std::vector<std::string> chips;
    for (int i = 2; i < argc; ++i) chips.emplace_back(argv[i]);
    if (chips.empty()) chips = {"v7x", "v5p", "v5e"};
    const auto groups = read_groups(dir + "/ragged_dot_groups.csv");
    std::vector<std::vector<result>> all;
    for (const std::string& name : chips) {
        const ptpu::chip* hw = ptpu::tpu::find_preset(name);
        if (hw == nullptr) {
            std::fprintf(stderr, "unknown chip %s\n", name.c_str());
            return 2;
        }
        std::vector<result> out;
        std::printf("%s: tokamax ragged_dot (Pallas Mosaic TPU), measured median vs ptpu's prediction\n", name.c_str());
        std::printf("  %-5s %7s %5s %5s %5s %4s %4s %5s %5s %2s %9s %9s %7s  %s\n", "kind", "m", "k", "n", "g", "tm", "",
                    "tk", "tn", "bc", "meas ms", "pred ms", "error", "bound / bodies bound by");
        for (const row& r : read_rows(dir + "/ragged_dot_" + name + ".csv")) {
            const problem p = problem_of(r, current_op_table(name));
            result x;
            x.r = r;
            x.measured_ms = r.median_ms();
            const ptpu::report rep = predict(r, groups.at(static_cast<std::size_t>(r.group_set)), *hw);
            x.predicted_ms = rep.device_time * 1e3;
            x.error = x.predicted_ms / x.measured_ms - 1;
            x.bound = rep.bound;
            x.compute_bound = rep.compute_bound;
            std::printf("  %-5s %7lld %5lld %5lld %5lld %4lld %4s %5lld %5lld %d%s %9.3f %9.3f %+6.1f%%  %s / %s\n",
                        r.kind.c_str(), static_cast<long long>(p.m), static_cast<long long>(p.k),
                        static_cast<long long>(p.n), static_cast<long long>(p.tgmm ? groups.at(r.group_set).size() : p.groups),
                        static_cast<long long>(p.tm), "", static_cast<long long>(p.tk), static_cast<long long>(p.tn),
                        r.buffers, r.buffers > 2 ? "*" : " ", x.measured_ms, x.predicted_ms, 100 * x.error,
                        x.bound.c_str(), x.compute_bound.c_str());
            std::fflush(stdout);
            out.push_back(x);
        }
        all.push_back(std::move(out));
    }
    std::printf(
        "\nSummary (error = predicted / measured - 1; * = input_buffer_count > 2: the grid as one inner "
        "pipeline)\n");
    for (std::size_t c = 0; c < chips.size(); ++c) {
        std::printf("%s\n", chips[c].c_str());
        std::vector<const result*> every, two, gmm, gmm_t, tgmm;
        for (const result& x : all[c]) {
            every.push_back(&x);
            if (x.r.buffers <= 2) two.push_back(&x);
            (x.r.kind == "gmm" ? gmm : x.r.kind == "gmm_t" ? gmm_t : tgmm).push_back(&x);
        }
        summary("all", every);
        summary("buffers <= 2", two);
        summary("gmm", gmm);
        summary("gmm_t (rhs transposed)", gmm_t);
        summary("tgmm", tgmm);
        std::vector<const result*> worst = every;
        std::sort(worst.begin(), worst.end(),
                  [](const result* a, const result* b) { return std::abs(a->error) > std::abs(b->error); });
        for (std::size_t i = 0; i < worst.size() && i < 3; ++i) {
            const problem p = problem_of(worst[i]->r, current_op_table(chips[c]));
            std::printf("  worst: %s m %lld k %lld n %lld tiles (%lld, %lld, %lld) bc %d: %.3f ms measured, %.3f predicted (%+.1f%%)\n",
                        worst[i]->r.kind.c_str(), static_cast<long long>(p.m), static_cast<long long>(p.k),
                        static_cast<long long>(p.n), static_cast<long long>(p.tm), static_cast<long long>(p.tk),
                        static_cast<long long>(p.tn), worst[i]->r.buffers, worst[i]->measured_ms, worst[i]->predicted_ms,
                        100 * worst[i]->error);
        }
    }
    return 0;
}
