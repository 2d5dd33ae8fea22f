// Defines run_inner (declared in call/emit_pipeline.hpp): one invocation of an inner pipeline,
// run by a runner of its own. Read by every translation unit in the header-only mode, and only
// by the one that defines PTPU_RUNTIME_IMPLEMENTATION (ptpu::runtime) with PTPU_SEPARATE_RUNTIME.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "ptpu/call/emit_pipeline.hpp"
#include "ptpu/runtime/runner.hpp"

namespace ptpu::detail {

PTPU_COMPILED operand_desc describe_source(operand_role role, dtype type, int rank, const index_t* shape,
                                           const index_t* strides, int k, bool aliased) {
    operand_desc d;
    d.role = role;
    d.type = type;
    d.rank = rank;
    for (int i = 0; i < rank; ++i) d.shape[static_cast<std::size_t>(i)] = shape[i];
    index_t stride = 1;
    for (int i = rank; !aliased && i-- > 0;) {
        if (shape[i] > 1 && strides[i] != stride)
            throw error("R1", "emit_pipeline",
                        std::string(role == operand_role::input ? "input " : "output ") + std::to_string(k) +
                            ": the source ref is not contiguous (a strided slice)",
                        "pass the whole array, or a slice of whole rows");
        stride *= shape[i];
    }
    d.aliased = aliased;
    return d;
}

// ---- The invocation memo (timing-only runs) -------------------------------------------------
// Without data, what an invocation hands on (its ops) and adds up (steps, DMAs, work) depends
// only on the pipeline (its description, index maps, this core's part of its grid, the buffers
// of allocations passed in), on which body it runs and how many pipelines the enclosing body ran
// before it, on the VMEM that body already uses, and on what its index maps and bodies asked (the
// kernel's program ids and core; the maps, what the enclosing body may ask), as long as its
// bodies read no scalar memory and did nothing but charge work: no copy, semaphore op or deeper
// pipeline. A body that captures state may also depend on what the enclosing body computed: on
// what that body had asked before. Pallas traces a body once; the body memo (runtime/runner.hpp)
// runs one once per set of answers. Such an invocation is kept, and a later one with the same
// key hands on the kept ops again, without planning or running anything. As with the body memo,
// the 1st, 2nd, 4th... reuse of a kept invocation runs it and checks what it did (K2).

struct kept_invocation {
    // Its ops' storage comes from, and goes back to, the thread's shelf (core/reuse.hpp): the
    // spot checks record an invocation again and drop it.
    kept_invocation() : ops(take_empty_buffer<stream::op>()) {}
    ~kept_invocation() { put_buffer(ops); }
    kept_invocation(const kept_invocation&) = delete;
    kept_invocation& operator=(const kept_invocation&) = delete;

