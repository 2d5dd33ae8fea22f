// A flash-attention-style forward body (online softmax over (BQ, block_kv) score blocks): the
// vector-bound kernel of tests/sim/vector_bound_test.cpp, shared with
// benchmarks/families_bench.cpp. The running max m and sum l live in lane 0 of (BQ, 128) scratch,
// broadcast back as (BQ, 1); grid axis 1 walks the KV blocks.
#pragma once

#include <ptpu/ptpu.hpp>

#include <limits>

namespace ptpu::test_kernels {

template <index_t BQ>
struct flash_body {
    template <class Q, class K, class V, class O, class M, class L, class A>
    void operator()(Q q, K k, V v, O o, M m, L l, A acc) const {
        if (program_id(1) == 0) {
            store(m, full<float>(c<BQ>, c<128>, -std::numeric_limits<float>::infinity()));
            store(l, zeros<float>(c<BQ>, c<128>));
            store(acc, zeros_like(load(acc)));
        }
        const auto s = dot(load(q), load(k), dot_options{.transpose_b = true}) * 0.125f;
        const auto m_prev = max(load(m), c<1>);
        const auto m_new = maximum(m_prev, max(s, c<1>));
        const auto p = exp(s - m_new);
        const auto alpha = exp(m_prev - m_new);
        const auto l_new = alpha * max(load(l), c<1>) + sum(p, c<1>);
        store(acc, load(acc) * alpha + dot(cast<bf16>(p), load(v)));
        store(m, m_new + zeros<float>(c<BQ>, c<128>));
        store(l, l_new + zeros<float>(c<BQ>, c<128>));
        if (program_id(1) == num_programs(1) - 1) store(o, load(acc) / l_new);
    }
};

}  // namespace ptpu::test_kernels
