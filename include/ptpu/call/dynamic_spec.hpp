// Defines the run-time pieces of a dynamic_call's configuration: Operand<T, Rank, Space,
// KernelRank> (an operand's type: element, rank, memory space, the body's ref rank),
// ScratchShapes, value_list, dynamic_map (a run-time index map with its form checked) and
// dynamic_spec (an operand's shape, block, map, buffering and space as values), plus the helpers
// that check run-time extents and view host arrays with them. dynamic_call (call/dynamic.hpp) and
// dynamic_pipeline (call/dynamic_pipeline.hpp) describe operands from these values.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptpu/call/binding.hpp"
#include "ptpu/call/options.hpp"
#include "ptpu/call/run.hpp"
#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/linkage.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/runtime/host_array.hpp"
#include "ptpu/runtime/ref.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/spec/call.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// One operand of a dynamic_call as the body sees it: element type, array rank, memory space and
/// the rank of the body's ref (the array rank minus the block's squeezed dims, S11): the ref's
/// type. Its shapes and index map are values (dynamic_call::spec). Use it in In<...>, Out<...>,
/// ScalarPrefetch<...> (space ignored: SMEM) and ScratchShapes<...>. Semaphore scratch is
/// Operand<dma_semaphore, Rank, semaphore> (SemaphoreType.DMA) or Operand<regular_semaphore,
/// Rank, semaphore> (SemaphoreType.REGULAR; int32_t cells are its older spelling), as
/// Scratch<semaphore, ...> is for a pallas_call.
template <class T, std::size_t Rank, class Space = vmem, std::size_t KernelRank = Rank>
struct Operand {
    static_assert(element_type<T> || is_semaphore_cell<T>,
                  "ptpu[T1] Operand: unsupported element type; use float, bf16, f16, int32_t, int16_t, "
                  "int8_t, uint8_t or bool (or dma_semaphore, regular_semaphore in the semaphore space)");
    // Rule 36 as Scratch<semaphore, ...> checks it (detail::semaphore_scratch_rule), in the words
    // of an Operand.
    static_assert(detail::semaphore_scratch_rule<Space, T>() != detail::noun_rule::cells_space,
                  "ptpu[36] Operand: dma_semaphore and regular_semaphore cells live in the semaphore space; "
                  "declare Operand<dma_semaphore, Rank, semaphore> in ScratchShapes");
    static_assert(detail::semaphore_scratch_rule<Space, T>() != detail::noun_rule::semaphore_cells,
                  "ptpu[36] Operand: semaphore scratch holds dma_semaphore (SemaphoreType.DMA) or "
                  "regular_semaphore (SemaphoreType.REGULAR) cells; declare Operand<dma_semaphore, Rank, "
                  "semaphore> or Operand<regular_semaphore, Rank, semaphore>");
    static_assert(Rank <= max_rank, "ptpu[V1] Operand: rank above ptpu's max_rank (6)");
    static_assert(space<Space>,
                  "ptpu[29] Operand: the third argument must be a memory space (vmem, smem, any)");
    static_assert(
        KernelRank <= Rank,
        "ptpu[V1] Operand: the body's ref cannot have more dims than the array (KernelRank <= Rank)");
    using value_type = T;
    using memory = Space;
    static constexpr std::size_t rank = Rank;
    static constexpr std::size_t kernel_rank = KernelRank;
};

/// scratch_shapes of a dynamic_call: one Operand<T, Rank, Space> per buffer (shapes given at run time).
template <class... Buffers>
struct ScratchShapes {};

namespace detail {
// V1: `given` values (0: one more) for a value_list of at most n.
[[noreturn, gnu::cold]] PTPU_COMPILED void too_many_values(std::size_t given, std::size_t n);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void too_many_values(std::size_t given, std::size_t n) {
    throw error("V1", "dynamic_call",
                given > 0 ? std::to_string(given) + " values, at most " + std::to_string(n)
                          : "more than " + std::to_string(n) + " values",
                "give at most " + std::to_string(n) + " (max_rank dims, max_operands aliases)");
}
#endif
}  // namespace detail

