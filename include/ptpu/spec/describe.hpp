// Defines call_desc, the constexpr value describing a whole pallas_call (a pipeline_desc plus
// chip, budgets, scratch, scalar prefetch, aliases), built from the option types, and the
// per-operand index-map adaptor the planner evaluates (S7, S46). Validation of a description
// lives in spec/validate.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/index.hpp"
#include "ptpu/spec/block.hpp"
#include "ptpu/spec/call.hpp"
#include "ptpu/spec/pipeline.hpp"

namespace ptpu {

/// Most scratch buffers one call may have.
inline constexpr std::size_t max_scratch = 16;

struct scratch_desc {
    space_kind space = space_kind::vmem;
    dtype type = dtype::f32;
    int rank = 0;
    std::array<index_t, max_rank> shape{};
    [[nodiscard]] constexpr index_t elems() const {
        index_t n = 1;
        for (int i = 0; i < rank; ++i) n *= shape[static_cast<std::size_t>(i)];
        return n;
    }
};

/// The whole call as data: its pipeline (the grid, the operands and their windows) plus what
/// only a pallas_call has: the chip it is checked against and timed on, the VMEM limit, scratch
/// buffers, scalar-prefetch operands and input/output aliases. What the validator checks and the
/// planner schedules.
struct call_desc : pipeline_desc {
    chip hw{};
    index_t vmem_limit = 0;
    int n_prefetch = 0;
    index_t prefetch_bytes = 0;
    std::array<index_t, max_operands> prefetch_each{};  ///< bytes of each scalar-prefetch operand
    int n_scratch = 0;
    std::array<scratch_desc, max_scratch> scratch{};
    int n_alias = 0;
    std::array<std::pair<int, int>, max_operands> aliases{};
    int duplicate_option = -1;  ///< an option kind given twice (check 10)
    bool unknown_option = false;
};

namespace detail {

template <class T>
inline constexpr bool is_index_tuple = false;
template <std::size_t R>
inline constexpr bool is_index_tuple<index_tuple<R>> = true;
template <std::size_t R, std::uint64_t M>
inline constexpr bool is_index_tuple<index_tuple_of<R, M>> = true;

template <class A>
constexpr std::array<index_t, max_rank> padded_shape() {
    std::array<index_t, max_rank> s{};
    for (std::size_t i = 0; i < A::rank; ++i) s[i] = A::shape[i];
    return s;
}

// The index map's argument list: G grid indices, then the prefetch refs (Ctx is void or a
// std::tuple of refs).
template <std::size_t I>
using grid_arg = index_t;
template <class Map, class Seq, class Ctx>
struct map_call;
template <class Map, std::size_t... I>
struct map_call<Map, std::index_sequence<I...>, void> {
    static constexpr bool ok = std::is_invocable_v<const Map&, grid_arg<I>...>;
    using result = typename std::conditional_t<ok, std::invoke_result<const Map&, grid_arg<I>...>,
                                               std::type_identity<void>>::type;
    static constexpr decltype(auto) call(const Map& m, const index_t* g, const void*) { return m(g[I]...); }
};
template <class Map, std::size_t... I, class... Refs>
struct map_call<Map, std::index_sequence<I...>, std::tuple<Refs...>> {
    static constexpr bool ok = std::is_invocable_v<const Map&, grid_arg<I>..., const Refs&...>;
    using result =
        typename std::conditional_t<ok, std::invoke_result<const Map&, grid_arg<I>..., const Refs&...>,
                                    std::type_identity<void>>::type;
    static decltype(auto) call(const Map& m, const index_t* g, const void* ctx) {
        const auto& refs = *static_cast<const std::tuple<Refs...>*>(ctx);
        return std::apply([&](const Refs&... r) { return m(g[I]..., r...); }, refs);
    }
};
template <class Spec, std::size_t G, class Ctx>
using map_call_t = map_call<std::remove_cvref_t<decltype(Spec::index_map)>, std::make_index_sequence<G>, Ctx>;

/// Checks 4 and 5 read from the map's return type, when it states its slice entries (idx(...)'s
/// index_tuple_of): the first dim whose block kind disagrees with its entry (a bounded_slice dim
/// given a scalar, another dim given a ds), or -1 (none, or a type that does not say: the planner
/// checks those entries at run time). `block_rank`: the block's dims (an array's for Full).
template <class Spec, std::size_t G, class Ctx>
constexpr int kind_mismatch(int block_rank) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(Spec::index_map)>, zero_map_t>) {
        return -1;
    } else {
        using R = std::remove_cvref_t<typename map_call_t<Spec, G, Ctx>::result>;
        if constexpr (!masked_index_tuple<R>) {
            return -1;
        } else {
            if (static_cast<int>(R::size()) != block_rank) return -1;  // check 2 first
            for (int d = 0; d < block_rank; ++d) {
                bool want_slice = false;  // Full: every dim blocked
                if constexpr (!Spec::shape::full) {
                    const dim_kind k = Spec::shape::dims[static_cast<std::size_t>(d)].kind;
                    if (k == dim_kind::invalid) return -1;  // check 7, reported by Block itself
                    want_slice = k == dim_kind::bounded_slice;
                }
                if (want_slice != (((R::slice_mask >> d) & 1U) != 0)) return d;
            }
            return -1;
        }
    }
}

