// typeflow/backend/eigen/ops/conv_direct.hpp — direct CPU conv2d kernels for
// filters with few taps (K = KH * KW * C_in small: the first layer of an image
// model, C_in = 1 or 3), where im2col + GEMM spends its time copying and
// packing a [rows, K] matrix for products of depth K (benchmarks/conv_candidates.md).
//
// All three ops are small register-blocked products, vectorised over
// channels with Eigen's packets, reading the input in place: the element k
// of an output position's patch is x[origin + off[k]], off[k] the tap's
// offset ((kh * dh) * W + kw * dw) * C_in + ci. Positions whose window leaves
// the input (padding) are copied into a small per-thread patch buffer first,
// zeros included, and go through the same kernels.
//   forward:        y[p, :]  = sum_k patch(p)[k] * w[k, :]        (w packed, C_out padded to whole packets)
//                   R positions x CB packets of C_out per block; output rows split over the threads.
//   filter grad:    dw[k, :] = sum_p patch(p)[k] * dy[p, :]       TK taps x CB packets per block, the
//                   positions in a fixed number of parts (a function of the geometry only), one partial
//                   dw per part, the partials added in order: the result does not depend on the threads.
//   input grad:     dpatch(p) = dy[p, :] * w^T (w^T packed, K padded), then its taps added into dx:
//                   images split over the threads, each image's positions in order.
// Every element is computed in one order whatever the split: bit-identical
// results for every thread count.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <utility>

#include <Eigen/Core>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/conv.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::eigen::detail {

/// Taps (KH * KW * C_in) up to which conv2d and its gradients take the
/// direct kernels (beyond, im2col + GEMM is faster: benchmarks/conv_candidates.md).
inline constexpr index_t conv_direct_max_taps = 64;
/// Taps the direct kernels can take at all (benchmarks/conv_candidates.cpp
/// times them beyond conv_direct_max_taps).
inline constexpr index_t conv_direct_tap_capacity = 512;
/// Multiply-adds each thread gets at least.
inline constexpr index_t conv_direct_grain = index_t{1} << 16;
/// Most parts of the filter gradient's positions (each with its partial dw).
inline constexpr index_t conv_direct_max_parts = 32;
/// Elements of dy per block of the filter gradient (about L1).
inline constexpr index_t conv_direct_chunk = 8192;

template <class T>
struct conv_packet {
    using P = typename Eigen::internal::packet_traits<T>::type;
    static constexpr index_t L = Eigen::internal::unpacket_traits<P>::size;
    /// Register-blocking shapes: SIMD registers of the target.
#if defined(__AVX512F__)
    static constexpr int regs = 32;
#else
    static constexpr int regs = 16;
#endif
};

inline index_t conv_round_up(index_t v, index_t m) { return (v + m - 1) / m * m; }

/// The geometry's direct-kernel layout: taps, packets, the ranges of output
/// rows and columns whose windows lie inside the input.
struct conv_direct_plan {
    index_t K = 0, L = 1;
    index_t cop = 0;  // C_out rounded up to whole packets
    index_t kp = 0;   // K rounded up to whole packets
    index_t col_lo = 0, col_hi = 0;  // interior output columns [col_lo, col_hi)
    std::array<index_t, conv_direct_tap_capacity> off{};  // tap offsets from a window's origin
    std::array<index_t, conv_direct_tap_capacity> iota{};  // 0, 1, 2, ...: offsets within a patch
};

/// True when conv2d of this geometry takes the direct kernels.
inline bool conv_direct(const typeflow::detail::conv2d_geometry& g) {
    const index_t K = g.kh * g.kw * g.c;
    return K > 0 && K <= conv_direct_max_taps;
}
/// True when the direct kernels can take this geometry (conv_direct_tap_capacity).
inline bool conv_direct_possible(const typeflow::detail::conv2d_geometry& g) {
    const index_t K = g.kh * g.kw * g.c;
    return K > 0 && K <= conv_direct_tap_capacity;
}

