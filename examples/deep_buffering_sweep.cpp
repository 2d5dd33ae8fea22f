// Sweeping deep buffering and lookahead: a grouped matmul (the ragged dot of mixture-of-experts
// layers, group metadata read by the index maps from SMEM as scalar prefetch) as one
// dynamic_call type with custom_buffered set: its grid runs as one inner pipeline of a gridless
// call, the way upstream kernels get more than two buffers. One instantiation sweeps tile sizes x
// the rhs's buffer count (1-4) x lookahead x chips; no point is rejected for its buffer count
// (a top-level call would reject 3 and 4 with rule 19). The best point is run again on data and
// checked against a plain reference.
#include <ptpu/ptpu.hpp>
#include <ptpu/sweep/run.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

using namespace ptpu;

constexpr index_t M = 1024, K = 512, N = 256;
// Three groups (experts) of 256, 512 and 256 rows: a row tile of 128 or 256 lies in one group.
constexpr index_t group_end[] = {256, 768, 1024};

using Meta = Operand<std::int32_t, 1>;
using Gmm = dynamic_call<ScalarPrefetch<Meta, Meta>, In<Operand<float, 2>, Operand<float, 3, vmem, 2>>,
                         Out<Operand<float, 2>>, ScratchShapes<Operand<float, 2>>>;

// One configuration: the call, and the metadata of its row tiles (which rows, which group).
struct grouped {
    Gmm call;
    std::vector<std::int32_t> row, group;
    run_options options{};  // what the sweep sets (a lean run) and the re-run reads
    template <class Body>
    report predict(const Body& body) const {
        Gmm c = call;
        c.options = options;
        return c.predict(body, row, group);
    }
};

grouped configure(index_t tm, index_t tk, index_t tn, int buffers, bool lookahead, const chip* hw) {
    grouped g;
    for (index_t t = 0; t < M / tm; ++t) {
        g.row.push_back(static_cast<std::int32_t>(t));
        std::int32_t grp = 0;
        while (t * tm >= group_end[grp]) ++grp;
        g.group.push_back(grp);
    }
    Gmm& c = g.call;
    c.chip = *hw;
    c.custom_buffered = true;
    c.grid = {N / tn, M / tm, K / tk};  // (n tile, row tile, K block): K innermost
    c.semantics = {parallel, arbitrary, arbitrary};
    c.in[0] = {.shape = {M, K},
               .block = {tm, tk},
               .index_map = [](index_t, index_t t, index_t k, auto row, auto) { return idx(row(t), k); }};
    c.in[1] = {
        .shape = {3, K, N},
        .block = {squeezed, tk, tn},
        .index_map = [](index_t n, index_t t, index_t k, auto, auto group) { return idx(group(t), k, n); },
        .buffer_count = buffers,
        .lookahead = lookahead};
    c.out[0] = {.shape = {M, N},
                .block = {tm, tn},
                .index_map = [](index_t n, index_t t, index_t, auto row, auto) { return idx(row(t), n); }};
    c.scratch[0] = {tm, tn};
    return g;
}

int main() {
    // The same body as a top-level call's: program_id and num_programs answer for the grid.
    const auto body = [](auto, auto, auto x, auto w, auto o, auto acc) {
        if (program_id(2) == 0) store(acc, zeros_like(acc));
        store(acc, load(acc) + dot(load(x), load(w)));
        if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
    };
    const sweep::space<index_t, index_t, index_t, int, bool, const chip*> space{
        {128, 256},   {128, 256, 512}, {128, 256},
        {1, 2, 3, 4}, {false, true},   {&tpu::v5e, &tpu::v6e, &tpu::v5p}};
    // Buffered<1, true> never fetches block 0 upstream (rule Q1): not a configuration to try.
    auto points =
        space.where([](index_t, index_t, index_t, int b, bool look, const chip*) { return b > 1 || !look; });
    const auto result = sweep::run(points, configure, body,
                                   {.axis_names = {"tm", "tk", "tn", "buffers", "lookahead", "chip"}});
    std::cout << "Grouped matmul (" << M << " x " << K << ") @ 3 x (" << K << " x " << N << "), "
              << result.size() << " configurations:\n\n";
    result.print(std::cout, 8);

    // The best point, run on data (small integers: exact under the MXU's bf16 inputs).
    const auto best = result.best();
    std::vector<float> x(M * K), w(3 * K * N);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    const grouped& g = best.config;
    auto [out, rep] = g.call(body, g.row, g.group, x, w);
    std::vector<float> want(M * N, 0.0f);
    for (index_t i = 0; i < M; ++i) {
        index_t grp = 0;
        while (i >= group_end[grp]) ++grp;
        for (index_t k = 0; k < K; ++k)
            for (index_t n = 0; n < N; ++n)
                want[static_cast<std::size_t>(i * N + n)] +=
                    x[static_cast<std::size_t>(i * K + k)] *
                    w[static_cast<std::size_t>((grp * K + k) * N + n)];
    }
    const bool ok = out.vector() == want;
    std::cout << "\nBest: " << best.label << ": " << rep.device_time * 1e6 << " us; on data "
              << (ok ? "matches the reference" : "MISMATCH") << "\n";
    bool buffer_rejects = false;
    for (const auto& r : result.rejected) buffer_rejects = buffer_rejects || r.rule == "19" || r.rule == "27";
    return ok && !buffer_rejects && rep.device_time == best.time ? 0 : 1;
}
