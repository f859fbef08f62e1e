// typeflow/backend/cuda/ops/rnn.hpp — the fused LSTM recurrence on a GPU
// (lstm_sequence, lstm_sequence_grad, lstm_recurrent_grad; the ops and their
// layout are in expr/ops/rnn.hpp). Each step is the CPU kernel's: the gates'
// pre-activations z_t are copied into the step's gate columns, one cuBLAS
// GEMM adds h_{t-1} U there, and one kernel (a thread per batch row and unit)
// activates the gates and computes c_t and h_t; backwards, one kernel per step
// computes dz_t and one GEMM adds dz_t U^T to dh_{t-1}; the recurrent kernel's
// gradient is one GEMM over all steps. The step order (`forward`,
// `backward`, `recurrent_grad`) is written once over a set of primitives, so
// tests/cuda/test_cuda_rnn_host.cu runs it on the host with host primitives
// and the same cell functions.
#pragma once
#include <cmath>
#include <utility>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/expr/ops/rnn.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::lstm {

/// Steps, batch rows and units of a recurrence.
struct extents {
    index_t steps = 0, batch = 0, units = 0;
};

template <class T>
TYPEFLOW_HOST_DEVICE inline T exp_of(T x) {
    if constexpr (std::is_same_v<T, float>) return ::expf(x);
    else return ::exp(x);
}
template <class T>
TYPEFLOW_HOST_DEVICE inline T tanh_of(T x) {
    if constexpr (std::is_same_v<T, float>) return ::tanhf(x);
    else return ::tanh(x);
}
template <class T>
TYPEFLOW_HOST_DEVICE inline T sigmoid_of(T x) {
    return T(1) / (T(1) + exp_of(-x));
}

/// Unit j of row b at step t, forward: the gate columns of s hold the
/// pre-activations a = z_t + h_{t-1} U; they become the activated gates
/// i, f, g, o, then c_t and h_t (a masked row keeps h_{t-1} and c_{t-1}).
template <class T>
TYPEFLOW_HOST_DEVICE void cell_forward(T* s, const T* m, extents e, index_t t, index_t b, index_t j) {
    const index_t U = e.units, W = 6 * U;
    T* cur = s + (t * e.batch + b) * W;
    const T* prev = t > 0 ? s + ((t - 1) * e.batch + b) * W : nullptr;
    const T i = sigmoid_of(cur[2 * U + j]), f = sigmoid_of(cur[3 * U + j]), g = tanh_of(cur[4 * U + j]),
            o = sigmoid_of(cur[5 * U + j]);
    cur[2 * U + j] = i, cur[3 * U + j] = f, cur[4 * U + j] = g, cur[5 * U + j] = o;
    const T c_prev = prev ? prev[U + j] : T(0), h_prev = prev ? prev[j] : T(0);
    const bool keep = m && m[t * e.batch + b] == T(0);
    const T c = f * c_prev + i * g;
    cur[U + j] = keep ? c_prev : c;
    cur[j] = keep ? h_prev : o * tanh_of(c);
}

/// Unit j of row b at step t, backward: dz_t from the adjoints of h_t and c_t
/// (ds's h and c columns plus dh and dc from later steps); dc becomes the
/// adjoint of c_{t-1}; dh_next[b, j] starts dh_{t-1} (a masked row passes its
/// gh on; the GEMM adds dz_t U^T).
template <class T>
TYPEFLOW_HOST_DEVICE void cell_backward(const T* s, const T* ds, const T* m, const T* dh, T* dc, T* dh_next, T* dz, extents e, index_t t,
                                        index_t b, index_t j) {
    const index_t U = e.units, W = 6 * U, r = b * U + j;
    const T* cur = s + (t * e.batch + b) * W;
    T* d = dz + (t * e.batch + b) * 4 * U;
    const T gh = ds[(t * e.batch + b) * W + j] + dh[r];
    T gc = ds[(t * e.batch + b) * W + U + j] + dc[r];
    if (m && m[t * e.batch + b] == T(0)) {
        d[j] = d[U + j] = d[2 * U + j] = d[3 * U + j] = T(0);
        dh_next[r] = gh;
        dc[r] = gc;
        return;
    }
    const T c = cur[U + j], c_prev = t > 0 ? s[((t - 1) * e.batch + b) * W + U + j] : T(0);
    const T i = cur[2 * U + j], f = cur[3 * U + j], g = cur[4 * U + j], o = cur[5 * U + j];
    const T tc = tanh_of(c);
    gc += gh * o * (T(1) - tc * tc);
    d[j] = gc * g * i * (T(1) - i);
    d[U + j] = gc * c_prev * f * (T(1) - f);
    d[2 * U + j] = gc * i * (T(1) - g * g);
    d[3 * U + j] = gh * tc * o * (T(1) - o);
    dc[r] = gc * f;
    dh_next[r] = T(0);
}

