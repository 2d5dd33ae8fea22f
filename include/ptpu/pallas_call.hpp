// Defines pallas_call<Options...>: the type that expands a static configuration into its
// schedule at compile time (checked with one static_assert per broken rule), and whose call
// operator runs the kernel on real data (real DMAs between host "HBM" arrays and per-core
// VMEM/SMEM arenas, the body on typed refs, Megacore cores each with their own pipeline, S44)
// while the timing model replays it on the chosen chip. This header composes the layers:
// spec → schedule → runtime (executor) → sim → report; none of them includes it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/runtime/context.hpp"
#include "ptpu/runtime/dma.hpp"
#include "ptpu/runtime/executor.hpp"
#include "ptpu/runtime/host_array.hpp"
#include "ptpu/runtime/ref.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/sim/engine.hpp"
#include "ptpu/spec/call.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/validate.hpp"

/// How much planning a static call may do at compile time, in grid steps × (operands + 1) (see
/// pallas_call::static_plan). Compilers bound the work of one constant evaluation (g++:
/// -fconstexpr-ops-limit, 2^25 by default; clang: -fconstexpr-steps, 2^20): a 3-operand plan
/// fits up to about 5000 steps in g++ 12 and 1500 in clang 14 (measured), so the defaults keep
/// 4096 and 1024 steps of such a plan static. Raise it together with the compiler's limit.
#ifndef PTPU_MAX_STATIC_WORK
#if defined(__clang__)
#define PTPU_MAX_STATIC_WORK 4096
#else
#define PTPU_MAX_STATIC_WORK 16384
#endif
#endif

namespace ptpu {

/// How a call runs: on real data or timing only, and what the report records.
struct run_options {
    /// Skip vector data movement and floating-point work (ops/ still charge it): the same
    /// schedule, scalar and SMEM work and predicted time, much faster. Outputs are not computed.
    bool timing_only = false;
    bool timeline = false;  ///< record the timeline (for the trace and SVG exporters)
    int per_step = -1;      ///< record the per-step breakdown: 1 yes, 0 no, -1 when ≤ 65536 steps
    /// Let the timing model fast-forward steady periods (sim::options::steady_state; off while a
    /// timeline or per-step breakdown is recorded). Off: every op simulated one by one.
    bool steady_state = true;
    sim::cost_model costs = sim::default_costs;
};

namespace detail {

// ---- Reading the option pack ------------------------------------------------------------------

template <option_kind K, class Default, class... Opts>
using option_t = pick_t<is_kind<K>::template test, Default, Opts...>;

template <class T>
struct array_pack_ctx;
template <class... A>
struct array_pack_ctx<pack<A...>> {
    // Index maps receive the scalar-prefetch refs read-only (S46, S51).
    using type = std::conditional_t<sizeof...(A) == 0, void,
                                    std::tuple<ref<const typename A::value_type, smem, A::rank>...>>;
};

/// The rank of the ref a body gets for operand Arg (squeezed dims removed, S11; no window: the
/// whole array).
template <class Arg>
constexpr std::size_t kernel_rank() {
    using Spec = typename Arg::spec;
    if constexpr (Spec::shape::full || windowless_space<typename Spec::memory>)
        return Arg::array::rank;
    else {
        std::size_t n = 0;
        for (const auto& d : Spec::shape::dims) n += d.kind != dim_kind::squeezed;
        return n;
    }
}

/// The static extents of that ref: the block shape without its squeezed dims (the whole array
/// when there is no window); a bounded_slice dim, whose size the index map picks, is dyn.
template <class Arg>
constexpr std::array<index_t, kernel_rank<Arg>()> kernel_extents() {
    using Spec = typename Arg::spec;
    std::array<index_t, kernel_rank<Arg>()> e{};
    if constexpr (Spec::shape::full || windowless_space<typename Spec::memory>) {
        for (std::size_t d = 0; d < e.size(); ++d) e[d] = Arg::array::shape[d];
    } else {
        std::size_t j = 0;
        for (const auto& d : Spec::shape::dims)
            if (d.kind != dim_kind::squeezed) e[j++] = d.kind == dim_kind::bounded_slice ? dyn : d.size;
    }
    return e;
}

/// The ref a body gets for operand Arg: its block shape is static (ops check shapes against it
/// at compile time, OP1).
template <class Arg>
using kernel_ref_t = ref<typename Arg::array::value_type, typename Arg::spec::memory, kernel_rank<Arg>(),
                         extents_from_t<kernel_extents<Arg>()>>;

template <class... Opts>
struct call_traits {
    using grid = option_t<option_kind::grid, Grid<>, Opts...>;
    using ins = typename args_of<option_t<option_kind::in, In<>, Opts...>>::type;
    using outs = typename args_of<option_t<option_kind::out, Out<>, Opts...>>::type;
    using prefetch = typename args_of<option_t<option_kind::prefetch, ScalarPrefetch<>, Opts...>>::type;
    using scratch = collect_t<option_kind::scratch, Opts...>;
    using aliases = collect_t<option_kind::alias, Opts...>;
    using semantics = option_t<option_kind::semantics, void, Opts...>;
    static constexpr chip hw = option_t<option_kind::chip, Chip<tpu::default_chip>, Opts...>::value;
    static constexpr index_t vmem_limit =
        option_t<option_kind::vmem_limit, VmemLimit<hw.vmem_limit_bytes>, Opts...>::value;
    using ctx = typename array_pack_ctx<prefetch>::type;
    static constexpr std::size_t G = grid::rank;
    static constexpr int n_in = static_cast<int>(ins::size);
    static constexpr int n_out = static_cast<int>(outs::size);

