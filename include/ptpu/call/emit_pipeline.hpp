// Defines emit_pipeline, the in-kernel half of Pallas TPU's pipelining (docs/guide.md,
// "emit_pipeline"): inside a pallas_call body (or an inner pipeline's body), a pipeline
// over refs the body holds (any/hbm arrays), with its own grid and BlockSpecs, run to completion,
// prologue to epilogue, each time it is invoked (S53). It is the same pipeline value a
// pallas_call has (spec/pipeline.hpp), checked with emit_pipeline's capabilities (any input
// buffer count, lookahead, BoundedSlice; no (8, 128) check, S52), planned by the same planner
// and run by the same runner; its ops join the enclosing body's in the core's stream, so the
// timing model sees every copy and every inner step, and the timeline labels them by pipeline.
//
//   auto pipe = emit_pipeline(inner_body, {4, 4}, in_specs<Spec...>, out_specs<Spec...>,
//                             {.semantics = {parallel, arbitrary}, .core_axis = 0});
//   pipe(x_hbm, y_hbm, o_hbm);   // inputs, then outputs
//
// The megacore split of an inner pipeline (core_axis: the enclosing grid axis whose program id
// and size are the core id and count) follows upstream's _partition_grid (A11).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptpu/call/diagnostics.hpp"
#include "ptpu/call/options.hpp"
#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/runtime/arena.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/dma.hpp"
#include "ptpu/runtime/ref.hpp"
#include "ptpu/runtime/body.hpp"
#include "ptpu/schedule/analyze.hpp"
#include "ptpu/schedule/generator.hpp"
#include "ptpu/schedule/geometry.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/spec/block.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/pipeline.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// The BlockSpecs of an inner pipeline's inputs and outputs: in_specs<BlockSpec<...>, ...>.
template <class... Specs>
struct in_specs_t {};
template <class... Specs>
inline constexpr in_specs_t<Specs...> in_specs{};
template <class... Specs>
struct out_specs_t {};
template <class... Specs>
inline constexpr out_specs_t<Specs...> out_specs{};

/// The dimension semantics of an inner grid: {parallel, arbitrary}.
struct semantics_list {
    std::array<dim_semantics, max_rank> v{};
    int rank = 0;
    constexpr semantics_list() = default;
    constexpr semantics_list(std::initializer_list<dim_semantics> l) {
        for (dim_semantics s : l)
            if (rank < static_cast<int>(max_rank)) v[static_cast<std::size_t>(rank++)] = s;
    }
};

/// emit_pipeline's keyword arguments.
struct pipeline_options {
    /// dimension_semantics (only read to split the grid over cores; any order is allowed).
    semantics_list semantics{};
    /// core_axis: the enclosing kernel's grid axis whose program id and size are this core's id
    /// and the core count; the inner grid's parallel dims are split over them (A11). -1: none.
    int core_axis = -1;
    /// When set, the schedule's events of every invocation are appended here (the exact Pallas
    /// event order; events carry block steps and slots).
    std::vector<event>* trace = nullptr;
    /// no_pipelining=True (S54), a debug mode: every step copies every input block in and every
    /// output block out, blocking, in one slot; writes to an input window do not survive a step.
    bool no_pipelining = false;
    /// The tiling option (S35, S36, S38): DMA slices follow the arrays' memory tiles. A block
    /// that does not divide its dim must be a multiple of the tile (31), and the partial last
    /// block's DMA is rounded up to the tile; bounded_slice starts must be tile-aligned (S38).
    bool tiling = false;
};

