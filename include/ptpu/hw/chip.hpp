// Defines ptpu::chip, the constexpr description of one TPU generation's TensorCore.
//
// Everything that differs between TPU generations is a field here; generic code reads fields and
// never names a generation (docs/layers.md). A chip is a structural aggregate so that it can be
// a non-type template parameter (`template <chip C>`, a sweep's `values<tpu::v5e, tpu::v6e>`);
// a pallas_call option names one by reference, `Chip<tpu::v5e>`. A user-defined chip is just
// another constexpr object (copy a preset and change the fields you calibrated).
#pragma once

#include <cstdint>

namespace ptpu {

/// One JAX device of a TPU generation (docs/model.md, "The chip presets"). HBM fields are per
/// device: a megacore device (v4, v5p) is both TensorCores of a chip, sharing its HBM; a 7x
/// device is one of the chip's two TensorCores, with half of it. The other fields are per
/// TensorCore; a device runs pallas_cores() of them. Each preset in hw/presets.hpp cites its source per field (the labels of docs/model.md).
struct chip {
    char name[16];       ///< "v5e", …
    int generation;      ///< 4, 5, 6, 7 (decides tiling rules, tpu_info.infer_tiling)
    int cores_per_chip;  ///< TensorCores on one chip (a device has pallas_cores() of them)
    bool megacore;       ///< true when the 2 TensorCores act as one device (v4, v5p)

    // Memories.
    std::int64_t vmem_bytes;        ///< VMEM per TensorCore
    std::int64_t vmem_limit_bytes;  ///< default scoped VMEM limit for one kernel
    std::int64_t smem_bytes;        ///< SMEM per TensorCore
    std::int64_t hbm_bytes;         ///< HBM capacity per device
    double hbm_bytes_per_s;         ///< HBM bandwidth per device (shared by a megacore device's two cores)

    // Compute.
    double peak_bf16_flops;     ///< MXU peak per TensorCore, bf16 FLOP/s
    double peak_int8_ops;       ///< MXU peak per TensorCore, int8 OP/s (0 when unsupported)
    int mxu_count;              ///< MXUs per TensorCore
    int mxu_dim;                ///< MXU is mxu_dim × mxu_dim; a dot's K and N pad to it
    int sublanes;               ///< vreg sublanes (8)
    int lanes;                  ///< vreg lanes (128)
    int vpu_alus_per_lane;      ///< VALU slots per lane per cycle
    int vmem_loads_per_cycle;   ///< vector loads VMEM→vreg per cycle (of the vector clock)
    int vmem_stores_per_cycle;  ///< vector stores vreg→VMEM per cycle (of the vector clock)
    double clock_hz;            ///< TensorCore clock

    // Overheads of the pipeline (docs/model.md §2, "The grid step").
    double step_overhead_s;  ///< per grid step control overhead `o`
    double dma_efficiency;   ///< achieved fraction of HBM bandwidth for large block DMAs
    double dma_latency_s;    ///< fixed latency from DMA issue to first byte moved
    double dma_issue_s;      ///< time the scalar core spends issuing one DMA
    /// DMA shape costs (docs/model.md, "DMA shape costs"): each contiguous run of a DMA costs
    /// the channel as much as this many more bytes ...
    double dma_run_cost_bytes = 0;
    /// ... and each DMA (descriptor) this much time of the channel before its bytes.
    double dma_descriptor_s = 0;

    // Vector units (docs/model.md, "Work to time").
    /// Clock of the VLIW bundle: every slot but the MXU's (VPU, EUP, loads, stores, XLU,
    /// scalar); 0: clock_hz. Differs from clock_hz on chips whose clock_hz is only derived from
    /// the MXU peak (v6e, 7x).
    double vector_clock_hz = 0;
    /// Vregs the EUP (exp, log, tanh, logistic, rsqrt, divide, …) takes per cycle.
    double eup_vregs_per_cycle = 1;
    /// Vregs the transpose unit (XLU) takes per cycle of the vector clock (transpose, a dot's
    /// transposed lhs; docs/model.md §5, "Slots").
    double xlu_vregs_per_cycle = 1;
    /// Vregs of MXU weights one MXU latches per cycle of the vector clock: a (K, N) weight tile
    /// of mxu_dim² bf16 values then takes mxu_dim² · 2 / 4096 / this cycles, the fewest LHS rows
    /// a product pays per tile (docs/model.md §5, "The MXU's tiles").
    double mxu_push_vregs_per_cycle = 1;

    /// Peak FLOP/s of one core for f32 operands at DEFAULT precision (one bf16 pass).
    [[nodiscard]] constexpr double peak_f32_default_flops() const { return peak_bf16_flops; }

    /// Vector register operations per second on one core: one vreg op per ALU slot per cycle.
    [[nodiscard]] constexpr double vreg_ops_per_s() const {
        return vector_hz() * static_cast<double>(vpu_alus_per_lane);
    }
    /// Transcendental vreg pushes per second on one core.
    [[nodiscard]] constexpr double eup_vregs_per_s() const { return vector_hz() * eup_vregs_per_cycle; }
    /// The clock of the vector units.
    [[nodiscard]] constexpr double vector_hz() const {
        return vector_clock_hz > 0 ? vector_clock_hz : clock_hz;
    }

    /// Cores a pallas_call may split its parallel grid dimensions over (S6, S43).
    [[nodiscard]] constexpr int pallas_cores() const { return megacore ? cores_per_chip : 1; }
};

}  // namespace ptpu
