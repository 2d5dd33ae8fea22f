// Sweeping and ranking configurations: a blocked matmul with an accumulator, one dynamic_call
// type, swept over block shapes x buffer counts x chips (a run-time space), predicted
// in timing-only mode on all host cores, ranked by predicted device time. Prints the top 5 with
// what bounds each and the speedup over a default configuration, the points rejected and the
// rule that rejects each, and the best one's full report; writes CSV and JSON to a temp folder.
#include <ptpu/ptpu.hpp>
#include <ptpu/sweep/run.hpp>

#include <cmath>
#include <filesystem>
#include <iostream>

using namespace ptpu;

using F2 = Operand<float, 2>;
using Matmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;

constexpr index_t n = 2048;

// One configuration: (bm, bm) output blocks, a K block bk, y's buffer count, the chip.
Matmul matmul(index_t bm, index_t bk, int buffers, const chip* c) {
    Matmul mm;
    mm.semantics = {parallel, parallel, arbitrary};
    mm.chip = *c;
    mm.in[0].index_map = [](index_t i, index_t, index_t k) { return idx(i, k); };
    mm.in[1].index_map = [](index_t, index_t j, index_t k) { return idx(k, j); };
    mm.out[0].index_map = [](index_t i, index_t j, index_t) { return idx(i, j); };
    mm.in[0].shape = mm.in[1].shape = mm.out[0].shape = {n, n};
    mm.grid = {n / bm, n / bm, n / bk};
    mm.in[0].block = {bm, bk};
    mm.in[1].block = {bk, bm};
    mm.in[1].buffer_count = buffers;
    mm.out[0].block = {bm, bm};
    mm.scratch[0] = {bm, bm};
    return mm;
}

int main() {
    const auto body = [](auto x, auto y, auto o, auto acc) {
        if (program_id(2) == 0) store(acc, zeros_like(acc));
        store(acc, load(acc) + dot(load(x), load(y)));
        if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
    };
    // The space: 4 x 3 x 3 x 5 points, the first axis slowest; Buffered<3> at the top level is
    // rule 19, large blocks overflow a chip's scoped VMEM (24): those are reported, not dropped.
    const sweep::space<index_t, index_t, int, const chip*> space{
        {128, 256, 512, 1024}, {256, 512, 2048}, {1, 2, 3}, {&tpu::v4, &tpu::v5e, &tpu::v5p, &tpu::v6e, &tpu::v7x}};
    // A filter (a lazy view of the space): K blocks no larger than twice the output block.
    auto points = space.where([](index_t bm, index_t bk, int, const chip*) { return bk <= 2 * bm || bm >= 512; });
    // The default to compare with: (256, 512), double-buffered, on v5e (its position in `points`).
    sweep::options opt{.axis_names = {"bm", "bk", "buffers", "chip"}};
    std::size_t k = 0;
    for (const auto& [bm, bk, bc, c] : points) {
        if (bm == 256 && bk == 512 && bc == 2 && c == &tpu::v5e) opt.baseline = k;
        ++k;
    }
    const auto result = sweep::run(points, matmul, body, opt);

    std::cout << "Blocked matmul " << n << "^3 f32, " << result.size() << " configurations, ranked on "
              << result.threads << " threads:\n\n";
    result.print(std::cout, 5);
    // The best entry, its point and its configuration (the dynamic_call matmul made of it): ready
    // to run on data, or to predict again with a timeline.
    const auto best = result.best();
    const auto [bm, bk, buffers, best_chip] = best.point;
    auto again = best.config;
    again.options.timeline = true;
    const report best_report = again.predict(body);
    std::cout << "\nBest: " << best.label << " (" << bm << " x " << bk << " blocks, " << buffers
              << " buffers, on " << sweep::chip_label(*best_chip) << ")\n"
              << best_report;

    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ptpu_sweep";
    std::filesystem::create_directories(dir);
    result.write_csv(dir / "sweep.csv");
    result.write_json(dir / "sweep.json");
    std::cout << "\nWrote " << (dir / "sweep.csv").string() << " and " << (dir / "sweep.json").string() << "\n";
    // The example checks what it shows: every point accounted for, some rejected by rule.
    return result.ranked.size() > 5 && !result.rejected.empty() && result.speedup(best).value_or(0) >= 1 &&
                   std::abs(best_report.device_time - best.time) <= 1e-12 * best.time
               ? 0
               : 1;
}
