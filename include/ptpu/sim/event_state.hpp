// Defines the timing model's simulation state: each core's clock, whether it runs, waits or has
// ended, what it waits on, its semaphores and the DMAs it has in flight, and the DMA channels.
// The engine's events (sim/engine_class.hpp) change it; the steady-state lane and the folds
// record it at a boundary and move it on by whole periods (sim/period_skip.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ptpu/core/index.hpp"
#include "ptpu/sim/channel.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim::detail {

enum class core_state : std::uint8_t { ready, blocked, done };

// DMAs live in slots with stable numbers; each core keeps the DMAs it has started and not yet
// waited (looked up by id on a wait), those into a semaphore, and, in start order, those still in
// their latency; each channel keeps its transfers.
struct event_state {
    std::vector<live_dma> dmas;                   // slots
    std::vector<int> free_slots;                  // slots to reuse
    per_core<live_list> live;                     // per core: started, not yet waited
    per_core<std::vector<int>> sem_dmas;          // per core: DMAs into a semaphore in flight, in start order
    per_core<slot_queue> pending;                 // per core: in their latency, in start order
    std::array<channel, 1 + max_cores> channels;  // HBM, then each core's on-chip path
    per_core<double> t{};                         // when each core's next op starts (or it ended)
    per_core<core_state> state{};
    per_core<int> wait_slot = each_core(-1);      // the DMA a blocked core waits on (-1: a semaphore)
    per_core<std::uint32_t> wait_sem{};           // or the semaphore
    per_core<std::int64_t> wait_want{};           // and the amount
    per_core<bool> wait_is_dma{};                 // a DMA semaphore: the stall is exposed DMA
    per_core<std::vector<std::int64_t>> sem_val;  // semaphore values per core
    per_core<std::uint32_t> wait_label{};         // the label and step of the wait a core is blocked in
    per_core<std::uint32_t> wait_step{};
    per_core<stream::wait_target> wait_on{};  // op::waits_on of the DMA wait a core is blocked in
    per_core<std::uint32_t> starts{};         // DMA starts per core (DMA ids are relative to it)
    per_core<std::uint64_t> ord{};            // ops each core has run (simulated or skipped)
    per_core<std::uint64_t> wait_ord{};       // the op a blocked core waits in
    std::uint64_t seq = 0;                    // DMA starts of every core: the next start's order
    double last_done = 0;                     // when the last DMA completed

    [[nodiscard]] live_dma& at(int s) { return dmas[static_cast<std::size_t>(s)]; }
    [[nodiscard]] const live_dma& at(int s) const { return dmas[static_cast<std::size_t>(s)]; }
};

}  // namespace ptpu::sim::detail
