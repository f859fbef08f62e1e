// typeflow/backend/eigen/impl/kernels.ipp — the CPU kernels for float and
// double that TYPEFLOW_SEPARATE_COMPILATION compiles once (typeflow/src.hpp):
// explicit instantiations of what backend/eigen/ops/*.hpp declare extern.
#pragma once
#include <typeflow/backend/eigen/ops/matmul.hpp>

namespace typeflow::backend::eigen::detail {
template void gemm<float, false, false>(index_t, index_t, index_t, const float*, const float*, float*);
template void gemm<float, true, false>(index_t, index_t, index_t, const float*, const float*, float*);
template void gemm<float, false, true>(index_t, index_t, index_t, const float*, const float*, float*);
template void gemm<float, true, true>(index_t, index_t, index_t, const float*, const float*, float*);
template void gemm<double, false, false>(index_t, index_t, index_t, const double*, const double*, double*);
template void gemm<double, true, false>(index_t, index_t, index_t, const double*, const double*, double*);
template void gemm<double, false, true>(index_t, index_t, index_t, const double*, const double*, double*);
template void gemm<double, true, true>(index_t, index_t, index_t, const double*, const double*, double*);
}  // namespace typeflow::backend::eigen::detail
