// Defines the memories of one TensorCore as the runtime holds them: one host arena per core
// laid out exactly as the planner's memory layout (schedule/analyze.hpp: the same offsets the
// VMEM check sums), with the window slots, scratch buffers and SMEM copies of the scalar-
// prefetch operands, and the per-thread cache those arenas are borrowed from.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ptpu/core/dtype.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/schedule/analyze.hpp"
#include "ptpu/schedule/info.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/pipeline.hpp"

namespace ptpu {

/// One core's memories (S6): its windows (slots), scratch and SMEM copy of the prefetch operands.
struct core_memory {
    std::byte* arena = nullptr;
    std::array<std::array<std::byte*, max_buffers>, max_operands> slots{};
    std::array<std::byte*, max_scratch> scratch{};
    std::array<std::byte*, max_operands> prefetch{};
    std::array<int, max_operands> cur{};  ///< the slot the body sees (S20)
    /// The part of the body's current window of each operand that holds its block's data, per
    /// array dim (S38: a bounded_slice dim's size, ds(start, size) at this step; an edge block's
    /// rows inside the array, S34; else the block size). The rest of the window is padding:
    /// what the slot held before, or poison (`poison_padding`). Set by the runner (before each
    /// body for the operands whose blocks vary).
    std::array<std::array<index_t, max_rank>, max_operands> valid{};
    /// Input copies fill the part of their window outside the array with poison (run_options::
    /// poison_buffers, out_of_bounds_reads = uninitialized); else it keeps what it held (S35).
    bool poison_padding = false;
};

namespace detail {
/// Borrows the thread's cached per-core arenas for one call (or private ones when a call is
/// already running on this thread).
class arena_lease {
public:
    arena_lease() : owner_(!busy()) {
        if (owner_) busy() = true;
    }
    ~arena_lease() {
        if (owner_) busy() = false;
    }
    arena_lease(const arena_lease&) = delete;
    arena_lease& operator=(const arena_lease&) = delete;

