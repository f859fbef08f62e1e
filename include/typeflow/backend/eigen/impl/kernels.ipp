// typeflow/backend/eigen/impl/kernels.ipp — the CPU kernels for float and
// double that TYPEFLOW_SEPARATE_COMPILATION compiles once (typeflow/src.hpp):
// explicit instantiations of what backend/eigen/ops/*.hpp declare extern.
#pragma once
#include <typeflow/backend/eigen/ops/matmul.hpp>

namespace typeflow::backend::eigen::detail {
TYPEFLOW_GEMM_INSTANCES(template, float)
TYPEFLOW_GEMM_INSTANCES(template, double)
}  // namespace typeflow::backend::eigen::detail