namespace detail {

// Where a core's part of a split inner grid starts (the offset added to its indices).
struct partition {
    std::array<index_t, max_rank> grid{};
    std::array<index_t, max_rank> offset{};
};

/// Upstream's _partition_grid (A11): the first parallel dim whose size the core count
/// divides is cut into equal contiguous parts; otherwise the largest parallel dim, the remainder
/// going to the lowest core ids; no parallel dim is error 32.
PTPU_COMPILED partition partition_grid(const index_t* grid, int rank, const semantics_list& sem, index_t core,
                                 index_t cores);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED partition partition_grid(const index_t* grid, int rank, const semantics_list& sem, index_t core,
                                 index_t cores) {
    partition p;
    for (int d = 0; d < rank; ++d) p.grid[static_cast<std::size_t>(d)] = grid[d];
    if (sem.rank != rank)
        throw error("32", "emit_pipeline",
                    "dimension_semantics must be the same length as grid (" + std::to_string(sem.rank) + " vs " +
                        std::to_string(rank) + ")",
                    "give one semantics per inner grid dim with core_axis");
    int split = -1;
    for (int d = 0; d < rank && split < 0; ++d)
        if (sem.v[static_cast<std::size_t>(d)] == dim_semantics::parallel && grid[d] % cores == 0) split = d;
    if (split < 0)
        for (int d = 0; d < rank; ++d)
            if (sem.v[static_cast<std::size_t>(d)] == dim_semantics::parallel &&
                (split < 0 || grid[d] > grid[split]))
                split = d;
    if (split < 0)
        throw error("32", "emit_pipeline", "Cannot partition over cores without parallel grid dimensions",
                    "mark an inner grid dim parallel, or drop core_axis");
    const index_t n = grid[split], base = n / cores, rem = n % cores;
    const auto u = static_cast<std::size_t>(split);
    p.grid[u] = base + (core < rem ? 1 : 0);
    p.offset[u] = core * base + std::min(core, rem);
    return p;
}
#endif

// What an inner index map reads: the core's offsets, then the user's extra arguments.
struct inner_map_ctx {
    std::array<index_t, max_rank> offset{};
    std::array<index_t, max_rank> whole{};  // the inner grid before the core split
    int rank = 0;
    const void* user = nullptr;
    // A pipeline configured by values (dynamic_pipeline): its operands' maps, and its inputs.
    const block_fn* value_maps = nullptr;
    int n_in = 0;
};
// An error an inner index map raised while reading the values it was given (R2 for an SMEM
// table read out of range), again with the inner operand and the inner iteration, as
// rethrow_from_map says it for a pallas_call's maps.
[[noreturn, gnu::cold, gnu::noinline]] inline void rethrow_from_inner_map(const error& e, int op, int n_in,
                                                                          const index_t* at, std::size_t rank) {
    std::string it = "(";
    for (std::size_t d = 0; d < rank; ++d) it += (d ? ", " : "") + std::to_string(at[d]);
    throw error(std::string(e.what()) + " (in the index map of emit_pipeline " + (op < n_in ? "input " : "output ") +
                std::to_string(op < n_in ? op : op - n_in) + " at inner iteration " + it + "))");
}
// Operand Op (inputs then outputs, NIn inputs) of an inner pipeline: its index map at inner
// grid point g of this core's part, at the whole grid's iteration.
// An index map may ask program_id and num_programs (the kernel's, as in Pallas) wherever it runs,
// in an inner body too, where the body's own code may not (K3).
struct index_map_scope {
    kernel_context* c = current_context();
    index_map_scope() {
        if (c != nullptr) ++c->index_maps;
    }
    ~index_map_scope() {
        if (c != nullptr) --c->index_maps;
    }
    index_map_scope(const index_map_scope&) = delete;
    index_map_scope& operator=(const index_map_scope&) = delete;
};
template <class Spec, std::size_t G, class Ctx, int Op = 0, int NIn = 1>
index_tuple<max_rank> inner_map(const index_t* g, const void* ctx) {
    const index_map_scope scope;
    const auto& c = *static_cast<const inner_map_ctx*>(ctx);
    index_t at[G > 0 ? G : 1]{};
    for (std::size_t d = 0; d < G; ++d) at[d] = g[d] + c.offset[d];
    if constexpr (std::is_void_v<Ctx>) {
        return eval_map<Spec, G, Ctx>(at, c.user);
    } else {  // the map reads the values it was given: say where a bad read happened (R2)
        try {
            return eval_map<Spec, G, Ctx>(at, c.user);
        } catch (const error& e) {
            rethrow_from_inner_map(e, Op, NIn, at, G);
        }
    }
}

// Pass 1 of the planner for operand Op of an inner pipeline, its index map inlined at every
// step (inner_map's work without a call per step): a pipeline of many steps is planned in a
// fraction of the time (scan_operand does the same for a pallas_call's maps).
template <class Spec, std::size_t G, class Ctx, int Op, int NIn>
bool scan_inner_operand(const pipeline_desc& c, const void* ctx, operand_scan& scan) {
    using Map = std::remove_cvref_t<decltype(Spec::index_map)>;
    const index_map_scope scope;
    const auto& m = *static_cast<const inner_map_ctx*>(ctx);
    if constexpr (std::is_same_v<Map, zero_map_t>) {
        return scan_steps(c, scan, [](const index_t*) { return index_tuple<max_rank>{}; });
    } else if constexpr (is_index_tuple<std::remove_cvref_t<typename map_call_t<Spec, G, Ctx>::result>>) {
        return scan_steps(c, scan, [&](const index_t* g) {
            index_t at[G > 0 ? G : 1]{};
            for (std::size_t d = 0; d < G; ++d) at[d] = g[d] + m.offset[d];
            if constexpr (std::is_void_v<Ctx>) {
                return map_call_t<Spec, G, Ctx>::call(Spec::index_map, at, m.user);
            } else {  // the map reads the values it was given: say where a bad read happened (R2)
                try {
                    return map_call_t<Spec, G, Ctx>::call(Spec::index_map, at, m.user);
                } catch (const error& e) {
                    rethrow_from_inner_map(e, Op, NIn, at, G);
                }
            }
        });
    } else {  // a malformed map: the planner stops before pass 1
        return scan_steps(c, scan,
                          [ctx](const index_t* g) { return inner_map<Spec, G, Ctx, Op, NIn>(g, ctx); });
    }
}

// The ref type an inner body gets for a window of Spec over an array of T (rank R): the block
// without its squeezed dims, static where the block is (a BoundedSlice dim keeps its bound N:
// the ref has the static shape, as in Pallas); the whole array for Full.
template <class Spec, std::size_t R>
constexpr std::size_t window_rank() {
    if constexpr (Spec::shape::full)
        return R;
    else {
        std::size_t n = 0;
        for (const auto& d : Spec::shape::dims) n += d.kind != dim_kind::squeezed;
        return n;
    }
}
template <class Spec, std::size_t R>
constexpr std::array<index_t, window_rank<Spec, R>()> window_extents() {
    std::array<index_t, window_rank<Spec, R>()> e{};
    if constexpr (Spec::shape::full) {
        for (auto& x : e) x = dyn;
    } else {
        std::size_t j = 0;
        for (const auto& d : Spec::shape::dims)
            if (d.kind != dim_kind::squeezed) e[j++] = d.size;
    }
    return e;
}
template <class T, class Spec, std::size_t R>
using window_ref_t =
    ref<T, typename Spec::memory, window_rank<Spec, R>(), extents_from_t<window_extents<Spec, R>()>>;

template <class T>
struct source_of;
template <class T, class S, std::size_t R, class E>
struct source_of<ref<T, S, R, E>> {
    using value_type = std::remove_const_t<T>;
    using space = unnamed_space_t<S>;  // a named operand's ref: its plain space
    using named = S;                   // ... and its space as the ref names it (messages)
    static constexpr std::size_t rank = R;
    static constexpr bool read_only = std::is_const_v<T>;  ///< a pallas_call input's HBM ref (R4)
};

// S56: an inner operand's block lives in its spec's space (vmem unless given), which must be VMEM,
// SMEM or HBM (29: any fails here, as upstream). A spec whose space is the source's, or HBM,
// aliases the source (S17): no window and no DMA, the body sees a view of the block.
template <class Mem, class SrcSpace>
constexpr bool aliased_space() {
    constexpr space_kind b = Mem::kind, s = SrcSpace::kind;
    return b == space_kind::hbm || b == s;
}
template <class Spec, class SrcSpace>
constexpr bool inner_aliased() {
    return aliased_space<typename Spec::memory, SrcSpace>();
}
// The message of a space rule about an inner operand: "...; source `x` (VMEM), spec HBM; fix".
template <class Mem, class Src>
constexpr rule_message about_inner(std::string_view literal) {
    rule_message about;
    about << "source ";
    put_ref_space<Src>(about);
    about << ", spec " << display_name(Mem::kind);
    return with_subject(literal, about.view());
}
// Mem: the spec's space; Src: the source's space, named for its operand when it is a named
// operand's ref.
template <class Mem, class Src>
constexpr bool check_inner_space_kinds() {
    using SrcSpace = unnamed_space_t<Src>;
    constexpr space_kind b = Mem::kind, s = SrcSpace::kind;
    constexpr bool src_far = s == space_kind::any || s == space_kind::hbm;
    constexpr bool src_ok = src_far || s == space_kind::vmem || s == space_kind::smem;
#if PTPU_COMPOSED_MESSAGES
#define PTPU_INNER_SPACE_ERROR(cond, text) static_assert(sizeof(compile_error<about_inner<Mem, Src>(text)>) > 0)
#else
#define PTPU_INNER_SPACE_ERROR(cond, text) static_assert(cond, text)
#endif
    if constexpr (b != space_kind::vmem && b != space_kind::smem && b != space_kind::hbm)
        PTPU_INNER_SPACE_ERROR(
            b == space_kind::vmem,
            "ptpu[29] emit_pipeline: unsupported buffer memory space (a spec in any, semaphore, ...); give "
            "the spec vmem or smem for a window, hbm for a view of the source's block");
    else if constexpr (!src_ok)
        PTPU_INNER_SPACE_ERROR(src_ok,
                               "ptpu[29] emit_pipeline: an operand's source must be an ANY/HBM, VMEM or SMEM ref; "
                               "pass one of those");
    else if constexpr (b == space_kind::hbm && !src_far)
        PTPU_INNER_SPACE_ERROR(
            src_far,
            "ptpu[29] emit_pipeline: you cannot request an HBM block spec for a non-HBM source; give the "
            "spec the source's space (vmem: a view of the block, S17) or pass an ANY/HBM ref");
    else if constexpr (!aliased_space<Mem, SrcSpace>() && !src_far)
        PTPU_INNER_SPACE_ERROR(
            src_far,
            "ptpu[M1] emit_pipeline: no DMA path between the source's space and the spec's (VMEM and SMEM "
            "are not copied into each other); give the spec the source's space (aliased, S56)");
#undef PTPU_INNER_SPACE_ERROR
    return true;
}
template <class Spec, class Src>
constexpr bool check_inner_spaces() {
    static_assert(check_inner_space_kinds<typename Spec::memory, Src>());
    if constexpr (inner_aliased<Spec, unnamed_space_t<Src>>() && !Spec::shape::full) {
        constexpr bool padded = [] {
            for (const auto& d : Spec::shape::dims)
                if (d.kind == dim_kind::element && (d.pad_lo != 0 || d.pad_hi != 0)) return true;
            return false;
        }();
        static_assert(!padded,
                      "ptpu[30] emit_pipeline: Element with padding is not supported when the spec aliases its "
                      "source (S17); drop the padding, or copy from an ANY/HBM source");
    }
    return true;
}

// The source part of an inner operand's description: its dtype and shape (the runner copies
// blocks of a row-major array: a source a window copies from must be one, R1; an aliased view
// takes the source's strides as they are).
PTPU_COMPILED operand_desc describe_source(operand_role role, dtype type, int rank, const index_t* shape,
                                           const index_t* strides, int k, bool aliased);
template <class Ref>
operand_desc describe_source(operand_role role, const Ref& r, int k, bool aliased) {
    using src = source_of<Ref>;
    return describe_source(role, dtype_of<typename src::value_type>, static_cast<int>(src::rank),
                           r.shape().data(), r.strides().data(), k, aliased);
}

// One operand of an inner pipeline as the planner sees it: the spec over the source ref.
template <class Spec, std::size_t G, class Ref>
operand_desc describe_inner(operand_role role, const Ref& r, int k) {
    using src = source_of<Ref>;
    static_assert(check_inner_spaces<Spec, typename src::named>());
    operand_desc d = describe_source(role, r, k, inner_aliased<Spec, typename src::space>());
    describe_spec<Spec>(d);
    return d;
}

// Reports D as its rule's one compile error, the operands named by position (inputs then
// outputs; an inner pipeline's specs have no names).
template <diag D, int NIn>
constexpr void report_static() {
    constexpr pipeline_desc by_position = [] {
        pipeline_desc p;
        p.n_in = NIn;
        p.n_out = static_cast<int>(max_operands) - NIn;
        return p;
    }();
    static_assert(sizeof(*problem_report<D, problem_message(D, by_position)>()) > 0);
}

// Checks 4 and 5 at compile time for operand Op (inputs then outputs) when its map's return
// type states its slice entries (idx(...)'s): a bounded_slice dim given a scalar, or another dim
// given a ds, is the rule's one compile error, naming the operand and dim. Maps returning a
// plain index_tuple are checked by the planner at run time. Rank: the source's.
template <class Spec, std::size_t G, class Ctx, std::size_t Rank, int Op, int NIn>
constexpr void check_entry_kinds() {
    using Shape = typename Spec::shape;
    constexpr int block_rank = [] {
        if constexpr (Shape::full)
            return static_cast<int>(Rank);
        else
            return static_cast<int>(Shape::rank);
    }();
    // Check 1 (block rank) first: reported at run time with the rest of validation.
    constexpr int dim = block_rank == static_cast<int>(Rank) ? kind_mismatch<Spec, G, Ctx>(block_rank) : -1;
    if constexpr (dim >= 0) {
        constexpr bool bounded = [] {
            if constexpr (Shape::full)
                return false;
            else
                return Shape::dims[static_cast<std::size_t>(dim)].kind == dim_kind::bounded_slice;
        }();
        constexpr diag D = fail(bounded ? rule::r4 : rule::r5, Op, dim);
        report_static<D, NIn>();
    }
}

// Checks 27, BUF1 and Q1 at compile time for the static spec of operand Op (inputs then
// outputs): the same predicate as validate_pipeline's (check_inner_buffering), reported as the
// rule's one compile error naming the operand.
template <class Spec, int Op, int NIn>
constexpr bool check_buffering() {
    constexpr diag D = check_inner_buffering(Op, Op >= NIn, Spec::mode::buffer_count, Spec::mode::lookahead,
                                             emit_pipeline_caps);
    if constexpr (!D.ok()) {
        report_static<D, NIn>();
    }
    return true;
}
template <int NIn, class... Specs, std::size_t... K>
constexpr bool check_buffering_all(std::index_sequence<K...>) {
    return (check_buffering<Specs, static_cast<int>(K), NIn>() && ... && true);
}

// An aliased view (S17) reaching past its source: Blocked dims that do not divide the array
// have no window to pad the last block in, so the view would read outside the source.
[[noreturn, gnu::cold, gnu::noinline]] inline void alias_outside(bool input, int k, int d, index_t start, index_t n,
                                                                index_t dim) {
    kernel_context* c = current_context();
    std::string at;
    if (c != nullptr)
        for (int i = 0; i < c->inner_rank; ++i)
            at += (i ? ", " : "") + std::to_string(c->inner_point[static_cast<std::size_t>(i)] +
                                                   c->inner_offset[static_cast<std::size_t>(i)]);
    throw error("S34", std::string("emit_pipeline ") + (input ? "input " : "output ") + std::to_string(k),
                "the view of the source's block at inner iteration (" + at + ") spans [" + std::to_string(start) +
                    ", " + (start > INT64_MAX - n ? std::string("past INT64_MAX") : std::to_string(start + n)) + ") of dim " + std::to_string(d) + ", whose size is " +
                    std::to_string(dim) + " (an aliased operand has no window to pad it, S17)",
                "use blocks that divide the source, or pass an ANY/HBM source to copy the block in");
}

// Where slot k of window i of an inner pipeline lives in its allocations (S53): the windows in
// operand order, each slot at its VMEM size (tile-padded, at least the block rounded up to 64
// bytes), so the bytes they take are what the VMEM check counts.
constexpr index_t allocation_stride(const operand_plan& op) {
    return std::max(op.slot_bytes, align_up(op.block_bytes, 64));
}
constexpr index_t allocation_bytes(const plan_info& info, int n_ops) {
    index_t n = 0;
    for (int i = 0; i < n_ops; ++i)
        if (info.ops[static_cast<std::size_t>(i)].windowed)
            n += info.ops[static_cast<std::size_t>(i)].buffers * allocation_stride(info.ops[static_cast<std::size_t>(i)]);
    return n;
}

/// The buffers of an inner pipeline made once, in a VMEM scratch buffer of the enclosing kernel,
/// and reused by every invocation (emit_pipeline_with_allocations, S53): their contents persist
/// between invocations (so a caller may prefill slots, S55), and the VMEM they take is the
/// scratch's, counted once.
struct allocations_base {
    std::array<std::array<std::byte*, max_buffers>, max_operands> slots{};
    std::array<int, max_operands> buffers{};
    std::array<std::array<index_t, max_rank>, max_operands> shapes{};  ///< the sources' (Full windows)
    index_t bytes = 0;  ///< what the windows take of the scratch
};

// A host block standing for the inner pipeline's VMEM buffers (run_scoped allocations).
struct inner_arena {
    std::vector<std::byte> bytes;
    core_memory mem{};
};

// Runs one invocation of an inner pipeline to completion: checks the VMEM its windows take
// against what the core has left (24), lays the slots out, runs the pipeline with a runner of its
// own and records its ops in the enclosing body's. Nothing in it depends on the body or the specs,
// so it is compiled machinery (core/linkage.hpp: once per program in ptpu::runtime with
// PTPU_SEPARATE_RUNTIME); call/emit_pipeline_impl.hpp holds the definition.
// `stateless`: the body is an object of an empty class (a lambda capturing nothing), so that it
// can read nothing the enclosing body computed (call/emit_pipeline_impl.hpp, the invocation memo).
// `scans`, when not null: the maps' pass 1 with each map inlined (scan_inner_operand).
PTPU_COMPILED void run_inner(kernel_context& outer, const pipeline_desc& p, const block_fn* maps,
                             const void* ctx, const std::array<void*, max_operands>& hbm, body_call body,
                             std::vector<event>* trace, const allocations_base* alloc, bool stateless,
                             const scan_fn* scans);

// The grid part of an inner pipeline as the planner sees it for this core (the grid, its
// options, the maps' offsets): false when the core's part of a split grid is empty (S21:
// nothing runs). 25 on the whole grid: a core split would leave an empty part.
PTPU_COMPILED bool prepare_grid(pipeline_desc& p, inner_map_ctx& mctx, const index_t* grid, int rank,
                                const pipeline_options& opt);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED bool prepare_grid(pipeline_desc& p, inner_map_ctx& mctx, const index_t* grid, int rank,
                                const pipeline_options& opt) {
    p.grid_rank = rank;
    p.no_pipelining = opt.no_pipelining;
    p.tiling = opt.tiling;
    mctx.rank = rank;
    std::array<index_t, max_rank> g{};
    for (int d = 0; d < rank; ++d) g[static_cast<std::size_t>(d)] = grid[d];
    for (int d = 0; d < rank; ++d)
        if (g[static_cast<std::size_t>(d)] <= 0) raise(zero_grid(g.data(), rank, d, false));
    mctx.whole = g;
    if (opt.core_axis >= 0) {
        const auto part = partition_grid(g.data(), rank, opt.semantics, outer_program_id(opt.core_axis),
                                         outer_num_programs(opt.core_axis));
        g = part.grid;
        mctx.offset = part.offset;
    }
    for (int d = 0; d < rank; ++d) {
        p.grid[static_cast<std::size_t>(d)] = g[static_cast<std::size_t>(d)];
        if (g[static_cast<std::size_t>(d)] == 0 && opt.core_axis >= 0) return false;  // this core's part is empty
    }
    return true;
}
#endif

// The view an aliased operand's body ref is at one inner step (S17, compute_slice): a Blocked
// dim from b*n, an Element or BoundedSlice dim from its start, n long; a squeezed dim indexed
// away. `offset` is in elements of the source; S34 when the view reaches outside it.
struct alias_slice {
    index_t offset = 0;
    int rank = 0;
    std::array<index_t, max_rank> shape{}, strides{};
};
PTPU_COMPILED alias_slice alias_block(const block_dim* dims, int rank, const index_tuple<max_rank>& b,
                                      const index_t* src_shape, const index_t* src_strides, bool input, int k);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED alias_slice alias_block(const block_dim* dims, int rank, const index_tuple<max_rank>& b,
                                      const index_t* src_shape, const index_t* src_strides, bool input, int k) {
    alias_slice a;
    for (int d = 0; d < rank; ++d) {
        const block_dim& bd = dims[d];
        const bool sq = bd.kind == dim_kind::squeezed;
        index_t start = b.v[static_cast<std::size_t>(d)].start;
        const index_t n = sq ? 1 : bd.size;
        // (An offset that overflows lies outside too: V3's overflow, reported as S34's.)
        if (bd.kind == dim_kind::blocked && !mul_fits(b.v[static_cast<std::size_t>(d)].start, bd.size, start))
            start = -1;
        if (start < 0 || start > src_shape[d] - n) alias_outside(input, k, d, start, n, src_shape[d]);
        a.offset += start * src_strides[d];
        if (!sq) {
            a.shape[static_cast<std::size_t>(a.rank)] = n;
            a.strides[static_cast<std::size_t>(a.rank++)] = src_strides[d];
        }
    }
    return a;
}
#endif

// The pieces of an invocation that do not depend on the body or the specs.
struct inner_run {
    // Checks the VMEM the inner windows take against what the core has left (24), lays the
    // slots out, runs the pipeline to completion and records its ops in the enclosing body's.
    static plan_tables plan(const kernel_context& outer, const pipeline_desc& p, const block_fn* maps,
                            const void* ctx, const scan_fn* scans = nullptr) {
        const int gen = outer.hw != nullptr ? outer.hw->generation : 5;
        plan_tables t = analyze_pipeline(p, emit_pipeline_caps, gen, maps, ctx, scans);
        raise(t.info.problem, p);
        return t;
    }
    // Lays the windows of plan `t` out in `buf` (`size` bytes of VMEM scratch).
    static void lay_out(allocations_base& a, const pipeline_desc& p, const plan_tables& t, std::byte* buf,
                        index_t size) {
        a.bytes = allocation_bytes(t.info, p.n_ops());
        for (int i = 0; i < p.n_ops(); ++i)
            if (t.info.ops[static_cast<std::size_t>(i)].windowed && p.ops[static_cast<std::size_t>(i)].space != space_kind::vmem)
                throw error("29", "emit_pipeline_with_allocations",
                            "operand " + std::to_string(i) + " has an SMEM window; the allocations live in VMEM scratch",
                            "give the spec vmem, or run that pipeline without allocations");
        if (a.bytes > size)
            throw error("24", "emit_pipeline_with_allocations",
                        "the pipeline's windows need " + std::to_string(a.bytes) + " bytes and the scratch buffer has " +
                            std::to_string(size),
                        "give the enclosing kernel a VMEM scratch of " + std::to_string(a.bytes) +
                            " bytes (emit_pipeline_schedule<...>::allocation_bytes() for static specs)");
        index_t at = 0;
        for (int i = 0; i < p.n_ops(); ++i) {
            const operand_plan& op = t.info.ops[static_cast<std::size_t>(i)];
            a.buffers[static_cast<std::size_t>(i)] = op.windowed ? op.buffers : 0;
            a.shapes[static_cast<std::size_t>(i)] = p.ops[static_cast<std::size_t>(i)].shape;
            for (int k = 0; op.windowed && k < op.buffers; ++k) {
                a.slots[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)] = buf + at;
                at += allocation_stride(op);
            }
        }
    }
};

