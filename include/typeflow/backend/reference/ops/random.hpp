// typeflow/backend/reference/ops/random.hpp — reference kernels of the dropout
// masks (expr/ops/random.hpp): one plain loop over the elements, drawing each
// from (seed, run, index) as the CPU kernel does.
#pragma once
#include <cstdint>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/random.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <double Rate, std::uint64_t Seed>
struct kernel<reference, op::dropout_mask<Rate, Seed>> {
    using state = dropout_state;
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const std::uint64_t stream = detail::random_stream(Seed, ctx.template state<dropout_state>().runs++);
        const index_t count = ctx.dims_of(n.template child<0>()).numel();
        for (index_t i = 0; i < count; ++i)
            out[i] = detail::random_uniform(stream, static_cast<std::uint64_t>(i)) >= Rate ? detail::dropout_scale<T>(Rate)
                                                                                           : T(0);
    }
};

template <>
struct kernel<reference, op::dropout_mask_fed> {
    using state = dropout_state;
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const double rate = static_cast<double>(*ctx.input(n.template child<1>()));
        detail::check_dropout_rate(rate);
        const auto seed = static_cast<std::uint64_t>(*ctx.input(n.template child<2>()));
        const std::uint64_t stream = detail::random_stream(seed, ctx.template state<dropout_state>().runs++);
        const index_t count = ctx.dims_of(n.template child<0>()).numel();
        for (index_t i = 0; i < count; ++i)
            out[i] = detail::random_uniform(stream, static_cast<std::uint64_t>(i)) >= rate ? detail::dropout_scale<T>(rate)
                                                                                           : T(0);
    }
};

}  // namespace typeflow
