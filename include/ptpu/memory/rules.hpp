// Defines the compile-time enforcement of the accessibility table: one `require_*` per column,
// each a static_assert whose message names the rule (S3, S4, S5, 21, 29, M1) and the fix.
// Refs, scratch and block specs call these at their entry points, so a misuse gives one message.
#pragma once

#include "ptpu/memory/space.hpp"

// The messages of S5 and 29, shared with the verdict (call/verdict.hpp), which computes them
// without instantiating Scratch or BlockSpec.
#define PTPU_RULE_TEXT_S5                                                            \
    "ptpu[S5] Scratch: scratch buffers live in vmem, smem or semaphore; HBM/ANY "    \
    "scratch is not allocatable, pass an extra operand with a BlockSpec in any"
#define PTPU_RULE_TEXT_29                                                             \
    "ptpu[29] BlockSpec: unsupported block memory space; use vmem or smem for a "     \
    "pipelined window, any/hbm for the raw ref"

namespace ptpu::rules {

template <class S>
constexpr bool require_vector_load() {
    static_assert(!S::access().far,
                  "ptpu[S3] kernel body: an ANY/HBM ref cannot be loaded; copy the block into a "
                  "VMEM buffer with sync_copy/async_copy, or give the BlockSpec vmem");
    static_assert(S::kind != space_kind::smem,
                  "ptpu[S4] kernel body: SMEM holds scalars only, no vector loads; read s[i] "
                  "one scalar at a time, or keep vector data in VMEM");
    static_assert(S::access().far || S::kind == space_kind::smem || vector_loadable<S>,
                  "ptpu[21] kernel body: vector loads are only allowed on VMEM refs");
    return true;
}

template <class S>
constexpr bool require_vector_store() {
    static_assert(!S::access().far,
                  "ptpu[S3] kernel body: an ANY/HBM ref cannot be stored to; write a VMEM buffer "
                  "and copy it out with sync_copy/async_copy, or give the BlockSpec vmem");
    static_assert(S::kind != space_kind::smem,
                  "ptpu[S4] kernel body: SMEM holds scalars only, no vector stores; write s[i] "
                  "one scalar at a time, or keep vector data in VMEM");
    static_assert(S::access().far || S::kind == space_kind::smem || vector_storable<S>,
                  "ptpu[21] kernel body: vector stores are only allowed on VMEM refs");
    return true;
}

template <class S>
constexpr bool require_scalar_load() {
    static_assert(!S::access().far,
                  "ptpu[S3] kernel body: an ANY/HBM ref cannot be loaded; copy it into SMEM or "
                  "VMEM with sync_copy/async_copy first");
    static_assert(S::access().far || scalar_loadable<S>,
                  "ptpu[21] kernel body: scalar loads are only allowed on SMEM and VMEM refs");
    return true;
}

template <class S>
constexpr bool require_scalar_store() {
    static_assert(!S::access().far,
                  "ptpu[S3] kernel body: an ANY/HBM ref cannot be stored to; write SMEM and copy "
                  "it out with sync_copy/async_copy");
    static_assert(S::kind != space_kind::vmem,
                  "ptpu[S4] kernel body: cannot store scalars to VMEM; store a vector slice "
                  "(x[ds(i, 1)]) or keep scalars in SMEM");
    static_assert(S::access().far || S::kind == space_kind::vmem || scalar_storable<S>,
                  "ptpu[21] kernel body: scalar stores are only allowed on SMEM refs");
    return true;
}

template <class S>
constexpr bool require_scratch() {
    static_assert(scratch_space<S>, PTPU_RULE_TEXT_S5);
    return true;
}

template <class S>
constexpr bool require_block_space() {
    static_assert(block_buffer_space<S> || windowless_space<S>, PTPU_RULE_TEXT_29);
    return true;
}

template <class Src, class Dst>
constexpr bool require_dma() {
    static_assert(dma_pair<Src, Dst>,
                  "ptpu[M1] DMA: no DMA path between these memory spaces; copy between HBM/ANY "
                  "and VMEM/SMEM (or VMEM to VMEM), semaphores are never copied");
    return true;
}

}  // namespace ptpu::rules
