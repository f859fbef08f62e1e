// typeflow/backend/cuda/ops/random.hpp — the dropout masks on a GPU. Each
// element is drawn from (seed, run, index) alone by the CPU's counter-based
// generator (expr/ops/random.hpp), so a GPU mask equals the CPU's bit for bit.
// The node's run counter lives in device memory and a one-thread kernel
// advances it after each mask, so a run recorded as a CUDA graph draws a new
// mask at every replay. A fed rate outside [0, 1) is reported through the
// GPU's error word and raised as the CPU's tf::error when the run's work is
// done (the counter does not advance, as on the CPU).
#pragma once
#include <cmath>
#include <cstdint>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/expr/ops/random.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::random {

/// A mask's threshold (its 53-bit uniforms >= it are kept) and the kept
/// elements' value, for a rate in [0, 1): the CPU's dropout_threshold and
/// dropout_scale.
template <class T>
struct mask_params {
    std::uint64_t threshold;
    T scale;
};
template <class T>
TYPEFLOW_HOST_DEVICE mask_params<T> params_of(double rate) {
    return {static_cast<std::uint64_t>(ceil(rate * 0x1.0p53)), static_cast<T>(1.0 / (1.0 - rate))};
}
/// Element i of the mask of a stream.
template <class T>
TYPEFLOW_HOST_DEVICE T mask_at(std::uint64_t stream, index_t i, const mask_params<T>& p) {
    using typeflow::detail::golden_gamma;
    return typeflow::detail::mix64(stream + (static_cast<std::uint64_t>(i) + 1) * golden_gamma) >> 11 >= p.threshold ? p.scale : T(0);
}
TYPEFLOW_HOST_DEVICE inline bool rate_ok(double rate) { return rate >= 0.0 && rate < 1.0; }

/// A dropout node's state on a GPU: its runs drawn, one counter in device memory.
struct counter {
    device_scratch mem;
    bool zeroed = false;
    std::uint64_t* get(device_context& c, std::string_view what) {
        auto* p = static_cast<std::uint64_t*>(mem.reserve(c, sizeof(std::uint64_t), what));
        if (!zeroed) {
            check(cudaMemsetAsync(p, 0, sizeof(std::uint64_t), c.stream), what, "cudaMemsetAsync");
            zeroed = true;
        }
        return p;
    }
};

namespace detail {
// The rate and seed: static ones, or fed ones read from device memory.
template <class T>
struct source {
    double rate = 0;
    std::uint64_t seed = 0;
    const T* fed_rate = nullptr;
    const std::int64_t* fed_seed = nullptr;
    TYPEFLOW_HOST_DEVICE double rate_now() const { return fed_rate ? static_cast<double>(*fed_rate) : rate; }
    TYPEFLOW_HOST_DEVICE std::uint64_t seed_now() const { return fed_seed ? static_cast<std::uint64_t>(*fed_seed) : seed; }
};
template <class T>
__global__ void mask_kernel(T* out, index_t n, const std::uint64_t* runs, const source<T> src, error_word* err) {
    const double rate = src.rate_now();
    if (!rate_ok(rate)) {
        if (blockIdx.x == 0 && threadIdx.x == 0 && atomicCAS(&err->code, 0, error_dropout_rate) == 0)
            err->a = __double_as_longlong(rate);
        return;
    }
    const mask_params<T> p = params_of<T>(rate);
    const std::uint64_t stream = typeflow::detail::random_stream(src.seed_now(), *runs);
    for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<index_t>(gridDim.x) * blockDim.x)
        out[i] = mask_at(stream, i, p);
}
template <class T>
__global__ void advance_kernel(std::uint64_t* runs, const source<T> src) {
    if (rate_ok(src.rate_now())) ++*runs;
}
}  // namespace detail

/// Queues the mask of n elements at out and the advance of the run counter.
template <int N, class T>
void dropout(T* out, index_t n, counter& st, const detail::source<T>& src) {
    device_context& c = context<N>();
    std::uint64_t* runs = st.get(c, "dropout");
    detail::mask_kernel<T><<<grid_for(static_cast<std::size_t>(n > 0 ? n : 1), 256), 256, 0, c.stream>>>(out, n, runs, src,
                                                                                                       device_error_word(c));
    check_launch("dropout");
    detail::advance_kernel<T><<<1, 1, 0, c.stream>>>(runs, src);
    check_launch("dropout");
}

}  // namespace typeflow::cuda::random

namespace typeflow {

template <int N, double Rate, std::uint64_t Seed>
struct kernel<gpu<N>, op::dropout_mask<Rate, Seed>> {
    using state = cuda::random::counter;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        cuda::random::detail::source<value_type_t<Nd>> src;
        src.rate = Rate;
        src.seed = Seed;
        cuda::random::dropout<N>(out, ctx.dims_of(n.template child<0>()).numel(), ctx.template state<cuda::random::counter>(), src);
    }
};

template <int N>
struct kernel<gpu<N>, op::dropout_mask_fed> {
    using state = cuda::random::counter;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        cuda::random::detail::source<value_type_t<Nd>> src;
        src.fed_rate = ctx.input(n.template child<1>());
        src.fed_seed = ctx.input(n.template child<2>());
        cuda::random::dropout<N>(out, ctx.dims_of(n.template child<0>()).numel(), ctx.template state<cuda::random::counter>(), src);
    }
};

}  // namespace typeflow
