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

// PTPU_INSTANTIATED(declaration): a common specialization of a template compiled once in
// ptpu::runtime (the value work of ops per dtype, the ops on vecs of run-time shape): declared
// `extern template` where ptpu::runtime is linked, explicitly instantiated in its translation
// unit, and nothing in the header-only mode, where each translation unit instantiates what it
// uses.
#if defined(PTPU_RUNTIME_IMPLEMENTATION)
#define PTPU_INSTANTIATED(...) template __VA_ARGS__;
#elif defined(PTPU_SEPARATE_RUNTIME)
#define PTPU_INSTANTIATED(...) extern template __VA_ARGS__;
#else
#define PTPU_INSTANTIATED(...)
#endif
