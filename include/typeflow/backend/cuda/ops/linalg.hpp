// typeflow/backend/cuda/ops/linalg.hpp — matrix_inverse, matrix_determinant,
// log_determinant and solve on a GPU, through cuBLAS's LU decomposition with
// partial pivoting (getrfBatched, getriBatched, getrsBatched; a batch of
// one), as the CPU's Eigen kernels decompose. cuBLAS is column-major: a
// row-major matrix A is its column-major A^T, so the kernels decompose A^T:
// its inverse read row-major is A^-1, its determinant is A's, and solving
// with the transposed factors (getrs, CUBLAS_OP_T) gives A X = B for B
// transposed to column-major and the result transposed back. A singular or
// non-finite matrix is the CPU's tf::error, raised when the run's work is
// done. The determinant from the factors (det_of) is host-and-device code:
// tests/cuda/test_cuda_linalg_host.cu checks it on the host.
#pragma once
#include <cmath>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/expr/scalar_math.hpp>
#include <typeflow/expr/ops/linalg.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::linalg {

/// det A (or log |det A|) from the LU factors of A (or of A^T) in
/// column-major `lu` (n x n, leading dimension n) and LAPACK's 1-based row
/// interchanges `piv`: the product of U's diagonal, negated once per
/// interchange (the sum of the logarithms of its magnitudes when Log).
template <bool Log, class T>
TYPEFLOW_HOST_DEVICE T det_of(const T* lu, const int* piv, index_t n) {
    if constexpr (Log) {
        T s = T(0);
        for (index_t i = 0; i < n; ++i) {
            const T d = lu[i * n + i];
            s += math::log(d < T(0) ? -d : d);
        }
        return s;
    } else {
        T p = T(1);
        for (index_t i = 0; i < n; ++i) {
            p *= lu[i * n + i];
            if (piv[i] != static_cast<int>(i) + 1) p = -p;
        }
        return p;
    }
}

/// What a node keeps across runs on its GPU: scratch for the factors, the
/// pivots, cuBLAS's info words, its pointer arrays and a transposed operand.
struct lu_state {
    device_scratch mem;
};
template <class T>
struct lu_scratch {
    T* a = nullptr;     // the factors (n x n)
    T* b = nullptr;     // solve: B, then X, column-major (n x k)
    int* piv = nullptr;
    int* info = nullptr;
    T** ptrs = nullptr;  // {a, out or b}
};
using typeflow::cuda::detail::align_up;
template <class T>
lu_scratch<T> scratch_of(lu_state& st, device_context& c, index_t n, index_t k, std::string_view what) {
    const std::size_t nn = static_cast<std::size_t>(n * n) * sizeof(T), nk = static_cast<std::size_t>(n * k) * sizeof(T);
    const std::size_t at_b = align_up(nn), at_piv = at_b + align_up(nk), at_info = at_piv + align_up(static_cast<std::size_t>(n) * sizeof(int));
    const std::size_t at_ptrs = at_info + 256, bytes = at_ptrs + 256;
    auto* base = static_cast<std::byte*>(st.mem.reserve(c, bytes, what));
    lu_scratch<T> s;
    s.a = reinterpret_cast<T*>(base);
    s.b = reinterpret_cast<T*>(base + at_b);
    s.piv = reinterpret_cast<int*>(base + at_piv);
    s.info = reinterpret_cast<int*>(base + at_info);
    s.ptrs = reinterpret_cast<T**>(base + at_ptrs);
    return s;
}

