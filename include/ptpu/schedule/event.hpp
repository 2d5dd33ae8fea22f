// Defines the schedule's events: what a core's scalar unit issues for one pipeline, in order
// (fetch, wait, body, write, ...), with the slot, the step and the block each concerns.
#pragma once

#include <cstdint>

namespace ptpu {

/// What happens, in the order a core's scalar unit issues it (S22–S24, S28, S29, S40).
enum class event_kind : std::uint8_t {
    step,        ///< a grid step begins (its control overhead)
    sync_in,     ///< trivially-windowed input copied in before the prologue (S18, S22.2)
    fetch,       ///< async DMA HBM → window slot started (S22.3, S23.1, S32)
    wait_in,     ///< wait for a fetch into `slot` (S23.2)
    restore,     ///< revisit_any output: block copied HBM → slot before the body (S40, [M])
    body,        ///< the kernel body runs
    write,       ///< async DMA window slot → HBM started (S23.4, bc = 2)
    write_sync,  ///< blocking copy window slot → HBM (S29, bc = 1)
    wait_out,    ///< wait for the write issued from `slot` (S23.5, S24)
    sync_out,    ///< trivially-windowed output copied out after the epilogue (S24)
};

/// One event. `step` is the global linear grid step during which it is issued (prologue events
/// carry the core's first step, epilogue events its last); `block_step` is the global linear step
/// whose block index (index map value) the DMA moves. `pipeline` says which pipeline of a kernel
/// issued it (0: the pallas_call's own; inner pipelines number from 1).
struct event {
    event_kind kind = event_kind::step;
    std::uint8_t core = 0;
    std::uint8_t op = 0;
    std::uint8_t slot = 0;
    std::uint32_t step = 0;
    std::uint32_t block_step = 0;
    std::uint8_t pipeline = 0;
    friend constexpr bool operator==(const event&, const event&) = default;
};

/// Whether an event moves data (a DMA of the pipeline).
constexpr bool is_dma(event_kind k) {
    return k == event_kind::fetch || k == event_kind::sync_in || k == event_kind::restore ||
           k == event_kind::write || k == event_kind::write_sync || k == event_kind::sync_out;
}

}  // namespace ptpu
