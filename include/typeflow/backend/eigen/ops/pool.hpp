// typeflow/backend/eigen/ops/pool.hpp — CPU max_pool2d, avg_pool2d and their
// gradient ops max_pool2d_grad, avg_pool2d_grad, max_pool2d_grad_grad.
//
// NHWC keeps a position's channels contiguous, so every kernel walks the
// output positions and, for each, the window's input positions, combining
// whole channel vectors: the channels go in blocks of one cache line (16
// floats, 8 doubles), each block held in SIMD registers through GCC / Clang
// vector extensions (plain fixed-length loops elsewhere), and a scalar tail.
//   forward ops, max_pool2d_grad_grad: output rows split over the threads;
//   max_pool2d_grad, avg_pool2d_grad: the output rows are taken in units that
//     own disjoint input rows (one output row when the windows of consecutive
//     rows share no input row, sh >= kh; a whole image otherwise); a unit
//     writes its input rows only, in row-major output order, so the result
//     does not depend on the threads. Where no two windows share an element
//     (sh >= kh, sw >= kw) each window stores its elements' gradients, with
//     no zeroing pass when the windows cover the input; otherwise the unit
//     zeroes its rows and adds.
// The maximum of a window is its first largest element in row-major window
// order (strict >), the same element in the forward op and in the gradients;
// the gradient kernels track it per channel as its ordinal in the window.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/pool.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::eigen::detail {

using pool_geometry = typeflow::detail::pool2d_geometry;

/// Input elements each thread reads at least.
inline constexpr index_t pool_grain = index_t{1} << 15;
/// Bytes of one SIMD register of the target, and channels per block of the
/// channel loops (one cache line: 16 floats, 8 doubles).
#if defined(__AVX512F__)
inline constexpr std::size_t pool_vector_bytes = 64;
#elif defined(__AVX__)
inline constexpr std::size_t pool_vector_bytes = 32;
#else
inline constexpr std::size_t pool_vector_bytes = 16;
#endif
template <class T>
inline constexpr index_t pool_lanes = static_cast<index_t>(64 / sizeof(T));

/// The in-range window of one output position: input rows [h0, h1), columns [w0, w1).
struct pool_window {
    index_t h0, h1, w0, w1;
    index_t count() const { return (h1 - h0) * (w1 - w0); }
    bool empty() const { return h0 >= h1 || w0 >= w1; }
};
inline pool_window pool_window_of(const pool_geometry& g, index_t oh, index_t ow) {
    return {g.row_begin(oh), g.row_end(oh), g.col_begin(ow), g.col_end(ow)};
}

// Channel-vector primitives over n channels (a fixed-length block when N > 0).
template <index_t N, class T>
inline void pool_max_into(T* __restrict o, const T* __restrict v, index_t n) {
    if constexpr (N > 0) n = N;
    for (index_t k = 0; k < n; ++k) o[k] = v[k] > o[k] ? v[k] : o[k];
}
template <index_t N, class T>
inline void pool_add_into(T* __restrict o, const T* __restrict v, index_t n) {
    if constexpr (N > 0) n = N;
    for (index_t k = 0; k < n; ++k) o[k] += v[k];
}
template <index_t N, class T>
inline void pool_div(T* o, T d, index_t n) {
    if constexpr (N > 0) n = N;
    for (index_t k = 0; k < n; ++k) o[k] /= d;
}
/// Applies f(block, channel offset, channel count) to c's channels in blocks of
/// pool_lanes<T> (block = that constant) and a tail (block = 0).
template <class T, class F>
inline void pool_channel_blocks(index_t c, F&& f) {
    constexpr index_t L = pool_lanes<T>;
    index_t c0 = 0;
    for (; c0 + L <= c; c0 += L) f(std::integral_constant<index_t, L>{}, c0, L);
    if (c0 < c) f(std::integral_constant<index_t, 0>{}, c0, c - c0);
}

