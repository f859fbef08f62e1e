// typeflow/backend/cuda/ops/apply.hpp — the optimizers' dense updates on the
// GPU: a thread per element runs the rule's own row function (Rule::row, a
// TYPEFLOW_HOST_DEVICE function) on that element, reading the
// hyperparameters from device memory.
#pragma once
#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::detail {
template <class T, std::size_t S, std::size_t H>
struct apply_ptrs {
    const T* s[S + 1]{};
    T* so[S + 1]{};
    const T* h[H + 1]{};  // each hyperparameter's one element
};
template <class Rule, class T>
__global__ void apply_kernel(const T* var, T* out, const apply_ptrs<T, Rule::slots, Rule::hypers> p, const T* g, index_t n) {
    T h[Rule::hypers + 1];
    for (std::size_t k = 0; k < Rule::hypers; ++k) h[k] = *p.h[k];
    for (index_t j = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += static_cast<index_t>(gridDim.x) * blockDim.x) {
        const T* s[Rule::slots + 1];
        T* so[Rule::slots + 1];
        for (std::size_t k = 0; k < Rule::slots; ++k) {
            s[k] = p.s[k] + j;
            so[k] = p.so[k] + j;
        }
        Rule::row(var + j, out + j, s, so, h, g + j, 1);
    }
}
}  // namespace typeflow::cuda::detail

namespace typeflow {

template <int N, class Rule>
struct kernel<gpu<N>, op::apply_dense<Rule>> {
    using Op = op::apply_dense<Rule>;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        const index_t count = ctx.dims_of(n.template child<Op::var_at>()).numel();
        if (count == 0) return;
        cuda::detail::apply_ptrs<T, Rule::slots, Rule::hypers> p;
        [&]<std::size_t... S, std::size_t... H>(std::index_sequence<S...>, std::index_sequence<H...>) {
            ((p.s[S] = ctx.input(n.template child<Op::slot_at + S>())), ...);
            ((p.so[S] = static_cast<T*>(ctx.output(1 + S))), ...);
            ((p.h[H] = ctx.input(n.template child<Op::hyper_at + H>())), ...);
        }(std::make_index_sequence<Rule::slots>{}, std::make_index_sequence<Rule::hypers>{});
        cuda::device_context& c = cuda::context<N>();
        cuda::detail::apply_kernel<Rule, T><<<cuda::grid_for(static_cast<std::size_t>(count), 256), 256, 0, c.stream>>>(
            ctx.input(n.template child<Op::var_at>()), out, p, ctx.input(n.template child<Op::grad_at>()), count);
        cuda::check_launch(Op::name);
    }
};

}  // namespace typeflow
