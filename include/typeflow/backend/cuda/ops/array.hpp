// typeflow/backend/cuda/ops/array.hpp — the array ops on a GPU: concat, the
// window ops (slice, split parts, the parts of a concat's adjoint, the inside
// of a pad), place (their adjoints), pad (constant, reflect, symmetric) and
// pad_grad, tile and tile_grad. One thread per result element: the host
// lowers the op into a small index map (extents and strides, trivially
// copyable, passed by value), and the element reads its source through it;
// the adjoints that sum (pad_grad, tile_grad) add their terms in the CPU
// kernels' order, so results match the CPU's bit for bit. The maps are
// host-and-device code: tests/cuda/test_cuda_array_host.cu runs them on the
// host against the CPU kernels.
#pragma once
#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/array.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::array {

/// Row-major multi-index of flat position e over extents ext[0..rank), last axis fastest.
struct extents {
    int rank = 0;
    index_t ext[max_rank]{};
};
inline extents extents_of(const dims& d) {
    extents x;
    x.rank = static_cast<int>(d.rank);
    for (std::size_t a = 0; a < d.rank; ++a) x.ext[a] = d.d[a];
    return x;
}

/// Where element e of a box of a row-major tensor lies in it: the window ops.
struct window_map {
    extents box;                // the box's extents (the result's)
    index_t st[max_rank]{};     // the tensor's strides
    index_t base = 0;           // the box's first element in the tensor
    TYPEFLOW_HOST_DEVICE index_t source(index_t e) const {
        index_t off = base;
        for (int a = box.rank; a-- > 0;) {
            off += (e % box.ext[a]) * st[a];
            e /= box.ext[a];
        }
        return off;
    }
};
inline window_map window_of(const dims& t, const typeflow::detail::window_box& w) {
    window_map m;
    m.box = extents_of(w.size);
    const std::array<index_t, max_rank> st = strides_of(t);
    for (std::size_t a = 0; a < t.rank; ++a) {
        m.st[a] = st[a];
        m.base += w.begin.d[a] * st[a];
    }
    return m;
}

/// Where element e of a tensor of extents `out` reads a box h placed in it
/// (-1: outside the box, a constant): place, and a CONSTANT pad.
struct place_map {
    extents out;
    index_t begin[max_rank]{}, size[max_rank]{};
    TYPEFLOW_HOST_DEVICE index_t source(index_t e) const {
        index_t off = 0, stride = 1;
        for (int a = out.rank; a-- > 0;) {
            const index_t j = e % out.ext[a] - begin[a];
            e /= out.ext[a];
            if (j < 0 || j >= size[a]) return -1;
            off += j * stride;
            stride *= size[a];
        }
        return off;
    }
};
inline place_map place_of(const dims& od, const typeflow::detail::window_box& w) {
    place_map m;
    m.out = extents_of(od);
    for (std::size_t a = 0; a < od.rank; ++a) {
        m.begin[a] = w.begin.d[a];
        m.size[a] = w.size.d[a];
    }
    return m;
}

/// P's paddings before (and after, if asked) each axis, and t's strides, into
/// a pad map's arrays.
template <class P>
void pad_axes(const dims& t, index_t* before, index_t* after, index_t* st) {
    const std::array<index_t, max_rank> s = strides_of(t);
    for (std::size_t a = 0; a < t.rank; ++a) {
        before[a] = P::value[a].before;
        if (after) after[a] = P::value[a].after;
        st[a] = s[a];
    }
}

/// Where element e of pad<P, Mode>(x) reads x (-1: the constant).
struct pad_map {
    extents out;
    pad_mode mode = pad_mode::constant;
    index_t before[max_rank]{}, in[max_rank]{}, st[max_rank]{};
    TYPEFLOW_HOST_DEVICE index_t source(index_t e) const {
        index_t off = 0;
        for (int a = out.rank; a-- > 0;) {
            const index_t j = typeflow::detail::pad_source(mode, e % out.ext[a], before[a], in[a]);
            e /= out.ext[a];
            if (j < 0) return -1;
            off += j * st[a];
        }
        return off;
    }
};
template <class P>
pad_map pad_of(pad_mode mode, const dims& xd, const dims& od) {
    pad_map m;
    m.out = extents_of(od);
    m.mode = mode;
    pad_axes<P>(xd, m.before, nullptr, m.st);
    for (std::size_t a = 0; a < xd.rank; ++a) m.in[a] = xd.d[a];
    return m;
}

