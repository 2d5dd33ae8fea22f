// Defines dynamic_pipeline<In<Operand...>, Out<Operand...>, Extra<X...>>: an emit_pipeline whose
// configuration (grid, block shapes, index maps, buffer counts, lookahead, revisit mode,
// semantics, core_axis, no_pipelining, tiling, trace) is a value set at run time, while each
// operand's element type, rank, block memory space and the rank of the body's ref stay types, so
// one generic inner body runs every configuration. Its specs are described by the same describer
// as a static emit_pipeline's (spec/describe.hpp), planned by the same planner with
// emit_pipeline's capabilities and run by the same runner: the same rule ids, events and times.
//
//   using Pipe = dynamic_pipeline<In<Operand<float, 2>>, Out<Operand<float, 2>>>;
//   Pipe cfg;
//   cfg.grid = {8};
//   cfg.in[0] = cfg.out[0] = {.block = {128, 512}, .index_map = [](index_t i) { return idx(i, 0); },
//                             .buffer_count = 3};
//   ... in a kernel body: emit_pipeline(inner_body, cfg)(x_hbm, o_hbm);
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ptpu/call/dynamic.hpp"
#include "ptpu/call/emit_pipeline.hpp"

namespace ptpu {

/// The types of the values a dynamic_pipeline's index maps take after the inner grid indices
/// (emit_pipeline's `extra...`: SMEM refs with group starts, sizes): `Extra<ref<const
/// std::int32_t, smem, 1>>`. They are given, in this order, to emit_pipeline with the config.
template <class... X>
struct Extra {};

namespace detail {
template <class T>
inline constexpr bool is_pipeline_option = false;
template <class... A>
inline constexpr bool is_pipeline_option<In<A...>> = true;
template <class... A>
inline constexpr bool is_pipeline_option<Out<A...>> = true;
template <class... X>
inline constexpr bool is_pipeline_option<Extra<X...>> = true;

template <class E>
struct extra_ctx;
template <class... X>
struct extra_ctx<Extra<X...>> {
    using type = std::conditional_t<sizeof...(X) == 0, void, std::tuple<X...>>;
    using values = std::tuple<X...>;
};

// The index maps of a pipeline configured by values, operand by operand, as the planner calls
// them (block_fn): operand Op's at inner grid point g of this core's part is the map given as a
// value, at the whole grid's iteration, reading the extra values. Nothing in them depends on the
// pipeline: one table, compiled once.
PTPU_COMPILED const block_fn* value_inner_maps();
#if defined(PTPU_DEFINE_COMPILED)
template <int Op>
index_tuple<max_rank> value_inner_map(const index_t* g, const void* ctx) {
    const index_map_scope scope;
    const auto& c = *static_cast<const inner_map_ctx*>(ctx);
    index_t at[max_rank]{};
    for (int d = 0; d < c.rank; ++d) at[d] = g[d] + c.offset[static_cast<std::size_t>(d)];
    try {
        return c.value_maps[Op](at, c.user);
    } catch (const error& e) {
        rethrow_from_inner_map(e, Op, c.n_in, at, static_cast<std::size_t>(c.rank));
    }
}
PTPU_COMPILED const block_fn* value_inner_maps() {
    static constexpr std::array<block_fn, max_operands> table =
        []<std::size_t... K>(std::index_sequence<K...>) {
        return std::array<block_fn, max_operands>{&value_inner_map<static_cast<int>(K)>...};
    }
    (std::make_index_sequence<max_operands>{});
    return table.data();
}
#endif

// 28 for a pipeline configured by values invoked without allocations while an input asks for
// prefetched slots (S55; a static spec's is a compile error).
PTPU_COMPILED void require_allocations(const pipeline_desc& p);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void require_allocations(const pipeline_desc& p) {
    for (int i = 0; i < p.n_in; ++i)
        if (p.ops[static_cast<std::size_t>(i)].prefetched > 0)
            throw error(
                "28", "emit_pipeline (input " + std::to_string(i) + ")",
                "a prefetched input (prefetched_count > 0, S55) expects its window bound to allocations "
                "the caller filled",
                "make them with the pipeline's make_allocations and pass them last");
}
#endif

// Rule 7 and 30 of an operand configured by values (static specs meet them at compile time).
[[noreturn, gnu::cold]] PTPU_COMPILED void inner_value_error(const char* rule, bool input, int k, const std::string& what,
                                                             const char* fix);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void inner_value_error(const char* rule, bool input, int k, const std::string& what, const char* fix) {
    throw error(rule, operand_where("emit_pipeline", input ? "input" : "output", static_cast<std::size_t>(k)), what, fix);
}
#endif
[[noreturn, gnu::cold]] PTPU_COMPILED void inner_bad_squeeze(bool input, int k, int squeezed,
                                                             std::size_t rank, std::size_t kernel_rank);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED void inner_bad_squeeze(bool input, int k, int squeezed, std::size_t rank,
                                     std::size_t kernel_rank) {
    inner_value_error("7", input, k,
                      "the block squeezes " + std::to_string(squeezed) + " dims, its Operand<T, " +
                          std::to_string(rank) + ", Space, " + std::to_string(kernel_rank) +
                          "> gives the body a rank-" + std::to_string(kernel_rank) + " ref",
                      "squeeze rank - KernelRank dims of the block");
}
#endif

// An operand of a pipeline configured by values as the planner sees it: the source ref's
// description (dtype, rank, shape, strides), the spec's block, buffering and map form (dynamic_map's
// eval and returned) against an inner grid of rank g; ARG1, 7 and 30 for a spec that does not
// fit its source or Operand.
PTPU_COMPILED operand_desc describe_value_operand(const dims_value& spec_shape,
                                                  const value_list<block_entry, max_rank>& block,
                                                  const spec_values& v, const block_fn* eval,
                                                  const int* returned, std::size_t g, bool input, int k,
                                                  dtype type, std::size_t rank, std::size_t kernel_rank,
                                                  bool aliased, const index_t* shape, const index_t* strides);
#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED operand_desc describe_value_operand(
    const dims_value& spec_shape, const value_list<block_entry, max_rank>& block, const spec_values& v,
    const block_fn* eval, const int* returned, std::size_t g, bool input, int k, dtype type, std::size_t rank,
    std::size_t kernel_rank, bool aliased, const index_t* shape, const index_t* strides) {
    operand_desc d = describe_source(input ? operand_role::input : operand_role::output, type,
                                     static_cast<int>(rank), shape, strides, k, aliased);
    if (!spec_shape.empty()) {
        bool same = spec_shape.size() == static_cast<int>(rank);
        for (std::size_t i = 0; same && i < rank; ++i) same = spec_shape[i] == shape[i];
        if (!same)
            inner_value_error("ARG1", input, k, "the source ref's shape differs from the spec's shape",
                              "pass a source of the spec's shape, or leave the spec's shape empty");
    }
    describe_block(d, v);
    int squeezed = 0;
    bool padded = false;
    for (const block_entry& e : block) {
        squeezed += e.dim.kind == dim_kind::squeezed;
        padded = padded || (e.dim.kind == dim_kind::element && (e.dim.pad_lo != 0 || e.dim.pad_hi != 0));
    }
    if (static_cast<std::size_t>(squeezed) + kernel_rank != rank)
        inner_bad_squeeze(input, k, squeezed, rank, kernel_rank);
    if (aliased && padded)
        inner_value_error("30", input, k,
                          "Element with padding is not supported when the spec aliases its source (S17)",
                          "drop the padding, or copy from an ANY/HBM source");
    describe_map_form(d, g, eval, returned);
    return d;
}
#endif
}  // namespace detail

