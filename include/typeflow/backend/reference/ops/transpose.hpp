// typeflow/backend/reference/ops/transpose.hpp — reference axis permutation.
#pragma once
#include <array>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/transpose.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <std::size_t... P>
struct kernel<reference, op::permute<P...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        const auto* in = ctx.input(n.template child<0>());
        constexpr std::size_t r = sizeof...(P);
        constexpr std::array<std::size_t, r + 1> perm{P..., 0};
        std::array<index_t, max_rank> in_stride{}, idx{};
        index_t s = 1;
        for (std::size_t i = r; i-- > 0;) {
            in_stride[i] = s;
            s *= d.d[i];
        }
        const index_t total = d.numel();
        for (index_t e = 0; e < total; ++e) {  // idx: the output index; output axis i is input axis perm[i]
            index_t src = 0;
            for (std::size_t i = 0; i < r; ++i) src += idx[i] * in_stride[perm[i]];
            out[e] = in[src];
            for (std::size_t i = r; i-- > 0;) {
                if (++idx[i] < d.d[perm[i]]) break;
                idx[i] = 0;
            }
        }
    }
};

}  // namespace typeflow