template <class Spec, std::size_t G, class Ctx>
constexpr map_issue issue_of(int rank, int& returned) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(Spec::index_map)>, zero_map_t>) {
        returned = rank;
        return map_issue::none;
    } else {
        using R = typename map_call_t<Spec, G, Ctx>::result;
        if constexpr (std::is_void_v<R>)
            return map_issue::arity;
        else if constexpr (!is_index_tuple<std::remove_cvref_t<R>>)
            return map_issue::not_tuple;
        else {
            returned = static_cast<int>(std::remove_cvref_t<R>::size());
            if (returned != rank) return map_issue::wrong_rank;
            return kind_mismatch<Spec, G, Ctx>(rank) >= 0 ? map_issue::entry_kind : map_issue::none;
        }
    }
}

/// The planner's view of one operand's index map: pads the result to max_rank.
template <class Spec, std::size_t G, class Ctx>
constexpr index_tuple<max_rank> eval_map(const index_t* g, const void* ctx) {
    index_tuple<max_rank> out{};  // unused trailing entries stay {0, -1}: scalars 0
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(Spec::index_map)>, zero_map_t>) {
        (void)g;
        (void)ctx;
    } else {
        using M = map_call_t<Spec, G, Ctx>;
        if constexpr (is_index_tuple<std::remove_cvref_t<typename M::result>>) {
            const auto r = M::call(Spec::index_map, g, ctx);
            for (std::size_t i = 0; i < r.size() && i < max_rank; ++i) out.v[i] = r.v[i];
        }
    }
    return out;
}

/// What a BlockSpec says of its operand, as values: what a static spec's types state and a
/// run-time spec (dynamic_spec) holds as members. One describer (describe_block) writes it into
/// an operand's description for every front end.
struct spec_values {
    space_kind space = space_kind::vmem;  ///< the block's memory space
    bool full = true;                     ///< block_shape=None: the whole source
    int rank = 0;                         ///< the block's dims (not full)
    std::array<block_dim, max_rank> dims{};
    int buffer_count = 2;
    bool explicit_mode = false;  ///< a pipeline_mode was given
    bool lookahead = false;
    int prefetched = 0;
    bool revisit_any = false;
    bool zero_map = true;  ///< index_map=None
};

/// Writes `v` into `d`, over a source whose dims are d.shape[0, d.rank): the block dims (a full
/// block: the whole source), buffering, revisit mode and whether its map is the zero map.
constexpr void describe_block(operand_desc& d, const spec_values& v) {
    d.space = v.space;
    d.full_block = v.full;
    if (v.full) {
        d.block_rank = d.rank;
        for (std::size_t i = 0; i < static_cast<std::size_t>(d.rank); ++i)
            d.block[i] = block_dim{dim_kind::blocked, d.shape[i], 0, 0};
    } else {
        d.block_rank = v.rank;
        for (std::size_t i = 0; i < static_cast<std::size_t>(v.rank); ++i) d.block[i] = v.dims[i];
    }
    d.buffer_count = v.buffer_count;
    d.explicit_mode = v.explicit_mode;
    d.lookahead = v.lookahead;
    d.prefetched = v.prefetched;
    d.revisit_any = v.revisit_any;
    d.zero_map = v.zero_map;
}

/// A static spec's options as values.
template <class Spec>
constexpr spec_values spec_values_of() {
    using Shape = typename Spec::shape;
    spec_values v;
    v.space = Spec::memory::kind;
    v.full = Shape::full;
    if constexpr (!Shape::full) {
        v.rank = static_cast<int>(Shape::rank);
        for (std::size_t i = 0; i < Shape::rank; ++i) v.dims[i] = Shape::dims[i];
    }
    v.buffer_count = Spec::mode::buffer_count;
    v.explicit_mode = Spec::explicit_mode;
    v.lookahead = Spec::mode::lookahead;
    v.prefetched = Spec::mode::prefetched_count;
    v.revisit_any = Spec::revisit::any;
    v.zero_map = std::is_same_v<std::remove_cvref_t<decltype(Spec::index_map)>, zero_map_t>;
    return v;
}

/// describe_block for a static spec (pallas_call's operands, an emit_pipeline's).
template <class Spec>
constexpr void describe_spec(operand_desc& d) {
    describe_block(d, spec_values_of<Spec>());
}

template <class A, class Spec, std::size_t G, class Ctx>
constexpr operand_desc describe_operand(operand_role role) {
    operand_desc d;
    d.role = role;
    d.type = dtype_of<typename A::value_type>;
    d.rank = static_cast<int>(A::rank);
    d.shape = padded_shape<A>();
    describe_spec<Spec>(d);
    int returned = 0;
    d.issue = issue_of<Spec, G, Ctx>(d.block_rank, returned);
    d.map_returned = returned;
    if (d.issue == map_issue::entry_kind) d.map_dim = kind_mismatch<Spec, G, Ctx>(d.block_rank);
    return d;
}

template <class S>
constexpr scratch_desc describe_scratch() {
    scratch_desc d;
    d.space = S::memory::kind;
    if constexpr (S::memory::kind == space_kind::semaphore)
        d.type = dtype::i32;  // one int32 counter per semaphore
    else
        d.type = dtype_of<typename S::value_type>;
    d.rank = static_cast<int>(S::rank);
    for (std::size_t i = 0; i < S::rank; ++i) d.shape[i] = S::shape[i];
    return d;
}

}  // namespace detail

}  // namespace ptpu