/// An emit_pipeline configured at run time. Options (types), in any order: In<Operand...>,
/// Out<Operand...> (each Operand<T, Rank, Space, KernelRank>: the source's dtype and rank, the
/// block's space — vmem or smem for a window, hbm or the source's own space for a view of the
/// source's block, S56 — and the body's ref rank), Extra<X...>; everything else is a member set
/// before the pipeline is emitted:
///
///     cfg.grid = {m / bm, k / bk};
///     cfg.options = {.semantics = {parallel, arbitrary}, .core_axis = 0};
///     cfg.in[0] = {.block = {bm, bk}, .index_map = [](index_t i, index_t k) { return idx(i, k); },
///                  .buffer_count = 3, .lookahead = true};
///
/// A spec's `shape` may stay empty (the source ref's), or must equal the source's (ARG1).
template <class... Opts>
struct dynamic_pipeline {
    static_assert((detail::is_pipeline_option<Opts> && ...),
                  "ptpu[10] dynamic_pipeline: options are In<Operand...>, Out<Operand...> and Extra<X...>; the "
                  "grid, blocks, maps and the rest are members set at run time");
    static_assert(detail::at_most_once<In, Opts...> && detail::at_most_once<Out, Opts...> &&
                      detail::at_most_once<Extra, Opts...>,
                  "ptpu[10] dynamic_pipeline: an option is given twice; give at most one In, Out and Extra");
    using ins = detail::listed_t<In, Opts...>;
    using outs = detail::listed_t<Out, Opts...>;
    using extras = typename detail::pick_holder<Extra, Opts...>::type;
    static_assert(detail::all_operands<ins> && detail::all_operands<outs>,
                  "ptpu[10] dynamic_pipeline: In and Out list Operand<T, Rank, Space, KernelRank> types (the "
                  "shapes are values)");
    using ctx_type = typename detail::extra_ctx<extras>::type;
    using extra_values = typename detail::extra_ctx<extras>::values;
    using spec = dynamic_spec<ctx_type>;
    static constexpr std::size_t n_in = ins::size;
    static constexpr std::size_t n_out = outs::size;
    static_assert(n_in + n_out <= max_operands, "ptpu[V1] dynamic_pipeline: more than max_operands (16) operands");

