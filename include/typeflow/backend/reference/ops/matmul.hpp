// typeflow/backend/reference/ops/matmul.hpp — reference matmul (2-D, batched,
// transposed operands): the textbook triple loop.
#pragma once
#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <bool TA, bool TB>
struct kernel<reference, op::matmul<TA, TB>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims a = ctx.dims_of(n.template child<0>());
        const dims b = ctx.dims_of(n.template child<1>());
        const T* pa = ctx.input(n.template child<0>());
        const T* pb = ctx.input(n.template child<1>());
        const index_t ar = a.d[a.rank - 2], ac = a.d[a.rank - 1];
        const index_t br = b.d[b.rank - 2], bc = b.d[b.rank - 1];
        const index_t m = TA ? ac : ar, k = TA ? ar : ac, nn = TB ? br : bc;
        index_t batches = 1;
        const dims& big = a.rank >= b.rank ? a : b;
        for (std::size_t i = 0; i + 2 < big.rank; ++i) batches *= big.d[i];
        for (index_t t = 0; t < batches; ++t) {
            const T* A = pa + (a.rank > 2 ? t * ar * ac : 0);  // a 2-D operand serves every batch
            const T* B = pb + (b.rank > 2 ? t * br * bc : 0);
            T* C = out + t * m * nn;
            for (index_t i = 0; i < m; ++i)
                for (index_t j = 0; j < nn; ++j) {
                    T s = T(0);
                    for (index_t p = 0; p < k; ++p)
                        s += (TA ? A[p * ac + i] : A[i * ac + p]) * (TB ? B[j * bc + p] : B[p * bc + j]);
                    C[i * nn + j] = s;
                }
        }
    }
};

}  // namespace typeflow
