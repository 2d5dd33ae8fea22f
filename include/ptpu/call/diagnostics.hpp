// Defines how a static pallas_call (or emit_pipeline) reports its first broken rule at compile
// time: one error, instantiated only for the failing call, whose text is the rule's message with
// what it is about (message(diag, pipeline_desc) in spec/validate.hpp: the operand by its Arg
// name, the dim, the values), shown in the first line of g++'s error (core/message.hpp).
#pragma once

#include <type_traits>

#include "ptpu/core/message.hpp"
#include "ptpu/spec/validate.hpp"

namespace ptpu::detail {

// The error of one broken rule, when its size is asked for. With g++ it is compile_error<M>, never
// defined, so that the error's first line shows M, the composed message; with other compilers,
// which print M's characters as numbers, a type with one static_assert per rule (only D's fails)
// showing the rule's literal, D's values in the instantiation context.
#if PTPU_COMPOSED_MESSAGES
template <diag D, rule_message M>
using call_problem_t = compile_error<M>;
#else
#define PTPU_RULE_ASSERT(name, text) static_assert(D.code != rule::name, text);
template <diag D>
struct call_problem {
    PTPU_CALL_RULES(PTPU_RULE_ASSERT)
};
#undef PTPU_RULE_ASSERT
template <diag D, rule_message M>
using call_problem_t = call_problem<D>;
#endif

struct no_problem {};

/// The message of a pipeline's first problem, or an empty one when there is none (what every
/// valid call computes: nothing).
constexpr rule_message problem_message(const diag& d, const pipeline_desc& p) {
    if (d.ok() || d.code == rule::reported) return {};
    return message(d, p);
}

/// The report of a call's first problem: asking for the size of what this points to is the
/// compile error (sizeof(*problem_report<D, M>()), nothing when there is no problem).
/// rule::reported: a type-level static_assert already gave the message. M is
/// problem_message(D, desc). (A pointer-returning function rather than an alias: g++ names an
/// alias in its error, this names the type itself, compile_error<M>.)
template <diag D, rule_message M>
constexpr auto* problem_report() {
    using type = std::conditional_t<D.code == rule::ok || D.code == rule::reported, no_problem, call_problem_t<D, M>>;
    return static_cast<type*>(nullptr);
}

}  // namespace ptpu::detail
