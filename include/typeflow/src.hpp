// typeflow/src.hpp — typeflow's plain runtime code, for separate compilation.
//
// Define TYPEFLOW_SEPARATE_COMPILATION in every translation unit of the
// program (CMake: target_compile_definitions(app PRIVATE
// TYPEFLOW_SEPARATE_COMPILATION)) and include this header in exactly one
// source file. Without the macro typeflow is header-only and this header is
// not needed.
#pragma once
#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#error "typeflow/src.hpp: define TYPEFLOW_SEPARATE_COMPILATION in every translation unit (see typeflow/core/config.hpp)"
#endif

#include <typeflow/typeflow.hpp>

#include <typeflow/backend/eigen/impl/kernels.ipp>
#include <typeflow/core/impl/shape.ipp>
#include <typeflow/data/impl/csv.ipp>
#include <typeflow/data/impl/file.ipp>
#include <typeflow/data/impl/idx.ipp>
#include <typeflow/data/impl/instances.ipp>
#include <typeflow/data/impl/mnist.ipp>
#include <typeflow/data/impl/range.ipp>
#include <typeflow/kernel/impl/region.ipp>
#include <typeflow/runtime/impl/checks.ipp>
#include <typeflow/runtime/impl/memory_plan.ipp>
#include <typeflow/runtime/impl/plan_core.ipp>
#include <typeflow/runtime/impl/thread_pool.ipp>