    /// The inner grid (values; empty: one step).
    dims_value grid{};
    std::array<spec, n_in> in{};
    std::array<spec, n_out> out{};
    /// dimension_semantics, core_axis, no_pipelining, tiling, trace: as emit_pipeline's.
    pipeline_options options{};
};

namespace detail {
template <class P, class Q>
struct pack_tuple;
template <class... A, class... B>
struct pack_tuple<pack<A...>, pack<B...>> {
    using type = std::tuple<A..., B...>;
};
}  // namespace detail

/// A dynamic_pipeline emitted with its inner body: invoke it on the refs (inputs, then outputs)
/// to run it once (S53), as a static emit_pipeline's.
template <class Body, class Cfg>
class value_pipeline {
    using ctx_t = typename Cfg::ctx_type;
    using operands = typename detail::pack_tuple<typename Cfg::ins, typename Cfg::outs>::type;
    static constexpr std::size_t n_in = Cfg::n_in;

public:
    static constexpr std::size_t n_refs = Cfg::n_in + Cfg::n_out;

    value_pipeline(Body body, const Cfg& cfg, typename Cfg::extra_values extra)
        : body_(std::move(body)), cfg_(cfg), extra_(std::move(extra)) {}

    /// This pipeline's windows made once in a VMEM scratch buffer (make_allocations, S53): pass
    /// them last, pipe(refs..., allocs); `window<K>(slot)` is input or output K's slot as a ref
    /// (to prefill a prefetched input's first slots, S55).
    class allocations : public detail::allocations_base {
    public:
        template <std::size_t K>
        auto window(int slot) const {
            using A = operand_t<K>;
            using T = typename A::value_type;
            if (slot < 0 || slot >= buffers[K])
                throw error("R2", "allocations::window<" + std::to_string(K) + ">",
                            "slot " + std::to_string(slot) + " of " + std::to_string(buffers[K]),
                            "name a slot in [0, buffer count) of a windowed operand");
            std::array<index_t, A::kernel_rank> shape{};
            for (std::size_t d = 0; d < A::kernel_rank; ++d) shape[d] = window_shapes[K][d];
            return ref<T, typename A::memory, A::kernel_rank>(
                reinterpret_cast<T*>(slots[K][static_cast<std::size_t>(slot)]), shape);
        }

