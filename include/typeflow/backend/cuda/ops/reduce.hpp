// typeflow/backend/cuda/ops/reduce.hpp — reductions on the GPU: a warp per
// row for reductions over trailing axes, cuBLAS GEMV with a vector of ones
// for sums over leading axes (a bias gradient), a thread per output
// otherwise. Also sum_like (the gradient of broadcasting) and reduced_count.
#pragma once
#include <cmath>
#include <limits>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/axes.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda {
namespace detail {

template <reduction R, class T>
__host__ __device__ constexpr T reduce_init() {
    if constexpr (R == reduction::sum || R == reduction::mean) return T(0);
    else if constexpr (R == reduction::prod) return T(1);
    else if constexpr (R == reduction::max)
        return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    else return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
}
template <reduction R, class T>
__device__ __forceinline__ T reduce_step(T a, T b) {
    if constexpr (R == reduction::sum || R == reduction::mean) return a + b;
    else if constexpr (R == reduction::prod) return a * b;
    else if constexpr (R == reduction::max) return b > a ? b : a;
    else return b < a ? b : a;
}
template <reduction R, class T>
__device__ __forceinline__ T reduce_final(T acc, index_t count) {
    if constexpr (R == reduction::mean) {
        if (count == 0) return std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : T(0);
        return acc / static_cast<T>(count);
    } else return acc;
}

// rows x len, row-major: one warp per row.
template <reduction R, class T>
__global__ void reduce_rows(const T* in, T* out, index_t rows, index_t len) {
    const index_t warps = static_cast<index_t>(gridDim.x) * (blockDim.x / 32);
    const int lane = threadIdx.x % 32;
    for (index_t r = static_cast<index_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
        T acc = reduce_init<R, T>();
        const T* row = in + r * len;
        for (index_t i = lane; i < len; i += 32) acc = reduce_step<R>(acc, row[i]);
        for (int o = 16; o > 0; o /= 2) acc = reduce_step<R>(acc, __shfl_down_sync(0xffffffffu, acc, o));
        if (lane == 0) out[r] = reduce_final<R>(acc, len);
    }
}
// outer x red x inner: one thread per (outer, inner) output, reading across threads contiguously.
template <reduction R, class T>
__global__ void reduce_middle(const T* in, T* out, index_t outer, index_t red, index_t inner) {
    const index_t n = outer * inner, stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += stride) {
        const index_t o = t / inner, i = t % inner;
        T acc = reduce_init<R, T>();
        for (index_t r = 0; r < red; ++r) acc = reduce_step<R>(acc, in[(o * red + r) * inner + i]);
        out[t] = reduce_final<R>(acc, red);
    }
}
// Any set of axes: one thread per output, walking its reduced positions.
struct any_axes {
    int rank = 0, kept = 0, reduced = 0;
    index_t kept_ext[max_rank]{}, kept_stride[max_rank]{};  // input strides of the kept axes
    index_t red_ext[max_rank]{}, red_stride[max_rank]{};
    index_t out_n = 1, red_n = 1;
};
template <reduction R, class T>
__global__ void reduce_any(const T* in, T* out, const any_axes a) {
    const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < a.out_n; t += stride) {
        index_t base = 0, f = t;
        for (int k = a.kept; k-- > 0;) {
            base += (f % a.kept_ext[k]) * a.kept_stride[k];
            f /= a.kept_ext[k];
        }
        T acc = reduce_init<R, T>();
        for (index_t r = 0; r < a.red_n; ++r) {
            index_t off = 0, g = r;
            for (int k = a.reduced; k-- > 0;) {
                off += (g % a.red_ext[k]) * a.red_stride[k];
                g /= a.red_ext[k];
            }
            acc = reduce_step<R>(acc, in[base + off]);
        }
        out[t] = reduce_final<R>(acc, a.red_n);
    }
}
template <class T>
__global__ void scale_kernel(T* p, index_t n, T s) {
    for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<index_t>(gridDim.x) * blockDim.x)
        p[i] = p[i] * s;
}

}  // namespace detail

