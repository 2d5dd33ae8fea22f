// Defines the kernel context a body reads while it runs: program_id / num_programs (global grid
// indices, S15; check 22; outer_program_id / outer_num_programs in an emit_pipeline body, K3),
// the core running it, the counters of DMAs the body issued itself, and
// the registry of vecs that read VMEM they do not own (copy-on-write loads, ops/vec.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/runtime/race_log.hpp"
#include "ptpu/stream/op.hpp"

namespace ptpu {

/// What a body did that the timing model sees besides its compute, in order, each with the work
/// the body charged before it (the model places it between the compute before and after).
enum class body_op_kind : std::uint8_t {
    sync_dma,   ///< sync_copy: a DMA started and waited at once
    async_dma,  ///< async copy start: completes into semaphore `sem`
    signal,     ///< semaphore_signal: `amount` onto semaphore `sem` of core `core`
    wait,       ///< semaphore wait (semaphore_wait, an async copy's wait): `amount` from `sem`
    stream_op,  ///< an op of a pipeline the body ran (emit_pipeline): `op`, its DMA named by `seq`
};
struct body_op_record {
    body_op_kind kind = body_op_kind::sync_dma;
    bool far = true;       ///< DMAs: one end in HBM (shares HBM bandwidth)
    bool dma_sem = false;  ///< waits: on a DMA semaphore
    std::uint8_t core = 0;  ///< signals: the core signalled
    std::uint32_t sem = 0;  ///< the semaphore's number in the op stream (>= 1)
    work before{};
    index_t amount = 0;  ///< DMAs: bytes; signals and waits: the count
    std::uint32_t seq = 0;  ///< stream_op DMAs: the DMA's number among the body's (its start's)
    stream::op op{};        ///< stream_op: the op (its work numbered in the call's table)
    std::uint16_t run = 0;  ///< DMAs: stream::op::run of the HBM end (0: one run)
    bool begins = false;    ///< stream_op: the first op of a pipeline invocation (its inner rows)
    /// stream_op with op.sub != 0: where the inner runner's rows start in the body's
    /// kernel_context::nested_rows (op.sub = k is nested_rows[rows_base + k - 1]).
    std::uint32_t rows_base = 0;
    std::uint8_t inputs = 0;  ///< stream_op: the inputs of the pipeline whose op it is (inner_row::inputs)
};

/// Ops an inner pipeline's runner made, handed to the runner of the body that runs it: their DMA
/// numbers start at `seq` among the body's, `begins` when the first is the invocation's first,
/// `rows_base` and `inputs` as in body_op_record.
struct inner_handover {
    std::span<const stream::op> ops;
    std::uint32_t seq = 0;
    bool begins = false;
    std::uint32_t rows_base = 0;
    std::uint8_t inputs = 0;
    /// The kept invocation these ops are a replay of (emit_pipeline's invocation memo), or none:
    /// two handovers with the same one hand on the same ops.
    const void* replay = nullptr;
};

namespace detail {
/// Where a call's core keeps the inner-pipeline invocations it may hand on again (the memo of
/// call/emit_pipeline_impl.hpp); opaque here.
struct invocation_store {
    virtual ~invocation_store() = default;
};
/// Which operand of a call a ref stands for (pallas_call labels the refs it hands out), so an
/// out-of-range access names it (R2). Views taken with at() keep the label.
struct ref_label {
    enum class kind : std::uint8_t { none, prefetch, input, output, scratch };
    kind what = kind::none;
    std::uint8_t index = 0;
};
/// "ref" or e.g. "ref of input 1" (only built on the way to an error).
[[gnu::cold]] PTPU_COMPILED std::string ref_where(ref_label l);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED std::string ref_where(ref_label l) {
    constexpr const char* names[] = {"", "scalar-prefetch", "input", "output", "scratch"};
    if (l.what == ref_label::kind::none) return "ref";
    return std::string("ref of ") + names[static_cast<int>(l.what)] + " " + std::to_string(l.index);
}
#endif
}  // namespace detail

/// A DMA a body started (async copy) that its semaphore has not yet taken in: the data lands
/// when a wait needs its bytes (the latest moment real hardware could have moved them, so a
/// read of the destination before the wait sees the old contents, not the copy).
struct pending_dma {
    std::byte* dst = nullptr;
    const std::byte* src = nullptr;
    int rank = 0;
    index_t item = 0;                          ///< bytes per element
    std::array<index_t, max_rank> shape{};     ///< elements
    std::array<index_t, max_rank> src_step{};  ///< strides, in bytes
    std::array<index_t, max_rank> dst_step{};
    index_t bytes = 0;
    std::int32_t* sem = nullptr;  ///< the DMA semaphore it raises by `bytes`
    const std::byte *src_lo = nullptr, *src_hi = nullptr, *dst_lo = nullptr, *dst_hi = nullptr;
    detail::ref_label src_label{}, dst_label{};  ///< the refs, named only in messages (ref_where)
    index_t step = 0;                ///< the grid step that started it
    bool move = true;                ///< moves data (timing-only runs skip vector data)
};

/// A pipeline DMA between its start and its wait (run_options::detect_races, A13): a fetch
/// into window slot [lo, hi) (the DMA writes it) or a write-out of it (the DMA reads it).
struct pipeline_flight {
    const std::byte* lo = nullptr;
    const std::byte* hi = nullptr;
    bool into = true;  ///< a fetch into the slot; else a write out of it
    std::uint8_t op = 0;      ///< operand (inputs then outputs)
    std::uint8_t slot = 0;
    std::uint8_t pipeline = 0;  ///< 0: the call's own; k: an inner pipeline k levels in
    std::uint8_t n_in = 0;      ///< the pipeline's inputs (to name the operand)
    index_t step = 0;           ///< the step that started it
    index_t block_step = 0;     ///< the step whose block it moves
};

/// A semaphore scratch buffer of a core's arena (for names in messages: "scratch 2[1]").
struct semaphore_range {
    const std::byte* lo = nullptr;
    const std::byte* hi = nullptr;
    int scratch = 0;
};

namespace detail {

/// A value that reads memory it does not own (a vec loaded from VMEM, ops/vec.hpp): before that
/// memory is written through ptpu it takes a copy of its values (detach); when the memory may be
/// reused (its body step or call is over) it drops them (expire), so a later read is an error.
class borrower {
public:
    virtual void detach() const = 0;
    virtual void expire() const = 0;

protected:
    borrower() = default;
    borrower(const borrower&) = default;
    borrower& operator=(const borrower&) = default;
    ~borrower() = default;
};

/// The borrowers of one call, by the address ranges they read. Writes through ptpu (store,
/// sync_copy, uncharged views) call before_write first; a borrower from an earlier body step or
/// core is expired at the next registry operation of a later one; when the call's context goes
/// the last step's borrowers take copies, older ones expire. What the runner must keep for
/// this (its pipeline DMAs do not call before_write): it sets step and core before each body,
/// moves no data into VMEM while a body runs (a DMA a body starts must call before_write), and
/// destroys the context before the VMEM it handed out is freed or refilled. A handful of entries
/// at a time: linear scans.
class borrow_registry {
public:
    borrow_registry() = default;
    borrow_registry(const borrow_registry&) = delete;
    borrow_registry& operator=(const borrow_registry&) = delete;
    ~borrow_registry() { expire_all(); }

