// Defines the explicit charges a kernel body adds for work done outside ops/: charge_seconds
// (rule C1: a time is finite and >= 0), constant_seconds and its literals (2.5_us, checked at
// compile time), and charge(work), re-exported from runtime/context.hpp.
#pragma once

#include <limits>
#include <string>

#include "ptpu/core/error.hpp"
#include "ptpu/core/work.hpp"
#include "ptpu/runtime/context.hpp"

namespace ptpu {

namespace detail {
// NaN fails both comparisons; infinity fails the second.
constexpr bool finite_charge(double x) {
    return x >= 0 && x <= std::numeric_limits<double>::max();
}
}  // namespace detail

// C++20 cannot overload on "the argument is a constant", so charge_seconds(-1.0) is caught at
// run time on g++; clang's diagnose_if catches it at compile time when the argument is a
// constant. A constant_seconds (2.5_us) is checked at compile time everywhere.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wgcc-compat"  // diagnose_if is clang's own, and guarded
#define PTPU_OPS_C1_CONSTANT_CHECK(s)                                                  \
    __attribute__((diagnose_if(!::ptpu::detail::finite_charge(s),                      \
                               "ptpu[C1] charge_seconds: the time is negative or not " \
                               "finite; charge a finite time >= 0",                    \
                               "error")))
#else
#define PTPU_OPS_C1_CONSTANT_CHECK(s)
#endif

/// Adds `s` seconds to the running body's work (work.explicit_seconds) for work done outside
/// ops/; timing-only mode charges it alike. Outside a body it is checked and dropped. C1 when
/// `s` is negative or not finite.
inline void charge_seconds(double s) PTPU_OPS_C1_CONSTANT_CHECK(s) {
    check(detail::finite_charge(s),
          "ptpu[C1] charge_seconds: the time is negative or not finite; charge a finite time "
          ">= 0",
          [s] {
              std::string t = "s = ";
              t += std::to_string(s);
              return t;
          });
    work w;
    w.explicit_seconds = s;
    charge(w);
}

#undef PTPU_OPS_C1_CONSTANT_CHECK
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

/// A time known at compile time and checked then (C1): constant_seconds(2e-6), or 2_us with
/// ptpu's literals. Negating one is checked too, so charge_seconds(-2_us) does not compile.
class constant_seconds {
public:
    consteval explicit constant_seconds(double s) : s_(s) {
        check(detail::finite_charge(s),
              "ptpu[C1] constant_seconds: the time is negative or not finite; charge a finite "
              "time >= 0");
    }
    consteval constant_seconds operator-() const { return constant_seconds(-s_); }
    [[nodiscard]] constexpr double value() const { return s_; }

private:
    double s_;
};

/// charge_seconds(2_us): the compile-time-checked spelling.
inline void charge_seconds(constant_seconds s) {
    charge_seconds(s.value());
}

// Divisions by exact powers of ten: 3_ns is the double nearest 3e-9, as the literal 3e-9 is.
inline namespace literals {
consteval constant_seconds operator""_s(long double v) {
    return constant_seconds(static_cast<double>(v));
}
consteval constant_seconds operator""_s(unsigned long long v) {
    return constant_seconds(static_cast<double>(v));
}
consteval constant_seconds operator""_ms(long double v) {
    return constant_seconds(static_cast<double>(v) / 1e3);
}
consteval constant_seconds operator""_ms(unsigned long long v) {
    return constant_seconds(static_cast<double>(v) / 1e3);
}
consteval constant_seconds operator""_us(long double v) {
    return constant_seconds(static_cast<double>(v) / 1e6);
}
consteval constant_seconds operator""_us(unsigned long long v) {
    return constant_seconds(static_cast<double>(v) / 1e6);
}
consteval constant_seconds operator""_ns(long double v) {
    return constant_seconds(static_cast<double>(v) / 1e9);
}
consteval constant_seconds operator""_ns(unsigned long long v) {
    return constant_seconds(static_cast<double>(v) / 1e9);
}
}  // namespace literals

// charge(const work&) is runtime/context.hpp's: it adds every field of a work to the running
// body. The sim's time_of rejects negative or non-finite fields (C1) when it prices the body.

}  // namespace ptpu
