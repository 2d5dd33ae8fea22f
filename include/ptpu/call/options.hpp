// Defines how pallas_call reads its option pack (Grid, In, Out, Scratch, Semantics, Chip,
// VmemLimit, ScalarPrefetch, Alias, in any order) into a call_desc, the refs its body receives
// (block shapes static, OP1), and run_options, how one call runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>

#include "ptpu/core/dtype.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/runtime/ref.hpp"
#include "ptpu/schedule/scan.hpp"
#include "ptpu/sim/cost.hpp"
#include "ptpu/spec/call.hpp"
#include "ptpu/spec/describe.hpp"

/// How much planning a static call may do at compile time, in grid steps × (operands + 1) (see
/// detail::plans_statically below, pallas_call::static_plan). Compilers bound the work of one
/// constant evaluation (g++: -fconstexpr-ops-limit, 2^25 by default; clang: -fconstexpr-steps,
/// 2^20): a 3-operand plan fits up to about 5000 steps in g++ 12 and 1500 in clang 14 (measured),
/// so the defaults keep 4096 and 1024 steps of such a plan static. Raise it together with the
/// compiler's limit.
#ifndef PTPU_MAX_STATIC_WORK
#if defined(__clang__)
#define PTPU_MAX_STATIC_WORK 4096
#else
#define PTPU_MAX_STATIC_WORK 16384
#endif
#endif

#ifndef PTPU_DETECT_RACES_DEFAULT
#define PTPU_DETECT_RACES_DEFAULT false
#endif

