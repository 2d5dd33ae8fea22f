// Defines the memories of one TensorCore as the runtime holds them: one host arena per core
// laid out exactly as the planner's memory layout (schedule/analyze.hpp: the same offsets the
// VMEM check sums), with the window slots, scratch buffers and SMEM copies of the scalar-
// prefetch operands, and the per-thread cache those arenas are borrowed from.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

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
    static std::array<std::vector<std::byte>, 2>& cache() {
        thread_local std::array<std::vector<std::byte>, 2> c;
        return c;
    }
    bool owner_;
    std::array<std::vector<std::byte>, 2> own_;
};



/// Lays out one core's memories in `arena` (layout.arena_bytes long) as `layout` says: fresh
/// memory is garbage on a TPU (S57), so it is poisoned (a kernel reading an uninitialized buffer
/// sees NaN or -1, not a plausible value); semaphores start at zero; the scalar-prefetch operands
/// are copied into SMEM first (S51).
inline void place(core_memory& m, std::byte* arena, const call_desc& c, const plan_info& info,
                  const memory_layout& layout, const std::array<const void*, max_operands>& prefetch) {
    m.arena = arena;
    std::memset(arena, 0xff, static_cast<std::size_t>(layout.arena_bytes));
    for (int i = 0; i < c.n_ops(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        for (int k = 0; k < info.ops[u].buffers; ++k)
            m.slots[u][static_cast<std::size_t>(k)] = arena + layout.slot_at[u][static_cast<std::size_t>(k)];
    }
    for (int k = 0; k < c.n_scratch; ++k) {
        const auto u = static_cast<std::size_t>(k);
        const scratch_desc& s = c.scratch[u];
        m.scratch[u] = arena + layout.scratch_at[u];
        if (s.space == space_kind::semaphore)
            std::memset(m.scratch[u], 0, static_cast<std::size_t>(s.elems() * itemsize(s.type)));
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
