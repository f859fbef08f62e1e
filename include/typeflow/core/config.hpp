// typeflow/core/config.hpp — build configuration.
//
// typeflow is header-only by default. Its plain (non-template) runtime code
// lives in impl/*.ipp files, the way Asio keeps it: included and inline in
// header-only builds. Define TYPEFLOW_SEPARATE_COMPILATION in every
// translation unit of a program and include <typeflow/src.hpp> in exactly one
// of them to compile that code once instead of in every translation unit.
#pragma once

#if defined(TYPEFLOW_SEPARATE_COMPILATION)
#define TYPEFLOW_DECL
#define TYPEFLOW_DECL_HOT
#define TYPEFLOW_COLD_OPTIMIZE
#else
// Header-only builds compile this code in every translation unit that runs a
// session. Most of it runs once per graph (planning, checks, error messages),
// so GCC compiles it with -Og there: 0.3 s less per such translation unit
// (benchmarks/RESULTS.md). The code every run goes through (TYPEFLOW_DECL_HOT)
// keeps the translation unit's own options. Define TYPEFLOW_NO_COLD_OPTIMIZE
// to compile all of it with the translation unit's options.
#if defined(__GNUC__) && !defined(__clang__) && !defined(TYPEFLOW_NO_COLD_OPTIMIZE) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
#define TYPEFLOW_COLD_OPTIMIZE __attribute__((__optimize__("Og")))
#else
#define TYPEFLOW_COLD_OPTIMIZE
#endif
/// Declares a function of typeflow's plain runtime code that runs once per graph.
#define TYPEFLOW_DECL inline TYPEFLOW_COLD_OPTIMIZE
/// Declares a function of typeflow's plain runtime code that every run goes through.
#define TYPEFLOW_DECL_HOT inline
#endif

/// Keeps a function out of line (for plain code that every caller would
/// otherwise get a copy of).
#if defined(__GNUC__) || defined(__clang__)
#define TYPEFLOW_NOINLINE __attribute__((__noinline__))
#else
#define TYPEFLOW_NOINLINE
#endif

/// Marks a function usable on the host and, under nvcc, on a CUDA device
/// (the scalar functors of element-wise ops).
#if defined(__CUDACC__)
#define TYPEFLOW_HOST_DEVICE __host__ __device__
#else
#define TYPEFLOW_HOST_DEVICE
#endif
