// Defines how ptpu's compiled part is linked: PTPU_COMPILED marks a non-template function whose
// definition is body-independent machinery (the report's text, the trace and SVG writers).
//
// - Header-only (neither macro defined): every translation unit reads the definitions, which are
//   `inline`.
// - PTPU_SEPARATE_RUNTIME (what linking ptpu::runtime sets): a translation unit sees their
//   declarations only; PTPU_DEFINE_COMPILED is not defined, so the headers holding the
//   definitions are not read.
// - PTPU_RUNTIME_IMPLEMENTATION: the one translation unit of ptpu::runtime, which reads the
//   definitions and compiles them once, not inline.
//
// A program uses one way for all its translation units (the CMake option PTPU_HEADER_ONLY picks
// it for ptpu::runtime and everything that links it).
#pragma once

#if defined(PTPU_RUNTIME_IMPLEMENTATION)
#define PTPU_COMPILED
#define PTPU_DEFINE_COMPILED 1
#elif defined(PTPU_SEPARATE_RUNTIME)
#define PTPU_COMPILED
#else
#define PTPU_COMPILED inline
#define PTPU_DEFINE_COMPILED 1
#endif