// One invocation of an inner pipeline (or its make_allocations) as a front end prepares it: the
// enclosing kernel's context, the pipeline as the planner sees it for this core, what its maps
// read, its sources' arrays and (a value pipeline's) its operands' maps. Static and value
// pipelines fill it in their prepare() and run it the same way.
struct invocation {
    kernel_context& outer;
    pipeline_desc p{};
    inner_map_ctx mctx{};
    std::array<void*, max_operands> hbm{};
    std::array<block_fn, max_operands> value_maps{};  ///< a value pipeline's maps (mctx.value_maps)

    explicit invocation(const char* where) : outer(require_context(where)) {}
    invocation(const invocation&) = delete;  // mctx may point into it

    /// The grid part (prepare_grid) and the operand counts: false when this core's part of a
    /// split grid is empty (S21: nothing runs). `user`: the extra values the maps read.
    bool begin(const index_t* grid, int rank, const pipeline_options& opt, int n_in, int n_out,
               const void* user) {
        if (!prepare_grid(p, mctx, grid, rank, opt)) return false;
        p.n_in = n_in;
        p.n_out = n_out;
        mctx.user = user;
        return true;
    }
    /// The plan of the windows (24 and the pipeline's rules as ptpu::error), with `maps`.
    [[nodiscard]] plan_tables plan(const block_fn* maps, const scan_fn* scans = nullptr) const {
        return inner_run::plan(outer, p, maps, &mctx, scans);
    }
    /// Runs the invocation to completion: `invoke(core_memory&)` calls the body on its windows.
    template <class Invoke>
    void run(const block_fn* maps, Invoke& invoke, std::vector<event>* trace, const allocations_base* alloc,
             bool stateless = false, const scan_fn* scans = nullptr) {
        const body_call call{[](void* obj, core_memory& m) { (*static_cast<Invoke*>(obj))(m); }, &invoke};
        run_inner(outer, p, maps, &mctx, hbm, call, trace, alloc, stateless, scans);
    }
};

