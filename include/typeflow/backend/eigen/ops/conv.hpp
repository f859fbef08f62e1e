// typeflow/backend/eigen/ops/conv.hpp — CPU conv2d and its backprop ops.
// Filters of few taps (K = KH * KW * C_in <= conv_direct_max_taps) take the
// direct kernels of conv_direct.hpp; the others im2col into the kernel's
// workspace, then the GEMM of matmul.hpp (benchmarks/conv_candidates.md).
// Both give the same bits for every thread count.
//
// The im2col matrix of a convolution has one row per output position
// (n, oh, ow) and one column per filter tap (kh, kw, ci), K = KH * KW * C_in
// columns; a tap outside the input (padding) is zero. With the filter as a
// [K, C_out] matrix (HWIO is that, row-major) and the output as
// [N * OH * OW, C_out] (NHWC is that):
//   conv2d:                 y   = col * w                  (matmul_run: split over threads)
//   conv2d_backprop_input:  dcol = dy * w^T, then col2im adds dcol's taps into dx (threads over images)
//   conv2d_backprop_filter: dw  = col^T * dy               (matmul_run: blocks of dw split over threads)
// The images are taken in chunks, so that the im2col matrix stays below
// conv_col_cap elements. A 1x1 filter with stride 1 needs no im2col: x is col.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>

#include <typeflow/backend/eigen/ops/conv_direct.hpp>
#include <typeflow/backend/eigen/ops/matmul.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/conv.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::eigen::detail {

using conv_geometry = typeflow::detail::conv2d_geometry;

/// Elements of the im2col matrix of one chunk of images, at most (more only
/// when one image needs more).
inline constexpr index_t conv_col_cap = index_t{1} << 22;
/// Elements each thread copies at least in im2col / col2im.
inline constexpr index_t conv_copy_grain = 1 << 15;

inline index_t conv_taps(const conv_geometry& g) { return g.kh * g.kw * g.c; }
/// A 1x1 filter, stride 1, no padding: the input is its own im2col matrix.
inline bool conv_pointwise(const conv_geometry& g) {
    return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0;
}
/// Images per im2col chunk.
inline index_t conv_chunk_images(const conv_geometry& g) {
    if (g.n <= 0) return 0;
    if (conv_pointwise(g)) return g.n;
    const index_t per = g.oh * g.ow * conv_taps(g);
    return per <= 0 ? g.n : std::clamp<index_t>(conv_col_cap / per, 1, g.n);
}
/// Elements of the im2col matrix of one chunk (0 for a pointwise convolution).
inline index_t conv_col_elements(const conv_geometry& g) {
    return conv_pointwise(g) ? 0 : conv_chunk_images(g) * g.oh * g.ow * conv_taps(g);
}