/// Where element e of tile(x) reads x.
struct tile_map {
    extents out;
    index_t in[max_rank]{}, st[max_rank]{};
    TYPEFLOW_HOST_DEVICE index_t source(index_t e) const {
        index_t off = 0;
        for (int a = out.rank; a-- > 0;) {
            off += (e % out.ext[a]) % in[a] * st[a];
            e /= out.ext[a];
        }
        return off;
    }
};
inline tile_map tile_of(const dims& xd, const dims& od) {
    tile_map m;
    m.out = extents_of(od);
    const std::array<index_t, max_rank> st = strides_of(xd);
    for (std::size_t a = 0; a < xd.rank; ++a) {
        m.in[a] = xd.d[a];
        m.st[a] = st[a];
    }
    return m;
}

/// Element e of a map's result: its source's element, or `value` outside.
template <class T, class Map>
TYPEFLOW_HOST_DEVICE T gather_at(const T* src, const Map& m, index_t e, T value) {
    const index_t j = m.source(e);
    return j < 0 ? value : src[j];
}

/// Where element e of concat<Axis>(in...) reads: operand k, offset j in it.
/// The result is [outer, sum of extents along the axis times inner] rows.
template <std::size_t K>
struct concat_map {
    index_t row = 0;         // the result's elements per outer index
    index_t block[K]{};      // operand k's elements per outer index
    struct at {
        int k;
        index_t j;
    };
    TYPEFLOW_HOST_DEVICE at source(index_t e) const {
        const index_t o = e / row;
        index_t rem = e % row;
        int k = 0;
        while (k + 1 < static_cast<int>(K) && rem >= block[k]) rem -= block[k++];
        return {k, o * block[k] + rem};
    }
};
template <std::size_t K>
concat_map<K> concat_of(const dims* const* in, std::size_t ax, const dims& od) {
    concat_map<K> m;
    const axis_split s = split_at(od, ax);
    m.row = s.len * s.inner;
    for (std::size_t k = 0; k < K; ++k) m.block[k] = in[k]->d[ax] * s.inner;
    return m;
}

/// tile_grad's element j of dx: the sum of g over x's tiles, tiles in row-major order.
struct tile_sum_map {
    extents x;                 // dx's extents
    index_t m[max_rank]{};     // the multiples
    index_t gst[max_rank]{};   // g's strides
    index_t tiles = 0;
    template <class T>
    TYPEFLOW_HOST_DEVICE T sum(const T* g, index_t j) const {
        index_t idx[max_rank]{};
        for (int a = x.rank; a-- > 0;) {
            idx[a] = j % x.ext[a];
            j /= x.ext[a];
        }
        T acc = T(0);
        for (index_t t = 0; t < tiles; ++t) {
            index_t rest = t, off = 0;
            for (int a = x.rank; a-- > 0;) {
                const index_t ta = rest % m[a];
                rest /= m[a];
                off += (ta * x.ext[a] + idx[a]) * gst[a];
            }
            acc += g[off];
        }
        return acc;
    }
};
inline tile_sum_map tile_sum_of(const dims& gd, const dims& xd, const index_t* multiples) {
    tile_sum_map s;
    s.x = extents_of(xd);
    const std::array<index_t, max_rank> st = strides_of(gd);
    s.tiles = 1;
    for (std::size_t a = 0; a < xd.rank; ++a) {
        s.m[a] = multiples[a];
        s.gst[a] = st[a];
        s.tiles *= multiples[a];
    }
    return s;
}

/// pad_grad's element j of dx: the sum of g over the positions that read
/// x[j], in the CPU kernel's order (the leading axes' positions in row-major
/// order, then the last axis's).
struct pad_sum_map {
    extents x;
    pad_mode mode = pad_mode::reflect;
    index_t before[max_rank]{}, after[max_rank]{}, gst[max_rank]{};
    template <class T>
    TYPEFLOW_HOST_DEVICE T sum(const T* g, index_t j) const {
        const int r = x.rank;
        if (r == 0) return g[0];
        typeflow::detail::pad_positions pos[max_rank];
        for (int a = r; a-- > 0;) {
            pos[a] = typeflow::detail::pad_sources_of(mode, j % x.ext[a], before[a], after[a], x.ext[a]);
            j /= x.ext[a];
        }
        T acc = T(0);
        int c[max_rank]{};  // over the combinations of the leading axes' positions
        for (;;) {
            index_t off = 0;
            for (int a = 0; a + 1 < r; ++a) off += pos[a].at[c[a]] * gst[a];
            for (int k = 0; k < pos[r - 1].n; ++k) acc += g[off + pos[r - 1].at[k]];
            int a = r - 1;
            while (a-- > 0 && ++c[a] == pos[a].n) c[a] = 0;
            if (a < 0) break;
        }
        return acc;
    }
};
template <class P>
pad_sum_map pad_sum_of(pad_mode mode, const dims& gd, const dims& xd) {
    pad_sum_map s;
    s.x = extents_of(xd);
    s.mode = mode;
    pad_axes<P>(gd, s.before, s.after, s.gst);
    return s;
}

