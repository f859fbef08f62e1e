// typeflow/kernel/control_flow.hpp — the kernels of the control-flow ops on a
// host device, shared by the CPU and reference backends (which name them in
// backend/<backend>/ops/cond.hpp and loop.hpp). The branches and iterations
// themselves are run by the plan (runtime/plan.hpp); these only copy.
#pragma once
#include <cstdint>
#include <cstring>

#include <typeflow/autodiff/loop.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::detail {

/// cond: the taken branch's value.
struct host_cond_kernel {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const bool p = *ctx.input(n.template child<0>());
        const value_type_t<N>* src = p ? ctx.input(n.template child<1>()) : ctx.input(n.template child<2>());
        const auto count = static_cast<std::size_t>(ctx.dims_of(n.template child<1>()).numel());
        if (count && src != out) std::memcpy(out, src, count * sizeof(value_type_t<N>));
    }
};
/// loop_var: its initial value (child 0); while_loop: the variable's final value (child 0).
struct host_copy_child0_kernel {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto count = static_cast<std::size_t>(ctx.dims_of(n.template child<0>()).numel());
        if (count) std::memcpy(out, ctx.input(n.template child<0>()), count * sizeof(value_type_t<N>));
    }
};
/// loop_counter: 0 before the loop.
struct host_counter_kernel {
    template <class N, class Ctx>
    static void run(const N&, const Ctx&, std::int32_t* out) {
        *out = 0;
    }
};
/// scan: nothing (the plan stacks the rows during the loop).
struct host_nothing_kernel {
    template <class N, class Ctx, class T>
    static void run(const N&, const Ctx&, T*) {}
};

}  // namespace typeflow::detail
