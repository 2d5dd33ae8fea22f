// Defines pallas_call<Options...>: the type that expands a static configuration into its
// schedule at compile time (checked with one static_assert per broken rule), and whose call
// operator runs the kernel on real data (real DMAs between host "HBM" arrays and per-core
// VMEM/SMEM arenas, the body on typed refs, Megacore cores each with their own pipeline, S44)
// while the timing model replays it on the chosen chip. It is the front end of the call: its
// parts are the option reading (call/options.hpp), the compile-time diagnostics
// (call/diagnostics.hpp), the binding of arguments (call/binding.hpp) and the run itself
// (call/run.hpp: runners → sim → report), and none of the layers below includes it.
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

#include "ptpu/call/binding.hpp"
#include "ptpu/call/diagnostics.hpp"
#include "ptpu/call/options.hpp"
#include "ptpu/call/run.hpp"
#include "ptpu/call/verdict.hpp"
#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/report/report.hpp"
#include "ptpu/runtime/host_array.hpp"
#include "ptpu/runtime/ref.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/spec/call.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/validate.hpp"

// PTPU_MAX_STATIC_WORK, the bound on compile-time planning, is defined in call/options.hpp.

namespace ptpu {

/// A pallas_call configuration. Options, in any order: Grid<...>, In<Arg...>, Out<Arg...>,
/// Scratch<...> (any number), Semantics<...>, Chip<preset>, VmemLimit<bytes>,
/// ScalarPrefetch<Array...>, Alias<in, out> (any number).
template <class... Opts>
struct pallas_call {
    using traits = detail::call_traits<Opts...>;

private:
    // With g++, the nouns' own checks (Array, Block, BlockSpec, Scratch: their dtype, extents,
    // block dims, options and spaces) are read off the options first, as check_call reads them
    // (call/verdict.hpp), so that a broken one is reported naming its operand and dim. The
    // call is then left undescribed: no noun is instantiated, and its own static_assert, which
    // cannot name the operand, never fires. (Other compilers show the nouns' static_asserts.)
    static constexpr detail::noun_problem noun_check() {
        if constexpr (PTPU_COMPOSED_MESSAGES)
            return detail::nouns_problem<Opts...>();
        else
            return {};
    }
    static constexpr detail::noun_problem noun = noun_check();
    static constexpr call_desc describe_call() {
        if constexpr (noun.text == nullptr)
            return traits::describe();
        else
            return {};
    }
    static constexpr std::array<block_fn, max_operands> describe_maps() {
        if constexpr (noun.text == nullptr)
            return traits::maps();
        else
            return {};
    }
    // The noun's error: its message names the operand (its Arg name) and the dim.
    static_assert(sizeof(*detail::noun_report<detail::noun_message_if(noun, detail::inputs_of<Opts...>())>()) > 0);

public:
    /// The call as data.
    static constexpr call_desc desc = describe_call();
    /// The index maps as the planner sees them.
    static constexpr std::array<block_fn, max_operands> maps = describe_maps();
    /// True when index maps read scalar-prefetch values: the plan is made at run time.
    static constexpr bool dynamic = desc.n_prefetch > 0;
    /// True when the whole plan is made (and its grid-walking checks run) at compile time: static
    /// index maps and steps × (operands + 1) at most PTPU_MAX_STATIC_WORK (compilers bound the
    /// work of one constant evaluation). Larger grids are planned at run time by the same
    /// functions, and report the same rules as ptpu::error.
    static constexpr bool static_plan = detail::plans_statically(desc);

private:
    static constexpr plan_info make_info() {
        if constexpr (!static_plan) {
            plan_info i;
            i.problem = validate(desc);
            if (i.problem.ok()) detail::split_cores(desc, i);  // the core split needs no walk
            return i;
        } else {
            return plan(desc, maps.data(), nullptr, [](const event&) {});
        }
    }

public:
    /// The plan's summary (unless static_plan, only the core split and the checks that need no
    /// grid walk);
    /// `info.problem` is the first broken rule, reported below as a compile error.
    static constexpr plan_info info = make_info();
    /// True when the configuration breaks no rule. When it does, the rule's report (instantiated
    /// here) stops compilation with its one message.
    static constexpr bool valid = noun.text == nullptr && info.problem.ok();