    template <class... A>
    static constexpr void describe_ops(call_desc& c, [[maybe_unused]] operand_role role, int first,
                                       pack<A...>) {
        int k = first;
        ((c.ops[static_cast<std::size_t>(k++)] =
              describe_operand<typename A::array, typename A::spec, G, ctx>(role)),
         ...);
    }
    template <class... S>
    static constexpr void describe_scratch_all([[maybe_unused]] call_desc& c, pack<S...>) {
        int k = 0;
        ((c.scratch[static_cast<std::size_t>(k++)] = detail::describe_scratch<S>()), ...);
    }
    template <class... A>
    static constexpr void describe_aliases([[maybe_unused]] call_desc& c, pack<A...>) {
        int k = 0;
        ((c.aliases[static_cast<std::size_t>(k++)] = {A::in, A::out}), ...);
    }
    template <class... A>
    static constexpr index_t prefetch_bytes(pack<A...>) {
        return (index_t{0} + ... + (A::size * itemsize(dtype_of<typename A::value_type>)));
    }

    static constexpr call_desc describe() {
        call_desc c;
        c.grid_rank = static_cast<int>(G);
        for (std::size_t i = 0; i < G; ++i) c.grid[i] = grid::dims[i];
        if constexpr (!std::is_void_v<semantics>) {
            c.has_semantics = true;
            c.semantics_rank = static_cast<int>(semantics::rank);
            for (std::size_t i = 0; i < semantics::rank && i < max_rank; ++i)
                c.semantics[i] = semantics::values[i];
        }
        c.hw = hw;
        c.vmem_limit = vmem_limit;
        c.n_prefetch = static_cast<int>(prefetch::size);
        c.prefetch_bytes = prefetch_bytes(prefetch{});
        c.n_in = n_in;
        c.n_out = n_out;
        describe_ops(c, operand_role::input, 0, ins{});
        describe_ops(c, operand_role::output, n_in, outs{});
        c.n_scratch = static_cast<int>(scratch::size);
        describe_scratch_all(c, scratch{});
        c.n_alias = static_cast<int>(aliases::size);
        describe_aliases(c, aliases{});
        for (int k = 0; k < c.n_alias; ++k) {
            const auto [in, out] = c.aliases[static_cast<std::size_t>(k)];
            if (out >= 0 && out < n_out) c.ops[static_cast<std::size_t>(n_in + out)].alias_of = in;
        }
        constexpr option_kind once[] = {option_kind::grid,      option_kind::in,   option_kind::out,
                                        option_kind::semantics, option_kind::chip, option_kind::vmem_limit,
                                        option_kind::prefetch};
        for (option_kind k : once) {
            int n = 0;
            ((n += kind_of<Opts> == k), ...);
            if (n > 1) c.duplicate_option = static_cast<int>(k);
        }
        c.unknown_option = ((kind_of<Opts> == option_kind::unknown) || ...);
        return c;
    }

