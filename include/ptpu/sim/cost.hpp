// Defines ptpu::sim::cost_model, ptpu::sim::work_time and ptpu::sim::time_of: how long the work a
// kernel body charged (ptpu::work) keeps one TensorCore busy (docs/model.md, "Work to time").
#pragma once

#include <algorithm>
#include <limits>

#include "ptpu/core/error.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/hw/chip.hpp"

namespace ptpu::sim {

/// The cost factors the chip preset does not hold, because no public source gives them. All are
/// estimates [est]; calibrate them like preset fields. Cost factors are in cheap-vreg-op units.
struct cost_model {
    // [est] A medium op (divide, exp, log, tanh, logistic, pow, rsqrt; docs/ops.md) is one
    // push through the transcendental unit (EUP, chip::eup_vregs_per_s, a unit of its own) plus
    // VALU ops of range handling or a Newton step: this many cheap ops on the VALUs.
    double medium_factor = 2;
    // [est] sin/cos have no hardware unit: a range reduction plus a polynomial of degree 7-9 in
    // mul/add pairs is 16-24 VALU ops; 16 keeps it at four medium ops.
    double expensive_factor = 16;
    // [est] TPUv2/v3's VLIW bundle has 2 scalar slots (Norrie et al., IEEE Micro 2021); later
    // generations are assumed alike.
    double scalar_ops_per_cycle = 2;
    // [est] VMEM->VMEM DMAs (far = false in sim::op): a copy must store every byte into VMEM, and
    // we assume the DMA path into VMEM is as wide as one vreg store (8 x 128 x 4 B) per cycle, so
    // the on-chip rate is clock_hz * 4 KiB * this (6.1e12 B/s at a 1.5 GHz clock), per TensorCore.
    double onchip_vregs_per_cycle = 1;
    // [est] A vector op that reads a matmul's result (work.mxu_drains) waits for the systolic
    // array: an operand row crosses the mxu_dim columns while the partial sums go down the
    // mxu_dim rows, so the first result leaves 2 · mxu_dim cycles after the last operand went in
    // (fill + drain), whatever the throughput (docs/model.md §5, "The MXU drain").
    double mxu_drain_cycles_per_dim = 2;
    // [est] ... then the result buffer pops the first (8, 128) f32 vreg into the registers, one
    // sublane row per cycle: 8 cycles. Both in cycles of the vector clock (chip::vector_hz).
    double mxu_pop_cycles = 8;
};

/// The estimates above, the model's defaults.
inline constexpr cost_model default_costs{};

/// Seconds one body's work takes on one core, per unit, and the total.
struct work_time {
    double mxu = 0;         ///< MXU: bf16-rate FLOPs / peak_bf16_flops + int8 OPs / peak_int8_ops
    double vpu = 0;         ///< VALU: class-weighted vreg ops / (vector clock · ALUs per lane)
    double eup = 0;         ///< EUP: medium-class vregs / chip::eup_vregs_per_s
    double load = 0;        ///< vector loads / (clock · loads per cycle)
    double store = 0;       ///< vector stores / (clock · stores per cycle)
    double scalar = 0;      ///< scalar ops / (clock · scalar_ops_per_cycle)
    double explicit_s = 0;  ///< work.explicit_seconds, as charged
    double drain = 0;       ///< work.mxu_drains · mxu_drain_seconds (waits no unit overlaps)
    double total = 0;       ///< max(mxu, vpu, eup, load, store, scalar) + drain + explicit_s
};

namespace detail {

// NaN and infinities fail: they would poison every time that follows.

constexpr void check_work(const work& w) {
    ptpu::check_work(w);
}

}  // namespace detail

/// Rule C3: the factors are finite, the class factors non-negative and the rates positive.
constexpr void validate(const cost_model& m) {
    check(ptpu::detail::finite_non_negative(m.medium_factor) &&
              ptpu::detail::finite_non_negative(m.expensive_factor),
          "ptpu[C3] cost_model: medium_factor or expensive_factor is negative or not finite; use "
          "finite factors >= 0 (in cheap vreg ops)");
    check(ptpu::detail::finite_non_negative(m.scalar_ops_per_cycle) && m.scalar_ops_per_cycle > 0 &&
              ptpu::detail::finite_non_negative(m.onchip_vregs_per_cycle) && m.onchip_vregs_per_cycle > 0,
          "ptpu[C3] cost_model: scalar_ops_per_cycle or onchip_vregs_per_cycle is not a "
          "positive finite rate; use a rate > 0");
    check(ptpu::detail::finite_non_negative(m.mxu_drain_cycles_per_dim) &&
              ptpu::detail::finite_non_negative(m.mxu_pop_cycles),
          "ptpu[C3] cost_model: mxu_drain_cycles_per_dim or mxu_pop_cycles is negative or not "
          "finite; use finite cycle counts >= 0 (0 and 0 turn the MXU result latency off)");
}

/// The latency one MXU result exposes to the vector op that first reads it, seconds:
/// (mxu_drain_cycles_per_dim · mxu_dim + mxu_pop_cycles) / vector clock. v5e (128², 1.5 GHz):
/// 264 cycles, 176 ns; 7x (256², 2.2 GHz vector clock): 520 cycles, ≈236 ns.
constexpr double mxu_drain_seconds(const chip& c, const cost_model& m = default_costs) {
    return (m.mxu_drain_cycles_per_dim * static_cast<double>(c.mxu_dim) + m.mxu_pop_cycles) / c.vector_hz();
}

/// The time `w` takes on one core of `c`. The units are separate slots of one VLIW bundle and a
/// scheduled body keeps them busy at once, so the body takes as long as its busiest unit (the
/// best schedule; real code may serialise more of it). Two things add: each MXU result a vector
/// op waits for (work.mxu_drains · mxu_drain_seconds: the dependent op cannot start; counted as
/// hiding nothing, an upper bound where independent work could fill the wait, docs/model.md §5),
/// and explicit charges, time spent outside the modelled units. Throws C1 for negative or
/// non-finite work and C2 for int8 MXU work on a chip without an int8 rate. The chip is assumed
/// valid (rule H1).
constexpr work_time time_of(const work& w, const chip& c, const cost_model& m = default_costs) {
    detail::check_work(w);
    validate(m);
    check(!(w.mxu_int8_ops > 0) || c.peak_int8_ops > 0,
          "ptpu[C2] time_of: int8 MXU work on a chip whose peak_int8_ops is 0 (this chip has no "
          "int8 MXU rate); use bf16 operands on this chip, or set peak_int8_ops");
    const double clock = c.clock_hz;
    work_time t;
    t.mxu = w.mxu_passes_flops / c.peak_bf16_flops +
            (w.mxu_int8_ops > 0 ? w.mxu_int8_ops / c.peak_int8_ops : 0.0);
    t.vpu = (w.vreg_cheap + m.medium_factor * w.vreg_medium + m.expensive_factor * w.vreg_expensive) /
            c.vreg_ops_per_s();
    t.eup = w.vreg_medium / c.eup_vregs_per_s();
    t.load = w.vector_loads / (clock * static_cast<double>(c.vmem_loads_per_cycle));
    t.store = w.vector_stores / (clock * static_cast<double>(c.vmem_stores_per_cycle));
    t.scalar = w.scalar_ops / (clock * m.scalar_ops_per_cycle);
    t.explicit_s = w.explicit_seconds;
    t.drain = w.mxu_drains > 0 ? w.mxu_drains * mxu_drain_seconds(c, m) : 0.0;
    t.total = std::max({t.mxu, t.vpu, t.eup, t.load, t.store, t.scalar}) + t.drain + t.explicit_s;
    return t;
}

/// The on-chip (VMEM->VMEM) DMA bandwidth of one core, B/s: clock · one vreg · the factor.
constexpr double onchip_bytes_per_s(const chip& c, const cost_model& m = default_costs) {
    return c.clock_hz * static_cast<double>(c.sublanes * c.lanes * 4) * m.onchip_vregs_per_cycle;
}

}  // namespace ptpu::sim
