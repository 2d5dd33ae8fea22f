// Defines the verdict on a static pallas_call configuration without failing the build:
// check_call<Opts...>() (the first broken rule: id, message, values, or none), the concept
// valid_call<Opts...> and the variable pallas_call_ok<Opts...>. They compute what
// pallas_call<Opts...> would report from the same functions (describe, validate, the planner's
// analysis, the same PTPU_MAX_STATIC_WORK bound), and never instantiate pallas_call, so no
// static_assert fires: a `requires` clause or a filter over configurations can ask.
// What stays a hard error here, as in pallas_call, carries no rule id: types that are not ptpu's
// vocabulary (In<float>, Arg<int>), an index map whose body does not compile for the grid
// indices, and a plan whose constant evaluation fails (a map with undefined behaviour, or more
// work than the compiler's constexpr limit allows when PTPU_MAX_STATIC_WORK was raised alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

#include "ptpu/call/options.hpp"
#include "ptpu/core/dtype.hpp"
#include "ptpu/core/integers.hpp"
#include "ptpu/core/message.hpp"
#include "ptpu/memory/rules.hpp"
#include "ptpu/memory/space.hpp"
#include "ptpu/schedule/analyze.hpp"
#include "ptpu/spec/block.hpp"
#include "ptpu/spec/call.hpp"
#include "ptpu/spec/describe.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu {

/// The first rule a configuration breaks, or none (ok()). A compile-time value: message() is
/// the rule's one message, its literal `ptpu[ID] where: what; fix` (pallas_call's compile error
/// adds what it is about, the operand, the dim and the values: values()); rule() is the id in
/// it ("24", "S34").
class verdict {
public:
    constexpr verdict() = default;
    constexpr verdict(const char* text, const ptpu::diag& values, bool complete)
        : text_(text), values_(values), complete_(complete) {}

    [[nodiscard]] constexpr bool ok() const { return text_ == nullptr; }
    /// `ptpu[ID] where: what; fix`, or empty when ok().
    [[nodiscard]] constexpr std::string_view message() const { return text_ ? text_ : ""; }
    /// The rule id between "ptpu[" and "]", or empty when ok().
    [[nodiscard]] constexpr std::string_view rule() const {
        const std::string_view m = message();
        const std::size_t open = m.find('[');
        const std::size_t close = m.find(']');
        return open == std::string_view::npos || close == std::string_view::npos
                   ? std::string_view{}
                   : m.substr(open + 1, close - open - 1);
    }
    /// False when the grid-walking checks (4, 5, 14's and 17's index maps, 18, 24, SMEM1, S34,
    /// S39, MC1) are left to the run: index maps that read scalar-prefetch values, or more than
    /// PTPU_MAX_STATIC_WORK of planning. pallas_call checks exactly the same at compile time.
    [[nodiscard]] constexpr bool complete() const { return complete_; }
    /// The values of a call rule (operand, dim, block index, iterations, bytes); for the rules of
    /// a noun (Array, Scratch, Block, BlockSpec) only the operand, inputs then outputs, or -1.
    [[nodiscard]] constexpr const ptpu::diag& values() const { return values_; }
    /// Those values as text, as a run-time ptpu::error appends them.
    [[nodiscard]] std::string details() const { return ok() ? std::string{} : describe(values_); }

private:
    const char* text_ = nullptr;
    ptpu::diag values_{};
    bool complete_ = true;
};

