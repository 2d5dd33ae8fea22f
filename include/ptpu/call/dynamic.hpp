// Defines dynamic_call<In<Operand...>, Out<Operand...>, ...>: a pallas_call whose configuration
// (grid, array and block shapes, index maps, buffer counts, semantics, chip, VMEM limit, scratch
// shapes, aliases) is a value set at run time, while the kernel's signature (each operand's
// element type, rank, memory space and ref rank) stays a type, so the same generic body runs on it. It
// describes the call as the same call_desc and block_fn maps as pallas_call, so the same planner
// checks the same rules (raised as ptpu::error with the static rule ids) and the same runner and
// timing model run it: a sweep changes block sizes in a loop with one instantiation.
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
#include "ptpu/call/dynamic_spec.hpp"
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

/// A pallas_call configured at run time. Options (types), in any order: In<Operand...>,
/// Out<Operand...>, ScalarPrefetch<Operand...>, ScratchShapes<Operand...>; everything else is a
/// member set before the call:
///
///     using Add = dynamic_call<In<Operand<float, 2>, Operand<float, 2>>, Out<Operand<float, 2>>>;
///     Add add;
///     add.grid = {4};
///     add.in[0] = add.in[1] = add.out[0] = {.shape = {1024, 512}, .block = {256, 512},
///                                           .index_map = [](index_t i) { return idx(i, 0); }};
///     auto [z, report] = add(body, x, y);
///
/// Each call describes the configuration and plans it with the same planner as pallas_call
/// (its rules raised as ptpu::error before any byte moves, S51), then runs it with the same runner
/// and timing model. The body gets refs of the Operand types with run-time extents.
template <class... Opts>
struct dynamic_call {
    static_assert((detail::is_dynamic_option<Opts> && ...),
                  "ptpu[10] dynamic_call: options are In<Operand...>, Out<Operand...>, ScalarPrefetch<Operand...> "
                  "and ScratchShapes<Operand...>; the grid, shapes, chip and the rest are members set at run time");
    using ins = detail::listed_t<In, Opts...>;
    using outs = detail::listed_t<Out, Opts...>;
    using prefetch_ops = detail::listed_t<ScalarPrefetch, Opts...>;
    using scratch_ops = detail::listed_t<ScratchShapes, Opts...>;
    static_assert(
        detail::at_most_once<In, Opts...> && detail::at_most_once<Out, Opts...> &&
            detail::at_most_once<ScalarPrefetch, Opts...> && detail::at_most_once<ScratchShapes, Opts...>,
        "ptpu[10] dynamic_call: an option is given twice; give at most one In, Out, ScalarPrefetch and "
        "ScratchShapes");
    static_assert(detail::all_operands<ins> && detail::all_operands<outs> && detail::all_operands<prefetch_ops> &&
                      detail::all_operands<scratch_ops>,
                  "ptpu[10] dynamic_call: In, Out, ScalarPrefetch and ScratchShapes list Operand<T, Rank, Space> "
                  "types (the shapes are values)");
    using ctx_type =
        typename detail::array_pack_ctx<prefetch_ops>::type;  // read-only prefetch refs (S46, S51)
    using spec = dynamic_spec<ctx_type>;

    static constexpr std::size_t n_in = ins::size;
    static constexpr std::size_t n_out = outs::size;
    static constexpr std::size_t n_prefetch = prefetch_ops::size;
    static constexpr std::size_t n_scratch = scratch_ops::size;
    static_assert(n_in + n_out <= max_operands, "ptpu[V1] dynamic_call: more than max_operands (16) operands");
    static_assert(n_prefetch <= max_operands && n_scratch <= max_scratch,
                  "ptpu[V1] dynamic_call: more than 16 scalar-prefetch or scratch operands");