    pipeline_desc p{};
    void (*body)(void*, core_memory&) = nullptr;  // which body (body_call::fn, one per body type)
    std::uint32_t ordinal = 0;                    // the how-manieth pipeline the enclosing body ran
    // A body that captures state: what the enclosing body had asked before invoking it (what it
    // captured is a function of that). Not compared for a stateless body.
    bool keyed_by_outer = false;
    body_reads outer_before{};
    std::array<block_fn, max_operands> maps{};
    // A pipeline configured by values: its operands' maps; one given allocations: their buffers.
    bool by_values = false, has_alloc = false;
    std::array<block_fn, max_operands> value_maps{};
    std::array<int, max_operands> alloc_buffers{};
    std::array<index_t, max_rank> offset{}, whole{};
    index_t vmem_used = 0;
    body_reads asked_outer{};  // what the index maps asked the enclosing body's context
    body_reads asked_inner{};  // what the bodies asked (only the kernel's program ids and core count)
    // What the invocation handed on (not kept when too many: such an invocation runs each time).
    std::vector<stream::op> ops;
    bool has_ops = false;
    std::uint32_t dma_ids = 0;
    run_stats stats{};
    body_tally tally{};
    index_t vmem_peak = 0;
    bool pure = false;  // the bodies did nothing but charge work, and nothing read scalar memory
    index_t hits = 0, check_at = 1;
};

struct invocation_memo final : invocation_store {
    static constexpr std::size_t max_kept = 64;  // more distinct invocations run every time
    // The most ops kept for one invocation, and for all (40 bytes each): longer ones run.
    static constexpr std::size_t max_ops = std::size_t{1} << 16, max_all_ops = std::size_t{1} << 20;
    // Once it is full, this many invocations in a row that none answers turn it off: each
    // lookup compares every kept one.
    static constexpr index_t max_misses = 1024;
    std::vector<std::unique_ptr<kept_invocation>> kept;
    std::size_t all_ops = 0;
    index_t misses = 0;
    bool off = false;
};

// The core's memo when this invocation may be kept or handed on again: a timing-only run that
// memoizes bodies, without notes, races, semaphores or a trace; a pipeline the kernel's body
// runs (a deeper one's enclosing body is not run as a function of answers the memo sees); maps
// that read no extra values; no SMEM window (scalar code reads what those move); a stateless
// body, or an enclosing body whose questions so far are known and read no scalar memory.
inline invocation_memo* memo_for(kernel_context& outer, const pipeline_desc& p, const inner_map_ctx& m,
                                 const std::vector<event>* trace, bool stateless) {
    if (!outer.timing_only || !outer.memoize_bodies || outer.notes != nullptr || outer.detect_races ||
        !outer.semaphores.empty() || trace != nullptr || m.user != nullptr || outer.pipeline_depth != 0 ||
        (!stateless && (outer.reads == nullptr || outer.reads->opaque)))
        return nullptr;
    for (int i = 0; i < p.n_ops(); ++i)
        if (p.ops[static_cast<std::size_t>(i)].space == space_kind::smem) return nullptr;
    if (outer.invocations == nullptr) {
        outer.own_invocations = std::make_unique<invocation_memo>();
        outer.invocations = outer.own_invocations.get();
    }
    return static_cast<invocation_memo*>(outer.invocations);
}

inline bool same_pipeline(const pipeline_desc& a, const pipeline_desc& b) {
    if (a.grid_rank != b.grid_rank || a.grid != b.grid || a.has_semantics != b.has_semantics ||
        a.semantics_rank != b.semantics_rank || a.semantics != b.semantics || a.n_in != b.n_in ||
        a.n_out != b.n_out || a.cores != b.cores || a.tiling != b.tiling ||
        a.no_pipelining != b.no_pipelining)
        return false;
    for (int i = 0; i < a.n_ops(); ++i)
        if (!(a.ops[static_cast<std::size_t>(i)] == b.ops[static_cast<std::size_t>(i)])) return false;
    return true;
}

// What the enclosing body's context answers to question q (index maps ask it).
inline index_t outer_answer(const kernel_context& c, const body_query& q) {
    const auto a = static_cast<std::size_t>(q.a);
    switch (q.kind) {
        case query_kind::program_id:
            return c.point[a];
        case query_kind::core:
            return c.core;
        case query_kind::pipeline_index:
            return c.inner_point[a] + c.inner_offset[a];
        case query_kind::valid_extent:
            return c.valid != nullptr ? (*c.valid)[a][static_cast<std::size_t>(q.b)] : -1;
    }
    return -1;
}
// The kernel's program ids and core answer the same in an inner body; the rest it asks is its
// own pipeline's (a function of what the memo compares).
inline bool kernel_question(const body_query& q) {
    return q.kind == query_kind::program_id || q.kind == query_kind::core;
}

inline bool same_reads(const body_reads& a, const body_reads& b) {
    if (a.n != b.n || a.opaque != b.opaque) return false;
    for (int i = 0; i < a.n; ++i)
        if (!a.q[static_cast<std::size_t>(i)].same_question(b.q[static_cast<std::size_t>(i)]) ||
            a.q[static_cast<std::size_t>(i)].answer != b.q[static_cast<std::size_t>(i)].answer)
            return false;
    return true;
}
inline kept_invocation* find_kept(invocation_memo& memo, const kernel_context& outer, const pipeline_desc& p,
                                  const block_fn* maps, const inner_map_ctx& m, const allocations_base* alloc,
                                  const body_call& body, std::uint32_t ordinal, bool stateless) {
    for (const std::unique_ptr<kept_invocation>& k : memo.kept) {
        const kept_invocation& e = *k;
        // (The cheap tests first, the pipeline's description last.)
        if (e.body != body.fn || e.ordinal != ordinal || e.keyed_by_outer == stateless ||
            e.vmem_used != outer.vmem_used || e.offset != m.offset || e.whole != m.whole ||
            e.by_values != (m.value_maps != nullptr) || e.has_alloc != (alloc != nullptr) ||
            (!stateless && !same_reads(e.outer_before, *outer.reads)))
            continue;
        bool same = true;
        for (int i = 0; same && i < p.n_ops(); ++i) {
            const auto u = static_cast<std::size_t>(i);
            same = e.maps[u] == maps[i] && (!e.by_values || e.value_maps[u] == m.value_maps[i]) &&
                   (!e.has_alloc || e.alloc_buffers[u] == alloc->buffers[u]);
        }
        for (int i = 0; same && i < e.asked_outer.n; ++i)
            same = outer_answer(outer, e.asked_outer.q[static_cast<std::size_t>(i)]) ==
                   e.asked_outer.q[static_cast<std::size_t>(i)].answer;
        for (int i = 0; same && i < e.asked_inner.n; ++i) {
            const body_query& q = e.asked_inner.q[static_cast<std::size_t>(i)];
            same = !kernel_question(q) || outer_answer(outer, q) == q.answer;
        }
        if (same && same_pipeline(e.p, p)) return k.get();
    }
    return nullptr;
}

// Questions asked on the way, passed on to whoever records the enclosing body's.
inline void pass_on(body_reads* to, const body_reads& from, bool kernel_only) {
    if (to == nullptr) return;
    to->opaque = to->opaque || from.opaque;
    for (int i = 0; i < from.n; ++i) {
        const body_query& q = from.q[static_cast<std::size_t>(i)];
        if (!kernel_only || kernel_question(q)) to->note(q.kind, q.a, q.b, q.answer);
    }
}

// What a run `b` did is what was kept in `a`.
inline bool same_invocation(const kept_invocation& a, const kept_invocation& b) {
    const run_stats &s = a.stats, &t = b.stats;
    return (!a.has_ops || a.ops == b.ops) && a.dma_ids == b.dma_ids && a.vmem_peak == b.vmem_peak &&
           same_reads(a.asked_outer, b.asked_outer) && same_reads(a.asked_inner, b.asked_inner) &&
           s.steps == t.steps && s.dma_in == t.dma_in && s.dma_out == t.dma_out && s.bytes_in == t.bytes_in &&
           s.bytes_out == t.bytes_out && s.total_work == t.total_work && s.op_dmas == t.op_dmas &&
           s.op_bytes == t.op_bytes && a.tally.inner_work == b.tally.inner_work;
}

// Ops of an inner pipeline handed on to the enclosing body's runner (or its records).
inline void hand_on(kernel_context& outer, const inner_handover& h) {
    if (h.ops.empty()) return;
    if (outer.inner_ops != nullptr)  // straight into the enclosing runner's batch
        outer.inner_ops(outer.flush_self, h);
    else
        note_handover(outer, h);
}

// A kept invocation run again: its ops handed on as the pipeline's runner would, its account
// taken over.
inline void replay(kernel_context& outer, const kept_invocation& e) {
    const std::uint32_t base = outer.body_seq;
    const auto rows_base = static_cast<std::uint32_t>(outer.nested_rows.size());
    hand_on(outer, {e.ops, base, true, rows_base, static_cast<std::uint8_t>(e.p.n_in), &e});
    outer.body_seq = base + e.dma_ids;
    outer.absorb(e.tally, e.vmem_peak, e.stats);
    pass_on(outer.reads, e.asked_outer, false);
    pass_on(outer.reads, e.asked_inner, true);
}

[[noreturn, gnu::cold, gnu::noinline]] inline void raise_unlike_kept(const kernel_context& outer) {
    throw error(
        "K2",
        step_where(outer) + ": emit_pipeline (pipeline " + std::to_string(outer.pipeline_depth + 1) + ")",
        "in a timing-only run an invocation of an inner pipeline did other work (its bodies charged "
        "other work, or asked other questions) than an earlier invocation of the same pipeline whose "
        "index maps and bodies got the same answers: timing-only runs run such an invocation once per "
        "distinct set of answers (as Pallas traces a body once)",
        "make the inner body a function of its refs, pipeline_index, the kernel's program ids and scalar "
        "memory (no host state that changes from step to step), or set run_options::memoize_body = false");
}

// One invocation, run: `rec`, when not null, learns what it did.
inline void run_invocation(kernel_context& outer, const pipeline_desc& p, const block_fn* maps,
                           const void* ctx, const std::array<void*, max_operands>& hbm, body_call body,
                           std::vector<event>* trace, const allocations_base* alloc, kept_invocation* rec,
                           const scan_fn* scans);

PTPU_COMPILED void run_inner(kernel_context& outer, const pipeline_desc& p, const block_fn* maps,
                             const void* ctx, const std::array<void*, max_operands>& hbm, body_call body,
                             std::vector<event>* trace, const allocations_base* alloc, bool stateless,
                             const scan_fn* scans) {
    const auto& mctx = *static_cast<const inner_map_ctx*>(ctx);
    const std::uint32_t ordinal = outer.pipelines_run++;
    invocation_memo* memo = memo_for(outer, p, mctx, trace, stateless);
    if (memo == nullptr || memo->off)
        return run_invocation(outer, p, maps, ctx, hbm, body, trace, alloc, nullptr, scans);
    kept_invocation* const kept = find_kept(*memo, outer, p, maps, mctx, alloc, body, ordinal, stateless);
    const bool full = memo->kept.size() >= invocation_memo::max_kept;
    memo->misses = kept != nullptr ? 0 : memo->misses + (full ? 1 : 0);
    memo->off = memo->misses >= invocation_memo::max_misses;
    if (kept != nullptr && kept->has_ops && ++kept->hits != kept->check_at) return replay(outer, *kept);
    if ((kept == nullptr && full) || (kept != nullptr && !kept->has_ops))
        return run_invocation(outer, p, maps, ctx, hbm, body, trace, alloc, nullptr, scans);
    auto rec = std::make_unique<kept_invocation>();
    rec->p = p;
    rec->body = body.fn;
    rec->ordinal = ordinal;
    rec->keyed_by_outer = !stateless;
    if (!stateless) rec->outer_before = *outer.reads;
    rec->by_values = mctx.value_maps != nullptr;
    rec->has_alloc = alloc != nullptr;
    for (int i = 0; i < p.n_ops(); ++i) {
        const auto u = static_cast<std::size_t>(i);
        rec->maps[u] = maps[i];
        if (rec->by_values) rec->value_maps[u] = mctx.value_maps[i];
        if (rec->has_alloc) rec->alloc_buffers[u] = alloc->buffers[u];
    }
    rec->offset = mctx.offset;
    rec->whole = mctx.whole;
    rec->vmem_used = outer.vmem_used;
    // The run's ops are kept back and handed on once it has ended (as the kept invocation's
    // when it is one, so that the enclosing runner sees the same invocation again).
    rec->has_ops = kept != nullptr || memo->all_ops < invocation_memo::max_all_ops;
    const std::uint32_t base = outer.body_seq;
    const auto rows_base = static_cast<std::uint32_t>(outer.nested_rows.size());
    run_invocation(outer, p, maps, ctx, hbm, body, trace, alloc, rec.get(), scans);
    const kept_invocation* give = rec.get();
    if (kept != nullptr) {  // a check: the run must do what the kept one did
        if (!rec->pure || !same_invocation(*kept, *rec)) raise_unlike_kept(outer);
        kept->check_at *= 2;
        give = kept;
    } else if (rec->pure) {
        memo->all_ops += rec->ops.size();
        memo->kept.push_back(std::move(rec));
        give = memo->kept.back().get();
    }
    if (give->has_ops)
        hand_on(outer, {give->ops, base, true, rows_base, static_cast<std::uint8_t>(p.n_in),
                        give->pure ? give : nullptr});
}

// ---- Folded steps (timing-only runs) -----------------------------------------------------------
// An inner runner that may make whole periods of steps in bulk (runner::skip_periods) hands its
// steps on through a step_folder, which holds the last few back. Once the last p steps repeat
// the p before them (the same ops, DMA ids advanced), it marks the runner there; when the next
// p steps repeat them again and the runner can show that m more periods would (the schedule's
// change bits and the body memo, runner::skippable_periods), the last p steps are handed on
// after one repeat op standing for the m periods (stream::op_kind::repeat), which the runner
// then makes without their ops. The model makes those periods again from the repeat op, or
// skips them (docs/model.md §11).
class step_folder {
public:
    static constexpr int max_period = 8;   // steps
    static constexpr int max_window = 12;  // periods

