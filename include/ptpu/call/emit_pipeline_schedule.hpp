// Defines emit_pipeline_schedule<Grid<...>, In<Arg<X, Spec>...>, Out<...>>: the schedule of an
// inner pipeline whose arrays, blocks and grid are static, planned at compile time with
// emit_pipeline's capabilities, so static_assert can check its events, DMAs and allocations; and
// Source<Space, X>, the source of such an operand when it is already in VMEM or SMEM.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>

#include "ptpu/call/diagnostics.hpp"
#include "ptpu/call/emit_pipeline.hpp"
#include "ptpu/call/options.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/schedule/plan.hpp"
#include "ptpu/spec/pipeline.hpp"

namespace ptpu {

/// The source of an operand of a static inner pipeline (emit_pipeline_schedule) when it is not
/// an ANY/HBM array: `Arg<Source<vmem, X>, Spec>` is an X already in VMEM (the enclosing call's
/// window or scratch), as the run-time pipeline learns from the source ref's type. A spec of the
/// source's space aliases it (S56, S17): no window, no DMA, no event. A plain X is an ANY array.
template <class Space, class A>
struct Source : A {
    using memory = Space;
};

namespace detail {
template <class A>
struct source_space {
    using type = any;
};
template <class S, class A>
struct source_space<Source<S, A>> {
    using type = S;
};
}  // namespace detail

/// The schedule of an inner pipeline whose arrays, blocks and grid are static, as a constant:
/// `emit_pipeline_schedule<Grid<4>, In<Arg<X, Spec>>, Out<Arg<Y, Spec>>>::events` (and
/// `dma_count`, `info`, `allocation_bytes`) are what emit_pipeline runs over arrays of those
/// shapes, planned at compile time with emit_pipeline's capabilities (any input buffer count,
/// lookahead, S52), so static_assert can check them. Sources are ANY arrays unless given as
/// `Source<vmem, X>` (or smem): an operand whose spec aliases its source (S56) has no window,
/// DMA or event, as at run time. (Index maps taking extra arguments are planned at run time.)
template <class... Opts>
struct emit_pipeline_schedule {
private:
    using traits = detail::call_traits<Opts...>;
    // S56 exactly as the run-time describe_inner: the spaces are checked (29, M1, 30) and an
    // operand whose spec is its source's space, or hbm, is an aliased view.
    template <class... A>
    static constexpr void mark_aliased(pipeline_desc& p, int first, detail::pack<A...>) {
        int k = first;
        ((static_cast<void>(detail::check_inner_spaces<
                            typename A::spec, typename detail::source_space<typename A::array>::type>()),
          p.ops[static_cast<std::size_t>(k++)].aliased =
              detail::inner_aliased<typename A::spec,
                                    typename detail::source_space<typename A::array>::type>()),
         ...);
    }
    static constexpr pipeline_desc make_desc() {
        pipeline_desc p = traits::describe();  // the pipeline part of the description
        p.has_semantics = false;               // semantics only steer a core split (core_axis)
        p.cores = 1;
        mark_aliased(p, 0, typename traits::ins{});
        mark_aliased(p, traits::n_in, typename traits::outs{});
        return p;
    }

public:
    static constexpr pipeline_desc desc = make_desc();
    static constexpr std::array<block_fn, max_operands> maps = traits::maps();
    static constexpr plan_info info =
        plan_pipeline(desc, emit_pipeline_caps, traits::describe().hw.generation, maps.data(), nullptr,
                      [](const event&) {});

    /// The slice of its array the DMA of operand `op` (inputs then outputs) at inner grid point
    /// `g` moves (dma_slice_of): with the tiling option (`tiled`; upstream's emit_pipeline always
    /// tiles) a partial last block rounds up to the memory tile (S35). V1 when `g` does not have
    /// the grid's rank or `op` is not an operand; the index map's own errors as at run time.
    static constexpr dma_slice slice_of(int op, std::initializer_list<index_t> g, bool tiled) {
        if (static_cast<int>(g.size()) != desc.grid_rank || op < 0 || op >= desc.n_ops())
            throw error(
                "V1", "emit_pipeline_schedule::slice_of",
                "no operand " + std::to_string(op) + " at a grid point of rank " + std::to_string(g.size()),
                "give an operand index (inputs then outputs) and one index per grid dim");
        pipeline_desc p = desc;
        p.tiling = tiled;
        const index_t* at = g.begin();
        return dma_slice_of(p, op, maps[static_cast<std::size_t>(op)](at, nullptr),
                            traits::describe().hw.generation);
    }
    // A broken rule stops compilation with that rule's one message (call/diagnostics.hpp).
    static_assert(
        sizeof(*detail::problem_report<info.problem, detail::problem_message(info.problem, desc)>()) > 0);

private:
    static constexpr std::array<event, info.problem.ok() ? info.events : 0> make_events() {
        std::array<event, info.problem.ok() ? info.events : 0> a{};
        if constexpr (a.size() > 0) {
            event* out = a.data();
            plan_pipeline(desc, emit_pipeline_caps, traits::describe().hw.generation, maps.data(), nullptr,
                          [&](const event& e) { *out++ = e; });
        }
        return a;
    }

public:
    static constexpr auto events = make_events();
    static constexpr index_t count(event_kind k, int op = -1) {
        index_t n = 0;
        for (const event& e : events)
            if (e.kind == k && (op < 0 || e.op == op)) ++n;
        return n;
    }
    /// The bytes of VMEM scratch the pipeline's allocations take (emit_pipeline_with_allocations).
    static constexpr index_t allocation_bytes() { return detail::allocation_bytes(info, desc.n_ops()); }
    static constexpr index_t dma_count(int op = -1) {
        index_t n = 0;
        for (int i = 0; i < desc.n_ops(); ++i)
            if (op < 0 || op == i) n += info.ops[static_cast<std::size_t>(i)].dmas;
        return n;
    }
};

}  // namespace ptpu
