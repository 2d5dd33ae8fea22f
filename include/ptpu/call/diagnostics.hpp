// Defines how a static pallas_call reports its first broken rule: one static_assert per rule,
// only the failing one instantiated, with the values the message needs (operand, block index,
// iterations, bytes) as the template arguments of the failing type.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include "ptpu/spec/validate.hpp"

namespace ptpu::detail {

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

template <int Input, int Output, alias_problem What, int Dim, index_t InputValue, index_t OutputValue>
struct alias_mismatch {
    static_assert(What == alias_problem{}, PTPU_RULE_TEXT_11
                  " Template arguments: input index, output index, what is wrong, the dim whose extents "
                  "differ (-1: none), the input's and the output's dtype, rank or extent at that dim");
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
    else if constexpr (D.code == rule::r11)
        return std::type_identity<alias_mismatch<static_cast<int>(D.a), static_cast<int>(D.b),
                                                 static_cast<alias_problem>(D.c), D.dim, D.bytes[0], D.bytes[1]>>{};
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

}  // namespace ptpu::detail
