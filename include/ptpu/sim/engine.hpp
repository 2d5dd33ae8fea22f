// Defines ptpu::sim::simulate, the event-level timing model: in-order TensorCore streams that
// issue and wait on DMAs, and DMAs that share the chip's HBM bandwidth (docs/model.md).
//
// The model knows nothing about pallas_call: it pulls a generic stream of ops per core from a
// source, lazily (a core's next op once the core has reached it in simulated time), so the
// executor behind the source can run kernel bodies on demand.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/sim/result.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu::sim {

// The op vocabulary is the stream's (stream/op.hpp): runners write it, the model reads it.
using stream::op;
using stream::op_kind;
using stream::batch;

/// Anything that hands out the ops of each core in order; `next` returns false at a stream's end.
/// simulate() asks for a core's next op only once the core has reached it in simulated time.
template <class S>
concept op_source = requires(S& s, int core, op& out) {
    { s.next(core, out) } -> std::convertible_to<bool>;
};

/// A source that hands out a core's ops a batch at a time (the executor: one grid step's ops);
/// an empty batch ends the stream, unless it says the core is `blocked` (its body waits for
/// another core's signal that the host has not run yet: ask again after that core's ops). The
/// engine meets no blocked batch (it asks a core for more only once the model has met the
/// core's waits, whose signals the host then ran); the steady-state lane, which pulls periods
/// ahead, may. The ops stay valid until the next call for that core.
/// simulate() asks for a core's next batch once the core has reached its first op; it asks
/// `lazy`ly only when it will not read a repeated batch's ops (the steady-state fast lane).
template <class S>
concept batch_source = requires(S& s, int core, bool lazy) {
    { s.next_batch(core, lazy) } -> std::convertible_to<batch>;
};

/// A batch source that can also skip periods of steps (the executor of a timing-only run). At
/// the end of a period of the fast lane (p whole-step batches that repeated the p before them,
/// starting `starts` DMAs), skippable_periods(core, p, starts) says how many more such periods
/// the source can show would repeat it, and skip_periods(core, m) makes m of them (at most that
/// many) without handing out their ops; the model counts them as periods it skipped.
template <class S>
concept period_source = batch_source<S> && requires(S& s, int core, std::int64_t p, std::uint32_t starts) {
    { s.skippable_periods(core, p, starts) } -> std::convertible_to<std::int64_t>;
    s.skip_periods(core, p);
};

/// A type-erased op source: one engine instantiation serves every source type (an executor is a
/// different type per call and body; instantiating the engine for each would cost compile time,
/// an indirect call per batch costs next to nothing). Per-op sources are seen as batches of one.
class source_ref {
public:
    template <class Source>
    requires op_source<Source> || batch_source<Source>
    explicit source_ref(Source& s) : obj_(&s) {
        if constexpr (batch_source<Source>) {
            batch_ = [](void* o, int core, bool lazy) -> batch {
                return static_cast<Source*>(o)->next_batch(core, lazy);
            };
            if constexpr (period_source<Source>) {
                skippable_ = [](void* o, int core, std::int64_t p, std::uint32_t starts) -> std::int64_t {
                    return static_cast<Source*>(o)->skippable_periods(core, p, starts);
                };
                skip_ = [](void* o, int core, std::int64_t m) { static_cast<Source*>(o)->skip_periods(core, m); };
            }
        } else {
            next_ = [](void* o, int core, op& out) -> bool {
                return static_cast<bool>(static_cast<Source*>(o)->next(core, out));
            };
        }
    }
    /// True for a batch source (next_batch), false for a per-op one (next).
    [[nodiscard]] bool batched() const { return batch_ != nullptr; }
    batch next_batch(int core, bool lazy = false) { return batch_(obj_, core, lazy); }
    bool next(int core, op& out) { return next_(obj_, core, out); }
    /// period_source's, or none for a source without them.
    std::int64_t skippable_periods(int core, std::int64_t p, std::uint32_t starts) {
        return skippable_ != nullptr ? skippable_(obj_, core, p, starts) : 0;
    }
    void skip_periods(int core, std::int64_t m) {
        if (skip_ != nullptr) skip_(obj_, core, m);
    }

private:
    void* obj_;
    batch (*batch_)(void*, int, bool) = nullptr;
    std::int64_t (*skippable_)(void*, int, std::int64_t, std::uint32_t) = nullptr;
    void (*skip_)(void*, int, std::int64_t) = nullptr;
    bool (*next_)(void*, int, op&) = nullptr;
};

/// simulate() on a type-erased source: the engine, instantiated once for source_ref. (A template
/// only so that the engine is compiled in the translation units that simulate, or once per
/// program in ptpu::runtime with PTPU_SEPARATE_RUNTIME; sim/engine_impl.hpp holds the definition.)
template <class Ref = source_ref>
result simulate_source(const chip& c, int cores, Ref& src, const options& opt);
#if defined(PTPU_SEPARATE_RUNTIME) && !defined(PTPU_RUNTIME_IMPLEMENTATION)
extern template result simulate_source<source_ref>(const chip&, int, source_ref&, const options&);
#endif

/// Simulates `cores` TensorCore streams of chip `c`, pulling their ops from `src` (docs/model.md).
/// Throws H1 for an invalid chip, C3 for an invalid cost model, SIM3 when `cores` is not in
/// [1, c.cores_per_chip] (at most max_cores), SIM2 for a malformed op and SIM1 for a wait on a DMA that is
/// not in flight or a DMA id started twice while in flight.
template <class Source>
requires op_source<Source> || batch_source<Source> result simulate(const chip& c, int cores, Source& src,
                                                                   const options& opt = {}) {
    source_ref r(src);
    return simulate_source(c, cores, r, opt);
}

}  // namespace ptpu::sim

// The engine itself, when this translation unit compiles it (not with PTPU_SEPARATE_RUNTIME,
// where ptpu::runtime does).
#if !defined(PTPU_SEPARATE_RUNTIME) || defined(PTPU_RUNTIME_IMPLEMENTATION)
#include "ptpu/sim/engine_impl.hpp"
#endif
