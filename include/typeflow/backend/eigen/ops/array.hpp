// typeflow/backend/eigen/ops/array.hpp — CPU kernels of the array ops:
// concat, the window ops (slice, split parts, the parts of a concat's adjoint,
// the inside of a pad) and place (their adjoints), pad and pad_grad, tile and
// tile_grad.
//
// Each is a copy: the elements of a box (a window) of a row-major tensor are a
// sequence of runs, contiguous in the tensor, of one length (the box's last
// partial axis times the full axes after it). The kernels split the output's
// elements into contiguous ranges, one per thread (ctx.par.for_range, at
// least array_copy_grain elements each), and copy each range as memcpys of
// the pieces of runs it covers. Every output element is written once, by one
// thread, from the same inputs, so results do not depend on the thread
// count; tile_grad and pad_grad sum in a fixed order for the same reason.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/array.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::eigen::detail {

using typeflow::detail::window_box;

/// Elements each thread copies at least.
inline constexpr index_t array_copy_grain = index_t{1} << 15;

/// A box of a tensor as `count` runs of `len` elements, contiguous in the
/// tensor: run k starts at base + (the multi-index of k over ext) . st.
struct box_runs {
    std::array<index_t, max_rank> ext{}, st{};
    std::size_t n = 0;  // axes before the runs
    index_t count = 0, len = 0, base = 0;
};
inline box_runs runs_of(const dims& t, const window_box& w) {
    box_runs r;
    const std::array<index_t, max_rank> st = strides_of(t);
    for (std::size_t a = 0; a < t.rank; ++a) r.base += w.begin.d[a] * st[a];
    r.count = w.size.numel() == 0 ? 0 : 1;
    r.len = 1;
    if (t.rank == 0) return r;
    std::size_t j = 0;  // the last axis the box does not cover whole (0 when it covers all)
    for (std::size_t a = t.rank; a-- > 0;)
        if (w.size.d[a] != t.d[a]) {
            j = a;
            break;
        }
    r.len = w.size.d[j] * st[j];
    r.n = j;
    for (std::size_t a = 0; a < j; ++a) {
        r.ext[a] = w.size.d[a];
        r.st[a] = st[a];
        r.count *= w.size.d[a];
    }
    return r;
}

/// Calls f(box_offset, tensor_offset, n) for the contiguous pieces of the box
/// (box_offset: position in the box's row-major elements), split over threads.
template <class F>
void for_box_pieces(const parallel_ctx& par, const box_runs& r, F&& f) {
    const index_t total = r.count * r.len;
    if (total <= 0) return;
    par.for_range(total, array_copy_grain, [&](std::size_t, index_t b, index_t e) {
        multi_index idx;
        idx.seek(b / r.len, r.ext.data(), r.n);
        index_t within = b % r.len;
        for (index_t p = b; p < e;) {
            const index_t cnt = std::min(r.len - within, e - p);
            f(p, r.base + idx.offset(r.st.data(), r.n) + within, cnt);
            p += cnt;
            within = 0;
            idx.next(r.ext.data(), r.n);
        }
    });
}

/// out (dense, w.size) = the box w of src (extents sd).
template <class T>
void copy_box(const parallel_ctx& par, const T* src, const dims& sd, const window_box& w, T* out) {
    for_box_pieces(par, runs_of(sd, w), [&](index_t p, index_t o, index_t cnt) {
        std::memcpy(out + p, src + o, static_cast<std::size_t>(cnt) * sizeof(T));
    });
}

/// out (extents od) = `value` everywhere but the box w, which holds h (dense, w.size).
template <class T>
void place_box(const parallel_ctx& par, const T* h, const dims& od, const window_box& w, T value, T* out) {
    const index_t total = od.numel();
    if (total <= 0) return;
    par.for_range(total, array_copy_grain, [&](std::size_t, index_t b, index_t e) { std::fill(out + b, out + e, value); });
    for_box_pieces(par, runs_of(od, w), [&](index_t p, index_t o, index_t cnt) {
        std::memcpy(out + o, h + p, static_cast<std::size_t>(cnt) * sizeof(T));
    });
}