    template <class... A>
    static constexpr std::array<block_fn, max_operands> maps_of(pack<A...>) {
        return {&eval_map<typename A::spec, G, ctx>...};
    }
    template <class... I, class... O>
    static constexpr std::array<block_fn, max_operands> all_maps(pack<I...>, pack<O...>) {
        return maps_of(pack<I..., O...>{});
    }
    static constexpr std::array<block_fn, max_operands> maps() { return all_maps(ins{}, outs{}); }
    template <class... A>
    static constexpr std::array<scan_fn, max_operands> scans_of(pack<A...>) {
        return {&scan_operand<typename A::spec, G, ctx>...};
    }
    template <class... I, class... O>
    static constexpr std::array<scan_fn, max_operands> all_scans(pack<I...>, pack<O...>) {
        return scans_of(pack<I..., O...>{});
    }
};

// ---- Compile-time diagnostics: one static_assert per rule, only the failing one fires --------
// The values of a diagnostic appear as the template arguments in the compiler's "In instantiation
// of" line just above the message, in the order the message states.

constexpr coords block_coords(const diag& d) {
    coords c;
    c.rank = static_cast<int>(d.d);
    for (std::size_t i = 0; i < max_rank; ++i) c.v[i] = d.block[i].start;
    return c;
}

// The static_assert text of each rule: its one message (PTPU_CALL_RULES in spec/validate.hpp),
// and, for the rules whose values are template arguments, what those arguments are.
template <int Output, coords Block, coords Again, coords FirstFrom, coords FirstTo>
struct output_block_revisited {
    static_assert(Output < 0, PTPU_RULE_TEXT_S39
                  " Template arguments: output index, block index, the revisiting iteration, and the "
                  "iterations of the first visit (from, to)");
};
template <int Output, coords Block, int CoreA, coords From, coords To, int CoreB, coords Again>
struct megacore_output_race {
    static_assert(Output < 0, PTPU_RULE_TEXT_MC1
                  " Template arguments: output index, block index, first core and its iterations (from, to), "
                  "second core and its first iteration");
};
template <int Operand, int Dim, coords Block, coords Iteration>
struct block_index_out_of_bounds {
    static_assert(Operand < 0, PTPU_RULE_TEXT_S34
                  " Template arguments: operand (inputs then outputs), dim, block index, iteration");
};
template <std::array<index_t, max_operands> SlotBytes, std::array<int, max_operands> Buffers,
          index_t ScratchBytes, index_t TotalBytes, index_t LimitBytes>
struct vmem_overflow {
    static_assert(TotalBytes <= LimitBytes, PTPU_RULE_TEXT_24
                  " Template arguments: bytes of one window slot per operand (inputs then outputs), buffer "
                  "count per operand, VMEM scratch bytes, total bytes, limit");
};

#define PTPU_RULE_ASSERT(name, text) static_assert(D.code != rule::name, text);
template <diag D>
struct generic_report {
    PTPU_CALL_RULES(PTPU_RULE_ASSERT)
};
#undef PTPU_RULE_ASSERT

struct no_problem {};

/// The report type of a call's first problem: instantiating it (sizeof) fires its one
/// static_assert. rule::reported: a type-level static_assert already gave the message.
template <diag D, int NIn>
constexpr auto problem_report() {
    if constexpr (D.code == rule::ok || D.code == rule::reported)
        return std::type_identity<no_problem>{};
    else if constexpr (D.code == rule::s39)
        return std::type_identity<
            output_block_revisited<D.op - NIn, block_coords(D), D.at[2], D.at[0], D.at[1]>>{};
    else if constexpr (D.code == rule::mc1)
        return std::type_identity<megacore_output_race<D.op - NIn, block_coords(D), static_cast<int>(D.a),
                                                       D.at[0], D.at[1], static_cast<int>(D.c), D.at[2]>>{};
    else if constexpr (D.code == rule::s34)
        return std::type_identity<block_index_out_of_bounds<D.op, D.dim, block_coords(D), D.at[0]>>{};
    else if constexpr (D.code == rule::r24) {
        constexpr auto slots = [] {
            std::array<index_t, max_operands> a{};
            for (std::size_t i = 0; i < max_operands; ++i) a[i] = D.bytes[i];
            return a;
        }();
        return std::type_identity<vmem_overflow<slots, D.buffers, D.bytes[max_operands], D.a, D.b>>{};
    } else
        return std::type_identity<generic_report<D>>{};
}
template <diag D, int NIn>
using problem_report_t = typename decltype(problem_report<D, NIn>())::type;

// ---- Operand binding ----------------------------------------------------------------------------

/// Stands for an input predict() has no data for (timing only: VMEM data is never read).
struct absent_input {};

template <class T>
inline constexpr bool is_host_array = false;
template <class B>
inline constexpr bool is_host_array<host_array<B>> = true;
template <class T>
inline constexpr bool is_view = false;  // views may be held by value in into()'s tuple
template <class T>
inline constexpr bool is_view<host_view<T>> = true;
template <class T, std::size_t N>
inline constexpr bool is_view<std::span<T, N>> = true;

/// Operand k of `role` ("input", "scalar-prefetch") as an HBM view; ARG1 messages name it.
template <class A, class X>
auto to_view(X& x, const char* role, std::size_t k) {
    using T = typename A::value_type;
    using U = std::remove_cvref_t<X>;
    if constexpr (std::is_same_v<U, absent_input>) {
        host_view<const T> v{nullptr, static_cast<int>(A::rank), {}};
        for (std::size_t d = 0; d < A::rank; ++d) v.shape[d] = A::shape[d];
        return v;
    } else if constexpr (std::is_same_v<U, host_array<A>>)
        return x.view();
    else if constexpr (is_host_array<U>)
        static_assert(sizeof(X) == 0,
                      "ptpu[ARG1] pallas_call: a host_array of another Array type; pass one of the "
                      "operand's Array type, or x.span() to reinterpret its elements");
    else if constexpr (std::is_same_v<U, host_view<T>> || std::is_same_v<U, host_view<const T>>) {
        bool ok = x.rank == static_cast<int>(A::rank);
        for (std::size_t d = 0; ok && d < A::rank; ++d) ok = x.shape[d] == A::shape[d];
        if (!ok)
            throw error("ARG1", operand_where("pallas_call", role, k),
                        "a host_view's shape does not match its Array type",
                        "pass a view of the Array's shape");
        return host_view<const T>{x.data, x.rank, x.shape};
    } else if constexpr (requires { std::span<const T>(x); })
        return view_as<A>(std::span<const T>(x), role, k);
    else
        static_assert(sizeof(X) == 0,
                      "ptpu[ARG1] pallas_call: an operand must be a host_array<Array>, a host_view, "
                      "or a contiguous range (std::vector, std::span) of the Array's dtype");
}

}  // namespace detail

/// A pallas_call configuration. Options, in any order: Grid<...>, In<Arg...>, Out<Arg...>,
/// Scratch<...> (any number), Semantics<...>, Chip<preset>, VmemLimit<bytes>,
/// ScalarPrefetch<Array...>, Alias<in, out> (any number).
template <class... Opts>
struct pallas_call {
    using traits = detail::call_traits<Opts...>;
    /// The call as data.
    static constexpr call_desc desc = traits::describe();
    /// The index maps as the planner sees them.
    static constexpr std::array<block_fn, max_operands> maps = traits::maps();
    /// True when index maps read scalar-prefetch values: the plan is made at run time.
    static constexpr bool dynamic = desc.n_prefetch > 0;
    /// True when the whole plan is made (and its grid-walking checks run) at compile time: static
    /// index maps and steps × (operands + 1) at most PTPU_MAX_STATIC_WORK (compilers bound the
    /// work of one constant evaluation). Larger grids are planned at run time by the same
    /// functions, and report the same rules as ptpu::error.
    static constexpr bool static_plan =
        !dynamic && desc.steps() * (desc.n_ops() + 1) <= index_t{PTPU_MAX_STATIC_WORK};

private:
    static constexpr plan_info make_info() {
        if constexpr (!static_plan) {
            plan_info i;
            i.problem = validate(desc);
            return i;
        } else {
            return plan(desc, maps.data(), nullptr, [](const event&) {});
        }
    }

public:
    /// The plan's summary (only the checks that need no grid walk unless static_plan);
    /// `info.problem` is the first broken rule, reported below as a compile error.
    static constexpr plan_info info = make_info();
    /// True when the configuration breaks no rule. When it does, the rule's report (instantiated
    /// here) stops compilation with its one message.
    static constexpr bool valid = info.problem.ok();

