// Defines run_inner (declared in call/emit_pipeline.hpp): one invocation of an inner pipeline,
// run by a runner of its own. Read by every translation unit in the header-only mode, and only
// by the one that defines PTPU_RUNTIME_IMPLEMENTATION (ptpu::runtime) with PTPU_SEPARATE_RUNTIME.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
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

PTPU_COMPILED void run_inner(kernel_context& outer, const pipeline_desc& p, const block_fn* maps,
                             const void* ctx, const std::array<void*, max_operands>& hbm, body_call body,
                             std::vector<event>* trace, const allocations_base* alloc) {
    const plan_tables t = inner_run::plan(outer, p, maps, ctx);
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
    const std::uint32_t base = outer.body_seq;
    {
        runner r(p, t, 0, maps, ctx, hbm, a.mem, inner, body, ro, outer.notes);
        bool first = true;  // the enclosing runner numbers this invocation's steps from here
        // This runner's inner rows (pipelines its body runs) go along with its ops, so that
        // the enclosing runner can number them under its own rows (stream::inner_row::parent).
        const auto rows_base = static_cast<std::uint32_t>(outer.nested_rows.size());
        // The inner runner's ops so far go to the enclosing body's log as its own ops.
        const auto inputs = static_cast<std::uint8_t>(p.n_in);
        const auto hand_on = [&outer, &first, &r, base, rows_base, inputs](std::span<const stream::op> ops) {
            const std::vector<stream::inner_row>& rows = r.inner_rows();
            for (std::size_t k = outer.nested_rows.size() - rows_base; k < rows.size(); ++k)
                outer.nested_rows.push_back(rows[k]);
            if (ops.empty()) return;
            if (outer.inner_ops != nullptr) {  // straight into the enclosing runner's batch
                outer.inner_ops(outer.flush_self, inner_handover{ops, base, first, rows_base, inputs});
                first = false;
                return;
            }
            for (const stream::op& o : ops) {
                body_op_record rec;
                rec.kind = body_op_kind::stream_op;
                rec.op = o;
                rec.seq = base + o.dma;
                rec.begins = first;
                rec.rows_base = rows_base;
                rec.inputs = inputs;
                first = false;
                note_body_op(outer, rec);
            }
        };
        // A wait the inner body cannot meet yet: the ops up to it (the inner step's so far,
        // ending with the wait) become the enclosing body's, which then yields as its own wait
        // would (runtime/semaphore.hpp, take): the other core runs until it signals. With no
        // core to yield to, the wait stays a deadlock (39).
        struct yield_to_outer {
            kernel_context* outer;
            runner* r;
            const decltype(hand_on)* hand;
        } y{&outer, &r, &hand_on};
        if (outer.yield != nullptr) {
            inner.yield = [](void* self) {
                auto* q = static_cast<yield_to_outer*>(self);
                (*q->hand)(q->r->take_partial().ops);
                if (q->outer->flush_ops != nullptr) q->outer->flush_ops(q->outer->flush_self);
                q->outer->yield(q->outer->yield_self);
            };
            inner.yield_self = &y;
        }
        for (;;) {
            const stream::batch b = r.next_batch(false);
            if (b.ops.empty()) break;
            hand_on(b.ops);
        }
        outer.body_seq = base + r.dma_ids_used();
        outer.absorb(inner, r.stats());
    }
    if (!inner.pending.empty())
        throw error("39", "emit_pipeline (pipeline " + std::to_string(inner.pipeline_depth) + ")",
                    "its body left an async copy from " + detail::ref_where(inner.pending.front().src_label) +
                        " to " + detail::ref_where(inner.pending.front().dst_label) +
                        " in flight when the pipeline ended",
                    "wait on every copy an inner body starts before the pipeline ends");
}

}  // namespace ptpu::detail
