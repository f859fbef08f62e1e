// typeflow/backend/eigen/ops/matmul.hpp — matmul through Eigen's GEMM and GEMV
// kernels (or the BLAS Eigen is built against with EIGEN_USE_BLAS).
#pragma once
#include <algorithm>
#include <cstddef>

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

/// C = op(A) * op(B) for one row-major m x n matrix C (rows ldc apart),
/// where op(A) is m x k and op(B) is k x n: A stored row-major (m x k, rows
/// lda apart) or transposed (k x m, rows lda apart), likewise B.
///
/// Calls the kernels `C.noalias() = A * B` reaches (GEMM, or GEMV when m or n
/// is 1, a plain loop for tiny products) directly: the expression's dispatch
/// and evaluators cost more compile time than the kernels themselves
/// (0.6 s of 1.1 s per product form with GCC 12, benchmarks/RESULTS.md).
/// One function per dtype and transpose pair; with
/// TYPEFLOW_SEPARATE_COMPILATION the float and double ones are compiled once,
/// in typeflow/src.hpp. Single-threaded (Eigen's OpenMP split is not used):
/// the matmul kernel splits C into blocks over the session's threads.
template <class T, bool TA, bool TB>
TYPEFLOW_NOINLINE void gemm_ld(index_t m, index_t n, index_t k, const T* a, index_t lda, const T* b, index_t ldb, T* c,
                               index_t ldc) {
    if (m <= 0 || n <= 0) return;
    for (index_t i = 0; i < m; ++i)
        for (index_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
    if (k <= 0) return;
    // element (i, p) of op(A) and (p, j) of op(B)
    if (m + n + k < 20) {  // where Eigen takes its coefficient-based product
        for (index_t i = 0; i < m; ++i)
            for (index_t j = 0; j < n; ++j)
                for (index_t p = 0; p < k; ++p)
                    c[i * ldc + j] += (TA ? a[p * lda + i] : a[i * lda + p]) * (TB ? b[j * ldb + p] : b[p * ldb + j]);
        return;
    }
    if (n == 1) return gemv<T, !TA>(m, k, a, lda, b, c);  // c = op(A) b (ldc is 1: no split makes a one-column block)
    if (m == 1) return gemv<T, TB>(n, k, b, ldb, a, c);  // c^T = op(B)^T a^T, op(B)^T n x k
    Eigen::internal::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(
        m, n, k, 1, true);
    Eigen::internal::general_matrix_matrix_product<Eigen::Index, T, TA ? Eigen::ColMajor : Eigen::RowMajor, false, T,
                                                   TB ? Eigen::ColMajor : Eigen::RowMajor, false, Eigen::RowMajor,
                                                   1>::run(m, n, k, a, lda, b, ldb, c, 1, ldc, T(1), blocking, nullptr);
}

/// gemm_ld for contiguous operands: C m x n, op(A) m x k, op(B) k x n.
template <class T, bool TA, bool TB>
inline void gemm(index_t m, index_t n, index_t k, const T* a, const T* b, T* c) {
    gemm_ld<T, TA, TB>(m, n, k, a, TA ? m : k, b, TB ? k : n, c, n);
}

/// Multiply-adds each thread must get, else a product stays on fewer threads
/// (a fork-join costs microseconds, tens when the worker must be woken on a
/// busy machine: a 256x128x10 product, 15 us on one thread, took 33 us on two
/// with a grain of 2^16).
inline constexpr index_t parallel_gemm_grain = 1 << 18;
/// Block boundaries are multiples of these (rows of C, columns of C), so each
/// element of C takes the same path through Eigen's kernels (register blocks
/// of nr rows, mr = 3 packets of columns (48 floats with AVX-512); GEMV row
/// groups of up to 8 packets (128)) whatever the split:
/// a product is then bit-identical for every thread count.
inline constexpr index_t gemm_row_align = 16, gemm_col_align = 384;

/// gemm_ld behind a plain function pointer (elements as bytes), so that the
/// code splitting products over threads is compiled once, not once per dtype
/// and transpose pair.
using gemm_fn = void (*)(index_t m, index_t n, index_t k, const void* a, index_t lda, const void* b, index_t ldb, void* c,
                         index_t ldc);
template <class T, bool TA, bool TB>
void gemm_erased(index_t m, index_t n, index_t k, const void* a, index_t lda, const void* b, index_t ldb, void* c,
                 index_t ldc) {
    gemm_ld<T, TA, TB>(m, n, k, static_cast<const T*>(a), lda, static_cast<const T*>(b), ldb, static_cast<T*>(c), ldc);
}

/// One matmul node's products: `batches` products C_i = op(A_i) op(B_i), C_i
/// m x n, op(A_i) m x k; A_i `sa` elements apart (0: one A for all), B_i `sb`.
struct matmul_job {
    index_t m = 0, n = 0, k = 0, batches = 1, sa = 0, sb = 0;
    bool ta = false, tb = false;
    std::size_t size = 0;  // bytes per element
    const unsigned char* a = nullptr;
    const unsigned char* b = nullptr;
    unsigned char* c = nullptr;
};

/// C = op(A) op(B) for one product (batch i), split over par's threads into
/// contiguous blocks of rows of C (or of columns, when the rows are few), one
/// gemm call per block: each element of C is computed by one thread.
inline TYPEFLOW_COLD_OPTIMIZE void gemm_split(const parallel_ctx& par, const matmul_job& j, index_t i, gemm_fn f) {
    const index_t m = j.m, n = j.n, k = j.k;
    const std::size_t size = j.size;
    const unsigned char* a = j.a + static_cast<std::size_t>(i * j.sa) * size;
    const unsigned char* b = j.b + static_cast<std::size_t>(i * j.sb) * size;
    unsigned char* c = j.c + static_cast<std::size_t>(i * m * n) * size;
    const index_t lda = j.ta ? m : k, ldb = j.tb ? k : n;
    const index_t work = m * n * (k > 0 ? k : 1);
    const index_t cap = std::min<index_t>(par.threads, work / parallel_gemm_grain);
    // blocks of whole alignment units; the last block takes the remainder, so
    // no block is a single row or column (which would take the GEMV path)
    const index_t row_units = std::max<index_t>(1, m / gemm_row_align);
    const index_t col_units = std::max<index_t>(1, n / gemm_col_align);
    const bool rows = n == 1 || (m != 1 && row_units >= std::min(cap, col_units));
    const index_t units = rows ? row_units : col_units;
    const index_t parts = std::min(cap, units);
    if (parts <= 1) return f(m, n, k, a, lda, b, ldb, c, n);
    const auto at = [size](const unsigned char* p, index_t e) { return p + static_cast<std::size_t>(e) * size; };
    par.for_each_task(static_cast<std::size_t>(parts), [&](std::size_t t) {
        const index_t align = rows ? gemm_row_align : gemm_col_align, extent = rows ? m : n;
        const index_t u0 = units * static_cast<index_t>(t) / parts, u1 = units * static_cast<index_t>(t + 1) / parts;
        const index_t b0 = u0 * align, b1 = u1 == units ? extent : u1 * align;
        if (b0 >= b1) return;
        if (rows)  // rows b0..b1 of C: rows of op(A)
            f(b1 - b0, n, k, at(a, j.ta ? b0 : b0 * lda), lda, b, ldb, c + static_cast<std::size_t>(b0 * n) * size, n);
        else  // columns b0..b1 of C: columns of op(B)
            f(m, b1 - b0, k, a, lda, at(b, j.tb ? b0 * ldb : b0), ldb, c + static_cast<std::size_t>(b0) * size, n);
    });
}

/// Runs a matmul node's products on par's threads: whole products per thread
/// when there are at least as many as threads, otherwise each product split
/// (gemm_split); on one thread, one gemm call per product.
inline TYPEFLOW_COLD_OPTIMIZE void matmul_run(const parallel_ctx& par, const matmul_job& j, gemm_fn f) {
    const index_t m = j.m, n = j.n, k = j.k;
    const auto one = [&](index_t i) {
        f(m, n, k, j.a + static_cast<std::size_t>(i * j.sa) * j.size, j.ta ? m : k,
          j.b + static_cast<std::size_t>(i * j.sb) * j.size, j.tb ? k : n, j.c + static_cast<std::size_t>(i * m * n) * j.size, n);
    };
    if (par.threads > 1 && j.batches > 1 && j.batches >= par.threads &&
        m * n * (k > 0 ? k : 1) * j.batches >= 2 * parallel_gemm_grain) {
        par.for_range(j.batches, 1, [&](std::size_t, index_t b0, index_t b1) {  // whole products per thread
            for (index_t i = b0; i < b1; ++i) one(i);
        });
        return;
    }
    for (index_t i = 0; i < j.batches; ++i) {
        if (par.threads > 1) gemm_split(par, j, i, f);
        else one(i);
    }
}

// The instantiations that TYPEFLOW_SEPARATE_COMPILATION compiles once, in
// typeflow/src.hpp (impl/kernels.ipp): KW is `extern template` or `template`.
#define TYPEFLOW_GEMM_INSTANCE(KW, T, TA, TB) \
    KW void gemm_ld<T, TA, TB>(index_t, index_t, index_t, const T*, index_t, const T*, index_t, T*, index_t);
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
        const auto z = op::matmul<TA, TB>::sizes_of(a, b);
        using T = value_type_t<N>;
        backend::eigen::detail::matmul_job j;
        j.m = z.m;
        j.n = z.n;
        j.k = z.k;
        j.batches = z.batches;
        j.sa = z.sa;
        j.sb = z.sb;
        j.ta = TA;
        j.tb = TB;
        j.size = sizeof(T);
        j.a = reinterpret_cast<const unsigned char*>(pa);
        j.b = reinterpret_cast<const unsigned char*>(pb);
        j.c = reinterpret_cast<unsigned char*>(out);
        backend::eigen::detail::matmul_run(ctx.par, j, &backend::eigen::detail::gemm_erased<T, TA, TB>);
    }
};

}  // namespace typeflow