    // Instantiating the report fires the broken rule's static_assert (and nothing else).
    static_assert(sizeof(detail::problem_report_t<info.problem, desc.n_in>) > 0);

private:
    static constexpr std::size_t event_count = (static_plan && info.problem.ok()) ? info.events : 0;
    static constexpr std::array<event, event_count> make_events() {
        std::array<event, event_count> a{};
        if constexpr (event_count > 0) {
            event* out = a.data();
            event* const stop = out + event_count;
            plan(desc, maps.data(), nullptr, [&](const event& e) {
                if (out != stop) *out++ = e;
            });
        }
        return a;
    }

public:
    /// The schedule, event by event (static calls). A static member of a class template is only
    /// evaluated when used, so calls that never inspect it pay nothing for it at compile time;
    /// the executor plans again at run time with the same functions.
    static constexpr std::array<event, event_count> events = make_events();

    /// Block index of operand `op` at linear grid step `step` (static calls).
    static constexpr index_tuple<max_rank> block_index(int op, index_t step) {
        const auto p = detail::grid_point(desc, step);
        return maps[static_cast<std::size_t>(op)](p.data(), nullptr);
    }
    static constexpr index_t count(event_kind k, int op = -1) {
        index_t n = 0;
        for (const event& e : events)
            if (e.kind == k && (op < 0 || e.op == op)) ++n;
        return n;
    }
    /// DMAs the pipeline issues (copy-ins, copy-outs, sync copies and restores), for one operand
    /// or all. Read from the plan's summary: no event list needed.
    static constexpr index_t dma_count(int op = -1) {
        index_t n = 0;
        for (int i = 0; i < desc.n_ops(); ++i)
            if (op < 0 || op == i) n += info.ops[static_cast<std::size_t>(i)].dmas;
        return n;
    }

