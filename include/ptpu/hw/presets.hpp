// Defines the chip presets ptpu::tpu::{v4, v5e, v5p, v6e, v7x}, their lookup, and rule H1 (a chip
// description is valid: chip_problem, validate).
//
// A preset describes one JAX device (docs/model.md, "The chip presets"): HBM capacity and
// bandwidth are the device's (a megacore chip's two TensorCores form one device and share the
// chip's HBM; a 7x chip is two devices, each with half of it); VMEM, SMEM, the peaks and the
// clocks are per TensorCore, of which a device runs pallas_cores().
//
// Each field cites its source with the labels of docs/model.md, whose section 9 lists where every
// constant comes from: [spec] datasheet; [src] public source, mostly JAX's jax/_src/tpu_info.py
// (per TensorCore; per-chip figures are its values before the division by cores) or the scaling
// book; [meas] a published measurement; [derived] arithmetic on published data; [est] ptpu's
// estimate, to be calibrated against your own profiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/hw/chip.hpp"

namespace ptpu {

namespace detail {

inline constexpr std::int64_t mib = std::int64_t{1} << 20;

// [est] Scalar-core cycles to issue one DMA: the core pushes one DMA request per cycle
// [src], but first computes the block's addresses, sizes and semaphore with
// scalar instructions; a few dozen cycles is our guess.
inline constexpr double dma_issue_cycles_est = 32;

// The grid step, derived (docs/model.md, "The grid step"). The widely quoted ≈0.35 µs per grid
// step on v5e [meas] (docs/model.md §9) is the WHOLE steady-state step of a kernel whose compute
// and traffic are tiny, the reference being a bf16 matmul with (128,128,128) blocks: everything
// the scalar core does in such a step is inside it (loop control and program ids, index maps,
// the pipeline's bookkeeping, issuing the two next-block fetches, the waits, which return at
// once) plus the body's 128³ MXU product. The control overhead `o` is what is left once the
// parts the model charges separately are taken out:
//   o = 0.35 µs − 2 · i − C_ref,   i = 32 cycles,   C_ref = 2 · 128³ / peak_bf16 [derived].
inline constexpr double v5e_clock_hz = 1.5e9;       // [src] scaling book
inline constexpr double v5e_peak_bf16 = 1.97e14;    // [src] tpu_info.py
inline constexpr double v5e_tiny_step_s = 0.35e-6;  // [meas] docs/model.md §9, "whole tiny step"
inline constexpr double ref_block_flops = 2.0 * 128 * 128 * 128;
inline constexpr double v5e_step_overhead_s =
    v5e_tiny_step_s - 2 * dma_issue_cycles_est / v5e_clock_hz - ref_block_flops / v5e_peak_bf16;
// ≈ 286 ns, i.e. ≈ 429 scalar-core cycles: the other generations' `o` is these cycles at their
// own clock [est] (v4 0.41 µs, v5p 0.245 µs; v6e and 7x publish no usable clock and take v5e's
// time). Their whole tiny step then scales by clock too: v5p 0.30 µs, v4 0.50 µs (scaling from a
// 1.4 GHz v5e would give 0.28 and 0.47 µs; with the 1.5 GHz preset they are 0.30 and 0.50).
inline constexpr double step_overhead_cycles = v5e_step_overhead_s * v5e_clock_hz;

// [est] Nothing public gives the time from the end of a DMA's issue to its first byte. The v5e
// evidence bounds it: the reference step hides its next fetches (two 32 KiB blocks, 87 ns at
// 0.92 of 820 GB/s), issued one step ahead, so L + 87 ns + i <= 0.35 µs, i.e. L <= 0.24 µs. We
// take 0.2 µs, the order of an HBM round trip plus descriptor processing and well below the
// ≈1.7 µs fixed cost of whole XLA copy ops on 7x ([meas], op launch included; docs/model.md §9).
// It is a memory-system latency, not scalar-core cycles, so all generations take it.
inline constexpr double dma_latency_est_s = 0.2e-6;

// [est] DMA shape costs (docs/model.md §3, "DMA shape costs"). Each
// contiguous run of a DMA (a row of a block cut from a wider array) costs the channel as much as
// `dma_run_cost_bytes` more bytes (a new burst, address translation and row activation): runs of
// 1 KiB move at 94% of the contiguous rate, 256 B at 80%. Each descriptor costs the channel
// `dma_descriptor_s` of DMA-engine time (fetching and decoding it) before its bytes, as bytes at
// the channel's rate. No public numbers exist for either.
inline constexpr double dma_run_cost_bytes_est = 64;
inline constexpr double dma_descriptor_cycles_est = 16;

// η for contiguous block DMAs, [derived] from the one measurement (docs/model.md §9): the fused MLP
// moved 5,308,416 B of weights per grid step in a rigid 7.02 µs on v5e (756 GB/s, 0.92 of spec).
// Two of its three weight blocks are (1152, 384) f32 cut from (1152, 6912) arrays, 1152 runs of
// 1536 B each; the third, (384, 1152) of (6912, 1152), is one run. Under the shape costs above the
// step's channel time is (X + R·r0) / (B·η) + 3·d, so
//   η = (X + R·r0) / (B · (7.02 µs − 3·d)),  R = 2·1152 + 1,  d = 16 cycles at 1.5 GHz,
// ≈ 0.952: the 0.92 measured was the contiguous rate less the cost of those strided rows.
inline constexpr double mlp_step_bytes = 5308416;
inline constexpr double mlp_step_runs = 2 * 1152 + 1;
inline constexpr double v5e_dma_efficiency =
    (mlp_step_bytes + mlp_step_runs * dma_run_cost_bytes_est) /
    (8.20e11 * (7.02e-6 - 3 * dma_descriptor_cycles_est / v5e_clock_hz));

// The clock at which the published MXU peak is reached: peak / (MXUs · dim² · 2 FLOP per MAC).
constexpr double clock_from_peak(double peak_flops, int mxus, int dim) {
    return peak_flops / (static_cast<double>(mxus) * dim * dim * 2);
}

}  // namespace detail

namespace tpu {

inline constexpr chip v4{
    .name = "v4",
    .generation = 4,                             // [src] tpu_info.py
    .cores_per_chip = 2,                         // [src] tpu_info.py
    .megacore = true,                            // [src] tpu_info.py (v4 and v5p support megacore)
    .vmem_bytes = 16 * detail::mib,              // [src] tpu_info.py
    .vmem_limit_bytes = 16 * detail::mib,        // [est] ≤ 16 MiB (docs/model.md §9); we take all of VMEM
    .smem_bytes = 1 * detail::mib,               // [src] tpu_info.py
    // Per device: the megacore device is the whole chip, its two TensorCores sharing one HBM.
    .hbm_bytes = 34'400'000'000,                 // [src] tpu_info.py, per chip (= per device)
    .hbm_bytes_per_s = 1.23e12,                  // [src] tpu_info.py, per chip (= per device)
    .peak_bf16_flops = 1.375e14,                 // [src] tpu_info.py: 2.75e14 per chip / 2
    .peak_int8_ops = 0,                          // [src] tpu_info.py: not available
    .mxu_count = 4,                              // [src] tpu_info.py
    .mxu_dim = 128,                              // [src] tpu_info.py
    .sublanes = 8,                               // [src] tpu_info.py
    .lanes = 128,                                // [src] tpu_info.py
    .vpu_alus_per_lane = 2,                      // [src] scaling book
    .vmem_loads_per_cycle = 3,                   // [est] v5p's [src] value
    .vmem_stores_per_cycle = 1,                  // [est] v5p's [src] value
    .clock_hz = 1.05e9,                          // [derived] 1.375e14 / (4 · 128² · 2) = 1.049e9
    .step_overhead_s = detail::step_overhead_cycles / 1.05e9,  // [est] v5e's cycles (see above), 0.41 µs
    .dma_efficiency = detail::v5e_dma_efficiency,  // [est] v5e's [derived] value
    .dma_latency_s = detail::dma_latency_est_s,  // [est] see its definition
    .dma_issue_s = detail::dma_issue_cycles_est / 1.05e9,  // [est] 32 cycles at 1.05 GHz
    .dma_run_cost_bytes = detail::dma_run_cost_bytes_est,                 // [est] see its definition
    .dma_descriptor_s = detail::dma_descriptor_cycles_est / 1.05e9,      // [est] 16 DMA-engine cycles
    .vector_clock_hz = 0,  // the clock above
    .eup_vregs_per_cycle = 1,  // [est] one transcendental vreg push per cycle (no count is public)
    .xlu_vregs_per_cycle = 1,  // [est] one vreg per cycle through the transpose unit (no count is public)
    .mxu_push_vregs_per_cycle = 1,  // [est] one weight vreg per cycle into an MXU (no rate is public)
};

inline constexpr chip v5e{
    .name = "v5e",
    .generation = 5,                       // [src] tpu_info.py
    .cores_per_chip = 1,                   // [src] tpu_info.py
    .megacore = false,                     // [src] one TensorCore per chip
    .vmem_bytes = 128 * detail::mib,       // [src] tpu_info.py
    .vmem_limit_bytes = 16 * detail::mib,  // [meas] compiler messages (docs/model.md §9)
    .smem_bytes = 1 * detail::mib,         // [src] tpu_info.py
    .hbm_bytes = 17'200'000'000,           // [src] tpu_info.py
    .hbm_bytes_per_s = 8.20e11,            // [src] tpu_info.py
    .peak_bf16_flops = 1.97e14,            // [src] tpu_info.py
    .peak_int8_ops = 3.94e14,              // [src] tpu_info.py
    .mxu_count = 4,                        // [src] tpu_info.py
    .mxu_dim = 128,                        // [src] tpu_info.py
    .sublanes = 8,                         // [src] tpu_info.py
    .lanes = 128,                          // [src] tpu_info.py
    .vpu_alus_per_lane = 4,                // [src] scaling book
    .vmem_loads_per_cycle = 3,             // [est] v5p's [src] value
    .vmem_stores_per_cycle = 1,            // [est] v5p's [src] value
    .clock_hz = 1.5e9,                     // [src] scaling book
    // [derived] the 0.35 µs [meas] whole tiny step less its two DMA issues and its 128³ product
    .step_overhead_s = detail::v5e_step_overhead_s,
    // [derived] from the fused MLP's 7.02 µs per 5.31 MB step [meas] (756 GB/s), see above.
    .dma_efficiency = detail::v5e_dma_efficiency,
    .dma_latency_s = detail::dma_latency_est_s,           // [est] see its definition
    .dma_issue_s = detail::dma_issue_cycles_est / 1.5e9,  // [est] 32 cycles
    .dma_run_cost_bytes = detail::dma_run_cost_bytes_est,                 // [est] see its definition
    .dma_descriptor_s = detail::dma_descriptor_cycles_est / 1.5e9,      // [est] 16 DMA-engine cycles
    .vector_clock_hz = 0,  // the clock above
    .eup_vregs_per_cycle = 1,  // [est] one transcendental vreg push per cycle (no count is public)
    .xlu_vregs_per_cycle = 1,  // [est] one vreg per cycle through the transpose unit (no count is public)
    .mxu_push_vregs_per_cycle = 1,  // [est] one weight vreg per cycle into an MXU (no rate is public)
};

inline constexpr chip v5p{
    .name = "v5p",
    .generation = 5,                       // [src] tpu_info.py
    .cores_per_chip = 2,                   // [src] tpu_info.py
    .megacore = true,                      // [src] tpu_info.py
    .vmem_bytes = 64 * detail::mib,        // [src] tpu_info.py
    .vmem_limit_bytes = 16 * detail::mib,  // [meas] compiler messages (docs/model.md §9)
    .smem_bytes = 1 * detail::mib,         // [src] tpu_info.py
    // Per device: the megacore device is the whole chip, its two TensorCores sharing one HBM.
    .hbm_bytes = 103'000'000'000,          // [src] tpu_info.py, per chip (= per device)
    // [src] tpu_info.py, per chip (= per device); the Cloud v5p page says 2.765e12, tpu_info is
    // what JAX uses.
    .hbm_bytes_per_s = 2.46e12,
    .peak_bf16_flops = 2.295e14,  // [src] tpu_info.py: 4.59e14 per chip / 2
    .peak_int8_ops = 4.59e14,     // [src] tpu_info.py: 9.18e14 per chip / 2
    .mxu_count = 4,               // [src] tpu_info.py
    .mxu_dim = 128,               // [src] tpu_info.py
    .sublanes = 8,                // [src] tpu_info.py
    .lanes = 128,                 // [src] tpu_info.py
    .vpu_alus_per_lane = 4,       // [src] scaling book
    .vmem_loads_per_cycle = 3,    // [src] scaling book
    .vmem_stores_per_cycle = 1,   // [src] scaling book
    .clock_hz = 1.75e9,           // [src] scaling book
    .step_overhead_s = detail::step_overhead_cycles / 1.75e9,  // [est] v5e's cycles (see above), 0.245 µs
    .dma_efficiency = detail::v5e_dma_efficiency,          // [est] v5e's [derived] value
    .dma_latency_s = detail::dma_latency_est_s,            // [est] see its definition
    .dma_issue_s = detail::dma_issue_cycles_est / 1.75e9,  // [est] 32 cycles
    .dma_run_cost_bytes = detail::dma_run_cost_bytes_est,                 // [est] see its definition
    .dma_descriptor_s = detail::dma_descriptor_cycles_est / 1.75e9,      // [est] 16 DMA-engine cycles
    .vector_clock_hz = 0,  // the clock above
    .eup_vregs_per_cycle = 1,  // [est] one transcendental vreg push per cycle (no count is public)
    .xlu_vregs_per_cycle = 1,  // [est] one vreg per cycle through the transpose unit (no count is public)
    .mxu_push_vregs_per_cycle = 1,  // [est] one weight vreg per cycle into an MXU (no rate is public)
};

// v6e and 7x publish no clock, and their peaks do not match MXU count × shape × any plausible
// clock (docs/model.md §5). Their clock is therefore derived from the peak so that the fields agree
// with each other; MXU time reads peak_bf16_flops directly and the bundle's slots run at
// vector_clock_hz, so this clock only sets the on-chip DMA rate (sim::onchip_bytes_per_s). Times
// spent by the scalar core (step overhead, DMA issue) take v5e's values rather than being scaled
// by that clock.

inline constexpr chip v6e{
    .name = "v6e",
    .generation = 6,                       // [src] tpu_info.py
    .cores_per_chip = 1,                   // [src] tpu_info.py
    .megacore = false,                     // [src] one TensorCore per chip
    .vmem_bytes = 128 * detail::mib,       // [src] tpu_info.py
    .vmem_limit_bytes = 32 * detail::mib,  // [meas] compiler messages (docs/model.md §9)
    .smem_bytes = 1 * detail::mib,         // [src] tpu_info.py
    .hbm_bytes = 34'400'000'000,           // [src] tpu_info.py
    .hbm_bytes_per_s = 1.64e12,            // [src] tpu_info.py
    .peak_bf16_flops = 9.20e14,            // [src] tpu_info.py
    .peak_int8_ops = 1.84e15,              // [src] tpu_info.py
    .mxu_count = 2,                        // [src] tpu_info.py
    .mxu_dim = 256,                        // [src] tpu_info.py
    .sublanes = 8,                         // [src] tpu_info.py
    .lanes = 128,                          // [src] tpu_info.py
    .vpu_alus_per_lane = 4,                // [est] v5's [src] value
    .vmem_loads_per_cycle = 3,             // [est] v5p's [src] value
    .vmem_stores_per_cycle = 1,            // [est] v5p's [src] value
    // [est] 9.20e14 / (2 · 256² · 2) ≈ 3.51 GHz, see above; likely too high for real silicon.
    // One revision of Cloud's v6e page lists 4 MXUs per TensorCore, which would give 1.75 GHz.
    .clock_hz = detail::clock_from_peak(9.20e14, 2, 256),
    .step_overhead_s = detail::v5e_step_overhead_s,       // [est] v5e's [derived] value, see above
    .dma_efficiency = detail::v5e_dma_efficiency,         // [est] v5e's [derived] value
    .dma_latency_s = detail::dma_latency_est_s,           // [est] see its definition
    .dma_issue_s = detail::dma_issue_cycles_est / 1.5e9,  // [est] as v5e, see above
    .dma_run_cost_bytes = detail::dma_run_cost_bytes_est,                 // [est] see its definition
    .dma_descriptor_s = detail::dma_descriptor_cycles_est / 1.5e9,      // [est] 16 DMA-engine cycles
    // [est] the VPU's and EUP's clock: the peak at 4 MXUs of 256², 1.75 GHz (one revision of Cloud's v6e page lists 4 MXUs per TensorCore);
    // the 2-MXU clock_hz above is too high for the vector units (docs/model.md, "Work to time").
    .vector_clock_hz = detail::clock_from_peak(9.20e14, 4, 256),
    .eup_vregs_per_cycle = 1,  // [est] one transcendental vreg push per cycle (no count is public)
    .xlu_vregs_per_cycle = 1,  // [est] one vreg per cycle through the transpose unit (no count is public)
    .mxu_push_vregs_per_cycle = 1,  // [est] one weight vreg per cycle into an MXU (no rate is public)
};

inline constexpr chip v7x{
    .name = "v7x",
    .generation = 7,                       // [src] tpu_info.py
    .cores_per_chip = 2,                   // [src] tpu_info.py
    .megacore = false,                     // [src] tpu_info.py: each TensorCore is a device
    .vmem_bytes = 64 * detail::mib,        // [src] tpu_info.py
    .vmem_limit_bytes = 32 * detail::mib,  // [meas] compiler messages (docs/model.md §9)
    .smem_bytes = 1 * detail::mib,         // [src] tpu_info.py
    // Per device, i.e. per TensorCore (each is its own JAX device): half the chip's HBM.
    .hbm_bytes = 103'000'000'000,  // [src] tpu_info.py: 206e9 per chip / 2
    .hbm_bytes_per_s = 3.70e12,    // [src] tpu_info.py: 7.40e12 per chip / 2
    .peak_bf16_flops = 1.155e15,           // [src] tpu_info.py: 2.31e15 per chip / 2
    // [src] tpu_info.py: int8 not available. 7x has fp8 instead, ≈2.31e15 per TC (tpu_info:
    // 4.60e15 per chip / 2; docs/model.md §9), which this field does not model.
    .peak_int8_ops = 0,
    .mxu_count = 2,                                         // [src] tpu_info.py
    .mxu_dim = 256,                                         // [src] tpu_info.py
    .sublanes = 8,                                          // [src] tpu_info.py
    .lanes = 128,                                           // [src] tpu_info.py
    .vpu_alus_per_lane = 4,                                 // [est] v5's [src] value
    .vmem_loads_per_cycle = 3,                              // [est] v5p's [src] value
    .vmem_stores_per_cycle = 1,                             // [est] v5p's [src] value
    .clock_hz = detail::clock_from_peak(1.155e15, 2, 256),  // [est] ≈ 4.41 GHz, see above
    .step_overhead_s = detail::v5e_step_overhead_s,         // [est] v5e's [derived] value, see above
    // [est] the only 7x measurement: XLA-level HBM copies reach ≈87% of spec [meas]. Pallas block
    // DMAs on 7x are unmeasured; taking the chip's own figure over v5e's 0.95 is conservative.
    .dma_efficiency = 0.87,
    .dma_latency_s = detail::dma_latency_est_s,           // [est] see its definition
    .dma_issue_s = detail::dma_issue_cycles_est / 1.5e9,  // [est] as v5e, see above
    .dma_run_cost_bytes = detail::dma_run_cost_bytes_est,                 // [est] see its definition
    .dma_descriptor_s = detail::dma_descriptor_cycles_est / 1.5e9,      // [est] 16 DMA-engine cycles
    // [est] the VPU's and EUP's clock: the peak at 4 MXUs of 256², 2.2 GHz (as v6e: the peak at 4 MXUs of 256²);
    // the 2-MXU clock_hz above is too high for the vector units (docs/model.md, "Work to time").
    .vector_clock_hz = detail::clock_from_peak(1.155e15, 4, 256),
    .eup_vregs_per_cycle = 1,  // [est] one transcendental vreg push per cycle (no count is public)
    .xlu_vregs_per_cycle = 1,  // [est] one vreg per cycle through the transpose unit (no count is public)
    .mxu_push_vregs_per_cycle = 1,  // [est] one weight vreg per cycle into an MXU (no rate is public)
};

/// The chip a pallas_call without a Chip<...> option is checked against and timed on.
inline constexpr const chip& default_chip = v5e;

/// Every preset, oldest first, for tests, demos and sweeps.
inline constexpr const chip* all_presets[] = {&v4, &v5e, &v5p, &v6e, &v7x};

}  // namespace tpu

namespace detail {

// The name up to its terminating NUL (or all 16 chars if a user chip has none; H1 rejects that).
constexpr std::string_view name_of(const chip& c) {
    std::size_t n = 0;
    while (n < sizeof c.name && c.name[n] != '\0') ++n;
    return {c.name, n};
}

// Rule H1, written once: calls `on(ok, message)` for each condition in order. `message` is a
// literal at each call so that a compile-time failure shows it on both g++ and clang. The
// comparisons are written so that NaN fails them.
template <class On>
constexpr void each_h1_condition(const chip& c, On&& on) {
    const std::size_t name_size = name_of(c).size();
    on(name_size > 0 && name_size < sizeof c.name,
       "ptpu[H1] chip: name is empty or has no terminating NUL within 16 chars; give it a name "
       "of at most 15 chars");
    on(c.generation >= 4, "ptpu[H1] chip: generation is below 4; ptpu models TPU v4 and later");
    on(c.cores_per_chip >= 1 && c.cores_per_chip <= static_cast<int>(max_cores),
       "ptpu[H1] chip: cores_per_chip is not in [1, max_cores]; set it to 1, 2, 3 or 4");
    on(!c.megacore || c.cores_per_chip >= 2,
       "ptpu[H1] chip: megacore needs at least 2 cores_per_chip; set megacore = false or 2 or more cores");
    on(c.vmem_bytes > 0, "ptpu[H1] chip: vmem_bytes is not positive; set the VMEM capacity");
    on(c.vmem_limit_bytes > 0,
       "ptpu[H1] chip: vmem_limit_bytes is not positive; set the default scoped VMEM limit");
    on(c.vmem_limit_bytes <= c.vmem_bytes,
       "ptpu[H1] chip: vmem_limit_bytes exceeds vmem_bytes; lower it to at most vmem_bytes");
    on(c.smem_bytes > 0, "ptpu[H1] chip: smem_bytes is not positive; set the SMEM capacity");
    on(c.hbm_bytes > 0, "ptpu[H1] chip: hbm_bytes is not positive; set the HBM capacity");
    on(c.hbm_bytes_per_s > 0, "ptpu[H1] chip: hbm_bytes_per_s is not positive; set the chip's HBM bandwidth");
    on(c.peak_bf16_flops > 0,
       "ptpu[H1] chip: peak_bf16_flops is not positive; set the MXU peak per TensorCore");
    on(c.peak_int8_ops >= 0,
       "ptpu[H1] chip: peak_int8_ops is negative or NaN; use 0 when int8 is unsupported");
    on(c.mxu_count >= 1 && c.mxu_dim >= 1,
       "ptpu[H1] chip: mxu_count or mxu_dim is below 1; set the MXU count and shape");
    on(c.sublanes == 8 && c.lanes == 128,
       "ptpu[H1] chip: sublanes/lanes are not 8/128; ptpu's tiling rules assume 8x128 vregs");
    on(c.vpu_alus_per_lane >= 1 && c.vmem_loads_per_cycle >= 1 && c.vmem_stores_per_cycle >= 1,
       "ptpu[H1] chip: vpu_alus_per_lane, vmem_loads_per_cycle or vmem_stores_per_cycle is "
       "below 1; each must be at least 1");
    on(c.clock_hz > 0, "ptpu[H1] chip: clock_hz is not positive; set the TensorCore clock");
    on(c.vector_clock_hz >= 0 && c.eup_vregs_per_cycle > 0,
       "ptpu[H1] chip: vector_clock_hz is negative or NaN, or eup_vregs_per_cycle is not "
       "positive; use 0 for the chip clock and a positive EUP rate");
    on(c.xlu_vregs_per_cycle > 0 && c.mxu_push_vregs_per_cycle > 0,
       "ptpu[H1] chip: xlu_vregs_per_cycle or mxu_push_vregs_per_cycle is not positive; use a "
       "positive rate (vregs per cycle)");
    on(c.step_overhead_s >= 0 && c.dma_latency_s >= 0 && c.dma_issue_s >= 0,
       "ptpu[H1] chip: step_overhead_s, dma_latency_s or dma_issue_s is negative or NaN; use "
       "0 to model no overhead");
    on(c.dma_run_cost_bytes >= 0 && c.dma_descriptor_s >= 0,
       "ptpu[H1] chip: dma_run_cost_bytes or dma_descriptor_s is negative or NaN; use 0 to "
       "model no DMA shape cost");
    on(c.dma_efficiency > 0 && c.dma_efficiency <= 1,
       "ptpu[H1] chip: dma_efficiency is not in (0, 1]; it is the achieved fraction of "
       "hbm_bytes_per_s");
}

// The `what` part of `ptpu[ID] where: what; fix`.
constexpr std::string_view what_of(std::string_view message) {
    const std::size_t begin = message.find(": ");
    if (begin == std::string_view::npos) return message;
    const std::size_t end = message.find("; ", begin);
    return message.substr(begin + 2, end == std::string_view::npos ? end : end - begin - 2);
}

}  // namespace detail

/// Rule H1: "" when `c` is a usable chip description, otherwise a short description of the first
/// problem found (e.g. "vmem_limit_bytes exceeds vmem_bytes").
constexpr std::string_view chip_problem(const chip& c) {
    std::string_view first;
    detail::each_h1_condition(c, [&first](bool ok, const char* message) {
        if (!ok && first.empty()) first = message;
    });
    return detail::what_of(first);
}

/// Rule H1 as a check: throws ptpu::error (rule "H1") at run time, for chips built from user
/// data; in a constant expression (`constexpr bool ok = (validate(c), true);`) it stops compilation
/// and the compiler shows the `ptpu[H1] …` message.
constexpr void validate(const chip& c) {
    detail::each_h1_condition(c, [](bool ok, const char* message) { check(ok, message); });
}

namespace tpu {

/// The preset called `name` ("v4", "v5e", "v5p", "v6e", "v7x"), or nullptr.
constexpr const chip* find_preset(std::string_view name) {
    for (const chip* c : all_presets) {
        if (detail::name_of(*c) == name) return c;
    }
    return nullptr;
}

}  // namespace tpu

}  // namespace ptpu
