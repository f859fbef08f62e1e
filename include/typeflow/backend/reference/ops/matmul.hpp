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
        const auto z = op::matmul<TA, TB>::sizes_of(a, b);
        const index_t m = z.m, k = z.k, nn = z.n, ac = z.lda, bc = z.ldb;
        for (index_t t = 0; t < z.batches; ++t) {
            const T* A = pa + t * z.sa;  // a 2-D operand serves every batch
            const T* B = pb + t * z.sb;
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