/// Rows [r0, r1) of the im2col matrix of the images starting at x (row r is
/// output position r of those images) into col (row r at col + r * K).
template <class T>
void im2col_rows(const conv_geometry& g, const T* x, index_t r0, index_t r1, T* col) {
    const index_t K = conv_taps(g), per_image = g.oh * g.ow, c = g.c;
    for (index_t r = r0; r < r1; ++r) {
        const index_t img = r / per_image, oh = (r % per_image) / g.ow, ow = r % g.ow;
        const T* xi = x + img * g.h * g.w * c;
        T* dst = col + r * K;
        for (index_t kh = 0; kh < g.kh; ++kh) {
            const index_t ih = oh * g.sh - g.pad_top + kh * g.dh;
            for (index_t kw = 0; kw < g.kw; ++kw, dst += c) {
                const index_t iw = ow * g.sw - g.pad_left + kw * g.dw;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) std::fill(dst, dst + c, T(0));
                else std::memcpy(dst, xi + (ih * g.w + iw) * c, static_cast<std::size_t>(c) * sizeof(T));
            }
        }
    }
}
/// The im2col matrix of `images` images starting at x, split over par's threads.
template <class T>
void im2col(const parallel_ctx& par, const conv_geometry& g, const T* x, index_t images, T* col) {
    const index_t rows = images * g.oh * g.ow;
    par.for_range(rows, std::max<index_t>(1, conv_copy_grain / std::max<index_t>(1, conv_taps(g))),
                  [&](std::size_t, index_t b, index_t e) { im2col_rows(g, x, b, e, col); });
}
/// dx of images [i0, i1) (dx points at the chunk's first image) = the sum of
/// the taps of their rows of dcol (the chunk's im2col-shaped gradient).
template <class T>
void col2im_images(const conv_geometry& g, const T* dcol, index_t i0, index_t i1, T* dx) {
    const index_t K = conv_taps(g), per_image = g.oh * g.ow, c = g.c;
    for (index_t img = i0; img < i1; ++img) {
        T* di = dx + img * g.h * g.w * c;
        std::fill(di, di + g.h * g.w * c, T(0));
        for (index_t oh = 0; oh < g.oh; ++oh)
            for (index_t ow = 0; ow < g.ow; ++ow) {
                const T* src = dcol + ((img * per_image) + oh * g.ow + ow) * K;
                for (index_t kh = 0; kh < g.kh; ++kh) {
                    const index_t ih = oh * g.sh - g.pad_top + kh * g.dh;
                    for (index_t kw = 0; kw < g.kw; ++kw, src += c) {
                        const index_t iw = ow * g.sw - g.pad_left + kw * g.dw;
                        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                        T* d = di + (ih * g.w + iw) * c;
                        for (index_t ci = 0; ci < c; ++ci) d[ci] += src[ci];
                    }
                }
            }
    }
}

template <class T>
void conv2d_forward_im2col(const parallel_ctx& par, const conv_geometry& g, const T* x, const T* w, T* out, void* work) {
    const index_t per_image = g.oh * g.ow, K = conv_taps(g);
    const index_t out_elems = g.n * per_image * g.co;
    if (out_elems <= 0) return;
    if (K == 0) return std::fill(out, out + out_elems, T(0));
    matmul_job j;
    j.n = g.co;
    j.k = K;
    j.size = sizeof(T);
    j.b = reinterpret_cast<const unsigned char*>(w);
    const index_t chunk = conv_chunk_images(g);
    for (index_t i0 = 0; i0 < g.n; i0 += chunk) {
        const index_t images = std::min(chunk, g.n - i0);
        const T* a = x + i0 * g.h * g.w * g.c;
        if (!conv_pointwise(g)) {
            im2col(par, g, a, images, static_cast<T*>(work));
            a = static_cast<const T*>(work);
        }
        j.m = images * per_image;
        j.a = reinterpret_cast<const unsigned char*>(a);
        j.c = reinterpret_cast<unsigned char*>(out + i0 * per_image * g.co);
        matmul_run(par, j, &gemm_erased<T, false, false>);
    }
}

template <class T>
void conv2d_input_grad_im2col(const parallel_ctx& par, const conv_geometry& g, const T* w, const T* dy, T* dx, void* work) {
    const index_t per_image = g.oh * g.ow, K = conv_taps(g);
    const index_t dx_elems = g.n * g.h * g.w * g.c;
    if (dx_elems <= 0) return;
    if (K == 0 || per_image == 0 || g.co == 0) return std::fill(dx, dx + dx_elems, T(0));
    matmul_job j;  // dcol = dy w^T: [rows, C_out] x [C_out, K]
    j.n = K;
    j.k = g.co;
    j.tb = true;
    j.size = sizeof(T);
    j.b = reinterpret_cast<const unsigned char*>(w);
    const index_t chunk = conv_chunk_images(g);
    for (index_t i0 = 0; i0 < g.n; i0 += chunk) {
        const index_t images = std::min(chunk, g.n - i0);
        T* dxc = dx + i0 * g.h * g.w * g.c;
        j.m = images * per_image;
        j.a = reinterpret_cast<const unsigned char*>(dy + i0 * per_image * g.co);
        j.c = reinterpret_cast<unsigned char*>(conv_pointwise(g) ? dxc : static_cast<T*>(work));
        matmul_run(par, j, &gemm_erased<T, false, true>);
        if (conv_pointwise(g)) continue;
        const T* dcol = static_cast<const T*>(work);
        par.for_range(images, std::max<index_t>(1, conv_copy_grain / std::max<index_t>(1, per_image * K)),
                      [&](std::size_t, index_t b, index_t e) { col2im_images(g, dcol, b, e, dxc); });
    }
}

