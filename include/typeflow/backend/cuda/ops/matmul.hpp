// typeflow/backend/cuda/ops/matmul.hpp — matmul (2-D, batched, transposed
// operands) through one cuBLAS strided-batched GEMM in full fp32 or fp64; a
// 2-D matmul with the bias (and ReLU) the plan pairs with it through one
// cuBLASLt GEMM with the BIAS or RELU_BIAS epilogue; the transfers between
// the host and a GPU.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

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

/// out[i, j] = act(out[i, j] + bias[j]) over rows x cols, act a ReLU or nothing
/// (the epilogue when cuBLASLt offers no algorithm for it).
template <class T>
__global__ void bias_act_kernel(T* out, const T* bias, index_t rows, index_t cols, bool relu) {
    const index_t n = rows * cols;
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += static_cast<index_t>(gridDim.x) * blockDim.x) {
        const T v = static_cast<T>(out[e] + bias[e % cols]);
        out[e] = relu ? (v > T(0) ? v : T(0)) : v;
    }
}

/// sums[j] = the sum over rows i of b[i, j] (rows x cols, row-major): a bias
/// gradient, when cuBLASLt offers no algorithm with it.
template <class T>
__global__ void row_sum_kernel(const T* b, T* sums, index_t rows, index_t cols) {
    for (index_t j = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < cols; j += static_cast<index_t>(gridDim.x) * blockDim.x) {
        T acc = T(0);
        for (index_t i = 0; i < rows; ++i) acc += b[i * cols + j];
        sums[j] = acc;
    }
}

/// One cuBLASLt GEMM with a bias epilogue, for one set of extents: its
/// descriptors and the algorithm cuBLASLt's heuristic chose, kept in the
/// matmul node's state and rebuilt when the extents change.
struct lt_matmul {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;  // an algorithm was found
    index_t key[6] = {-1, -1, -1, -1, -1, -1};

