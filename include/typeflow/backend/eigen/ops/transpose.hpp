// typeflow/backend/eigen/ops/transpose.hpp — axis permutation as a strided copy.
#pragma once
#include <Eigen/Core>

#include <typeflow/kernel/kernel.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/expr/ops/transpose.hpp>

namespace typeflow {

template <std::size_t... P>
struct kernel<cpu, op::permute<P...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims d = ctx.dims_of(n.template child<0>());
        const T* in = ctx.input(n.template child<0>());
        constexpr std::size_t r = sizeof...(P);
        constexpr std::array<std::size_t, r> perm{P...};
        if constexpr (r == 0) {
            out[0] = in[0];
        } else {
            const std::array<index_t, max_rank> in_stride = strides_of(d);
            std::array<index_t, max_rank> ext{}, st{};
            for (std::size_t i = 0; i < r; ++i) {
                ext[i] = d.d[perm[i]];
                st[i] = in_stride[perm[i]];
            }
            const index_t total = d.numel();
            if (total == 0) return;
            if constexpr (r == 2 && perm[0] == 1) {
                using mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
                Eigen::Map<mat>(out, d.d[1], d.d[0]) = Eigen::Map<const mat>(in, d.d[0], d.d[1]).transpose();
            } else {
                multi_index idx;  // over the output's outer axes
                const index_t inner = ext[r - 1], step = st[r - 1];
                for (index_t o = 0; o < total; o += inner) {
                    const index_t e = idx.offset(st.data(), r - 1);
                    for (index_t t = 0; t < inner; ++t) out[o + t] = in[e + t * step];
                    idx.next(ext.data(), r - 1);
                }
            }
        }
    }
};

}  // namespace typeflow
