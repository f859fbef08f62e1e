// typeflow/backend/eigen/ops/nn.hpp — CPU kernels of softmax, log_softmax
// (the maximum subtracted first, so large logits do not overflow) and one_hot.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include <Eigen/Core>

#include <typeflow/core/index.hpp>
#include <typeflow/kernel/kernel.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/expr/ops/nn.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow::backend::eigen {

/// Elements below which a softmax, log_softmax or one_hot stays on one thread.
inline constexpr index_t parallel_softmax_grain = 16384;

/// softmax (or log_softmax when Log) of `in` (extents d) along axis `ax` into
/// `out`; the outer index (rows) split over par's threads where there is
/// enough work (each row computed as on one thread).
namespace detail {
// softmax over `outer` rows of `len` x `inner` elements, on this thread (one
// out-of-line copy, whether a thread runs all rows or some)
template <bool Log, class T>
TYPEFLOW_NOINLINE void softmax_rows(const T* in, index_t outer, index_t len, index_t inner, T* out) {
    if (inner == 1) {  // the axis is contiguous: one row per example
        using arr = Eigen::Array<T, Eigen::Dynamic, 1>;
        for (index_t o = 0; o < outer; ++o) {
            Eigen::Map<const arr> x(in + o * len, len);
            Eigen::Map<arr> y(out + o * len, len);
            const T m = x.maxCoeff();
            y = x - m;
            if constexpr (Log) {
                y -= std::log(y.exp().sum());
            } else {
                y = y.exp();
                y /= y.sum();
            }
        }
    } else {  // the axis is strided: [len, inner] blocks, reduce down the columns
        using arr2 = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        Eigen::Array<T, 1, Eigen::Dynamic> r(inner);  // per column: the max, then the sum
        for (index_t o = 0; o < outer; ++o) {
            Eigen::Map<const arr2> x(in + o * len * inner, len, inner);
            Eigen::Map<arr2> y(out + o * len * inner, len, inner);
            r = x.colwise().maxCoeff();
            y = x.rowwise() - r;
            if constexpr (Log) {
                r = y.exp().colwise().sum().log();
                y.rowwise() -= r;
            } else {
                y = y.exp();
                r = y.colwise().sum();
                y.rowwise() /= r;
            }
        }
    }
}
}  // namespace detail

template <bool Log, class T>
void softmax_into(const T* in, const dims& d, std::size_t ax, T* out, const parallel_ctx& par = {}) {
    const axis_split s_ = split_at(d, ax);
    const index_t outer = s_.outer, len = s_.len, inner = s_.inner;
    if (len == 0 || outer == 0 || inner == 0) return;
    const index_t parts =
        par.threads > 1 && outer >= 2 ? std::min<index_t>({par.threads, outer, outer * len * inner / parallel_softmax_grain}) : 1;
    if (parts < 2) return detail::softmax_rows<Log>(in, outer, len, inner, out);
    par.for_range(outer, (outer + parts - 1) / parts, [&](std::size_t, index_t o0, index_t o1) {
        detail::softmax_rows<Log>(in + o0 * len * inner, o1 - o0, len, inner, out + o0 * len * inner);
    });
}

}  // namespace typeflow::backend::eigen

namespace typeflow {

template <bool Log, index_t Axis>
struct kernel<cpu, op::softmax_along<Log, Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        backend::eigen::softmax_into<Log>(ctx.input(n.template child<0>()), d, op::softmax_along<Log, Axis>::axis(d.rank), out,
                                          ctx.par);
    }
};

template <index_t Depth, class T>
struct kernel<cpu, op::one_hot<Depth, T>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, T* out) {
        const auto* labels = ctx.input(n.template child<0>());
        const index_t count = ctx.dims_of(n.template child<0>()).numel();
        // labels [i0, i1): checked, then their rows written (a bad label
        // throws tf::error, from whichever thread holds it)
        auto block = [&](index_t i0, index_t i1) {
            for (index_t i = i0; i < i1; ++i) {
                const auto l = labels[i];
                if (l < 0 || l >= Depth)
                    typeflow::detail::raise(typeflow::detail::message() << "one_hot: label " << l << " at flat index " << i
                                                                        << " is out of range [0, " << Depth << ")");
            }
            std::fill(out + i0 * Depth, out + i1 * Depth, T(0));
            for (index_t i = i0; i < i1; ++i) out[i * Depth + static_cast<index_t>(labels[i])] = T(1);
        };
        const index_t parts = ctx.par.threads > 1 ? std::min<index_t>(ctx.par.threads, count * Depth / backend::eigen::parallel_softmax_grain) : 1;
        if (parts < 2) return block(0, count);
        ctx.par.for_range(count, (count + parts - 1) / parts, [&](std::size_t, index_t i0, index_t i1) { block(i0, i1); });
    }
};

}  // namespace typeflow
