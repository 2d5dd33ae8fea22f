// Defines ptpu::work, the TPU work a kernel body did, as its operations charged it: MXU FLOPs
// (padded to the MXU shape), VPU vreg operations by cost class, vector loads and stores, scalar
// operations, explicit charges, the MXU results whose latency a dependent vector op waits for
// (mxu_drains), and the work on the body's longest dependence chain across units (chain). The
// timing model (sim/) turns work into time on a chip.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ptpu/core/error.hpp"

namespace ptpu {

/// Elementwise cost classes (from Pallas TPU details.rst; docs/ops.md, docs/model.md §9).
enum class vpu_class : unsigned char {
    cheap,     ///< add, sub, mul, min, max, select, compare, cast
    medium,    ///< divide, exp, log, tanh, pow, rsqrt
    expensive  ///< sin, cos
};

/// The work of the ops on one dependence chain through a body (docs/model.md §5, "Dependence
/// chains"): each op on it waits for the one before, so their times add whatever unit they use.
/// Vector loads and stores are not on it (they stream with the ops that use their vregs).
struct chain_work {
    double mxu_passes_flops = 0;  ///< as work::mxu_passes_flops
    double mxu_int8_ops = 0;
    double vreg_cheap = 0;
    double vreg_medium = 0;
    double vreg_expensive = 0;
    double xlu_vregs = 0;

    chain_work& operator+=(const chain_work& o) {
        mxu_passes_flops += o.mxu_passes_flops;
        mxu_int8_ops += o.mxu_int8_ops;
        vreg_cheap += o.vreg_cheap;
        vreg_medium += o.vreg_medium;
        vreg_expensive += o.vreg_expensive;
        xlu_vregs += o.xlu_vregs;
        return *this;
    }
    friend bool operator==(const chain_work&, const chain_work&) = default;
};

/// What a dependence chain's ops cost on one chip, as the timing model counts a chain: each of
/// chain_work's fields at its unit's rate (sim::chain_rates_of makes them from a chip and cost
/// model). The ops read them to keep the longer of two chains; the model times the kept one.
struct chain_rates {
    double mxu_flops_per_s = 1;       ///< the MXU's bf16-rate peak
    double mxu_int8_ops_per_s = 1;    ///< the MXU's int8 peak (0: none)
    double vreg_ops_per_s = 1;        ///< the vector ALUs' cheap vreg ops per second
    double expensive_factor = 0;      ///< cheap ops an expensive one costs
    double medium_op_seconds = 0;     ///< one medium vreg op (its VALU part and EUP push side by side)
    double xlu_vregs_per_s = 1;       ///< vregs the transpose unit moves per second

    /// The chain's ops one after the other, seconds.
    [[nodiscard]] constexpr double seconds(const chain_work& w) const {
        return w.mxu_passes_flops / mxu_flops_per_s +
               (w.mxu_int8_ops > 0 ? w.mxu_int8_ops / mxu_int8_ops_per_s : 0.0) +
               (w.vreg_cheap + expensive_factor * w.vreg_expensive) / vreg_ops_per_s +
               w.vreg_medium * medium_op_seconds + w.xlu_vregs / xlu_vregs_per_s;
    }
};

struct work {
    double mxu_passes_flops = 0;  ///< MXU FLOPs at the bf16 rate, padded, × passes (f32 HIGHEST: 6)
    double mxu_int8_ops = 0;      ///< MXU OPs at the int8 rate, padded
    double vreg_cheap = 0;        ///< (8,128) vreg operations, cheap class
    double vreg_medium = 0;       ///< medium class (each costs several cheap ones, see sim/)
    double vreg_expensive = 0;    ///< expensive class
    double vector_loads = 0;      ///< vregs loaded VMEM → registers
    double vector_stores = 0;     ///< vregs stored registers → VMEM
    double scalar_ops = 0;        ///< scalar-unit operations (SMEM loads/stores, address math)
    double explicit_seconds = 0;  ///< charge() by the body for work done outside ops/
    /// MXU results first read by vector work (ops/vec.hpp, "MXU results"): each waits for the
    /// systolic array's fill and drain, which overlaps nothing (docs/model.md §5).
    /// Counted per dependence level (ops/vec.hpp, "MXU results"): the highest level of MXU result
    /// the body waited for, since the results of one level can all be issued before the first of
    /// them is read.
    double mxu_drains = 0;
    /// (8,128) vregs through the transpose unit (XLU): transpose, dot's transposed lhs.
    double xlu_vregs = 0;
    /// The longest dependence chain through the body (chain_work); bodies added one after the
    /// other chain one after the other.
    chain_work chain{};