    /// How this call object runs (timing only, timeline, …): `Call{{.timeline = true}}`.
    run_options options{};

    /// Runs the kernel: `body(prefetch..., ins..., outs..., scratch...)` (S46) on real data, and
    /// the timing model on the chosen chip. Arguments: the scalar-prefetch arrays, then the inputs
    /// (host_array, host_view, or a contiguous range of the dtype). Returns the outputs
    /// (host_arrays) and the report, as a tuple for structured bindings:
    /// `auto [z, report] = Call{}(body, x, y);`.
    template <class Body, class... Args>
    auto operator()(Body&& body, Args&&... args) const {
        static_assert(sizeof...(Args) == desc.n_prefetch + desc.n_in,
                      "ptpu[ARG1] pallas_call: pass the scalar-prefetch arrays, then one argument "
                      "per input");
        auto outs = make_outputs(typename traits::outs{});
        std::array<void*, max_operands> out_ptrs{};
        std::apply(
            [&](auto&... o) {
                std::size_t k = 0;
                ((out_ptrs[k++] = o.data()), ...);
            },
            outs);
        report rep =
            execute(body, std::forward_as_tuple(args...), out_ptrs, options, typename traits::prefetch{},
                    typename traits::ins{}, typename traits::outs{}, typename traits::scratch{});
        return std::tuple_cat(std::move(outs), std::tuple<report>{std::move(rep)});
    }

    /// Runs the kernel writing the outputs into memory the caller owns: `outputs` is a tuple of
    /// host_array<A>& or host_view<T> (e.g. `std::tie(z)`), one per output, of the Out shapes.
    /// No output allocation: for repeated calls and for results that live in user buffers.
    template <class... Outs, class Body, class... Args>
    report into(std::tuple<Outs...> outputs, Body&& body, Args&&... args) const {
        static_assert(sizeof...(Outs) == static_cast<std::size_t>(desc.n_out),
                      "ptpu[ARG1] pallas_call::into: give one output buffer per Out operand");
        static_assert(sizeof...(Args) == desc.n_prefetch + desc.n_in,
                      "ptpu[ARG1] pallas_call: pass the scalar-prefetch arrays, then one argument "
                      "per input");
        std::array<void*, max_operands> out_ptrs{};
        bind_outputs(outputs, out_ptrs, typename traits::outs{}, std::index_sequence_for<Outs...>{});
        return execute(body, std::forward_as_tuple(args...), out_ptrs, options, typename traits::prefetch{},
                       typename traits::ins{}, typename traits::outs{}, typename traits::scratch{});
    }

    /// Predicts the time without any data: a timing-only run (run_options::timing_only) that
    /// takes only the scalar-prefetch arrays, for sweeps over configurations too large to
    /// allocate. Operands with SMEM windows need their data (scalar code reads it): use a
    /// timing-only run with real inputs for those.
    template <class Body, class... Prefetch>
    report predict(Body&& body, Prefetch&&... prefetch) const {
        static_assert(sizeof...(Prefetch) == static_cast<std::size_t>(desc.n_prefetch),
                      "ptpu[ARG1] pallas_call::predict: pass exactly the scalar-prefetch arrays");
        static_assert(no_smem_windows(),
                      "ptpu[PRED1] pallas_call::predict: an operand has an SMEM window, whose data "
                      "scalar code reads; run with timing_only and real inputs instead");
        run_options opt = options;
        opt.timing_only = true;
        return predict_impl(body, opt, std::forward_as_tuple(prefetch...),
                            std::make_index_sequence<desc.n_in>{});
    }

private:
    static constexpr bool no_smem_windows() {
        for (int i = 0; i < desc.n_ops(); ++i)
            if (desc.ops[static_cast<std::size_t>(i)].space == space_kind::smem) return false;
        return true;
    }
    template <class Body, class PfTuple, std::size_t... K>
    static report predict_impl(Body& body, const run_options& opt, PfTuple prefetch,
                               std::index_sequence<K...>) {
        [[maybe_unused]] const std::array<detail::absent_input, sizeof...(K) + 1> absent{};
        auto args = std::tuple_cat(prefetch, std::tuple<const detail::absent_input&>(absent[K])...);
        return execute(body, args, std::array<void*, max_operands>{}, opt, typename traits::prefetch{},
                       typename traits::ins{}, typename traits::outs{}, typename traits::scratch{});
    }

    template <class... A>
    static auto make_outputs(detail::pack<A...>) {
        return std::tuple<host_array<typename A::array>...>{};
    }

