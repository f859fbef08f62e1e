// typeflow/backend/cuda/ops/apply.hpp — the optimizers' dense updates on the
// GPU: for each variable of the node, a thread per element runs the rule's own
// row function (Rule::row, a TYPEFLOW_HOST_DEVICE function) on that element,
// reading the hyperparameters and counters from device memory; the first
// thread writes the counters' next values.
#pragma once
#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::detail {
template <class T, std::size_t S, std::size_t C, std::size_t H>
struct apply_ptrs {
    const T* s[S + 1]{};
    T* so[S + 1]{};
    const T* h[H + C + 1]{};  // each hyperparameter's one element, then each counter's
    T* counter_out[C + 1]{};
};
template <class Rule, class T>
__global__ void apply_kernel(const T* var, T* out, const apply_ptrs<T, Rule::slots, Rule::counters, Rule::hypers> p,
                             const T* g, index_t n) {
    constexpr std::size_t P = Rule::hypers + Rule::counters;
    T h[P + 1];
    for (std::size_t k = 0; k < P; ++k) h[k] = *p.h[k];
    if (blockIdx.x == 0 && threadIdx.x == 0)
        if constexpr (Rule::counters > 0)
            for (std::size_t c = 0; c < Rule::counters; ++c) *p.counter_out[c] = h[Rule::hypers + c] + T(1);
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

template <int D, class Rule, std::size_t N>
struct kernel<gpu<D>, op::apply_dense<Rule, N>> {
    using Op = op::apply_dense<Rule, N>;
    template <class Nd, class Ctx>
    static void run(const Nd&, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        const typeflow::detail::apply_node<Rule, T, N> node(ctx, out);
        cuda::device_context& c = cuda::context<D>();
        for (const auto& a : node.grp) {
            if (a.count == 0 && Rule::counters == 0) continue;
            cuda::detail::apply_ptrs<T, Rule::slots, Rule::counters, Rule::hypers> p;
            for (std::size_t k = 0; k < Rule::slots; ++k) p.s[k] = a.s[k], p.so[k] = a.so[k];
            for (std::size_t k = 0; k < Rule::hypers; ++k) p.h[k] = node.hyper[k];
            if constexpr (Rule::counters > 0)
                for (std::size_t k = 0; k < Rule::counters; ++k) p.h[Rule::hypers + k] = a.counter[k], p.counter_out[k] = a.counter_out[k];
            const std::size_t threads = a.count > 0 ? static_cast<std::size_t>(a.count) : 1;
            cuda::detail::apply_kernel<Rule, T><<<cuda::grid_for(threads, 256), 256, 0, c.stream>>>(a.var, a.out, p, a.g, a.count);
            cuda::check_launch(Op::name);
        }
    }
};

}  // namespace typeflow
