// typeflow/backend/eigen/impl/kernels.ipp — the CPU kernels for float and
// double that TYPEFLOW_SEPARATE_COMPILATION compiles once (typeflow/src.hpp):
// explicit instantiations of what backend/eigen/ops/*.hpp declare extern.
#pragma once
#include <typeflow/backend/eigen/ops/apply.hpp>
#include <typeflow/backend/eigen/ops/conv.hpp>
#include <typeflow/backend/eigen/ops/matmul.hpp>
#include <typeflow/backend/eigen/ops/pool.hpp>

namespace typeflow::backend::eigen::detail {
TYPEFLOW_GEMM_INSTANCES(template, float)
TYPEFLOW_GEMM_INSTANCES(template, double)
TYPEFLOW_CONV_INSTANCES(template, float)
TYPEFLOW_CONV_INSTANCES(template, double)
TYPEFLOW_POOL_INSTANCES(template, float)
TYPEFLOW_POOL_INSTANCES(template, double)
TYPEFLOW_APPLY_INSTANCES(template, float)
TYPEFLOW_APPLY_INSTANCES(template, double)
}  // namespace typeflow::backend::eigen::detail