/// The concatenation of n operands on axis ax into out (extents od): the
/// output seen as [outer, od[ax] * inner] rows, each the operands' blocks in turn.
template <class T>
void concat_copy(const parallel_ctx& par, const T* const* in, const dims* const* in_dims, std::size_t ax,
                 const dims& od, T* out) {
    const index_t total = od.numel();
    if (total <= 0) return;
    const axis_split s = split_at(od, ax);
    const index_t row = s.len * s.inner;
    par.for_range(total, array_copy_grain, [&](std::size_t, index_t b, index_t e) {
        for (index_t p = b; p < e;) {
            const index_t o = p / row, rem = p % row;
            index_t start = 0;  // the block of operand k starts at start in the row
            std::size_t k = 0;
            index_t block = 0;
            for (;; ++k) {
                block = in_dims[k]->d[ax] * s.inner;
                if (rem < start + block) break;
                start += block;
            }
            const index_t within = rem - start, cnt = std::min(block - within, e - p);
            std::memcpy(out + p, in[k] + o * block + within, static_cast<std::size_t>(cnt) * sizeof(T));
            p += cnt;
        }
    });
}

/// pad REFLECT / SYMMETRIC (or CONSTANT with value) of x (extents xd) into out
/// (extents od), row by row (rows over the leading axes).
template <class P, pad_mode Mode, class T>
void pad_copy(const parallel_ctx& par, const T* x, const dims& xd, const dims& od, T value, T* out) {
    const std::size_t r = xd.rank;
    if (r == 0) {
        out[0] = x[0];
        return;
    }
    const index_t rows = od.numel() / std::max<index_t>(od.d[r - 1], 1), wo = od.d[r - 1], wi = xd.d[r - 1];
    if (od.numel() <= 0) return;
    const std::array<index_t, max_rank> xs = strides_of(xd);
    const index_t before = P::value[r - 1].before;
    par.for_range(rows, std::max<index_t>(1, array_copy_grain / std::max<index_t>(wo, 1)), [&](std::size_t, index_t b, index_t e) {
        multi_index idx;
        idx.seek(b, od.d.data(), r - 1);
        for (index_t row = b; row < e; ++row, idx.next(od.d.data(), r - 1)) {
            T* o = out + row * wo;
            index_t src = 0;
            bool inside = true;
            for (std::size_t a = 0; a + 1 < r; ++a) {
                const index_t j = typeflow::detail::pad_source(Mode, idx.at[a], P::value[a].before, xd.d[a]);
                if (j < 0) inside = false;
                src += j * xs[a];
            }
            if (!inside) {
                std::fill(o, o + wo, value);
                continue;
            }
            const T* xr = x + src;
            for (index_t i = 0; i < before; ++i) {
                const index_t j = typeflow::detail::pad_source(Mode, i, before, wi);
                o[i] = j < 0 ? value : xr[j];
            }
            std::memcpy(o + before, xr, static_cast<std::size_t>(wi) * sizeof(T));
            for (index_t i = before + wi; i < wo; ++i) {
                const index_t j = typeflow::detail::pad_source(Mode, i, before, wi);
                o[i] = j < 0 ? value : xr[j];
            }
        }
    });
}

using typeflow::detail::pad_positions;
using typeflow::detail::pad_sources_of;