// Lays plan t's windows out in `scratch`, a VMEM scratch ref of the enclosing kernel
// (make_allocations of a static or a value pipeline).
template <class S>
void lay_out_in(allocations_base& a, const pipeline_desc& p, const plan_tables& t, const S& scratch) {
    using T = typename source_of<S>::value_type;
    index_t n = 1;
    for (index_t e : scratch.shape()) n *= e;
    inner_run::lay_out(a, p, t, reinterpret_cast<std::byte*>(const_cast<T*>(scratch.data())),
                       n * static_cast<index_t>(sizeof(T)));
}

// An invocation pipe(refs..., [allocations]) of a pipeline of N refs: run(allocations or null,
// refs...). (Each front end checks the allocations' type, with its own message.)
template <std::size_t N, class Run, class... Args>
void invoke_pipeline(const Run& run, const Args&... args) {
    if constexpr (sizeof...(Args) == N + 1) {
        auto all = std::forward_as_tuple(args...);
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            run(static_cast<const allocations_base*>(&std::get<N>(all)), std::get<K>(all)...);
        }
        (std::make_index_sequence<N>{});
    } else {
        run(static_cast<const allocations_base*>(nullptr), args...);
    }
}

}  // namespace detail

/// An inner pipeline: invoke it on the refs (inputs, then outputs) to run it once (S53).
template <class Body, std::size_t G, class Ins, class Outs, class Extra>
class inner_pipeline;