namespace ptpu {

/// What a read of the part of an input block outside its array gives (InterpretParams'
/// out_of_bounds_reads): `raise` keeps S34 (a block with no element inside the array is an error)
/// and the part outside holds what the window slot held before, as on a TPU (S35); `uninitialized`
/// reads poison there (NaN, INT_MIN, true: fill_poison), fresh at every copy. A block wholly outside
/// stays S34 either way: the planner checks it before the run (at compile time for a static call),
/// so it cannot depend on a run option.
enum class oob_reads : std::uint8_t { raise, uninitialized };

/// Whether a run records the per-step breakdown (report::steps and inner_steps), which grows with
/// the grid (memory_budget).
enum class per_step_rows : std::uint8_t {
    automatic,  ///< when the grid has at most 65536 steps
    never,
    always,
};

/// The grid steps at either end of a steady body's run (run_options::steady_body): over its
/// first `first` and last `last` steps the body's ops may differ from the steps a period before
/// (a first fetch, the last copies' drain); everywhere else they must not.
struct body_edges {
    index_t first = 1;
    index_t last = 1;
};

/// How a call runs: on real data or timing only, and what the report records.
struct run_options {
    /// Skip vector data movement and floating-point work (ops/ still charge it): the same
    /// schedule, scalar and SMEM work and predicted time, much faster. Outputs are not computed.
    bool timing_only = false;
    bool timeline = false;  ///< record the timeline (for the trace and SVG exporters)
    per_step_rows per_step = per_step_rows::automatic;  ///< record the per-step breakdown
    /// Let the timing model fast-forward steady periods (sim::options::steady_state; per-step
    /// rows and the timeline replicated for them). Off: every op simulated one by one.
    bool steady_state = true;
    sim::cost_model costs = sim::default_costs;
    /// Race detection (like Pallas interpret mode's detect_races, A13): a read of an async
    /// copy's destination, or a write of its source or destination, between its start and the
    /// wait that takes it in, and a body touching a window slot while a pipeline DMA into it
    /// (or, for a write, out of it) is in flight, are error DMA2 naming the ref or slot and the
    /// step; a pipeline DMA starting on a slot an async copy still reads or writes is DMA3; on
    /// two cores, an HBM write overlapping a write or read of the other core's, or an HBM read
    /// overlapping its write (pipeline fetches and copies out, bodies' copies), that no semaphore
    /// signal and wait order is MC2. Off, such a read sees the destination's old contents (copies land at
    /// their wait). (PTPU_DETECT_RACES_DEFAULT=1 turns it on by default: the emit_pipeline,
    /// pallas_call, dynamic-call and timing suites were built that way once to show it reports
    /// nothing on correct kernels; docs/guide.md, "Race detection".)
    bool detect_races = PTPU_DETECT_RACES_DEFAULT;
    /// Interpret mode's poisoned memory (InterpretParams uninitialized_memory="nan", S57): every
    /// window slot and scratch buffer starts as NaN (floats), INT_MIN (signed ints), 0xff (u8)
    /// or true (bool), and so does the part of an input block outside its array at every copy.
    /// Off, fresh memory is all 0xff bytes (NaN for floats, -1 for ints) and an edge block's
    /// padding keeps what its slot held before.
    bool poison_buffers = false;
    oob_reads out_of_bounds_reads = oob_reads::raise;
    /// Timing-only runs: run the body once per distinct set of answers to what it asks of its
    /// context (program_id, core_index, valid_extent, pipeline_index) and reuse the work it
    /// charged at the steps that would get the same answers (docs/model.md §10, "The body
    /// memo"). As in Pallas, which traces a body once, a body is taken to be a function of its
    /// refs, those answers and scalar memory: a run that reads scalar memory or issues DMAs,
    /// semaphore ops or inner pipelines is never reused. A body whose charges depend on host
    /// state that changes from step to step is caught by spot checks (error K2); set this to
    /// false to run such a body at every step. No effect on runs with data, semaphores or
    /// detect_races. It also hands on an inner pipeline's invocation from an earlier one with the
    /// same pipeline, body and answers, without running it (docs/model.md §10, "The invocation
    /// memo"; K2 the same way).
    bool memoize_body = true;
    /// Timing-only runs on one core that record per-step rows: fold the repeating steps of the
    /// inner pipelines the kernel's body runs as runs without rows do (docs/model.md §11, "Folded
    /// inner steps"), every folded step still getting its inner row. Such a prediction is then
    /// within 1e-9 of the unfolded one rather than equal to the last digit, and the inner
    /// bodies run as often as without rows (once per distinct set of answers, plus checks).
    /// Off, with rows, every inner step is run and simulated as it comes.
    bool fold_inner_rows = false;
    /// Timing-only runs: declares the body steady. A body that issues async copies,
    /// semaphore ops or sync copies runs at every step otherwise (the body memo keeps only runs
    /// that charge work). A steady body's ops (its copies, signals and waits, and the work
    /// between them) are those of the step a period before at every step but the edges' (the
    /// first and last steps of each core's part of the grid, the whole grid on one core); once
    /// the timing model sees whole periods repeat, the runner makes the next ones in bulk
    /// without running the body (docs/model.md §10, "Steady bodies"), checking the period after
    /// each such stretch against the one before it (error K4 where it differs inside the
    /// edges). A body whose ops change at a step that falls in such a stretch is mispredicted,
    /// not caught: declare only bodies whose ops depend on the step near those ends alone.
    /// No effect with data, a timeline, detect_races or an inner pipeline in the body; on a
    /// megacore call, none while the cores signal each other.
    std::optional<body_edges> steady_body{};
    /// Host bytes a run's tables may take (docs/model.md §11, "Memory"): the planner's, pass 1's
    /// change bits, stored once per distinct chunk of 4096 steps (a grid whose index maps repeat
    /// with a period takes memory for that period, not for its length), and the output runs kept
    /// for the revisit checks when an output's blocks come out of order, over which the run is
    /// error MEM1 before anything runs; and, apart, what the timing model records when asked,
    /// per-step rows and the timeline, which grow with the grid (MEM1 at the step it is reached).
    index_t memory_budget = default_memory_budget;
};

namespace detail {

/// Whether a call is planned at compile time (pallas_call::static_plan; the verdict of
/// call/verdict.hpp reads the same): index maps that read no scalar-prefetch value, and
/// steps x (operands + 1) at most PTPU_MAX_STATIC_WORK.
constexpr bool plans_statically(const call_desc& d) {
    return d.n_prefetch == 0 && d.steps() <= index_t{PTPU_MAX_STATIC_WORK} / (d.n_ops() + 1);
}

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

/// The space of that ref: the spec's, named for the operand when its Arg has a name
/// (named_space: a compile error about the ref names the operand).
template <class Arg>
using kernel_space_t = std::conditional_t<Arg::name.empty(), typename Arg::spec::memory,
                                          named_space<typename Arg::spec::memory, Arg::name>>;

/// The ref a body gets for operand Arg: its block shape is static (ops check shapes against it
/// at compile time, OP1). ReadOnly: a ref of const elements (an unaliased input's any/hbm ref,
/// which is the caller's array: writing it is R4).
template <class Arg, bool ReadOnly = false>
using kernel_ref_t = ref<std::conditional_t<ReadOnly, const typename Arg::array::value_type, typename Arg::array::value_type>,
                         kernel_space_t<Arg>, kernel_rank<Arg>(), extents_from_t<kernel_extents<Arg>()>>;

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
        ((c.ops[static_cast<std::size_t>(k)] = describe_operand<typename A::array, typename A::spec, G, ctx>(role),
          copy_name<A>(c.ops[static_cast<std::size_t>(k)]), ++k),
         ...);
    }
    template <class A>
    static constexpr void copy_name([[maybe_unused]] operand_desc& d) {
        if constexpr (requires { A::name.text; })
            for (std::size_t i = 0; i < sizeof d.name; ++i) d.name[i] = A::name.text[i];
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
        // (Each term fits: Array checks its bytes, V3; a sum that does not is V3 in validate().)
        index_t n = 0;
        ((n = add_fits(n, A::size * itemsize(dtype_of<typename A::value_type>), n) ? n : INT64_MAX), ...);
        return n;
    }

    template <class... A>
    static constexpr void prefetch_sizes([[maybe_unused]] call_desc& c, pack<A...>) {
        int k = 0;
        ((c.prefetch_each[static_cast<std::size_t>(k++)] = A::size * itemsize(dtype_of<typename A::value_type>)),
         ...);
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
        prefetch_sizes(c, prefetch{});
        c.cores = hw.pallas_cores();
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

}  // namespace detail

}  // namespace ptpu
