// A grouped matmul (the ragged dot of mixture-of-experts layers) as one emit_pipeline inside a
// gridless pallas_call: row tiles of the tokens are multiplied by their group's (expert's)
// weights. The group metadata (which row tile each step takes, and its group) is copied into
// SMEM first; the index maps read it there. The lhs is triple-buffered with lookahead, the
// contraction runs over two K blocks into an f32 accumulator in VMEM scratch, and the result is
// checked against a plain reference and predicted on v5e.
#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

using namespace ptpu;

constexpr index_t M = 512, K = 256, N = 128, G = 3, tm = 128, bk = 128, tiles = M / tm;
using Lhs = Array<float, M, K>;
using Rhs = Array<float, G, K, N>;
using Res = Array<float, M, N>;
using Meta = Array<std::int32_t, tiles>;
using AnyFull = BlockSpec<Full, zero_map, any>;

// Step (t, k): rows tile_row[t] of the lhs, K block k, times block k of group tile_group[t].
using LhsTile = BlockSpec<Block<tm, bk>, [](index_t t, index_t k, const auto& row, const auto&) { return idx(row(t), k); },
                          Buffered<3, true>>;
using RhsTile = BlockSpec<Block<squeezed, bk, N>,
                          [](index_t t, index_t k, const auto&, const auto& group) { return idx(group(t), k, 0); }>;
using OutTile = BlockSpec<Block<tm, N>, [](index_t t, index_t, const auto& row, const auto&) { return idx(row(t), 0); }>;

using Grouped = pallas_call<Grid<>, In<Arg<Lhs, AnyFull>, Arg<Rhs, AnyFull>, Arg<Meta, AnyFull>, Arg<Meta, AnyFull>>,
                            Out<Arg<Res, AnyFull>>, Scratch<vmem, float, tm, N>, Scratch<smem, std::int32_t, tiles>,
                            Scratch<smem, std::int32_t, tiles>, Chip<tpu::v5e>>;

int main() {
    host_array<Lhs> lhs;
    host_array<Rhs> rhs;
    host_array<Meta> row, group;
    // Small integers: every product and sum is exact in f32, so bf16-rounded MXU inputs (the
    // default precision) give the reference's result exactly.
    for (index_t i = 0; i < M; ++i)
        for (index_t k = 0; k < K; ++k) lhs(i, k) = static_cast<float>((i + 2 * k) % 7 - 3);
    for (index_t g = 0; g < G; ++g)
        for (index_t k = 0; k < K; ++k)
            for (index_t n = 0; n < N; ++n) rhs(g, k, n) = static_cast<float>((5 * g + k + n) % 5 - 2);
    // Groups of 128, 256 and 128 rows; group 1's tiles go first.
    const std::int32_t rows[tiles] = {1, 2, 0, 3}, groups[tiles] = {1, 1, 0, 2};
    for (index_t t = 0; t < tiles; ++t) row(t) = rows[t], group(t) = groups[t];

    auto [out, rep] = Grouped{}(
        [](auto l, auto r, auto row_hbm, auto group_hbm, auto o, auto acc, auto row_s, auto group_s) {
            sync_copy(row_hbm, row_s);  // the metadata into SMEM first
            sync_copy(group_hbm, group_s);
            emit_pipeline(
                [&](auto lt, auto rt, auto ot) {
                    const index_t k = pipeline_index(1);
                    if (k == 0) store(acc, zeros<float>(c<tm>, c<N>));
                    store(acc, load(acc) + dot(load(lt), load(rt)));
                    if (k == pipeline_size(1) - 1) store(ot, load(acc));
                },
                {tiles, K / bk}, in_specs<LhsTile, RhsTile>, out_specs<OutTile>, {}, row_s, group_s)(l, r, o);
        },
        lhs, rhs, row, group);

    std::vector<float> want(static_cast<std::size_t>(M * N), 0.0f);
    for (index_t t = 0; t < tiles; ++t)
        for (index_t i = rows[t] * tm; i < (rows[t] + 1) * tm; ++i)
            for (index_t n = 0; n < N; ++n) {
                float s = 0;
                for (index_t k = 0; k < K; ++k) s += lhs(i, k) * rhs(groups[t], k, n);
                want[static_cast<std::size_t>(i * N + n)] = s;
            }
    bool ok = true;
    for (index_t i = 0; i < M; ++i)
        for (index_t n = 0; n < N; ++n) ok = ok && out(i, n) == want[static_cast<std::size_t>(i * N + n)];
    std::cout << "grouped_matmul: " << (ok ? "ok" : "MISMATCH") << "; " << rep.stats.inner_steps << " inner steps, "
              << rep.stats.inner_dmas << " DMAs; predicted " << rep.device_time * 1e6 << " us on v5e\n"
              << rep;
    return ok ? 0 : 1;
}