template <class Body, std::size_t G, class... I, class... O, class... Extra>
class inner_pipeline<Body, G, in_specs_t<I...>, out_specs_t<O...>, std::tuple<Extra...>> {
    using ctx_t = std::conditional_t<sizeof...(Extra) == 0, void, std::tuple<Extra...>>;

public:
    inner_pipeline(Body body, const std::array<index_t, G>& grid, const pipeline_options& opt,
                   std::tuple<Extra...> extra)
        : body_(std::move(body)), grid_(grid), opt_(opt), extra_(std::move(extra)) {
        // 27, BUF1 and Q1 of the static specs (instantiating the check is what reports them).
        static_cast<void>(detail::check_buffering_all<static_cast<int>(sizeof...(I)), I..., O...>(
            std::index_sequence_for<I..., O...>{}));
    }

    static constexpr std::size_t n_refs = sizeof...(I) + sizeof...(O);
    // S55: a prefetched input's first slots are the caller's, in allocations made beforehand.
    static constexpr bool prefetches = ((I::mode::prefetched_count > 0) || ... || false);

    /// The windows of this pipeline made once (emit_pipeline_with_allocations): invoke the
    /// pipeline with them last, pipe(refs..., allocs); `window<K>(slot)` is input/output K's slot
    /// as a ref (to prefill for prefetched_count, S55).
    template <class... Refs>
    class allocations : public detail::allocations_base {
    public:
        template <std::size_t K>
        auto window(int slot) const {
            using Src = std::tuple_element_t<K, std::tuple<Refs...>>;
            using Spec = std::tuple_element_t<K, std::tuple<I..., O...>>;
            using T = typename detail::source_of<Src>::value_type;
            constexpr std::size_t R = detail::source_of<Src>::rank;
            using W = detail::window_ref_t<T, Spec, R>;
            if (slot < 0 || slot >= buffers[K])
                throw error("R2", "allocations::window<" + std::to_string(K) + ">",
                            "slot " + std::to_string(slot) + " of " + std::to_string(buffers[K]),
                            "name a slot in [0, buffer count) of a windowed operand");
            constexpr auto e = detail::window_extents<Spec, R>();
            std::array<index_t, e.size()> shape{};
            for (std::size_t d = 0; d < e.size(); ++d) shape[d] = Spec::shape::full ? shapes[K][d] : e[d];
            return W(reinterpret_cast<T*>(slots[K][static_cast<std::size_t>(slot)]), shape);
        }
    };

