// typeflow/backend/reference/ops/apply.hpp — reference apply_dense: the rule's
// loop over every element, on one thread.
#pragma once
#include <cstddef>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <class Rule>
struct kernel<reference, op::apply_dense<Rule>> {
    using Op = op::apply_dense<Rule>;
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const typeflow::detail::apply_operands<Rule, T> a(n, ctx);
        Rule::row(ctx.input(n.template child<Op::var_at>()), out, a.s, a.so, a.h,
                  ctx.input(n.template child<Op::grad_at>()), ctx.dims_of(n.template child<Op::var_at>()).numel());
    }
};

}  // namespace typeflow