    template <class Tuple, class... O, std::size_t... K>
    static void bind_outputs(Tuple& outputs, std::array<void*, max_operands>& ptrs, detail::pack<O...>,
                             std::index_sequence<K...>) {
        auto one = [&]<class A, class E>(std::type_identity<A>, std::type_identity<E>, auto& x,
                                         std::size_t k) {
            using T = typename A::value_type;
            using U = std::remove_cvref_t<decltype(x)>;
            // A buffer held by value in the tuple would be written and dropped (views are fine).
            if constexpr (!detail::is_view<U> && !std::is_lvalue_reference_v<E>)
                static_assert(sizeof(U) == 0,
                              "ptpu[ARG1] pallas_call::into: an owning output buffer is passed by "
                              "value, so the results would be lost; pass it by reference: std::tie(z)");
            else if constexpr (std::is_same_v<U, host_array<A>>)
                ptrs[k] = x.data();
            else if constexpr (detail::is_host_array<U>)
                static_assert(sizeof(U) == 0,
                              "ptpu[ARG1] pallas_call::into: a host_array of another Array type; pass one "
                              "of the Out Array type, or z.span() to reinterpret its elements");
            else if constexpr (std::is_same_v<U, host_view<T>>) {
                bool ok = x.rank == static_cast<int>(A::rank);
                for (std::size_t d = 0; ok && d < A::rank; ++d) ok = x.shape[d] == A::shape[d];
                if (!ok)
                    throw error("ARG1", detail::operand_where("pallas_call::into", "output", k),
                                "the view's shape differs from its Out Array",
                                "pass a view of the Out Array's shape");
                ptrs[k] = x.data;
            } else if constexpr (requires { std::span<T>(x); })
                ptrs[k] = view_as<A>(std::span<T>(x), "output", k, "pallas_call::into").data;
            else
                static_assert(sizeof(U) == 0,
                              "ptpu[ARG1] pallas_call::into: an output must be a host_array<Array>&, a "
                              "writable host_view, or a writable contiguous range of the dtype "
                              "(std::vector<T>&, std::span<T>)");
        };
        (one(std::type_identity<typename O::array>{}, std::type_identity<std::tuple_element_t<K, Tuple>>{},
             std::get<K>(outputs), K),
         ...);
    }

    template <class Body, class ArgTuple, class... P, class... I, class... O, class... S>
    static report execute(Body& body, ArgTuple args, const std::array<void*, max_operands>& out_ptrs,
                          const run_options& opt, detail::pack<P...>, detail::pack<I...>, detail::pack<O...>,
                          detail::pack<S...>) {
        constexpr std::size_t np = sizeof...(P);
        constexpr std::size_t ni = sizeof...(I);
        // Inputs as HBM views.
        auto in_views = [&]<std::size_t... K>(std::index_sequence<K...>) {
            return std::tuple{detail::to_view<typename I::array>(std::get<np + K>(args), "input", K)...};
        }
        (std::make_index_sequence<ni>{});
        auto pf_views = [&]<std::size_t... K>(std::index_sequence<K...>) {
            return std::tuple{detail::to_view<P>(std::get<K>(args), "scalar-prefetch", K)...};
        }
        (std::make_index_sequence<np>{});
        // HBM base pointers per operand; an aliased output starts as a copy of its input and the
        // input then reads the output's buffer (S50).
        std::array<void*, max_operands> hbm{};
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((hbm[K] = const_cast<void*>(static_cast<const void*>(std::get<K>(in_views).data))), ...);
        }
        (std::make_index_sequence<ni>{});
        for (std::size_t k = 0; k < sizeof...(O); ++k) hbm[ni + k] = out_ptrs[k];
        for (int k = 0; k < desc.n_alias; ++k) {
            const auto [in, out] = desc.aliases[static_cast<std::size_t>(k)];
            if (hbm[static_cast<std::size_t>(in)] == nullptr ||
                hbm[static_cast<std::size_t>(desc.n_in + out)] == nullptr)
                continue;  // predict(): no data
            const auto& o = desc.ops[static_cast<std::size_t>(desc.n_in + out)];
            std::memcpy(hbm[static_cast<std::size_t>(desc.n_in + out)], hbm[static_cast<std::size_t>(in)],
                        static_cast<std::size_t>(o.array_elems() * itemsize(o.type)));
            hbm[static_cast<std::size_t>(in)] = hbm[static_cast<std::size_t>(desc.n_in + out)];
        }