/// At most N values given at run time, e.g. `call.grid = {8, 8}`.
template <class T, std::size_t N>
class value_list {
public:
    constexpr value_list() = default;
    constexpr value_list(std::initializer_list<T> l) {  // NOLINT(google-explicit-constructor)
        if (l.size() > N) detail::too_many_values(l.size(), N);
        for (const T& x : l) v_[static_cast<std::size_t>(n_++)] = x;
    }
    [[nodiscard]] constexpr int size() const { return n_; }
    [[nodiscard]] constexpr bool empty() const { return n_ == 0; }
    constexpr void push_back(const T& x) {
        if (n_ == static_cast<int>(N)) detail::too_many_values(0, N);
        v_[static_cast<std::size_t>(n_++)] = x;
    }
    constexpr const T& operator[](std::size_t i) const { return v_[i]; }
    constexpr T& operator[](std::size_t i) { return v_[i]; }
    constexpr const T* begin() const { return v_.data(); }
    constexpr const T* end() const { return v_.data() + n_; }

private:
    std::array<T, N> v_{};
    int n_ = 0;
};

/// One block dim given at run time: an extent (pl.Blocked), blocked{n}, squeezed (its Operand's
/// KernelRank says how many), element{n, lo, hi} or bounded_slice{n} (rejected by the same rule 18
/// as in a static call).
struct block_entry {
    block_dim dim{};
    constexpr block_entry() = default;
    template <std::integral I>
    requires(!std::is_same_v<I, bool>) constexpr block_entry(I n)
        : dim{dim_kind::blocked, static_cast<index_t>(n), 0, 0} {}                            // NOLINT
    constexpr block_entry(blocked b) : dim{dim_kind::blocked, b.size, 0, 0} {}                // NOLINT
    constexpr block_entry(element e) : dim{dim_kind::element, e.size, e.pad_lo, e.pad_hi} {}  // NOLINT
    constexpr block_entry(bounded_slice b) : dim{dim_kind::bounded_slice, b.size, 0, 0} {}    // NOLINT
    constexpr block_entry(squeezed_t) : dim{dim_kind::squeezed, 1, 0, 0} {}                   // NOLINT
};

using dims_value = value_list<index_t, max_rank>;

namespace detail {
// A static BlockSpec holding a run-time map's type, so the planner's own adaptors (eval_map, the
// inlined scan_operand) serve dynamic calls unchanged. The map captures nothing, as a BlockSpec's.
template <class Map>
struct map_holder {
    static constexpr Map index_map{};
};

template <class Map, class Ctx, std::size_t G>
constexpr bool map_takes = map_call<Map, std::make_index_sequence<G>, Ctx>::ok;

// A run-time map's form against a grid of rank g (dynamic_map::describe): eval[r] is its block_fn
// for grid rank r (null: it does not take r indices), returned[r] the entries it returns then.
constexpr void describe_map_form(operand_desc& d, std::size_t g, const block_fn* eval, const int* returned) {
    if (d.zero_map) {
        d.map_returned = d.block_rank;
    } else if (g > max_rank || eval[g] == nullptr) {
        d.issue = map_issue::arity;
    } else if (returned[g] < 0) {
        d.issue = map_issue::not_tuple;
    } else {
        d.map_returned = returned[g];
        if (d.map_returned != d.block_rank) d.issue = map_issue::wrong_rank;
    }
}

// index_map=None (block index 0 at every step) as the planner calls it: its block_fn and its
// pass 1, which read neither the grid point nor the prefetch context, compiled once.
PTPU_COMPILED index_tuple<max_rank> eval_zero_map(const index_t* g, const void* ctx);
PTPU_COMPILED bool scan_zero_map(const pipeline_desc& c, const void* ctx, operand_scan& scan);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED index_tuple<max_rank> eval_zero_map(const index_t* g, const void* ctx) {
    return eval_map<BlockSpec<>, 0, void>(g, ctx);
}
PTPU_COMPILED bool scan_zero_map(const pipeline_desc& c, const void* ctx, operand_scan& scan) {
    return scan_operand<BlockSpec<>, 0, void>(c, ctx, scan);
}
#endif
}  // namespace detail