namespace detail {

// ---- The nouns' own checks, from their template arguments --------------------------------------
// Array, Scratch, Block and BlockSpec check themselves with static_asserts in their bodies, which
// fire as soon as pallas_call's description reads them. Matching a partial specialization
// instantiates nothing, so these call the same check functions the nouns' static_asserts read
// (array_check, scratch_check, block_check, spec_check: noun_finding, spec/block.hpp) off the
// template arguments first, in the order pallas_call's description reaches them.
// A type that is not the vocabulary at all (In<float>, Arg<int>, a Shape that is neither Block
// nor Full) matches none of these and stays a hard error, as in pallas_call (no rule id).

template <class T>
struct noun_array {
    static constexpr noun_finding value{};
};
template <class T, index_t... D>
struct noun_array<Array<T, D...>> {
    static constexpr noun_finding value = array_check<T, D...>();
};

template <class Shape>
struct noun_shape {  // Full
    static constexpr noun_finding value{};
};
template <auto... D>
struct noun_shape<Block<D...>> {
    static constexpr noun_finding value = block_check<D...>();
};

// One operand: its BlockSpec (19, 29), its Array (T1, V1), its block shape (13, 7).
template <class Arg>
struct noun_arg {
    static constexpr noun_finding value{};
    static constexpr operand_name name{};
};
template <class A, class Shape, auto Map, operand_name Name, class... Options>
struct noun_arg<Arg<A, BlockSpec<Shape, Map, Options...>, Name>> {
    static constexpr noun_finding value = spec_check<Options...>().text ? spec_check<Options...>()
                                          : noun_array<A>::value.text   ? noun_array<A>::value
                                                                        : noun_shape<Shape>::value;
    static constexpr operand_name name = Name;
};

template <class S>
struct noun_scratch {
    static constexpr noun_finding value{};
};
template <class Space, class T, index_t... D>
struct noun_scratch<Scratch<Space, T, D...>> {
    static constexpr noun_finding value = scratch_check<Space, T, D...>();
};

/// The first noun check that would fire, and what it is about: an operand (inputs then outputs,
/// with its Arg name), a scalar-prefetch array or a scratch buffer, and the dim when it is one.
struct noun_problem {
    const char* text = nullptr;
    int op = -1;  ///< operand (inputs then outputs), -1 for scalar prefetch and scratch
    enum class of : std::uint8_t { operand, prefetch, scratch } what = of::operand;
    int index = -1;  ///< the prefetch array's or scratch buffer's index (what != operand)
    int dim = -1;
    operand_name name{};
};
struct no_noun_problem {};
struct noun_entry {
    noun_finding found;
    operand_name name;
};
constexpr noun_problem first_of(std::initializer_list<noun_entry> entries, noun_problem::of what, int first_op) {
    int k = 0;
    for (const noun_entry& e : entries) {
        if (e.found.text != nullptr) {
            noun_problem p;
            p.text = e.found.text;
            p.what = what;
            p.op = what == noun_problem::of::operand ? first_op + k : -1;
            p.index = what == noun_problem::of::operand ? -1 : k;
            p.dim = e.found.dim;
            p.name = e.name;
            return p;
        }
        ++k;
    }
    return {};
}
template <class... A>
constexpr noun_problem arrays_problem(pack<A...>) {
    return detail::first_of({noun_entry{noun_array<A>::value, {}}...}, noun_problem::of::prefetch, -1);
}
template <class... A>
constexpr noun_problem args_problem(pack<A...>, int first_op) {
    return detail::first_of({noun_entry{noun_arg<A>::value, noun_arg<A>::name}...}, noun_problem::of::operand,
                            first_op);
}
template <class... S>
constexpr noun_problem scratch_problem(pack<S...>) {
    return detail::first_of({noun_entry{noun_scratch<S>::value, {}}...}, noun_problem::of::scratch, -1);
}

/// The first noun check that would fire, in the order call_traits reaches the nouns: the
/// scalar-prefetch arrays, the inputs, the outputs, the scratch buffers.
template <class... Opts>
constexpr noun_problem nouns_problem() {
    using ins = typename args_of<option_t<option_kind::in, In<>, Opts...>>::type;
    using outs = typename args_of<option_t<option_kind::out, Out<>, Opts...>>::type;
    using prefetch = typename args_of<option_t<option_kind::prefetch, ScalarPrefetch<>, Opts...>>::type;
    // Qualified calls: argument-dependent lookup would instantiate every type in the packs (to
    // find their base classes), firing the very static_asserts this reads ahead of.
    for (const noun_problem p : {detail::arrays_problem(prefetch{}), detail::args_problem(ins{}, 0),
                                 detail::args_problem(outs{}, static_cast<int>(ins::size)),
                                 detail::scratch_problem(collect_t<option_kind::scratch, Opts...>{})})
        if (p.text != nullptr) return p;
    return {};
}

/// The message of a noun's problem, naming what it is about: "input `weights`", "output 0",
/// "scalar-prefetch 1", "scratch 0", and the dim.
constexpr rule_message noun_message(const noun_problem& p, int n_in) {
    rule_message about;
    switch (p.what) {
        case noun_problem::of::operand:
            about << (p.op < n_in ? "input " : "output ");
            if (!p.name.empty())
                about << "`" << p.name << "`";
            else
                about << (p.op < n_in ? p.op : p.op - n_in);
            break;
        case noun_problem::of::prefetch:
            about << "scalar-prefetch " << p.index;
            break;
        case noun_problem::of::scratch:
            about << "scratch " << p.index;
            break;
    }
    if (p.dim >= 0) about << ", dim " << p.dim;
    return with_subject(p.text, about.view());
}

/// noun_message, or an empty message when there is no problem.
constexpr rule_message noun_message_if(const noun_problem& p, int n_in) {
    return p.text == nullptr ? rule_message{} : noun_message(p, n_in);
}
/// What a noun's problem reports: sizeof(*noun_report<m>()) is the compile error showing m
/// (core/message.hpp), nothing when m is empty.
template <rule_message M>
constexpr auto* noun_report() {
    using type = std::conditional_t<M.empty(), no_noun_problem, compile_error<M>>;
    return static_cast<type*>(nullptr);
}

/// How many inputs, outputs and scalar-prefetch arrays a pallas_call's options declare (read
/// off In<...>, Out<...> and ScalarPrefetch<...> without instantiating what they hold).
template <class... Opts>
constexpr int inputs_of() {
    return static_cast<int>(args_of<option_t<option_kind::in, In<>, Opts...>>::type::size);
}
template <class... Opts>
constexpr std::size_t outputs_of() {
    return args_of<option_t<option_kind::out, Out<>, Opts...>>::type::size;
}
template <class... Opts>
constexpr std::size_t prefetch_count_of() {
    return args_of<option_t<option_kind::prefetch, ScalarPrefetch<>, Opts...>>::type::size;
}

}  // namespace detail