// GCC and Clang: a channel block as registers of the compilers' vector
// extensions. Not under nvcc, whose host code generation stops with an
// internal error ("unsupported aggregate constant") on these vectors'
// constants; there the scalar loops run.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define TYPEFLOW_POOL_VECTORS 1
/// A block of pool_lanes<T> channels as Q SIMD vectors V, with lane masks M.
/// Vectors are passed by reference only (by value, their calling convention
/// would depend on the ISA: -Wpsabi); `each` applies f to the block's Q
/// vectors with constant indices, so that they stay in registers.
template <class T>
struct pool_vec {
    typedef T V __attribute__((vector_size(pool_vector_bytes)));
    using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
    typedef I M __attribute__((vector_size(pool_vector_bytes)));
    static constexpr std::size_t Q = 64 / pool_vector_bytes, L = pool_vector_bytes / sizeof(T);
    template <class F>
    static void each(F&& f) {
        [&]<std::size_t... q>(std::index_sequence<q...>) { (f(std::integral_constant<std::size_t, q>{}), ...); }(std::make_index_sequence<Q>{});
    }
    static void load(V& v, const T* p) { std::memcpy(&v, p, sizeof(V)); }
    static void store(T* p, const V& v) { std::memcpy(p, &v, sizeof(V)); }
    /// out = m ? a : b, lane by lane (m: all ones or all zeros per lane).
    static void blend(V& out, const M& m, const V& a, const V& b) { out = (V)(((M)a & m) | ((M)b & ~m)); }
};
/// True when a block of N channels with ordinals O takes the vector path.
template <index_t N, class O, class T>
inline constexpr bool pool_vector_block = N == pool_lanes<T> && std::is_same_v<O, T>;
#else
template <index_t N, class O, class T>
inline constexpr bool pool_vector_block = false;
#endif

// Fast paths for windows inside the input (count() == kh * kw) and channels
// in whole SIMD vectors (c % pool_vec<T>::L == 0): each vector of channels
// is taken through the whole window in registers, with the generic paths'
// arithmetic in the generic paths' order (the same results, bit for bit).
#ifdef TYPEFLOW_POOL_VECTORS
/// True when the fast paths take the channels of c.
template <class T>
inline bool pool_fast_channels(index_t c) {
    return c > 0 && c % static_cast<index_t>(pool_vec<T>::L) == 0;
}
/// Forward max or average of one full window (first: its first element; rows
/// `row` elements apart) into o.
template <bool Max, class T>
inline void pool_forward_full(const T* __restrict first, index_t kh, index_t kw, index_t row, index_t c, T* __restrict o) {
    using pv = pool_vec<T>;
    constexpr index_t L = static_cast<index_t>(pv::L);
    const typename pv::V count = typename pv::V{} + static_cast<T>(kh * kw);
    for (index_t c0 = 0; c0 < c; c0 += L) {
        typename pv::V acc;
        pv::load(acc, first + c0);
        for (index_t a = 0; a < kh; ++a)
            for (index_t b = a == 0 ? 1 : 0; b < kw; ++b) {
                typename pv::V v;
                pv::load(v, first + a * row + b * c + c0);
                if constexpr (Max) pv::blend(acc, v > acc, v, acc);
                else acc += v;
            }
        if constexpr (!Max) acc /= count;
        pv::store(o + c0, acc);
    }
}
/// Max pooling gradient of one full window: the element of first (x) ... its
/// first largest element in row-major order gets s's value, the others 0
/// (stored, or added when !Store) at d (dx, the window's first element).
template <bool Store, class T>
inline void pool_route_full(const T* __restrict first, const T* __restrict s, index_t kh, index_t kw, index_t row, index_t c,
                            T* __restrict d) {
    using pv = pool_vec<T>;
    constexpr index_t L = static_cast<index_t>(pv::L);
    const typename pv::V zero{};
    for (index_t c0 = 0; c0 < c; c0 += L) {
        typename pv::V best, where{}, j{};
        pv::load(best, first + c0);
        for (index_t a = 0; a < kh; ++a)
            for (index_t b = a == 0 ? 1 : 0; b < kw; ++b) {
                j += static_cast<T>(1);
                typename pv::V v;
                pv::load(v, first + a * row + b * c + c0);
                const typename pv::M gt = v > best;
                pv::blend(where, gt, j, where);
                pv::blend(best, gt, v, best);
            }
        typename pv::V sv;
        pv::load(sv, s + c0);
        j = zero;
        for (index_t a = 0; a < kh; ++a)
            for (index_t b = 0; b < kw; ++b, j += static_cast<T>(1)) {
                typename pv::V r;
                pv::blend(r, where == j, sv, zero);
                T* dst = d + a * row + b * c + c0;
                if constexpr (!Store) {
                    typename pv::V old;
                    pv::load(old, dst);
                    r += old;
                }
                pv::store(dst, r);
            }
    }
}
#endif