/// Reduces `in` (extents d) over the axes of mask m into `out`, on c's stream.
template <reduction R, class T>
void reduce(device_context& c, const T* in, const dims& d, const typeflow::detail::axis_mask& m, T* out, std::string_view what) {
    // drop extent-1 axes; then look for one contiguous run of reduced axes
    index_t ext[max_rank];
    bool red[max_rank];
    int r = 0;
    index_t out_n = 1, red_n = 1;
    for (std::size_t i = 0; i < d.rank; ++i) {
        if (m.reduced[i]) red_n *= d.d[i];
        else out_n *= d.d[i];
        if (d.d[i] == 1) continue;
        ext[r] = d.d[i];
        red[r] = m.reduced[i];
        ++r;
    }
    if (out_n == 0) return;
    int first = -1, last = -1, runs = 0;
    for (int i = 0; i < r; ++i)
        if (red[i]) {
            if (first < 0 || !red[i - 1]) ++runs;
            if (first < 0) first = i;
            last = i;
        }
    constexpr unsigned threads = 256;
    if (red_n == 0 || runs == 0) {  // nothing to combine: the identity, or the elements as they are
        if (red_n == 0) fill(c, out, static_cast<std::size_t>(out_n), R == reduction::mean ? std::numeric_limits<T>::quiet_NaN() : detail::reduce_init<R, T>(), what);
        else check(cudaMemcpyAsync(out, in, static_cast<std::size_t>(out_n) * sizeof(T), cudaMemcpyDeviceToDevice, c.stream), what,
                   "cudaMemcpyAsync");
        return;
    }
    if (runs == 1) {
        index_t outer = 1, inner = 1;
        for (int i = 0; i < first; ++i) outer *= ext[i];
        for (int i = last + 1; i < r; ++i) inner *= ext[i];
        if (inner == 1) {
            detail::reduce_rows<R, T><<<grid_for(static_cast<std::size_t>(outer), threads / 32), threads, 0, c.stream>>>(in, out, outer, red_n);
            check_launch(what);
            return;
        }
        if constexpr ((R == reduction::sum || R == reduction::mean) && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
            // out[o, :] = ones(1 x red) . in[o] (red x inner, row-major): a GEMV of the column-major inner x red view
            const T alpha = R == reduction::mean ? T(1) / static_cast<T>(red_n) : T(1), beta = T(0);
            const T* one = ones<T>(c, static_cast<std::size_t>(red_n), what);
            const int ni = static_cast<int>(inner), nr = static_cast<int>(red_n);
            if (inner <= std::numeric_limits<int>::max() && red_n <= std::numeric_limits<int>::max()) {
                launch_count().fetch_add(1, std::memory_order_relaxed);
                if constexpr (std::is_same_v<T, float>)
                    check(cublasSgemvStridedBatched(c.blas, CUBLAS_OP_N, ni, nr, &alpha, in, ni, red_n * inner, one, 1, 0, &beta, out, 1,
                                                    inner, static_cast<int>(outer)),
                          what, "cublasSgemvStridedBatched");
                else
                    check(cublasDgemvStridedBatched(c.blas, CUBLAS_OP_N, ni, nr, &alpha, in, ni, red_n * inner, one, 1, 0, &beta, out, 1,
                                                    inner, static_cast<int>(outer)),
                          what, "cublasDgemvStridedBatched");
                return;
            }
        }
        detail::reduce_middle<R, T><<<grid_for(static_cast<std::size_t>(outer * inner), threads), threads, 0, c.stream>>>(in, out, outer, red_n, inner);
        check_launch(what);
        return;
    }
    detail::any_axes a;
    a.rank = r;
    index_t st[max_rank];
    index_t s = 1;
    for (int i = r; i-- > 0;) {
        st[i] = s;
        s *= ext[i];
    }
    for (int i = 0; i < r; ++i) {
        if (red[i]) {
            a.red_ext[a.reduced] = ext[i];
            a.red_stride[a.reduced++] = st[i];
        } else {
            a.kept_ext[a.kept] = ext[i];
            a.kept_stride[a.kept++] = st[i];
        }
    }
    a.out_n = out_n;
    a.red_n = red_n;
    detail::reduce_any<R, T><<<grid_for(static_cast<std::size_t>(out_n), threads), threads, 0, c.stream>>>(in, out, a);
    check_launch(what);
}

}  // namespace typeflow::cuda

namespace typeflow {

template <int N, reduction R, bool Keep, index_t... Axes>
struct kernel<gpu<N>, op::reduce<R, Keep, Axes...>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        cuda::reduce<R>(cuda::context<N>(), ctx.input(n.template child<0>()), d, typeflow::detail::make_axis_mask<Axes...>(d.rank), out,
                        op::reduce<R, Keep, Axes...>::name);
    }
};

template <int N>
struct kernel<gpu<N>, op::sum_like> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const dims g = ctx.dims_of(n.template child<0>());
        cuda::reduce<reduction::sum>(cuda::context<N>(), ctx.input(n.template child<0>()), g,
                                     op::sum_like::axes(g, ctx.dims_of(n.template child<1>())), out, "sum_like");
    }
};

template <int N, index_t... Axes>
struct kernel<gpu<N>, op::reduced_count<Axes...>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        cuda::fill(cuda::context<N>(), out, 1, static_cast<T>(op::reduced_count<Axes...>::count(ctx.dims_of(n.template child<0>()))),
                   "reduced_count");
    }
};

}  // namespace typeflow