    /// Grid (S12); empty: one invocation.
    dims_value grid{};
    /// dimension_semantics (S43); empty: none given.
    value_list<dim_semantics, max_rank> semantics{};
    /// The chip the call is checked against and timed on.
    ptpu::chip chip = tpu::default_chip;
    /// vmem_limit_bytes; none: the chip's scoped limit (check 24).
    std::optional<index_t> vmem_limit{};
    std::array<spec, n_in> in{};
    std::array<spec, n_out> out{};
    /// The shape of each ScratchShapes buffer.
    std::array<dims_value, n_scratch> scratch{};
    /// input_output_aliases, {input, output} pairs (S50).
    value_list<std::pair<int, int>, max_operands> aliases{};
    /// How the call runs (timing only, timeline, …), as pallas_call's.
    run_options options{};
    /// Runs the grid the way upstream gives a kernel more than two buffers or lookahead (the
    /// custom-buffered pattern): a gridless call over ANY refs (one invocation per core, the grid
    /// split over a chip's cores by core_axis when `semantics` has a parallel dim) whose body runs
    /// one emit_pipeline with this call's grid and specs. Buffer counts up to 8 and lookahead
    /// are then allowed for inputs (outputs: 1 or 2, rule 27); the body is the same, its
    /// program_id and num_programs answer for the pipeline's grid. An operand without a window
    /// (any/hbm) stays out of the pipeline; the body gets its whole array, as without this.
    bool custom_buffered = false;

    /// The call as the planner sees it, with the scalar-prefetch arrays' shapes (V1 for a shape
    /// that does not fit its Operand).
    [[nodiscard]] call_desc describe(const std::array<dims_value, n_prefetch>& prefetch_shapes = {}) const {
        call_desc c = detail::describe_dynamic_call(grid, semantics, chip, vmem_limit, n_prefetch);
        describe_prefetch(c, prefetch_shapes, prefetch_ops{});
        c.n_in = static_cast<int>(n_in);
        c.n_out = static_cast<int>(n_out);
        describe_ops(c, ins{}, outs{});
        c.n_scratch = static_cast<int>(n_scratch);
        describe_scratch(c, scratch_ops{});
        detail::describe_dynamic_aliases(c, aliases);
        return c;
    }

    /// The index maps as the planner sees them, for the grid's rank (inputs then outputs).
    [[nodiscard]] std::array<block_fn, max_operands> maps() const {
        std::array<block_fn, max_operands> m{};
        const auto g = static_cast<std::size_t>(grid.size());
        for (std::size_t k = 0; k < n_in + n_out; ++k) {
            const dynamic_map<ctx_type>& im = spec_of(k).index_map;
            m[k] = (im.zero || im.eval[g] == nullptr) ? &detail::eval_zero_map : im.eval[g];
        }
        return m;
    }

    /// The plan's summary (`problem` is the first broken rule, not raised). Arguments: the
    /// scalar-prefetch arrays, when the maps read them.
    template <class... Prefetch>
    [[nodiscard]] plan_info info(const Prefetch&... pf) const {
        return with_plan_input([&](const call_desc& c, const block_fn* m,
                                   const void* ctx) { return plan_of(c, m, ctx, [](const event&) {}); },
                               pf...);
    }
    /// The schedule, event by event (ptpu::error with the broken rule's id when there is one).
    template <class... Prefetch>
    [[nodiscard]] std::vector<event> events(const Prefetch&... pf) const {
        return with_plan_input(
            [&](const call_desc& c, const block_fn* m, const void* ctx) {
                std::vector<event> ev;
                const plan_info i = plan_of(c, m, ctx, [&](const event& e) { ev.push_back(e); });
                raise(i.problem, c);
                return ev;
            },
            pf...);
    }

    /// Runs the kernel: `body(prefetch..., ins..., outs..., scratch...)` (S46) on real data, and the
    /// timing model on the chosen chip. Arguments: the scalar-prefetch arrays, then the inputs
    /// (host_array, host_view, or a contiguous range of the dtype, of the configured shapes).
    /// Returns the outputs and the report: `auto [z, report] = call(body, x, y);`. Each output is a
    /// host_array<dyn_array<T, rank>> of the configured shape: z(i, j), z.shape(), and a
    /// contiguous row-major range (z.data(), z.size(), z[k], equal to a std::vector of its elements).
    template <class Body, class... Args>
    auto operator()(Body&& body, Args&&... args) const {
        static_assert(sizeof...(Args) == n_prefetch + n_in,
                      "ptpu[ARG1] dynamic_call: pass the scalar-prefetch arrays, then one argument per input");
        auto outs_v = make_outputs(outs{});
        std::array<void*, max_operands> out_ptrs{};
        std::apply(
            [&](auto&... o) {
                std::size_t k = 0;
                ((out_ptrs[k++] = o.data()), ...);
            },
            outs_v);
        report rep = execute(body, std::forward_as_tuple(args...), out_ptrs, options);
        return std::tuple_cat(std::move(outs_v), std::tuple<report>{std::move(rep)});
    }