template <class T>
void conv2d_filter_grad_im2col(const parallel_ctx& par, const conv_geometry& g, const T* x, const T* dy, T* dw, void* work) {
    const index_t per_image = g.oh * g.ow, K = conv_taps(g), co = g.co;
    const index_t dw_elems = K * co;
    if (dw_elems <= 0) return;
    std::fill(dw, dw + dw_elems, T(0));
    if (g.n * per_image <= 0) return;
    T* col = static_cast<T*>(work);
    T* partial = col + conv_col_elements(g);  // one chunk's K x C_out product
    // dw_chunk = col^T dy: [K, rows] x [rows, C_out], split over the threads
    // by matmul_run in blocks of dw (each element summed by one thread over
    // all rows: the same result for every thread count); the chunks' products
    // added in order
    matmul_job j;
    j.m = K;
    j.n = co;
    j.ta = true;
    j.size = sizeof(T);
    j.c = reinterpret_cast<unsigned char*>(partial);
    const index_t chunk = conv_chunk_images(g);
    for (index_t i0 = 0; i0 < g.n; i0 += chunk) {
        const index_t images = std::min(chunk, g.n - i0);
        const T* a = x + i0 * g.h * g.w * g.c;
        if (!conv_pointwise(g)) {
            im2col(par, g, a, images, col);
            a = col;
        }
        j.k = images * per_image;
        j.a = reinterpret_cast<const unsigned char*>(a);
        j.b = reinterpret_cast<const unsigned char*>(dy + i0 * per_image * co);
        matmul_run(par, j, &gemm_erased<T, true, false>);
        for (index_t i = 0; i < dw_elems; ++i) dw[i] += partial[i];
    }
}

/// Workspace of the im2col forward and input-gradient kernels: one chunk's im2col matrix.
inline std::size_t conv_col_bytes(const conv_geometry& g) {
    return static_cast<std::size_t>(conv_col_elements(g)) * sizeof(double);  // the widest dtype the op accepts
}
/// Workspace of the im2col filter-gradient kernel: the im2col matrix and one chunk's dw.
inline std::size_t conv_filter_bytes(const conv_geometry& g, int /*threads*/) {
    return static_cast<std::size_t>(conv_col_elements(g) + g.kh * g.kw * g.c * g.co) * sizeof(double);
}

// The kernels: the direct ones (conv_direct.hpp) for few taps, im2col + GEMM
// otherwise. Workspace sizes are the larger of float's and double's (the
// kernels' struct does not know the dtype).
template <class T>
void conv2d_forward(const parallel_ctx& par, const conv_geometry& g, const T* x, const T* w, T* out, void* work) {
    if (conv_direct(g) && g.n * g.oh * g.ow * g.co > 0) return conv2d_forward_direct(par, g, x, w, out, work);
    conv2d_forward_im2col(par, g, x, w, out, work);
}
template <class T>
void conv2d_input_grad(const parallel_ctx& par, const conv_geometry& g, const T* w, const T* dy, T* dx, void* work) {
    if (conv_direct(g) && g.n * g.h * g.w > 0 && g.oh * g.ow * g.co > 0) return conv2d_input_grad_direct(par, g, w, dy, dx, work);
    conv2d_input_grad_im2col(par, g, w, dy, dx, work);
}
template <class T>
void conv2d_filter_grad(const parallel_ctx& par, const conv_geometry& g, const T* x, const T* dy, T* dw, void* work) {
    if (conv_direct(g) && g.co > 0 && g.n * g.oh * g.ow > 0) return conv2d_filter_grad_direct(par, g, x, dy, dw, work);
    conv2d_filter_grad_im2col(par, g, x, dy, dw, work);
}
// The instantiations that TYPEFLOW_SEPARATE_COMPILATION compiles once, in
// typeflow/src.hpp (impl/kernels.ipp): KW is `extern template` or `template`.
#define TYPEFLOW_CONV_INSTANCES(KW, T)                                                                                \
    KW void conv2d_forward<T>(const parallel_ctx&, const conv_geometry&, const T*, const T*, T*, void*);            \
    KW void conv2d_input_grad<T>(const parallel_ctx&, const conv_geometry&, const T*, const T*, T*, void*);         \
    KW void conv2d_filter_grad<T>(const parallel_ctx&, const conv_geometry&, const T*, const T*, T*, void*);