/// Forward max or average pooling of output rows [r0, r1) (row r: image
/// r / oh, output row r % oh).
template <bool Max, class T>
void pool_forward_rows(const pool_geometry& g, const T* x, T* y, index_t r0, index_t r1) {
    const index_t c = g.c;
#ifdef TYPEFLOW_POOL_VECTORS
    const bool fast = pool_fast_channels<T>(c);
#endif
    for (index_t r = r0; r < r1; ++r) {
        const T* xi = x + (r / g.oh) * g.h * g.w * c;
        for (index_t ow = 0; ow < g.ow; ++ow) {
            T* o = y + (r * g.ow + ow) * c;
            const pool_window win = pool_window_of(g, r % g.oh, ow);
            if (win.empty()) {  // not reachable with TensorFlow's rules
                std::fill(o, o + c, T(0));
                continue;
            }
#ifdef TYPEFLOW_POOL_VECTORS
            if (fast && win.count() == g.kh * g.kw) {
                pool_forward_full<Max>(xi + (win.h0 * g.w + win.w0) * c, g.kh, g.kw, g.w * c, c, o);
                continue;
            }
#endif
            std::memcpy(o, xi + (win.h0 * g.w + win.w0) * c, static_cast<std::size_t>(c) * sizeof(T));
            for (index_t ih = win.h0; ih < win.h1; ++ih)
                for (index_t iw = ih == win.h0 ? win.w0 + 1 : win.w0; iw < win.w1; ++iw) {
                    const T* v = xi + (ih * g.w + iw) * c;
                    pool_channel_blocks<T>(c, [&](auto block, index_t c0, index_t n) {
                        if constexpr (Max) pool_max_into<decltype(block)::value>(o + c0, v + c0, n);
                        else pool_add_into<decltype(block)::value>(o + c0, v + c0, n);
                    });
                }
            if constexpr (!Max) {
                const T count = static_cast<T>(win.count());
                pool_channel_blocks<T>(c, [&](auto block, index_t c0, index_t n) { pool_div<decltype(block)::value>(o + c0, count, n); });
            }
        }
    }
}

template <bool Max, class T>
void pool_forward(const parallel_ctx& par, const pool_geometry& g, const T* x, T* y) {
    const index_t rows = g.n * g.oh;
    if (rows <= 0 || g.ow <= 0 || g.c <= 0) return;
    const index_t per_row = std::max<index_t>(1, g.ow * g.kh * g.kw * g.c);
    par.for_range(rows, std::max<index_t>(1, pool_grain / per_row),
                  [&](std::size_t, index_t b, index_t e) { pool_forward_rows<Max>(g, x, y, b, e); });
}

/// Calls f(input offset from the window's first element, ordinal) for the
/// window's elements in row-major order (w and c: the input's width and channels).
template <class F>
inline void pool_each_element(const pool_window& win, index_t w, index_t c, F&& f) {
    index_t j = 0;
    for (index_t ih = win.h0; ih < win.h1; ++ih)
        for (index_t iw = win.w0; iw < win.w1; ++iw) f(((ih - win.h0) * w + (iw - win.w0)) * c, j++);
}

/// The maximum of each of n channels of a window (first points at its first
/// element's channel c0): at[k] is the ordinal of channel k's first largest
/// element. O is T when the window's ordinals are exact in T (every loop then
/// works on one type and vectorises), index_t otherwise.
template <index_t N, class O, class T>
inline void pool_argmax(const T* first, const pool_window& win, index_t w, index_t c, index_t n, O* __restrict at) {
#ifdef TYPEFLOW_POOL_VECTORS
    if constexpr (pool_vector_block<N, O, T>) {
        using pv = pool_vec<T>;
        typename pv::V best[pv::Q], where[pv::Q] = {};
        pv::each([&](auto q) { pv::load(best[q], first + q * pv::L); });
        pool_each_element(win, w, c, [&](index_t off, index_t ordinal) {
            if (ordinal == 0) return;
            const typename pv::V j = typename pv::V{} + static_cast<T>(ordinal);
            pv::each([&](auto q) {
                typename pv::V x;
                pv::load(x, first + off + q * pv::L);
                const typename pv::M gt = x > best[q];
                pv::blend(where[q], gt, j, where[q]);
                pv::blend(best[q], gt, x, best[q]);
            });
        });
        pv::each([&](auto q) { pv::store(at + q * pv::L, where[q]); });
        return;
    }
#endif
    if constexpr (N > 0) n = N;
    T best[N > 0 ? N : pool_lanes<T>];
    for (index_t k = 0; k < n; ++k) best[k] = first[k], at[k] = O(0);
    pool_each_element(win, w, c, [&](index_t off, index_t j) {
        if (j == 0) return;
        const T* v = first + off;
        for (index_t k = 0; k < n; ++k) {
            if (v[k] > best[k]) best[k] = v[k], at[k] = static_cast<O>(j);
        }
    });
}