    lt_matmul() = default;
    lt_matmul(const lt_matmul&) = delete;
    lt_matmul& operator=(const lt_matmul&) = delete;
    ~lt_matmul() { release(); }
    void release() noexcept {
        if (op) (void)cublasLtMatmulDescDestroy(op);
        if (la) (void)cublasLtMatrixLayoutDestroy(la);
        if (lb) (void)cublasLtMatrixLayoutDestroy(lb);
        if (ld) (void)cublasLtMatrixLayoutDestroy(ld);
        op = nullptr, la = lb = ld = nullptr;
        ok = false;
    }
    /// Readies C = op(A) op(B) for row-major operands (as gemm) with epilogue
    /// `epi`: BIAS or RELU_BIAS (C += bias, then ReLU), or BGRADA (the sums of
    /// B's rows beside C: cuBLASLt's A is our B); false when cuBLASLt has no
    /// algorithm for it.
    template <class T>
    bool prepare(device_context& c, bool ta, bool tb, index_t m, index_t n, index_t k, index_t lda, index_t ldb, cublasLtEpilogue_t epi,
                 std::string_view what) {
        const index_t want[6] = {m, n, k, lda, ldb, (ta ? 1 : 0) + (tb ? 2 : 0) + 4 * static_cast<index_t>(epi)};
        if (std::equal(want, want + 6, key)) return ok;
        release();
        std::copy(want, want + 6, key);
        constexpr index_t lim = std::numeric_limits<int>::max();
        if (m > lim || n > lim || k > lim) return false;
        constexpr bool f32 = std::is_same_v<T, float>;
        const cudaDataType_t dt = f32 ? CUDA_R_32F : CUDA_R_64F;
        check(cublasLtMatmulDescCreate(&op, f32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F, dt), what, "cublasLtMatmulDescCreate");
        // the column-major product C^T = op(B)^T op(A)^T, as gemm: cuBLASLt's A is our B
        const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
        check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), what, "cublasLtMatmulDescSetAttribute");
        check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), what, "cublasLtMatmulDescSetAttribute");
        check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), what, "cublasLtMatmulDescSetAttribute");
        check(cublasLtMatrixLayoutCreate(&la, dt, static_cast<std::uint64_t>(tb ? k : n), static_cast<std::uint64_t>(tb ? n : k), ldb), what,
              "cublasLtMatrixLayoutCreate");
        check(cublasLtMatrixLayoutCreate(&lb, dt, static_cast<std::uint64_t>(ta ? m : k), static_cast<std::uint64_t>(ta ? k : m), lda), what,
              "cublasLtMatrixLayoutCreate");
        check(cublasLtMatrixLayoutCreate(&ld, dt, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(m), n), what,
              "cublasLtMatrixLayoutCreate");
        cublasLtMatmulPreference_t pref = nullptr;
        check(cublasLtMatmulPreferenceCreate(&pref), what, "cublasLtMatmulPreferenceCreate");
        const std::size_t ws = blas_workspace_bytes;
        cublasLtMatmulHeuristicResult_t res{};
        int found = 0;
        cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
        if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulAlgoGetHeuristic(c.lt, op, la, lb, ld, ld, pref, 1, &res, &found);
        (void)cublasLtMatmulPreferenceDestroy(pref);
        ok = st == CUBLAS_STATUS_SUCCESS && found > 0 && res.state == CUBLAS_STATUS_SUCCESS;
        if (ok) algo = res.algo;
        return ok;
    }
    /// Queues the prepared GEMM: out = act(op(A) op(B) + bias), or out = op(A)
    /// op(B) and the sums of B's rows at `bias` (BGRADA).
    template <class T>
    void run(device_context& c, const T* a, const T* b, const T* bias, T* out, std::string_view what) {
        const T alpha = T(1), beta = T(0);
        check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), what,
              "cublasLtMatmulDescSetAttribute");
        launch_count().fetch_add(1, std::memory_order_relaxed);
        check(cublasLtMatmul(c.lt, op, &alpha, b, la, a, lb, &beta, out, ld, out, ld, &algo, c.blas_workspace, blas_workspace_bytes,
                             c.stream),
              what, "cublasLtMatmul");
    }
};

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
    using state = cuda::lt_matmul;
    static constexpr bool bias_grad_epilogue = !TB;  // B's rows are its first axis
    /// A 2-D matmul with the bias (and ReLU) of its one reader, or with the
    /// sums of B's rows beside it (a dense layer's weight and bias
    /// gradients): one cuBLASLt GEMM with the BIAS, RELU_BIAS or BGRADA
    /// epilogue (or the GEMM and a small kernel when cuBLASLt has no
    /// algorithm for the shapes).
    template <class Nd, class Ctx>
    static void run_epilogue(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out, const epilogue& e) {
        using T = value_type_t<Nd>;
        const dims a = ctx.dims_of(n.template child<0>());
        const dims b = ctx.dims_of(n.template child<1>());
        const auto z = op::matmul<TA, TB>::sizes_of(a, b);
        cuda::device_context& c = cuda::context<N>();
        const cublasLtEpilogue_t epi = e.bias_grad ? CUBLASLT_EPILOGUE_BGRADA : e.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        T* vec = static_cast<T*>(e.bias_grad ? e.bias_grad : const_cast<void*>(e.bias));
        const T* bp = ctx.input(n.template child<1>());
        if (z.m > 0 && z.n > 0 && z.k > 0 && z.batches == 1 &&
            ctx.template state<cuda::lt_matmul>().template prepare<T>(c, TA, TB, z.m, z.n, z.k, z.lda, z.ldb, epi, "matmul")) {
            ctx.template state<cuda::lt_matmul>().run(c, ctx.input(n.template child<0>()), bp, vec, out, "matmul");
            return;
        }
        run(n, ctx, out);
        if (e.bias_grad) {
            if (z.n == 0) return;
            cuda::row_sum_kernel<T><<<cuda::grid_for(static_cast<std::size_t>(z.n), 256), 256, 0, c.stream>>>(bp, vec, z.k, z.n);
            cuda::check_launch("matmul (bias gradient epilogue)");
            return;
        }
        if (z.m == 0 || z.n == 0) return;
        const std::size_t count = static_cast<std::size_t>(z.batches * z.m * z.n);
        cuda::bias_act_kernel<T><<<cuda::grid_for(count, 256), 256, 0, c.stream>>>(out, vec, z.batches * z.m, z.n, e.relu);
        cuda::check_launch("matmul (bias epilogue)");
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
