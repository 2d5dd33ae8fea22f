// Defines ptpu::sim::cost_model, ptpu::sim::work_time and ptpu::sim::time_of: how long the work a
// kernel body charged (ptpu::work) keeps one TensorCore busy (docs/model.md, "Work to time").
#pragma once

#include <algorithm>
#include <limits>
#include <utility>

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

/// The issue slots of a TensorCore's VLIW bundle that a body's work occupies (docs/model.md §5,
/// "Slots"), and the dependence chain that can outlast them all.
enum class slot : unsigned char {
    mxu,           ///< "MXU": the systolic arrays (chip::peak_bf16_flops, peak_int8_ops)
    vector_alu,    ///< "vector ALU": chip::vpu_alus_per_lane slots
    eup,           ///< "EUP": the transcendental unit, chip::eup_vregs_per_cycle
    vector_load,   ///< "vector load": chip::vmem_loads_per_cycle slots
    vector_store,  ///< "vector store": chip::vmem_stores_per_cycle slots
    xlu,           ///< "XLU": the transpose unit, chip::xlu_vregs_per_cycle
    scalar,        ///< "scalar": cost_model::scalar_ops_per_cycle slots
    chain,         ///< "dependence chain": ops that wait for each other, across units
    none,          ///< no work
};

/// The name reports print: "MXU", "vector ALU", "EUP", "vector load", "vector store", "XLU",
/// "scalar", "dependence chain", "" for none.
constexpr const char* name(slot s) {
    switch (s) {
        case slot::mxu: return "MXU";
        case slot::vector_alu: return "vector ALU";
        case slot::eup: return "EUP";
        case slot::vector_load: return "vector load";
        case slot::vector_store: return "vector store";
        case slot::xlu: return "XLU";
        case slot::scalar: return "scalar";
        case slot::chain: return "dependence chain";
        case slot::none: return "";
    }
    return "";
}