/// The ordinal type of pool_argmax for T and the geometry's windows.
template <class T>
inline bool pool_ordinals_exact(const pool_geometry& g) {
    return g.kh * g.kw <= (index_t{1} << std::numeric_limits<T>::digits);
}

/// True when each input element lies in at most one window (sh >= kh and
/// sw >= kw): the backward kernels store each window's gradients; otherwise
/// they add them.
inline bool pool_disjoint(const pool_geometry& g) { return g.sh >= g.kh && g.sw >= g.kw; }
/// True when every input element lies in some window (g.oh, g.ow > 0).
inline bool pool_covers(const pool_geometry& g) {
    return g.sh <= g.kh && g.sw <= g.kw && g.row_end(g.oh - 1) == g.h && g.col_end(g.ow - 1) == g.w;
}
/// Output rows per backward unit (see the header comment) and the first input
/// row owned by the unit starting at output row o.
inline index_t pool_unit_rows(const pool_geometry& g) { return g.sh >= g.kh ? 1 : g.oh; }
inline index_t pool_owned_row(const pool_geometry& g, index_t o) { return o == 0 ? 0 : o >= g.oh ? g.h : g.row_begin(o); }

/// The backward kernels' frame: calls put(store, image offset, output offset,
/// window) for every output position, split over units of output rows that
/// own disjoint input rows; put stores its window's gradients when `store`
/// (a std::bool_constant) is true and adds them otherwise. The owned rows are
/// zeroed first unless the windows store every element.
template <class T, class Put>
void pool_backward(const parallel_ctx& par, const pool_geometry& g, T* dx, Put&& put) {
    const index_t dx_elems = g.n * g.h * g.w * g.c;
    if (dx_elems <= 0) return;
    if (g.oh <= 0 || g.ow <= 0) return std::fill(dx, dx + dx_elems, T(0));
    const bool store = pool_disjoint(g), zero = !store || !pool_covers(g);
    const index_t rows = pool_unit_rows(g), per_image = g.oh / rows, units = g.n * per_image;
    const index_t per_unit = std::max<index_t>(1, rows * g.ow * g.kh * g.kw * g.c);
    const index_t row_elems = g.w * g.c, image_elems = g.h * row_elems;
    const auto each = [&](auto stored, index_t b, index_t e) {
        for (index_t u = b; u < e; ++u) {
            const index_t img = u / per_image, o0 = (u % per_image) * rows, o1 = o0 + rows;
            T* di = dx + img * image_elems;
            if (zero) std::fill(di + pool_owned_row(g, o0) * row_elems, di + pool_owned_row(g, o1) * row_elems, T(0));
            for (index_t oh = o0; oh < o1; ++oh)
                for (index_t ow = 0; ow < g.ow; ++ow) {
                    const pool_window win = pool_window_of(g, oh, ow);
                    if (!win.empty()) put(stored, img * image_elems, ((img * g.oh + oh) * g.ow + ow) * g.c, win);
                }
        }
    };
    par.for_range(units, std::max<index_t>(1, pool_grain / per_unit), [&](std::size_t, index_t b, index_t e) {
        if (store) each(std::true_type{}, b, e);
        else each(std::false_type{}, b, e);
    });
}

