// typeflow/backend/cuda/ops/matmul.hpp — matmul (2-D, batched, transposed
// operands) through one cuBLAS strided-batched GEMM in full fp32 or fp64, and
// the transfers between the host and a GPU.
#pragma once
#include <limits>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/expr/ops/to_device.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda {

/// C = op(A) op(B) for row-major operands, on c's stream: the column-major
/// product C^T = op(B)^T op(A)^T, so cuBLAS sees B first.
template <class T>
void gemm(device_context& c, bool ta, bool tb, index_t m, index_t n, index_t k, const T* a, index_t lda, index_t sa,
          const T* b, index_t ldb, index_t sb, T* out, index_t batches, std::string_view what) {
    constexpr index_t lim = std::numeric_limits<int>::max();
    if (m > lim || n > lim || k > lim || lda > lim || ldb > lim || batches > lim)
        typeflow::detail::raise(typeflow::detail::message() << what << ": extents beyond cuBLAS's 32-bit sizes");
    const T alpha = T(1), beta = T(0);
    launch_count().fetch_add(1, std::memory_order_relaxed);
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if constexpr (std::is_same_v<T, float>)
        check(cublasSgemmStridedBatched(c.blas, opb, opa, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                        static_cast<int>(ldb), sb, a, static_cast<int>(lda), sa, &beta, out, static_cast<int>(n), m * n,
                                        static_cast<int>(batches)),
              what, "cublasSgemmStridedBatched");
    else if constexpr (std::is_same_v<T, double>)
        check(cublasDgemmStridedBatched(c.blas, opb, opa, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                        static_cast<int>(ldb), sb, a, static_cast<int>(lda), sa, &beta, out, static_cast<int>(n), m * n,
                                        static_cast<int>(batches)),
              what, "cublasDgemmStridedBatched");
    else static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "typeflow: matmul on a GPU: float or double");
}

}  // namespace typeflow::cuda

namespace typeflow {

template <int N, bool TA, bool TB>
struct kernel<gpu<N>, op::matmul<TA, TB>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const dims a = ctx.dims_of(n.template child<0>());
        const dims b = ctx.dims_of(n.template child<1>());
        const auto z = op::matmul<TA, TB>::sizes_of(a, b);
        if (z.m == 0 || z.n == 0 || z.batches == 0) return;
        cuda::device_context& c = cuda::context<N>();
        if (z.k == 0) {
            cuda::check(cudaMemsetAsync(out, 0, static_cast<std::size_t>(z.batches * z.m * z.n) * sizeof(value_type_t<Nd>), c.stream),
                        "matmul", "cudaMemsetAsync");
            return;
        }
        cuda::gemm(c, TA, TB, z.m, z.n, z.k, ctx.input(n.template child<0>()), z.lda, z.sa, ctx.input(n.template child<1>()), z.ldb,
                   z.sb, out, z.batches, "matmul");
    }
};

/// Host to GPU N: an asynchronous copy on the GPU's stream.
template <int N, class From>
    requires host_memory_v<From>
struct kernel<gpu<N>, op::to<gpu<N>, From>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const auto& a = n.template child<0>();
        const auto bytes = static_cast<std::size_t>(ctx.dims_of(a).numel()) * sizeof(value_type_t<Nd>);
        if (bytes) cuda::detail::upload<N>(out, ctx.input(a), bytes);
    }
};
/// GPU N to a host device: the copy, complete when the kernel returns.
template <class To, int N>
    requires host_memory_v<To>
struct kernel<To, op::to<To, gpu<N>>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const auto& a = n.template child<0>();
        const auto bytes = static_cast<std::size_t>(ctx.dims_of(a).numel()) * sizeof(value_type_t<Nd>);
        if (bytes) cuda::detail::download<N>(out, ctx.input(a), bytes);
    }
};

}  // namespace typeflow
