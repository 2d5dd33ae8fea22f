// Defines what a compile error can say beyond a string literal: operand_name (an Arg's name, an
// NTTP string), rule_message (a rule's text composed during constant evaluation, with the
// operand's name, the dim and the values filled in) and compile_error, whose use stops
// compilation with a rule_message in the first line of the error.
//
// A static_assert's message is a literal (until C++26), so it cannot name an operand `weights`
// or say that its block is 100 wide. A class template argument can: g++ prints it, char arrays as
// strings, wherever it prints the type. Asking for the size of compile_error<message>, a type
// that is never defined, static_assert(sizeof(compile_error<m>) > 0), makes g++'s first error
// line read
//   error: invalid application of ‘sizeof’ to incomplete type
//          ‘ptpu::compile_error<ptpu::rule_message{"ptpu[15] pallas_call: ...; input `weights`,
//          dim 1: ...; pick (8k, 128m) blocks or the full extent"}>’
// Clang prints such an argument as a list of character codes, so code that composes messages
// does so when PTPU_COMPOSED_MESSAGES is 1 (g++), and otherwise keeps a static_assert with the
// rule's literal (no names, the same rule id).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ptpu {

/// An operand's name in messages, reports, traces and timelines: Arg<X, Spec, "weights">. At
/// most 15 characters; empty (the default) names it by position: in0, in1, …, out0, ….
struct operand_name {
    char text[16]{};
    // User-provided rather than `= default`: g++ 12 rejects a defaulted constexpr constructor
    // used by Arg's default argument from inside a function template ("used before its
    // definition") when A is dependent; this one is the same and is accepted everywhere.
    constexpr operand_name() noexcept {}  // NOLINT(modernize-use-equals-default)
    template <std::size_t N>
    constexpr operand_name(const char (&s)[N]) {  // NOLINT: implicit, so that "x" can be a template argument
        static_assert(N <= 16, "ptpu[V1] Arg: an operand name has at most 15 characters");
        for (std::size_t i = 0; i + 1 < N; ++i) text[i] = s[i];
    }
    [[nodiscard]] constexpr std::string_view view() const {
        std::size_t n = 0;
        while (n < sizeof text && text[n] != '\0') ++n;
        return {text, n};
    }
    [[nodiscard]] constexpr bool empty() const { return text[0] == '\0'; }
};

/// A rule's message composed at compile time (or at run time, from the same code): appended to
/// piece by piece, truncated with "..." beyond its capacity. A structural type, so that it can be
/// a template argument: compile_error<m> is how a compile error shows it.
struct rule_message {
    static constexpr std::size_t capacity = 1023;
    char text[capacity + 1]{};

    [[nodiscard]] constexpr std::size_t size() const {
        std::size_t n = 0;
        while (n < capacity && text[n] != '\0') ++n;
        return n;
    }
    [[nodiscard]] constexpr std::string_view view() const { return {text, size()}; }
    [[nodiscard]] constexpr bool empty() const { return text[0] == '\0'; }

    constexpr rule_message& operator<<(std::string_view s) {
        std::size_t n = size();
        for (char ch : s) {
            if (n == capacity) {
                for (std::size_t k = capacity - 3; k < capacity; ++k) text[k] = '.';
                return *this;
            }
            text[n++] = ch;
        }
        return *this;
    }
    constexpr rule_message& operator<<(const char* s) { return *this << std::string_view(s); }
    constexpr rule_message& operator<<(std::int64_t v) {
        char digits[24]{};
        std::size_t n = 0;
        // Negated one digit at a time, so that INT64_MIN needs no special case.
        const bool negative = v < 0;
        do {
            const std::int64_t digit = v % 10;
            digits[n++] = static_cast<char>('0' + (digit < 0 ? -digit : digit));
            v /= 10;
        } while (v != 0);
        if (negative) *this << "-";
        char out[24]{};
        for (std::size_t k = 0; k < n; ++k) out[k] = digits[n - 1 - k];
        return *this << std::string_view(out, n);
    }
    constexpr rule_message& operator<<(int v) { return *this << static_cast<std::int64_t>(v); }
    constexpr rule_message& operator<<(const operand_name& name) { return *this << name.view(); }
};

/// `literal`, a `ptpu[ID] where: what; fix` message, with `about` (what it is about: the operand,
/// the dim, the values) between what is wrong and the fix: `ptpu[ID] where: what; about; fix`.
constexpr rule_message with_subject(std::string_view literal, std::string_view about) {
    rule_message m;
    if (about.empty()) return m << literal;
    const std::size_t where = literal.find(": ");
    const std::size_t fix = where == std::string_view::npos ? std::string_view::npos : literal.find("; ", where);
    if (fix == std::string_view::npos) return m << literal << "; " << about;
    return m << literal.substr(0, fix) << "; " << about << literal.substr(fix);
}

/// Never defined: asking for its size, static_assert(sizeof(compile_error<m>) > 0) with m
/// dependent, is the compile error that shows m.
template <rule_message M>
struct compile_error;

}  // namespace ptpu

/// PTPU_COMPOSED_MESSAGES: 1 when compile errors can show a rule_message (g++), 0 otherwise.
#if defined(__GNUC__) && !defined(__clang__)
#define PTPU_COMPOSED_MESSAGES 1
#else
#define PTPU_COMPOSED_MESSAGES 0
#endif