    private:
        friend class value_pipeline;
        std::array<std::array<index_t, max_rank>, max_operands> window_shapes{};
    };

    /// make_allocations (upstream's, S53): lays this pipeline's windows for `refs` (inputs then
    /// outputs) out in `scratch`, a VMEM scratch ref of the enclosing kernel (24 says how many
    /// bytes it needs when it is too small), to be reused by every invocation.
    template <class S, class... Refs>
    allocations make_allocations(const S& scratch, const Refs&... refs) const {
        static_assert(
            sizeof...(Refs) == n_refs,
            "ptpu[ARG1] make_allocations: pass the scratch, then one ref per In operand, then one per Out "
            "operand");
        static_assert(
            std::is_same_v<typename detail::source_of<S>::space, vmem>,
            "ptpu[29] make_allocations: the allocations live in a VMEM scratch ref of the enclosing kernel");
        detail::invocation in("make_allocations");
        allocations a;
        if (!prepare(in, refs...)) return a;  // this core runs none of the grid
        detail::lay_out_in(a, in.p, in.plan(detail::value_inner_maps()), scratch);
        for (std::size_t k = 0; k < n_refs; ++k) a.window_shapes[k] = window_shape(in.p.ops[k]);
        return a;
    }

    /// Runs the pipeline over `refs`: the inputs' then the outputs' source refs (any/hbm, or
    /// VMEM/SMEM refs a spec of their space aliases), then, optionally, its allocations.
    template <class... Args>
    void operator()(const Args&... args) const {
        if constexpr (sizeof...(Args) == n_refs + 1)
            static_assert(
                std::is_same_v<std::remove_cvref_t<std::tuple_element_t<n_refs, std::tuple<Args...>>>,
                               allocations>,
                "ptpu[ARG1] emit_pipeline: pass one ref per In operand, then one per Out operand, then "
                "(optionally) this pipeline's allocations");
        else
            static_assert(sizeof...(Args) == n_refs,
                          "ptpu[ARG1] emit_pipeline: pass one ref per In operand, then one per Out operand");
        if constexpr (sizeof...(Args) == n_refs ||
                      sizeof...(Args) == n_refs + 1)  // (else: the one error above)
            detail::invoke_pipeline<n_refs>(
                [&](const auto* alloc, const auto&... refs) { run(alloc, refs...); }, args...);
    }

    [[nodiscard]] const Cfg& config() const { return cfg_; }

private:
    template <class... Refs>
    void run(const detail::allocations_base* alloc, const Refs&... refs) const {
        detail::invocation in("emit_pipeline");
        if (!prepare(in, refs...)) return;  // this core runs none of the grid
        if (alloc == nullptr) detail::require_allocations(in.p);
        auto invoke = [&](core_memory& m) {
            call_body(m, in.p, in.mctx, std::index_sequence_for<Refs...>{}, refs...);
        };
        in.run(detail::value_inner_maps(), invoke, cfg_.options.trace, alloc, std::is_empty_v<Body>);
    }

    // The extents of operand d's window as the body sees it: the block without its squeezed
    // dims, or the whole source for a full block.
    static std::array<index_t, max_rank> window_shape(const operand_desc& d) {
        std::array<index_t, max_rank> shape{};
        std::size_t j = 0;
        for (int i = 0; i < (d.full_block ? d.rank : d.block_rank); ++i) {
            const auto u = static_cast<std::size_t>(i);
            if (d.full_block)
                shape[j++] = d.shape[u];
            else if (d.block[u].kind != dim_kind::squeezed)
                shape[j++] = d.block[u].size;
        }
        return shape;
    }

    template <std::size_t K>
    using operand_t = std::tuple_element_t<K, operands>;
    [[nodiscard]] const typename Cfg::spec& spec_of(std::size_t k) const {
        return k < n_in ? cfg_.in[k] : cfg_.out[k - n_in];
    }

