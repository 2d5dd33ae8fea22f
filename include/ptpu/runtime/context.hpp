// Defines the kernel context a body reads while it runs: program_id / num_programs (global grid
// indices, S15; check 22), the core running it, and the counters of DMAs the body issued itself.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/memory/space.hpp"

namespace ptpu {

/// A DMA a body issued itself (sync_copy), with the work the body charged before it: the timing
/// model places it between the compute before and after.
struct body_dma_record {
    work before{};
    index_t bytes = 0;
    bool far = true;  ///< one end in HBM (shares HBM bandwidth)
};

/// What the executor tells a running body.
struct kernel_context {
    int grid_rank = 0;
    std::array<index_t, max_rank> grid{};
    std::array<index_t, max_rank> point{};
    int core = 0;
    index_t step = 0;
    index_t body_dma_count = 0;  ///< DMAs issued by bodies (sync_copy) on this call
    index_t body_dma_bytes = 0;
    const chip* hw = nullptr;                   ///< the chip the call runs on (ops pad MXU work to its shape)
    bool timing_only = false;                   ///< ops skip floating-point work but still charge it
    work body_work{};                           ///< what the running body charged since its last DMA
    std::vector<body_dma_record> body_dma_log;  ///< the running body's own DMAs, in order
};

namespace detail {
inline kernel_context*& current_context() {
    thread_local kernel_context* ctx = nullptr;
    return ctx;
}
inline kernel_context& require_context(const char* where) {
    kernel_context* c = current_context();
    if (c == nullptr)
        throw error("K1", where, "called outside a running kernel body",
                    "call it from the body passed to a pallas_call");
    return *c;
}
inline void note_body_dma(space_kind src, space_kind dst, index_t bytes) {
    if (kernel_context* c = current_context()) {
        ++c->body_dma_count;
        c->body_dma_bytes += bytes;
        c->body_dma_log.push_back({c->body_work, bytes, access(src).far || access(dst).far});
        c->body_work = work{};
    }
}

/// Makes `ctx` current for the lifetime of the guard (nests, restores the previous one).
class context_guard {
public:
    explicit context_guard(kernel_context& ctx) : prev_(current_context()) { current_context() = &ctx; }
    ~context_guard() { current_context() = prev_; }
    context_guard(const context_guard&) = delete;
    context_guard& operator=(const context_guard&) = delete;

private:
    kernel_context* prev_;
};
}  // namespace detail

/// pl.program_id(axis): the global grid index along `axis`, megacore offset included (S15).
inline index_t program_id(int axis) {
    const kernel_context& c = detail::require_context("program_id");
    if (c.grid_rank == 0)
        throw error("22", "program_id", "program id was requested but no grid was provided",
                    "give the pallas_call a Grid<...>");
    if (axis < 0 || axis >= c.grid_rank)
        throw error(
            "22", "program_id",
            "invalid axis " + std::to_string(axis) + " for a grid of rank " + std::to_string(c.grid_rank),
            "use an axis in [0, grid rank)");
    return c.point[static_cast<std::size_t>(axis)];
}

/// pl.num_programs(axis): the full grid size along `axis` (S15, pallas_call).
inline index_t num_programs(int axis) {
    const kernel_context& c = detail::require_context("num_programs");
    if (axis < 0 || axis >= c.grid_rank)
        throw error(
            "22", "num_programs",
            "invalid axis " + std::to_string(axis) + " for a grid of rank " + std::to_string(c.grid_rank),
            "use an axis in [0, grid rank)");
    return c.grid[static_cast<std::size_t>(axis)];
}

/// Adds `w` to the running body's work (ops/ call this; outside a body it is a no-op).
inline void charge(const work& w) {
    check_work(w);  // C1
    if (kernel_context* c = detail::current_context()) c->body_work += w;
}

/// True when the running call is in timing-only mode: floating-point work is skipped.
inline bool timing_only() {
    const kernel_context* c = detail::current_context();
    return c != nullptr && c->timing_only;
}

/// The TensorCore running the body (0 or 1 on megacore chips).
inline int core_index() {
    return detail::require_context("core_index").core;
}

/// pl.when(cond, fn): runs fn when cond holds.
template <class F>
void when(bool cond, F&& fn) {
    if (cond) static_cast<F&&>(fn)();
}

}  // namespace ptpu