/// o[k] (= or +=) s[k] where at[k] == j, else (= or +=) 0: the share of a
/// window's element j (o) in a max pooling gradient (s).
template <bool Store, index_t N, class O, class T>
inline void pool_route(T* __restrict o, const T* __restrict s, const O* __restrict at, O j, index_t n) {
#ifdef TYPEFLOW_POOL_VECTORS
    if constexpr (pool_vector_block<N, O, T>) {
        using pv = pool_vec<T>;
        const typename pv::V js = typename pv::V{} + j, zero{};
        pv::each([&](auto q) {
            typename pv::V a, v, r;
            pv::load(a, at + q * pv::L);
            pv::load(v, s + q * pv::L);
            pv::blend(r, a == js, v, zero);
            if constexpr (!Store) {
                typename pv::V d;
                pv::load(d, o + q * pv::L);
                r += d;
            }
            pv::store(o + q * pv::L, r);
        });
        return;
    }
#endif
    if constexpr (N > 0) n = N;
    for (index_t k = 0; k < n; ++k) {
        const T v = at[k] == j ? s[k] : T(0);
        if constexpr (Store) o[k] = v;
        else o[k] += v;
    }
}
/// o[k] = s[k] where at[k] == j: window element j's part of a gather.
template <index_t N, class O, class T>
inline void pool_pick(T* __restrict o, const T* __restrict s, const O* __restrict at, O j, index_t n) {
#ifdef TYPEFLOW_POOL_VECTORS
    if constexpr (pool_vector_block<N, O, T>) {
        using pv = pool_vec<T>;
        const typename pv::V js = typename pv::V{} + j;
        pv::each([&](auto q) {
            typename pv::V a, v, r;
            pv::load(a, at + q * pv::L);
            pv::load(v, s + q * pv::L);
            pv::load(r, o + q * pv::L);
            pv::blend(r, a == js, v, r);
            pv::store(o + q * pv::L, r);
        });
        return;
    }
#endif
    if constexpr (N > 0) n = N;
    for (index_t k = 0; k < n; ++k)
        if (at[k] == j) o[k] = s[k];
}

template <class O, class T>
void max_pool_grad(const parallel_ctx& par, const pool_geometry& g, const T* x, const T* dy, T* dx) {
#ifdef TYPEFLOW_POOL_VECTORS
    const bool fast = std::is_same_v<O, T> && pool_fast_channels<T>(g.c);
#endif
    pool_backward(par, g, dx, [&](auto store, index_t image, index_t o, const pool_window& win) {
        const index_t first = image + (win.h0 * g.w + win.w0) * g.c;
#ifdef TYPEFLOW_POOL_VECTORS
        if (fast && win.count() == g.kh * g.kw)
            return pool_route_full<decltype(store)::value>(x + first, dy + o, g.kh, g.kw, g.w * g.c, g.c, dx + first);
#endif
        pool_channel_blocks<T>(g.c, [&](auto block, index_t c0, index_t n) {
            constexpr index_t N = decltype(block)::value;
            O at[pool_lanes<T>];
            pool_argmax<N>(x + first + c0, win, g.w, g.c, n, at);
            pool_each_element(win, g.w, g.c, [&](index_t off, index_t j) {
                pool_route<decltype(store)::value, N>(dx + first + c0 + off, dy + o + c0, at, static_cast<O>(j), n);
            });
        });
    });
}

template <class T>
void avg_pool_grad(const parallel_ctx& par, const pool_geometry& g, const T* dy, T* dx) {
    pool_backward(par, g, dx, [&](auto store, index_t image, index_t o, const pool_window& win) {
        const T count = static_cast<T>(win.count());
        pool_channel_blocks<T>(g.c, [&](auto block, index_t c0, index_t n) {
            [[maybe_unused]] constexpr index_t N = decltype(block)::value;  // unused where the window stores
            T share[pool_lanes<T>];
            for (index_t k = 0; k < n; ++k) share[k] = dy[o + c0 + k] / count;
            for (index_t ih = win.h0; ih < win.h1; ++ih)
                for (index_t iw = win.w0; iw < win.w1; ++iw) {
                    T* d = dx + image + (ih * g.w + iw) * g.c + c0;
                    if constexpr (decltype(store)::value) std::memcpy(d, share, static_cast<std::size_t>(n) * sizeof(T));
                    else pool_add_into<N>(d, share, n);
                }
        });
    });
}

/// y[o] = gx at the maximum of x in o's window, output rows [r0, r1).
template <class O, class T>
void max_pool_grad_grad_rows(const pool_geometry& g, const T* x, const T* gx, T* y, index_t r0, index_t r1) {
    const index_t c = g.c;
    for (index_t r = r0; r < r1; ++r) {
        const index_t image = (r / g.oh) * g.h * g.w * c;
        for (index_t ow = 0; ow < g.ow; ++ow) {
            T* o = y + (r * g.ow + ow) * c;
            const pool_window win = pool_window_of(g, r % g.oh, ow);
            if (win.empty()) {
                std::fill(o, o + c, T(0));
                continue;
            }
            const index_t first = image + (win.h0 * g.w + win.w0) * c;
            pool_channel_blocks<T>(c, [&](auto block, index_t c0, index_t n) {
                constexpr index_t N = decltype(block)::value;
                O at[pool_lanes<T>];
                pool_argmax<N>(x + first + c0, win, g.w, c, n, at);
                std::memcpy(o + c0, gx + first + c0, static_cast<std::size_t>(n) * sizeof(T));
                pool_each_element(win, g.w, c, [&](index_t off, index_t j) {
                    if (j != 0) pool_pick<N>(o + c0, gx + first + c0 + off, at, static_cast<O>(j), n);
                });
            });
        }
    }
}