/// An index map given at run time: the same callables as BlockSpec's (`[](index_t i, index_t j)
/// { return idx(i, 0); }`, then the scalar-prefetch refs), kept as the planner's block_fn for the
/// grid ranks it accepts. Ctx is the call's prefetch context (dynamic_call::spec picks it).
template <class Ctx>
struct dynamic_map {
    std::array<block_fn, max_rank + 1> eval{};  ///< per grid rank the map takes (null: not callable)
    std::array<scan_fn, max_rank + 1> scan{};
    std::array<int, max_rank + 1> returned{};  ///< entries returned, -1: not idx(...) (check 3)
    bool zero = true;                          ///< index_map=None

    constexpr dynamic_map() = default;
    constexpr dynamic_map(zero_map_t) {}  // NOLINT(google-explicit-constructor)
    template <class Map>
    requires(!std::is_same_v<std::remove_cvref_t<Map>, dynamic_map> &&
             !std::is_same_v<std::remove_cvref_t<Map>, zero_map_t>) constexpr dynamic_map(Map&&)
        : zero(false) {  // NOLINT(google-explicit-constructor)
        using M = std::remove_cvref_t<Map>;
        constexpr bool stateless = std::is_empty_v<M> && std::is_default_constructible_v<M>;
        static_assert(stateless,
                      "ptpu[S7] dynamic_call: an index map must capture nothing, as a BlockSpec's; pass "
                      "run-time values through the grid or ScalarPrefetch");
        if constexpr (stateless)  // one mistake, one message
            [&]<std::size_t... G>(std::index_sequence<G...>) {
                (add<M, G>(), ...);
            }
        (std::make_index_sequence<max_rank + 1>{});
    }

    /// The map's form against a grid of rank `g` and the block `d` describes (checks 2, 3), as
    /// describe_operand finds it for a static map.
    constexpr void describe(operand_desc& d, std::size_t g) const {
        detail::describe_map_form(d, g, eval.data(), returned.data());
    }

private:
    template <class M, std::size_t G>
    constexpr void add() {
        if constexpr (detail::map_takes<M, Ctx, G>) {
            using R =
                std::remove_cvref_t<typename detail::map_call<M, std::make_index_sequence<G>, Ctx>::result>;
            eval[G] = &detail::eval_map<detail::map_holder<M>, G, Ctx>;
            scan[G] = &detail::scan_filled_operand<detail::map_holder<M>, G, Ctx>;
            if constexpr (detail::is_index_tuple<R>)
                returned[G] = static_cast<int>(R::size());
            else
                returned[G] = -1;
        }
    }
};

/// The run-time BlockSpec of one operand, with the array's shape (Pallas takes it from the
/// argument or out_shape). Defaults as BlockSpec's: the whole array (Full), index_map=None,
/// Buffered<2>, revisit immediate.
template <class Ctx>
struct dynamic_spec {
    dims_value shape{};  ///< the array's dims (rank of its Operand); an inner pipeline's: its source's, may
                         ///< stay empty
    value_list<block_entry, max_rank> block{};  ///< the block shape; empty: the whole array (S7)
    dynamic_map<Ctx> index_map{};
    std::optional<int> buffer_count{};  ///< pipeline_mode=Buffered(k); none: 2 (S16)
    bool lookahead = false;             ///< Buffered(k, use_lookahead) (rule 19 at top level)
    bool revisit_any = false;           ///< RevisitMode.ANY (S39, S40)
    /// Buffered(k, use_lookahead, prefetched_count): slots the caller filled (S55), for an
    /// inner pipeline's input with allocations (a top-level call rejects it, 19).
    int prefetched_count = 0;