    void add(const borrower* who, const void* lo, const void* hi, index_t step, int core) {
        sync(step, core);
        entries_.push_back({who, addr(lo), addr(hi)});
    }
    void remove(const borrower* who) {
        for (std::size_t i = 0; i < entries_.size();)
            if (entries_[i].who == who) {
                entries_[i] = entries_.back();
                entries_.pop_back();
            } else {
                ++i;
            }
    }
    /// `who` moved to `to`: its entries follow it.
    void rebind(const borrower* who, const borrower* to) {
        for (entry& e : entries_)
            if (e.who == who) e.who = to;
    }
    /// [lo, hi) is about to be written: every borrower reading it but `except` takes its copy.
    void before_write(const void* lo, const void* hi, index_t step, int core, const borrower* except = nullptr) {
        sync(step, core);
        const std::uintptr_t l = addr(lo), h = addr(hi);
        for (std::size_t i = 0; i < entries_.size();) {
            const entry e = entries_[i];
            if (e.who != except && e.lo < h && l < e.hi) {
                e.who->detach();  // removes its entries: look again from the start
                remove(e.who);
                i = 0;
            } else {
                ++i;
            }
        }
    }
    void expire_all() {
        while (!entries_.empty()) {
            const borrower* w = entries_.back().who;
            w->expire();
            remove(w);
        }
    }
    /// The call is over: borrowers of its last body step (whose memory is intact) take copies,
    /// older ones expire.
    void close(index_t step, int core) {
        if (step != step_ || core != core_) {
            expire_all();
            return;
        }
        while (!entries_.empty()) {
            const borrower* w = entries_.back().who;
            w->detach();
            remove(w);
        }
    }
    [[nodiscard]] std::size_t size() const { return entries_.size(); }

private:
    struct entry {
        const borrower* who;
        std::uintptr_t lo, hi;
    };
    static std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
    // Entries made in another body step read memory a DMA may have refilled since: expire them.
    void sync(index_t step, int core) {
        if (step == step_ && core == core_) return;
        expire_all();
        step_ = step;
        core_ = core;
    }
    std::vector<entry> entries_;
    index_t step_ = -1;
    int core_ = -1;
};

}  // namespace detail

/// What the runner tells a running body.
namespace detail {
/// What a body may ask its context that varies from step to step (the body memo of timing-only
/// runs, runtime/runner.hpp "Body memo"): program_id, core_index, valid_extent, pipeline_index.
enum class query_kind : std::uint8_t { program_id, core, valid_extent, pipeline_index };
struct body_query {
    query_kind kind = query_kind::program_id;
    std::int8_t a = 0;  ///< the axis, or the operand
    std::int8_t b = 0;  ///< valid_extent's dim
    index_t answer = 0;
    constexpr bool same_question(const body_query& o) const noexcept {
        return kind == o.kind && a == o.a && b == o.b;
    }
};
/// The questions a running body asked, in the order first asked (a repeat of a question is the
/// same answer within one body run: not kept). `opaque`: it read something the memo cannot ask
/// again without running the body (scalar memory: SMEM, VMEM scalars), or asked too much.
struct body_reads {
    static constexpr int cap = 8;
    std::array<body_query, cap> q{};
    int n = 0;
    bool opaque = false;
    void note(query_kind k, int a, int b, index_t answer) noexcept {
        const body_query x{k, static_cast<std::int8_t>(a), static_cast<std::int8_t>(b), answer};
        for (int i = 0; i < n; ++i)
            if (q[static_cast<std::size_t>(i)].same_question(x)) return;
        if (n == cap) {
            opaque = true;
            return;
        }
        q[static_cast<std::size_t>(n++)] = x;
    }
};
}  // namespace detail

/// One core's view of the call: what every pipeline running on that core shares, from the
/// kernel's body down to the innermost emit_pipeline. Whoever runs the call sets it once per core
/// (call/run_impl.hpp); the runner of the call's own pipeline moves `point` and `core` before each
/// body. Nothing else in it changes while a body runs, so a pipeline the body builds starts from
/// a copy of it (kernel_context's nested constructor).
struct call_state {
    int grid_rank = 0;  ///< the kernel's grid, and the running body's point in it (program ids)
    std::array<index_t, max_rank> grid{};
    std::array<index_t, max_rank> point{};
    int core = 0;
    int cores = 1;                            ///< cores of the call
    const chip* hw = nullptr;                 ///< the chip the call runs on (ops pad MXU work to its shape)
    bool timing_only = false;                 ///< ops skip floating-point work but still charge it
    bool detect_races = false;                ///< report reads/writes of the memory of DMAs in flight (DMA2)
    bool poison_buffers = false;              ///< run_options::poison_buffers (inner pipelines' slots too)
    bool poison_padding = false;              ///< edge blocks read poison outside the array
    per_core<std::byte*> arena{};             ///< each core's arena (semaphores: numbers and peers)
    std::vector<semaphore_range> semaphores;  ///< this core's semaphore scratch (offsets as in every core)
    /// detect_races on two or more cores: the call's log of every core's accesses (none with one
    /// core).
    race_log* races = nullptr;
    index_t vmem_limit = 0;  ///< the call's VMEM limit (check 24)
    std::vector<stream::dma_note>* notes = nullptr;  ///< the call's DMA notes (timeline on), or none
    stream::work_table* works = nullptr;  ///< the call's work table (compute ops' work numbers)
    const chain_rates* chain = nullptr;   ///< what a dependence chain costs on the call's chip
    /// run_options::memoize_body: timing-only runs may answer a body, or an inner pipeline's
    /// whole invocation, from what an earlier one with the same answers did.
    bool memoize_bodies = false;
    /// The model records per-step rows, inner pipelines' steps included (runner_options::inner_rows).
    /// Without them a timing-only inner pipeline also memoizes its bodies and folds the steps
    /// that repeat into repeat ops (call/emit_pipeline_impl.hpp); with them only with
    /// run_options::fold_inner_rows (`fold_inner_rows`), and only the kernel body's pipelines.
    bool inner_rows = true;
    bool fold_inner_rows = false;
    /// The inner-pipeline invocations kept on this core (made by its first emit_pipeline).
    detail::invocation_store* invocations = nullptr;
    /// A timing-only megacore run with its cores on one thread (call/run_impl.hpp, run_call): a
    /// wait on a semaphore that holds too little takes its amount on credit, the semaphore going
    /// below 0 until the other core's signal (later in this thread's order) pays it back. The
    /// timing model blocks the core at the wait's op until that signal's op. What a body could
    /// see of the debt, semaphore_read, throws needs_turns instead.
    bool waits_on_credit = false;
};

namespace detail {
/// Thrown where cores run on one thread without turns and a body needs another core to have run
/// first (a wait on a DMA semaphore, a debt or a signal past the int32 range, semaphore_read): the
/// run starts over with the cores taking turns (call/run_impl.hpp, run_call). Not a std::exception:
/// nothing but run_call is meant to catch it.
struct needs_turns {};
}  // namespace detail

/// What a pipeline's bodies did that the call's account counts: their own DMAs and semaphore
/// ops, and the pipelines they ran (emit_pipeline). A pipeline's enclosing one takes its tally
/// over when it ends (kernel_context::absorb).
struct body_tally {
    index_t body_dma_count = 0;  ///< DMAs issued by bodies (sync_copy, async copies)
    index_t body_dma_bytes = 0;
    index_t sem_signals = 0;
    index_t sem_waits = 0;
    index_t inner_steps = 0;  ///< steps of inner pipelines run by the bodies
    index_t inner_dmas = 0;
    index_t inner_bytes = 0;
    work inner_work{};  ///< work charged by inner pipelines' bodies
};

/// What a body reads while it runs (program ids, the chip, its work and copies): the call's state
/// on its core, the tally of its pipeline, and the state of the pipeline whose body it is.
struct kernel_context : call_state, body_tally {
    kernel_context() = default;
    /// The context of a pipeline run by the body whose context is `outer` (emit_pipeline): the
    /// same call state (the kernel's program ids and core: Pallas bodies read those), a fresh
    /// tally, and its own grid: rank, the core split's offset and the whole grid; its windows
    /// take `windows_vmem` more bytes of the core's VMEM.
    kernel_context(kernel_context& outer, index_t windows_vmem, int rank, const std::array<index_t, max_rank>& offset,
                   const std::array<index_t, max_rank>& whole)
        : call_state(outer),
          vmem_used(outer.vmem_used + windows_vmem),
          vmem_peak(vmem_used),
          pipeline_depth(outer.pipeline_depth + 1),
          inner_rank(rank),
          inner_offset(offset),
          inner_grid(whole),
          parent(&outer) {}
    kernel_context(const kernel_context&) = delete;
    kernel_context& operator=(const kernel_context&) = delete;
    ~kernel_context() { borrows.close(step, core); }

