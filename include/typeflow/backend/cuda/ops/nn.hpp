// typeflow/backend/cuda/ops/nn.hpp — softmax and log-softmax along an axis, argmax and argmin
// (a warp per row when the axis is the last), one_hot (an out-of-range label
// is reported through the error word and raised when the run's GPU work is
// done), and group (a step's "all done" flag).
#pragma once
#include <cmath>
#include <cstdint>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/expr/ops/group.hpp>
#include <typeflow/expr/ops/nn.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::detail {

template <class T>
__device__ __forceinline__ T exp_(T x) {
    if constexpr (std::is_same_v<T, float>) return expf(x);
    else return ::exp(x);
}
template <class T>
__device__ __forceinline__ T log_(T x) {
    if constexpr (std::is_same_v<T, float>) return logf(x);
    else return ::log(x);
}

template <bool Log, class T>
__global__ void softmax_rows(const T* in, T* out, index_t rows, index_t len) {
    const index_t warps = static_cast<index_t>(gridDim.x) * (blockDim.x / 32);
    const int lane = threadIdx.x % 32;
    for (index_t r = static_cast<index_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
        const T* x = in + r * len;
        T* y = out + r * len;
        T mx = -std::numeric_limits<T>::infinity();
        for (index_t i = lane; i < len; i += 32) mx = x[i] > mx ? x[i] : mx;
        for (int o = 16; o > 0; o /= 2) {
            const T v = __shfl_xor_sync(0xffffffffu, mx, o);
            mx = v > mx ? v : mx;
        }
        T sum = T(0);
        for (index_t i = lane; i < len; i += 32) sum += exp_(x[i] - mx);
        for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if constexpr (Log) {
            const T ls = log_(sum);
            for (index_t i = lane; i < len; i += 32) y[i] = (x[i] - mx) - ls;
        } else {
            for (index_t i = lane; i < len; i += 32) y[i] = exp_(x[i] - mx) / sum;
        }
    }
}
template <bool Log, class T>
__global__ void softmax_middle(const T* in, T* out, index_t outer, index_t len, index_t inner) {
    const index_t n = outer * inner, stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += stride) {
        const index_t o = t / inner, i = t % inner;
        const auto at = [&](index_t l) { return (o * len + l) * inner + i; };
        T mx = in[at(0)];
        for (index_t l = 1; l < len; ++l) mx = in[at(l)] > mx ? in[at(l)] : mx;
        T sum = T(0);
        for (index_t l = 0; l < len; ++l) sum += exp_(in[at(l)] - mx);
        const T ls = log_(sum);
        for (index_t l = 0; l < len; ++l) out[at(l)] = Log ? (in[at(l)] - mx) - ls : exp_(in[at(l)] - mx) / sum;
    }
}

// argmax / argmin along an axis: a thread per (outer, inner) output; NaN wins
// (the first NaN), ties go to the first index, as on the CPU.
template <bool IsMax, class T>
__global__ void arg_reduce_kernel(const T* in, std::int64_t* out, index_t outer, index_t len, index_t inner) {
    const index_t n = outer * inner, stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += stride) {
        const index_t o = t / inner, i = t % inner;
        std::int64_t best = 0;
        T bv = in[o * len * inner + i];
        for (index_t l = 1; l < len; ++l) {
            const T v = in[(o * len + l) * inner + i];
            if (bv != bv) break;
            if (v != v || (IsMax ? v > bv : v < bv)) {
                best = l;
                bv = v;
            }
        }
        out[t] = best;
    }
}

template <class L, class T>
__global__ void one_hot_kernel(const L* labels, T* out, index_t count, index_t depth, error_word* err) {
    const index_t n = count * depth, stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += stride) {
        const index_t i = t / depth, j = t % depth;
        const L l = labels[i];
        if (j == 0 && (l < 0 || static_cast<index_t>(l) >= depth) && atomicCAS(&err->code, 0, error_label_out_of_range) == 0) {
            err->a = static_cast<long long>(l);
            err->b = i;
            err->c = depth;
        }
        out[t] = j == static_cast<index_t>(l) ? T(1) : T(0);
    }
}

}  // namespace typeflow::cuda::detail

namespace typeflow {

template <int N, bool Log, index_t Axis>
struct kernel<gpu<N>, op::softmax_along<Log, Axis>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        const dims d = ctx.dims_of(n.template child<0>());
        const T* in = ctx.input(n.template child<0>());
        const axis_split s = split_at(d, op::softmax_along<Log, Axis>::axis(d.rank));
        if (s.len == 0 || s.outer * s.inner == 0) return;
        cuda::device_context& c = cuda::context<N>();
        if (s.inner == 1)
            cuda::detail::softmax_rows<Log, T><<<cuda::grid_for(static_cast<std::size_t>(s.outer), 8), 256, 0, c.stream>>>(in, out, s.outer, s.len);
        else
            cuda::detail::softmax_middle<Log, T>
                <<<cuda::grid_for(static_cast<std::size_t>(s.outer * s.inner), 256), 256, 0, c.stream>>>(in, out, s.outer, s.len, s.inner);
        cuda::check_launch(op::softmax_along<Log, Axis>::name);
    }
};

template <int N, index_t Depth, class T>
struct kernel<gpu<N>, op::one_hot<Depth, T>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, T* out) {
        const auto* labels = ctx.input(n.template child<0>());
        const index_t count = ctx.dims_of(n.template child<0>()).numel();
        if (count == 0) return;
        cuda::device_context& c = cuda::context<N>();
        cuda::detail::one_hot_kernel<<<cuda::grid_for(static_cast<std::size_t>(count * Depth), 256), 256, 0, c.stream>>>(
            labels, out, count, Depth, cuda::device_error_word(c));
        cuda::check_launch("one_hot");
    }
};

template <int N, bool IsMax, index_t Axis>
struct kernel<gpu<N>, op::arg_reduce<IsMax, Axis>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, std::int64_t* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        const auto* in = ctx.input(n.template child<0>());
        using T = meta::remove_cvref_t<decltype(*in)>;
        const axis_split s = split_at(d, op::arg_reduce<IsMax, Axis>::axis(d.rank));
        if (s.outer * s.inner == 0) return;
        cuda::device_context& c = cuda::context<N>();
        cuda::detail::arg_reduce_kernel<IsMax, T>
            <<<cuda::grid_for(static_cast<std::size_t>(s.outer * s.inner), 256), 256, 0, c.stream>>>(in, out, s.outer, s.len, s.inner);
        cuda::check_launch(op::arg_reduce<IsMax, Axis>::name);
    }
};

template <int N>
struct kernel<gpu<N>, op::group> {
    template <class Nd, class Ctx>
    static void run(const Nd&, const Ctx&, bool* out) {
        cuda::fill(cuda::context<N>(), out, 1, true, "group");
    }
};

}  // namespace typeflow
