// typeflow/backend/reference/ops/nn.hpp — reference softmax, log_softmax and
// one_hot.
#pragma once
#include <cmath>

#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/nn.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <bool Log, index_t Axis>
struct kernel<reference, op::softmax_along<Log, Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims d = ctx.dims_of(n.template child<0>());
        const T* in = ctx.input(n.template child<0>());
        const std::size_t ax = op::softmax_along<Log, Axis>::axis(d.rank);
        const axis_split s_ = split_at(d, ax);
        const index_t outer = s_.outer, len = s_.len, inner = s_.inner;
        if (len == 0) return;
        for (index_t o = 0; o < outer; ++o)
            for (index_t i = 0; i < inner; ++i) {
                const auto at = [&](index_t l) { return (o * len + l) * inner + i; };
                T mx = in[at(0)];
                for (index_t l = 1; l < len; ++l) mx = in[at(l)] > mx ? in[at(l)] : mx;
                T sum = T(0);
                for (index_t l = 0; l < len; ++l) sum += std::exp(in[at(l)] - mx);
                for (index_t l = 0; l < len; ++l)
                    out[at(l)] = Log ? (in[at(l)] - mx) - std::log(sum) : std::exp(in[at(l)] - mx) / sum;
            }
    }
};

template <index_t Depth, class T>
struct kernel<reference, op::one_hot<Depth, T>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, T* out) {
        const auto* labels = ctx.input(n.template child<0>());
        const index_t count = ctx.dims_of(n.template child<0>()).numel();
        for (index_t i = 0; i < count; ++i) {
            const auto l = labels[i];
            if (l < 0 || l >= Depth)
                typeflow::detail::raise(typeflow::detail::message() << "one_hot: label " << l << " at flat index " << i
                                                                    << " is out of range [0, " << Depth << ")");
            for (index_t j = 0; j < Depth; ++j) out[i * Depth + j] = j == static_cast<index_t>(l) ? T(1) : T(0);
        }
    }
};

}  // namespace typeflow
