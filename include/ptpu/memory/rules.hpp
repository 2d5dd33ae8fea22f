// Defines the compile-time enforcement of the accessibility table: one `require_*` per column,
// each a static_assert whose message names the rule (S3, S4, S5, 21, 29, M1) and the fix.
// Refs, scratch and block specs call these at their entry points, so a misuse gives one message.
// With g++ (PTPU_COMPOSED_MESSAGES) the message of a ref's rule also names what it is about: the
// operand, when the ref is a named operand's (named_space), and a DMA's two spaces.
#pragma once

#include <string_view>

#include "ptpu/core/message.hpp"
#include "ptpu/memory/space.hpp"

// The messages of S5 and 29, shared with the verdict (call/verdict.hpp), which computes them
// without instantiating Scratch or BlockSpec.
#define PTPU_RULE_TEXT_S5                                                            \
    "ptpu[S5] Scratch: scratch buffers live in vmem, smem or semaphore; HBM/ANY "    \
    "scratch is not allocatable, pass an extra operand with a BlockSpec in any"
#define PTPU_RULE_TEXT_29                                                             \
    "ptpu[29] BlockSpec: unsupported block memory space; use vmem or smem for a "     \
    "pipelined window, any/hbm for the raw ref"

// The messages of the kernel body's access rules: each is the static_assert text for a ref of a
// plain space, and the base of the composed message for a named operand's ref.
#define PTPU_RULE_TEXT_S3_VECTOR_LOAD                                                     \
    "ptpu[S3] kernel body: an ANY/HBM ref cannot be loaded; copy the block into a VMEM " \
    "buffer with sync_copy/async_copy, or give the BlockSpec vmem"
#define PTPU_RULE_TEXT_S4_VECTOR_LOAD                                                    \
    "ptpu[S4] kernel body: SMEM holds scalars only, no vector loads; read s[i] one " \
    "scalar at a time, or keep vector data in VMEM"
#define PTPU_RULE_TEXT_21_VECTOR_LOAD "ptpu[21] kernel body: vector loads are only allowed on VMEM refs"
#define PTPU_RULE_TEXT_S3_VECTOR_STORE                                                     \
    "ptpu[S3] kernel body: an ANY/HBM ref cannot be stored to; write a VMEM buffer and " \
    "copy it out with sync_copy/async_copy, or give the BlockSpec vmem"
#define PTPU_RULE_TEXT_S4_VECTOR_STORE                                                   \
    "ptpu[S4] kernel body: SMEM holds scalars only, no vector stores; write s[i] one " \
    "scalar at a time, or keep vector data in VMEM"
#define PTPU_RULE_TEXT_21_VECTOR_STORE "ptpu[21] kernel body: vector stores are only allowed on VMEM refs"
#define PTPU_RULE_TEXT_S3_SCALAR_LOAD                                                    \
    "ptpu[S3] kernel body: an ANY/HBM ref cannot be loaded; copy it into SMEM or VMEM " \
    "with sync_copy/async_copy first"
#define PTPU_RULE_TEXT_21_SCALAR_LOAD \
    "ptpu[21] kernel body: scalar loads are only allowed on SMEM and VMEM refs"
#define PTPU_RULE_TEXT_S3_SCALAR_STORE                                                     \
    "ptpu[S3] kernel body: an ANY/HBM ref cannot be stored to; write SMEM and copy it out " \
    "with sync_copy/async_copy"
#define PTPU_RULE_TEXT_S4_SCALAR_STORE                                            \
    "ptpu[S4] kernel body: cannot store scalars to VMEM; store a vector slice " \
    "(x[ds(i, 1)]) or keep scalars in SMEM"
#define PTPU_RULE_TEXT_21_SCALAR_STORE "ptpu[21] kernel body: scalar stores are only allowed on SMEM refs"
#define PTPU_RULE_TEXT_M1                                                               \
    "ptpu[M1] DMA: no DMA path between these memory spaces; copy between HBM/ANY and " \
    "VMEM/SMEM (or VMEM to VMEM), semaphores are never copied"

