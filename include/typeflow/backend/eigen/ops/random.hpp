// typeflow/backend/eigen/ops/random.hpp — CPU kernels of the dropout masks
// (expr/ops/random.hpp). Each element is drawn from (seed, run, index) alone,
// so the elements are split over the session's threads and every split
// draws the same mask as the reference kernel.
#pragma once
#include <cstdint>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/random.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

namespace backend::eigen {
/// Elements of a mask below which it is drawn on one thread.
inline constexpr index_t parallel_dropout_grain = 32768;

/// The dropout mask of `count` elements for one run's stream, on par's threads.
template <class T>
void dropout_mask_into(T* out, index_t count, double rate, std::uint64_t stream, const parallel_ctx& par) {
    const T s = typeflow::detail::dropout_scale<T>(rate);
    const std::uint64_t threshold = typeflow::detail::dropout_threshold(rate);
    if (par.threads < 2 || count < 2 * parallel_dropout_grain)
        return typeflow::detail::dropout_mask_range(out, 0, count, threshold, s, stream);
    par.for_range(count, parallel_dropout_grain, [&](std::size_t, index_t b, index_t e) {
        typeflow::detail::dropout_mask_range(out, b, e, threshold, s, stream);
    });
}
}  // namespace backend::eigen

template <double Rate, std::uint64_t Seed>
struct kernel<cpu, op::dropout_mask<Rate, Seed>> {
    using state = dropout_state;
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const std::uint64_t stream = detail::random_stream(Seed, ctx.template state<dropout_state>().runs++);
        backend::eigen::dropout_mask_into(out, ctx.dims_of(n.template child<0>()).numel(), Rate, stream, ctx.par);
    }
};

template <>
struct kernel<cpu, op::dropout_mask_fed> {
    using state = dropout_state;
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const double rate = static_cast<double>(*ctx.input(n.template child<1>()));
        detail::check_dropout_rate(rate);
        const auto seed = static_cast<std::uint64_t>(*ctx.input(n.template child<2>()));
        const std::uint64_t stream = detail::random_stream(seed, ctx.template state<dropout_state>().runs++);
        backend::eigen::dropout_mask_into(out, ctx.dims_of(n.template child<0>()).numel(), rate, stream, ctx.par);
    }
};

}  // namespace typeflow
