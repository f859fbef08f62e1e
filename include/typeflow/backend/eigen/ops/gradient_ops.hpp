// typeflow/backend/eigen/ops/gradient_ops.hpp — CPU kernels of reduced_count and sum_like.
#pragma once
#include <typeflow/backend/eigen/ops/reduce.hpp>
#include <typeflow/kernel/kernel.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>

namespace typeflow {

template <index_t... Axes>
struct kernel<cpu, op::reduced_count<Axes...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        *out = static_cast<value_type_t<N>>(op::reduced_count<Axes...>::count(ctx.dims_of(n.template child<0>())));
    }
};

// (a run that sums nothing forwards G instead: see op::sum_like::forwards)
template <>
struct kernel<cpu, op::sum_like> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims g = ctx.dims_of(n.template child<0>());
        backend::eigen::reduce_into<reduction::sum>(ctx.input(n.template child<0>()), g,
                                                    op::sum_like::axes(g, ctx.dims_of(n.template child<1>())), out,
                                                    ctx.par);
    }
};

}  // namespace typeflow
