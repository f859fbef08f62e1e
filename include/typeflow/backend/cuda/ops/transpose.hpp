// typeflow/backend/cuda/ops/transpose.hpp — permute (transpose) on the GPU:
// a thread per output element, reading the input through permuted strides.
#pragma once
#include <array>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/expr/ops/transpose.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::detail {
struct permute_plan {
    int rank = 0;
    index_t numel = 0;
    index_t ext[max_rank]{}, st[max_rank]{};  // output extents; the input stride of each output axis
};
template <class T>
__global__ void permute_kernel(const T* in, T* out, const permute_plan p) {
    const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < p.numel; e += stride) {
        index_t f = e, off = 0;
        for (int a = p.rank; a-- > 0;) {
            off += (f % p.ext[a]) * p.st[a];
            f /= p.ext[a];
        }
        out[e] = in[off];
    }
}
}  // namespace typeflow::cuda::detail

namespace typeflow {

template <int N, std::size_t... P>
struct kernel<gpu<N>, op::permute<P...>> {
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        constexpr std::size_t r = sizeof...(P);
        constexpr std::array<std::size_t, r + 1> perm{P..., 0};
        const std::array<index_t, max_rank> in_stride = strides_of(d);
        cuda::detail::permute_plan p;
        p.rank = static_cast<int>(r);
        p.numel = d.numel();
        for (std::size_t i = 0; i < r; ++i) {
            p.ext[i] = d.d[perm[i]];
            p.st[i] = in_stride[perm[i]];
        }
        if (p.numel == 0) return;
        cuda::device_context& c = cuda::context<N>();
        cuda::detail::permute_kernel<<<cuda::grid_for(static_cast<std::size_t>(p.numel), 256), 256, 0, c.stream>>>(
            ctx.input(n.template child<0>()), out, p);
        cuda::check_launch("transpose");
    }
};

}  // namespace typeflow