    /// Runs the kernel writing the outputs into memory the caller owns: `outputs` is a tuple of
    /// writable contiguous ranges of the dtype or host_views (e.g. `std::tie(z)`), of the Out shapes.
    template <class... O, class Body, class... Args>
    report into(std::tuple<O...> outputs, Body&& body, Args&&... args) const {
        static_assert(sizeof...(O) == n_out, "ptpu[ARG1] dynamic_call::into: give one output buffer per Out operand");
        static_assert(sizeof...(Args) == n_prefetch + n_in,
                      "ptpu[ARG1] dynamic_call: pass the scalar-prefetch arrays, then one argument per input");
        std::array<void*, max_operands> out_ptrs{};
        bind_outputs(outputs, out_ptrs, outs{}, std::index_sequence_for<O...>{});
        return execute(body, std::forward_as_tuple(args...), out_ptrs, options);
    }

    /// Predicts the time without any data (a timing-only run that takes only the scalar-prefetch
    /// arrays), as pallas_call::predict. PRED1 when an operand has an SMEM window.
    template <class Body, class... Prefetch>
    report predict(Body&& body, Prefetch&&... pf) const {
        static_assert(sizeof...(Prefetch) == n_prefetch,
                      "ptpu[ARG1] dynamic_call::predict: pass exactly the scalar-prefetch arrays");
        if (has_smem_window(ins{}, outs{}))
            throw error("PRED1", "dynamic_call::predict",
                        "an operand has an SMEM window, whose data scalar code reads",
                        "run with timing_only and real inputs instead");
        run_options opt = options;
        opt.timing_only = true;
        [[maybe_unused]] const std::array<detail::absent_input, n_in + 1> absent{};
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return execute(body, std::tuple_cat(std::forward_as_tuple(pf...),
                                                std::tuple<const detail::absent_input&>(absent[K])...),
                           std::array<void*, max_operands>{}, opt);
        }(std::make_index_sequence<n_in>{});
    }