    // `window` (at most max_window): the periods that must repeat before a mark, at least the
    // least common multiple of the window rings' buffer counts: the DMAs then in flight in every
    // slot, which the runner carries over the periods it skips, were started by periods that
    // repeat (runner::skip).
    explicit step_folder(index_t window) : window_(static_cast<int>(window)) {}

    template <class Pass>
    void step(runner& r, std::span<const stream::op> ops, std::uint32_t starts, Pass& pass) {
        held_.insert(held_.end(), ops.begin(), ops.end());
        ends_.push_back(held_.size());
        starts_.push_back(starts);
        if (want_ > 0 && ++since_ == want_) {
            const int p = want_;
            want_ = 0;
            const index_t m = repeats(p, 0) ? r.skippable_periods(p, starts_of(p)) : 0;
            if (m > 0) return fold(r, p, m, pass);
        }
        if (want_ == 0)
            for (int p = 1; p <= max_period; ++p) {
                bool all = true;  // the last window_ periods of p steps repeat
                for (int j = 0; all && j + 1 < window_; ++j) all = repeats(p, j);
                if (all) {  // look again p steps on, from a mark here
                    r.skip_periods(0);
                    want_ = p;
                    since_ = 0;
                    break;
                }
            }
        // Steps older than any period the folder may still fold are handed on.
        const auto keep = static_cast<std::size_t>(window_ * max_period);
        if (ends_.size() > keep) pass_oldest(ends_.size() - keep, pass);
    }
    // Hands on every step held.
    template <class Pass>
    void flush(Pass& pass) {
        pass_oldest(ends_.size(), pass);
    }

private:
    [[nodiscard]] std::size_t begin_of(std::size_t k) const { return k == 0 ? 0 : ends_[k - 1]; }
    [[nodiscard]] std::uint32_t starts_of(int p) const {
        std::uint32_t n = 0;
        for (std::size_t k = ends_.size() - static_cast<std::size_t>(p); k < ends_.size(); ++k)
            n += starts_[k];
        return n;
    }
    // The `back`-th last p steps held are the p before them, DMA ids advanced by those steps'
    // starts. A step with a deeper pipeline's repeat op is not folded again (the model makes one
    // repeat op's repetitions at a time).
    [[nodiscard]] bool repeats(int p, int back) const {
        const std::size_t q = static_cast<std::size_t>(p), n = ends_.size();
        const std::size_t skip = static_cast<std::size_t>(back) * q;
        if (n < 2 * q + skip) return false;
        const std::size_t end = begin_of(n - skip), a = begin_of(n - skip - 2 * q),
                          b = begin_of(n - skip - q);
        if (end - b != b - a) return false;
        std::uint32_t d = 0;
        for (std::size_t k = n - skip - 2 * q; k < n - skip - q; ++k) d += starts_[k];
        for (std::size_t i = 0; i < b - a; ++i) {
            stream::op x = held_[a + i];
            const stream::op& y = held_[b + i];
            if (x.kind == stream::op_kind::repeat) return false;
            if (x.kind == stream::op_kind::dma_start || x.kind == stream::op_kind::dma_wait) x.dma += d;
            x.step = y.step;
            if (!(x == y)) return false;
        }
        return true;
    }
    template <class Pass>
    void pass_oldest(std::size_t k, Pass& pass) {
        if (k == 0) return;
        const std::size_t end = ends_[k - 1];
        pass(std::span<const stream::op>(held_.data(), end));
        held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(end));
        ends_.erase(ends_.begin(), ends_.begin() + static_cast<std::ptrdiff_t>(k));
        for (std::size_t& e : ends_) e -= end;
        starts_.erase(starts_.begin(), starts_.begin() + static_cast<std::ptrdiff_t>(k));
    }
    // The last p steps, after a repeat op standing for m more periods of them; the runner makes
    // those without their ops.
    template <class Pass>
    void fold(runner& r, int p, index_t m, Pass& pass) {
        const std::size_t n = ends_.size();
        pass_oldest(n - static_cast<std::size_t>(p), pass);
        stream::op rep;
        rep.kind = stream::op_kind::repeat;
        rep.dma = starts_of(p);
        rep.sem = static_cast<std::uint32_t>(held_.size());
        rep.bytes = m;
        rep.step = held_.front().step;
        rep.sub = static_cast<std::uint16_t>(p);  // the inner rows a repetition makes, when numbered
        held_.insert(held_.begin(), rep);
        pass(std::span<const stream::op>(held_));
        held_.clear();
        ends_.clear();
        starts_.clear();
        r.skip_periods(m);
    }