namespace detail {
template <class T>
__global__ void set_ptrs_kernel(T** p, T* a, T* c) {
    p[0] = a;
    p[1] = c;
}
template <bool Log, class T>
__global__ void det_kernel(const T* lu, const int* piv, index_t n, T* out) {
    *out = det_of<Log>(lu, piv, n);
}
// Reports a zero pivot (info > 0) or a non-finite element among `count` at p.
template <class T>
__global__ void singular_kernel(const int* info, const T* p, index_t count, index_t n, error_word* err, const char* what,
                                long long what_len) {
    bool bad = threadIdx.x == 0 && *info > 0;
    for (index_t i = threadIdx.x; i < count && !bad; i += blockDim.x) bad = !(p[i] - p[i] == T(0));
    if (bad && atomicCAS(&err->code, 0, error_singular) == 0) {
        err->a = n;
        err->what = what;
        err->what_len = what_len;
    }
}

inline void count_call() { launch_count().fetch_add(1, std::memory_order_relaxed); }
template <class T>
void getrf(device_context& c, index_t n, T** a, int* piv, int* info, std::string_view what) {
    count_call();
    if constexpr (std::is_same_v<T, float>)
        check(cublasSgetrfBatched(c.blas, static_cast<int>(n), a, static_cast<int>(n), piv, info, 1), what, "cublasSgetrfBatched");
    else
        check(cublasDgetrfBatched(c.blas, static_cast<int>(n), a, static_cast<int>(n), piv, info, 1), what, "cublasDgetrfBatched");
}
template <class T>
void getri(device_context& c, index_t n, T** a, const int* piv, T** out, int* info, std::string_view what) {
    count_call();
    const int m = static_cast<int>(n);
    if constexpr (std::is_same_v<T, float>)
        check(cublasSgetriBatched(c.blas, m, a, m, piv, out, m, info, 1), what, "cublasSgetriBatched");
    else
        check(cublasDgetriBatched(c.blas, m, a, m, piv, out, m, info, 1), what, "cublasDgetriBatched");
}
template <class T>
void getrs_t(device_context& c, index_t n, index_t k, T** a, const int* piv, T** b, std::string_view what) {
    count_call();
    int info = 0;  // argument errors only (host memory)
    const int m = static_cast<int>(n), r = static_cast<int>(k);
    if constexpr (std::is_same_v<T, float>)
        check(cublasSgetrsBatched(c.blas, CUBLAS_OP_T, m, r, a, m, piv, b, m, &info, 1), what, "cublasSgetrsBatched");
    else
        check(cublasDgetrsBatched(c.blas, CUBLAS_OP_T, m, r, a, m, piv, b, m, &info, 1), what, "cublasDgetrsBatched");
    if (info != 0)
        typeflow::detail::raise(typeflow::detail::message() << what << ": cuBLAS getrs refused argument " << -info);
}
/// Copies A into the scratch and decomposes it there.
template <class T>
void factor(device_context& c, const lu_scratch<T>& s, const T* a, index_t n, T* second, std::string_view what) {
    check(cudaMemcpyAsync(s.a, a, static_cast<std::size_t>(n * n) * sizeof(T), cudaMemcpyDeviceToDevice, c.stream), what,
          "cudaMemcpyAsync");
    set_ptrs_kernel<T><<<1, 1, 0, c.stream>>>(s.ptrs, s.a, second);
    check_launch(what);
    getrf(c, n, s.ptrs, s.piv, s.info, what);
}
template <class T>
void report_singular(device_context& c, const lu_scratch<T>& s, const T* p, index_t count, index_t n, std::string_view what) {
    singular_kernel<T><<<1, 256, 0, c.stream>>>(s.info, p, count, n, device_error_word(c), what.data(),
                                                static_cast<long long>(what.size()));
    check_launch(what);
}
}  // namespace detail
}  // namespace typeflow::cuda::linalg

namespace typeflow {

template <int N>
struct kernel<gpu<N>, op::matrix_inverse> {
    using state = cuda::linalg::lu_state;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        namespace ld = cuda::linalg::detail;
        constexpr std::string_view what = op::matrix_inverse::name;
        const index_t m = ctx.dims_of(n.template child<0>()).d[0];
        if (m == 0) return;
        cuda::device_context& c = cuda::context<N>();
        const auto s = cuda::linalg::scratch_of<T>(ctx.template state<state>(), c, m, 0, what);
        ld::factor(c, s, ctx.input(n.template child<0>()), m, out, what);
        ld::getri(c, m, s.ptrs, s.piv, s.ptrs + 1, s.info + 1, what);  // (A^T)^-1, column-major: A^-1 row-major
        ld::report_singular(c, s, out, m * m, m, what);
    }
};

template <int N, bool Log>
struct kernel<gpu<N>, op::determinant<Log>> {
    using state = cuda::linalg::lu_state;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        namespace ld = cuda::linalg::detail;
        constexpr std::string_view what = op::determinant<Log>::name;
        const index_t m = ctx.dims_of(n.template child<0>()).d[0];
        cuda::device_context& c = cuda::context<N>();
        if (m == 0) {
            cuda::fill<T>(c, out, 1, Log ? T(0) : T(1), what);
            return;
        }
        const auto s = cuda::linalg::scratch_of<T>(ctx.template state<state>(), c, m, 0, what);
        ld::factor(c, s, ctx.input(n.template child<0>()), m, s.a, what);
        ld::det_kernel<Log, T><<<1, 1, 0, c.stream>>>(s.a, s.piv, m, out);  // a singular matrix: 0 (log: -inf), as on the CPU
        cuda::check_launch(what);
    }
};

template <int N>
struct kernel<gpu<N>, op::solve> {
    using state = cuda::linalg::lu_state;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        namespace ld = cuda::linalg::detail;
        constexpr std::string_view what = op::solve::name;
        const index_t m = ctx.dims_of(n.template child<0>()).d[0], k = ctx.dims_of(n.template child<1>()).d[1];
        if (m == 0 || k == 0) return;
        cuda::device_context& c = cuda::context<N>();
        const auto s = cuda::linalg::scratch_of<T>(ctx.template state<state>(), c, m, k, what);
        ld::factor(c, s, ctx.input(n.template child<0>()), m, s.b, what);
        cuda::detail::transpose(c, ctx.input(n.template child<1>()), s.b, m, k, what);  // B [m, k] row-major -> column-major
        ld::getrs_t(c, m, k, s.ptrs, s.piv, s.ptrs + 1, what);                // (A^T)^T X = B
        cuda::detail::transpose(c, s.b, out, k, m, what);                               // X column-major -> row-major
        ld::report_singular(c, s, out, m * k, m, what);
    }
};

}  // namespace typeflow