    template <class... Refs>
    bool prepare(detail::invocation& in, const Refs&... refs) const {
        const void* user = nullptr;
        if constexpr (!std::is_void_v<ctx_t>) user = &extra_;
        if (!in.begin(cfg_.grid.begin(), cfg_.grid.size(), cfg_.options, static_cast<int>(Cfg::n_in),
                      static_cast<int>(Cfg::n_out), user))
            return false;
        in.mctx.n_in = in.p.n_in;
        in.mctx.value_maps = in.value_maps.data();
        const auto g = static_cast<std::size_t>(cfg_.grid.size());
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((in.p.ops[K] = describe<K, operand_t<K>>(spec_of(K), refs, g),
              in.value_maps[K] = map_of(spec_of(K), g),
              in.hbm[K] = const_cast<void*>(static_cast<const void*>(refs.data()))),
             ...);
        }(std::index_sequence_for<Refs...>{});
        return true;
    }

    static block_fn map_of(const typename Cfg::spec& s, std::size_t g) {
        const auto& m = s.index_map;
        return (m.zero || g >= m.eval.size() || m.eval[g] == nullptr) ? &detail::eval_zero_map : m.eval[g];
    }

    template <std::size_t K, class A, class Src>
    static operand_desc describe(const typename Cfg::spec& s, const Src& r, std::size_t g) {
        using src = detail::source_of<Src>;
        static_assert(std::is_same_v<typename src::value_type, typename A::value_type> && src::rank == A::rank,
                      "ptpu[ARG1] emit_pipeline: a source ref of another dtype or rank than its Operand");
        static_assert(detail::check_inner_space_kinds<typename A::memory, typename src::named>());
        constexpr bool aliased = detail::aliased_space<typename A::memory, typename src::space>();
        constexpr bool input = K < n_in;
        return detail::describe_value_operand(
            s.shape, s.block, s.values(A::memory::kind), s.index_map.eval.data(), s.index_map.returned.data(),
            g, input, static_cast<int>(input ? K : K - n_in), dtype_of<typename A::value_type>, A::rank,
            A::kernel_rank, aliased, r.shape().data(), r.strides().data());
    }

    template <std::size_t... K, class... Refs>
    void call_body(core_memory& m, const pipeline_desc& p, const detail::inner_map_ctx& mctx,
                   std::index_sequence<K...>, const Refs&... refs) const {
        using result = decltype(body_(window<K, operand_t<K>>(m, p, mctx, refs)...));
        static_assert(std::is_void_v<result>,
                      "ptpu[12] emit_pipeline: the inner body should return void; write results to the output refs");
        // Braces make the windows in operand order (an aliased view out of range names the first).
        std::apply(body_, std::tuple{window<K, operand_t<K>>(m, p, mctx, refs)...});
    }

    // The body's ref of operand K: its window's current slot (the block without its squeezed
    // dims; the whole source for a full block), or for an aliased operand the view of the
    // source's block at this inner step (S17), read-only over a read-only source (R4).
    template <std::size_t K, class A, class Src>
    static auto window(core_memory& m, const pipeline_desc& p, const detail::inner_map_ctx& mctx, const Src& src) {
        using T = typename A::value_type;
        using src_t = detail::source_of<Src>;
        constexpr detail::ref_label who{K < n_in ? detail::ref_label::kind::input : detail::ref_label::kind::output,
                                        static_cast<std::uint8_t>(K < n_in ? K : K - n_in)};
        const operand_desc& d = p.ops[K];
        std::array<index_t, A::kernel_rank> shape{};
        if constexpr (detail::aliased_space<typename A::memory, typename src_t::space>()) {
            using V = std::conditional_t<src_t::read_only, const T, T>;
            using W = ref<V, typename A::memory, A::kernel_rank>;
            T* base = const_cast<T*>(src.data());
            if (d.full_block) return W(base, src.shape(), src.strides()).labelled(who);
            const kernel_context& c = detail::require_context("emit_pipeline");
            const index_tuple<max_rank> b = detail::value_inner_maps()[K](c.inner_point.data(), &mctx);
            constexpr bool input = K < n_in;
            const detail::alias_slice a = detail::alias_block(d.block.data(), d.block_rank, b, src.shape().data(),
                                                              src.strides().data(), input,
                                                              static_cast<int>(input ? K : K - n_in));
            std::array<index_t, A::kernel_rank> strides{};
            for (std::size_t j = 0; j < A::kernel_rank; ++j) {
                shape[j] = a.shape[j];
                strides[j] = a.strides[j];
            }
            return W(base + a.offset, shape, strides).labelled(who);
        } else {
            using W = ref<T, typename A::memory, A::kernel_rank>;
            const std::array<index_t, max_rank> w = window_shape(d);
            for (std::size_t j = 0; j < A::kernel_rank; ++j) shape[j] = w[j];
            return W(reinterpret_cast<T*>(m.slots[K][static_cast<std::size_t>(m.cur[K])]), shape).labelled(who);
        }
    }

    Body body_;
    Cfg cfg_;
    typename Cfg::extra_values extra_;
};