/// Seconds one body's work takes on one core, per slot, and the total.
struct work_time {
    double mxu = 0;         ///< MXU: bf16-rate FLOPs / peak_bf16_flops + int8 OPs / peak_int8_ops
    double vpu = 0;         ///< vector ALU: class-weighted vreg ops / (f_v · ALUs per lane)
    double eup = 0;         ///< EUP: medium-class vregs / chip::eup_vregs_per_s
    double load = 0;        ///< vector loads / (f_v · loads per cycle)
    double store = 0;       ///< vector stores / (f_v · stores per cycle)
    double xlu = 0;         ///< XLU vregs / (f_v · chip::xlu_vregs_per_cycle)
    double scalar = 0;      ///< scalar ops / (f_v · scalar_ops_per_cycle)
    double slots = 0;       ///< the busiest slot: max of the seven above, the bound no schedule beats
    double chain = 0;       ///< the longest dependence chain: its ops' times added (chain_seconds)
    double explicit_s = 0;  ///< work.explicit_seconds, as charged
    double drain = 0;       ///< work.mxu_drains · mxu_drain_seconds (waits no unit overlaps)
    double total = 0;       ///< max(slots, chain) + drain + explicit_s
    slot bound = slot::none;  ///< what sets max(slots, chain): the busiest slot, or the chain
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

/// Seconds one medium-class vreg op keeps its chain waiting: its VALU part and its EUP push
/// run side by side, so the slower of the two.
constexpr double medium_op_seconds(const chip& c, const cost_model& m) {
    return std::max(m.medium_factor / c.vreg_ops_per_s(), 1.0 / c.eup_vregs_per_s());
}

/// The rates a dependence chain's ops run at on `c` (chain_rates): MXU FLOPs at the peaks, VALU
/// ops at the vector ALUs' rate (medium ones at medium_op_seconds), XLU vregs at the transpose
/// unit's.
constexpr chain_rates chain_rates_of(const chip& c, const cost_model& m = default_costs) {
    return {c.peak_bf16_flops, c.peak_int8_ops,         c.vreg_ops_per_s(),
            m.expensive_factor, medium_op_seconds(c, m), c.vector_hz() * c.xlu_vregs_per_cycle};
}

/// The time of a dependence chain (work.chain): its ops one after the other, each at its unit's
/// rate (chain_rates_of).
constexpr double chain_seconds(const chain_work& w, const chip& c, const cost_model& m = default_costs) {
    return chain_rates_of(c, m).seconds(w);
}

/// The time `w` takes on one core of `c` (docs/model.md §5). Each unit issues from its slots of
/// the VLIW bundle, all at the vector clock f_v (chip::vector_hz()), and a scheduled body keeps
/// them busy at once: no schedule is shorter than its busiest slot (`slots`). Ops that depend on
/// each other across units cannot overlap (a mask computed on the VALUs feeding a dot waits for
/// the VALUs, the dot's consumer for the dot): the longest such chain (`chain`, recorded by the
/// ops as they run) is a second lower bound. The body takes the larger of the two. Two things
/// add: each level of MXU results a vector op waits for (work.mxu_drains · mxu_drain_seconds:
/// the array's fill and drain, which nothing overlaps, docs/model.md §5) and explicit charges,
/// time spent outside the modelled units. Throws C1 for negative or non-finite work and C2 for
/// int8 MXU work on a chip without an int8 rate. The chip is assumed valid (rule H1).
constexpr work_time time_of(const work& w, const chip& c, const cost_model& m = default_costs) {
    detail::check_work(w);
    validate(m);
    check(!(w.mxu_int8_ops > 0 || w.chain.mxu_int8_ops > 0) || c.peak_int8_ops > 0,
          "ptpu[C2] time_of: int8 MXU work on a chip whose peak_int8_ops is 0 (this chip has no "
          "int8 MXU rate); use bf16 operands on this chip, or set peak_int8_ops");
    // [derived] Every slot of a bundle issues at the one clock the bundle does: the vector units'
    // (docs/model.md §5, "One clock for the bundle").
    const double f = c.vector_hz();
    work_time t;
    t.mxu = w.mxu_passes_flops / c.peak_bf16_flops +
            (w.mxu_int8_ops > 0 ? w.mxu_int8_ops / c.peak_int8_ops : 0.0);
    t.vpu = (w.vreg_cheap + m.medium_factor * w.vreg_medium + m.expensive_factor * w.vreg_expensive) /
            c.vreg_ops_per_s();
    t.eup = w.vreg_medium / c.eup_vregs_per_s();
    t.load = w.vector_loads / (f * static_cast<double>(c.vmem_loads_per_cycle));
    t.store = w.vector_stores / (f * static_cast<double>(c.vmem_stores_per_cycle));
    t.xlu = w.xlu_vregs / (f * c.xlu_vregs_per_cycle);
    t.scalar = w.scalar_ops / (f * m.scalar_ops_per_cycle);
    const std::pair<double, slot> busiest[] = {{t.mxu, slot::mxu},          {t.vpu, slot::vector_alu},
                                               {t.eup, slot::eup},          {t.load, slot::vector_load},
                                               {t.store, slot::vector_store}, {t.xlu, slot::xlu},
                                               {t.scalar, slot::scalar}};
    for (const auto& [s, which] : busiest) {
        if (s > t.slots) {
            t.slots = s;
            t.bound = which;
        }
    }
    t.chain = chain_seconds(w.chain, c, m);
    // The chain bounds the body when it is longer than the busiest slot by more than rounding
    // (a chain of one unit's ops equals that unit's time).
    if (t.chain > t.slots * (1 + 1e-12)) t.bound = slot::chain;
    t.explicit_s = w.explicit_seconds;
    t.drain = w.mxu_drains > 0 ? w.mxu_drains * mxu_drain_seconds(c, m) : 0.0;
    t.total = std::max(t.slots, t.chain) + t.drain + t.explicit_s;
    return t;
}

/// The on-chip (VMEM->VMEM) DMA bandwidth of one core, B/s: clock · one vreg · the factor.
constexpr double onchip_bytes_per_s(const chip& c, const cost_model& m = default_costs) {
    return c.clock_hz * static_cast<double>(c.sublanes * c.lanes * 4) * m.onchip_vregs_per_cycle;
}

}  // namespace ptpu::sim
