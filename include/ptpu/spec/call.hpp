// Defines the nouns of a pallas_call type besides BlockSpec: Array, Arg, In, Out, Scratch, Grid,
// Semantics, Chip, VmemLimit, ScalarPrefetch, Alias, and their grouping (S12, S43, S46, S50, S51).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/message.hpp"
#include "ptpu/hw/chip.hpp"
#include "ptpu/hw/presets.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/spec/block.hpp"

// The messages of the nouns' own checks, shared with the verdict (call/verdict.hpp), which
// computes them from the template arguments without instantiating the noun.
#define PTPU_RULE_TEXT_T1_ARRAY                          \
    "ptpu[T1] Array: unsupported element type; use float, bf16, " \
    "f16, int32_t, int16_t, int8_t, uint8_t or bool"
#define PTPU_RULE_TEXT_V1_ARRAY_DIMS \
    "ptpu[V1] Array: every dimension must be >= 1; give each dim an extent of at least 1"
#define PTPU_RULE_TEXT_V1_ARRAY_RANK "ptpu[V1] Array: rank above ptpu's max_rank (6); use at most 6 dims"
#define PTPU_RULE_TEXT_V1_SCRATCH_DIMS \
    "ptpu[V1] Scratch: every dimension must be >= 1; give each dim an extent of at least 1"
#define PTPU_RULE_TEXT_V3_ARRAY \
    "ptpu[V3] Array: the element count or bytes (dims multiplied, times the itemsize) overflow int64 " \
    "(index_t); use smaller dims"
#define PTPU_RULE_TEXT_36_SEMAPHORE_CELLS                                                       \
    "ptpu[36] Scratch: semaphore scratch holds dma_semaphore (SemaphoreType.DMA) or "            \
    "regular_semaphore (SemaphoreType.REGULAR) cells; declare Scratch<semaphore, dma_semaphore, "   \
    "...> or Scratch<semaphore, regular_semaphore, ...>"
#define PTPU_RULE_TEXT_36_CELLS_SPACE                                                           \
    "ptpu[36] Scratch: dma_semaphore and regular_semaphore cells live in the semaphore space; " \
    "declare Scratch<semaphore, dma_semaphore, ...>"