namespace detail {
template <class T, class Map>
__global__ void gather_kernel(const T* src, T* out, index_t n, const Map m, const T* value) {
    const T v = value ? *value : T(0);
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += static_cast<index_t>(gridDim.x) * blockDim.x)
        out[e] = gather_at(src, m, e, v);
}
template <class T, std::size_t K>
struct operand_ptrs {
    const T* p[K];
};
template <class T, std::size_t K>
__global__ void concat_kernel(const operand_ptrs<T, K> in, T* out, index_t n, const concat_map<K> m) {
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += static_cast<index_t>(gridDim.x) * blockDim.x) {
        const auto s = m.source(e);
        out[e] = in.p[s.k][s.j];
    }
}
template <class T, class Sum>
__global__ void sum_kernel(const T* g, T* out, index_t n, const Sum s) {
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += static_cast<index_t>(gridDim.x) * blockDim.x)
        out[e] = s.template sum<T>(g, e);
}
}  // namespace detail

/// Runs the maps on GPU N: each element one thread.
template <int N>
struct gpu_exec {
    /// out[e] = map's source element of src (or *value, or 0, outside) for e < n.
    template <class T, class Map>
    static void gather(const T* src, T* out, index_t n, const Map& m, const T* value, std::string_view what) {
        if (n <= 0) return;
        device_context& c = context<N>();
        detail::gather_kernel<T, Map><<<grid_for(static_cast<std::size_t>(n), 256), 256, 0, c.stream>>>(src, out, n, m, value);
        check_launch(what);
    }
    /// out[e] = the element of operand k that map gives, for e < n.
    template <class T, std::size_t K>
    static void concat(const detail::operand_ptrs<T, K>& in, T* out, index_t n, const concat_map<K>& m, std::string_view what) {
        if (n <= 0) return;
        device_context& c = context<N>();
        detail::concat_kernel<T, K><<<grid_for(static_cast<std::size_t>(n), 256), 256, 0, c.stream>>>(in, out, n, m);
        check_launch(what);
    }
    /// out[e] = s.sum(g, e) for e < n.
    template <class T, class Sum>
    static void sum(const T* g, T* out, index_t n, const Sum& s, std::string_view what) {
        if (n <= 0) return;
        device_context& c = context<N>();
        detail::sum_kernel<T, Sum><<<grid_for(static_cast<std::size_t>(n), 256), 256, 0, c.stream>>>(g, out, n, s);
        check_launch(what);
    }
};

// The kernels, over an executor of the maps (gpu_exec<N>; the host tests run
// the same kernels with one that loops on the host).

/// The window ops: the box W::window(children's extents...) of child 0.
template <class Exec, class W>
struct window_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const typeflow::detail::window_box w = [&]<std::size_t... J>(std::index_sequence<J...>) {
            return W::window(ctx.dims_of(n.template child<J>())...);
        }(std::make_index_sequence<meta::children_t<Nd>::size>{});
        Exec::gather(ctx.input(n.template child<0>()), out, w.size.numel(), window_of(ctx.dims_of(n.template child<0>()), w),
                     static_cast<const value_type_t<Nd>*>(nullptr), W::name);
    }
};

template <class Exec, index_t Axis>
struct concat_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        constexpr std::size_t K = meta::children_t<Nd>::size;
        [&]<std::size_t... J>(std::index_sequence<J...>) {
            const detail::operand_ptrs<T, K> in{{ctx.input(n.template child<J>())...}};
            const dims* d[] = {&ctx.dims_of(n.template child<J>())...};
            const dims od = op::concat<Axis>::infer(*d[J]...);
            const auto ax = static_cast<std::size_t>(normalize_axis(Axis, od.rank));
            Exec::concat(in, out, od.numel(), concat_of<K>(d, ax, od), "concat");
        }(std::make_index_sequence<K>{});
    }
};