template <class T>
conv_direct_plan conv_direct_plan_of(const typeflow::detail::conv2d_geometry& g) {
    conv_direct_plan p;
    p.L = conv_packet<T>::L;
    p.K = g.kh * g.kw * g.c;
    p.cop = conv_round_up(g.co, p.L);
    p.kp = conv_round_up(p.K, p.L);
    index_t k = 0;
    for (index_t a = 0; a < g.kh; ++a)
        for (index_t b = 0; b < g.kw; ++b)
            for (index_t ci = 0; ci < g.c; ++ci, ++k) p.off[k] = (a * g.dh * g.w + b * g.dw) * g.c + ci;
    for (index_t i = 0; i < p.K; ++i) p.iota[i] = i;
    // columns ow with 0 <= ow * sw - pl and ow * sw - pl + (kw - 1) * dw <= w - 1
    const index_t lo = (g.pad_left + g.sw - 1) / g.sw;
    const index_t last = g.w - 1 - (g.kw - 1) * g.dw + g.pad_left;
    const index_t hi = last < 0 ? 0 : last / g.sw + 1;
    p.col_lo = std::min(lo, g.ow);
    p.col_hi = std::clamp(hi, p.col_lo, g.ow);
    return p;
}

/// True when every tap row of output row oh lies inside the input.
inline bool conv_row_inside(const typeflow::detail::conv2d_geometry& g, index_t oh) {
    const index_t ih0 = oh * g.sh - g.pad_top;
    return ih0 >= 0 && ih0 + (g.kh - 1) * g.dh <= g.h - 1;
}

/// The patches of output positions [ow0, ow1) of row oh of one image (xi),
/// K elements each (zeros outside the input), into buf.
template <class T>
void conv_patches(const typeflow::detail::conv2d_geometry& g, const T* xi, index_t oh, index_t ow0, index_t ow1, T* buf) {
    const index_t c = g.c;
    for (index_t ow = ow0; ow < ow1; ++ow)
        for (index_t a = 0; a < g.kh; ++a) {
            const index_t ih = oh * g.sh - g.pad_top + a * g.dh;
            for (index_t b = 0; b < g.kw; ++b, buf += c) {
                const index_t iw = ow * g.sw - g.pad_left + b * g.dw;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) {
                    for (index_t ci = 0; ci < c; ++ci) buf[ci] = T(0);
                } else {
                    const T* s = xi + (ih * g.w + iw) * c;
                    for (index_t ci = 0; ci < c; ++ci) buf[ci] = s[ci];
                }
            }
        }
}