/// pad_grad: dx[j] = the sum of g over the output positions that read x[j],
/// per x row (over the leading axes), in a fixed order.
template <class P, pad_mode Mode, class T>
void pad_grad_sum(const parallel_ctx& par, const T* g, const dims& gd, const dims& xd, T* dx) {
    const std::size_t r = xd.rank;
    if (r == 0) {
        dx[0] = g[0];
        return;
    }
    if (xd.numel() <= 0) return;
    const index_t wi = xd.d[r - 1], rows = xd.numel() / wi;
    const std::array<index_t, max_rank> gs = strides_of(gd);
    par.for_range(rows, std::max<index_t>(1, array_copy_grain / wi), [&](std::size_t, index_t b, index_t e) {
        multi_index idx;
        idx.seek(b, xd.d.data(), r - 1);
        for (index_t row = b; row < e; ++row, idx.next(xd.d.data(), r - 1)) {
            std::array<pad_positions, max_rank> pos{};
            std::array<index_t, max_rank> counts{};
            for (std::size_t a = 0; a + 1 < r; ++a) {
                pos[a] = pad_sources_of(Mode, idx.at[a], P::value[a].before, P::value[a].after, xd.d[a]);
                counts[a] = pos[a].n;
            }
            const index_t before = P::value[r - 1].before, after = P::value[r - 1].after;
            T* d = dx + row * wi;
            std::fill(d, d + wi, T(0));
            multi_index c;  // over the combinations of positions of the leading axes
            do {
                index_t off = 0;
                for (std::size_t a = 0; a + 1 < r; ++a) off += pos[a].at[static_cast<std::size_t>(c.at[a])] * gs[a];
                const T* gr = g + off;
                for (index_t j = 0; j < wi; ++j) {
                    const pad_positions q = pad_sources_of(Mode, j, before, after, wi);
                    for (int k = 0; k < q.n; ++k) d[j] += gr[q.at[static_cast<std::size_t>(k)]];
                }
            } while (c.next(counts.data(), r - 1));
        }
    });
}

/// tile: each output row (over the leading axes) is its input row repeated.
template <class T>
void tile_copy(const parallel_ctx& par, const T* x, const dims& xd, const dims& od, T* out) {
    const std::size_t r = xd.rank;
    if (od.numel() <= 0) return;
    if (r == 0) {
        out[0] = x[0];
        return;
    }
    const index_t wo = od.d[r - 1], wi = xd.d[r - 1], rows = od.numel() / wo;
    const std::array<index_t, max_rank> xs = strides_of(xd);
    par.for_range(rows, std::max<index_t>(1, array_copy_grain / wo), [&](std::size_t, index_t b, index_t e) {
        multi_index idx;
        idx.seek(b, od.d.data(), r - 1);
        for (index_t row = b; row < e; ++row, idx.next(od.d.data(), r - 1)) {
            index_t src = 0;
            for (std::size_t a = 0; a + 1 < r; ++a) src += (idx.at[a] % xd.d[a]) * xs[a];
            T* o = out + row * wo;
            for (index_t t = 0; t < wo; t += wi) std::memcpy(o + t, x + src, static_cast<std::size_t>(wi) * sizeof(T));
        }
    });
}

/// tile_grad: dx = the sum of g's tiles, per x row, tiles in row-major order.
template <class T>
void tile_sum(const parallel_ctx& par, const T* g, const dims& gd, const dims& xd, const index_t* m, T* dx) {
    const std::size_t r = xd.rank;
    if (xd.numel() <= 0) return;
    if (r == 0) {
        dx[0] = g[0];
        return;
    }
    const index_t wi = xd.d[r - 1], rows = xd.numel() / wi;
    const std::array<index_t, max_rank> gs = strides_of(gd);
    index_t tiles = 1;
    for (std::size_t a = 0; a < r; ++a) tiles *= m[a];
    par.for_range(rows, std::max<index_t>(1, array_copy_grain / std::max<index_t>(1, wi * tiles)), [&](std::size_t, index_t b, index_t e) {
        multi_index idx;
        idx.seek(b, xd.d.data(), r - 1);
        for (index_t row = b; row < e; ++row, idx.next(xd.d.data(), r - 1)) {
            T* d = dx + row * wi;
            std::fill(d, d + wi, T(0));
            if (tiles == 0) continue;
            multi_index t;  // over the tiles
            do {
                index_t off = t.at[r - 1] * wi;
                for (std::size_t a = 0; a + 1 < r; ++a) off += (t.at[a] * xd.d[a] + idx.at[a]) * gs[a];
                const T* gr = g + off;
                for (index_t j = 0; j < wi; ++j) d[j] += gr[j];
            } while (t.next(m, r));
        }
    });
}