// The step order, over primitives `ops` provides:
//   ops.copy_rows(dst, dst_pitch, src, src_pitch, rows, cols)   (element pitches)
//   ops.gemm_acc(ta, tb, m, n, k, a, lda, b, ldb, c, ldc)        row-major c += op(a) op(b)
//   ops.zero(p, count)
//   ops.forward_cells(s, m, e, t) / ops.backward_cells(s, ds, m, dh, dc, dh_next, dz, e, t)
//     (cell_forward / cell_backward for every row b and unit j)

/// s = lstm_sequence(z, u[, m]).
template <class T, class Ops>
void forward(Ops& ops, extents e, const T* z, const T* u, const T* m, T* s) {
    const index_t B = e.batch, U = e.units, G = 4 * U, W = 6 * U;
    for (index_t t = 0; t < e.steps; ++t) {
        T* row = s + t * B * W;
        ops.copy_rows(row + 2 * U, W, z + t * B * G, G, B, G);  // the gate columns <- z_t
        if (t > 0) ops.gemm_acc(false, false, B, G, U, row - B * W, W, u, G, row + 2 * U, W);  // += h_{t-1} U
        ops.forward_cells(s, m, e, t);
    }
}
/// dz = lstm_sequence_grad(s, ds, u[, m]); dh0, dh1, dc: batch * units each.
template <class T, class Ops>
void backward(Ops& ops, extents e, const T* s, const T* ds, const T* u, const T* m, T* dz, T* dh0, T* dh1, T* dc) {
    const index_t B = e.batch, U = e.units, G = 4 * U;
    ops.zero(dh0, B * U);
    ops.zero(dc, B * U);
    T* dh = dh0;
    T* next = dh1;
    for (index_t t = e.steps - 1; t >= 0; --t) {
        ops.backward_cells(s, ds, m, dh, dc, next, dz, e, t);
        if (t > 0) ops.gemm_acc(false, true, B, U, G, dz + t * B * G, G, u, G, next, U);  // dh_{t-1} += dz_t U^T
        std::swap(dh, next);
    }
}
/// du = lstm_recurrent_grad(s, dz): the sum over steps t >= 1 of h_{t-1}^T dz_t.
template <class T, class Ops>
void recurrent_grad(Ops& ops, extents e, const T* s, const T* dz, T* du) {
    const index_t B = e.batch, U = e.units, G = 4 * U, W = 6 * U;
    ops.zero(du, U * G);
    if (e.steps > 1 && B > 0) ops.gemm_acc(true, false, U, G, (e.steps - 1) * B, s, W, dz + B * G, G, du, G);
}

template <class T>
__global__ void forward_cells_kernel(T* s, const T* m, extents e, index_t t) {
    const index_t n = e.batch * e.units, stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t x = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < n; x += stride)
        cell_forward(s, m, e, t, x / e.units, x % e.units);
}
template <class T>
__global__ void backward_cells_kernel(const T* s, const T* ds, const T* m, const T* dh, T* dc, T* dh_next, T* dz, extents e, index_t t) {
    const index_t n = e.batch * e.units, stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t x = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < n; x += stride)
        cell_backward(s, ds, m, dh, dc, dh_next, dz, e, t, x / e.units, x % e.units);
}

/// The primitives on GPU N: copies, cuBLAS and the cell kernels on its stream.
template <int N, class T>
struct device_ops {
    device_context& c = context<N>();
    std::string_view what;

