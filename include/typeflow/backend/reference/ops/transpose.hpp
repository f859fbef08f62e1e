// typeflow/backend/reference/ops/transpose.hpp — reference axis permutation.
#pragma once
#include <array>

#include <typeflow/core/config.hpp>
#include <typeflow/core/index.hpp>
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
        const std::array<index_t, max_rank> in_stride = strides_of(d);
        std::array<index_t, max_rank> ext{}, st{};  // output axis i is input axis perm[i]
        for (std::size_t i = 0; i < r; ++i) {
            ext[i] = d.d[perm[i]];
            st[i] = in_stride[perm[i]];
        }
        multi_index idx;  // the output index
        const index_t total = d.numel();
        for (index_t e = 0; e < total; ++e) {
            out[e] = in[idx.offset(st.data(), r)];
            idx.next(ext.data(), r);
        }
    }
};

}  // namespace typeflow