    /// make_allocations (upstream's, S53): lays this pipeline's windows for `refs` (inputs then
    /// outputs) out in `scratch`, a VMEM scratch ref of the enclosing kernel (at least
    /// allocation_bytes; error 24 says how many), to be reused by every invocation.
    template <class S, class... Refs>
    allocations<Refs...> make_allocations(const S& scratch, const Refs&... refs) const {
        static_assert(sizeof...(Refs) == n_refs,
                      "ptpu[ARG1] make_allocations: pass the scratch, then one ref per input spec, then one per output spec");
        static_assert(std::is_same_v<typename detail::source_of<S>::space, vmem>,
                      "ptpu[29] make_allocations: the allocations live in a VMEM scratch ref of the enclosing kernel");
        detail::invocation in("make_allocations");
        allocations<Refs...> a;
        if (!prepare(in, refs...)) return a;  // this core runs none of the grid
        detail::lay_out_in(a, in.p, in.plan(maps.data(), scans.data()), scratch);
        return a;
    }

    /// Runs the pipeline over `refs`: the inputs' then the outputs' source refs (any/hbm, or
    /// VMEM/SMEM refs a spec of their space aliases), then, optionally, its allocations.
    template <class... Args>
    void operator()(const Args&... args) const {
        if constexpr (sizeof...(Args) == n_refs + 1) {
            using A = std::remove_cvref_t<std::tuple_element_t<n_refs, std::tuple<Args...>>>;
            static_assert(
                std::is_base_of_v<detail::allocations_base, A>,
                "ptpu[ARG1] emit_pipeline: pass one ref per input spec, then one per output spec, then "
                "(optionally) the pipeline's allocations");
        } else {
            static_assert(sizeof...(Args) == n_refs,
                          "ptpu[ARG1] emit_pipeline: pass one ref per input spec, then one per output spec");
            static_assert(
                !prefetches,
                "ptpu[28] emit_pipeline: a prefetched input (prefetched_count > 0, S55) expects its "
                "window bound to allocations the caller filled; make them with "
                "emit_pipeline_with_allocations and pass them last");
        }
        if constexpr (sizeof...(Args) == n_refs ||
                      sizeof...(Args) == n_refs + 1)  // (else: the one error above)
            detail::invoke_pipeline<n_refs>(
                [&](const auto* alloc, const auto&... refs) { run(alloc, refs...); }, args...);
    }

private:
    static constexpr std::array<block_fn, n_refs> maps = []<std::size_t... K>(std::index_sequence<K...>) {
        constexpr int n_in = static_cast<int>(sizeof...(I));
        return std::array<block_fn, n_refs>{
            &detail::inner_map<std::tuple_element_t<K, std::tuple<I..., O...>>, G, ctx_t, static_cast<int>(K), n_in>...};
    }(std::make_index_sequence<n_refs>{});
    static constexpr std::array<scan_fn, n_refs> scans = []<std::size_t... K>(std::index_sequence<K...>) {
        constexpr int n_in = static_cast<int>(sizeof...(I));
        return std::array<scan_fn, n_refs>{
            &detail::scan_inner_operand<std::tuple_element_t<K, std::tuple<I..., O...>>, G, ctx_t,
                                        static_cast<int>(K), n_in>...};
    }
    (std::make_index_sequence<n_refs>{});