    /// The pipeline `inner` run by this context's body ended, its runner's account `s`: its
    /// tally, and what it and the pipelines it ran did, become this one's.
    void absorb(const kernel_context& inner, const run_stats& s) { absorb(inner, inner.vmem_peak, s); }
    /// The same from the tally `t` and VMEM peak of a pipeline that ran (or a kept one's).
    void absorb(const body_tally& t, index_t peak, const run_stats& s);

    index_t step = 0;
    work body_work{};                         ///< what the running body charged since its last op
    std::vector<body_op_record> body_ops;     ///< the running body's DMAs and semaphore ops, in order
    std::vector<pending_dma> pending;         ///< async copies started, not yet taken in (this core)
    /// Set by whoever runs the cores: called when a semaphore wait cannot be met yet; returns
    /// once this core may look again (the other core ran), or throws. None: a single core, and
    /// an unmet wait is a deadlock.
    void (*yield)(void* self) = nullptr;
    void* yield_self = nullptr;
    /// Set by the runner: writes the body's ops so far into its batch (before a yield).
    void (*flush_ops)(void* self) = nullptr;
    void* flush_self = nullptr;
    /// Set by the runner while its batch may grow: writes an inner pipeline's ops straight into
    /// it, after the body's ops so far (as body_op_kind::stream_op records would be, without
    /// making them). Null: the inner ops go to body_ops as records.
    void (*inner_ops)(void* self, const inner_handover& h) = nullptr;
    index_t vmem_used = 0;   ///< bytes of VMEM in use on this core: the call's, plus inner pipelines'
    index_t vmem_peak = 0;   ///< the most vmem_used reached (inner pipelines' windows included)
    int pipeline_depth = 0;  ///< 0: the call's body; k: the body of a pipeline k levels in
    int index_maps = 0;      ///< > 0 while an inner pipeline's index map runs (program_id is not K3 there)
    /// The call's grid is run by the pipeline this body emits (dynamic_call::custom_buffered):
    /// that pipeline's body asks program_id and num_programs of its grid.
    bool grid_from_pipeline = false;
    /// The running body's valid extents per operand and dim (BoundedSlice and edge blocks).
    const std::array<std::array<index_t, max_rank>, max_operands>* valid = nullptr;
    int inner_rank = 0;      ///< an inner pipeline's body: its grid rank, point and core offset
    std::array<index_t, max_rank> inner_point{};
    std::array<index_t, max_rank> inner_offset{};
    std::array<index_t, max_rank> inner_grid{};  ///< the whole inner grid (before a core split)
    std::uint32_t body_seq = 0;  ///< DMAs of inner pipelines recorded by the running body so far
    std::uint32_t pipelines_run = 0;  ///< inner pipelines the running body invoked so far
    /// The inner rows (stream::inner_row) of the pipelines the running body ran, as each one's
    /// runner numbered them (parents relative to that runner), one after another: the ops those
    /// runners handed on name their rows by them (body_op_record::rows_base).
    std::vector<stream::inner_row> nested_rows;
    detail::borrow_registry borrows;  ///< vecs reading this call's VMEM (copy-on-write loads)
    /// detect_races: the pipeline DMAs in flight on this core (A13).
    std::vector<pipeline_flight> flights;
    const kernel_context* parent = nullptr;  ///< an inner pipeline's body: the enclosing body's context
    /// Set while a timing-only run records what the body asks (runner.hpp, "Body memo").
    detail::body_reads* reads = nullptr;
    /// Owns `invocations` when this context made it.
    std::unique_ptr<detail::invocation_store> own_invocations;
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
/// [lo, hi) is about to be written by the running body: vecs still reading it take a copy first.
inline void before_write(const void* lo, const void* hi) {
    if (kernel_context* c = current_context()) c->borrows.before_write(lo, hi, c->step, c->core);
}
/// The contiguous run, in bytes, of a strided region (stream::op::run): the innermost dims laid
/// out densely, times the first that is not; 0 when the region is one run or runs reach 64 KiB
/// (docs/model.md, "DMA shape costs").
template <std::size_t R>
constexpr std::uint16_t run_of_region(const std::array<index_t, R>& shape, const std::array<index_t, R>& strides,
                                      index_t item) {
    index_t run = item, dense = 1;
    for (std::size_t k = R; k-- > 0;) {
        if (shape[k] == 1) continue;
        // A dim of several elements not laid out densely after the inner ones: several runs.
        if (strides[k] != dense) return run < 65536 ? static_cast<std::uint16_t>(run) : 0;
        run *= shape[k];
        dense *= shape[k];
    }
    return 0;
}
/// Records a body op (sync or async DMA, signal, wait) of kind `k` after the work charged before
/// it: the new record, for the caller to fill in (valid until the body's next record). Written in
/// place: a record built aside and copied in stalls on store forwarding at every copy and wait.
inline body_op_record& note_body_op(kernel_context& c, body_op_kind k) {
    body_op_record& r = c.body_ops.emplace_back();
    r.kind = k;
    r.before = c.body_work;
    c.body_work = work{};
    return r;
}
inline void note_body_dma(space_kind src, space_kind dst, index_t bytes, std::uint16_t run = 0) {
    if (kernel_context* c = current_context()) {
        ++c->body_dma_count;
        c->body_dma_bytes += bytes;
        body_op_record& r = note_body_op(*c, body_op_kind::sync_dma);
        r.far = access(src).far || access(dst).far;
        r.amount = bytes;
        r.run = run;
    }
}
/// A body reads or writes scalar memory (SMEM, a VMEM scalar): a timing-only run's body memo
/// cannot know what that read would give at another step, so this body run is not replayed.
inline void note_scalar_access() noexcept {
    if (kernel_context* c = current_context(); c != nullptr && c->reads != nullptr) c->reads->opaque = true;
}
/// Records an inner pipeline's ops `h` as the body's (kernel_context::inner_ops is not set).
inline void note_handover(kernel_context& c, const inner_handover& h) {
    bool first = h.begins;
    for (const stream::op& o : h.ops) {
        body_op_record& r = note_body_op(c, body_op_kind::stream_op);
        r.op = o;
        r.seq = h.seq + o.dma;
        r.begins = first;
        r.rows_base = h.rows_base;
        r.inputs = h.inputs;
        first = false;
    }
}

[[gnu::cold]] PTPU_COMPILED void raise_dma_race(const kernel_context& c, const pending_dma& d, bool write, bool at_dst,
                                          const char* what);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void raise_dma_race(const kernel_context& c, const pending_dma& d, bool write, bool at_dst,
                                          const char* what) {
    const std::string role = at_dst ? "the destination" : "the source";
    throw error("DMA2", "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": " + what,
                std::string(write ? "writes " : "reads ") +
                    detail::ref_where(at_dst ? d.dst_label : d.src_label) + ", " + role +
                    " of an async copy from " + detail::ref_where(d.src_label) + " to " +
                    detail::ref_where(d.dst_label) + " started at step " + std::to_string(d.step) +
                    " and not yet waited (its contents are undefined until the wait)",
                at_dst ? "wait on the copy (desc.wait()) before touching its destination"
                       : "wait on the copy (desc.wait()) before writing its source");
}
#endif
[[gnu::cold]] PTPU_COMPILED std::string flight_name(const pipeline_flight& f);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED std::string flight_name(const pipeline_flight& f) {
    const bool in = f.op < f.n_in;
    return std::string(f.pipeline == 0 ? "the call's pipeline" : "pipeline " + std::to_string(f.pipeline)) + " " +
           (in ? "input " : "output ") + std::to_string(in ? f.op : f.op - f.n_in) + " window slot " +
           std::to_string(f.slot);
}
#endif
[[gnu::cold]] PTPU_COMPILED void raise_flight_race(const kernel_context& c, const pipeline_flight& f, bool write,
                                             const char* what);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void raise_flight_race(const kernel_context& c, const pipeline_flight& f, bool write,
                                             const char* what) {
    throw error("DMA2", "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": " + what,
                std::string(write ? "writes " : "reads ") + flight_name(f) + " while the pipeline's " +
                    (f.into ? "fetch into it" : "copy out of it") + " (block of step " + std::to_string(f.block_step) +
                    ", started at step " + std::to_string(f.step) + ") is in flight: on a TPU the " +
                    (f.into ? "data is not there yet" : "copy may read the new values"),
                "touch only the window the body is given at this step (keep no ref to another slot, or to an "
                "allocations' window, across steps)");
}
#endif
[[gnu::cold]] inline void raise_slot_race(const kernel_context& c, const pipeline_flight& f, const pending_dma& d) {
    throw error("DMA3",
                "core " + std::to_string(c.core) + ", step " + std::to_string(f.step) + ": " + flight_name(f),
                std::string("the pipeline's ") + (f.into ? "fetch into" : "copy out of") +
                    " the slot (block of step " + std::to_string(f.block_step) +
                    ") starts while an async copy from " + detail::ref_where(d.src_label) + " to " +
                    detail::ref_where(d.dst_label) + ", started at step " + std::to_string(d.step) +
                    ", still reads or writes it: the slot is overwritten (or read) under the copy",
                "wait on the copy (desc.wait()) within the step that started it, before the pipeline reuses "
                "the slot");
}
/// Race detection (run_options::detect_races): [lo, hi) is about to be read or written by the
/// body; a body's async copy still in flight whose destination (or, for a write, source)
/// overlaps it, or a pipeline DMA into (or, for a write, out of) a window slot it overlaps, of
/// this body's pipeline or an enclosing one, is error DMA2. Nothing to do when nothing is in
/// flight.
inline void check_dma_access(const void* lo, const void* hi, bool write, const char* what) {
    const kernel_context* c = current_context();
    if (c == nullptr || !c->detect_races) return;
    const auto* l = static_cast<const std::byte*>(lo);
    const auto* h = static_cast<const std::byte*>(hi);
    for (const pending_dma& d : c->pending) {
        if (d.dst_lo < h && l < d.dst_hi) raise_dma_race(*c, d, write, true, what);
        if (write && d.src_lo < h && l < d.src_hi) raise_dma_race(*c, d, write, false, what);
    }
    for (const kernel_context* k = c; k != nullptr; k = k->parent)
        for (const pipeline_flight& f : k->flights)
            if ((f.into || write) && f.lo < h && l < f.hi) raise_flight_race(*c, f, write, what);
}

[[gnu::cold]] inline void raise_core_race(const kernel_context& c, const hbm_access& a, const hbm_access& other) {
    const bool both = a.write && other.write;
    std::string what = std::string(a.write ? "writes" : "reads") + " HBM that core " + std::to_string(other.core) +
                       (other.write ? " wrote" : " read") + " at its step " + std::to_string(other.step) + " (" +
                       other.what + "), and no semaphore signal and wait orders the two " +
                       (both ? "writes: the result depends on which core writes last"
                             : "accesses: the read sees the old or the new values depending on which core runs first");
    throw error("MC2", "core " + std::to_string(c.core) + ", step " + std::to_string(c.step) + ": " + a.what,
                std::move(what),
                both ? "give each core its own part of the output (index the output by the split parallel dim, or by "
                       "core_index()), or order the writes with semaphore_signal / semaphore_wait across the cores"
                     : "let a core read only HBM the other core does not write (index both by the split parallel dim, "
                       "or by core_index()), or order the write and the read with semaphore_signal / semaphore_wait "
                       "across the cores");
}
/// detect_races on two or more cores: the running core reads or writes (a.write) the HBM box `a`
/// (its core, epoch and step are filled in here); MC2 when it overlaps a write of another core,
/// or for a write a read of it, that this core has not synchronized with (both orders: whichever
/// access comes second finds the first in the other core's log).
inline void note_hbm_access(kernel_context& c, hbm_access a) {
    if (a.hi <= a.lo) return;  // nothing touched
    race_log& log = *c.races;
    const int me = c.core;
    const auto u = static_cast<std::size_t>(me);
    a.core = me;
    a.epoch = log.vc[u][u];
    a.step = c.step;
    int last = -1;  // the last other core (its index takes `a` itself, the others a copy)
    for (int other = 0; other < log.cores; ++other) {
        if (other == me) continue;
        last = other;
        const std::int64_t seen = log.vc[u][static_cast<std::size_t>(other)];
        if (const hbm_access* e = log.of(log.writes, other, me).find(a, seen)) raise_core_race(c, a, *e);
        if (a.write)
            if (const hbm_access* e = log.of(log.reads, other, me).find(a, seen)) raise_core_race(c, a, *e);
    }
    std::vector<detail::access_index>& mine = a.write ? log.writes : log.reads;
    for (int q = 0; q < last; ++q)
        if (q != me) log.of(mine, me, q).add(a);
    if (last >= 0) log.of(mine, me, last).add(std::move(a));
}
/// The box of a ref's memory (for note_hbm_access).
template <std::size_t R>
hbm_access box_of(const void* data, const std::array<index_t, R>& shape, const std::array<index_t, R>& strides,
                 index_t item) {
    hbm_access w;
    w.p = static_cast<const std::byte*>(data);
    w.rank = static_cast<int>(R);
    w.item = item;
    index_t last = 0;
    for (std::size_t d = 0; d < R; ++d) {
        w.count[d] = shape[d];
        w.stride[d] = strides[d] * item;
        last += (shape[d] - 1) * strides[d];
    }
    w.lo = w.p;
    w.hi = w.p + (last + 1) * item;
    return w;
}
/// A semaphore signal from the running core to semaphore `number` of core `target`: the
/// signal carries the core's clock, and the core moves to its next epoch.
inline void race_signal(kernel_context& c, int target, std::uint32_t number) {
    race_log& log = *c.races;
    const auto me = static_cast<std::size_t>(c.core);
    race_log::sem_clock* s = nullptr;
    for (auto& e : log.sems)
        if (e.core == target && e.number == number) s = &e;
    if (s == nullptr) {
        log.sems.push_back({target, number, each_core(std::int64_t{-1})});
        s = &log.sems.back();
    }
    for (std::size_t k = 0; k < max_cores; ++k) s->vc[k] = std::max(s->vc[k], log.vc[me][k]);
    ++log.vc[me][me];
}
/// A wait on the running core's semaphore `number` completed: the core has seen what its
/// signals carried.
inline void race_wait(kernel_context& c, std::uint32_t number) {
    race_log& log = *c.races;
    const auto me = static_cast<std::size_t>(c.core);
    for (const auto& e : log.sems)
        if (e.core == c.core && e.number == number)
            for (std::size_t k = 0; k < max_cores; ++k) log.vc[me][k] = std::max(log.vc[me][k], e.vc[k]);
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

/// pl.program_id(axis): the global grid index along `axis`, megacore offset included (S15). In an
/// emit_pipeline body it is K3: say pipeline_index (this pipeline's step) or outer_program_id
/// (the kernel's, which is what Pallas's program_id gives there). Index maps, inner ones
/// included, read the kernel's with program_id, as in Pallas.
PTPU_COMPILED index_t program_id(int axis);
/// The enclosing kernel's grid index along `axis` (program_id's value), in any body: what an
/// emit_pipeline body calls for the kernel's program id.
PTPU_COMPILED index_t outer_program_id(int axis);
/// pl.num_programs(axis): the full grid size along `axis` (S15, pallas_call). In an emit_pipeline
/// body it is K3, as program_id: say pipeline_size or outer_num_programs.
PTPU_COMPILED index_t num_programs(int axis);
/// The enclosing kernel's grid size along `axis` (num_programs's value), in any body.
PTPU_COMPILED index_t outer_num_programs(int axis);
/// The grid index along `axis` of the innermost pipeline whose body is running (emit_pipeline;
/// upstream's PipelineStep index): global, the core split's offset included. The enclosing
/// kernel's indices are outer_program_id's there (program_id is K3 in a pipeline's body).
PTPU_COMPILED index_t pipeline_index(int axis);
/// The size of the innermost pipeline's grid along `axis` (before any core split).
PTPU_COMPILED index_t pipeline_size(int axis);
/// How many elements of dim `dim` of operand `operand`'s window (inputs then outputs) hold the
/// block's data at this step: the slice's size for a BoundedSlice dim (the window keeps its
/// static bound), the part inside the array for an edge block, else the block size.
PTPU_COMPILED index_t valid_extent(int operand, int dim);

#if defined(PTPU_DEFINE_COMPILED)
namespace detail {
// The running kernel's context for a query of its grid along `axis` (`where`: the function
// asked), checked: K3 when asked in an emit_pipeline body, where it would be the enclosing
// kernel's grid and not the inner one (code ported from a kernel body often means the latter;
// `outer` and `inner` name the two fixes; null: the query is meant for the kernel's grid); rule
// 22 for a missing grid (`needs_grid`: program ids) or an axis outside it.
PTPU_COMPILED const kernel_context& kernel_grid_query(int axis, const char* where, bool needs_grid, const char* outer,
                                                      const char* inner) {
    const kernel_context& c = require_context(where);
    if (outer != nullptr && c.pipeline_depth > 0 && c.index_maps == 0)
        throw error("K3", std::string(where) + " in an emit_pipeline body (pipeline " + std::to_string(c.pipeline_depth) + ")",
                    "it would give the enclosing kernel's grid, not this pipeline's",
                    std::string("use ") + inner + "(axis) for this pipeline's grid, or " + outer +
                        "(axis) for the kernel's");
    if (needs_grid && c.grid_rank == 0)
        throw error("22", where, "program id was requested but no grid was provided",
                    "give the pallas_call a Grid<...>");
    if (axis < 0 || axis >= c.grid_rank)
        throw error(
            "22", where,
            "invalid axis " + std::to_string(axis) + " for a grid of rank " + std::to_string(c.grid_rank),
            "use an axis in [0, grid rank)");
    return c;
}
// The kernel's grid index along a checked axis, noted as read.
PTPU_COMPILED index_t kernel_point(const kernel_context& c, int axis) {
    const index_t v = c.point[static_cast<std::size_t>(axis)];
    if (c.reads != nullptr) c.reads->note(query_kind::program_id, axis, 0, v);
    return v;
}
}  // namespace detail

namespace detail {
// The body of the pipeline that runs its call's grid (dynamic_call::custom_buffered), outside
// an index map: the grid queries are that pipeline's.
PTPU_COMPILED bool grid_of_pipeline() {
    const kernel_context* c = current_context();
    return c != nullptr && c->pipeline_depth > 0 && c->index_maps == 0 && c->parent != nullptr &&
           c->parent->grid_from_pipeline;
}
}  // namespace detail

PTPU_COMPILED index_t program_id(int axis) {
    if (detail::grid_of_pipeline()) return pipeline_index(axis);
    return detail::kernel_point(
        detail::kernel_grid_query(axis, "program_id", true, "outer_program_id", "pipeline_index"), axis);
}
PTPU_COMPILED index_t outer_program_id(int axis) {
    return detail::kernel_point(detail::kernel_grid_query(axis, "outer_program_id", true, nullptr, nullptr), axis);
}
PTPU_COMPILED index_t num_programs(int axis) {
    if (detail::grid_of_pipeline()) return pipeline_size(axis);
    const kernel_context& c =
        detail::kernel_grid_query(axis, "num_programs", false, "outer_num_programs", "pipeline_size");
    return c.grid[static_cast<std::size_t>(axis)];
}
PTPU_COMPILED index_t outer_num_programs(int axis) {
    const kernel_context& c = detail::kernel_grid_query(axis, "outer_num_programs", false, nullptr, nullptr);
    return c.grid[static_cast<std::size_t>(axis)];
}
PTPU_COMPILED index_t pipeline_index(int axis) {
    const kernel_context& c = detail::require_context("pipeline_index");
    if (c.pipeline_depth == 0)
        throw error("22", "pipeline_index", "called outside an emit_pipeline body",
                    "use program_id in a pallas_call body");
    if (axis < 0 || axis >= c.inner_rank)
        throw error("22", "pipeline_index",
                    "invalid axis " + std::to_string(axis) + " for an inner grid of rank " + std::to_string(c.inner_rank),
                    "use an axis in [0, inner grid rank)");
    const auto u = static_cast<std::size_t>(axis);
    const index_t v = c.inner_point[u] + c.inner_offset[u];
    if (c.reads != nullptr) c.reads->note(detail::query_kind::pipeline_index, axis, 0, v);
    return v;
}
PTPU_COMPILED index_t pipeline_size(int axis) {
    const kernel_context& c = detail::require_context("pipeline_size");
    if (c.pipeline_depth == 0 || axis < 0 || axis >= c.inner_rank)
        throw error("22", "pipeline_size", "no inner grid axis " + std::to_string(axis) + " here",
                    "call it in an emit_pipeline body with an axis of its grid");
    return c.inner_grid[static_cast<std::size_t>(axis)];
}
PTPU_COMPILED index_t valid_extent(int operand, int dim) {
    const kernel_context& c = detail::require_context("valid_extent");
    if (c.valid == nullptr || operand < 0 || operand >= static_cast<int>(max_operands) || dim < 0 ||
        dim >= static_cast<int>(max_rank))
        throw error("22", "valid_extent", "no window operand " + std::to_string(operand) + ", dim " + std::to_string(dim),
                    "name an operand (inputs then outputs) and a dim of its block");
    const index_t v = (*c.valid)[static_cast<std::size_t>(operand)][static_cast<std::size_t>(dim)];
    if (c.reads != nullptr) c.reads->note(detail::query_kind::valid_extent, operand, dim, v);
    return v;
}
#endif

namespace detail {
// The fields of `w` as one array, for the overflow checks of C1 below.
inline std::array<double, 10> work_fields(const work& w) {
    return {w.mxu_passes_flops, w.mxu_int8_ops,   w.vreg_cheap,   w.vreg_medium,      w.vreg_expensive,
            w.vector_loads,     w.vector_stores,  w.scalar_ops,   w.explicit_seconds, w.mxu_drains};
}
inline bool finite_work(const work& w) {
    double sum = 0;  // non-negative fields: the sum is finite when every field is and stays small
    for (double f : work_fields(w)) sum += f;
    if (sum <= std::numeric_limits<double>::max()) return true;
    for (double f : work_fields(w))
        if (!(f <= std::numeric_limits<double>::max())) return false;
    return true;
}
// The step a body runs, for messages: "core 0, step 3 (program ids (1, 1))", and an inner
// pipeline body's inner iteration.
[[gnu::cold, gnu::noinline]] inline std::string step_where(const kernel_context& c) {
    auto tuple = [](const auto& v, int n, const auto* add) {
        std::string t = "(";
        for (int d = 0; d < n; ++d)
            t += (d ? ", " : "") +
                 std::to_string(v[static_cast<std::size_t>(d)] + (add ? (*add)[static_cast<std::size_t>(d)] : 0));
        return t + ")";
    };
    const std::array<index_t, max_rank>* none = nullptr;
    std::string s = "core " + std::to_string(c.core) + ", " + (c.inner_rank > 0 ? "inner step " : "step ") +
                    std::to_string(c.step) + " (program ids " + tuple(c.point, c.grid_rank, none);
    if (c.inner_rank > 0) s += ", inner iteration " + tuple(c.inner_point, c.inner_rank, &c.inner_offset);
    return s + ")";
}
// C1: what the bodies charged up to this step overflows a double (each charge was finite).
[[noreturn, gnu::cold, gnu::noinline]] inline void work_overflow(const kernel_context& c, const char* what) {
    throw error("C1", step_where(c),
                std::string(what) + " is not finite: the charges overflow a double (each was finite)",
                "charge work and seconds of realistic size (e.g. not DBL_MAX); a time is in seconds");
}
}  // namespace detail

inline void kernel_context::absorb(const body_tally& inner, index_t peak, const run_stats& s) {
    inner_steps += s.steps + inner.inner_steps;
    inner_dmas += s.dma_in + s.dma_out + inner.inner_dmas;
    inner_bytes += s.bytes_in + s.bytes_out + inner.inner_bytes;
    inner_work += s.total_work;
    inner_work += inner.inner_work;
    if (!detail::finite_work(inner_work))
        detail::work_overflow(*this, "the work inner pipelines charged up to this step");
    vmem_peak = std::max(vmem_peak, peak);
    body_dma_count += inner.body_dma_count;
    body_dma_bytes += inner.body_dma_bytes;
    sem_signals += inner.sem_signals;
    sem_waits += inner.sem_waits;
}

/// Adds `w` to the running body's work (ops/ call this; outside a body it is a no-op). C1 when
/// `w` is negative or not finite, or the step's work overflows (naming the step).
inline void charge(const work& w) {
    check_work(w);  // C1
    if (kernel_context* c = detail::current_context()) {
        c->body_work += w;
        if (!detail::finite_work(c->body_work)) detail::work_overflow(*c, "the work this step's body charged");
    }
}

/// True when the running call is in timing-only mode: floating-point work is skipped.
inline bool timing_only() {
    const kernel_context* c = detail::current_context();
    return c != nullptr && c->timing_only;
}

/// The TensorCore running the body (0 or 1 on megacore chips).
inline int core_index() {
    const kernel_context& c = detail::require_context("core_index");
    if (c.reads != nullptr) c.reads->note(detail::query_kind::core, 0, 0, c.core);
    return c.core;
}

/// pl.when(cond, fn): runs fn when cond holds.
template <class F>
void when(bool cond, F&& fn) {
    if (cond) static_cast<F&&>(fn)();
}

}  // namespace ptpu
