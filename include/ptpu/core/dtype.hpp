// Defines ptpu's element types: the bf16 and f16 storage types, the dtype enum and its properties.
//
// bf16 and f16 are 16-bit storage types: arithmetic converts to float, computes there and rounds
// back to nearest even, which is what a kernel on the VPU computes for one elementwise op.
#pragma once

#include <bit>
#include <compare>
#include <concepts>
#include <cstdint>
#include <string_view>

// The message of T1 for dtype_of, shared with the verdict (call/verdict.hpp: a Scratch's type).
#define PTPU_RULE_TEXT_T1_DTYPE                                                    \
    "ptpu[T1] dtype_of<T>: unsupported element type; use one of float, bf16, "    \
    "f16, int32_t, int16_t, int8_t, uint8_t, bool"

namespace ptpu {

namespace detail {

// float → bf16 bits: bf16 is the upper half of an f32, so round the lower 16 bits off.
constexpr std::uint16_t float_to_bf16_bits(float f) {
    const auto x = std::bit_cast<std::uint32_t>(f);
    // A NaN whose payload sits in the low half would truncate to infinity; set the quiet bit.
    if ((x & 0x7FFF'FFFFu) > 0x7F80'0000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
    // Adding 0x7FFF plus the lowest kept bit rounds ties to even; a carry into the exponent is
    // exactly rounding up into the next binade, or to infinity past the largest finite value.
    return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

constexpr float bf16_bits_to_float(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// float → IEEE binary16 bits, round to nearest even, with subnormals and overflow to infinity.
constexpr std::uint16_t float_to_f16_bits(float f) {
    const auto x = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t a = x & 0x7FFF'FFFFu;
    if (a > 0x7F80'0000u) {  // NaN: keep the top payload bits and set the quiet bit
        return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
    }
    if (a >= 0x477F'F000u) {  // ≥ 65520, halfway past 65504 (odd significand): rounds to inf
        return static_cast<std::uint16_t>(sign | 0x7C00u);
    }
    if (a >= 0x3880'0000u) {  // ≥ 2^-14: a normal f16; rebias 127 → 15, round 13 bits off
        const std::uint32_t r = a - 0x3800'0000u;
        return static_cast<std::uint16_t>(sign | ((r + 0x0FFFu + ((r >> 13) & 1u)) >> 13));
    }
    if (a <= 0x3300'0000u) return sign;  // ≤ 2^-25, half the smallest subnormal: ties to 0
    // Subnormal result m·2^-24: shift the significand (hidden bit included) right by 14…24.
    const std::uint32_t sig = (a & 0x007F'FFFFu) | 0x0080'0000u;
    const int shift = 126 - static_cast<int>(a >> 23);
    const std::uint32_t m = sig >> shift;
    const std::uint32_t rest = sig & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    const bool up = rest > half || (rest == half && (m & 1u) != 0);
    // m + 1 may reach 0x400, which is the correct encoding of the smallest normal.
    return static_cast<std::uint16_t>(sign | (m + (up ? 1u : 0u)));
}

constexpr float f16_bits_to_float(std::uint16_t h) {
    const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
    const std::uint32_t e = (h >> 10) & 0x1Fu;
    const std::uint32_t m = h & 0x03FFu;
    if (e == 0x1F) return std::bit_cast<float>(sign | 0x7F80'0000u | (m << 13));
    if (e != 0) return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
    const float v = static_cast<float>(m) * 0x1p-24f;  // zero or subnormal, exact in float
    return sign != 0 ? -v : v;
}

}  // namespace detail

/// bfloat16: 1 sign, 8 exponent, 7 significand bits (the upper half of an f32).
struct bf16 {
    std::uint16_t bits;

    bf16() = default;
    explicit constexpr bf16(float f) : bits(detail::float_to_bf16_bits(f)) {}
    static constexpr bf16 from_bits(std::uint16_t b) {
        bf16 r{};
        r.bits = b;
        return r;
    }
    explicit constexpr operator float() const { return detail::bf16_bits_to_float(bits); }
};

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 significand bits.
struct f16 {
    std::uint16_t bits;

    f16() = default;
    explicit constexpr f16(float f) : bits(detail::float_to_f16_bits(f)) {}
    static constexpr f16 from_bits(std::uint16_t b) {
        f16 r{};
        r.bits = b;
        return r;
    }
    explicit constexpr operator float() const { return detail::f16_bits_to_float(bits); }
};

namespace detail {
template <class T>
concept half_float = std::same_as<T, bf16> || std::same_as<T, f16>;
}  // namespace detail

// One set of operators for both 16-bit types: compare and compute as float (NaN is unordered and
// unequal to itself, -0 == +0), round each result back once.
template <detail::half_float T>
constexpr bool operator==(T a, T b) {
    return static_cast<float>(a) == static_cast<float>(b);
}
template <detail::half_float T>
constexpr std::partial_ordering operator<=>(T a, T b) {
    return static_cast<float>(a) <=> static_cast<float>(b);
}
template <detail::half_float T>
constexpr T operator+(T a, T b) {
    return T(static_cast<float>(a) + static_cast<float>(b));
}
template <detail::half_float T>
constexpr T operator-(T a, T b) {
    return T(static_cast<float>(a) - static_cast<float>(b));
}
template <detail::half_float T>
constexpr T operator*(T a, T b) {
    return T(static_cast<float>(a) * static_cast<float>(b));
}
template <detail::half_float T>
constexpr T operator/(T a, T b) {
    return T(static_cast<float>(a) / static_cast<float>(b));
}
template <detail::half_float T>
constexpr T operator-(T a) {  // flips the sign bit: exact, as for float
    return T::from_bits(static_cast<std::uint16_t>(a.bits ^ 0x8000u));
}
template <detail::half_float T>
constexpr T operator+(T a) {
    return a;
}
template <detail::half_float T>
constexpr T& operator+=(T& a, T b) {
    return a = a + b;
}
template <detail::half_float T>
constexpr T& operator-=(T& a, T b) {
    return a = a - b;
}
template <detail::half_float T>
constexpr T& operator*=(T& a, T b) {
    return a = a * b;
}
template <detail::half_float T>
constexpr T& operator/=(T& a, T b) {
    return a = a / b;
}

/// The element types a ref or array may hold.
enum class dtype : std::uint8_t { f32, bf16, f16, i32, i16, i8, u8, boolean };

namespace detail {
// The one mapping from C++ type to dtype; element_type and dtype_of both read it.
template <class T>
struct dtype_map {};  // no `value`: not an element type (rule T1)
template <>
struct dtype_map<float> {
    static constexpr dtype value = dtype::f32;
};
template <>
struct dtype_map<bf16> {
    static constexpr dtype value = dtype::bf16;
};
template <>
struct dtype_map<f16> {
    static constexpr dtype value = dtype::f16;
};
template <>
struct dtype_map<std::int32_t> {
    static constexpr dtype value = dtype::i32;
};
template <>
struct dtype_map<std::int16_t> {
    static constexpr dtype value = dtype::i16;
};
template <>
struct dtype_map<std::int8_t> {
    static constexpr dtype value = dtype::i8;
};
template <>
struct dtype_map<std::uint8_t> {
    static constexpr dtype value = dtype::u8;
};
template <>
struct dtype_map<bool> {
    static constexpr dtype value = dtype::boolean;
};
}  // namespace detail

/// True exactly for float, bf16, f16, int32_t, int16_t, int8_t, uint8_t and bool (no cv, no ref).
template <class T>
concept element_type = requires {
    detail::dtype_map<T>::value;
};

namespace detail {
template <class T>
constexpr dtype checked_dtype_of() {
    if constexpr (element_type<T>) {
        return dtype_map<T>::value;
    } else {
        static_assert(element_type<T>, PTPU_RULE_TEXT_T1_DTYPE);
        return dtype::f32;
    }
}
}  // namespace detail

/// The dtype of an element type; any other type is a compile error (T1).
template <class T>
inline constexpr dtype dtype_of = detail::checked_dtype_of<T>();

/// Bits per element as the array stores it.
constexpr int bitwidth(dtype d) {
    switch (d) {
        case dtype::f32:
        case dtype::i32:
            return 32;
        case dtype::bf16:
        case dtype::f16:
        case dtype::i16:
            return 16;
        case dtype::i8:
        case dtype::u8:
        case dtype::boolean:
            return 8;
    }
    return 0;  // not an enumerator
}

/// Bytes per element as the array stores it (bool: 1 byte, as in C++ and NumPy). In a kernel's
/// VMEM or SMEM a bool takes its memref type's 4 bytes: itemsize(memref_dtype(d)).
constexpr std::int64_t itemsize(dtype d) {
    return bitwidth(d) / 8;
}

constexpr std::string_view name(dtype d) {
    switch (d) {
        case dtype::f32:
            return "f32";
        case dtype::bf16:
            return "bf16";
        case dtype::f16:
            return "f16";
        case dtype::i32:
            return "i32";
        case dtype::i16:
            return "i16";
        case dtype::i8:
            return "i8";
        case dtype::u8:
            return "u8";
        case dtype::boolean:
            return "bool";
    }
    return "?";  // not an enumerator
}

constexpr bool is_floating(dtype d) {
    return d == dtype::f32 || d == dtype::bf16 || d == dtype::f16;
}

}  // namespace ptpu
