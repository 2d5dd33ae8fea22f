// Defines what the ops tests share: a kernel context for running ops outside a pallas_call, the
// rule id an action throws, and an independent bf16 rounding reference.
#pragma once

#include <ptpu/ptpu.hpp>

#include <bit>
#include <cstdint>
#include <random>
#include <string>

namespace ops_test {

using namespace ptpu;
using farr = vec<float>::array_type;
using iarr = vec<std::int32_t>::array_type;

/// A kernel context for running ops outside a pallas_call; `w()` is the work charged so far.
struct env {
    kernel_context ctx{};
    detail::context_guard guard{ctx};
    explicit env(bool timing = false) { ctx.timing_only = timing; }
    explicit env(const chip* hw, bool timing = false) {
        ctx.hw = hw;
        ctx.timing_only = timing;
    }
    [[nodiscard]] const work& w() const { return ctx.body_work; }
};

/// The rule id `fn` throws as ptpu::error, or "no error".
template <class F>
std::string rule_of(F&& fn) {
    try {
        fn();
    } catch (const error& e) {
        return e.rule();
    }
    return "no error";
}

/// Independent bf16 reference: the nearer of the two truncations, ties to the even one.
inline float ref_bf16(float f) {
    const auto x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t lo = x & 0xFFFF0000u;
    const std::uint32_t rest = x & 0xFFFFu;
    std::uint32_t r = lo;
    if (rest > 0x8000u || (rest == 0x8000u && ((lo >> 16) & 1u) != 0)) r = lo + 0x10000u;
    return std::bit_cast<float>(r);
}

/// A (r, c) vec of uniform values in [-range, range), reproducible from `seed`.
inline vec<float> random_vec(index_t r, index_t c, unsigned seed, float range) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-range, range);
    farr a(r, c);
    for (index_t i = 0; i < r; ++i)
        for (index_t j = 0; j < c; ++j) a(i, j) = d(g);
    return vec<float>(a);
}

}  // namespace ops_test