    /// What the spec says, as every front end's describer reads it (block in `space`).
    [[nodiscard]] constexpr detail::spec_values values(space_kind space) const {
        detail::spec_values v;
        v.space = space;
        v.full = block.empty();
        v.rank = block.size();
        for (int i = 0; i < block.size(); ++i)
            v.dims[static_cast<std::size_t>(i)] = block[static_cast<std::size_t>(i)].dim;
        v.buffer_count = buffer_count.value_or(2);
        v.explicit_mode = buffer_count.has_value() || lookahead || prefetched_count != 0;
        v.lookahead = lookahead;
        v.prefetched = prefetched_count;
        v.revisit_any = revisit_any;
        v.zero_map = index_map.zero;
        return v;
    }
};

namespace detail {
template <class... A>
struct operands_of;  // In<Operand...> / Out<...> / ScalarPrefetch<...> / ScratchShapes<...> -> pack
template <template <class...> class H, class... A>
struct operands_of<H<A...>> {
    using type = pack<A...>;
};

template <template <class...> class H, class... Opts>
struct pick_holder {
    using type = H<>;
};
template <template <class...> class H, class First, class... Rest>
struct pick_holder<H, First, Rest...> {
    using type = typename pick_holder<H, Rest...>::type;
};
template <template <class...> class H, class... A, class... Rest>
struct pick_holder<H, H<A...>, Rest...> {
    using type = H<A...>;
};

template <class T>
inline constexpr bool is_operand = false;
template <class T, std::size_t R, class S, std::size_t K>
inline constexpr bool is_operand<Operand<T, R, S, K>> = true;

template <template <class...> class H, class T>
inline constexpr int count_of = 0;
template <template <class...> class H, class... A>
inline constexpr int count_of<H, H<A...>> = 1;

template <class P>
inline constexpr bool all_operands = false;
template <class... A>
inline constexpr bool all_operands<pack<A...>> = (is_operand<A> && ...);

// The operands a run-time front end's options list under holder H (In, Out, ...), and whether
// H is given at most once.
template <template <class...> class H, class... Opts>
using listed_t = typename operands_of<typename pick_holder<H, Opts...>::type>::type;
template <template <class...> class H, class... Opts>
inline constexpr bool at_most_once = (count_of<H, Opts> + ... + 0) <= 1;

// The pipeline dynamic_call::custom_buffered runs (defined in call/dynamic_pipeline.hpp).
template <class Ins, class Outs, class Prefetch>
struct custom_buffered;

// The outer call of a custom-buffered run: the call's description with every In and Out an ANY
// array (the whole array, index_map=None), gridless, or one parallel step per core.
PTPU_COMPILED call_desc custom_buffered_outer(const call_desc& c, int cores);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED call_desc custom_buffered_outer(const call_desc& c, int cores) {
    call_desc o = c;
    o.grid = {};
    o.semantics = {};
    o.grid_rank = o.semantics_rank = cores > 1 ? 1 : 0;
    o.has_semantics = cores > 1;
    if (cores > 1) {
        o.grid[0] = cores;
        o.semantics[0] = dim_semantics::parallel;
    }
    for (int i = 0; i < o.n_ops(); ++i) {
        operand_desc& d = o.ops[static_cast<std::size_t>(i)];
        spec_values whole;
        whole.space = space_kind::any;
        describe_block(d, whole);
        d.issue = map_issue::none;
        d.map_returned = d.rank;
        d.map_dim = -1;
    }
    return o;
}
#endif

template <class T>
inline constexpr bool is_dynamic_option = false;
template <class... A>
inline constexpr bool is_dynamic_option<In<A...>> = true;
template <class... A>
inline constexpr bool is_dynamic_option<Out<A...>> = true;
template <class... A>
inline constexpr bool is_dynamic_option<ScalarPrefetch<A...>> = true;
template <class... A>
inline constexpr bool is_dynamic_option<ScratchShapes<A...>> = true;

[[noreturn, gnu::cold]] PTPU_COMPILED void bad_dims(const char* role, std::size_t k, const std::string& what,
                                                    const char* fix);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void bad_dims(const char* role, std::size_t k, const std::string& what, const char* fix) {
    throw error("V1", operand_where("dynamic_call", role, k), what, fix);
}
#endif

[[noreturn, gnu::cold]] PTPU_COMPILED void bad_squeeze(const char* role, std::size_t k, int squeezed,
                                                       std::size_t rank, std::size_t kernel_rank);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void bad_squeeze(const char* role, std::size_t k, int squeezed, std::size_t rank,
                               std::size_t kernel_rank) {
    throw error("7", operand_where("dynamic_call", role, k),
                "the block squeezes " + std::to_string(squeezed) + " dims, its Operand<T, " +
                    std::to_string(rank) + ", Space, " + std::to_string(kernel_rank) +
                    "> gives the body a rank-" + std::to_string(kernel_rank) + " ref",
                "squeeze rank - KernelRank dims of a windowed block (none of an any/hbm operand)");
}
#endif

PTPU_COMPILED void check_dims(const dims_value& s, std::size_t rank, const char* role, std::size_t k);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void check_dims(const dims_value& s, std::size_t rank, const char* role, std::size_t k) {
    if (static_cast<std::size_t>(s.size()) != rank)
        bad_dims(role, k,
                 "the shape has " + std::to_string(s.size()) + " dims, its Operand type has rank " +
                     std::to_string(rank),
                 "give one extent per dim of the Operand");
    for (int d = 0; d < s.size(); ++d)
        if (s[static_cast<std::size_t>(d)] <= 0)
            bad_dims(role, k,
                     "dim " + std::to_string(d) + " is " + std::to_string(s[static_cast<std::size_t>(d)]),
                     "every dimension must be >= 1");
}
#endif

/// A dynamic_call's description before its operands: the grid, semantics, chip, VMEM limit,
/// cores and the count of scalar-prefetch arrays.
PTPU_COMPILED call_desc describe_dynamic_call(const dims_value& grid,
                                              const value_list<dim_semantics, max_rank>& semantics,
                                              const chip& hw, std::optional<index_t> vmem_limit,
                                              std::size_t n_prefetch);
/// Its aliases (S50), once the operands are described: the {input, output} pairs, each output
/// marked as its input's alias.
PTPU_COMPILED void describe_dynamic_aliases(call_desc& c,
                                            const value_list<std::pair<int, int>, max_operands>& aliases);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED call_desc describe_dynamic_call(const dims_value& grid,
                                              const value_list<dim_semantics, max_rank>& semantics,
                                              const chip& hw, std::optional<index_t> vmem_limit,
                                              std::size_t n_prefetch) {
    call_desc c;
    c.grid_rank = grid.size();
    for (int i = 0; i < grid.size(); ++i)
        c.grid[static_cast<std::size_t>(i)] = grid[static_cast<std::size_t>(i)];
    if (!semantics.empty()) {
        c.has_semantics = true;
        c.semantics_rank = semantics.size();
        for (int i = 0; i < semantics.size(); ++i)
            c.semantics[static_cast<std::size_t>(i)] = semantics[static_cast<std::size_t>(i)];
    }
    c.hw = hw;
    c.vmem_limit = vmem_limit.value_or(hw.vmem_limit_bytes);
    c.n_prefetch = static_cast<int>(n_prefetch);
    c.cores = hw.pallas_cores();
    return c;
}
PTPU_COMPILED void describe_dynamic_aliases(call_desc& c,
                                            const value_list<std::pair<int, int>, max_operands>& aliases) {
    c.n_alias = aliases.size();
    for (int k = 0; k < aliases.size(); ++k) {
        const auto [i, o] = aliases[static_cast<std::size_t>(k)];
        c.aliases[static_cast<std::size_t>(k)] = {i, o};
        if (o >= 0 && o < c.n_out) c.ops[static_cast<std::size_t>(c.n_in + o)].alias_of = i;
    }
}
#endif

/// What the planner sees of a dynamic_call operand (`role` k) of an Operand of dtype `type`,
/// rank `rank` and ref rank `kernel_rank` (`windowed`: its space has a window), configured by a
/// spec of this shape, block, values (dynamic_spec::values) and map form (dynamic_map's eval and
/// returned) against a grid of rank `grid_rank`: V1 for a shape that does not fit, 7 for a
/// squeeze that leaves another ref rank.
PTPU_COMPILED operand_desc describe_dynamic_operand(const dims_value& shape,
                                                    const value_list<block_entry, max_rank>& block,
                                                    const spec_values& v, const block_fn* eval,
                                                    const int* returned, std::size_t grid_rank,
                                                    operand_role role, std::size_t k, dtype type,
                                                    std::size_t rank, std::size_t kernel_rank, bool windowed);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED operand_desc describe_dynamic_operand(
    const dims_value& shape, const value_list<block_entry, max_rank>& block, const spec_values& v,
    const block_fn* eval, const int* returned, std::size_t grid_rank, operand_role role, std::size_t k,
    dtype type, std::size_t rank, std::size_t kernel_rank, bool windowed) {
    const char* who = role == operand_role::input ? "input" : "output";
    check_dims(shape, rank, who, k);
    operand_desc d;
    d.role = role;
    d.type = type;
    d.rank = static_cast<int>(rank);
    for (std::size_t i = 0; i < rank; ++i) d.shape[i] = shape[i];
    describe_block(d, v);
    // The body's ref has the Operand's kernel rank: the block squeezes the dims in between (S11).
    int squeezed_dims = 0;
    for (const block_entry& e : block) squeezed_dims += e.dim.kind == dim_kind::squeezed;
    if (static_cast<std::size_t>(windowed ? squeezed_dims : 0) + kernel_rank != rank)
        bad_squeeze(who, k, squeezed_dims, rank, kernel_rank);
    describe_map_form(d, grid_rank, eval, returned);
    return d;
}
#endif

/// The elements of an array of `itemsize`-byte elements and shape `s` (operand k of `role`), or
/// ptpu[V3] naming it and the dim when they, or their bytes, overflow index_t.
PTPU_COMPILED index_t elems_of(const dims_value& s, index_t itemsize, const char* role, std::size_t k);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED index_t elems_of(const dims_value& s, index_t itemsize, const char* role, std::size_t k) {
    index_t n = 0;
    int at = 0;
    index_t bytes = 0;
    const bool elems_fit = product_fits(s.begin(), s.size(), n, &at);
    if (!elems_fit || !mul_fits(n, itemsize, bytes)) {
        if (elems_fit) at = s.size() - 1;  // the bytes overflow
        std::string shape;
        for (index_t e : s) shape += (shape.empty() ? "" : ", ") + std::to_string(e);
        throw error(std::string(PTPU_RULE_TEXT_V3) + " (" + operand_where("dynamic_call", role, k) +
                    ", dim " + std::to_string(at) + ": the elements or bytes of shape (" + shape +
                    ") overflow)");
    }
    return n;
}
#endif
/// The same for an array of T.
template <class T>
index_t elems_of(const dims_value& s, const char* role, std::size_t k) {
    return elems_of(s, static_cast<index_t>(itemsize(dtype_of<T>)), role, k);
}

/// Scalar-prefetch array k of a dynamic_call, of this shape, rank and element size, into the
/// call's description (V1 for a shape that does not fit its Operand, V3 when its bytes overflow).
PTPU_COMPILED void describe_prefetch_array(call_desc& c, const dims_value& shape, std::size_t rank,
                                           index_t itemsize, std::size_t k);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void describe_prefetch_array(call_desc& c, const dims_value& shape, std::size_t rank,
                                           index_t itemsize, std::size_t k) {
    check_dims(shape, rank, "scalar-prefetch", k);
    const index_t bytes = elems_of(shape, itemsize, "scalar-prefetch", k) * itemsize;  // (fits: elems_of)
    c.prefetch_each[k] = bytes;
    c.prefetch_bytes = add_fits(c.prefetch_bytes, bytes, c.prefetch_bytes) ? c.prefetch_bytes
                                                                           : INT64_MAX;  // V3 in validate()
}
#endif

// ARG1: a caller's argument for operand k of `role` has another shape than the configured one,
// or (`given` >= 0) another element count than its `want`.
[[noreturn, gnu::cold]] PTPU_COMPILED void bad_argument_shape(const char* role, std::size_t k,
                                                              index_t given = -1, index_t want = 0);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void bad_argument_shape(const char* role, std::size_t k, index_t given, index_t want) {
    if (given >= 0)
        throw error(
            "ARG1", operand_where("dynamic_call", role, k),
            std::to_string(given) + " elements given, the configured shape has " + std::to_string(want),
            "pass a buffer of exactly the operand's size");
    throw error("ARG1", operand_where("dynamic_call", role, k),
                "the argument's shape differs from the configured one",
                "pass an array of the operand's shape");
}
#endif

/// A caller's argument for a dynamic operand of dtype T, rank R and shape `shape` as an HBM view
/// (ARG1 when it does not match).
template <class T, std::size_t R, class X>
host_view<const T> dynamic_view(const X& x, const dims_value& shape, const char* role, std::size_t k) {
    using U = std::remove_cvref_t<X>;
    host_view<const T> v{nullptr, static_cast<int>(R), {}};
    for (std::size_t d = 0; d < R; ++d) v.shape[d] = shape[d];
    auto mismatch = [&] { bad_argument_shape(role, k); };
    if constexpr (std::is_same_v<U, absent_input>) {
        return v;
    } else if constexpr (is_host_array<U>) {
        static_assert(std::is_same_v<typename U::value_type, T> && U::rank == R,
                      "ptpu[ARG1] dynamic_call: a host_array of another dtype or rank than its Operand");
        for (std::size_t d = 0; d < R; ++d)
            if (x.shape()[d] != shape[d]) mismatch();
        v.data = x.data();
        return v;
    } else if constexpr (std::is_same_v<U, host_view<T>> || std::is_same_v<U, host_view<const T>>) {
        if (x.rank != static_cast<int>(R)) mismatch();
        for (std::size_t d = 0; d < R; ++d)
            if (x.shape[d] != shape[d]) mismatch();
        require_data(x, "dynamic_call", role, k);
        v.data = x.data;
        return v;
    } else if constexpr (requires { std::span<const T>(x); }) {
        const std::span<const T> s(x);
        const index_t want = elems_of<T>(shape, role, k);
        if (static_cast<index_t>(s.size()) != want)
            bad_argument_shape(role, k, static_cast<index_t>(s.size()), want);
        v.data = s.data();
        return v;
    } else {
        static_assert(
            sizeof(X) == 0,
            "ptpu[ARG1] dynamic_call: an operand must be a host_array, a host_view, or a contiguous "
            "range (std::vector, std::span) of its Operand's dtype");
        return v;
    }
}

/// The shape of a scalar-prefetch argument (its own: Pallas takes it from the array passed).
template <class T, std::size_t R, class X>
dims_value prefetch_shape(const X& x, std::size_t k) {
    using U = std::remove_cvref_t<X>;
    dims_value s;
    if constexpr (is_host_array<U>) {
        static_assert(
            std::is_same_v<typename U::value_type, T> && U::rank == R,
            "ptpu[ARG1] dynamic_call: a scalar-prefetch host_array of another dtype or rank than its "
            "Operand");
        for (std::size_t d = 0; d < R; ++d) s.push_back(x.shape()[d]);
    } else if constexpr (std::is_same_v<U, host_view<T>> || std::is_same_v<U, host_view<const T>>) {
        if (x.rank != static_cast<int>(R))
            throw error("ARG1", operand_where("dynamic_call", "scalar-prefetch", k),
                        "the view's rank differs from its Operand's", "pass a view of the Operand's rank");
        for (std::size_t d = 0; d < R; ++d) s.push_back(x.shape[d]);
    } else if constexpr (requires { std::span<const T>(x); }) {
        static_assert(
            R == 1,
            "ptpu[ARG1] dynamic_call: a scalar-prefetch range gives a rank-1 shape; pass a host_view "
            "(with its shape) for a higher rank");
        s.push_back(static_cast<index_t>(std::span<const T>(x).size()));
    } else {
        static_assert(
            sizeof(X) == 0,
            "ptpu[ARG1] dynamic_call: a scalar-prefetch argument must be a host_array, a host_view, "
            "or a contiguous range of its Operand's dtype");
    }
    return s;
}

}  // namespace detail

}  // namespace ptpu