namespace ptpu {

namespace detail {
// A ref's space as a message names it: "`weights` (SMEM)" for a named operand's, "SMEM" otherwise.
template <class S>
constexpr void put_ref_space(rule_message& m) {
    if (!space_operand<S>.empty())
        m << "`" << space_operand<S> << "` (" << display_name(S::kind) << ")";
    else
        m << display_name(S::kind);
}
// `literal` about a named operand's ref: "...; `weights` is in SMEM; fix".
template <class S>
constexpr rule_message about_ref(std::string_view literal) {
    rule_message about;
    about << "`" << space_operand<S> << "` is in " << display_name(S::kind);
    return with_subject(literal, about.view());
}
// `literal` about a DMA: "...; from `weights` (SMEM) to VMEM; fix".
template <class Src, class Dst>
constexpr rule_message about_dma(std::string_view literal) {
    rule_message about;
    about << "from ";
    put_ref_space<Src>(about);
    about << " to ";
    put_ref_space<Dst>(about);
    return with_subject(literal, about.view());
}
// Whether a ref of space S gets a composed message: g++, and a named operand's ref.
template <class S>
inline constexpr bool names_operand = PTPU_COMPOSED_MESSAGES && space<S> && !space_operand<S>.empty();
}  // namespace detail

namespace rules {

template <class S>
constexpr bool require_vector_load() {
    if constexpr (detail::names_operand<S>) {
        constexpr const char* broken = S::access().far             ? PTPU_RULE_TEXT_S3_VECTOR_LOAD
                                       : S::kind == space_kind::smem ? PTPU_RULE_TEXT_S4_VECTOR_LOAD
                                       : !vector_loadable<S>         ? PTPU_RULE_TEXT_21_VECTOR_LOAD
                                                                     : nullptr;
        if constexpr (broken != nullptr) {
            static_assert(sizeof(compile_error<detail::about_ref<S>(broken)>) > 0);  // the error (core/message.hpp)
        }
    } else {
        static_assert(!S::access().far, PTPU_RULE_TEXT_S3_VECTOR_LOAD);
        static_assert(S::kind != space_kind::smem, PTPU_RULE_TEXT_S4_VECTOR_LOAD);
        static_assert(S::access().far || S::kind == space_kind::smem || vector_loadable<S>,
                      PTPU_RULE_TEXT_21_VECTOR_LOAD);
    }
    return true;
}

template <class S>
constexpr bool require_vector_store() {
    if constexpr (detail::names_operand<S>) {
        constexpr const char* broken = S::access().far             ? PTPU_RULE_TEXT_S3_VECTOR_STORE
                                       : S::kind == space_kind::smem ? PTPU_RULE_TEXT_S4_VECTOR_STORE
                                       : !vector_storable<S>         ? PTPU_RULE_TEXT_21_VECTOR_STORE
                                                                     : nullptr;
        if constexpr (broken != nullptr) {
            static_assert(sizeof(compile_error<detail::about_ref<S>(broken)>) > 0);  // the error (core/message.hpp)
        }
    } else {
        static_assert(!S::access().far, PTPU_RULE_TEXT_S3_VECTOR_STORE);
        static_assert(S::kind != space_kind::smem, PTPU_RULE_TEXT_S4_VECTOR_STORE);
        static_assert(S::access().far || S::kind == space_kind::smem || vector_storable<S>,
                      PTPU_RULE_TEXT_21_VECTOR_STORE);
    }
    return true;
}

template <class S>
constexpr bool require_scalar_load() {
    if constexpr (detail::names_operand<S>) {
        constexpr const char* broken = S::access().far       ? PTPU_RULE_TEXT_S3_SCALAR_LOAD
                                       : !scalar_loadable<S> ? PTPU_RULE_TEXT_21_SCALAR_LOAD
                                                             : nullptr;
        if constexpr (broken != nullptr) {
            static_assert(sizeof(compile_error<detail::about_ref<S>(broken)>) > 0);  // the error (core/message.hpp)
        }
    } else {
        static_assert(!S::access().far, PTPU_RULE_TEXT_S3_SCALAR_LOAD);
        static_assert(S::access().far || scalar_loadable<S>, PTPU_RULE_TEXT_21_SCALAR_LOAD);
    }
    return true;
}

template <class S>
constexpr bool require_scalar_store() {
    if constexpr (detail::names_operand<S>) {
        constexpr const char* broken = S::access().far             ? PTPU_RULE_TEXT_S3_SCALAR_STORE
                                       : S::kind == space_kind::vmem ? PTPU_RULE_TEXT_S4_SCALAR_STORE
                                       : !scalar_storable<S>         ? PTPU_RULE_TEXT_21_SCALAR_STORE
                                                                     : nullptr;
        if constexpr (broken != nullptr) {
            static_assert(sizeof(compile_error<detail::about_ref<S>(broken)>) > 0);  // the error (core/message.hpp)
        }
    } else {
        static_assert(!S::access().far, PTPU_RULE_TEXT_S3_SCALAR_STORE);
        static_assert(S::kind != space_kind::vmem, PTPU_RULE_TEXT_S4_SCALAR_STORE);
        static_assert(S::access().far || S::kind == space_kind::vmem || scalar_storable<S>,
                      PTPU_RULE_TEXT_21_SCALAR_STORE);
    }
    return true;
}

template <class S>
constexpr bool require_scratch() {
    static_assert(scratch_space<S>, PTPU_RULE_TEXT_S5);
    return true;
}

/// 29: a block's memory space holds windows (VMEM, SMEM) or none (ANY, HBM).
template <class S>
inline constexpr bool block_space_ok = block_buffer_space<S> || windowless_space<S>;
template <class S>
constexpr bool require_block_space() {
    static_assert(block_space_ok<S>, PTPU_RULE_TEXT_29);
    return true;
}

/// M1. With g++ the message says which two spaces (and operands) the DMA joins.
template <class Src, class Dst>
constexpr bool require_dma() {
    if constexpr (PTPU_COMPOSED_MESSAGES && space<Src> && space<Dst>) {
        if constexpr (!dma_pair<Src, Dst>) {
            static_assert(sizeof(compile_error<detail::about_dma<Src, Dst>(PTPU_RULE_TEXT_M1)>) > 0);  // the error
        }
    } else {
        static_assert(dma_pair<Src, Dst>, PTPU_RULE_TEXT_M1);
    }
    return true;
}

}  // namespace rules

}  // namespace ptpu
