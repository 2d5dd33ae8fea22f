// Seed: a block-sparse kernel whose index maps read scalar-prefetched indices (S51): for each
// output row block, sum the listed non-zero column blocks of a block-sparse matrix times a dense
// vector block. The plan is made at run time by the same planner, once the indices are known.
#include <ptpu/ptpu.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

using namespace ptpu;

constexpr index_t b = 128;             // block size
constexpr index_t rows = 4, cols = 8;  // in blocks
constexpr index_t nnz = 6;             // non-zero blocks
using A = Array<float, rows * b, cols * b>;
using V = Array<float, cols * b, b>;
using Y = Array<float, rows * b, b>;
using Idx = Array<std::int32_t, nnz>;

// Grid step t visits non-zero block t: row blocks[t], column cols_of[t] (sorted by row).
using Spmm = pallas_call<
    Grid<nnz>, ScalarPrefetch<Idx, Idx>,
    In<Arg<A, BlockSpec<Block<b, b>, [](auto t, const auto& r, const auto& c) { return idx(r[t], c[t]); }>>,
       Arg<V, BlockSpec<Block<b, b>, [](auto t, const auto&, const auto& c) { return idx(c[t], 0); }>>>,
    Out<Arg<Y, BlockSpec<Block<b, b>, [](auto t, const auto& r, const auto&) { return idx(r[t], 0); }>>>>;

int main() {
    const std::vector<std::int32_t> row_of = {0, 0, 1, 2, 2, 3};
    const std::vector<std::int32_t> col_of = {1, 5, 0, 2, 7, 3};
    host_array<A> a;
    host_array<V> v;
    for (std::size_t i = 0; i < a.size(); ++i) a.vector()[i] = static_cast<float>(i % 9) - 4.0f;
    for (std::size_t i = 0; i < v.size(); ++i) v.vector()[i] = static_cast<float>(i % 5) - 2.0f;

    auto [y, rep] = Spmm{}(
        [](auto r, auto, auto ab, auto vb, auto yb) {
            const index_t t = program_id(0);
            // A new output row block starts: zero it (the output window is reused across the run).
            if (t == 0 || sload(r, t) != sload(r, t - 1)) store(yb, zeros_like(yb));
            store(yb, load(yb) + dot(load(ab), load(vb)));  // small integers: exact in bf16
        },
        row_of, col_of, a, v);

    for (index_t i = 0; i < rows * b; i += 7)
        for (index_t j = 0; j < b; j += 13) {
            double ref = 0;
            for (index_t t = 0; t < nnz; ++t)
                if (row_of[static_cast<std::size_t>(t)] * b <= i &&
                    i < (row_of[static_cast<std::size_t>(t)] + 1) * b)
                    for (index_t k = 0; k < b; ++k)
                        ref += static_cast<double>(a(i, col_of[static_cast<std::size_t>(t)] * b + k)) *
                               v(col_of[static_cast<std::size_t>(t)] * b + k, j);
            if (y(i, j) != static_cast<float>(ref)) {
                std::cerr << "mismatch at (" << i << ", " << j << "): " << y(i, j) << " vs " << ref << "\n";
                return 1;
            }
        }
    std::cout << "block_sparse: ok; " << rep.stats.op_dmas[0] << " A-block fetches for " << nnz
              << " non-zero blocks, " << rep.stats.op_dmas[2] << " output write-backs\n";
    return 0;
}