    int window_ = 2;
    std::vector<stream::op> held_;       // the ops of the steps held back, in order
    std::vector<std::size_t> ends_;      // where each held step's ops end in held_
    std::vector<std::uint32_t> starts_;  // and the DMAs each started
    int want_ = 0;                       // a period seen: the runner was marked `since_` steps ago
    int since_ = 0;
};

inline void run_invocation(kernel_context& outer, const pipeline_desc& p, const block_fn* maps,
                           const void* ctx, const std::array<void*, max_operands>& hbm, body_call body,
                           std::vector<event>* trace, const allocations_base* alloc, kept_invocation* rec,
                           const scan_fn* scans) {
    // What the index maps ask the enclosing body's context is recorded (and passed on after).
    struct recording {
        kernel_context& outer;
        body_reads* was;
        kept_invocation* rec;
        ~recording() {
            if (rec == nullptr) return;
            outer.reads = was;
            pass_on(was, rec->asked_outer, false);
            pass_on(was, rec->asked_inner, true);
        }
    } const recording{outer, outer.reads, rec};
    if (rec != nullptr) outer.reads = &rec->asked_outer;
    const plan_tables t = inner_run::plan(outer, p, maps, ctx, scans);
    if (alloc != nullptr)
        for (int i = 0; i < p.n_ops(); ++i) {
            const operand_plan& op = t.info.ops[static_cast<std::size_t>(i)];
            if ((op.windowed ? op.buffers : 0) != alloc->buffers[static_cast<std::size_t>(i)])
                throw error("ARG1", "emit_pipeline",
                            "the allocations passed were made for another pipeline or other refs (operand " +
                                std::to_string(i) + ": " + std::to_string(alloc->buffers[static_cast<std::size_t>(i)]) +
                                " buffers, the pipeline needs " + std::to_string(op.windowed ? op.buffers : 0) + ")",
                            "make the allocations with this pipeline's make_allocations over the same refs");
        }
    index_t vmem = 0, host = 0;
    for (int i = 0; i < p.n_ops(); ++i) {
        const operand_plan& op = t.info.ops[static_cast<std::size_t>(i)];
        if (!op.windowed || alloc != nullptr) continue;  // allocations: the scratch's VMEM, counted once
        if (p.ops[static_cast<std::size_t>(i)].space == space_kind::vmem) vmem += op.buffers * op.slot_bytes;
        host += op.buffers * align_up(op.block_bytes, 64);
    }
    if (outer.vmem_limit > 0 && vmem > outer.vmem_limit - outer.vmem_used)
        throw error("24", "emit_pipeline (pipeline " + std::to_string(outer.pipeline_depth + 1) + ")",
                    "its windows need " + std::to_string(vmem) + " bytes of VMEM and the core has " +
                        std::to_string(outer.vmem_limit - outer.vmem_used) + " left of " +
                        std::to_string(outer.vmem_limit),
                    "use smaller blocks or fewer buffers");
    inner_arena a;
    a.bytes.assign(static_cast<std::size_t>(std::max<index_t>(host, 64)), std::byte{0xff});  // garbage (S57)
    a.mem.arena = a.bytes.data();
    a.mem.poison_padding = outer.poison_padding;
    index_t at = 0;
    for (int i = 0; i < p.n_ops(); ++i) {
        const operand_plan& op = t.info.ops[static_cast<std::size_t>(i)];
        for (int k = 0; k < op.buffers; ++k) {
            if (alloc != nullptr) {  // made once: what the last invocation (or the caller) left
                a.mem.slots[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)] =
                    alloc->slots[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)];
                continue;
            }
            std::byte* slot = a.bytes.data() + static_cast<std::ptrdiff_t>(at);
            a.mem.slots[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)] = slot;
            const dtype t = p.ops[static_cast<std::size_t>(i)].type;
            if (outer.poison_buffers)
                fill_poison(slot, op.block_bytes / itemsize(t), t);
            else if (t == dtype::boolean)  // a host bool must hold 0 or 1: garbage is true
                std::memset(slot, 0x01, static_cast<std::size_t>(op.block_bytes));
            at += align_up(op.block_bytes, 64);
        }
        for (int d = 0; d < p.ops[static_cast<std::size_t>(i)].rank; ++d)  // (the runner updates varying ones)
            a.mem.valid[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)] =
                p.ops[static_cast<std::size_t>(i)].block[static_cast<std::size_t>(d)].size;
    }
    // The inner body's context: the enclosing body's call state (the kernel's program ids and
    // core, which Pallas bodies read), its own work, copies and borrowed vecs.
    const auto& mctx = *static_cast<const inner_map_ctx*>(ctx);
    kernel_context inner(outer, vmem, p.grid_rank, mctx.offset, mctx.whole);
    runner_options ro;
    ro.timing_only = outer.timing_only;
    ro.notes = outer.notes != nullptr;
    ro.works = outer.works;
    ro.pipeline = static_cast<std::uint8_t>(inner.pipeline_depth);
    ro.nested = true;
    ro.trace = trace;
    // An inner body may block in a semaphore wait (the kernel has semaphores): its steps are
    // never made from the last one's ops, and the wait yields as the enclosing body's would.
    ro.semaphores = !outer.semaphores.empty();
    // On a one-core call, the runner memoizes its bodies as the call's does, and the steps it
    // makes in bulk (whole periods that repeat the last step) are handed on folded: one repeat
    // op and the step's ops (stream::op_kind::repeat), which the model makes again or skips.
    // With per-step rows, only when asked (run_options::fold_inner_rows: the prediction is then
    // the unfolded one to 1e-9, not to the last digit), and only a pipeline the kernel's body
    // runs (the enclosing runner numbers its steps' rows, runner::number_folded_rows; a deeper
    // one's steps are rows under rows). (The model's lane for two cores running together does
    // not follow folds: a megacore call's inner steps are handed on one by one.)
    const bool fold =
        outer.cores == 1 && (!outer.inner_rows || (outer.fold_inner_rows && outer.pipeline_depth == 0));
    ro.inner_rows = outer.inner_rows;
    ro.memoize_body = outer.memoize_bodies && fold;
    ro.fold_repeats = fold;
    if (rec != nullptr) inner.reads = &rec->asked_inner;  // (its body memo adds to them)
    const std::uint32_t base = outer.body_seq;
    {
        runner r(p, t, 0, maps, ctx, hbm, a.mem, inner, body, ro, outer.notes);
        bool first = true;  // the enclosing runner numbers this invocation's steps from here
        // This runner's inner rows (pipelines its body runs) go along with its ops, so that
        // the enclosing runner can number them under its own rows (stream::inner_row::parent).
        const auto rows_base = static_cast<std::uint32_t>(outer.nested_rows.size());
        // The inner runner's ops so far go to the enclosing body's log as its own ops.
        const auto inputs = static_cast<std::uint8_t>(p.n_in);
        const auto pass = [&outer, &first, &r, base, rows_base, inputs,
                           rec](std::span<const stream::op> ops) {
            const std::vector<stream::inner_row>& rows = r.inner_rows();
            for (std::size_t k = outer.nested_rows.size() - rows_base; k < rows.size(); ++k)
                outer.nested_rows.push_back(rows[k]);
            if (ops.empty()) return;
            if (rec != nullptr && rec->has_ops) {  // kept back (run_inner hands them on)
                rec->ops.insert(rec->ops.end(), ops.begin(), ops.end());
                if (rec->ops.size() <= invocation_memo::max_ops) return;
                rec->has_ops = false;  // too many to keep: handed on now, and as they come
                hand_on(outer, {rec->ops, base, first, rows_base, inputs});
                first = false;
                put_buffer(rec->ops);
                return;
            }
            hand_on(outer, {ops, base, first, rows_base, inputs});
            first = false;
        };
        // A wait the inner body cannot meet yet: the ops up to it (the inner step's so far,
        // ending with the wait) become the enclosing body's, which then yields as its own wait
        // would (runtime/semaphore.hpp, take): the other core runs until it signals. With no
        // core to yield to, the wait stays a deadlock (39).
        struct yield_to_outer {
            kernel_context* outer;
            runner* r;
            const decltype(pass)* hand;
        } y{&outer, &r, &pass};
        if (outer.yield != nullptr) {
            inner.yield = [](void* self) {
                auto* q = static_cast<yield_to_outer*>(self);
                (*q->hand)(q->r->take_partial().ops);
                if (q->outer->flush_ops != nullptr) q->outer->flush_ops(q->outer->flush_self);
                q->outer->yield(q->outer->yield_self);
            };
            inner.yield_self = &y;
        }
        index_t window = 2;  // (step_folder)
        for (int i = 0; i < p.n_ops(); ++i) {
            const operand_plan& op = t.info.ops[static_cast<std::size_t>(i)];
            if (op.windowed && op.buffers > 1) window = std::lcm(window, op.buffers);
        }
        if (!r.may_skip() || window > step_folder::max_window) {
            for (;;) {
                const stream::batch b = r.next_batch(false);
                if (b.ops.empty()) break;
                pass(b.ops);
            }
        } else {
            step_folder f(window);
            for (;;) {
                const std::uint32_t ids = r.dma_ids_used();
                const stream::batch b = r.next_batch(false);
                if (b.ops.empty()) break;
                f.step(r, b.ops, r.dma_ids_used() - ids, pass);
            }
            f.flush(pass);
        }
        outer.body_seq = base + r.dma_ids_used();
        outer.absorb(inner, r.stats());
        if (rec != nullptr) {
            rec->dma_ids = r.dma_ids_used();
            rec->stats = r.stats();
            rec->tally = inner;
            rec->vmem_peak = inner.vmem_peak;
            rec->pure = !rec->asked_outer.opaque && !rec->asked_inner.opaque && inner.body_dma_count == 0 &&
                        inner.sem_signals == 0 && inner.sem_waits == 0 && inner.inner_steps == 0 &&
                        inner.pending.empty() && r.inner_rows().empty();
        }
    }
    if (!inner.pending.empty())
        throw error("39", "emit_pipeline (pipeline " + std::to_string(inner.pipeline_depth) + ")",
                    "its body left an async copy from " + detail::ref_where(inner.pending.front().src_label) +
                        " to " + detail::ref_where(inner.pending.front().dst_label) +
                        " in flight when the pipeline ended",
                    "wait on every copy an inner body starts before the pipeline ends");
}

}  // namespace ptpu::detail