    std::byte* get(int core, std::size_t bytes) {
        std::vector<std::byte>& v =
            owner_ ? cache()[static_cast<std::size_t>(core)] : own_[static_cast<std::size_t>(core)];
        // Never empty: a call without windows or scratch still gets a real (tiny) arena, so no
        // null pointer reaches memset or pointer arithmetic.
        if (v.size() < std::max<std::size_t>(bytes, 64)) v.resize(std::max<std::size_t>(bytes, 64));
        return v.data();
    }

private:
    static bool& busy() {
        thread_local bool b = false;
        return b;
    }
    static per_core<std::vector<std::byte>>& cache() {
        thread_local per_core<std::vector<std::byte>> c;
        return c;
    }
    bool owner_;
    per_core<std::vector<std::byte>> own_;
};



/// Fills `elems` elements of type `t` at `p` with the poison of interpret mode's
/// uninitialized memory (S57; docs/guide.md, "Interpret-mode options"): NaN for floats, the lowest value for
/// signed ints (INT_MIN), the highest for u8 (its lowest, 0, would look like data), true for bool.
inline void fill_poison(std::byte* p, index_t elems, dtype t) {
    const auto n = static_cast<std::size_t>(elems);
    auto fill = [&](auto v) {
        for (std::size_t i = 0; i < n; ++i) std::memcpy(p + i * sizeof(v), &v, sizeof(v));
    };
    switch (t) {
        case dtype::f32:
            fill(std::uint32_t{0x7fc00000});
            return;
        case dtype::bf16:
            fill(std::uint16_t{0x7fc0});
            return;
        case dtype::f16:
            fill(std::uint16_t{0x7e00});
            return;
        case dtype::i32:
            fill(std::uint32_t{0x80000000});
            return;
        case dtype::i16:
            fill(std::uint16_t{0x8000});
            return;
        case dtype::i8:
            std::memset(p, 0x80, n);
            return;
        case dtype::u8:
            std::memset(p, 0xff, n);
            return;
        case dtype::boolean:
            std::memset(p, 0x01, n);
            return;
    }
}

/// Lays out one core's memories in `arena` (layout.arena_bytes long) as `layout` says: fresh
/// memory is garbage on a TPU (S57), so it is poisoned: all bytes 0xff (NaN for floats, -1 for
/// ints; bools true, the only garbage a host bool may hold), or with `poison` interpret mode's typed poison (fill_poison) in every window slot and
/// scratch buffer, and in the padding of every edge block copied in (core_memory::poison_padding
/// gives `poison_padding`); semaphores start at zero; the scalar-prefetch operands are copied
/// into SMEM first (S51).
///
/// `vector_data` false (a timing-only run without interpret-mode poison): no vector data moves
/// and no op reads VMEM values, so the VMEM windows and scratch are not filled: filling them cost
/// a predicted call about 1 ms per 10 MB of windows, more than the rest of a short run. Their
/// bytes stay what the reused arena held (zero, or an earlier call's data: determinate, never
/// read as values); SMEM and semaphores, which scalar code reads, are filled as always.
inline void place(core_memory& m, std::byte* arena, const call_desc& c, const plan_info& info,
                  const memory_layout& layout, const std::array<const void*, max_operands>& prefetch,
                  bool poison = false, bool poison_padding = false, bool vector_data = true) {
    m.arena = arena;
    m.poison_padding = poison_padding;
    if (vector_data || poison) std::memset(arena, 0xff, static_cast<std::size_t>(layout.arena_bytes));
    for (int i = 0; i < c.n_ops(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        const operand_desc& o = c.ops[u];
        for (int k = 0; k < info.ops[u].buffers; ++k) {
            std::byte* slot = arena + layout.slot_at[u][static_cast<std::size_t>(k)];
            m.slots[u][static_cast<std::size_t>(k)] = slot;
            if (!vector_data && !poison && o.space != space_kind::vmem)
                std::memset(slot, 0xff, static_cast<std::size_t>(info.ops[u].slot_bytes));
            if (poison)
                fill_poison(slot, info.ops[u].slot_bytes / itemsize(o.type), o.type);
            else if (o.type == dtype::boolean)  // a host bool must hold 0 or 1: garbage is true
                std::memset(slot, 0x01, static_cast<std::size_t>(info.ops[u].slot_bytes));
        }
    }
    for (int k = 0; k < c.n_scratch; ++k) {
        const auto u = static_cast<std::size_t>(k);
        const scratch_desc& s = c.scratch[u];
        m.scratch[u] = arena + layout.scratch_at[u];
        if (!vector_data && !poison && s.space != space_kind::vmem && s.space != space_kind::semaphore)
            std::memset(m.scratch[u], 0xff, static_cast<std::size_t>(s.elems() * itemsize(memref_dtype(s.type))));
        if (s.space == space_kind::semaphore)
            std::memset(m.scratch[u], 0, static_cast<std::size_t>(s.elems() * itemsize(s.type)));
        else if (poison)  // a bool takes its memref's 4 bytes (layout_of): all of them true
            fill_poison(m.scratch[u], s.elems() * itemsize(memref_dtype(s.type)) / itemsize(s.type), s.type);
        else if (s.type == dtype::boolean)  // a host bool must hold 0 or 1: garbage is true
            std::memset(m.scratch[u], 0x01, static_cast<std::size_t>(s.elems() * itemsize(memref_dtype(s.type))));
    }
    for (int k = 0; k < c.n_prefetch; ++k) {
        const auto u = static_cast<std::size_t>(k);
        m.prefetch[u] = arena + layout.prefetch_at[u];
        if (prefetch[u] != nullptr)
            std::memcpy(m.prefetch[u], prefetch[u], static_cast<std::size_t>(c.prefetch_each[u]));
    }
}

}  // namespace detail
}  // namespace ptpu