template <class O, class T>
void max_pool_grad_grad(const parallel_ctx& par, const pool_geometry& g, const T* x, const T* gx, T* y) {
    const index_t rows = g.n * g.oh;
    if (rows <= 0 || g.ow <= 0 || g.c <= 0) return;
    const index_t per_row = std::max<index_t>(1, g.ow * g.kh * g.kw * g.c);
    par.for_range(rows, std::max<index_t>(1, pool_grain / per_row),
                  [&](std::size_t, index_t b, index_t e) { max_pool_grad_grad_rows<O>(g, x, gx, y, b, e); });
}

// The instantiations that TYPEFLOW_SEPARATE_COMPILATION compiles once, in
// typeflow/src.hpp (impl/kernels.ipp): KW is `extern template` or `template`.
#define TYPEFLOW_POOL_INSTANCES(KW, T)                                                                          \
    KW void pool_forward<true, T>(const parallel_ctx&, const pool_geometry&, const T*, T*);                   \
    KW void pool_forward<false, T>(const parallel_ctx&, const pool_geometry&, const T*, T*);                  \
    KW void max_pool_grad<T, T>(const parallel_ctx&, const pool_geometry&, const T*, const T*, T*);           \
    KW void max_pool_grad<index_t, T>(const parallel_ctx&, const pool_geometry&, const T*, const T*, T*);     \
    KW void avg_pool_grad<T>(const parallel_ctx&, const pool_geometry&, const T*, T*);                        \
    KW void max_pool_grad_grad<T, T>(const parallel_ctx&, const pool_geometry&, const T*, const T*, T*);      \
    KW void max_pool_grad_grad<index_t, T>(const parallel_ctx&, const pool_geometry&, const T*, const T*, T*);
#if defined(TYPEFLOW_SEPARATE_COMPILATION)
TYPEFLOW_POOL_INSTANCES(extern template, float)
TYPEFLOW_POOL_INSTANCES(extern template, double)
#endif

}  // namespace typeflow::backend::eigen::detail

namespace typeflow {

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<cpu, op::max_pool2d<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* y) {
        const auto g = op::max_pool2d<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        backend::eigen::detail::pool_forward<true>(ctx.par, g, ctx.input(n.template child<0>()), y);
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<cpu, op::avg_pool2d<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* y) {
        const auto g = op::avg_pool2d<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        backend::eigen::detail::pool_forward<false>(ctx.par, g, ctx.input(n.template child<0>()), y);
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<cpu, op::max_pool2d_grad<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        using T = value_type_t<N>;
        namespace be = backend::eigen::detail;
        const auto g = op::max_pool2d_grad<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        const T* x = ctx.input(n.template child<0>());
        const T* dy = ctx.input(n.template child<1>());
        if (be::pool_ordinals_exact<T>(g)) be::max_pool_grad<T>(ctx.par, g, x, dy, dx);
        else be::max_pool_grad<index_t>(ctx.par, g, x, dy, dx);
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<cpu, op::avg_pool2d_grad<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dx) {
        const auto g = op::avg_pool2d_grad<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        backend::eigen::detail::avg_pool_grad(ctx.par, g, ctx.input(n.template child<1>()), dx);
    }
};

template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode Pad>
struct kernel<cpu, op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* y) {
        using T = value_type_t<N>;
        namespace be = backend::eigen::detail;
        const auto g = op::max_pool2d_grad_grad<KH, KW, SH, SW, Pad>::geometry(ctx.dims_of(n.template child<0>()));
        const T* x = ctx.input(n.template child<0>());
        const T* gx = ctx.input(n.template child<1>());
        if (be::pool_ordinals_exact<T>(g)) be::max_pool_grad_grad<T>(ctx.par, g, x, gx, y);
        else be::max_pool_grad_grad<index_t>(ctx.par, g, x, gx, y);
    }
};

}  // namespace typeflow
