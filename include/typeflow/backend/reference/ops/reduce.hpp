// typeflow/backend/reference/ops/reduce.hpp — reference reductions over axes
// (sum, mean, max, min, prod) and argmax/argmin.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <typeflow/core/axes.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::reference {

/// Reduces `in` (extents d) over the axes marked in `m` into `out`.
template <reduction R, class T>
void reduce_into(const T* in, const dims& d, const typeflow::detail::axis_mask& m, T* out) {
    std::array<index_t, max_rank> ost{};  // output stride of each kept axis (0 for reduced ones)
    index_t out_n = 1, red_n = 1;
    for (std::size_t i = d.rank; i-- > 0;) {
        if (m.reduced[i]) {
            red_n *= d.d[i];
        } else {
            ost[i] = out_n;
            out_n *= d.d[i];
        }
    }
    T init;
    if constexpr (R == reduction::sum || R == reduction::mean) init = T(0);
    else if constexpr (R == reduction::prod) init = T(1);
    else if constexpr (R == reduction::max)
        init = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    else
        init = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    for (index_t o = 0; o < out_n; ++o) out[o] = init;
    if (out_n == 0) return;
    if (red_n == 0) {  // an empty reduction: the identity (mean: NaN, or 0 for integers)
        if constexpr (R == reduction::mean)
            for (index_t o = 0; o < out_n; ++o)
                out[o] = std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : T(0);
        return;
    }
    multi_index idx;
    const index_t total = d.numel();
    for (index_t e = 0; e < total; ++e) {
        const index_t o = idx.offset(ost.data(), d.rank);
        const T x = in[e];
        if constexpr (R == reduction::sum || R == reduction::mean) out[o] += x;
        else if constexpr (R == reduction::prod) out[o] *= x;
        else if constexpr (R == reduction::max) out[o] = std::max(out[o], x);
        else out[o] = std::min(out[o], x);
        idx.next(d.d.data(), d.rank);
    }
    if constexpr (R == reduction::mean)
        for (index_t o = 0; o < out_n; ++o) out[o] /= static_cast<T>(red_n);
}

}  // namespace typeflow::backend::reference

namespace typeflow {

template <reduction R, bool Keep, index_t... Axes>
struct kernel<reference, op::reduce<R, Keep, Axes...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        backend::reference::reduce_into<R>(ctx.input(n.template child<0>()), d,
                                           typeflow::detail::make_axis_mask<Axes...>(d.rank), out);
    }
};

template <bool IsMax, index_t Axis>
struct kernel<reference, op::arg_reduce<IsMax, Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, std::int64_t* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        const auto* in = ctx.input(n.template child<0>());
        using T = meta::remove_cvref_t<decltype(*in)>;
        const std::size_t ax = op::arg_reduce<IsMax, Axis>::axis(d.rank);
        const axis_split s_ = split_at(d, ax);
        const index_t outer = s_.outer, len = s_.len, inner = s_.inner;
        for (index_t o = 0; o < outer; ++o)
            for (index_t i = 0; i < inner; ++i) {
                std::int64_t best = 0;
                for (index_t l = 1; l < len; ++l) {
                    const T v = in[(o * len + l) * inner + i], bv = in[(o * len + best) * inner + i];
                    // NaN wins (the first NaN), as in NumPy; on ties the first index
                    const bool v_nan = v != v, b_nan = bv != bv;
                    if (b_nan) continue;
                    if (v_nan || (IsMax ? v > bv : v < bv)) best = l;
                }
                out[o * inner + i] = best;
            }
    }
};

}  // namespace typeflow