template <class... Opts>
struct pallas_call;  // defined in pallas_call.hpp; check_call reads a named call's options

namespace detail {

template <class... Opts>
consteval verdict check_options() {
    constexpr noun_problem noun = detail::nouns_problem<Opts...>();
    if constexpr (noun.text != nullptr) {
        diag where;
        where.op = noun.op;
        where.dim = noun.dim;  // V1's dim of extent < 1, 7's block dim of an unsupported type
        return verdict(noun.text, where, true);
    } else {
        using traits = call_traits<Opts...>;
        constexpr call_desc desc = traits::describe();
        diag d;
        if constexpr (plans_statically(desc)) {
            constexpr auto maps = traits::maps();
            // The planner's analysis makes every check of plan(); the events are not needed.
            d = analyze(desc, maps.data(), nullptr).info.problem;
        } else {
            d = validate(desc);
        }
        return verdict(d.ok() ? nullptr : message(d.code), d, plans_statically(desc));
    }
}

template <class... Opts>
struct call_check {
    static consteval verdict get() { return detail::check_options<Opts...>(); }
};
// A named call (`using K = pallas_call<...>; check_call<K>()`): naming the type instantiates
// nothing, and its options are read from the template arguments.
template <class... Opts>
struct call_check<pallas_call<Opts...>> {
    static consteval verdict get() { return detail::check_options<Opts...>(); }
};

}  // namespace detail

/// The verdict on pallas_call<Opts...>: its first broken rule, the one its static_assert would
/// name, or ok(). Takes the options, or one pallas_call<...> type. Instantiates no pallas_call
/// and fires no static_assert. Checks what pallas_call checks at compile time (complete() says
/// whether that includes the grid walk).
template <class... Opts>
consteval verdict check_call() {
    return detail::call_check<Opts...>::get();
}

/// True when pallas_call<Opts...> (or the one pallas_call type given) breaks no rule checked at
/// compile time (check_call).
template <class... Opts>
inline constexpr bool pallas_call_ok = check_call<Opts...>().ok();

/// The same as a concept, for `requires` clauses: an invalid configuration is false, never a
/// compile error.
template <class... Opts>
concept valid_call = pallas_call_ok<Opts...>;

}  // namespace ptpu