namespace ptpu {

namespace detail {
/// The product of static extents, or -1 when it overflows index_t (V3).
template <index_t... Dims>
constexpr index_t static_elems() {
    index_t n = 1;
    return ((mul_fits(n, Dims, n)) && ...) ? n : -1;
}
/// Whether an array of T with these dims has an element count and bytes that fit index_t (an
/// unsupported T is T1's, reported alone).
template <class T, index_t... Dims>
constexpr bool static_bytes_fit() {
    if constexpr (!element_type<T>) {
        return true;
    } else {
        index_t n = static_elems<Dims...>();
        return n >= 0 && mul_fits(n, itemsize(dtype_of<T>), n);
    }
}
/// The first dim that is not >= 1 (V1), or -1.
template <index_t... D>
constexpr int first_bad_extent() {
    int k = 0, bad = -1;
    ((bad = bad < 0 && D <= 0 ? k : bad, ++k), ...);
    return bad;
}
/// Array<T, D...>'s checks (noun_finding, spec/block.hpp): T1, V1 (a dim below 1, then the
/// rank), V3.
template <class T, index_t... D>
constexpr noun_finding array_check() {
    if constexpr (!element_type<T>)
        return {noun_rule::array_dtype, PTPU_RULE_TEXT_T1_ARRAY};
    else if constexpr (first_bad_extent<D...>() >= 0)
        return {noun_rule::array_extent, PTPU_RULE_TEXT_V1_ARRAY_DIMS, first_bad_extent<D...>()};
    else if constexpr (sizeof...(D) > max_rank)
        return {noun_rule::array_rank, PTPU_RULE_TEXT_V1_ARRAY_RANK};
    else if constexpr (!static_bytes_fit<T, D...>())
        return {noun_rule::array_bytes, PTPU_RULE_TEXT_V3_ARRAY};
    else
        return {};
}
/// Rule 36 for scratch of element type T in space Space (Scratch and dynamic_call's Operand):
/// semaphore scratch holds semaphore cells (int32_t: a regular semaphore's older spelling), and
/// only semaphore scratch does. noun_rule::ok when it holds.
template <class Space, class T>
constexpr noun_rule semaphore_scratch_rule() {
    constexpr bool sem_space = std::is_same_v<Space, semaphore>;
    if constexpr (sem_space && !is_semaphore_cell<T> && !std::is_same_v<T, std::int32_t>)
        return noun_rule::semaphore_cells;
    else if constexpr (!sem_space && is_semaphore_cell<T>)
        return noun_rule::cells_space;
    else
        return noun_rule::ok;
}
/// Scratch<Space, T, D...>'s checks: S5 (the space), V1 (a dim below 1), 36 (semaphore scratch
/// holds semaphore cells, and only it does), T1 (the element type; its static_assert is
/// dtype_of's, where the buffer is described).
template <class Space, class T, index_t... D>
constexpr noun_finding scratch_check() {
    if constexpr (!scratch_space<Space>)
        return {noun_rule::scratch_space, PTPU_RULE_TEXT_S5};
    else if constexpr (first_bad_extent<D...>() >= 0)
        return {noun_rule::scratch_extent, PTPU_RULE_TEXT_V1_SCRATCH_DIMS, first_bad_extent<D...>()};
    else if constexpr (semaphore_scratch_rule<Space, T>() == noun_rule::semaphore_cells)
        return {noun_rule::semaphore_cells, PTPU_RULE_TEXT_36_SEMAPHORE_CELLS};
    else if constexpr (semaphore_scratch_rule<Space, T>() == noun_rule::cells_space)
        return {noun_rule::cells_space, PTPU_RULE_TEXT_36_CELLS_SPACE};
    else if constexpr (!std::is_same_v<Space, semaphore> && !element_type<T>)
        return {noun_rule::scratch_dtype, PTPU_RULE_TEXT_T1_DTYPE};
    else
        return {};
}
}  // namespace detail

/// The type of an HBM operand: dtype and static shape. Array<float, 512, 512>.
template <class T, index_t... Dims>
struct Array {
    using value_type = T;
    static constexpr std::size_t rank = sizeof...(Dims);
    static constexpr std::array<index_t, rank> shape{Dims...};
    /// The element count (-1 where it overflows: the V3 static_assert below).
    static constexpr index_t size = detail::static_elems<Dims...>();
    // One check, one rule each (detail::array_check, which check_call reads too).
    static_assert(detail::array_check<T, Dims...>().rule != detail::noun_rule::array_dtype,
                  PTPU_RULE_TEXT_T1_ARRAY);
    static_assert(detail::array_check<T, Dims...>().rule != detail::noun_rule::array_extent,
                  PTPU_RULE_TEXT_V1_ARRAY_DIMS);
    static_assert(detail::array_check<T, Dims...>().rule != detail::noun_rule::array_rank,
                  PTPU_RULE_TEXT_V1_ARRAY_RANK);
    static_assert(detail::array_check<T, Dims...>().rule != detail::noun_rule::array_bytes,
                  PTPU_RULE_TEXT_V3_ARRAY);
};

/// One operand: its array type, its BlockSpec (default: the whole array in VMEM) and its name
/// (operand_name, core/message.hpp: at most 15 characters, used in reports and in messages).
template <class A, class Spec = BlockSpec<>, operand_name Name = operand_name{}>
struct Arg {
    using array = A;
    using spec = Spec;
    static constexpr operand_name name = Name;
};

/// The inputs and outputs of a call, in kernel-signature order (S46).
template <class... Args>
struct In {};
template <class... Args>
struct Out {};

/// A scratch buffer (scratch_shapes, S5, S57): persistent across steps, one per core.
template <class Space, class T, index_t... Dims>
struct Scratch {
    using memory = Space;
    using value_type = T;
    static constexpr std::size_t rank = sizeof...(Dims);
    static constexpr std::array<index_t, rank> shape{Dims...};
    // One check, one rule each (detail::scratch_check, which check_call reads too).
    static_assert(rules::require_scratch<Space>());
    static_assert(detail::scratch_check<Space, T, Dims...>().rule != detail::noun_rule::scratch_extent,
                  PTPU_RULE_TEXT_V1_SCRATCH_DIMS);
    static_assert(detail::scratch_check<Space, T, Dims...>().rule != detail::noun_rule::semaphore_cells,
                  PTPU_RULE_TEXT_36_SEMAPHORE_CELLS);
    static_assert(detail::scratch_check<Space, T, Dims...>().rule != detail::noun_rule::cells_space,
                  PTPU_RULE_TEXT_36_CELLS_SPACE);
};

/// The grid (S12): Grid<> is one invocation.
template <index_t... Dims>
struct Grid {
    static constexpr std::size_t rank = sizeof...(Dims);
    static constexpr std::array<index_t, rank> dims{Dims...};
};

/// dimension_semantics values (S43).
enum class dim_semantics : std::uint8_t { parallel, arbitrary };
inline constexpr dim_semantics parallel = dim_semantics::parallel;
inline constexpr dim_semantics arbitrary = dim_semantics::arbitrary;

template <dim_semantics... S>
struct Semantics {
    static constexpr std::size_t rank = sizeof...(S);
    static constexpr std::array<dim_semantics, rank> values{S...};
};

/// The option types Chip<...> stands for. A preset is held by reference, so that diagnostics print
/// it by name, chip_preset<ptpu::tpu::v5e>, rather than as its 27 fields; any other chip value is
/// held as a value, chip_value<ptpu::chip{"mine", ...}>. Both give the chip as `value`.
template <const chip& C>
struct chip_preset {
    static constexpr const chip& value = C;
};
template <chip C>
struct chip_value {
    static constexpr chip value = C;
};

namespace detail {
// Which option type a chip value is: a preset's value (wherever it was written: tpu::v5e, a
// copy of it, a template parameter `template <chip C>` given tpu::v5e) is its chip_preset, by
// explicit specialization, so the compiler compares values once, with no constexpr evaluation.
template <chip C>
struct chip_option {
    using type = chip_value<C>;
};
template <>
struct chip_option<tpu::v4> {
    using type = chip_preset<tpu::v4>;
};
template <>
struct chip_option<tpu::v5e> {
    using type = chip_preset<tpu::v5e>;
};
template <>
struct chip_option<tpu::v5p> {
    using type = chip_preset<tpu::v5p>;
};
template <>
struct chip_option<tpu::v6e> {
    using type = chip_preset<tpu::v6e>;
};
template <>
struct chip_option<tpu::v7x> {
    using type = chip_preset<tpu::v7x>;
};
}  // namespace detail

/// The chip the call is checked against and timed on: Chip<tpu::v5e>, or any chip value (a
/// constexpr copy of a preset with the fields you calibrated, a template parameter). In
/// diagnostics a preset reads chip_preset<ptpu::tpu::v5e>.
template <chip C>
using Chip = typename detail::chip_option<C>::type;

/// vmem_limit_bytes (default: the chip's scoped limit, check 24).
template <index_t Bytes>
struct VmemLimit {
    static constexpr index_t value = Bytes;
};

/// PrefetchScalarGridSpec(num_scalar_prefetch=n) (S51): these operands are copied to SMEM before
/// the pipeline and passed to every index map and to the body first.
template <class... Arrays>
struct ScalarPrefetch {};

/// input_output_aliases={In: Out} (S50).
template <int InIndex, int OutIndex>
struct Alias {
    static constexpr int in = InIndex;
    static constexpr int out = OutIndex;
};

namespace detail {

// What kind of pallas_call option a type is.
enum class option_kind : std::uint8_t {
    grid,
    in,
    out,
    scratch,
    semantics,
    chip,
    vmem_limit,
    prefetch,
    alias,
    unknown
};
template <class T>
inline constexpr option_kind kind_of = option_kind::unknown;
template <index_t... D>
inline constexpr option_kind kind_of<Grid<D...>> = option_kind::grid;
template <class... A>
inline constexpr option_kind kind_of<In<A...>> = option_kind::in;
template <class... A>
inline constexpr option_kind kind_of<Out<A...>> = option_kind::out;
template <class S, class T, index_t... D>
inline constexpr option_kind kind_of<Scratch<S, T, D...>> = option_kind::scratch;
template <dim_semantics... S>
inline constexpr option_kind kind_of<Semantics<S...>> = option_kind::semantics;
template <const chip& C>
inline constexpr option_kind kind_of<chip_preset<C>> = option_kind::chip;
template <chip C>
inline constexpr option_kind kind_of<chip_value<C>> = option_kind::chip;
template <index_t B>
inline constexpr option_kind kind_of<VmemLimit<B>> = option_kind::vmem_limit;
template <class... A>
inline constexpr option_kind kind_of<ScalarPrefetch<A...>> = option_kind::prefetch;
template <int I, int O>
inline constexpr option_kind kind_of<Alias<I, O>> = option_kind::alias;

template <option_kind K>
struct is_kind {
    template <class T>
    struct test : std::bool_constant<kind_of<T> == K> {};
};

// Collects all options of one kind (scratch, alias) into a pack holder.
template <class... T>
struct pack {
    static constexpr std::size_t size = sizeof...(T);
};
template <class P, class T>
struct append;
template <class... T, class U>
struct append<pack<T...>, U> {
    using type = pack<T..., U>;
};
template <option_kind K, class Acc, class... Opts>
struct collect {
    using type = Acc;
};
template <option_kind K, class Acc, class First, class... Rest>
struct collect<K, Acc, First, Rest...> {
    using type =
        typename collect<K, std::conditional_t<kind_of<First> == K, typename append<Acc, First>::type, Acc>,
                         Rest...>::type;
};
template <option_kind K, class... Opts>
using collect_t = typename collect<K, pack<>, Opts...>::type;

template <class T>
struct args_of;
template <class... A>
struct args_of<In<A...>> {
    using type = pack<A...>;
};
template <class... A>
struct args_of<Out<A...>> {
    using type = pack<A...>;
};
template <class... A>
struct args_of<ScalarPrefetch<A...>> {
    using type = pack<A...>;
};
}  // namespace detail

}  // namespace ptpu
