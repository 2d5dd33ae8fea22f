// Defines the op stream: the small vocabulary between whoever runs a kernel (runtime/ writes
// ops) and whoever times it (sim/ reads them), plus the runner's account of what it did and
// what each op's label refers to (report/ reads both). It knows nothing of pallas_call, of
// schedules or of the timing engine, so that each of those can change without the others.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ptpu/core/index.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/work.hpp"

namespace ptpu::stream {

/// What one op of a core stream does. DMA ops name a DMA by an id unique among the core's live
/// DMAs. Semaphore ops name a semaphore of a core by a number (`sem`, S60): a DMA started with a
/// semaphore adds its bytes to it when it completes (it is waited through the semaphore, never
/// by id); a wait blocks until the semaphore holds `bytes`, then takes them; a signal adds
/// `bytes` to semaphore `sem` of core `core`.
///
/// `repeat` is no work of its own: it folds a run of identical steps of a pipeline a body ran
/// (emit_pipeline in a timing-only run) into one copy. The next `sem` ops (one repetition) are
/// made `bytes` more times after it, each time with their DMA ids `dma` higher (the DMAs one
/// repetition starts) and, when its `sub` is nonzero, their inner rows `sub` higher (the steps
/// one repetition makes; rows past max_inner_rows are none, sub 0): exactly the ops the steps
/// would have been, which the model simulates, or skips a whole number of periods of once they
/// repeat its state (docs/model.md §11).
enum class op_kind : std::uint8_t { overhead, dma_start, dma_wait, compute, sem_signal, sem_wait, repeat };

/// Which pipeline's DMA a dma_wait waits on.
enum class wait_pipeline : std::uint8_t {
    none,  ///< no pipeline's: a copy a body made
    own,   ///< the pipeline of the runner that made the stream (the call's)
    /// the inner pipeline whose step is the op's inner row (op::sub): a body copy for the call's
    /// accounting, a pipeline operand's in that inner row's
    inner,
};

/// The pipeline operand whose DMA a dma_wait waits on: the model attributes exposed DMA time by
/// it (result::wait_by_operand, step_times::waited_on).
struct wait_target {
    wait_pipeline pipeline = wait_pipeline::none;
    std::uint8_t operand = 0;  ///< inputs then outputs (< max_operands); 0 when pipeline is none
    friend constexpr bool operator==(wait_target, wait_target) = default;
};

/// One operation of a core stream.
struct op {
    op_kind kind = op_kind::overhead;
    std::uint8_t core = 0;    ///< sem_signal: the core whose semaphore is signalled
    bool dma_sem = false;     ///< sem_wait: on a DMA semaphore (its stall is exposed DMA time)
    wait_target waits_on{};   ///< dma_wait: whose pipeline DMA it waits on
    std::uint32_t dma = 0;    ///< dma_start/dma_wait: the DMA's id, unique among a core's live DMAs
    /// compute: the work the core does, by its number in the call's work_table (0: none). The
    /// timing model turns it into busy time; an overhead op is one grid step's control overhead,
    /// the chip's. Ops carry no time: only the model knows what work costs on a chip.
    std::uint32_t work = 0;
    std::int64_t bytes = 0;   ///< dma_start: bytes moved (0: latency only); sem ops: the amount
    bool far : 1 = true;      ///< dma_start: one end is HBM (shares HBM); false: VMEM->VMEM
    /// The row of the per-step breakdown the op also counts in, beside its step's: 0 none; k >= 1
    /// the runner's inner row k (a step of a pipeline the body ran, emit_pipeline; the runner's
    /// inner_rows()[k - 1] says which). Opaque to the model, passed back in step_times::sub.
    /// (Packed with `far` into one half-word: the op stays five words.)
    std::uint16_t sub : 15 = 0;
    /// dma_start: bytes of each contiguous run (a row of a block cut from a wider array); 0: the
    /// DMA is one run, or its runs are 64 KiB or longer (docs/model.md, "DMA shape costs").
    std::uint16_t run = 0;
    std::uint32_t sem = 0;    ///< a semaphore number (>= 1); dma_start: 0, or the one it completes into
    std::uint32_t label = 0;  ///< opaque, passed back in the timeline (an index into the notes)
    std::uint32_t step = 0;   ///< opaque grid step number, passed back (per-step breakdown)
    friend constexpr bool operator==(const op&, const op&) = default;
};
static_assert(sizeof(op) <= 40, "an op stays five words: batches are copied and compared");

/// The distinct works a call's bodies charged, numbered as compute ops name them (op::work):
/// runners add to it, the timing model reads it. Number 0 is no work. Equal works get one
/// number, so two compute ops do the same work exactly when their numbers are equal.
class work_table {
public:
    work_table() : works_(1) {}
    /// The number of `w`, added when new.
    std::uint32_t number(const work& w) {
        const auto [at, fresh] = index_.try_emplace(w, static_cast<std::uint32_t>(works_.size()));
        if (fresh) works_.push_back(w);
        return at->second;
    }
    /// Work number `k` (k < size()).
    [[nodiscard]] const work& operator[](std::uint32_t k) const { return works_[k]; }
    [[nodiscard]] std::size_t size() const { return works_.size(); }

private:
    struct hash {
        std::size_t operator()(const work& w) const noexcept {
            // A few fields suffice to spread the works of one call (equal works compare equal
            // in every field); + 0.0 makes -0.0 hash as 0.0, which it equals.
            std::uint64_t h = 0;
            for (const double f : {w.mxu_passes_flops, w.vreg_cheap, w.vector_loads, w.vector_stores, w.scalar_ops,
                                   w.explicit_seconds})
                h = (h ^ std::bit_cast<std::uint64_t>(f + 0.0)) * 0x100000001b3ull;
            return static_cast<std::size_t>(h ^ (h >> 29));
        }
    };
    std::vector<work> works_;
    std::unordered_map<work, std::uint32_t, hash> index_{{work{}, 0u}};
};

/// The most inner rows a runner numbers (op::sub); steps of inner pipelines beyond them count
/// in their outer step's row only.
inline constexpr std::uint32_t max_inner_rows = (1u << 15) - 1;

/// What an inner row of the per-step breakdown is (op::sub, step_times::sub): step `step` of the
/// `call`-th pipeline (0: the first emit_pipeline invocation) run by the body of the row's parent,
/// nested `depth` levels in. Depth 1: run by the kernel's body in its grid step (parent 0); depth
/// d > 1: run by the body of step `step` of the inner row `parent` (>= 1, of depth d - 1). An op
/// carries its deepest row; the report counts it in every ancestor row too.
struct inner_row {
    std::uint32_t call = 0;
    std::uint32_t step = 0;
    std::uint8_t depth = 1;
    std::uint8_t inputs = 0;   ///< the pipeline's inputs (its operands are inputs then outputs)
    std::uint16_t parent = 0;  ///< 0: a row of the outer step; k: inner row k (inner_rows()[k - 1])
};

/// Semaphore numbers are 1 .. max_semaphores - 1 (per core).
inline constexpr std::uint32_t max_semaphores = 1u << 16;

/// A batch of a core's ops (what a batch source hands out: one grid step's ops).
struct batch {
    std::span<const op> ops;  ///< empty: the stream has ended, unless `blocked`
    /// The same ops as the core's previous batch, with DMA ids advanced by that batch's number
    /// of dma_starts and step values by one. When asked for lazily, `ops` may then be stale.
    bool repeat = false;
    bool whole_step = false;  ///< the ops are exactly those of one step value
    /// No ops yet, the stream goes on: the core's body waits for a signal another core's body has
    /// not sent yet (cores taking turns, runtime/cores.hpp). Ask again after another core's ops.
    bool blocked = false;
};

/// What a DMA label refers to: which copy of which pipeline moved what.
enum class copy_kind : std::uint8_t {
    fetch,       ///< pipeline: HBM → window slot, async (S23.1)
    sync_in,     ///< pipeline: trivially windowed input, before the prologue (S22.2)
    restore,     ///< pipeline: revisit_any output block brought back (S40)
    write,       ///< pipeline: window slot → HBM, async (S23.4)
    write_sync,  ///< pipeline: window slot → HBM, blocking (S29)
    sync_out,    ///< pipeline: trivially windowed output, after the epilogue (S24)
    body,        ///< issued by the kernel body itself (sync_copy)
    body_async,  ///< issued by the kernel body itself, waited through a semaphore (async_copy)
};


/// What a timeline label points to: the pipeline DMA (or body DMA) behind an op.
struct dma_note {
    copy_kind kind = copy_kind::fetch;
    std::uint8_t core = 0;
    std::uint8_t op = 0;  ///< operand (inputs then outputs); 0 for body DMAs
    std::uint8_t slot = 0;
    std::uint8_t pipeline = 0;  ///< which pipeline of the kernel (0: the pallas_call's)
    std::uint32_t block_step = 0;
    coords block{};  ///< the block index moved (pipeline DMAs)
};

/// What a runner did, counted as it ran (tests compare it with the plan).
struct run_stats {
    index_t steps = 0;                    ///< bodies run, all cores
    per_core<index_t> core_steps{};       ///< bodies run per core
    index_t dma_in = 0;                   ///< HBM → window copies (fetch, sync_in, restore)
    index_t dma_out = 0;                  ///< window → HBM copies (write, write_sync, sync_out)
    index_t bytes_in = 0;
    index_t bytes_out = 0;
    std::array<index_t, max_operands> op_dmas{};  ///< per operand (inputs then outputs)
    std::array<index_t, max_operands> op_bytes{};
    index_t body_dmas = 0;  ///< DMAs issued by bodies (sync_copy, async_copy)
    index_t body_dma_bytes = 0;
    index_t sem_signals = 0;  ///< semaphore_signal calls of bodies
    index_t sem_waits = 0;    ///< semaphore waits of bodies (semaphore_wait, async copy waits)
    index_t inner_steps = 0;  ///< steps of pipelines run inside bodies (emit_pipeline)
    index_t inner_dmas = 0;   ///< and their DMAs
    index_t inner_bytes = 0;
    per_core<index_t> vmem_peak{};  ///< per core: the most VMEM inner pipelines had live
    /// Steps made in bulk, as whole periods the timing model's fast lane skipped without their
    /// ops being made (timing-only runs, runner::skip_periods).
    index_t skipped_steps = 0;
    work total_work{};  ///< everything the bodies charged

    run_stats& operator+=(const run_stats& o) {
        steps += o.steps;
        for (std::size_t c = 0; c < max_cores; ++c) core_steps[c] += o.core_steps[c];
        dma_in += o.dma_in;
        dma_out += o.dma_out;
        bytes_in += o.bytes_in;
        bytes_out += o.bytes_out;
        for (std::size_t i = 0; i < max_operands; ++i) {
            op_dmas[i] += o.op_dmas[i];
            op_bytes[i] += o.op_bytes[i];
        }
        body_dmas += o.body_dmas;
        body_dma_bytes += o.body_dma_bytes;
        sem_signals += o.sem_signals;
        sem_waits += o.sem_waits;
        inner_steps += o.inner_steps;
        inner_dmas += o.inner_dmas;
        inner_bytes += o.inner_bytes;
        skipped_steps += o.skipped_steps;
        for (std::size_t c = 0; c < max_cores; ++c)
            vmem_peak[c] = vmem_peak[c] > o.vmem_peak[c] ? vmem_peak[c] : o.vmem_peak[c];
        total_work += o.total_work;
        return *this;
    }
};

}  // namespace ptpu::stream

namespace ptpu {
using stream::dma_note;
using stream::run_stats;
}  // namespace ptpu
