// Defines what the memo tests share (tests/sim/steady_call_test.cpp's body memo and fast lanes,
// tests/call/invocation_memo_test.cpp's invocation memo, tests/call/inner_fold_test.cpp's folds): a
// prediction with the memo on or off, how many checks a memo makes, and the counts two reports of the same
// kernel must share.
#pragma once

#include <gtest/gtest.h>

#include <ptpu/ptpu.hpp>

namespace memo_test {

using namespace ptpu;

/// K's prediction of `body` with run_options::memoize_body = `memo`.
template <class K, class Body>
report predict_memo(const Body& body, bool memo) {
    K k{};
    k.options.memoize_body = memo;
    return k.predict(body);
}

/// The checks a memo makes over `reuses` reuses of one entry: at reuses 1, 2, 4, ...
constexpr index_t checks(index_t reuses) {
    index_t n = 0;
    for (index_t at = 1; at <= reuses; at *= 2) ++n;
    return n;
}

/// Two reports of the same kernel count the same ops, bytes, DMAs, inner steps, work and VMEM.
inline void expect_same_counts(const report& a, const report& b) {
    EXPECT_EQ(a.ops, b.ops);
    EXPECT_EQ(a.hbm_bytes, b.hbm_bytes);
    EXPECT_EQ(a.stats.steps, b.stats.steps);
    EXPECT_EQ(a.stats.dma_in, b.stats.dma_in);
    EXPECT_EQ(a.stats.dma_out, b.stats.dma_out);
    EXPECT_EQ(a.stats.bytes_in, b.stats.bytes_in);
    EXPECT_EQ(a.stats.bytes_out, b.stats.bytes_out);
    EXPECT_EQ(a.stats.op_dmas, b.stats.op_dmas);
    EXPECT_EQ(a.stats.op_bytes, b.stats.op_bytes);
    EXPECT_EQ(a.stats.body_dmas, b.stats.body_dmas);
    EXPECT_EQ(a.stats.inner_steps, b.stats.inner_steps);
    EXPECT_EQ(a.stats.inner_dmas, b.stats.inner_dmas);
    EXPECT_EQ(a.stats.inner_bytes, b.stats.inner_bytes);
    EXPECT_EQ(a.stats.total_work, b.stats.total_work);
    EXPECT_EQ(a.stats.vmem_peak, b.stats.vmem_peak);
    EXPECT_EQ(a.dangling_dmas, b.dangling_dmas);
}

}  // namespace memo_test
