// typeflow/backend/cuda/ops/pool.hpp — max_pool2d, avg_pool2d and their
// gradient ops on a GPU: one thread per result element, each computing it
// from the window rule the CPU kernels use (TensorFlow's SAME padding, which
// may put one more row or column after than before; the average over the
// window's elements inside the input; the first largest element of a window
// takes the gradient). The gradients gather (each input element sums the
// windows that hold it, in the CPU kernels' order) instead of scattering with
// atomics, so results do not depend on scheduling. The element functions are
// host-and-device functions: tests/cuda/test_cuda_host.cu runs them on the host.
#pragma once
#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/expr/ops/pool.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::pool {

using geometry = typeflow::detail::pool2d_geometry;

/// The input index of the first largest element of output o's window
/// (row-major window order; -1 for a window with no element inside the input).
template <class T>
TYPEFLOW_HOST_DEVICE index_t argmax_at(const T* x, const geometry& g, index_t o) {
    const index_t c = o % g.c, ow = (o / g.c) % g.ow, oh = (o / (g.c * g.ow)) % g.oh, n = o / (g.c * g.ow * g.oh);
    index_t best = -1;
    for (index_t ih = g.row_begin(oh), he = g.row_end(oh); ih < he; ++ih)
        for (index_t iw = g.col_begin(ow), we = g.col_end(ow); iw < we; ++iw) {
            const index_t i = ((n * g.h + ih) * g.w + iw) * g.c + c;
            if (best < 0 || x[i] > x[best]) best = i;
        }
    return best;
}
/// max_pool2d's element o.
template <class T>
TYPEFLOW_HOST_DEVICE T max_at(const T* x, const geometry& g, index_t o) {
    const index_t i = argmax_at(x, g, o);
    return i < 0 ? T(0) : x[i];
}
/// The number of elements of output row / column o's window inside the input.
TYPEFLOW_HOST_DEVICE inline index_t window_count(const geometry& g, index_t oh, index_t ow) {
    return (g.row_end(oh) - g.row_begin(oh)) * (g.col_end(ow) - g.col_begin(ow));
}
/// avg_pool2d's element o: the mean of the window's elements inside the input.
template <class T>
TYPEFLOW_HOST_DEVICE T avg_at(const T* x, const geometry& g, index_t o) {
    const index_t c = o % g.c, ow = (o / g.c) % g.ow, oh = (o / (g.c * g.ow)) % g.oh, n = o / (g.c * g.ow * g.oh);
    T sum = T(0);
    for (index_t ih = g.row_begin(oh), he = g.row_end(oh); ih < he; ++ih)
        for (index_t iw = g.col_begin(ow), we = g.col_end(ow); iw < we; ++iw) sum += x[((n * g.h + ih) * g.w + iw) * g.c + c];
    const index_t count = window_count(g, oh, ow);
    return count == 0 ? T(0) : sum / static_cast<T>(count);
}
/// The output rows [first, last] whose windows hold input row i (first > last: none).
struct span {
    index_t first, last;
};
TYPEFLOW_HOST_DEVICE inline span outputs_holding(index_t i, index_t k, index_t s, index_t pad, index_t out) {
    const index_t lo = i + pad - k + 1;  // output r holds i when r*s - pad <= i < r*s - pad + k
    const index_t first = lo <= 0 ? 0 : (lo + s - 1) / s;
    const index_t last = (i + pad) / s;
    return {first, last < out - 1 ? last : out - 1};
}
/// max_pool2d_grad's element i: the sum of dy over the windows whose first
/// largest element is input element i.
template <class T>
TYPEFLOW_HOST_DEVICE T max_grad_at(const T* x, const T* dy, const geometry& g, index_t i) {
    const index_t c = i % g.c, iw = (i / g.c) % g.w, ih = (i / (g.c * g.w)) % g.h, n = i / (g.c * g.w * g.h);
    const span rows = outputs_holding(ih, g.kh, g.sh, g.pad_top, g.oh), cols = outputs_holding(iw, g.kw, g.sw, g.pad_left, g.ow);
    T sum = T(0);
    for (index_t oh = rows.first; oh <= rows.last; ++oh)
        for (index_t ow = cols.first; ow <= cols.last; ++ow) {
            const index_t o = ((n * g.oh + oh) * g.ow + ow) * g.c + c;
            if (argmax_at(x, g, o) == i) sum += dy[o];
        }
    return sum;
}
/// avg_pool2d_grad's element i: each window holding it gives dy / its count.
template <class T>
TYPEFLOW_HOST_DEVICE T avg_grad_at(const T* dy, const geometry& g, index_t i) {
    const index_t c = i % g.c, iw = (i / g.c) % g.w, ih = (i / (g.c * g.w)) % g.h, n = i / (g.c * g.w * g.h);
    const span rows = outputs_holding(ih, g.kh, g.sh, g.pad_top, g.oh), cols = outputs_holding(iw, g.kw, g.sw, g.pad_left, g.ow);
    T sum = T(0);
    for (index_t oh = rows.first; oh <= rows.last; ++oh)
        for (index_t ow = cols.first; ow <= cols.last; ++ow)
            sum += dy[((n * g.oh + oh) * g.ow + ow) * g.c + c] / static_cast<T>(window_count(g, oh, ow));
    return sum;
}
/// max_pool2d_grad_grad's element o: gx at the first largest element of x in window o.
template <class T>
TYPEFLOW_HOST_DEVICE T max_grad_grad_at(const T* x, const T* gx, const geometry& g, index_t o) {
    const index_t i = argmax_at(x, g, o);
    return i < 0 ? T(0) : gx[i];
}

