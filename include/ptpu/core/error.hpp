// Defines ptpu::error, the one exception type of ptpu, and the rule-id message format.
//
// Every rule ptpu enforces has an id (Pallas's checks and behaviours, such as 24 or S3, or ptpu's
// own ids such as MC1; docs/rules.md lists them all). A message always reads `ptpu[ID] where: what; fix`, the same text whether the
// rule fires at compile time (static_assert / concept) or at run time (this exception).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ptpu/core/linkage.hpp"

namespace ptpu {

/// Thrown when a dynamic input breaks a rule. `rule()` is the rule id alone (e.g. "S3").
class error : public std::runtime_error {
public:
    PTPU_COMPILED error(std::string_view rule, std::string_view where, std::string_view what, std::string_view fix);

    /// From a whole message `ptpu[ID] where: what; fix`; the rule id is read back from it.
    PTPU_COMPILED explicit error(const std::string& message);

    [[nodiscard]] const std::string& rule() const noexcept { return rule_; }

    /// The id between "ptpu[" and "]" of a formatted message, or "" when there is none.
    PTPU_COMPILED static std::string rule_of(std::string_view message);

    /// `ptpu[ID] where: what; fix` (the fix part is left out when empty).
    PTPU_COMPILED static std::string format(std::string_view rule, std::string_view where, std::string_view what,
                                            std::string_view fix);

private:
    std::string rule_;
};

#if defined(PTPU_DEFINE_COMPILED)
PTPU_COMPILED error::error(std::string_view rule, std::string_view where, std::string_view what, std::string_view fix)
    : std::runtime_error(format(rule, where, what, fix)), rule_(rule) {}

PTPU_COMPILED error::error(const std::string& message) : std::runtime_error(message), rule_(rule_of(message)) {}

PTPU_COMPILED std::string error::rule_of(std::string_view message) {
    constexpr std::string_view open = "ptpu[";
    if (message.substr(0, open.size()) != open) return {};
    const auto close = message.find(']');
    if (close == std::string_view::npos) return {};
    return std::string(message.substr(open.size(), close - open.size()));
}

PTPU_COMPILED std::string error::format(std::string_view rule, std::string_view where, std::string_view what,
                                        std::string_view fix) {
    std::string s;
    s.reserve(16 + rule.size() + where.size() + what.size() + fix.size());
    s += "ptpu[";
    s += rule;
    s += "] ";
    s += where;
    s += ": ";
    s += what;
    if (!fix.empty()) {
        s += "; ";
        s += fix;
    }
    return s;
}
#endif

/// One rule, two enforcements. `message` is a string literal `ptpu[ID] where: what; fix`.
/// At compile time a failing check stops compilation and the compiler shows `message`;
/// at run time it throws ptpu::error(message). `detail`, when given, is a callable returning a
/// std::string with the offending values; it is appended (run time only) as " (detail)".
/// A check evaluated at compile time is best reached from a constexpr variable's initializer
/// (`constexpr bool ok = (validate(c), true);`): inside a static_assert's condition g++ first says
/// "non-constant condition for static assertion", and names the rule only in its second error.
///
/// During constant evaluation a failing check writes to its message, a string literal: that is
/// not a constant expression, so compilation stops, and the compiler quotes the literal, g++ in
/// the error's first line (modification of ‘"ptpu[H1] chip: …"’ is not a constant expression),
/// clang in the note under it. (Never reached at run time.)
constexpr void check(bool ok, const char* message) {
    if (ok) return;
    if (std::is_constant_evaluated())
        const_cast<char&>(*message) = *message;
    else
        throw error(std::string(message));
}

template <class Detail>
constexpr void check(bool ok, const char* message, Detail&& detail) {
    if (ok) return;
    if (std::is_constant_evaluated())
        const_cast<char&>(*message) = *message;
    else
        throw error(std::string(message) + " (" + std::forward<Detail>(detail)() + ")");
}

/// Run-time only form, for messages assembled from values.
inline void check(bool ok, std::string_view rule, std::string_view where, std::string_view what,
                  std::string_view fix) {
    if (!ok) throw error(rule, where, what, fix);
}

}  // namespace ptpu
