// typeflow/backend/reference/ops/conv.hpp — reference conv2d and its two
// backprop ops: the naive 7-deep loops over (n, oh, ow, kh, kw, c_in, c_out).
#pragma once
#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/conv.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

namespace backend::reference {
/// Calls f(x_index, w_index, y_index) for every (n, oh, ow, kh, kw, ci, co)
/// whose input position lies inside the input (outside is zero padding).
template <class F>
void conv2d_loops(const typeflow::detail::conv2d_geometry& g, F&& f) {
    for (index_t n = 0; n < g.n; ++n)
        for (index_t oh = 0; oh < g.oh; ++oh)
            for (index_t ow = 0; ow < g.ow; ++ow)
                for (index_t kh = 0; kh < g.kh; ++kh) {
                    const index_t ih = oh * g.sh - g.pad_top + kh * g.dh;
                    if (ih < 0 || ih >= g.h) continue;
                    for (index_t kw = 0; kw < g.kw; ++kw) {
                        const index_t iw = ow * g.sw - g.pad_left + kw * g.dw;
                        if (iw < 0 || iw >= g.w) continue;
                        for (index_t ci = 0; ci < g.c; ++ci)
                            for (index_t co = 0; co < g.co; ++co)
                                f(((n * g.h + ih) * g.w + iw) * g.c + ci, ((kh * g.kw + kw) * g.c + ci) * g.co + co,
                                  ((n * g.oh + oh) * g.ow + ow) * g.co + co);
                    }
                }
}
}  // namespace backend::reference

template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<reference, op::conv2d<SH, SW, Pad, DH, DW>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const auto g = op::conv2d<SH, SW, Pad, DH, DW>::geometry(ctx.dims_of(n.template child<0>()),
                                                                ctx.dims_of(n.template child<1>()));
        const T* x = ctx.input(n.template child<0>());
        const T* w = ctx.input(n.template child<1>());
        for (index_t i = 0, e = g.out().numel(); i < e; ++i) out[i] = T(0);
        backend::reference::conv2d_loops(g, [&](index_t xi, index_t wi, index_t yi) { out[yi] += x[xi] * w[wi]; });
    }
};

template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<reference, op::conv2d_backprop_input<SH, SW, Pad, DH, DW>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        using T = value_type_t<N>;
        const dims xd = ctx.dims_of(n.template child<0>());
        const auto g = op::conv2d<SH, SW, Pad, DH, DW>::geometry(xd, ctx.dims_of(n.template child<1>()));
        const T* w = ctx.input(n.template child<1>());
        const T* dy = ctx.input(n.template child<2>());
        for (index_t i = 0, e = xd.numel(); i < e; ++i) dx[i] = T(0);
        backend::reference::conv2d_loops(g, [&](index_t xi, index_t wi, index_t yi) { dx[xi] += w[wi] * dy[yi]; });
    }
};

template <index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<reference, op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dw) {
        using T = value_type_t<N>;
        const dims wd = ctx.dims_of(n.template child<1>());
        const auto g = op::conv2d<SH, SW, Pad, DH, DW>::geometry(ctx.dims_of(n.template child<0>()), wd);
        const T* x = ctx.input(n.template child<0>());
        const T* dy = ctx.input(n.template child<2>());
        for (index_t i = 0, e = wd.numel(); i < e; ++i) dw[i] = T(0);
        backend::reference::conv2d_loops(g, [&](index_t xi, index_t wi, index_t yi) { dw[wi] += x[xi] * dy[yi]; });
    }
};

}  // namespace typeflow
