// typeflow/backend/eigen/ops/reduce.hpp — reductions over axes, argmax/argmin.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <limits>

#include <Eigen/Core>

#include <typeflow/kernel/kernel.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/expr/ops/reduce.hpp>

namespace typeflow::backend::eigen {

namespace detail {
template <reduction R, class T>
constexpr T identity_of() {
    if constexpr (R == reduction::sum || R == reduction::mean) return T(0);
    else if constexpr (R == reduction::prod) return T(1);
    else if constexpr (R == reduction::max)
        return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
    else
        return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::max();
}
template <reduction R, class X>
auto reduce_all(const X& x) {
    if constexpr (R == reduction::sum || R == reduction::mean) return x.sum();
    else if constexpr (R == reduction::prod) return x.prod();
    else if constexpr (R == reduction::max) return x.maxCoeff();
    else return x.minCoeff();
}
template <reduction R, class T>
T combine(T a, T b) {
    if constexpr (R == reduction::sum || R == reduction::mean) return a + b;
    else if constexpr (R == reduction::prod) return a * b;
    else if constexpr (R == reduction::max) return std::max(a, b);
    else return std::min(a, b);
}
template <reduction R, class Y, class X>
void combine_into(Y&& y, const X& x) {
    if constexpr (R == reduction::sum || R == reduction::mean) y += x;
    else if constexpr (R == reduction::prod) y *= x;
    else if constexpr (R == reduction::max) y = y.max(x);
    else y = y.min(x);
}
}  // namespace detail

namespace detail {
/// The extents of a reduction collapsed into alternating runs of kept and
/// reduced axes (extents of 1 dropped).
struct reduce_runs {
    std::array<index_t, max_rank> ext{};
    std::array<bool, max_rank> red{};
    std::size_t r = 0;
    index_t out_n = 1, red_n = 1;
};
inline reduce_runs collapse_runs(const dims& d, const typeflow::detail::axis_mask& m) {
    reduce_runs c;
    for (std::size_t i = 0; i < d.rank; ++i) {
        if (m.reduced[i]) c.red_n *= d.d[i];
        else c.out_n *= d.d[i];
        if (d.d[i] == 1) continue;
        if (c.r > 0 && c.red[c.r - 1] == m.reduced[i]) {
            c.ext[c.r - 1] *= d.d[i];
        } else {
            c.ext[c.r] = d.d[i];
            c.red[c.r] = m.reduced[i];
            ++c.r;
        }
    }
    return c;
}
/// Combines the collapsed input `in` into `out` (holding the identity);
/// when the innermost run is kept, only its columns [j0, j1).
template <reduction R, class T>
TYPEFLOW_NOINLINE void reduce_runs_into(const T* in, const reduce_runs& c, T* out, index_t j0, index_t j1) {
    using arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    // output strides of the kept runs
    std::array<index_t, max_rank> ost{};
    index_t s = 1;
    for (std::size_t i = c.r; i-- > 0;)
        if (!c.red[i]) {
            ost[i] = s;
            s *= c.ext[i];
        }
    const std::size_t last = c.r - 1;
    const index_t inner = c.ext[last];
    index_t outer = 1;
    for (std::size_t i = 0; i < last; ++i) outer *= c.ext[i];
    multi_index idx;
    const T* p = in;
    for (index_t b = 0; b < outer; ++b, p += inner) {
        const index_t oo = idx.offset(ost.data(), last);
        if (c.red[last]) {
            Eigen::Map<const arr> x(p, inner);
            out[oo] = detail::combine<R>(out[oo], static_cast<T>(detail::reduce_all<R>(x)));
        } else {
            detail::combine_into<R>(Eigen::Map<arr>(out + oo + j0, j1 - j0), Eigen::Map<const arr>(p + j0, j1 - j0));
        }
        idx.next(c.ext.data(), last);
    }
}
}  // namespace detail

/// Input elements below which a reduction stays on one thread.
inline constexpr index_t parallel_reduce_grain = 32768;
/// The most partial results of a full reduction (one per chunk).
inline constexpr index_t max_reduce_chunks = 64;

namespace detail {
/// The parts of a reduction that depend on its kind and dtype, behind plain
/// function pointers, so that the code splitting reductions over threads
/// (reduce_split) is compiled once per program.
struct reduce_ops {
    std::size_t size;  // bytes per element
    void (*runs)(const void* in, const reduce_runs& c, void* out, index_t j0, index_t j1);  // reduce_runs_into
    void (*fill)(void* out, index_t n);                    // n identities (an empty mean: NaN, or 0)
    void (*finish)(void* out, index_t n, index_t red_n);   // mean: divide by red_n; the others: nothing
    void (*whole)(const void* in, index_t n, void* out);   // out[0] = the reduction of n elements
    void (*combine)(void* acc, const void* x);             // *acc = combine(*acc, *x)
    void (*fill_empty)(void* out, index_t n);              // the result of an empty reduction
};
template <reduction R, class T>
struct reduce_ops_of {
    using arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    static void runs(const void* in, const reduce_runs& c, void* out, index_t j0, index_t j1) {
        reduce_runs_into<R>(static_cast<const T*>(in), c, static_cast<T*>(out), j0, j1);
    }
    static void fill(void* out, index_t n) { std::fill(static_cast<T*>(out), static_cast<T*>(out) + n, identity_of<R, T>()); }
    static void finish(void* out, index_t n, index_t red_n) {
        if constexpr (R == reduction::mean) Eigen::Map<arr>(static_cast<T*>(out), n) /= static_cast<T>(red_n);
        else (void)out, (void)n, (void)red_n;
    }
    static void whole(const void* in, index_t n, void* out) {
        *static_cast<T*>(out) = static_cast<T>(reduce_all<R>(Eigen::Map<const arr>(static_cast<const T*>(in), n)));
    }
    static void combine2(void* acc, const void* x) {
        *static_cast<T*>(acc) = combine<R>(*static_cast<T*>(acc), *static_cast<const T*>(x));
    }
    static void fill_empty(void* out, index_t n) {
        T v = identity_of<R, T>();
        if constexpr (R == reduction::mean) v = std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : T(0);
        std::fill(static_cast<T*>(out), static_cast<T*>(out) + n, v);
    }
    static constexpr reduce_ops value{sizeof(T), &runs, &fill, &finish, &whole, &combine2, &fill_empty};
};

/// Reduces `in` (extents d) over the axes marked in `m` into `out`, split
/// over par's threads where the input is large enough:
///   - over the outermost kept run of axes, or the innermost one (columns),
///     when there is one: each output element is computed by one thread, in
///     the same order as on one thread (results independent of the threads);
///   - a full reduction splits the input into one contiguous chunk per
///     thread, and the chunks' results are combined in chunk order: the
///     result is reproducible for a given thread count.
/// Other patterns (a reduced run outermost and innermost) run on one thread.
inline TYPEFLOW_COLD_OPTIMIZE void reduce_split(const parallel_ctx& par, const void* in_v, const dims& d,
                                                const typeflow::detail::axis_mask& m, void* out_v, const reduce_ops& ops) {
    const auto* in = static_cast<const unsigned char*>(in_v);
    auto* out = static_cast<unsigned char*>(out_v);
    const std::size_t size = ops.size;
    const auto at = [size](auto* p, index_t e) { return p + static_cast<std::size_t>(e) * size; };
    const reduce_runs c = collapse_runs(d, m);
    const index_t out_n = c.out_n, red_n = c.red_n;
    const index_t numel = out_n * red_n;
    const index_t parts = par.threads > 1 && c.r > 0 && red_n > 0
                              ? std::min<index_t>({par.threads, numel / parallel_reduce_grain, max_reduce_chunks})
                              : 1;
    const std::size_t last = c.r > 0 ? c.r - 1 : 0;
    if (parts >= 2 && !c.red[0] && c.ext[0] >= 2) {  // split the outermost kept run
        const index_t in_step = numel / c.ext[0], out_step = out_n / c.ext[0];
        par.for_range(c.ext[0], (c.ext[0] + parts - 1) / parts, [&](std::size_t, index_t i0, index_t i1) {
            reduce_runs sub = c;
            sub.ext[0] = i1 - i0;
            unsigned char* o = at(out, i0 * out_step);
            const index_t on = (i1 - i0) * out_step;
            ops.fill(o, on);
            ops.runs(at(in, i0 * in_step), sub, o, 0, c.red[last] ? 0 : sub.ext[last]);
            ops.finish(o, on, red_n);
        });
        return;
    }
    if (parts >= 2 && !c.red[last] && c.ext[last] >= 2 * parts) {  // split the innermost kept run's columns
        const index_t inner = c.ext[last], rows = out_n / inner;
        par.for_range(inner, (inner + parts - 1) / parts, [&](std::size_t, index_t j0, index_t j1) {
            for (index_t q = 0; q < rows; ++q) ops.fill(at(out, q * inner + j0), j1 - j0);
            ops.runs(in, c, out, j0, j1);
            for (index_t q = 0; q < rows; ++q) ops.finish(at(out, q * inner + j0), j1 - j0, red_n);
        });
        return;
    }
    if (parts >= 2 && c.r == 1 && c.red[0]) {  // a full reduction: fixed chunks, combined in order
        alignas(8) unsigned char partial[max_reduce_chunks * 8];
        par.for_range(numel, (numel + parts - 1) / parts, [&](std::size_t t, index_t b, index_t e) {
            ops.whole(at(in, b), e - b, partial + t * size);
        });
        ops.fill(out, 1);
        for (index_t t = 0; t < parts; ++t) ops.combine(out, partial + static_cast<std::size_t>(t) * size);
        ops.finish(out, 1, red_n);
        return;
    }
    if (out_n == 0) return;
    if (red_n == 0) return ops.fill_empty(out, out_n);  // an empty reduction: the identity (mean: NaN, or 0)
    ops.fill(out, out_n);
    if (c.r == 0) {  // every extent is 1
        std::memcpy(out, in, size);
    } else {
        ops.runs(in, c, out, 0, c.red[last] ? 0 : c.ext[last]);
    }
    ops.finish(out, out_n, red_n);
}
}  // namespace detail

/// Reduces `in` (extents d) over the axes marked in `m` into `out`, over
/// par's threads where the input is large enough (detail::reduce_split).
template <reduction R, class T>
void reduce_into(const T* in, const dims& d, const typeflow::detail::axis_mask& m, T* out, const parallel_ctx& par = {}) {
    detail::reduce_split(par, in, d, m, out, detail::reduce_ops_of<R, T>::value);
}

}  // namespace typeflow::backend::eigen

