// typeflow/backend/eigen/ops/reduce.hpp — reductions over axes, argmax/argmin.
#pragma once
#include <algorithm>
#include <limits>

#include <Eigen/Core>

#include <typeflow/kernel/kernel.hpp>
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

/// Reduces `in` (extents d) over the axes marked in `m` into `out`.
template <reduction R, class T>
void reduce_into(const T* in, const dims& d, const typeflow::detail::axis_mask& m, T* out) {
    using arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    // collapse into alternating runs of kept / reduced axes (extents of 1 dropped)
    std::array<index_t, max_rank> ext{};
    std::array<bool, max_rank> red{};
    std::size_t r = 0;
    index_t out_n = 1, red_n = 1;
    for (std::size_t i = 0; i < d.rank; ++i) {
        if (m.reduced[i]) red_n *= d.d[i];
        else out_n *= d.d[i];
        if (d.d[i] == 1) continue;
        if (r > 0 && red[r - 1] == m.reduced[i]) {
            ext[r - 1] *= d.d[i];
        } else {
            ext[r] = d.d[i];
            red[r] = m.reduced[i];
            ++r;
        }
    }
    Eigen::Map<arr> o(out, out_n);
    o.setConstant(detail::identity_of<R, T>());
    if (out_n == 0) return;
    if (red_n == 0) {  // an empty reduction: the identity (mean: NaN, or 0 for integers)
        if constexpr (R == reduction::mean)
            o.setConstant(std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : T(0));
        return;
    }
    if (r == 0) {  // every extent is 1
        out[0] = in[0];
    } else {
        // output strides of the kept runs
        std::array<index_t, max_rank> ost{};
        index_t s = 1;
        for (std::size_t i = r; i-- > 0;)
            if (!red[i]) {
                ost[i] = s;
                s *= ext[i];
            }
        const std::size_t last = r - 1;
        const index_t inner = ext[last];
        index_t outer = 1;
        for (std::size_t i = 0; i < last; ++i) outer *= ext[i];
        std::array<index_t, max_rank> idx{};
        const T* p = in;
        for (index_t b = 0; b < outer; ++b, p += inner) {
            index_t oo = 0;
            for (std::size_t i = 0; i < last; ++i) oo += idx[i] * ost[i];
            Eigen::Map<const arr> x(p, inner);
            if (red[last]) out[oo] = detail::combine<R>(out[oo], static_cast<T>(detail::reduce_all<R>(x)));
            else detail::combine_into<R>(Eigen::Map<arr>(out + oo, inner), x);
            for (std::size_t i = last; i-- > 0;) {
                if (++idx[i] < ext[i]) break;
                idx[i] = 0;
            }
        }
    }
    if constexpr (R == reduction::mean) o /= static_cast<T>(red_n);
}

}  // namespace typeflow::backend::eigen

namespace typeflow {

template <reduction R, bool Keep, index_t... Axes>
struct kernel<cpu, op::reduce<R, Keep, Axes...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        backend::eigen::reduce_into<R>(ctx.input(n.template child<0>()), d, typeflow::detail::make_axis_mask<Axes...>(d.rank), out);
    }
};

template <bool IsMax, index_t Axis>
struct kernel<cpu, op::arg_reduce<IsMax, Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, std::int64_t* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        const auto* in = ctx.input(n.template child<0>());
        using T = std::remove_cvref_t<decltype(*in)>;
        const std::size_t ax = op::arg_reduce<IsMax, Axis>::axis(d.rank);
        index_t outer = 1, inner = 1;
        for (std::size_t i = 0; i < ax; ++i) outer *= d.d[i];
        for (std::size_t i = ax + 1; i < d.rank; ++i) inner *= d.d[i];
        const index_t len = d.d[ax];
        for (index_t o = 0; o < outer; ++o) {
            std::int64_t* res = out + o * inner;
            const T* base = in + o * len * inner;
            for (index_t i = 0; i < inner; ++i) {
                std::int64_t bi = 0;
                T bv = base[i];
                for (index_t l = 1; l < len; ++l) {
                    const T v = base[l * inner + i];
                    // NaN wins, as in NumPy; on ties the first index is kept
                    const bool better = IsMax ? (v > bv || (v != v && bv == bv)) : (v < bv || (v != v && bv == bv));
                    if (better) {
                        bv = v;
                        bi = l;
                    }
                }
                res[i] = bi;
            }
        }
    }
};

}  // namespace typeflow