private:
    [[nodiscard]] const spec& spec_of(std::size_t k) const { return k < n_in ? in[k] : out[k - n_in]; }

    // The plan info() and events() give: the call's, or with custom_buffered its inner
    // pipeline's, planned as emit_pipeline plans it over the whole grid (before a core split).
    template <class Emit>
    plan_info plan_of(const call_desc& c, const block_fn* m, const void* ctx, Emit&& emit) const {
        if (!custom_buffered) return ptpu::plan(c, m, ctx, emit);
        pipeline_desc p = c;
        p.has_semantics = false;
        p.cores = 1;
        return plan_pipeline(p, emit_pipeline_caps, chip.generation, m, ctx, emit);
    }

    template <class... P>
    static void describe_prefetch(call_desc& c, const std::array<dims_value, n_prefetch>& shapes, detail::pack<P...>) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (detail::describe_prefetch_array(c, shapes[K], P::rank,
                                             itemsize(dtype_of<typename P::value_type>), K),
             ...);
        }
        (std::index_sequence_for<P...>{});
    }

    template <class A>
    operand_desc describe_op(const spec& s, operand_role role, std::size_t k) const {
        static_assert(rules::require_block_space<typename A::memory>());
        return detail::describe_dynamic_operand(
            s.shape, s.block, s.values(A::memory::kind), s.index_map.eval.data(), s.index_map.returned.data(),
            static_cast<std::size_t>(grid.size()), role, k, dtype_of<typename A::value_type>, A::rank,
            A::kernel_rank, !windowless_space<typename A::memory>);
    }
    template <class... I, class... O>
    void describe_ops(call_desc& c, detail::pack<I...>, detail::pack<O...>) const {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((c.ops[K] = describe_op<I>(in[K], operand_role::input, K)), ...);
        }(std::index_sequence_for<I...>{});
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((c.ops[n_in + K] = describe_op<O>(out[K], operand_role::output, K)), ...);
        }(std::index_sequence_for<O...>{});
    }
    template <class... S>
    void describe_scratch([[maybe_unused]] call_desc& c, detail::pack<S...>) const {
        [[maybe_unused]] std::size_t k = 0;
        (
            [&] {
                static_assert(rules::require_scratch<typename S::memory>());
                detail::check_dims(scratch[k], S::rank, "scratch", k);
                scratch_desc& d = c.scratch[k];
                d.space = S::memory::kind;
                if constexpr (S::memory::kind == space_kind::semaphore)
                    d.type = dtype::i32;  // a semaphore's count
                else
                    d.type = dtype_of<typename S::value_type>;
                d.rank = static_cast<int>(S::rank);
                for (std::size_t i = 0; i < S::rank; ++i) d.shape[i] = scratch[k][i];
                ++k;
            }(),
            ...);
    }

    [[nodiscard]] std::array<scan_fn, max_operands> scans() const {
        std::array<scan_fn, max_operands> s{};
        const auto g = static_cast<std::size_t>(grid.size());
        for (std::size_t k = 0; k < n_in + n_out; ++k) {
            const dynamic_map<ctx_type>& im = spec_of(k).index_map;
            s[k] = (im.zero || im.scan[g] == nullptr) ? &detail::scan_zero_map : im.scan[g];
        }
        return s;
    }

    template <class... I, class... O>
    static bool has_smem_window(detail::pack<I...>, detail::pack<O...>) {
        return ((I::memory::kind == space_kind::smem) || ... || false) ||
               ((O::memory::kind == space_kind::smem) || ... || false);
    }

    // The prefetch views, the description and the maps' context for a plan without a run.
    template <class F, class... Prefetch>
    auto with_plan_input(F&& f, const Prefetch&... pf) const {
        static_assert(sizeof...(Prefetch) == n_prefetch,
                      "ptpu[ARG1] dynamic_call: pass exactly the scalar-prefetch arrays");
        auto pf_views = prefetch_views(std::forward_as_tuple(pf...), std::make_index_sequence<n_prefetch>{});
        const call_desc c = describe(shapes_of(pf_views));
        const auto m = maps();
        if constexpr (n_prefetch == 0) {
            return f(c, m.data(), nullptr);
        } else {
            const auto ctx = ctx_of(pf_views, std::make_index_sequence<n_prefetch>{});
            return f(c, m.data(), &ctx);
        }
    }

    template <class Tuple, std::size_t... K>
    static auto prefetch_views(Tuple&& args, std::index_sequence<K...>) {
        return std::tuple{prefetch_view<prefetch_t<K>>(std::get<K>(args), K)...};
    }
    template <class P>
    struct to_tuple;
    template <class... P>
    struct to_tuple<detail::pack<P...>> {
        using type = std::tuple<P...>;
    };
    template <std::size_t K>
    using prefetch_t = std::tuple_element_t<K, typename to_tuple<prefetch_ops>::type>;

    template <class P, class X>
    static host_view<const typename P::value_type> prefetch_view(const X& x, std::size_t k) {
        const dims_value s = detail::prefetch_shape<typename P::value_type, P::rank>(x, k);
        return detail::dynamic_view<typename P::value_type, P::rank>(x, s, "scalar-prefetch", k);
    }
    template <class Views>
    static std::array<dims_value, n_prefetch> shapes_of(const Views& v) {
        std::array<dims_value, n_prefetch> s{};
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((s[K] = shape_list(std::get<K>(v))), ...);
        }(std::make_index_sequence<n_prefetch>{});
        return s;
    }
    template <class V>
    static dims_value shape_list(const V& v) {
        dims_value s;
        for (int d = 0; d < v.rank; ++d) s.push_back(v.shape[static_cast<std::size_t>(d)]);
        return s;
    }
    template <class Views, std::size_t... K>
    static auto ctx_of(const Views& v, std::index_sequence<K...>) {
        return ctx_type{ref<const typename prefetch_t<K>::value_type, smem, prefetch_t<K>::rank>(
                            std::get<K>(v).data, rank_shape<prefetch_t<K>::rank>(std::get<K>(v)))
                            .labelled(label(detail::ref_label::kind::prefetch, K))...};
    }
    template <std::size_t R>
    std::array<index_t, R> out_shape(std::size_t k) const {
        std::array<index_t, R> s{};
        for (std::size_t d = 0; d < R; ++d) s[d] = out[k].shape[d];
        return s;
    }
    template <std::size_t R, class V>
    static std::array<index_t, R> rank_shape(const V& v) {
        std::array<index_t, R> s{};
        for (std::size_t d = 0; d < R; ++d) s[d] = v.shape[d];
        return s;
    }
    static constexpr detail::ref_label label(detail::ref_label::kind what, std::size_t k) {
        return {what, static_cast<std::uint8_t>(k)};
    }

    template <class... A>
    auto make_outputs(detail::pack<A...>) const {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            (detail::check_dims(out[K].shape, A::rank, "output", K), ...);
            ((void)detail::elems_of<typename A::value_type>(out[K].shape, "output", K), ...);  // V3 first
            return std::tuple<host_array<dyn_array<typename A::value_type, A::rank>>...>{
                host_array<dyn_array<typename A::value_type, A::rank>>(out_shape<A::rank>(K))...};
        }(std::index_sequence_for<A...>{});
    }

    template <class Tuple, class... O, std::size_t... K>
    void bind_outputs(Tuple& outputs, std::array<void*, max_operands>& ptrs, detail::pack<O...>,
                      std::index_sequence<K...>) const {
        auto one = [&]<class A>(std::type_identity<A>, auto& x, std::size_t k) {
            using T = typename A::value_type;
            using U = std::remove_cvref_t<decltype(x)>;
            if constexpr (std::is_same_v<U, host_view<T>>) {
                ptrs[k] = const_cast<T*>(detail::dynamic_view<T, A::rank>(x, out[k].shape, "output", k).data);
            } else if constexpr (requires { std::span<T>(x); }) {
                ptrs[k] = const_cast<T*>(
                    detail::dynamic_view<T, A::rank>(std::span<T>(x), out[k].shape, "output", k).data);
            } else {
                static_assert(sizeof(U) == 0,
                              "ptpu[ARG1] dynamic_call::into: an output must be a writable host_view or a writable "
                              "contiguous range of the dtype (std::vector<T>&, std::span<T>)");
            }
        };
        (one(std::type_identity<O>{}, std::get<K>(outputs), K), ...);
    }

    template <class Body, class ArgTuple>
    report execute(Body& body, ArgTuple args, const std::array<void*, max_operands>& out_ptrs,
                   const run_options& opt) const {
        auto pf_views = prefetch_views(args, std::make_index_sequence<n_prefetch>{});
        const call_desc desc = describe(shapes_of(pf_views));
        const auto in_views = [&]<std::size_t... K>(std::index_sequence<K...>) {
            return std::tuple{detail::dynamic_view<typename in_t<K>::value_type, in_t<K>::rank>(
                std::get<n_prefetch + K>(args), in[K].shape, "input", K)...};
        }
        (std::make_index_sequence<n_in>{});
        return execute_views(body, desc, pf_views, in_views, out_ptrs, opt);
    }
    // The run on the arguments as views (the same types whatever the caller passed, or nothing
    // but shapes for predict): one instantiation per body.
    template <class Body, class PfViews, class InViews>
    report execute_views(Body& body, const call_desc& desc, const PfViews& pf_views, const InViews& in_views,
                         const std::array<void*, max_operands>& out_ptrs, const run_options& opt) const {
        // HBM base pointers per operand (S50's aliases are applied once the plan holds).
        std::array<void*, max_operands> hbm{};
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((hbm[K] = const_cast<void*>(static_cast<const void*>(std::get<K>(in_views).data))), ...);
        }(std::make_index_sequence<n_in>{});
        for (std::size_t k = 0; k < n_out; ++k) hbm[n_in + k] = out_ptrs[k];
        const std::array<block_fn, max_operands> m = maps();
        const std::array<scan_fn, max_operands> sc = scans();
        const void* ctx_ptr = nullptr;
        [[maybe_unused]] auto ctx_value = [&] {
            if constexpr (n_prefetch > 0)
                return ctx_of(pf_views, std::make_index_sequence<n_prefetch>{});
            else
                return 0;
        }();
        if constexpr (n_prefetch > 0) ctx_ptr = &ctx_value;
        std::array<const void*, max_operands> prefetch{};
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((prefetch[K] = static_cast<const void*>(std::get<K>(pf_views).data)), ...);
        }(std::make_index_sequence<n_prefetch>{});
        if (custom_buffered) return execute_custom(body, desc, pf_views, ctx_value, hbm, prefetch, opt);
        // The same planner as pallas_call's; its checks run here, before any byte moves (S51).
        const plan_tables tables = detail::plan_call(desc, m.data(), ctx_ptr, sc.data(), opt.memory_budget);
        detail::check_distinct_buffers(desc, hbm, "dynamic_call");
        detail::alias_hbm(desc, hbm);
        auto invoke = [&](core_memory& mem) { call_body(body, mem, desc, pf_views, hbm); };
        // Only this closure depends on the body; the run itself is compiled once (call/run.hpp).
        const body_call call{[](void* obj, core_memory& mem) { (*static_cast<decltype(invoke)*>(obj))(mem); },
                             &invoke};
        return detail::run_call(desc, tables, m.data(), ctx_ptr, hbm, prefetch, call, opt);
    }

    // The custom-buffered run: the outer call (gridless, or one step per core) over ANY arrays,
    // whose body emits this call's grid and specs as one pipeline (call/dynamic_pipeline.hpp)
    // and runs the body in it with the call's prefetch and scratch refs.
    template <class Body, class PfViews, class Ctx>
    report execute_custom(Body& body, const call_desc& desc, const PfViews& pf, const Ctx& ctx,
                          std::array<void*, max_operands> hbm,
                          const std::array<const void*, max_operands>& prefetch,
                          const run_options& opt) const {
        using lowered = detail::custom_buffered<ins, outs, prefetch_ops>;
        typename lowered::pipe pipe;
        pipe.grid = grid;
        for (std::size_t k = 0; k < n_in + n_out; ++k) {
            const int at = lowered::place[k];
            if (at < 0) continue;  // no window: the body gets the whole array
            if (at < lowered::n_in)
                pipe.in[static_cast<std::size_t>(at)] = in[k];
            else
                pipe.out[static_cast<std::size_t>(at - lowered::n_in)] = out[k - n_in];
        }
        bool parallel_dim = false;
        for (const dim_semantics d : semantics) {
            parallel_dim = parallel_dim || d == dim_semantics::parallel;
            pipe.options.semantics.v[static_cast<std::size_t>(pipe.options.semantics.rank++)] = d;
        }
        const bool split = chip.pallas_cores() > 1 && parallel_dim;
        if (split) pipe.options.core_axis = 0;
        const call_desc outer = detail::custom_buffered_outer(desc, split ? chip.pallas_cores() : 1);
        std::array<block_fn, max_operands> zero{};
        std::array<scan_fn, max_operands> zero_scan{};
        zero.fill(&detail::eval_zero_map);
        zero_scan.fill(&detail::scan_zero_map);
        const void* ctx_ptr = n_prefetch > 0 ? static_cast<const void*>(&ctx) : nullptr;
        const plan_tables tables =
            detail::plan_call(outer, zero.data(), ctx_ptr, zero_scan.data(), opt.memory_budget);
        detail::check_distinct_buffers(outer, hbm, "dynamic_call");
        detail::alias_hbm(outer, hbm);
        auto invoke = [&](core_memory& mem) {
            detail::require_context("dynamic_call").grid_from_pipeline = true;
            call_custom(body, mem, outer, pf, hbm, pipe, ctx, prefetch_ops{},
                        std::make_index_sequence<n_prefetch>{}, cat(ins{}, outs{}),
                        std::make_index_sequence<n_in + n_out>{}, scratch_ops{},
                        std::make_index_sequence<n_scratch>{});
        };
        const body_call call{[](void* obj, core_memory& mem) { (*static_cast<decltype(invoke)*>(obj))(mem); },
                             &invoke};
        return detail::run_call(outer, tables, zero.data(), ctx_ptr, hbm, prefetch, call, opt);
    }
    // The outer body: the pipeline over the ANY arrays, its body the call's with the windows.
    template <class Body, class PfViews, class Pipe, class Ctx, class... P, std::size_t... PK, class... A,
              std::size_t... AK, class... S, std::size_t... SK>
    void call_custom(Body& body, core_memory& m, const call_desc& outer, const PfViews& pf,
                     const std::array<void*, max_operands>& hbm, const Pipe& pipe, const Ctx& ctx,
                     detail::pack<P...>, std::index_sequence<PK...>, detail::pack<A...>,
                     std::index_sequence<AK...>, detail::pack<S...>, std::index_sequence<SK...>) const {
        using lowered = detail::custom_buffered<ins, outs, prefetch_ops>;
        auto inner = [&](const auto&... windows) {
            const auto w = std::tie(windows...);
            run_body(body, prefetch_ref<P, PK>(m, pf)..., custom_operand<A, AK, lowered>(w, m, outer, hbm)...,
                     scratch_ref<S, SK>(m)...);
        };
        auto emit = [&](const auto&... extra) { return emit_pipeline(inner, pipe, extra...); };
        const auto pipeline = [&] {
            if constexpr (n_prefetch > 0)
                return std::apply(emit, ctx);
            else
                return emit();
        }();
        std::apply(pipeline, std::tuple_cat(pipeline_ref<A, AK, lowered>(outer, hbm)...));
    }
    // Operand K in the custom-buffered body: its window, or its whole array when it has none.
    template <class A, std::size_t K, class Lowered, class W>
    static auto custom_operand(const W& windows, core_memory& m, const call_desc& outer,
                               const std::array<void*, max_operands>& hbm) {
        if constexpr (Lowered::place[K] >= 0)
            return std::get<static_cast<std::size_t>(Lowered::place[K])>(windows);
        else
            return operand_ref<A, K>(m, outer, hbm);
    }
    // Operand K as the pipeline's ref (its whole array, ANY), when it has a window.
    template <class A, std::size_t K, class Lowered>
    static auto pipeline_ref(const call_desc& outer, const std::array<void*, max_operands>& hbm) {
        if constexpr (Lowered::place[K] >= 0)
            return std::tuple{any_ref<A, K>(outer, hbm)};
        else
            return std::tuple<>{};
    }
    // Operand K's whole array as an ANY ref (read-only for an input, R4).
    template <class A, std::size_t K>
    static auto any_ref(const call_desc& d, const std::array<void*, max_operands>& hbm) {
        using T = std::conditional_t<(K < n_in), const typename A::value_type, typename A::value_type>;
        std::array<index_t, A::rank> shape{};
        for (std::size_t i = 0; i < A::rank; ++i) shape[i] = d.ops[K].shape[i];
        return ref<T, any, A::rank>(static_cast<T*>(hbm[K]), shape)
            .labelled(K < n_in ? label(detail::ref_label::kind::input, K)
                               : label(detail::ref_label::kind::output, K - n_in));
    }

    template <std::size_t K>
    using in_t = std::tuple_element_t<K, typename to_tuple<ins>::type>;

    // The refs a body gets: extents at run time where pallas_call's are static; a window's ref
    // has the Operand's kernel rank (its squeezed dims removed, S11).
    // An input without a window (any/hbm) is read-only (R4): its ref is the caller's array. The
    // aliases are run-time values here, so an aliased input is updated through its output's ref,
    // which is the same buffer.
    template <class A, std::size_t K = n_in>
    using operand_ref_t =
        ref<std::conditional_t<(K < n_in && windowless_space<typename A::memory>), const typename A::value_type,
                               typename A::value_type>,
            typename A::memory, A::kernel_rank>;
    template <class P>
    using prefetch_ref_t = ref<typename P::value_type, smem, P::rank>;
    template <class S>
    using scratch_ref_t = ref<typename S::value_type, typename S::memory, S::rank>;

    template <class A, std::size_t K>
    static operand_ref_t<A, K> operand_ref(core_memory& m, const call_desc& desc,
                                        const std::array<void*, max_operands>& hbm) {
        using T = typename A::value_type;
        constexpr detail::ref_label who =
            K < n_in ? label(detail::ref_label::kind::input, K) : label(detail::ref_label::kind::output, K - n_in);
        const operand_desc& o = desc.ops[K];
        std::array<index_t, A::kernel_rank> shape{};
        if constexpr (windowless_space<typename A::memory>) {
            for (std::size_t d = 0; d < A::kernel_rank; ++d) shape[d] = o.shape[d];
            return operand_ref_t<A, K>(static_cast<T*>(hbm[K]), shape).labelled(who);
        } else {
            std::size_t j = 0;
            for (std::size_t d = 0; d < A::rank; ++d)
                if (o.block[d].kind != dim_kind::squeezed) shape[j++] = o.block[d].size;
            return operand_ref_t<A, K>(reinterpret_cast<T*>(m.slots[K][static_cast<std::size_t>(m.cur[K])]), shape)
                .labelled(who);
        }
    }

    template <class Body, class PfViews>
    void call_body(Body& body, core_memory& m, const call_desc& desc, const PfViews& pf,
                   const std::array<void*, max_operands>& hbm) const {
        call_body_impl(body, m, desc, pf, hbm, prefetch_ops{}, std::make_index_sequence<n_prefetch>{},
                       cat(ins{}, outs{}), std::make_index_sequence<n_in + n_out>{}, scratch_ops{},
                       std::make_index_sequence<n_scratch>{});
    }
    template <class... I, class... O>
    static detail::pack<I..., O...> cat(detail::pack<I...>, detail::pack<O...>) {
        return {};
    }
    template <class Body, class PfViews, class... P, std::size_t... PK, class... A, std::size_t... AK, class... S,
              std::size_t... SK>
    void call_body_impl(Body& body, core_memory& m, const call_desc& desc, const PfViews& pf,
                        const std::array<void*, max_operands>& hbm, detail::pack<P...>, std::index_sequence<PK...>,
                        detail::pack<A...>, std::index_sequence<AK...>, detail::pack<S...>,
                        std::index_sequence<SK...>) const {
        using result = decltype(body(std::declval<prefetch_ref_t<P>>()..., std::declval<operand_ref_t<A, AK>>()...,
                                     std::declval<scratch_ref_t<S>>()...));
        static_assert(std::is_void_v<result>,
                      "ptpu[12] dynamic_call: the kernel body should return void; write results to the output refs");
        run_body(body, prefetch_ref<P, PK>(m, pf)..., operand_ref<A, AK>(m, desc, hbm)...,
                 scratch_ref<S, SK>(m)...);
    }
    // The body on its refs: one function both runs call (the call's own grid, custom_buffered's
    // pipeline), so the body is compiled once however many ways the call may run.
    template <class Body, class... R>
    [[gnu::noinline]] static void run_body(Body& body, const R&... refs) {
        body(refs...);
    }
    template <class P, std::size_t K, class PfViews>
    static prefetch_ref_t<P> prefetch_ref(const core_memory& m, const PfViews& pf) {
        return prefetch_ref_t<P>(reinterpret_cast<typename P::value_type*>(m.prefetch[K]),
                                 rank_shape<P::rank>(std::get<K>(pf)))
            .labelled(label(detail::ref_label::kind::prefetch, K));
    }
    template <class S, std::size_t K>
    scratch_ref_t<S> scratch_ref(const core_memory& m) const {
        return scratch_ref_t<S>(reinterpret_cast<typename scratch_ref_t<S>::value_type*>(m.scratch[K]),
                                scratch_shape<S::rank>(K))
            .labelled(label(detail::ref_label::kind::scratch, K));
    }
    template <std::size_t R>
    std::array<index_t, R> scratch_shape(std::size_t k) const {
        std::array<index_t, R> s{};
        for (std::size_t d = 0; d < R; ++d) s[d] = scratch[k][d];
        return s;
    }
};

}  // namespace ptpu

// custom_buffered's lowering: an inner pipeline configured by values.
#include "ptpu/call/dynamic_pipeline.hpp"