namespace typeflow {

template <reduction R, bool Keep, index_t... Axes>
struct kernel<cpu, op::reduce<R, Keep, Axes...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        backend::eigen::reduce_into<R>(ctx.input(n.template child<0>()), d, typeflow::detail::make_axis_mask<Axes...>(d.rank), out,
                                       ctx.par);
    }
};

template <bool IsMax, index_t Axis>
struct kernel<cpu, op::arg_reduce<IsMax, Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, std::int64_t* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        const auto* in = ctx.input(n.template child<0>());
        using T = meta::remove_cvref_t<decltype(*in)>;
        const std::size_t ax = op::arg_reduce<IsMax, Axis>::axis(d.rank);
        const axis_split s_ = split_at(d, ax);
        const index_t outer = s_.outer, len = s_.len, inner = s_.inner;
        // outputs [q0, q1) of the flattened (outer, inner) index: one thread each
        auto block = [&](index_t q0, index_t q1) {
            for (index_t q = q0; q < q1;) {
                const index_t o = q / inner, i0 = q % inner, i1 = std::min(inner, i0 + (q1 - q));
                std::int64_t* res = out + o * inner;
                const T* base = in + o * len * inner;
                for (index_t i = i0; i < i1; ++i) {
                    std::int64_t bi = 0;
                    T bv = base[i];
                    for (index_t l = 1; l < len; ++l) {
                        const T v = base[l * inner + i];
                        // NaN wins, as in NumPy; on ties the first index is kept
                        const bool better =
                            IsMax ? (v > bv || (v != v && bv == bv)) : (v < bv || (v != v && bv == bv));
                        if (better) {
                            bv = v;
                            bi = l;
                        }
                    }
                    res[i] = bi;
                }
                q += i1 - i0;
            }
        };
        const index_t outputs = outer * inner;
        if (len == 0 || outputs == 0) return;
        const index_t parts = ctx.par.threads > 1 ? std::min<index_t>(ctx.par.threads, outputs * len / backend::eigen::parallel_reduce_grain) : 1;
        if (parts < 2) return block(0, outputs);
        ctx.par.for_range(outputs, (outputs + parts - 1) / parts, [&](std::size_t, index_t q0, index_t q1) { block(q0, q1); });
    }
};

}  // namespace typeflow