    /// This work `k` times over (k bodies alike, one after the other).
    [[nodiscard]] work scaled(double k) const {
        work w = *this;
        for (double* f : {&w.mxu_passes_flops, &w.mxu_int8_ops, &w.vreg_cheap, &w.vreg_medium, &w.vreg_expensive,
                          &w.vector_loads, &w.vector_stores, &w.scalar_ops, &w.explicit_seconds, &w.mxu_drains,
                          &w.xlu_vregs, &w.chain.mxu_passes_flops, &w.chain.mxu_int8_ops, &w.chain.vreg_cheap,
                          &w.chain.vreg_medium, &w.chain.vreg_expensive, &w.chain.xlu_vregs})
            *f *= k;
        return w;
    }

    work& operator+=(const work& o) {
        mxu_passes_flops += o.mxu_passes_flops;
        mxu_int8_ops += o.mxu_int8_ops;
        vreg_cheap += o.vreg_cheap;
        vreg_medium += o.vreg_medium;
        vreg_expensive += o.vreg_expensive;
        vector_loads += o.vector_loads;
        vector_stores += o.vector_stores;
        scalar_ops += o.scalar_ops;
        explicit_seconds += o.explicit_seconds;
        mxu_drains += o.mxu_drains;
        xlu_vregs += o.xlu_vregs;
        chain += o.chain;
        return *this;
    }
    friend bool operator==(const work&, const work&) = default;
    [[nodiscard]] bool empty() const { return same_bytes(*this, work{}) || *this == work{}; }
    /// Whether a and b hold the same bytes, so are equal: a quick first test where works are
    /// compared once or more per op (works equal field by field can still differ in bytes: -0.0
    /// and 0.0).
    [[nodiscard]] friend bool same_bytes(const work& a, const work& b) noexcept {
        std::array<std::uint64_t, sizeof(work) / 8> x, y;  // whole words, no early exit: vector ops
        std::memcpy(x.data(), &a, sizeof(work));
        std::memcpy(y.data(), &b, sizeof(work));
        std::uint64_t d = 0;
        for (std::size_t i = 0; i < x.size(); ++i) d |= x[i] ^ y[i];
        return d == 0;
    }
};
static_assert(sizeof(work) == 17 * sizeof(double),
              "work is doubles only, no padding: same_bytes reads them all");

namespace detail {
constexpr bool finite_non_negative(double x) {
    return x >= 0 && x <= std::numeric_limits<double>::max();
}
}  // namespace detail

/// Rule C1: every field of charged work is finite and non-negative. Checked when work is charged
/// and again when it is turned into time.
constexpr void check_work(const work& w) {
    check(detail::finite_non_negative(w.mxu_passes_flops),
          "ptpu[C1] work: work.mxu_passes_flops is negative or not finite; charge only "
          "finite, non-negative work");
    check(detail::finite_non_negative(w.mxu_int8_ops),
          "ptpu[C1] work: work.mxu_int8_ops is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.vreg_cheap),
          "ptpu[C1] work: work.vreg_cheap is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.vreg_medium),
          "ptpu[C1] work: work.vreg_medium is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.vreg_expensive),
          "ptpu[C1] work: work.vreg_expensive is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.vector_loads),
          "ptpu[C1] work: work.vector_loads is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.vector_stores),
          "ptpu[C1] work: work.vector_stores is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.scalar_ops),
          "ptpu[C1] work: work.scalar_ops is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.explicit_seconds),
          "ptpu[C1] work: work.explicit_seconds is negative or not finite; charge only "
          "finite, non-negative time");
    check(detail::finite_non_negative(w.mxu_drains),
          "ptpu[C1] work: work.mxu_drains is negative or not finite; charge only finite, "
          "non-negative work");
    check(detail::finite_non_negative(w.xlu_vregs),
          "ptpu[C1] work: work.xlu_vregs is negative or not finite; charge only finite, "
          "non-negative work");
    const chain_work& c = w.chain;
    check(detail::finite_non_negative(c.mxu_passes_flops) && detail::finite_non_negative(c.mxu_int8_ops) &&
              detail::finite_non_negative(c.vreg_cheap) && detail::finite_non_negative(c.vreg_medium) &&
              detail::finite_non_negative(c.vreg_expensive) && detail::finite_non_negative(c.xlu_vregs),
          "ptpu[C1] work: a field of work.chain is negative or not finite; charge only finite, "
          "non-negative work");
}

}  // namespace ptpu