#if defined(TYPEFLOW_SEPARATE_COMPILATION)
TYPEFLOW_CONV_INSTANCES(extern template, float)
TYPEFLOW_CONV_INSTANCES(extern template, double)
#endif
inline std::size_t conv_forward_bytes(const conv_geometry& g, int threads) {
    if (conv_direct(g)) return std::max(conv_direct_forward_bytes<float>(g, threads), conv_direct_forward_bytes<double>(g, threads));
    return conv_col_bytes(g);
}
inline std::size_t conv_input_bytes(const conv_geometry& g, int threads) {
    if (conv_direct(g)) return std::max(conv_direct_input_bytes<float>(g, threads), conv_direct_input_bytes<double>(g, threads));
    return conv_col_bytes(g);
}
inline std::size_t conv_filter_grad_bytes(const conv_geometry& g, int threads) {
    if (conv_direct(g)) return std::max(conv_direct_filter_bytes<float>(g, threads), conv_direct_filter_bytes<double>(g, threads));
    return conv_filter_bytes(g, threads);
}

}  // namespace typeflow::backend::eigen::detail

namespace typeflow {

template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<cpu, op::conv2d<SH, SW, Pad, DH, DW>> {
    using Op = op::conv2d<SH, SW, Pad, DH, DW>;
    template <class Ctx>
    static std::size_t workspace_bytes(const Ctx& ctx) {
        return backend::eigen::detail::conv_forward_bytes(Op::geometry(*ctx.in_dims[0], *ctx.in_dims[1]), ctx.par.threads);
    }
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto g = Op::geometry(ctx.dims_of(n.template child<0>()), ctx.dims_of(n.template child<1>()));
        backend::eigen::detail::conv2d_forward(ctx.par, g, ctx.input(n.template child<0>()), ctx.input(n.template child<1>()),
                                               out, ctx.workspace());
    }
};

template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<cpu, op::conv2d_backprop_input<SH, SW, Pad, DH, DW>> {
    using Op = op::conv2d_backprop_input<SH, SW, Pad, DH, DW>;
    template <class Ctx>
    static std::size_t workspace_bytes(const Ctx& ctx) {
        return backend::eigen::detail::conv_input_bytes(Op::geometry(*ctx.in_dims[0], *ctx.in_dims[1]), ctx.par.threads);
    }
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        const auto g = Op::geometry(ctx.dims_of(n.template child<0>()), ctx.dims_of(n.template child<1>()));
        backend::eigen::detail::conv2d_input_grad(ctx.par, g, ctx.input(n.template child<1>()), ctx.input(n.template child<2>()),
                                                  dx, ctx.workspace());
    }
};

template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<cpu, op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>> {
    using Op = op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>;
    template <class Ctx>
    static std::size_t workspace_bytes(const Ctx& ctx) {
        return backend::eigen::detail::conv_filter_grad_bytes(Op::geometry(*ctx.in_dims[0], *ctx.in_dims[1]), ctx.par.threads);
    }
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dw) {
        const auto g = Op::geometry(ctx.dims_of(n.template child<0>()), ctx.dims_of(n.template child<1>()));
        backend::eigen::detail::conv2d_filter_grad(ctx.par, g, ctx.input(n.template child<0>()), ctx.input(n.template child<2>()),
                                                   dw, ctx.workspace());
    }
};

}  // namespace typeflow
