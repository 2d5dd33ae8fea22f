// Defines the diag value (which rule a pipeline or call breaks, where, and the values involved)
// and its words: each rule's one message (the same literal is a static call's static_assert text
// and a run-time ptpu::error's), the sentence naming the operand, the dim and the values
// (message(diag, pipeline_desc)), describe(diag), and raise() for run-time plans. The checks that
// produce diags are spec/validate.hpp's and the planner's.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/core/message.hpp"
#include "ptpu/hw/tiling.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/pipeline.hpp"

namespace ptpu {

// Each rule of a call, with its one message `ptpu[ID] where: what; fix`: the same literal is the
// static_assert text at compile time (pallas_call.hpp expands this list) and the ptpu::error text
// at run time (message() below). The name is the rule id (docs/rules.md; r<N>: check N;
// s<N>: schedule rule S<N>) or ptpu's own (mc1: megacore output race; smem1: SMEM overflow).
#define PTPU_RULE_TEXT_11                                                                              \
    "ptpu[11] pallas_call: an Alias<in, out> is out of range, reuses an output, or joins operands of " \
    "different shape or dtype; alias an input to an output of the same Array type"
#define PTPU_RULE_TEXT_24                                                                                   \
    "ptpu[24] pallas_call: VMEM overflow: the windows (buffer count x block bytes, tile-padded) plus VMEM " \
    "scratch exceed the VMEM limit; use smaller blocks, Buffered<1>, or a larger VmemLimit"
#define PTPU_RULE_TEXT_S34                                                                                   \
    "ptpu[S34] pallas_call: out-of-bounds block index: the block has no element inside the array; make the " \
    "index map stay within cdiv(dim, block) blocks"
#define PTPU_RULE_TEXT_S39                                                                                   \
    "ptpu[S39] pallas_call: an output block is revisited after other blocks were written in between, so it " \
    "is written back from a stale buffer; make the reduction axes the trailing grid axes (consecutive "      \
    "steps), or use Buffered<1> with revisit_any"
#define PTPU_RULE_TEXT_MC1                                                                                   \
    "ptpu[MC1] pallas_call: megacore output race: two TensorCores write the same output block, because the " \
    "output's index map gives grid points of both cores that block (e.g. it ignores a parallel dimension "   \
    "split across the cores); include every parallel grid index in the output's index map, or mark that "    \
    "dim arbitrary"
// The same race in a call whose index maps read scalar-prefetch values (planned at run time): the
// shared block may come from those values rather than from the map's form.
#define PTPU_RULE_TEXT_MC1_PREFETCH                                                                          \
    "ptpu[MC1] pallas_call: megacore output race: two TensorCores write the same output block; the "         \
    "output's index map reads scalar-prefetch values, so the prefetched values may have sent grid points "   \
    "of both cores to that block, or the map ignores a parallel dimension split across the cores; make the " \
    "prefetched values give each core's grid points their own output blocks, include every parallel grid "   \
    "index in the map, or mark that dim arbitrary"
#define PTPU_CALL_RULES(X)                                                                                   \
    X(r1,                                                                                                    \
      "ptpu[1] BlockSpec: block shape and array must have the same number of dimensions; give one block "    \
      "dim per array dim (squeezed for a dim the kernel should not see)")                                    \
    X(r2,                                                                                                    \
      "ptpu[2] BlockSpec: the index map must return one entry per block dimension; return idx(...) with as " \
      "many entries as the block has dims")                                                                  \
    X(r2_arity,                                                                                              \
      "ptpu[2] BlockSpec: the index map cannot be called with the grid indices (then the scalar-prefetch "   \
      "refs); take one integer per grid dim, e.g. [](auto i, auto j)")                                       \
    X(r3, "ptpu[3] BlockSpec: the index map must return integer scalars; return idx(i, j, ...)")             \
    X(r4,                                                                                                    \
      "ptpu[4] BlockSpec: a bounded_slice dim needs ds(start, size) from the index map; return "             \
      "idx(ds(start, size), ...)")                                                                           \
    X(r5,                                                                                                    \
      "ptpu[5] BlockSpec: a blocked, element or squeezed dim needs a scalar from the index map, not a ds "   \
      "slice; return the block index (or element offset)")                                                   \
    X(r10,                                                                                                   \
      "ptpu[10] pallas_call: an option is given twice or is not a pallas_call option; give at most one "     \
      "Grid, In, Out, Semantics, Chip, VmemLimit and ScalarPrefetch")                                        \
    X(r11, PTPU_RULE_TEXT_11)                                                                                \
    X(r13,                                                                                                   \
      "ptpu[13] pallas_call: blocks must have rank >= 1; give scalars an Array of shape (1) or pass them "   \
      "with ScalarPrefetch")                                                                                 \
    X(r14,                                                                                                   \
      "ptpu[14] pallas_call: an any/hbm operand has no window, so its block must be the whole array with a " \
      "zero index map; use BlockSpec<Full, zero_map, any> and copy parts with sync_copy")                    \
    X(r15,                                                                                                   \
      "ptpu[15] pallas_call: the last two block dims must be divisible by 8 and 128 respectively, or equal " \
      "the array dims (TPU tiling); pick (8k, 128m) blocks or the full extent")                              \
    X(r16,                                                                                                   \
      "ptpu[16] pallas_call: a rank-1 block must equal the array, be a multiple of 1024, or be a power of "  \
      "two >= 128*(32/bitwidth) (bool counts as 32-bit); pick such a size")                                  \
    X(r17,                                                                                                   \
      "ptpu[17] pallas_call: non-trivial windowing is not supported for a grid-free call (Grid<>); use "     \
      "whole-array blocks with zero index maps, or give a grid")                                             \
    X(r18,                                                                                                   \
      "ptpu[18] pallas_call: unsupported block dimension type bounded_slice (BoundedSlice works in "         \
      "emit_pipeline); use blocked or element dims")                                                         \
    X(r18_element,                                                                                           \
      "ptpu[18] pallas_call: all block dimensions must be element (or squeezed) or none of them; make "      \
      "every dim element{n}")                                                                                \
    X(r19_lookahead,                                                                                         \
      "ptpu[19] pallas_call: lookahead is not supported for the top-level pipeline; use Buffered<k, true> "  \
      "inside emit_pipeline")                                                                                \
    X(r19_buffers,                                                                                           \
      "ptpu[19] pallas_call: only single (1) and double (2) buffering are supported; use Buffered<1> or "    \
      "Buffered<2>")                                                                                         \
    X(r19_revisit,                                                                                           \
      "ptpu[19] pallas_call: revisit_any is not supported with double buffering; use Buffered<1> with "      \
      "revisit_any")                                                                                         \
    X(r19_prefetched,                                                                                        \
      "ptpu[19] pallas_call: prefetched_count is not supported for the top-level pipeline (S55 is "          \
      "emit_pipeline's); drop it, or prefetch inside an emit_pipeline with allocations")                     \
    X(r28,                                                                                                   \
      "ptpu[28] emit_pipeline: prefetched_count must be less than buffer_count for non-trivial windowing; "  \
      "use Buffered<k, L, p> with p < k")                                                                    \
    X(r28_output,                                                                                            \
      "ptpu[28] emit_pipeline: prefetched_count applies to inputs only (S55); drop it from the output's "    \
      "Buffered")                                                                                            \
    X(r31,                                                                                                   \
      "ptpu[31] emit_pipeline: with tiling, a block that does not divide its array dim must be a multiple "  \
      "of the dim's memory tile (block size must divide tiling, S35); pick a block that divides the dim or " \
      "a multiple of the tile (8 rows for f32's second-minor dim, 128 lanes)")                               \
    X(r27_buffers, "ptpu[27] emit_pipeline: buffer_count must be at least 1; use Buffered<1> or more")       \
    X(r27_out_buffers,                                                                                       \
      "ptpu[27] emit_pipeline: buffer count > 2 is not supported for outputs; use Buffered<1> or "           \
      "Buffered<2> for outputs (inputs may take more)")                                                      \
    X(r27_out_lookahead,                                                                                     \
      "ptpu[27] emit_pipeline: output buffering does not support lookahead; use Buffered<k, true> on "       \
      "inputs only")                                                                                         \
    X(q1,                                                                                                    \
      "ptpu[Q1] emit_pipeline: Buffered<1, true> never fetches block 0 (upstream hangs or reads the wrong "  \
      "block); use Buffered<2, true> or drop the lookahead")                                                 \
    X(buf1,                                                                                                  \
      "ptpu[BUF1] pipeline: more window buffers than ptpu supports (max_buffers = 8 per operand); use at "   \
      "most 8")                                                                                              \
    X(r20,                                                                                                   \
      "ptpu[20] pallas_call: the length of the grid does not match the length of the dimension semantics; "  \
      "give one Semantics value per grid dim")                                                               \
    X(r24, PTPU_RULE_TEXT_24)                                                                                \
    X(r24_limit,                                                                                             \
      "ptpu[24] pallas_call: the VMEM limit is negative or exceeds the chip's physical VMEM (vmem_bytes), "  \
      "so no allocation could honour it; ask for at most the chip's VMEM (VmemLimit<bytes>)")                \
    X(pad1,                                                                                                  \
      "ptpu[PAD1] BlockSpec: element padding must be non-negative (padding=(lo, hi) pads the array on "      \
      "each side); give element{n, lo, hi} with lo, hi >= 0")                                                \
    X(smem1,                                                                                                 \
      "ptpu[SMEM1] pallas_call: SMEM overflow: scalar-prefetch operands, SMEM windows and SMEM scratch "     \
      "exceed the chip's SMEM; move data to VMEM")                                                           \
    X(r25,                                                                                                   \
      "ptpu[25] pallas_call: all elements in the grid must be strictly positive; drop or fix the zero dim")  \
    X(r25_inner,                                                                                             \
      "ptpu[25] emit_pipeline: every dim of the inner grid must be strictly positive; fix the zero dim, or " \
      "skip the pipeline with when(...) when it has nothing to do")                                          \
    X(s34, PTPU_RULE_TEXT_S34)                                                                               \
    X(s38_negative,                                                                                          \
      "ptpu[S38] emit_pipeline: a bounded_slice index map returned ds(start, size) with a negative size; "   \
      "return a size in [0, n] for bounded_slice{n}")                                                        \
    X(s38_bound,                                                                                             \
      "ptpu[S38] emit_pipeline: a bounded_slice index map returned ds(start, size) with size above the "     \
      "dim's bound n (the window slot holds n rows); return size <= n, or raise n in bounded_slice{n}")      \
    X(s38_range,                                                                                             \
      "ptpu[S38] emit_pipeline: a bounded_slice index map returned ds(start, size) outside the array "       \
      "(start < 0 or start + size > the array's dim); keep [start, start + size) inside the array")          \
    X(s38_align,                                                                                             \
      "ptpu[S38] emit_pipeline: with tiling, a bounded_slice start must be a multiple of the dim's tile "    \
      "(S36); align start to the tile, or run the pipeline without tiling")                                  \
    X(s39, PTPU_RULE_TEXT_S39)                                                                               \
    X(s44,                                                                                                   \
      "ptpu[S44] pallas_call: parallel dimensions must form a prefix of the grid; reorder the grid so "      \
      "parallel axes come first")                                                                            \
    X(mc1, PTPU_RULE_TEXT_MC1)                                                                               \
    X(mc1_prefetch, PTPU_RULE_TEXT_MC1_PREFETCH)                                                             \
    X(mem1,                                                                                                  \
      "ptpu[MEM1] planner: the host tables of the run would exceed its memory budget "                       \
      "(run_options::memory_budget): pass 1's change bits of index maps that repeat with no period, or "     \
      "the output runs kept for the revisit checks when they are out of order; raise the budget")            \
    X(v3,                                                                                                    \
      "ptpu[V3] pallas_call: extent arithmetic overflows int64 (index_t): the grid's step count, an "        \
      "array's, block's, window's or scratch buffer's bytes, a padded element dim or the memory layout's "   \
      "total does not fit; use smaller extents")

#define PTPU_RULE_ENUMERATOR(name, text) name,
/// The rules a call can break (`reported`: a type-level static_assert already gave the message).
enum class rule : std::uint8_t { ok, reported, PTPU_CALL_RULES(PTPU_RULE_ENUMERATOR) };
#undef PTPU_RULE_ENUMERATOR

/// What an Alias<in, out> gets wrong (rule 11; diag::c).
enum class alias_problem : std::uint8_t {
    input_out_of_range = 1,
    output_out_of_range,
    output_reused,
    dtype,
    rank,
    shape
};
/// What overflowed when a call breaks rule V3 (diag::c), as describe() names it.
enum class overflow_of : std::uint8_t {
    grid_steps,      ///< the product of the grid (dim: where it first overflows)
    step_tables,     ///< the steps times (operands + 2): the planner's per-step tables
    array_bytes,     ///< an operand's array: elements times itemsize
    block_bytes,     ///< one block: elements times itemsize
    padded_dim,      ///< an element dim: dim + pad_lo + pad_hi (and its block offsets)
    slot_bytes,      ///< one window slot, tile-padded
    windows,         ///< the windows' buffers of a pipeline, summed
    scratch_bytes,   ///< a scratch buffer (diag::b: its index)
    prefetch_bytes,  ///< a scalar-prefetch operand, or their sum (diag::b: its index)
    layout           ///< a core's memory layout: windows, scratch, prefetch, aligned to 64 bytes
};

/// The first problem found in a call, with the values the message needs.
struct diag {
    rule code = rule::ok;
    int op = -1;    ///< operand index (inputs then outputs), -1 when none
    int dim = -1;   ///< dimension involved
    index_t a = 0;  ///< values: meaning per rule (see describe())
    index_t b = 0;
    index_t c = 0;
    index_t d = 0;
    index_tuple<max_rank> block{};  ///< a block index involved (S34, S38, S39, MC1)
    coords at[3]{};                 ///< S34/S38: where; S39/MC1: first run from, to, and the second write
    /// 24: per operand window bytes, scratch, total; S38: the bound n, the array's dim, the tile
    /// (and `a` the linear grid step)
    std::array<index_t, max_operands + 2> bytes{};
    std::array<int, max_operands> buffers{};  ///< 24: per operand buffer count
    [[nodiscard]] constexpr bool ok() const { return code == rule::ok; }
};

/// The message of each rule (run time).
#define PTPU_RULE_CASE(name, text) \
    case rule::name:               \
        return text;
constexpr const char* message(rule r) {
    switch (r) {
        case rule::ok:
            return "ptpu[ok] no problem";
        case rule::reported:
            return "ptpu[7] BlockSpec: unsupported block dimension type (reported where the Block was "
                   "formed)";
            PTPU_CALL_RULES(PTPU_RULE_CASE)
    }
    return "ptpu[?] unknown rule";
}
#undef PTPU_RULE_CASE
namespace detail {

// ---- A diag as a sentence: the rule's message with what it is about -----------------------------

/// What overflowed (V3), as the messages name it.
constexpr std::string_view overflow_name(overflow_of what) {
    constexpr std::string_view names[] = {"the grid's step count",
                                          "the steps times (operands + 2) of the planner's tables",
                                          "the array's bytes",
                                          "one block's bytes",
                                          "the padded extent dim + pad_lo + pad_hi",
                                          "one window slot's bytes (tile-padded)",
                                          "the windows' bytes (buffers x slots, summed over operands)",
                                          "the scratch buffer's bytes",
                                          "the scalar-prefetch bytes",
                                          "the memory layout's total bytes"};
    const auto w = static_cast<std::size_t>(what);
    return w < std::size(names) ? names[w] : std::string_view("a value");
}

/// An operand as a message names it: "input `weights`", or by position, "output 0", when its Arg
/// has no name.
constexpr void put_operand(rule_message& m, const pipeline_desc& p, int op) {
    if (op < 0 || op >= p.n_ops()) {
        m << "operand " << op;
        return;
    }
    const bool input = op < p.n_in;
    m << (input ? "input " : "output ");
    const operand_desc& o = p.ops[static_cast<std::size_t>(op)];
    if (o.name[0] != '\0') {
        std::size_t n = 0;
        while (n < sizeof o.name && o.name[n] != '\0') ++n;
        m << "`" << std::string_view(o.name, n) << "`";
    } else {
        m << (input ? op : op - p.n_in);
    }
}
constexpr void put_coords(rule_message& m, const coords& c) {
    m << "(";
    for (int i = 0; i < c.rank; ++i) m << (i ? ", " : "") << c.v[i];
    m << ")";
}
// The block index of S34, S38, S39 and MC1 (d.d entries; ds(start, size) for slices).
constexpr void put_block(rule_message& m, const diag& d) {
    m << "block (";
    for (int i = 0; i < static_cast<int>(d.d); ++i) {
        const index_entry& e = d.block[static_cast<std::size_t>(i)];
        m << (i ? ", " : "");
        if (e.is_slice())
            m << "ds(" << e.start << ", " << e.slice_size() << ")";
        else
            m << e.start;
    }
    m << ")";
}

// What a diag is about, in words: the operand, the dim, the values.
constexpr void put_specifics(rule_message& m, const diag& d, const pipeline_desc& p) {
    auto operand_and_dim = [&](const char* then) {
        if (d.op >= 0) put_operand(m, p, d.op);
        if (d.dim >= 0) m << (d.op >= 0 ? ", dim " : "dim ") << d.dim;
        if (then != nullptr && (d.op >= 0 || d.dim >= 0)) m << then;
    };
    switch (d.code) {
        case rule::ok:
        case rule::reported:
            return;
        case rule::r1:
            operand_and_dim(": ");
            m << "the block has " << d.a << (d.a == 1 ? " dim" : " dims") << ", the array " << d.b;
            return;
        case rule::r2:
            operand_and_dim(": ");
            m << "the index map returns " << d.a << (d.a == 1 ? " entry" : " entries") << " for a block of "
              << d.b << (d.b == 1 ? " dim" : " dims");
            return;
        case rule::r2_arity:
            operand_and_dim(": ");
            m << "the grid has " << d.a << (d.a == 1 ? " dim" : " dims");
            return;
        case rule::r10: {
            constexpr std::string_view options[] = {
                "Grid", "In", "Out", "Scratch", "Semantics", "Chip", "VmemLimit", "ScalarPrefetch", "Alias"};
            if (d.a >= 0 && d.a < static_cast<index_t>(std::size(options)))
                m << options[static_cast<std::size_t>(d.a)] << " is given twice";
            else
                m << "an option is not a pallas_call option (Grid, In, Out, Scratch, Semantics, Chip, "
                     "VmemLimit, "
                     "ScalarPrefetch, Alias)";
            return;
        }
        case rule::r11: {
            const int in = static_cast<int>(d.a), out = static_cast<int>(d.b);
            const bool in_ok = in >= 0 && in < p.n_in, out_ok = out >= 0 && out < p.n_out;
            auto put_in = [&] {
                if (in_ok)
                    put_operand(m, p, in);
                else
                    m << "input " << in;
            };
            auto put_out = [&] {
                if (out_ok)
                    put_operand(m, p, p.n_in + out);
                else
                    m << "output " << out;
            };
            m << "Alias<" << in << ", " << out << ">, ";
            put_in();
            m << " and ";
            put_out();
            m << ": ";
            switch (static_cast<alias_problem>(d.c)) {
                case alias_problem::input_out_of_range:
                    m << "input " << in << " is out of range (" << d.d << (d.d == 1 ? " input)" : " inputs)");
                    return;
                case alias_problem::output_out_of_range:
                    m << "output " << out << " is out of range (" << d.d
                      << (d.d == 1 ? " output)" : " outputs)");
                    return;
                case alias_problem::output_reused:
                    m << "the output is already aliased";
                    return;
                case alias_problem::dtype:
                    m << "the dtypes differ (" << name(static_cast<dtype>(d.bytes[0])) << " vs "
                      << name(static_cast<dtype>(d.bytes[1])) << ")";
                    return;
                case alias_problem::rank:
                    m << "the ranks differ (" << d.bytes[0] << " vs " << d.bytes[1] << ")";
                    return;
                case alias_problem::shape:
                    m << "the shapes differ at dim " << d.dim << " (" << d.bytes[0] << " vs " << d.bytes[1]
                      << ")";
                    return;
            }
            return;
        }
        case rule::r14:
        case rule::r16:
            operand_and_dim(": ");
            m << "block " << d.a << ", array " << d.b;
            return;
        case rule::r15:
            operand_and_dim(": ");
            m << "block " << d.a << ", array dim " << d.b;
            return;
        case rule::r19_buffers:
        case rule::r19_revisit:
        case rule::r27_buffers:
        case rule::r27_out_buffers:
            operand_and_dim(": ");
            m << "Buffered<" << d.a << ">";
            return;
        case rule::buf1:
            operand_and_dim(": ");
            m << "Buffered<" << d.a << ">, at most " << d.b;
            return;
        case rule::r19_prefetched:
        case rule::r28_output:
            operand_and_dim(": ");
            m << "prefetched_count " << d.a;
            return;
        case rule::r28:
            operand_and_dim(": ");
            m << "prefetched_count " << d.a << ", buffer_count " << d.b;
            return;
        case rule::r20:
            m << d.a << (d.a == 1 ? " Semantics value" : " Semantics values") << " for a grid of " << d.b
              << (d.b == 1 ? " dim" : " dims");
            return;
        case rule::r24:  // input `x`: 2 x 4096 bytes + ... + VMEM scratch: 0 bytes = 8192 bytes > limit 4096
            for (int i = 0; i < p.n_ops() && i < static_cast<int>(max_operands); ++i) {
                const auto k = static_cast<std::size_t>(i);
                if (d.buffers[k] <= 0) continue;
                put_operand(m, p, i);
                m << ": " << d.buffers[k] << " x " << d.bytes[k] << " bytes + ";
            }
            m << "VMEM scratch: " << d.bytes[max_operands] << " bytes = " << d.a << " bytes > limit " << d.b;
            return;
        case rule::r24_limit:
            m << "VmemLimit " << d.a << " bytes, the chip's VMEM " << d.b;
            return;
        case rule::pad1:
            operand_and_dim(": ");
            m << "padding " << d.a;
            return;
        case rule::smem1:
            m << "total " << d.a << " bytes, the chip's SMEM " << d.b;
            return;
        case rule::r25:
        case rule::r25_inner:
            operand_and_dim(" of the ");
            m << (d.code == rule::r25 ? "grid " : "inner grid ");
            put_coords(m, d.at[0]);
            return;
        case rule::s34:
            operand_and_dim(": ");
            put_block(m, d);
            m << " at iteration ";
            put_coords(m, d.at[0]);
            return;
        case rule::s38_negative:
        case rule::s38_bound:
        case rule::s38_range:
        case rule::s38_align: {
            operand_and_dim(": ");
            const index_entry& e = d.dim >= 0 && d.dim < static_cast<int>(max_rank)
                                       ? d.block[static_cast<std::size_t>(d.dim)]
                                       : d.block[0];
            m << "ds(" << e.start << ", " << e.slice_size() << ") at step " << d.a << ", iteration ";
            put_coords(m, d.at[0]);
            m << ", on a dim of " << d.bytes[1] << " elements, bound " << d.bytes[0];
            if (d.code == rule::s38_align) m << ", tile " << d.bytes[2];
            return;
        }
        case rule::s39:
            operand_and_dim(": ");
            put_block(m, d);
            m << " revisited in iteration ";
            put_coords(m, d.at[2]);
            m << " after iterations ";
            put_coords(m, d.at[0]);
            m << " through ";
            put_coords(m, d.at[1]);
            return;
        case rule::s44:
            m << "grid dim " << d.dim << " is parallel after an arbitrary dim";
            return;
        case rule::mc1:
        case rule::mc1_prefetch:
            operand_and_dim(": ");
            put_block(m, d);
            m << " is written by core " << d.a << " in iterations ";
            put_coords(m, d.at[0]);
            m << " through ";
            put_coords(m, d.at[1]);
            m << " and by core " << d.c << " from iteration ";
            put_coords(m, d.at[2]);
            return;
        case rule::mem1:
            m << "host tables " << d.a << " bytes, budget " << d.b;
            return;
        case rule::v3: {
            const auto what = static_cast<overflow_of>(d.c);
            if (what == overflow_of::scratch_bytes) m << "scratch " << d.b << ", ";
            if (what == overflow_of::prefetch_bytes) m << "scalar-prefetch " << d.b << ", ";
            operand_and_dim(": ");
            m << overflow_name(what) << " overflow";
            return;
        }
        default:
            operand_and_dim(nullptr);
            return;
    }
}

}  // namespace detail

/// The message of `d`, the first problem of pipeline `p`: the rule's text with what it is about,
/// the operand by its Arg name, the dim and the values, between what is wrong and the fix:
///   ptpu[15] pallas_call: the last two block dims must be ... (TPU tiling); input `weights`,
///   dim 1: block 100, array dim 512; pick (8k, 128m) blocks or the full extent
/// The same text at compile time (a static call's error shows it) and at run time (ptpu::error).
constexpr rule_message message(const diag& d, const pipeline_desc& p) {
    if (d.ok()) return {};
    rule_message about;
    detail::put_specifics(about, d, p);
    return with_subject(message(d.code), about.view());
}

/// The values of a diag, as text (run-time errors append it to the rule's message). Cold: only
/// ever runs on the way to an error, so compilers should spend no effort optimizing it.
[[gnu::cold]] PTPU_COMPILED std::string describe(const diag& d);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED std::string describe(const diag& d) {
    std::string s;
    auto add = [&](const std::string& k, index_t v) {
        if (!s.empty()) s += ", ";
        s += k + " " + std::to_string(v);
    };
    if (d.op >= 0) add("operand", d.op);
    if (d.dim >= 0) add("dim", d.dim);
    switch (d.code) {
        case rule::s34:
        case rule::s38_negative:
        case rule::s38_bound:
        case rule::s38_range:
        case rule::s38_align:
        case rule::s39:
        case rule::mc1:
        case rule::mc1_prefetch: {
            const bool is_s38 = d.code == rule::s38_negative || d.code == rule::s38_bound ||
                                d.code == rule::s38_range || d.code == rule::s38_align;
            auto tuple = [](auto get, int n) {
                std::string t = "(";
                for (int i = 0; i < n; ++i) t += (i ? ", " : "") + get(i);
                return t + ")";
            };
            const auto block = tuple(
                [&](int i) {
                    const auto& e = d.block[static_cast<std::size_t>(i)];
                    return e.is_slice()
                               ? "ds(" + std::to_string(e.start) + ", " + std::to_string(e.slice_size()) + ")"
                               : std::to_string(e.start);
                },
                static_cast<int>(d.d));
            auto iter = [&](const coords& it) {
                return tuple([&](int i) { return std::to_string(it.v[i]); }, it.rank);
            };
            s += (s.empty() ? "" : ", ") + std::string("block ") + block;
            if (is_s38) {
                const auto& e = d.block[static_cast<std::size_t>(d.dim)];
                s += " at step " + std::to_string(d.a) + ", iteration " + iter(d.at[0]) + ": ds(" +
                     std::to_string(e.start) + ", " + std::to_string(e.slice_size()) + ") on a dim of " +
                     std::to_string(d.bytes[1]) + " elements, bound " + std::to_string(d.bytes[0]);
                if (d.code == rule::s38_align) s += ", tile " + std::to_string(d.bytes[2]);
            } else if (d.code == rule::s34) {
                s += " at iteration " + iter(d.at[0]);
            } else if (d.code == rule::s39) {
                s += " revisited in iteration " + iter(d.at[2]) +
                     "; it was previously visited in iterations " + iter(d.at[0]) + " through " +
                     iter(d.at[1]);
            } else {
                s += " written by core " + std::to_string(d.a) + " in iterations " + iter(d.at[0]) +
                     " through " + iter(d.at[1]) + " and by core " + std::to_string(d.c) +
                     " from iteration " + iter(d.at[2]);
            }
            return s;
        }
        case rule::r24:
            for (std::size_t i = 0; i < max_operands; ++i)
                if (d.buffers[i] > 0)
                    s += (s.empty() ? "" : "; ") + std::string("operand ") + std::to_string(i) + ": " +
                         std::to_string(d.bytes[i]) + " bytes x " + std::to_string(d.buffers[i]) + " buffers";
            s += "; scratch " + std::to_string(d.bytes[max_operands]) + " bytes; total " +
                 std::to_string(d.a) + " bytes; limit " + std::to_string(d.b) + " bytes";
            break;
        case rule::r24_limit:
            add("limit bytes", d.a);
            add("chip VMEM bytes", d.b);
            break;
        case rule::smem1:
            add("total bytes", d.a);
            add("limit", d.b);
            break;
        case rule::r25:
        case rule::r25_inner: {
            std::string g = "(";
            for (int i = 0; i < d.at[0].rank; ++i) g += (i ? ", " : "") + std::to_string(d.at[0].v[i]);
            return s + " of the " + (d.code == rule::r25 ? "grid " : "inner grid ") + g + ")";
        }
        case rule::r11: {
            const std::string in = "input " + std::to_string(d.a), out = "output " + std::to_string(d.b);
            auto count = [](index_t n, const char* what) {
                return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
            };
            auto pair = [&](const std::string& x, const std::string& y) {
                return " (" + x + " vs " + y + ")";
            };
            s = in + " and " + out + ": ";
            switch (static_cast<alias_problem>(d.c)) {
                case alias_problem::input_out_of_range:
                    return s + in + " is out of range (" + count(d.d, "input") + ")";
                case alias_problem::output_out_of_range:
                    return s + out + " is out of range (" + count(d.d, "output") + ")";
                case alias_problem::output_reused:
                    return s + out + " is already aliased";
                case alias_problem::dtype:
                    return s + "the dtypes differ" +
                           pair(std::string(name(static_cast<dtype>(d.bytes[0]))),
                                std::string(name(static_cast<dtype>(d.bytes[1]))));
                case alias_problem::rank:
                    return s + "the ranks differ" +
                           pair(std::to_string(d.bytes[0]), std::to_string(d.bytes[1]));
                case alias_problem::shape:
                    return s + "the shapes differ at dim " + std::to_string(d.dim) +
                           pair(std::to_string(d.bytes[0]), std::to_string(d.bytes[1]));
            }
            return s;
        }
        case rule::mem1:
            add("host bytes", d.a);
            add("budget", d.b);
            if (d.at[0].rank > 0 || d.c > 0) {
                s += ", at step " + std::to_string(d.c) + ", iteration (";
                for (int i = 0; i < d.at[0].rank; ++i) s += (i ? ", " : "") + std::to_string(d.at[0].v[i]);
                s += ")";
            }
            break;
        case rule::v3: {
            const auto what = static_cast<overflow_of>(d.c);
            if (what == overflow_of::scratch_bytes || what == overflow_of::prefetch_bytes)
                add(what == overflow_of::scratch_bytes ? "scratch" : "scalar-prefetch", d.b);
            s += (s.empty() ? "" : ", ") + std::string(detail::overflow_name(what)) + " overflows";
            break;
        }
        default:
            if (d.a || d.b) {
                add("value", d.a);
                add("expected", d.b);
            }
    }
    return s;
}
#endif

namespace detail {
[[noreturn, gnu::cold]] PTPU_COMPILED void throw_diag(const diag& d);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void throw_diag(const diag& d) {
    throw error(std::string(message(d.code)) + " (" + describe(d) + ")");
}
#endif
[[noreturn, gnu::cold]] PTPU_COMPILED void throw_diag(const diag& d, const pipeline_desc& p);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void throw_diag(const diag& d, const pipeline_desc& p) {
    throw error(std::string(message(d, p).view()) + " (" + describe(d) + ")");
}
#endif
}  // namespace detail

/// Throws the diag as ptpu::error (run-time plans).
inline void raise(const diag& d) {
    if (!d.ok()) detail::throw_diag(d);
}
/// Throws the diag as ptpu::error, its message naming what it is about in `p` (the operand by its
/// Arg name, the dim, the values: message(d, p)), the values as data after it (describe(d)).
inline void raise(const diag& d, const pipeline_desc& p) {
    if (!d.ok()) detail::throw_diag(d, p);
}

}  // namespace ptpu