    // The pipeline as the planner sees it for this core: false when the core's part of a split
    // grid is empty (S21: nothing runs).
    template <class... Refs>
    bool prepare(detail::invocation& in, const Refs&... refs) const {
        const void* user = nullptr;
        if constexpr (sizeof...(Extra) > 0) user = &extra_;
        if (!in.begin(grid_.data(), static_cast<int>(G), opt_, static_cast<int>(sizeof...(I)),
                      static_cast<int>(sizeof...(O)), user))
            return false;
        pipeline_desc& p = in.p;
        std::size_t k = 0;
        auto describe = [&]<class Spec, int Op>(std::type_identity<Spec>, std::integral_constant<int, Op>,
                                                const auto& r) {
            const operand_role role = k < sizeof...(I) ? operand_role::input : operand_role::output;
            p.ops[k] = detail::describe_inner<Spec, G>(role, r, static_cast<int>(k < sizeof...(I) ? k : k - sizeof...(I)));
            detail::check_entry_kinds<Spec, G, ctx_t, detail::source_of<std::remove_cvref_t<decltype(r)>>::rank, Op,
                                      static_cast<int>(sizeof...(I))>();
            int returned = 0;
            p.ops[k].issue = detail::issue_of<Spec, G, ctx_t>(p.ops[k].block_rank, returned);
            p.ops[k].map_returned = returned;
            in.hbm[k] = const_cast<void*>(static_cast<const void*>(r.data()));
            ++k;
        };
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (describe(std::type_identity<std::tuple_element_t<K, std::tuple<I..., O...>>>{},
                      std::integral_constant<int, static_cast<int>(K)>{}, refs),
             ...);
        }(std::index_sequence_for<Refs...>{});
        return true;
    }

    template <class... Refs>
    void run(const detail::allocations_base* alloc, const Refs&... refs) const {
        detail::invocation in("emit_pipeline");
        if (!prepare(in, refs...)) return;  // this core runs none of the grid
        auto invoke = [&](core_memory& m) {
            call_body(m, in.mctx, std::index_sequence_for<I..., O...>{}, refs...);
        };
        in.run(maps.data(), invoke, opt_.trace, alloc, std::is_empty_v<Body>, scans.data());
    }

    template <std::size_t... K, class... Refs>
    void call_body(core_memory& m, const detail::inner_map_ctx& mctx, std::index_sequence<K...>,
                   const Refs&... refs) const {
        // Braces make the windows in operand order (an aliased view out of range names the first).
        std::apply(body_, std::tuple{window<K, std::tuple_element_t<K, std::tuple<I..., O...>>>(m, mctx, refs)...});
    }
    template <std::size_t K, class Spec, class Src>
    static auto window(core_memory& m, const detail::inner_map_ctx& mctx, const Src& src) {
        using T = typename detail::source_of<Src>::value_type;
        constexpr std::size_t R = detail::source_of<Src>::rank;
        using W = detail::window_ref_t<T, Spec, R>;
        constexpr std::size_t n_in = sizeof...(I);
        const detail::ref_label who{K < n_in ? detail::ref_label::kind::input : detail::ref_label::kind::output,
                                    static_cast<std::uint8_t>(K < n_in ? K : K - n_in)};
        if constexpr (detail::inner_aliased<Spec, typename detail::source_of<Src>::space>()) {
            // A view of a read-only source (an unaliased input's HBM ref) stays read-only (R4).
            using V = std::conditional_t<detail::source_of<Src>::read_only, const T, T>;
            return alias_view<K, Spec, detail::window_ref_t<V, Spec, R>>(src, mctx).labelled(who);
        } else {
            constexpr auto e = detail::window_extents<Spec, R>();
            std::array<index_t, e.size()> shape{};
            for (std::size_t d = 0; d < e.size(); ++d) shape[d] = Spec::shape::full ? src.shape()[d] : e[d];
            return W(reinterpret_cast<T*>(m.slots[K][static_cast<std::size_t>(m.cur[K])]), shape).labelled(who);
        }
    }
    // S17: the body's ref of an aliased operand is the source's block at this inner step, in
    // place (compute_slice: a Blocked dim from b*n, an Element or BoundedSlice dim from its
    // start, n long; a squeezed dim indexed away).
    template <std::size_t K, class Spec, class W, class Src>
    static W alias_view(const Src& src, const detail::inner_map_ctx& mctx) {
        using T = typename detail::source_of<Src>::value_type;
        constexpr std::size_t R = detail::source_of<Src>::rank;
        T* p = const_cast<T*>(src.data());
        if constexpr (Spec::shape::full) {
            return W(p, src.shape(), src.strides());
        } else {
            const kernel_context& c = detail::require_context("emit_pipeline");
            index_t at[G > 0 ? G : 1]{};
            for (std::size_t d = 0; d < G; ++d) at[d] = c.inner_point[d];
            const index_tuple<max_rank> b =
                detail::inner_map<Spec, G, ctx_t, static_cast<int>(K), static_cast<int>(sizeof...(I))>(at, &mctx);
            constexpr std::size_t WR = detail::window_rank<Spec, R>();
            constexpr bool input = K < sizeof...(I);
            const detail::alias_slice a =
                detail::alias_block(Spec::shape::dims.data(), static_cast<int>(R), b, src.shape().data(),
                                    src.strides().data(), input, static_cast<int>(input ? K : K - sizeof...(I)));
            std::array<index_t, WR> shape{}, strides{};
            for (std::size_t j = 0; j < WR; ++j) {
                shape[j] = a.shape[j];
                strides[j] = a.strides[j];
            }
            return W(p + a.offset, shape, strides);
        }
    }

    Body body_;
    std::array<index_t, G> grid_;
    pipeline_options opt_;
    std::tuple<Extra...> extra_;
};

