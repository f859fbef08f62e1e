// typeflow/backend/reference/ops/apply.hpp — reference apply_dense: the rule's
// loop over every element of each variable, on one thread.
#pragma once
#include <cstddef>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <class Rule, std::size_t N>
struct kernel<reference, op::apply_dense<Rule, N>> {
    template <class Nd, class Ctx>
    static void run(const Nd&, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        const typeflow::detail::apply_node<Rule, T, N> node(ctx, out);
        for (const auto& a : node.grp) {
            T h[Rule::hypers + Rule::counters];
            typeflow::detail::apply_params(a, node.hyper, h);
            Rule::row(a.var, a.out, a.s, a.so, h, a.g, a.count);
            typeflow::detail::apply_count(a, h);
        }
    }
};

}  // namespace typeflow
