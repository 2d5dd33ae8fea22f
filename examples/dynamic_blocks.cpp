// Dynamic blocks (BoundedSlice; docs/guide.md, "Dynamic blocks"): an inner pipeline whose blocks are
// row slices chosen at run time. The slice starts and sizes come in as arrays, are copied into
// SMEM first, and the index map reads them there: block i is rows ds(start[i], size[i]) of the
// (8, 128) array. The window keeps its static bound of 8 rows (the body's ref is (8, 128), as in
// Pallas); each DMA moves only the slice's rows, so copying the windows back reproduces the
// array exactly.
#include <ptpu/ptpu.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <numeric>

using namespace ptpu;

using X = Array<float, 8, 128>;
using Table = Array<std::int32_t, 4>;
using AnyFull = BlockSpec<Full, zero_map, any>;
using Copy = pallas_call<Grid<>, In<Arg<X, AnyFull>, Arg<Table, AnyFull>, Arg<Table, AnyFull>>, Out<Arg<X, AnyFull>>,
                         Scratch<smem, std::int32_t, 4>, Scratch<smem, std::int32_t, 4>, Chip<tpu::v5e>>;

// Block i: rows [start[i], start[i] + size[i]), at most 8 of them; the map reads the SMEM refs
// the body passes to emit_pipeline after the options.
using Slice = BlockSpec<Block<bounded_slice{8}, 128>,
                        [](index_t i, const auto& start, const auto& size) { return idx(ds(start(i), size(i)), 0); }>;

int main() {
    host_array<X> x;
    std::iota(x.begin(), x.end(), 0.0f);
    host_array<Table> starts, sizes;  // the slices [0, 2), [2, 3), [3, 5), [5, 8)
    const std::int32_t st[] = {0, 2, 3, 5}, sz[] = {2, 1, 2, 3};
    std::copy(st, st + 4, starts.begin());
    std::copy(sz, sz + 4, sizes.begin());

    auto [y, rep] = Copy{}(
        [](auto x_hbm, auto start_hbm, auto size_hbm, auto y_hbm, auto start, auto size) {
            sync_copy(start_hbm, start);  // the slice table into SMEM first
            sync_copy(size_hbm, size);
            emit_pipeline([](auto in, auto out) { store(out, load(in)); }, {4}, in_specs<Slice>, out_specs<Slice>, {},
                          start, size)(x_hbm, y_hbm);
        },
        x, starts, sizes);

    const bool ok = std::ranges::equal(y, x);
    std::cout << "dynamic_blocks: " << (ok ? "ok" : "MISMATCH") << "; " << rep.stats.inner_dmas << " DMAs moved "
              << rep.stats.inner_bytes << " bytes (twice the array's " << x.size() * 4 << ")\n";
    return ok && rep.stats.inner_bytes == static_cast<index_t>(2 * x.size() * 4) ? 0 : 1;
}