/// The kernel of a window op W: the box W::window(children's extents...) of child 0.
template <class W>
struct window_kernel {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const window_box w = [&]<std::size_t... J>(std::index_sequence<J...>) {
            return W::window(ctx.dims_of(n.template child<J>())...);
        }(std::make_index_sequence<meta::children_t<N>::size>{});
        copy_box(ctx.par, ctx.input(n.template child<0>()), ctx.dims_of(n.template child<0>()), w, out);
    }
};

}  // namespace typeflow::backend::eigen::detail

namespace typeflow {

template <index_t Axis>
struct kernel<cpu, op::concat<Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        constexpr std::size_t k = meta::children_t<N>::size;
        [&]<std::size_t... J>(std::index_sequence<J...>) {
            const T* in[] = {ctx.input(n.template child<J>())...};
            const dims* d[] = {&ctx.dims_of(n.template child<J>())...};
            const dims od = op::concat<Axis>::infer(*d[J]...);
            const auto ax = static_cast<std::size_t>(normalize_axis(Axis, od.rank));
            backend::eigen::detail::concat_copy(ctx.par, in, d, ax, od, out);
        }(std::make_index_sequence<k>{});
    }
};

template <class B, class S>
struct kernel<cpu, op::slice<B, S>> : backend::eigen::detail::window_kernel<op::slice<B, S>> {};
template <index_t Axis, std::size_t K, class Parts>
struct kernel<cpu, op::split_part<Axis, K, Parts>> : backend::eigen::detail::window_kernel<op::split_part<Axis, K, Parts>> {};
template <index_t Axis, std::size_t I>
struct kernel<cpu, op::concat_part<Axis, I>> : backend::eigen::detail::window_kernel<op::concat_part<Axis, I>> {};
template <class P>
struct kernel<cpu, op::unpad<P>> : backend::eigen::detail::window_kernel<op::unpad<P>> {};

template <class W>
struct kernel<cpu, op::place<W>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const typeflow::detail::window_box w = [&]<std::size_t... J>(std::index_sequence<J...>) {
            return W::window(ctx.dims_of(n.template child<J + 1>())...);
        }(std::make_index_sequence<meta::children_t<N>::size - 1>{});
        backend::eigen::detail::place_box(ctx.par, ctx.input(n.template child<0>()), ctx.dims_of(n.template child<1>()), w, T(0), out);
    }
};

template <class P, pad_mode Mode>
struct kernel<cpu, op::pad<P, Mode>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        T value = T(0);
        if constexpr (meta::children_t<N>::size == 2) value = *ctx.input(n.template child<1>());
        const dims& xd = ctx.dims_of(n.template child<0>());
        const dims od = op::pad<P, Mode>::of(xd).out;
        if constexpr (Mode == pad_mode::constant) {
            typeflow::detail::window_box w{xd, xd};
            for (std::size_t a = 0; a < xd.rank; ++a) w.begin.d[a] = P::value[a].before;
            backend::eigen::detail::place_box(ctx.par, ctx.input(n.template child<0>()), od, w, value, out);
        } else {
            backend::eigen::detail::pad_copy<P, Mode>(ctx.par, ctx.input(n.template child<0>()), xd, od, value, out);
        }
    }
};

template <class P, pad_mode Mode>
struct kernel<cpu, op::pad_grad<P, Mode>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        backend::eigen::detail::pad_grad_sum<P, Mode>(ctx.par, ctx.input(n.template child<0>()), ctx.dims_of(n.template child<0>()),
                                                      ctx.dims_of(n.template child<1>()), dx);
    }
};

template <index_t... M>
struct kernel<cpu, op::tile<M...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims& xd = ctx.dims_of(n.template child<0>());
        backend::eigen::detail::tile_copy(ctx.par, ctx.input(n.template child<0>()), xd, op::tile<M...>::infer(xd), out);
    }
};

template <index_t... M>
struct kernel<cpu, op::tile_grad<M...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        backend::eigen::detail::tile_sum(ctx.par, ctx.input(n.template child<0>()), ctx.dims_of(n.template child<0>()),
                                         ctx.dims_of(n.template child<1>()), op::tile<M...>::multiples.data(), dx);
    }
};

}  // namespace typeflow
