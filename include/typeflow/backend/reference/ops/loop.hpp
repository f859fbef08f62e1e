// typeflow/backend/reference/ops/loop.hpp — kernels of the loop ops on device reference (the
// iterations themselves are run by the plan; see autodiff/loop.hpp).
#pragma once
#include <cstring>

#include <typeflow/autodiff/loop.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

/// loop_var: its initial value.
template <class Tag, bool Pure>
struct kernel<reference, op::loop_var<Tag, Pure>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto count = static_cast<std::size_t>(ctx.dims_of(n.template child<0>()).numel());
        if (count) std::memcpy(out, ctx.input(n.template child<0>()), count * sizeof(value_type_t<N>));
    }
};
/// loop_counter: 0 before the loop.
template <class Tag, class D, bool Pure>
struct kernel<reference, op::loop_counter<Tag, D, Pure>> {
    template <class N, class Ctx>
    static void run(const N&, const Ctx&, std::int32_t* out) {
        *out = 0;
    }
};
/// while_loop: the loop variable's final value; scan: the rows were stacked during the loop.
template <bool Stacked>
struct kernel<reference, op::loop<Stacked>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        if constexpr (!Stacked) {
            const auto count = static_cast<std::size_t>(ctx.dims_of(n.template child<0>()).numel());
            if (count) std::memcpy(out, ctx.input(n.template child<0>()), count * sizeof(value_type_t<N>));
        } else {
            (void)n, (void)ctx, (void)out;
        }
    }
};

}  // namespace typeflow