        if constexpr (!valid) {
            return report{};  // compilation has already failed with the rule's message
        } else {
            typename traits::ctx* ctx_ptr = nullptr;
            [[maybe_unused]] auto make_ctx = [&] {
                if constexpr (dynamic) {
                    // The planner's view of the prefetch values (read-only SMEM refs).
                    return [&]<std::size_t... K>(std::index_sequence<K...>) {
                        return std::tuple{ref<const typename P::value_type, smem, P::rank>(
                                              std::get<K>(pf_views).data, shape_of<P>())
                                              .labelled(label(detail::ref_label::kind::prefetch, K))...};
                    }
                    (std::index_sequence_for<P...>{});
                } else {
                    return 0;
                }
            };
            auto ctx_value = make_ctx();
            if constexpr (dynamic) ctx_ptr = &ctx_value;
            // The same planner as at compile time; for dynamic calls its checks run here (S51),
            // before any byte moves.
            static constexpr std::array<scan_fn, max_operands> scans =
                traits::all_scans(typename traits::ins{}, typename traits::outs{});
            const plan_tables tables = analyze(desc, maps.data(), ctx_ptr, scans.data());
            raise(tables.info.problem);
            const plan_info& pinfo = tables.info;

            std::array<core_memory, 2> mem{};
            // The per-core memories are reused from call to call on this thread (allocating and
            // faulting in megabytes of fresh pages per call would dominate small kernels); a call
            // made while another is running on the thread gets its own.
            detail::arena_lease lease;
            for (int core = 0; core < pinfo.cores; ++core) {
                core_memory& m = mem[static_cast<std::size_t>(core)];
                index_t total = 0;
                auto take = [&](index_t bytes) {
                    const index_t at = total;
                    total += (bytes + 63) / 64 * 64;
                    return at;
                };
                std::array<std::array<index_t, 2>, max_operands> slot_at{};
                std::array<index_t, max_scratch> scratch_at{};
                std::array<index_t, max_operands> pf_at{};
                for (int i = 0; i < desc.n_ops(); ++i)
                    for (int k = 0; k < pinfo.ops[static_cast<std::size_t>(i)].buffers; ++k)
                        slot_at[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)] =
                            take(pinfo.ops[static_cast<std::size_t>(i)].block_bytes);
                for (int k = 0; k < desc.n_scratch; ++k) {
                    const auto& s = desc.scratch[static_cast<std::size_t>(k)];
                    scratch_at[static_cast<std::size_t>(k)] = take(s.elems() * itemsize(s.type));
                }
                std::size_t pk = 0;
                ((pf_at[pk++] = take(P::size * index_t{sizeof(typename P::value_type)})), ...);
                // Fresh memory is garbage on a TPU (S57); poison it so a kernel reading an
                // uninitialized buffer sees NaN / -1 rather than a plausible value.
                m.arena = lease.get(core, static_cast<std::size_t>(total));
                std::memset(m.arena, 0xff, static_cast<std::size_t>(total));
                for (int i = 0; i < desc.n_ops(); ++i)
                    for (int k = 0; k < pinfo.ops[static_cast<std::size_t>(i)].buffers; ++k)
                        m.slots[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)] =
                            m.arena + slot_at[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)];
                for (int k = 0; k < desc.n_scratch; ++k) {
                    const auto& s = desc.scratch[static_cast<std::size_t>(k)];
                    m.scratch[static_cast<std::size_t>(k)] =
                        m.arena + scratch_at[static_cast<std::size_t>(k)];
                    if (s.space == space_kind::semaphore)  // semaphores start at zero
                        std::memset(m.scratch[static_cast<std::size_t>(k)], 0,
                                    static_cast<std::size_t>(s.elems() * itemsize(s.type)));
                }
                // S51: the scalar-prefetch operands are copied into each core's SMEM first.
                [&]<std::size_t... K>(std::index_sequence<K...>) {
                    ((m.prefetch[K] = m.arena + pf_at[K],
                      std::memcpy(m.prefetch[K], std::get<K>(pf_views).data,
                                  static_cast<std::size_t>(P::size) * sizeof(typename P::value_type))),
                     ...);
                }
                (std::make_index_sequence<np>{});
            }

            kernel_context kctx;
            kctx.grid_rank = desc.grid_rank;
            kctx.grid = desc.grid;
            kctx.hw = &desc.hw;
            kctx.timing_only = opt.timing_only;
            detail::context_guard guard(kctx);
            auto invoke = [&](core_memory& m) {
                call_body(body, m, pf_views, std::index_sequence_for<P...>{}, detail::pack<P...>{},
                          detail::pack<I..., O...>{}, std::make_index_sequence<ni + sizeof...(O)>{},
                          detail::pack<S...>{}, std::index_sequence_for<S...>{}, hbm);
            };
            executor_options xo;
            xo.timing_only = opt.timing_only;
            xo.notes = opt.timeline;
            // The timing model turns charged work into time (sim::time_of on this chip).
            struct cost_ctx {
                const chip* hw;
                const sim::cost_model* costs;
            } const cc{&desc.hw, &opt.costs};
            xo.seconds_of = [](const work& w, const void* c) {
                const auto* k = static_cast<const cost_ctx*>(c);
                return sim::time_of(w, *k->hw, *k->costs).total;
            };
            xo.seconds_ctx = &cc;
            executor<decltype(invoke)> ex(desc, tables, maps.data(), ctx_ptr, hbm, mem, kctx, invoke, xo);
            sim::options so;
            so.timeline = opt.timeline;
            so.per_step = opt.per_step > 0 || (opt.per_step < 0 && desc.steps() <= 65536);
            so.costs = opt.costs;
            so.steady_state = opt.steady_state;
            sim::result r = sim::simulate(desc.hw, pinfo.cores, ex, so);
            run_stats stats = ex.stats();
            stats.body_dmas = kctx.body_dma_count;
            stats.body_dma_bytes = kctx.body_dma_bytes;
            return make_report(desc.hw, desc, pinfo, stats, std::move(r), std::vector<dma_note>(ex.notes()),
                               opt.costs);
        }
    }

    static constexpr detail::ref_label label(detail::ref_label::kind what, std::size_t k) {
        return {what, static_cast<std::uint8_t>(k)};
    }
    template <class A>
    static constexpr std::array<index_t, A::rank> shape_of() {
        std::array<index_t, A::rank> s{};
        for (std::size_t d = 0; d < A::rank; ++d) s[d] = A::shape[d];
        return s;
    }

    template <class Arg, std::size_t K, class Mem>
    static auto operand_ref(Mem& m, const std::array<void*, max_operands>& hbm) {
        using R = detail::kernel_ref_t<Arg>;
        using T = typename Arg::array::value_type;
        constexpr std::size_t rank = R::rank;
        constexpr auto n_in = static_cast<std::size_t>(desc.n_in);
        constexpr detail::ref_label who = K < n_in ? label(detail::ref_label::kind::input, K)
                                                   : label(detail::ref_label::kind::output, K - n_in);
        std::array<index_t, rank> shape{};
        if constexpr (windowless_space<typename Arg::spec::memory>) {
            for (std::size_t d = 0; d < rank; ++d) shape[d] = Arg::array::shape[d];
            return R(static_cast<T*>(hbm[K]), shape).labelled(who);
        } else {
            const operand_desc& o = desc.ops[K];
            std::size_t j = 0;
            for (std::size_t d = 0; d < static_cast<std::size_t>(o.block_rank); ++d)
                if (o.block[d].kind != dim_kind::squeezed) shape[j++] = o.block[d].size;
            return R(reinterpret_cast<T*>(m.slots[K][static_cast<std::size_t>(m.cur[K])]), shape)
                .labelled(who);
        }
    }

    // The refs a body gets for scalar-prefetch arrays (in SMEM) and scratch buffers (semaphores
    // as int32 counters), with their whole static shape.
    template <class P>
    using prefetch_ref_t = ref<typename P::value_type, smem, P::rank, extents_from_t<P::shape>>;
    template <class S>
    using scratch_ref_t = ref<std::conditional_t<std::is_same_v<typename S::memory, semaphore>, std::int32_t,
                                                 typename S::value_type>,
                              typename S::memory, S::rank, extents_from_t<S::shape>>;

    template <class Body, class Mem, class PfViews, std::size_t... PK, class... P, class... A,
              std::size_t... AK, class... S, std::size_t... SK>
    static void call_body(Body& body, Mem& m, PfViews&, std::index_sequence<PK...>, detail::pack<P...>,
                          detail::pack<A...>, std::index_sequence<AK...>, detail::pack<S...>,
                          std::index_sequence<SK...>, const std::array<void*, max_operands>& hbm) {
        using result =
            decltype(body(std::declval<prefetch_ref_t<P>>()..., std::declval<detail::kernel_ref_t<A>>()...,
                          std::declval<scratch_ref_t<S>>()...));
        static_assert(std::is_void_v<result>,
                      "ptpu[12] pallas_call: the kernel body should return void; write results to "
                      "the output refs");
        body(prefetch_ref_t<P>(reinterpret_cast<typename P::value_type*>(m.prefetch[PK]), shape_of<P>())
                 .labelled(label(detail::ref_label::kind::prefetch, PK))...,
             operand_ref<A, AK>(m, hbm)...,
             scratch_ref_t<S>(reinterpret_cast<typename scratch_ref_t<S>::value_type*>(m.scratch[SK]),
                              shape_of<S>())
                 .labelled(label(detail::ref_label::kind::scratch, SK))...);
    }
};

}  // namespace ptpu