/// C[r, :width] = sum_k A(r, k) * B[k, :] for r < R and CB packets of
/// columns (width of them valid): A(r, k) = a[r * ra + off[k]] (a[r * ra + k]
/// when off is null), B rows ldb apart (whole packets readable), C rows ldc apart.
template <int R, int CB, bool Gather, class T>
void conv_block_mul(index_t depth, const T* a, index_t ra, const index_t* off, const T* b, index_t ldb, T* c, index_t ldc,
                    index_t width) {
    using P = typename conv_packet<T>::P;
    constexpr index_t L = conv_packet<T>::L;
    P acc[R][CB];
    for (int r = 0; r < R; ++r)
        for (int q = 0; q < CB; ++q) acc[r][q] = Eigen::internal::pset1<P>(T(0));
    for (index_t k = 0; k < depth; ++k) {
        const T* bk = b + k * ldb;
        const T* ak = a + (Gather ? off[k] : k);
        P bv[CB];
        for (int q = 0; q < CB; ++q) bv[q] = Eigen::internal::ploadu<P>(bk + q * L);
        for (int r = 0; r < R; ++r) {
            const P av = Eigen::internal::pset1<P>(ak[r * ra]);
            for (int q = 0; q < CB; ++q) acc[r][q] = Eigen::internal::pmadd(av, bv[q], acc[r][q]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int q = 0; q < CB; ++q) {
            T* dst = c + r * ldc + q * L;
            const index_t n = width - q * L;
            if (n >= L) {
                Eigen::internal::pstoreu(dst, acc[r][q]);
            } else if (n > 0) {
                T tmp[L];
                Eigen::internal::pstoreu(tmp, acc[r][q]);
                std::memcpy(dst, tmp, static_cast<std::size_t>(n) * sizeof(T));
            }
        }
}

/// acc[t, :] += sum over rows i, columns j of X(i, j, t) * D(i, j, :) for
/// t < TK and CB packets: X(i, j, t) = x[i * xr + j * xc + off[t]],
/// D(i, j, :) = dy + i * dr + j * dc (whole packets readable), acc rows ldacc apart.
template <int TK, int CB, class T>
void conv_block_acc(index_t rows, index_t cols, const T* x, index_t xr, index_t xc, const index_t* off, const T* dy, index_t dr,
                    index_t dc, T* acc_mem, index_t ldacc) {
    using P = typename conv_packet<T>::P;
    constexpr index_t L = conv_packet<T>::L;
    P acc[TK][CB];
    index_t o[TK];
    for (int t = 0; t < TK; ++t) {
        o[t] = off[t];
        for (int q = 0; q < CB; ++q) acc[t][q] = Eigen::internal::ploadu<P>(acc_mem + t * ldacc + q * L);
    }
    for (index_t i = 0; i < rows; ++i) {
        const T* xi = x + i * xr;
        const T* di = dy + i * dr;
        for (index_t j = 0; j < cols; ++j) {
            const T* xj = xi + j * xc;
            const T* dj = di + j * dc;
            P d[CB];
            for (int q = 0; q < CB; ++q) d[q] = Eigen::internal::ploadu<P>(dj + q * L);
            for (int t = 0; t < TK; ++t) {
                const P xv = Eigen::internal::pset1<P>(xj[o[t]]);
                for (int q = 0; q < CB; ++q) acc[t][q] = Eigen::internal::pmadd(xv, d[q], acc[t][q]);
            }
        }
    }
    for (int t = 0; t < TK; ++t)
        for (int q = 0; q < CB; ++q) Eigen::internal::pstoreu(acc_mem + t * ldacc + q * L, acc[t][q]);
}

/// Function tables of the blocks for every R (TK) <= RM and CB <= CBM.
template <class T, int RM, int CBM>
struct conv_blocks {
    using mul_fn = void (*)(index_t, const T*, index_t, const index_t*, const T*, index_t, T*, index_t, index_t);
    using acc_fn = void (*)(index_t, index_t, const T*, index_t, index_t, const index_t*, const T*, index_t, index_t, T*, index_t);
    template <bool Gather, int... I>
    static constexpr auto mul_table(std::integer_sequence<int, I...>) {
        return std::array<mul_fn, sizeof...(I)>{&conv_block_mul<I / CBM + 1, I % CBM + 1, Gather, T>...};
    }
    template <int... I>
    static constexpr auto acc_table(std::integer_sequence<int, I...>) {
        return std::array<acc_fn, sizeof...(I)>{&conv_block_acc<I / CBM + 1, I % CBM + 1, T>...};
    }
    static mul_fn mul(index_t r, index_t cb, bool gather) {
        static constexpr auto t = mul_table<false>(std::make_integer_sequence<int, RM * CBM>{});
        static constexpr auto tg = mul_table<true>(std::make_integer_sequence<int, RM * CBM>{});
        return (gather ? tg : t)[static_cast<std::size_t>((r - 1) * CBM + (cb - 1))];
    }
    static acc_fn acc(index_t tk, index_t cb) {
        static constexpr auto t = acc_table(std::make_integer_sequence<int, RM * CBM>{});
        return t[static_cast<std::size_t>((tk - 1) * CBM + (cb - 1))];
    }
};

/// Block shapes: forward / input grad R positions x CB packets, filter grad TK taps x CB packets.
template <class T>
struct conv_shapes {
    static constexpr int mul_cb = 2, mul_r = conv_packet<T>::regs == 32 ? 12 : 6;
    static constexpr int acc_cb = 2, acc_tk = conv_packet<T>::regs == 32 ? 12 : 6;
};

/// C = A B for `count` rows of A (A(r, k) = a[r * ra + off[k]]), all of C's
/// `width` columns (B packed with ldb >= width rounded up to packets).
template <class T>
void conv_rows_mul(index_t count, index_t depth, const T* a, index_t ra, const index_t* off, const T* b, index_t ldb, T* c,
                   index_t ldc, index_t width) {
    using S = conv_shapes<T>;
    using B = conv_blocks<T, S::mul_r, S::mul_cb>;
    constexpr index_t L = conv_packet<T>::L;
    const index_t packets = (width + L - 1) / L;
    for (index_t q0 = 0; q0 < packets; q0 += S::mul_cb) {
        const index_t cb = std::min<index_t>(S::mul_cb, packets - q0);
        const index_t w = std::min(width - q0 * L, cb * L);
        for (index_t r0 = 0; r0 < count; r0 += S::mul_r) {
            const index_t r = std::min<index_t>(S::mul_r, count - r0);
            B::mul(r, cb, off != nullptr)(depth, a + r0 * ra, ra, off, b + q0 * L, ldb, c + r0 * ldc + q0 * L, ldc, w);
        }
    }
}

// ---------------------------------------------------------------------------
// forward

/// Workspace: the packed filter [K, cop] and a patch buffer of one output row per thread.
template <class T>
std::size_t conv_direct_forward_bytes(const typeflow::detail::conv2d_geometry& g, int threads) {
    const index_t L = conv_packet<T>::L, K = g.kh * g.kw * g.c;
    const index_t elems = K * conv_round_up(g.co, L) + std::max(threads, 1) * (g.ow * K + L);
    return static_cast<std::size_t>(elems) * sizeof(T);
}

template <class T>
void conv2d_forward_direct(const parallel_ctx& par, const typeflow::detail::conv2d_geometry& g, const T* x, const T* w, T* out,
                           void* work) {
    const conv_direct_plan p = conv_direct_plan_of<T>(g);
    const index_t K = p.K, co = g.co, cop = p.cop;
    T* wp = static_cast<T*>(work);
    for (index_t k = 0; k < K; ++k) {
        std::memcpy(wp + k * cop, w + k * co, static_cast<std::size_t>(co) * sizeof(T));
        std::fill(wp + k * cop + co, wp + (k + 1) * cop, T(0));
    }
    T* bufs = wp + K * cop;
    const index_t rows = g.n * g.oh;
    const index_t per_row = std::max<index_t>(1, g.ow * K * co);
    par.for_range(rows, std::max<index_t>(1, conv_direct_grain / per_row), [&](std::size_t t, index_t r0, index_t r1) {
        T* buf = bufs + static_cast<index_t>(t) * (g.ow * K + p.L);
        for (index_t r = r0; r < r1; ++r) {
            const index_t img = r / g.oh, oh = r % g.oh;
            const T* xi = x + img * g.h * g.w * g.c;
            T* o = out + r * g.ow * co;
            const auto patched = [&](index_t a0, index_t a1) {
                if (a0 >= a1) return;
                conv_patches(g, xi, oh, a0, a1, buf);
                conv_rows_mul<T>(a1 - a0, K, buf, K, nullptr, wp, cop, o + a0 * co, co, co);
            };
            if (!conv_row_inside(g, oh)) {
                patched(0, g.ow);
                continue;
            }
            patched(0, p.col_lo);
            if (p.col_lo < p.col_hi) {
                const T* origin = xi + ((oh * g.sh - g.pad_top) * g.w + p.col_lo * g.sw - g.pad_left) * g.c;
                conv_rows_mul(p.col_hi - p.col_lo, K, origin, g.sw * g.c, p.off.data(), wp, cop, o + p.col_lo * co, co, co);
            }
            patched(p.col_hi, g.ow);
        }
    });
}

// ---------------------------------------------------------------------------
// filter gradient

/// Parts of the filter gradient's output rows (a function of the geometry only).
inline index_t conv_direct_parts(const typeflow::detail::conv2d_geometry& g) {
    const index_t rows = g.n * g.oh, K = g.kh * g.kw * g.c;
    const index_t work = rows * g.ow * K * g.co;
    return std::clamp<index_t>(work / (4 * conv_direct_grain), 1, std::min(conv_direct_max_parts, std::max<index_t>(rows, 1)));
}
/// Output rows per block of the filter gradient.
inline index_t conv_direct_chunk_rows(const typeflow::detail::conv2d_geometry& g, index_t cop) {
    return std::max<index_t>(1, conv_direct_chunk / std::max<index_t>(1, g.ow * cop));
}
/// Workspace: one partial dw [K, cop] per part; per thread, a patch buffer of
/// one output row and, when C_out is not whole packets, a padded copy of a block of dy.
template <class T>
std::size_t conv_direct_filter_bytes(const typeflow::detail::conv2d_geometry& g, int threads) {
    const index_t L = conv_packet<T>::L, K = g.kh * g.kw * g.c, cop = conv_round_up(g.co, L);
    const index_t dy_copy = g.co % L ? conv_direct_chunk_rows(g, cop) * g.ow * cop : 0;
    const index_t elems = conv_direct_parts(g) * K * cop + std::max(threads, 1) * (g.ow * K + dy_copy + L);
    return static_cast<std::size_t>(elems) * sizeof(T);
}

template <class T>
void conv2d_filter_grad_direct(const parallel_ctx& par, const typeflow::detail::conv2d_geometry& g, const T* x, const T* dy, T* dw,
                               void* work) {
    using S = conv_shapes<T>;
    using B = conv_blocks<T, S::acc_tk, S::acc_cb>;
    const conv_direct_plan p = conv_direct_plan_of<T>(g);
    const index_t K = p.K, co = g.co, cop = p.cop, L = p.L, packets = cop / L;
    const index_t rows = g.n * g.oh, parts = conv_direct_parts(g), chunk_rows = conv_direct_chunk_rows(g, cop);
    const bool pad = co != cop;
    T* partial = static_cast<T*>(work);
    T* bufs = partial + parts * K * cop;
    const index_t buf_elems = g.ow * K + (pad ? chunk_rows * g.ow * cop : 0) + L;
    // dw_part += the products of output rows [r0, r1) (one image, in order)
    const auto rows_into = [&](T* acc, T* buf, index_t r0, index_t r1) {
        const index_t img = r0 / g.oh;
        const T* xi = x + img * g.h * g.w * g.c;
        const T* d = dy + r0 * g.ow * co;
        index_t dc = co;
        if (pad) {  // dy rows with C_out padded to whole packets
            T* dp = buf + g.ow * K;
            for (index_t i = 0; i < (r1 - r0) * g.ow; ++i) {
                std::memcpy(dp + i * cop, d + i * co, static_cast<std::size_t>(co) * sizeof(T));
                std::fill(dp + i * cop + co, dp + (i + 1) * cop, T(0));
            }
            d = dp, dc = cop;
        }
        const auto taps = [&](index_t nrows, index_t cols, const T* xo, index_t xr, index_t xc, const index_t* off, const T* dd) {
            if (nrows <= 0 || cols <= 0) return;
            for (index_t k0 = 0; k0 < K; k0 += S::acc_tk) {
                const index_t tk = std::min<index_t>(S::acc_tk, K - k0);
                for (index_t q0 = 0; q0 < packets; q0 += S::acc_cb) {
                    const index_t cb = std::min<index_t>(S::acc_cb, packets - q0);
                    B::acc(tk, cb)(nrows, cols, xo, xr, xc, off + k0, dd + q0 * L, g.ow * dc, dc, acc + k0 * cop + q0 * L, cop);
                }
            }
        };
        // runs of rows whose windows lie inside the input: their interior columns at once
        index_t r = r0;
        while (r < r1) {
            const index_t oh = r % g.oh;
            const T* dr = d + (r - r0) * g.ow * dc;
            if (conv_row_inside(g, oh)) {
                index_t e = r + 1;
                while (e < r1 && conv_row_inside(g, e % g.oh)) ++e;
                if (p.col_lo < p.col_hi) {
                    const T* origin = xi + ((oh * g.sh - g.pad_top) * g.w + p.col_lo * g.sw - g.pad_left) * g.c;
                    taps(e - r, p.col_hi - p.col_lo, origin, g.sh * g.w * g.c, g.sw * g.c, p.off.data(), dr + p.col_lo * dc);
                }
                for (index_t i = r; i < e; ++i) {  // the border columns of each row
                    const index_t ohi = i % g.oh;
                    const T* di = d + (i - r0) * g.ow * dc;
                    for (const auto& [a0, a1] : {std::pair{index_t{0}, p.col_lo}, std::pair{p.col_hi, g.ow}}) {
                        if (a0 >= a1) continue;
                        conv_patches(g, xi, ohi, a0, a1, buf);
                        taps(1, a1 - a0, buf, 0, K, p.iota.data(), di + a0 * dc);
                    }
                }
                r = e;
            } else {
                conv_patches(g, xi, oh, 0, g.ow, buf);
                taps(1, g.ow, buf, 0, K, p.iota.data(), dr);
                ++r;
            }
        }
    };
    par.for_range(parts, 1, [&](std::size_t t, index_t b, index_t e) {
        T* buf = bufs + static_cast<index_t>(t) * buf_elems;
        for (index_t part = b; part < e; ++part) {
            T* acc = partial + part * K * cop;
            std::fill(acc, acc + K * cop, T(0));
            const index_t p0 = rows * part / parts, p1 = rows * (part + 1) / parts;
            // blocks of at most chunk_rows rows, none across images
            for (index_t r = p0; r < p1;) {
                const index_t img_end = (r / g.oh + 1) * g.oh;
                const index_t e1 = std::min({p1, img_end, r + chunk_rows});
                rows_into(acc, buf, r, e1);
                r = e1;
            }
        }
    });
    for (index_t k = 0; k < K; ++k) {
        T* dst = dw + k * co;
        std::memcpy(dst, partial + k * cop, static_cast<std::size_t>(co) * sizeof(T));
        for (index_t part = 1; part < parts; ++part) {
            const T* src = partial + part * K * cop + k * cop;
            for (index_t o = 0; o < co; ++o) dst[o] += src[o];
        }
    }
}

// ---------------------------------------------------------------------------
// input gradient

/// Workspace: w^T packed [C_out, kp] and one output row's patch gradients [ow, kp] per thread.
template <class T>
std::size_t conv_direct_input_bytes(const typeflow::detail::conv2d_geometry& g, int threads) {
    const index_t L = conv_packet<T>::L, kp = conv_round_up(g.kh * g.kw * g.c, L);
    const index_t elems = g.co * kp + std::max(threads, 1) * (g.ow * kp + L);
    return static_cast<std::size_t>(elems) * sizeof(T);
}

template <class T>
void conv2d_input_grad_direct(const parallel_ctx& par, const typeflow::detail::conv2d_geometry& g, const T* w, const T* dy, T* dx,
                              void* work) {
    const conv_direct_plan p = conv_direct_plan_of<T>(g);
    const index_t K = p.K, kp = p.kp, co = g.co, c = g.c;
    T* wt = static_cast<T*>(work);
    for (index_t o = 0; o < co; ++o) {
        for (index_t k = 0; k < K; ++k) wt[o * kp + k] = w[k * co + o];
        std::fill(wt + o * kp + K, wt + (o + 1) * kp, T(0));
    }
    T* bufs = wt + co * kp;
    const index_t image_elems = g.h * g.w * c;
    const index_t per_image = std::max<index_t>(1, g.oh * g.ow * K * co);
    par.for_range(g.n, std::max<index_t>(1, conv_direct_grain / per_image), [&](std::size_t t, index_t i0, index_t i1) {
        T* buf = bufs + static_cast<index_t>(t) * (g.ow * kp + p.L);
        for (index_t img = i0; img < i1; ++img) {
            T* di = dx + img * image_elems;
            std::fill(di, di + image_elems, T(0));
            for (index_t oh = 0; oh < g.oh; ++oh) {
                const T* d = dy + (img * g.oh + oh) * g.ow * co;
                conv_rows_mul<T>(g.ow, co, d, co, nullptr, wt, kp, buf, kp, kp);
                const bool inside = conv_row_inside(g, oh);
                for (index_t ow = 0; ow < g.ow; ++ow) {
                    const T* s = buf + ow * kp;
                    if (inside && ow >= p.col_lo && ow < p.col_hi) {
                        T* origin = di + ((oh * g.sh - g.pad_top) * g.w + ow * g.sw - g.pad_left) * c;
                        for (index_t k = 0; k < K; ++k) origin[p.off[k]] += s[k];
                        continue;
                    }
                    for (index_t a = 0; a < g.kh; ++a) {
                        const index_t ih = oh * g.sh - g.pad_top + a * g.dh;
                        for (index_t b = 0; b < g.kw; ++b, s += c) {
                            const index_t iw = ow * g.sw - g.pad_left + b * g.dw;
                            if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                            T* dst = di + (ih * g.w + iw) * c;
                            for (index_t ci = 0; ci < c; ++ci) dst[ci] += s[ci];
                        }
                    }
                }
            }
        }
    });
}

}  // namespace typeflow::backend::eigen::detail
