// typeflow/backend/eigen/ops/apply.hpp — CPU kernel of apply_dense: one pass
// over the variable, its slots and the gradient (split over threads for
// large variables), writing the new values to the node's outputs.
#pragma once
#include <algorithm>
#include <cstddef>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <class Rule>
struct kernel<cpu, op::apply_dense<Rule>> {
    using Op = op::apply_dense<Rule>;
    /// Elements a thread updates at least.
    static constexpr index_t grain = index_t{1} << 15;

    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const T* var = ctx.input(n.template child<Op::var_at>());
        const T* g = ctx.input(n.template child<Op::grad_at>());
        const index_t count = ctx.dims_of(n.template child<Op::var_at>()).numel();
        const typeflow::detail::apply_operands<Rule, T> a(n, ctx);
        const auto part = [&](std::size_t, index_t b, index_t e) {
            const T* sb[Rule::slots + 1] = {};
            T* sob[Rule::slots + 1] = {};
            for (std::size_t q = 0; q < Rule::slots; ++q) sb[q] = a.s[q] + b, sob[q] = a.so[q] + b;
            Rule::row(var + b, out + b, sb, sob, a.h, g + b, e - b);
        };
        if (ctx.par.threads > 1 && count >= 2 * grain) ctx.par.for_range(count, grain, part);
        else part(0, 0, count);
    }
};

}  // namespace typeflow