    // Instantiating the report is the broken rule's one error, its message naming the operand,
    // the dim and the values (call/diagnostics.hpp); nothing when the call is valid.
    static_assert(sizeof(*detail::problem_report<info.problem, detail::problem_message(info.problem, desc)>()) > 0);

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
        check_argument_count<sizeof...(Args)>();
        if constexpr (noun.text != nullptr) {
            // A broken noun was reported above; nothing here may instantiate it again.
            return unusable_outputs(std::make_index_sequence<declared_out>{});
        } else {
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
    }

    /// Runs the kernel writing the outputs into memory the caller owns: `outputs` is a tuple of
    /// host_array<A>& or host_view<T> (e.g. `std::tie(z)`), one per output, of the Out shapes.
    /// No output allocation: for repeated calls and for results that live in user buffers.
    template <class... Outs, class Body, class... Args>
    report into(std::tuple<Outs...> outputs, Body&& body, Args&&... args) const {
        static_assert(sizeof...(Outs) == static_cast<std::size_t>(declared_out),
                      "ptpu[ARG1] pallas_call::into: give one output buffer per Out operand");
        check_argument_count<sizeof...(Args)>();
        if constexpr (noun.text != nullptr) {
            return report{};  // a broken noun was reported above
        } else {
            std::array<void*, max_operands> out_ptrs{};
            bind_outputs(outputs, out_ptrs, typename traits::outs{}, std::index_sequence_for<Outs...>{});
            return execute(body, std::forward_as_tuple(args...), out_ptrs, options, typename traits::prefetch{},
                           typename traits::ins{}, typename traits::outs{}, typename traits::scratch{});
        }
    }

    /// Predicts the time without any data: a timing-only run (run_options::timing_only) that
    /// takes only the scalar-prefetch arrays, for sweeps over configurations too large to
    /// allocate. Operands with SMEM windows need their data (scalar code reads it): use a
    /// timing-only run with real inputs for those.
    template <class Body, class... Prefetch>
    report predict(Body&& body, Prefetch&&... prefetch) const {
        static_assert(sizeof...(Prefetch) == static_cast<std::size_t>(declared_prefetch),
                      "ptpu[ARG1] pallas_call::predict: pass exactly the scalar-prefetch arrays");
        static_assert(no_smem_windows(),
                      "ptpu[PRED1] pallas_call::predict: an operand has an SMEM window, whose data "
                      "scalar code reads; run with timing_only and real inputs instead");
        if constexpr (noun.text != nullptr) {
            return report{};  // a broken noun was reported above
        } else {
            run_options opt = options;
            opt.timing_only = true;
            return predict_impl(body, opt, std::forward_as_tuple(prefetch...),
                                std::make_index_sequence<desc.n_in>{});
        }
    }

private:
    // The operand counts the options declare, read without instantiating them (the same as
    // desc's for a call whose nouns are sound).
    static constexpr std::size_t declared_in = static_cast<std::size_t>(detail::inputs_of<Opts...>());
    static constexpr std::size_t declared_out = detail::outputs_of<Opts...>();
    static constexpr std::size_t declared_prefetch = detail::prefetch_count_of<Opts...>();
    // ARG1: the arguments after the body are the scalar-prefetch arrays, then one per input
    // (with g++ the message says how many were given and how many the call takes).
#define PTPU_RULE_TEXT_ARG1_CALL \
    "ptpu[ARG1] pallas_call: pass the scalar-prefetch arrays, then one argument per input"
    static constexpr rule_message argument_count_message(std::size_t given) {
        rule_message about;
        about << static_cast<index_t>(given) << (given == 1 ? " argument" : " arguments") << " given, the call takes "
              << static_cast<index_t>(declared_prefetch) << " scalar-prefetch and "
              << static_cast<index_t>(declared_in) << (declared_in == 1 ? " input" : " inputs");
        return with_subject(PTPU_RULE_TEXT_ARG1_CALL, about.view());
    }
    template <std::size_t N>
    static constexpr void check_argument_count() {
        if constexpr (N != declared_prefetch + declared_in) {
#if PTPU_COMPOSED_MESSAGES
            static_assert(sizeof(compile_error<argument_count_message(N)>) > 0);
#else
            static_assert(N == declared_prefetch + declared_in, PTPU_RULE_TEXT_ARG1_CALL);
#endif
        }
    }
#undef PTPU_RULE_TEXT_ARG1_CALL
    // What a call whose nouns are broken returns: as many (placeholder) outputs and a report, so
    // that the caller's structured binding adds no error to the noun's.
    template <std::size_t>
    using unusable_output = host_array<Array<float, 1>>;
    template <std::size_t... K>
    static auto unusable_outputs(std::index_sequence<K...>) {
        return std::tuple<unusable_output<K>..., report>{};
    }
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
                detail::require_data(x, "pallas_call::into", "output", k);
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
        // HBM base pointers per operand (S50's aliases are applied once the plan holds).
        std::array<void*, max_operands> hbm{};
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((hbm[K] = const_cast<void*>(static_cast<const void*>(std::get<K>(in_views).data))), ...);
        }
        (std::make_index_sequence<ni>{});
        for (std::size_t k = 0; k < sizeof...(O); ++k) hbm[ni + k] = out_ptrs[k];

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
            const plan_tables tables = detail::plan_call(desc, maps.data(), ctx_ptr, scans.data(), opt.memory_budget);
            // Only once the plan holds: a rejected call leaves the caller's buffers untouched.
            detail::check_distinct_buffers(desc, hbm, "pallas_call");
            detail::alias_hbm(desc, hbm);
            std::array<const void*, max_operands> prefetch{};
            [&]<std::size_t... K>(std::index_sequence<K...>) {
                ((prefetch[K] = static_cast<const void*>(std::get<K>(pf_views).data)), ...);
            }
            (std::make_index_sequence<np>{});
            auto invoke = [&](core_memory& m) {
                call_body(body, m, pf_views, std::index_sequence_for<P...>{}, detail::pack<P...>{},
                          detail::pack<I..., O...>{}, std::make_index_sequence<ni + sizeof...(O)>{},
                          detail::pack<S...>{}, std::index_sequence_for<S...>{}, hbm);
            };
            // Only this closure depends on the body; the run itself is compiled once (call/run.hpp).
            const body_call call{[](void* obj, core_memory& m) { (*static_cast<decltype(invoke)*>(obj))(m); },
                                 &invoke};
            return detail::run_call(desc, tables, maps.data(), ctx_ptr, hbm, prefetch, call, opt);
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

