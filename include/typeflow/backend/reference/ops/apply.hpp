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
        const T* s[Rule::slots + 1] = {};
        T* so[Rule::slots + 1] = {};
        T h[Rule::hypers];
        [&]<std::size_t... S, std::size_t... H>(std::index_sequence<S...>, std::index_sequence<H...>) {
            ((s[S] = ctx.input(n.template child<Op::slot_at + S>())), ...);
            ((so[S] = static_cast<T*>(ctx.output(1 + S))), ...);
            ((h[H] = ctx.input(n.template child<Op::hyper_at + H>())[0]), ...);
        }(std::make_index_sequence<Rule::slots>{}, std::make_index_sequence<Rule::hypers>{});
        Rule::row(ctx.input(n.template child<Op::var_at>()), out, s, so, h, ctx.input(n.template child<Op::grad_at>()),
                  ctx.dims_of(n.template child<Op::var_at>()).numel());
    }
};

}  // namespace typeflow
