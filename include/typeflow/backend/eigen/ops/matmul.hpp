// typeflow/backend/eigen/ops/matmul.hpp — matmul through Eigen's GEMM and GEMV
// kernels (or the BLAS Eigen is built against with EIGEN_USE_BLAS).
#pragma once
#include <Eigen/Core>

#include <typeflow/kernel/kernel.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/matmul.hpp>

namespace typeflow::backend::eigen {

namespace detail {
/// out(rows) += M v, M a rows x cols matrix (RowMajor: rows ld apart; else
/// columns ld apart), v contiguous: Eigen's GEMV kernel, with the mapper
/// types Eigen's own dispatch uses (so EIGEN_USE_BLAS reaches the BLAS).
template <class T, bool RowMajor>
void gemv(index_t rows, index_t cols, const T* mat, index_t ld, const T* v, T* out) {
    using Eigen::internal::const_blas_data_mapper;
    constexpr int order = RowMajor ? Eigen::RowMajor : Eigen::ColMajor;
    using lhs_map = const_blas_data_mapper<T, Eigen::Index, order>;
    using rhs_map = const_blas_data_mapper<T, Eigen::Index, RowMajor ? Eigen::ColMajor : Eigen::RowMajor>;
    Eigen::internal::general_matrix_vector_product<Eigen::Index, T, lhs_map, order, false, T, rhs_map, false>::run(
        rows, cols, lhs_map(mat, ld), rhs_map(v, 1), out, 1, T(1));
}

/// C = op(A) * op(B) for one row-major m x n matrix C, where op(A) is m x k
/// (A stored row-major, m x k, or transposed, k x m) and op(B) is k x n.
///
/// Calls the kernels `C.noalias() = A * B` reaches (GEMM, or GEMV when m or n
/// is 1, a plain loop for tiny products) directly: the expression's dispatch
/// and evaluators cost more compile time than the kernels themselves
/// (0.6 s of 1.1 s per product form with GCC 12, benchmarks/RESULTS.md).
/// One function per dtype and transpose pair; with
/// TYPEFLOW_SEPARATE_COMPILATION the float and double ones are compiled once,
/// in typeflow/src.hpp. Single-threaded (Eigen's OpenMP split is not used).
template <class T, bool TA, bool TB>
TYPEFLOW_NOINLINE void gemm(index_t m, index_t n, index_t k, const T* a, const T* b, T* c) {
    if (m <= 0 || n <= 0) return;
    for (index_t i = 0; i < m * n; ++i) c[i] = T(0);
    if (k <= 0) return;
    // element (i, p) of op(A) and (p, j) of op(B)
    const index_t lda = TA ? m : k, ldb = TB ? k : n;
    if (m + n + k < 20) {  // where Eigen takes its coefficient-based product
        for (index_t i = 0; i < m; ++i)
            for (index_t j = 0; j < n; ++j)
                for (index_t p = 0; p < k; ++p)
                    c[i * n + j] += (TA ? a[p * lda + i] : a[i * lda + p]) * (TB ? b[j * ldb + p] : b[p * ldb + j]);
        return;
    }
    if (n == 1) return gemv<T, !TA>(m, k, a, lda, b, c);  // c = op(A) b
    if (m == 1) return gemv<T, TB>(n, k, b, ldb, a, c);   // c^T = op(B)^T a^T, op(B)^T n x k
    Eigen::internal::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(
        m, n, k, 1, true);
    Eigen::internal::general_matrix_matrix_product<Eigen::Index, T, TA ? Eigen::ColMajor : Eigen::RowMajor, false, T,
                                                   TB ? Eigen::ColMajor : Eigen::RowMajor, false, Eigen::RowMajor,
                                                   1>::run(m, n, k, a, lda, b, ldb, c, 1, n, T(1), blocking, nullptr);
}

// The instantiations that TYPEFLOW_SEPARATE_COMPILATION compiles once, in
// typeflow/src.hpp (impl/kernels.ipp): KW is `extern template` or `template`.
#define TYPEFLOW_GEMM_INSTANCE(KW, T, TA, TB) KW void gemm<T, TA, TB>(index_t, index_t, index_t, const T*, const T*, T*);
#define TYPEFLOW_GEMM_INSTANCES(KW, T) \
    TYPEFLOW_GEMM_INSTANCE(KW, T, false, false) TYPEFLOW_GEMM_INSTANCE(KW, T, true, false) \
    TYPEFLOW_GEMM_INSTANCE(KW, T, false, true) TYPEFLOW_GEMM_INSTANCE(KW, T, true, true)
#if defined(TYPEFLOW_SEPARATE_COMPILATION)
TYPEFLOW_GEMM_INSTANCES(extern template, float)
TYPEFLOW_GEMM_INSTANCES(extern template, double)
#endif
}  // namespace detail

}  // namespace typeflow::backend::eigen

namespace typeflow {

template <bool TA, bool TB>
struct kernel<cpu, op::matmul<TA, TB>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims a = ctx.dims_of(n.template child<0>());
        const dims b = ctx.dims_of(n.template child<1>());
        const auto* pa = ctx.input(n.template child<0>());
        const auto* pb = ctx.input(n.template child<1>());
        const index_t ar = a.d[a.rank - 2], ac = a.d[a.rank - 1];
        const index_t br = b.d[b.rank - 2], bc = b.d[b.rank - 1];
        const index_t m = TA ? ac : ar, k = TA ? ar : ac, nn = TB ? br : bc;
        index_t batches = 1;
        const dims& big = a.rank >= b.rank ? a : b;
        for (std::size_t i = 0; i + 2 < big.rank; ++i) batches *= big.d[i];
        const index_t sa = a.rank > 2 ? ar * ac : 0, sb = b.rank > 2 ? br * bc : 0;
        for (index_t i = 0; i < batches; ++i)
            backend::eigen::detail::gemm<value_type_t<N>, TA, TB>(m, nn, k, pa + i * sa, pb + i * sb, out + i * m * nn);
    }
};

}  // namespace typeflow
