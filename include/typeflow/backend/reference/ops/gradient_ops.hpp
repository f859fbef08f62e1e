// typeflow/backend/reference/ops/gradient_ops.hpp — reference reduced_count and sum_like.
#pragma once
#include <typeflow/backend/reference/ops/reduce.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <index_t... Axes>
struct kernel<reference, op::reduced_count<Axes...>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        *out = static_cast<value_type_t<N>>(op::reduced_count<Axes...>::count(ctx.dims_of(n.template child<0>())));
    }
};

template <>
struct kernel<reference, op::sum_like> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims g = ctx.dims_of(n.template child<0>());
        backend::reference::reduce_into<reduction::sum>(ctx.input(n.template child<0>()), g,
                                                        op::sum_like::axes(g, ctx.dims_of(n.template child<1>())), out);
    }
};

}  // namespace typeflow