enum class kind { max, avg, max_grad, avg_grad, max_grad_grad };

/// Element e of the result of pooling kind K (a, b: the op's inputs).
template <kind K, class T>
TYPEFLOW_HOST_DEVICE T element(const T* a, const T* b, const geometry& g, index_t e) {
    if constexpr (K == kind::max) return max_at(a, g, e);
    else if constexpr (K == kind::avg) return avg_at(a, g, e);
    else if constexpr (K == kind::max_grad) return max_grad_at(a, b, g, e);
    else if constexpr (K == kind::avg_grad) return avg_grad_at(b, g, e);
    else return max_grad_grad_at(a, b, g, e);
}

template <kind K, class T>
__global__ void pool_kernel(const T* a, const T* b, T* out, geometry g, index_t count) {
    const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride)
        out[e] = element<K, T>(a, b, g, e);
}

/// Runs kind K over `count` result elements on GPU N's stream.
template <kind K, int N, class T>
void launch(const T* a, const T* b, T* out, const geometry& g, index_t count, std::string_view what) {
    if (count == 0) return;
    device_context& c = context<N>();
    pool_kernel<K, T><<<grid_for(static_cast<std::size_t>(count), 256), 256, 0, c.stream>>>(a, b, out, g, count);
    check_launch(what);
}

}  // namespace typeflow::cuda::pool

namespace typeflow::cuda::pool {
/// The kernel of pooling op Op of kind K on GPU N: one thread per element of
/// the result, which is x's extents for the gradients (OverInput) and the
/// pooled extents otherwise; `b` is the op's second child when it has one.
template <int N, kind K, class Op, bool OverInput>
struct op_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const auto g = Op::geometry(ctx.dims_of(n.template child<0>()));
        const auto* a = ctx.input(n.template child<0>());
        const auto* b = [&] {
            if constexpr (K == kind::max || K == kind::avg) return a;
            else return ctx.input(n.template child<1>());
        }();
        // avg_pool2d_grad reads only x's extents: its elements may not be there
        const auto* first = K == kind::avg_grad ? b : a;
        launch<K, N>(first, b, out, g, OverInput ? g.in().numel() : g.out().numel(), Op::name);
    }
};
}  // namespace typeflow::cuda::pool

namespace typeflow {

template <int N, index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<gpu<N>, op::max_pool2d<KH, KW, SH, SW, Pad>>
    : cuda::pool::op_kernel<N, cuda::pool::kind::max, op::max_pool2d<KH, KW, SH, SW, Pad>, false> {};
template <int N, index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<gpu<N>, op::avg_pool2d<KH, KW, SH, SW, Pad>>
    : cuda::pool::op_kernel<N, cuda::pool::kind::avg, op::avg_pool2d<KH, KW, SH, SW, Pad>, false> {};
template <int N, index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<gpu<N>, op::max_pool2d_grad<KH, KW, SH, SW, Pad>>
    : cuda::pool::op_kernel<N, cuda::pool::kind::max_grad, op::max_pool2d_grad<KH, KW, SH, SW, Pad>, true> {};
template <int N, index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<gpu<N>, op::avg_pool2d_grad<KH, KW, SH, SW, Pad>>
    : cuda::pool::op_kernel<N, cuda::pool::kind::avg_grad, op::avg_pool2d_grad<KH, KW, SH, SW, Pad>, true> {};
template <int N, index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<gpu<N>, op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>>
    : cuda::pool::op_kernel<N, cuda::pool::kind::max_grad_grad, op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>, false> {};

}  // namespace typeflow
