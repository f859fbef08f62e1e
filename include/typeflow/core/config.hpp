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
#else
/// Declares a function of typeflow's plain runtime code.
#define TYPEFLOW_DECL inline
#endif
