// Configurations at run time: one dynamic_call type, the block sizes of a blocked matmul swept in
// a loop (no template instantiation per point). Each point is planned by the same planner as a
// static pallas_call (its rules raised as ptpu::error: here v5e's VMEM limit, check 24) and its
// time predicted without any data. Then an inner pipeline configured by values (dynamic_pipeline)
// in a gridless call, its input window 1 to 4 deep, predicted the same way.
#include <ptpu/ptpu.hpp>

#include <iostream>

using namespace ptpu;

// The kernel's signature is a type (what the body's refs are); the rest is values.
using F2 = Operand<float, 2>;
using Matmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;

int main() {
    constexpr index_t n = 2048;
    const auto body = [](auto x, auto y, auto o, auto acc) {
        if (program_id(2) == 0) store(acc, zeros_like(acc));
        store(acc, load(acc) + dot(load(x), load(y)));
        if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
    };
    Matmul mm;
    mm.semantics = {parallel, parallel, arbitrary};
    mm.chip = tpu::v5e;
    mm.in[0].index_map = [](index_t i, index_t, index_t k) { return idx(i, k); };
    mm.in[1].index_map = [](index_t, index_t j, index_t k) { return idx(k, j); };
    mm.out[0].index_map = [](index_t i, index_t j, index_t) { return idx(i, j); };
    mm.in[0].shape = mm.in[1].shape = mm.out[0].shape = {n, n};

    double best = 0;
    index_t best_b[3] = {};
    for (index_t bm : {128, 256, 512, 1024})
        for (index_t bk : {128, 512, 2048}) {
            const index_t bn = bm;
            mm.grid = {n / bm, n / bn, n / bk};
            mm.in[0].block = {bm, bk};
            mm.in[1].block = {bk, bn};
            mm.out[0].block = {bm, bn};
            mm.scratch[0] = {bm, bn};
            std::cout << "bm = bn = " << bm << ", bk = " << bk << ": ";
            try {
                const report r = mm.predict(body);
                std::cout << r.device_time * 1e6 << " us, MXU " << r.mxu_utilization * 100 << "%\n";
                if (best == 0 || r.device_time < best) {
                    best = r.device_time;
                    best_b[0] = bm, best_b[1] = bn, best_b[2] = bk;
                }
            } catch (const error& e) {
                std::cout << "rejected, rule " << e.rule() << "\n";  // e.g. 24: over the VMEM limit
            }
        }
    std::cout << "fastest: (" << best_b[0] << ", " << best_b[1] << ", " << best_b[2] << ") in " << best * 1e6
              << " us\n";

    // An inner pipeline configured by values, run by a gridless call over ANY refs: the rows of
    // an (n, 512) array in blocks of 128, the input window 1 to 4 deep (emit_pipeline's rules).
    using Rows = dynamic_pipeline<In<F2>, Out<F2>>;
    using Host = dynamic_call<In<Operand<float, 2, any>>, Out<Operand<float, 2, any>>>;
    Host host;
    host.in[0].shape = host.out[0].shape = {n, 512};
    Rows rows;
    rows.grid = {n / 128};
    rows.in[0] = rows.out[0] = {.block = {128, 512}, .index_map = [](index_t i) { return idx(i, 0); }};
    double deep = 0;
    for (int buffers = 1; buffers <= 4; ++buffers) {
        rows.in[0].buffer_count = buffers;
        const report r = host.predict([&](auto x, auto o) {
            emit_pipeline([](auto in, auto out) { store(out, load(in) * 2.0f); }, rows)(x, o);
        });
        std::cout << "inner pipeline, " << buffers << " input buffers: " << r.device_time * 1e6 << " us\n";
        deep = r.device_time;
    }
    return best > 0 && deep > 0 ? 0 : 1;
}
