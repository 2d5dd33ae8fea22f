// Defines the memory spaces (any, hbm, vmem, smem, semaphore, vmem_shared, cmem) and the ONE
// accessibility table that decides what may touch what (S1–S6, S47, S56, checks 21 and 29;
// docs/guide.md, "What a body may touch"). Every other layer asks this table; none keeps its own list.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "ptpu/core/error.hpp"
#include "ptpu/core/message.hpp"

namespace ptpu {

/// The memory spaces of a TensorCore (S1). `any` is "wherever the compiler puts it", in practice
/// HBM; `vmem_shared` and `cmem` exist for completeness (S1) and are reachable by DMA only.
enum class space_kind : std::uint8_t { any, hbm, vmem, smem, semaphore, vmem_shared, cmem };

inline constexpr std::size_t space_count = 7;

/// One row of the accessibility table.
struct space_access {
    std::string_view name;
    bool vector_load;   ///< a kernel body may load vectors from it           (S3, S4, check 21)
    bool vector_store;  ///< a kernel body may store vectors to it            (S3, S4, check 21)
    bool scalar_load;   ///< a kernel body may load scalars from it           (S4, check 21)
    bool scalar_store;  ///< a kernel body may store scalars to it            (S4, check 21)
    bool dma_endpoint;  ///< may be a DMA source or destination               (S3, S58)
    bool scratch;       ///< may hold scratch_shapes / run_scoped buffers     (S5)
    bool block_buffer;  ///< may be pipelined as a windowed block buffer      (S47, S56, check 29)
    bool windowless;    ///< a BlockSpec in this space gives the raw ref, no window (S17, S47)
    bool per_core;      ///< each TensorCore has its own (true) or all share it (false) (S6)
    bool far;           ///< off-core memory (HBM side): DMAs to or from it go over HBM bandwidth
};

namespace detail {
// The table. Columns: vload vstore sload sstore dma scratch block windowless per_core far.
// Rationale per row:
//  any/hbm: only DMA touches them (S3); no window, the body gets the raw ref (S17, S47); shared
//           by the cores of a megacore chip (S6).
//  vmem:    vector loads and stores; scalar loads are extracted from a vector load, but scalar
//           stores do not lower (S4, "Cannot store scalars to VMEM"); scratch (S5); windowed (S47).
//  smem:    scalar loads and stores only (S4, check 21); scratch (S5); windowed (S47, S56).
//  semaphore: signal/wait only, never loaded or copied; scratch (S5); a semaphore BlockSpec has no
//           window (S47).
//  vmem_shared, cmem: reachable by DMA only from a TensorCore kernel [M]; shared [M].
inline constexpr std::array<space_access, space_count> table{{
    {"any", false, false, false, false, true, false, false, true, false, true},
    {"hbm", false, false, false, false, true, false, false, true, false, true},
    {"vmem", true, true, true, false, true, true, true, false, true, false},
    {"smem", false, false, true, true, true, true, true, false, true, false},
    {"semaphore", false, false, false, false, false, true, false, true, true, false},
    {"vmem_shared", false, false, false, false, true, false, false, false, false, false},
    {"cmem", false, false, false, false, true, false, false, false, false, true},
}};
}  // namespace detail

/// The row of `s` in the accessibility table.
constexpr const space_access& access(space_kind s) {
    return detail::table[static_cast<std::size_t>(s)];
}

constexpr std::string_view name(space_kind s) {
    return access(s).name;
}

/// Whether a DMA can move bytes from `src` to `dst` (S3, S56, S58) [M for the on-chip pairs]:
/// every DMA has an HBM/ANY end, except VMEM→VMEM local copies and VMEM↔VMEM_SHARED. Semaphores
/// are never DMA endpoints.
constexpr bool dma_path(space_kind src, space_kind dst) {
    const auto& s = access(src);
    const auto& d = access(dst);
    if (!s.dma_endpoint || !d.dma_endpoint) return false;
    if (s.far || d.far) return true;
    auto on_chip_pair = [](space_kind a, space_kind b) {
        return a == space_kind::vmem && (b == space_kind::vmem || b == space_kind::vmem_shared);
    };
    return on_chip_pair(src, dst) || on_chip_pair(dst, src);
}

/// Run-time form of the DMA-pair rule (M1): throws ptpu::error naming both spaces.
inline void check_dma_path(space_kind src, space_kind dst, std::string_view where) {
    if (!dma_path(src, dst))
        throw error(
            "M1", where,
            std::string("no DMA path from ") + std::string(name(src)) + " to " + std::string(name(dst)),
            "DMA between HBM/ANY and VMEM/SMEM, or VMEM to VMEM; semaphores are never "
            "copied");
}

// ---- The spaces as short strong types (what users write in specs) ----------------------------

template <space_kind K>
struct memory_space {
    static constexpr space_kind kind = K;
    static constexpr const space_access& access() { return ptpu::access(K); }
};

struct any : memory_space<space_kind::any> {};
struct hbm : memory_space<space_kind::hbm> {};
struct vmem : memory_space<space_kind::vmem> {};
struct smem : memory_space<space_kind::smem> {};
struct semaphore : memory_space<space_kind::semaphore> {};

/// The cells of semaphore scratch (S60): Scratch<semaphore, dma_semaphore, 2> is Pallas's
/// SemaphoreType.DMA((2,)), Scratch<semaphore, regular_semaphore> its SemaphoreType.REGULAR.
/// A DMA semaphore counts the bytes of the DMAs that complete into it; a regular one counts
/// signals. (Scratch<semaphore, std::int32_t, ...>, the older spelling, is a regular one.)
struct dma_semaphore {
    std::int32_t count;
};
struct regular_semaphore {
    std::int32_t count;
};
template <class T>
inline constexpr bool is_semaphore_cell =
    std::is_same_v<std::remove_const_t<T>, dma_semaphore> || std::is_same_v<std::remove_const_t<T>, regular_semaphore>;
struct vmem_shared : memory_space<space_kind::vmem_shared> {};
struct cmem : memory_space<space_kind::cmem> {};

template <class S>
concept space = std::is_base_of_v<memory_space<S::kind>, S>;

/// The space of a named operand's ref: pallas_call hands the body of Arg<X, Spec, "weights"> a
/// ref whose space is named_space<Spec's space, "weights">, so that a compile error about it
/// (a vector load of an SMEM ref, a DMA with no path) names the operand. It is its space in every
/// other respect (kind, access(), the concepts below); operands without a name get the plain
/// space.
template <class Space, operand_name Name>
struct named_space : Space {
    static constexpr operand_name operand = Name;
};
namespace detail {
template <class S>
struct unnamed_space {
    using type = S;
};
template <class S, operand_name N>
struct unnamed_space<named_space<S, N>> {
    using type = S;
};
}  // namespace detail
/// The space without its operand's name: vmem for vmem and named_space<vmem, "x">.
template <class S>
using unnamed_space_t = typename detail::unnamed_space<S>::type;
/// The name of the operand a space is named for, empty for a plain space.
template <class S>
inline constexpr operand_name space_operand{};
template <class S, operand_name N>
inline constexpr operand_name space_operand<named_space<S, N>> = N;

/// A space as messages write it: ANY, HBM, VMEM, SMEM, semaphore, VMEM_SHARED, CMEM.
constexpr std::string_view display_name(space_kind s) {
    constexpr std::string_view names[] = {"ANY", "HBM", "VMEM", "SMEM", "semaphore", "VMEM_SHARED", "CMEM"};
    return names[static_cast<std::size_t>(s)];
}

/// Named concepts over the table. Each concept is one column.
template <class S>
concept vector_loadable = space<S> && S::access()
.vector_load;
template <class S>
concept vector_storable = space<S> && S::access()
.vector_store;
template <class S>
concept scalar_loadable = space<S> && S::access()
.scalar_load;
template <class S>
concept scalar_storable = space<S> && S::access()
.scalar_store;
template <class S>
concept scratch_space = space<S> && S::access()
.scratch;
template <class S>
concept block_buffer_space = space<S> && S::access()
.block_buffer;
template <class S>
concept windowless_space = space<S> && S::access()
.windowless;
template <class Src, class Dst>
concept dma_pair = space<Src> && space<Dst> && dma_path(Src::kind, Dst::kind);

}  // namespace ptpu
