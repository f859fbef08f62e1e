// typeflow/backend/reference/ops/cond.hpp — reference kernel of cond: the taken branch's value.
#pragma once
#include <cstring>

#include <typeflow/autodiff/cond.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <>
struct kernel<reference, op::cond> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const bool p = *ctx.input(n.template child<0>());
        const value_type_t<N>* src = p ? ctx.input(n.template child<1>()) : ctx.input(n.template child<2>());
        const std::size_t count = static_cast<std::size_t>(ctx.dims_of(n.template child<1>()).numel());
        if (count && src != out) std::memcpy(out, src, count * sizeof(value_type_t<N>));
    }
};

}  // namespace typeflow