/// pltpu.emit_pipeline(body, grid, in_specs, out_specs, dimension_semantics, core_axis): a
/// pipeline to run inside a kernel body. `grid` is the inner grid ({4, 4}; values may be run-time);
/// each spec's index map takes the inner grid indices, then `extra...` (values or refs the body
/// holds, e.g. SMEM refs with block starts: index maps cannot capture). The inner body gets one
/// window ref per spec, inputs then outputs.
template <class Body, std::size_t G, class... I, class... O, class... Extra>
auto emit_pipeline(Body body, const index_t (&grid)[G], in_specs_t<I...>, out_specs_t<O...>,
                   const pipeline_options& opt = {}, Extra... extra) {
    std::array<index_t, G> g{};
    for (std::size_t d = 0; d < G; ++d) g[d] = grid[d];
    return inner_pipeline<Body, G, in_specs_t<I...>, out_specs_t<O...>, std::tuple<Extra...>>(
        std::move(body), g, opt, std::tuple<Extra...>(std::move(extra)...));
}

/// pltpu.emit_pipeline_with_allocations: the pipeline and its make_allocations (S53). The
/// enclosing kernel gives a VMEM scratch buffer; `make_allocations(scratch, refs...)` lays the
/// pipeline's windows out in it once, and every invocation `pipe(refs..., allocs)` reuses them:
/// no VMEM is taken per invocation (the scratch is counted once), and the windows keep their
/// contents between invocations, so the caller may fill the first slots of a prefetched input
/// (Buffered<k, L, p>, S55) with `allocs.window<K>(slot)` before invoking.
///
///   auto [pipe, make_allocations] = emit_pipeline_with_allocations(body, {4}, in_specs<S>, out_specs<S>);
///   auto allocs = make_allocations(scratch, x_hbm, o_hbm);
///   pipe(x_hbm, o_hbm, allocs);
template <class Body, std::size_t G, class... I, class... O, class... Extra>
auto emit_pipeline_with_allocations(Body body, const index_t (&grid)[G], in_specs_t<I...> in, out_specs_t<O...> out,
                                    const pipeline_options& opt = {}, Extra... extra) {
    auto pipe = emit_pipeline(std::move(body), grid, in, out, opt, std::move(extra)...);
    auto make = [pipe](const auto& scratch, const auto&... refs) { return pipe.make_allocations(scratch, refs...); };
    return std::pair{std::move(pipe), std::move(make)};
}

}  // namespace ptpu

// The definitions, where this translation unit compiles them (core/linkage.hpp).
#if defined(PTPU_DEFINE_COMPILED)
#include "ptpu/call/emit_pipeline_impl.hpp"
#endif