/// emit_pipeline with a configuration given as a value (dynamic_pipeline): the inner body gets
/// one ref per operand (inputs then outputs) of its Operand's type, extents at run time; `extra`
/// are the values the index maps take after the grid indices (the config's Extra<X...>).
namespace detail {
template <class T>
inline constexpr bool is_dynamic_pipeline = false;
template <class... Opts>
inline constexpr bool is_dynamic_pipeline<dynamic_pipeline<Opts...>> = true;
}  // namespace detail

template <class Body, class Cfg, class... X>
requires detail::is_dynamic_pipeline<Cfg>
auto emit_pipeline(Body body, const Cfg& cfg, X&&... extra) {
    static_assert(sizeof...(X) == std::tuple_size_v<typename Cfg::extra_values>,
                  "ptpu[ARG1] emit_pipeline: pass one value per type of the config's Extra<...>");
    return value_pipeline<Body, Cfg>(std::move(body), cfg, typename Cfg::extra_values(std::forward<X>(extra)...));
}

namespace detail {
template <class A>
inline constexpr bool has_window = !windowless_space<typename A::memory>;

// The operands of a pack that have a window, in order, as a tuple type.
template <class... A>
using windowed_t =
    decltype(std::tuple_cat(std::conditional_t<has_window<A>, std::tuple<A>, std::tuple<>>{}...));
template <template <class...> class H, class Tuple>
struct holder_of;
template <template <class...> class H, class... A>
struct holder_of<H, std::tuple<A...>> {
    using type = H<A...>;
};

// dynamic_call::custom_buffered: the pipeline its outer body runs (the call's specs as they are:
// same Operand types, same index maps, the scalar-prefetch refs as the maps' extra values). The
// operands with a window go through it; an any/hbm one has none, and the body gets its whole
// array beside the windows, as a top-level call gives it.
template <class... I, class... O, class... P>
struct custom_buffered<pack<I...>, pack<O...>, pack<P...>> {
    using pipe = dynamic_pipeline<typename holder_of<In, windowed_t<I...>>::type,
                                  typename holder_of<Out, windowed_t<O...>>::type,
                                  Extra<ref<const typename P::value_type, smem, P::rank>...>>;
    /// The pipeline's inputs.
    static constexpr int n_in = (0 + ... + static_cast<int>(has_window<I>));
    /// Operand k of the call (inputs then outputs): its place among the pipeline's refs (inputs
    /// then outputs), or -1 when it has no window.
    static constexpr std::array<int, sizeof...(I) + sizeof...(O)> place = [] {
        std::array<int, sizeof...(I) + sizeof...(O)> a{};
        std::size_t k = 0;
        int next = 0;
        ((a[k++] = has_window<I> ? next++ : -1), ...);
        ((a[k++] = has_window<O> ? next++ : -1), ...);
        return a;
    }();
};
}  // namespace detail

}  // namespace ptpu