/// place<W>(h, c...): zeros, and h in the box W takes from c....
template <class Exec, class W>
struct place_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const typeflow::detail::window_box w = [&]<std::size_t... J>(std::index_sequence<J...>) {
            return W::window(ctx.dims_of(n.template child<J + 1>())...);
        }(std::make_index_sequence<meta::children_t<Nd>::size - 1>{});
        const dims& od = ctx.dims_of(n.template child<1>());
        Exec::gather(ctx.input(n.template child<0>()), out, od.numel(), place_of(od, w), static_cast<const value_type_t<Nd>*>(nullptr),
                     W::place_name);
    }
};

template <class Exec, class P, pad_mode Mode>
struct pad_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        const T* value = nullptr;  // the constant, in the device's memory (0 without one)
        if constexpr (meta::children_t<Nd>::size == 2) value = ctx.input(n.template child<1>());
        const dims& xd = ctx.dims_of(n.template child<0>());
        const dims od = op::pad<P, Mode>::of(xd).out;
        Exec::gather(ctx.input(n.template child<0>()), out, od.numel(), pad_of<P>(Mode, xd, od), value, "pad");
    }
};

template <class Exec, class P, pad_mode Mode>
struct pad_grad_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* dx) {
        const dims& xd = ctx.dims_of(n.template child<1>());
        Exec::sum(ctx.input(n.template child<0>()), dx, xd.numel(), pad_sum_of<P>(Mode, ctx.dims_of(n.template child<0>()), xd),
                  "pad_grad");
    }
};

template <class Exec, index_t... M>
struct tile_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const dims& xd = ctx.dims_of(n.template child<0>());
        const dims od = op::tile<M...>::infer(xd);
        Exec::gather(ctx.input(n.template child<0>()), out, od.numel(), tile_of(xd, od), static_cast<const value_type_t<Nd>*>(nullptr),
                     "tile");
    }
};

template <class Exec, index_t... M>
struct tile_grad_kernel {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* dx) {
        const dims& xd = ctx.dims_of(n.template child<1>());
        Exec::sum(ctx.input(n.template child<0>()), dx, xd.numel(),
                  tile_sum_of(ctx.dims_of(n.template child<0>()), xd, op::tile<M...>::multiples.data()), "tile_grad");
    }
};

}  // namespace typeflow::cuda::array

namespace typeflow {

template <int N, index_t Axis>
struct kernel<gpu<N>, op::concat<Axis>> : cuda::array::concat_kernel<cuda::array::gpu_exec<N>, Axis> {};
template <int N, class B, class S>
struct kernel<gpu<N>, op::slice<B, S>> : cuda::array::window_kernel<cuda::array::gpu_exec<N>, op::slice<B, S>> {};
template <int N, index_t Axis, std::size_t K, class Parts>
struct kernel<gpu<N>, op::split_part<Axis, K, Parts>> : cuda::array::window_kernel<cuda::array::gpu_exec<N>, op::split_part<Axis, K, Parts>> {};
template <int N, index_t Axis, std::size_t I>
struct kernel<gpu<N>, op::concat_part<Axis, I>> : cuda::array::window_kernel<cuda::array::gpu_exec<N>, op::concat_part<Axis, I>> {};
template <int N, class P>
struct kernel<gpu<N>, op::unpad<P>> : cuda::array::window_kernel<cuda::array::gpu_exec<N>, op::unpad<P>> {};
template <int N, class W>
struct kernel<gpu<N>, op::place<W>> : cuda::array::place_kernel<cuda::array::gpu_exec<N>, W> {};
template <int N, class P, pad_mode Mode>
struct kernel<gpu<N>, op::pad<P, Mode>> : cuda::array::pad_kernel<cuda::array::gpu_exec<N>, P, Mode> {};
template <int N, class P, pad_mode Mode>
struct kernel<gpu<N>, op::pad_grad<P, Mode>> : cuda::array::pad_grad_kernel<cuda::array::gpu_exec<N>, P, Mode> {};
template <int N, index_t... M>
struct kernel<gpu<N>, op::tile<M...>> : cuda::array::tile_kernel<cuda::array::gpu_exec<N>, M...> {};
template <int N, index_t... M>
struct kernel<gpu<N>, op::tile_grad<M...>> : cuda::array::tile_grad_kernel<cuda::array::gpu_exec<N>, M...> {};

}  // namespace typeflow
