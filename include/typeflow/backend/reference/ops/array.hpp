// typeflow/backend/reference/ops/array.hpp — reference kernels of the array
// ops (concat, the window ops and place, pad and pad_grad, tile and
// tile_grad): one loop over the elements each, with the index arithmetic
// spelt out.
#pragma once
#include <array>
#include <cstddef>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/array.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

namespace backend::reference {
/// Calls f(i, offset) for each element i (row-major) of the box w of a tensor
/// of extents t, offset being its position in the tensor.
template <class F>
void each_in_box(const dims& t, const typeflow::detail::window_box& w, F&& f) {
    const std::array<index_t, max_rank> st = strides_of(t);
    const index_t total = w.size.numel();
    multi_index idx;
    for (index_t i = 0; i < total; ++i, idx.next(w.size.d.data(), t.rank)) {
        index_t off = 0;
        for (std::size_t a = 0; a < t.rank; ++a) off += (w.begin.d[a] + idx.at[a]) * st[a];
        f(i, off);
    }
}
/// The box of window op W over the extents of the children J... of n.
template <class W, std::size_t First, class N, class Ctx, std::size_t... J>
typeflow::detail::window_box window_of(const N& n, const Ctx& ctx, std::index_sequence<J...>) {
    return W::window(ctx.dims_of(n.template child<First + J>())...);
}

template <class W>
struct window_kernel {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto w = window_of<W, 0>(n, ctx, std::make_index_sequence<meta::children_t<N>::size>{});
        const auto* x = ctx.input(n.template child<0>());
        each_in_box(ctx.dims_of(n.template child<0>()), w, [&](index_t i, index_t off) { out[i] = x[off]; });
    }
};
}  // namespace backend::reference

template <index_t Axis>
struct kernel<reference, op::concat<Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        constexpr std::size_t k = meta::children_t<N>::size;
        [&]<std::size_t... J>(std::index_sequence<J...>) {
            const T* in[] = {ctx.input(n.template child<J>())...};
            const dims* d[] = {&ctx.dims_of(n.template child<J>())...};
            const dims od = op::concat<Axis>::infer(*d[J]...);
            const auto ax = static_cast<std::size_t>(normalize_axis(Axis, od.rank));
            multi_index idx;  // the output index
            for (index_t e = 0, total = od.numel(); e < total; ++e, idx.next(od.d.data(), od.rank)) {
                // the operand whose range on the axis holds idx.at[ax], and the index within it
                std::size_t c = 0;
                index_t at = idx.at[ax];
                while (at >= d[c]->d[ax]) at -= d[c++]->d[ax];
                const std::array<index_t, max_rank> st = strides_of(*d[c]);
                index_t off = 0;
                for (std::size_t a = 0; a < od.rank; ++a) off += (a == ax ? at : idx.at[a]) * st[a];
                out[e] = in[c][off];
            }
        }(std::make_index_sequence<k>{});
    }
};

template <class B, class S>
struct kernel<reference, op::slice<B, S>> : backend::reference::window_kernel<op::slice<B, S>> {};
template <index_t Axis, std::size_t K, class Parts>
struct kernel<reference, op::split_part<Axis, K, Parts>> : backend::reference::window_kernel<op::split_part<Axis, K, Parts>> {};
template <index_t Axis, std::size_t I>
struct kernel<reference, op::concat_part<Axis, I>> : backend::reference::window_kernel<op::concat_part<Axis, I>> {};
template <class P>
struct kernel<reference, op::unpad<P>> : backend::reference::window_kernel<op::unpad<P>> {};

template <class W>
struct kernel<reference, op::place<W>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims od = ctx.dims_of(n.template child<1>());
        const auto w = backend::reference::window_of<W, 1>(n, ctx, std::make_index_sequence<meta::children_t<N>::size - 1>{});
        const T* h = ctx.input(n.template child<0>());
        for (index_t i = 0, total = od.numel(); i < total; ++i) out[i] = T(0);
        backend::reference::each_in_box(od, w, [&](index_t i, index_t off) { out[off] = h[i]; });
    }
};

template <class P, pad_mode Mode>
struct kernel<reference, op::pad<P, Mode>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        T value = T(0);
        if constexpr (meta::children_t<N>::size == 2) value = *ctx.input(n.template child<1>());
        const dims xd = ctx.dims_of(n.template child<0>());
        const dims od = op::pad<P, Mode>::of(xd).out;
        const T* x = ctx.input(n.template child<0>());
        const std::array<index_t, max_rank> xs = strides_of(xd);
        multi_index idx;
        for (index_t e = 0, total = od.numel(); e < total; ++e, idx.next(od.d.data(), od.rank)) {
            index_t off = 0;
            bool inside = true;
            for (std::size_t a = 0; a < od.rank; ++a) {
                const index_t j = typeflow::detail::pad_source(Mode, idx.at[a], P::value[a].before, xd.d[a]);
                if (j < 0) inside = false;
                off += j * xs[a];
            }
            out[e] = inside ? x[off] : value;
        }
    }
};

template <class P, pad_mode Mode>
struct kernel<reference, op::pad_grad<P, Mode>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        using T = value_type_t<N>;
        const dims gd = ctx.dims_of(n.template child<0>()), xd = ctx.dims_of(n.template child<1>());
        const T* g = ctx.input(n.template child<0>());
        const std::array<index_t, max_rank> xs = strides_of(xd);
        for (index_t i = 0, total = xd.numel(); i < total; ++i) dx[i] = T(0);
        multi_index idx;
        for (index_t e = 0, total = gd.numel(); e < total; ++e, idx.next(gd.d.data(), gd.rank)) {
            index_t off = 0;
            for (std::size_t a = 0; a < gd.rank; ++a)
                off += typeflow::detail::pad_source(Mode, idx.at[a], P::value[a].before, xd.d[a]) * xs[a];
            dx[off] += g[e];
        }
    }
};

template <index_t... M>
struct kernel<reference, op::tile<M...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims xd = ctx.dims_of(n.template child<0>());
        const dims od = op::tile<M...>::infer(xd);
        const auto* x = ctx.input(n.template child<0>());
        const std::array<index_t, max_rank> xs = strides_of(xd);
        multi_index idx;
        for (index_t e = 0, total = od.numel(); e < total; ++e, idx.next(od.d.data(), od.rank)) {
            index_t off = 0;
            for (std::size_t a = 0; a < od.rank; ++a) off += (idx.at[a] % xd.d[a]) * xs[a];
            out[e] = x[off];
        }
    }
};

template <index_t... M>
struct kernel<reference, op::tile_grad<M...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        using T = value_type_t<N>;
        const dims gd = ctx.dims_of(n.template child<0>()), xd = ctx.dims_of(n.template child<1>());
        const T* g = ctx.input(n.template child<0>());
        const std::array<index_t, max_rank> xs = strides_of(xd);
        for (index_t i = 0, total = xd.numel(); i < total; ++i) dx[i] = T(0);
        multi_index idx;
        for (index_t e = 0, total = gd.numel(); e < total; ++e, idx.next(gd.d.data(), gd.rank)) {
            index_t off = 0;
            for (std::size_t a = 0; a < gd.rank; ++a) off += (idx.at[a] % xd.d[a]) * xs[a];
            dx[off] += g[e];
        }
    }
};

}  // namespace typeflow