    /// Whether operand K's ref is read-only: an input without a window (any/hbm), whose ref is the
    /// caller's array, unless an Alias<K, out> makes it the output's buffer (S50). Window slots
    /// stay writable (S26).
    template <class Arg, std::size_t K>
    static constexpr bool read_only_operand() {
        if (K >= static_cast<std::size_t>(desc.n_in) || !windowless_space<typename Arg::spec::memory>) return false;
        for (int a = 0; a < desc.n_alias; ++a)
            if (desc.aliases[static_cast<std::size_t>(a)].first == static_cast<int>(K)) return false;
        return true;
    }

    template <class Arg, std::size_t K, class Mem>
    static auto operand_ref(Mem& m, const std::array<void*, max_operands>& hbm) {
        using R = detail::kernel_ref_t<Arg, read_only_operand<Arg, K>()>;
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
    // as semaphore cells: semaphore_signal/wait/read), with their whole static shape.
    template <class P>
    using prefetch_ref_t = ref<typename P::value_type, smem, P::rank, extents_from_t<P::shape>>;
    template <class S>
    using scratch_ref_t = ref<std::conditional_t<std::is_same_v<typename S::value_type, std::int32_t> &&
                                                     std::is_same_v<typename S::memory, semaphore>,
                                                 regular_semaphore, typename S::value_type>,
                              typename S::memory, S::rank, extents_from_t<S::shape>>;

    template <class Body, class Mem, class PfViews, std::size_t... PK, class... P, class... A,
              std::size_t... AK, class... S, std::size_t... SK>
    static void call_body(Body& body, Mem& m, PfViews&, std::index_sequence<PK...>, detail::pack<P...>,
                          detail::pack<A...>, std::index_sequence<AK...>, detail::pack<S...>,
                          std::index_sequence<SK...>, const std::array<void*, max_operands>& hbm) {
        using result =
            decltype(body(std::declval<prefetch_ref_t<P>>()...,
                          std::declval<detail::kernel_ref_t<A, read_only_operand<A, AK>()>>()...,
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
