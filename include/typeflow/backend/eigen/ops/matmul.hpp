// typeflow/backend/eigen/ops/matmul.hpp — matmul through Eigen's GEMM (or the
// BLAS Eigen is built against with EIGEN_USE_BLAS).
#pragma once
#include <Eigen/Core>

#include <typeflow/backend/eigen/kernel.hpp>
#include <typeflow/expr/ops/matmul.hpp>

namespace typeflow::backend::eigen {

template <bool TA, bool TB>
struct kernel<op::matmul<TA, TB>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        using mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        const dims a = ctx.dims_of(n.template child<0>());
        const dims b = ctx.dims_of(n.template child<1>());
        const T* pa = ctx.input(n.template child<0>());
        const T* pb = ctx.input(n.template child<1>());
        const index_t ar = a.d[a.rank - 2], ac = a.d[a.rank - 1];
        const index_t br = b.d[b.rank - 2], bc = b.d[b.rank - 1];
        const index_t m = TA ? ac : ar, k = TA ? ar : ac, nn = TB ? br : bc;
        index_t batches = 1;
        const dims& big = a.rank >= b.rank ? a : b;
        for (std::size_t i = 0; i + 2 < big.rank; ++i) batches *= big.d[i];
        const index_t sa = a.rank > 2 ? ar * ac : 0, sb = b.rank > 2 ? br * bc : 0;
        for (index_t i = 0; i < batches; ++i) {
            Eigen::Map<const mat> A(pa + i * sa, ar, ac);
            Eigen::Map<const mat> B(pb + i * sb, br, bc);
            Eigen::Map<mat> C(out + i * m * nn, m, nn);
            if (k == 0) {
                C.setZero();
            } else if constexpr (!TA && !TB) {
                C.noalias() = A * B;
            } else if constexpr (TA && !TB) {
                C.noalias() = A.transpose() * B;
            } else if constexpr (!TA && TB) {
                C.noalias() = A * B.transpose();
            } else {
                C.noalias() = A.transpose() * B.transpose();
            }
        }
    }
};

}  // namespace typeflow::backend::eigen