    void copy_rows(T* dst, index_t dst_pitch, const T* src, index_t src_pitch, index_t rows, index_t cols) {
        if (rows == 0 || cols == 0) return;
        launch_count().fetch_add(1, std::memory_order_relaxed);
        check(cudaMemcpy2DAsync(dst, static_cast<std::size_t>(dst_pitch) * sizeof(T), src, static_cast<std::size_t>(src_pitch) * sizeof(T),
                                static_cast<std::size_t>(cols) * sizeof(T), static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice,
                                c.stream),
              what, "cudaMemcpy2DAsync");
    }
    void gemm_acc(bool ta, bool tb, index_t m, index_t n, index_t k, const T* a, index_t lda, const T* b, index_t ldb, T* out, index_t ldc) {
        if (m == 0 || n == 0 || k == 0) return;
        const T one = T(1);
        const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
        const auto i = [](index_t v) { return static_cast<int>(v); };
        launch_count().fetch_add(1, std::memory_order_relaxed);
        if constexpr (std::is_same_v<T, float>)
            check(cublasSgemm(c.blas, opb, opa, i(n), i(m), i(k), &one, b, i(ldb), a, i(lda), &one, out, i(ldc)), what, "cublasSgemm");
        else
            check(cublasDgemm(c.blas, opb, opa, i(n), i(m), i(k), &one, b, i(ldb), a, i(lda), &one, out, i(ldc)), what, "cublasDgemm");
    }
    void zero(T* p, index_t count) {
        if (count > 0) check(cudaMemsetAsync(p, 0, static_cast<std::size_t>(count) * sizeof(T), c.stream), what, "cudaMemsetAsync");
    }
    void forward_cells(T* s, const T* m, extents e, index_t t) {
        if (e.batch * e.units == 0) return;
        forward_cells_kernel<T><<<grid_for(static_cast<std::size_t>(e.batch * e.units), 256), 256, 0, c.stream>>>(s, m, e, t);
        check_launch(what);
    }
    void backward_cells(const T* s, const T* ds, const T* m, const T* dh, T* dc, T* dh_next, T* dz, extents e, index_t t) {
        if (e.batch * e.units == 0) return;
        backward_cells_kernel<T>
            <<<grid_for(static_cast<std::size_t>(e.batch * e.units), 256), 256, 0, c.stream>>>(s, ds, m, dh, dc, dh_next, dz, e, t);
        check_launch(what);
    }
};

/// Refuses extents beyond cuBLAS's 32-bit sizes.
inline void check_sizes(const extents& e, std::string_view what) {
    constexpr index_t lim = 2147483647;
    if (e.batch * 6 * e.units > lim || e.steps * e.batch > lim)
        typeflow::detail::raise(typeflow::detail::message() << what << ": extents beyond cuBLAS's 32-bit sizes");
}

}  // namespace typeflow::cuda::lstm

namespace typeflow {

template <int N, bool Masked>
struct kernel<gpu<N>, op::lstm_sequence<Masked>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* s) {
        using T = value_type_t<Nd>;
        const dims zd = ctx.dims_of(n.template child<0>());
        const cuda::lstm::extents e{zd.d[0], zd.d[1], zd.d[2] / 4};
        cuda::lstm::check_sizes(e, "lstm_sequence");
        const T* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<2>());
        cuda::lstm::device_ops<N, T> ops{.what = "lstm_sequence"};
        cuda::lstm::forward(ops, e, ctx.input(n.template child<0>()), ctx.input(n.template child<1>()), m, s);
    }
};

template <int N, bool Masked>
struct kernel<gpu<N>, op::lstm_sequence_grad<Masked>> {
    using state = cuda::device_scratch;  // dh_t, dh_{t-1} and dc, batch * units each
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* dz) {
        using T = value_type_t<Nd>;
        const dims sd = ctx.dims_of(n.template child<0>());
        const cuda::lstm::extents e{sd.d[0], sd.d[1], sd.d[2] / 6};
        cuda::lstm::check_sizes(e, "lstm_sequence_grad");
        const T* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<3>());
        cuda::lstm::device_ops<N, T> ops{.what = "lstm_sequence_grad"};
        const std::size_t row = static_cast<std::size_t>(e.batch * e.units);
        T* buf = static_cast<T*>(ctx.template state<state>().reserve(ops.c, (3 * row + 1) * sizeof(T), "lstm_sequence_grad"));
        cuda::lstm::backward(ops, e, ctx.input(n.template child<0>()), ctx.input(n.template child<1>()), ctx.input(n.template child<2>()), m,
                             dz, buf, buf + row, buf + 2 * row);
    }
};

template <int N>
struct kernel<gpu<N>, op::lstm_recurrent_grad> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* du) {
        using T = value_type_t<Nd>;
        const dims sd = ctx.dims_of(n.template child<0>());
        const cuda::lstm::extents e{sd.d[0], sd.d[1], sd.d[2] / 6};
        cuda::lstm::check_sizes(e, "lstm_recurrent_grad");
        cuda::lstm::device_ops<N, T> ops{.what = "lstm_recurrent_grad"};
        cuda::lstm::recurrent_grad(ops, e, ctx.input(n.template child<0>()), ctx.input(n.template child<1>()), du);
    }
};

}  // namespace typeflow
