// typeflow/backend/reference/ops/pool.hpp — reference max_pool2d, avg_pool2d
// and their gradient ops: naive loops over (n, oh, ow, c) and the window.
#pragma once
#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/pool.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

namespace backend::reference {
/// Calls f(output index, window) for every (n, oh, ow, c); window(visit)
/// calls visit(input index) for the window's elements inside the input, in
/// row-major window order.
template <class F>
void pool2d_loops(const typeflow::detail::pool2d_geometry& g, F&& f) {
    for (index_t n = 0; n < g.n; ++n)
        for (index_t oh = 0; oh < g.oh; ++oh)
            for (index_t ow = 0; ow < g.ow; ++ow)
                for (index_t c = 0; c < g.c; ++c) {
                    f(((n * g.oh + oh) * g.ow + ow) * g.c + c, [&](auto&& visit) {
                        for (index_t kh = 0; kh < g.kh; ++kh) {
                            const index_t ih = oh * g.sh - g.pad_top + kh;
                            if (ih < 0 || ih >= g.h) continue;
                            for (index_t kw = 0; kw < g.kw; ++kw) {
                                const index_t iw = ow * g.sw - g.pad_left + kw;
                                if (iw < 0 || iw >= g.w) continue;
                                visit(((n * g.h + ih) * g.w + iw) * g.c + c);
                            }
                        }
                    });
                }
}
/// The index of the first largest element of a window (-1 when it has none).
template <class T, class Window>
index_t pool2d_argmax(const T* x, Window&& window) {
    index_t best = -1;
    window([&](index_t i) {
        if (best < 0 || x[i] > x[best]) best = i;
    });
    return best;
}
/// The number of elements of a window.
template <class Window>
index_t pool2d_count(Window&& window) {
    index_t count = 0;
    window([&](index_t) { ++count; });
    return count;
}
}  // namespace backend::reference

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<reference, op::max_pool2d<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* y) {
        const auto g = op::max_pool2d<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        const auto* x = ctx.input(n.template child<0>());
        backend::reference::pool2d_loops(g, [&](index_t o, auto&& window) {
            const index_t i = backend::reference::pool2d_argmax(x, window);
            y[o] = i < 0 ? value_type_t<N>(0) : x[i];
        });
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<reference, op::avg_pool2d<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* y) {
        using T = value_type_t<N>;
        const auto g = op::avg_pool2d<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        const T* x = ctx.input(n.template child<0>());
        backend::reference::pool2d_loops(g, [&](index_t o, auto&& window) {
            T sum = 0;
            window([&](index_t i) { sum += x[i]; });
            const index_t count = backend::reference::pool2d_count(window);
            y[o] = count == 0 ? T(0) : sum / static_cast<T>(count);
        });
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<reference, op::max_pool2d_grad<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        using T = value_type_t<N>;
        const dims xd = ctx.dims_of(n.template child<0>());
        const auto g = op::max_pool2d_grad<KH, KW, SH, SW, Pad>::geometry(xd);
        const T* x = ctx.input(n.template child<0>());
        const T* dy = ctx.input(n.template child<1>());
        for (index_t i = 0, e = xd.numel(); i < e; ++i) dx[i] = T(0);
        backend::reference::pool2d_loops(g, [&](index_t o, auto&& window) {
            const index_t i = backend::reference::pool2d_argmax(x, window);
            if (i >= 0) dx[i] += dy[o];
        });
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<reference, op::avg_pool2d_grad<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        using T = value_type_t<N>;
        const dims xd = ctx.dims_of(n.template child<0>());
        const auto g = op::avg_pool2d_grad<KH, KW, SH, SW, Pad>::geometry(xd);
        const T* dy = ctx.input(n.template child<1>());
        for (index_t i = 0, e = xd.numel(); i < e; ++i) dx[i] = T(0);
        backend::reference::pool2d_loops(g, [&](index_t o, auto&& window) {
            const T share = dy[o] / static_cast<T>(backend::reference::pool2d_count(window));
            window([&](index_t i) { dx[i] += share; });
        });
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<reference, op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* y) {
        using T = value_type_t<N>;
        const auto g = op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        const T* x = ctx.input(n.template child<0>());
        const T* gx = ctx.input(n.template child<1>());
        backend::reference::pool2d_loops(g, [&](index_t o, auto&& window) {
            const index_t i = backend::reference::pool2d_argmax(x, window);
            y[o] = i < 0 ? T(0) : gx[i];
        });
    }
};

}  // namespace typeflow
