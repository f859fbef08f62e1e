// typeflow/backend/cuda/fused.hpp — the GPU evaluator of fused element-wise
// regions: one generated kernel per canonical form, from the ops' scalar
// functors (Op::apply, TYPEFLOW_HOST_DEVICE). The host lowers the region's
// layout (kernel/region.hpp) into a flat, trivially copyable plan (pointers,
// strides, extents) passed as the kernel's parameter; a plan too large for
// the parameter space goes through device memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/kernel/kernel.hpp>
#include <typeflow/kernel/region.hpp>

namespace typeflow::cuda {

/// The flat plan of one region run with K operands: what the kernel reads.
template <std::size_t K>
struct region_plan {
    index_t numel = 0;
    int rank = 0;  // collapsed output axes
    index_t extent[max_rank]{};
    const void* ptr[K]{};
    index_t stride[K][max_rank]{};  // per operand, in elements over the collapsed axes (0: broadcast)
    bool scalar[K]{};               // one element, read as a constant
};
/// Kernel parameters beyond this many bytes go through device memory (the
/// classic 4 KiB limit, kept for every toolkit and GPU).
inline constexpr std::size_t max_param_bytes = 4000;

namespace detail {
// The number of operand slots of a canonical form (1 + the largest position).
template <class C>
struct slot_count;
template <std::size_t Off, class T, bool S>
struct slot_count<region::operand_slot<Off, T, S>> {
    static constexpr std::size_t value = Off + 1;
};
template <class Op, class... C>
struct slot_count<region::canonical_node<Op, C...>> {
    static constexpr std::size_t value = [] {
        std::size_t m = 0;
        ((m = slot_count<C>::value > m ? slot_count<C>::value : m), ...);
        return m;
    }();
};

// A canonical form spelled afresh from its parts: nvcc writes each kernel's
// template arguments into generated host code as they were spelled, and a
// form reached through the graph's type would spell the graph (class-type
// template arguments the host compiler cannot read back there).
template <class C>
struct respell;
template <std::size_t Off, class T, bool S>
struct respell<region::operand_slot<Off, T, S>> {
    using type = region::operand_slot<Off, T, S>;
};
template <class Op, class... C>
struct respell<region::canonical_node<Op, C...>> {
    using type = region::canonical_node<Op, typename respell<C>::type...>;
};
template <class T>
T deduced(T*);

// The evaluator, on the device and (for tests) on the host.
// Element e of a region: offsets from the multi-index of e.
template <std::size_t Off, class T, bool Scalar, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ T element(region::operand_slot<Off, T, Scalar>, const region_plan<K>& p, const index_t* off) {
    return static_cast<const T*>(p.ptr[Off])[Scalar ? 0 : off[Off]];
}
template <class Op, class... C, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ auto element(region::canonical_node<Op, C...>, const region_plan<K>& p, const index_t* off) {
    return Op::apply(element(C{}, p, off)...);
}

// The contiguous case: every operand is read at e (or is a constant).
template <std::size_t Off, class T, bool Scalar, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ T element_flat(region::operand_slot<Off, T, Scalar>, const region_plan<K>& p, index_t e) {
    return static_cast<const T*>(p.ptr[Off])[(Scalar || p.scalar[Off]) ? 0 : e];
}
template <class Op, class... C, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ auto element_flat(region::canonical_node<Op, C...>, const region_plan<K>& p, index_t e) {
    return Op::apply(element_flat(C{}, p, e)...);
}

// W consecutive elements of an operand in one aligned load.
template <class T, int W>
struct alignas(sizeof(T) * W) vec {
    T v[W];
};
template <int W, std::size_t Off, class T, bool Scalar, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ T element_vec(region::operand_slot<Off, T, Scalar>, const region_plan<K>& p, index_t v, int lane) {
    if (Scalar || p.scalar[Off]) return *static_cast<const T*>(p.ptr[Off]);
    return static_cast<const vec<T, W>*>(p.ptr[Off])[v].v[lane];
}
template <int W, class Op, class... C, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ auto element_vec(region::canonical_node<Op, C...>, const region_plan<K>& p, index_t v, int lane) {
    return Op::apply(element_vec<W>(C{}, p, v, lane)...);
}

/// Output element e of a region (any broadcasting).
template <class Canon, class T, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ void eval_strided_at(const region_plan<K>& p, T* out, index_t e) {
    index_t off[K];
    for (std::size_t k = 0; k < K; ++k) off[k] = 0;
    index_t f = e;
    for (int a = p.rank; a-- > 0;) {
        const index_t i = f % p.extent[a];
        f /= p.extent[a];
        for (std::size_t k = 0; k < K; ++k) off[k] += i * p.stride[k][a];
    }
    out[e] = static_cast<T>(element(Canon{}, p, off));
}
/// Output elements [W v, W v + W) of a contiguous region, one vector store.
template <class Canon, class T, std::size_t K, int W>
TYPEFLOW_HOST_DEVICE __forceinline__ void eval_vec_at(const region_plan<K>& p, T* out, index_t v) {
    vec<T, W> r;
#pragma unroll
    for (int l = 0; l < W; ++l) r.v[l] = static_cast<T>(element_vec<W>(Canon{}, p, v, l));
    reinterpret_cast<vec<T, W>*>(out)[v] = r;
}
/// Output element e of a contiguous region (the tail after the vectors).
template <class Canon, class T, std::size_t K>
TYPEFLOW_HOST_DEVICE __forceinline__ void eval_flat_at(const region_plan<K>& p, T* out, index_t e) {
    out[e] = static_cast<T>(element_flat(Canon{}, p, e));
}

template <class Canon, class T, std::size_t K>
__device__ __forceinline__ void run_strided(const region_plan<K>& p, T* out) {
    const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < p.numel; e += stride)
        eval_strided_at<Canon, T, K>(p, out, e);
}
template <class Canon, class T, std::size_t K>
__global__ void region_strided(const region_plan<K> p, T* out) {
    run_strided<Canon, T, K>(p, out);
}
template <class Canon, class T, std::size_t K>
__global__ void region_strided_ref(const region_plan<K>* p, T* out) {
    run_strided<Canon, T, K>(*p, out);
}

// Contiguous operands, W elements per thread through vector loads and one vector store.
template <class Canon, class T, std::size_t K, int W>
__device__ __forceinline__ void run_vec(const region_plan<K>& p, T* out) {
    const index_t nv = p.numel / W;
    const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t v = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < nv; v += stride)
        eval_vec_at<Canon, T, K, W>(p, out, v);
    for (index_t e = nv * W + static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < p.numel; e += stride)
        eval_flat_at<Canon, T, K>(p, out, e);
}
template <class Canon, class T, std::size_t K, int W>
__global__ void region_vec(const region_plan<K> p, T* out) {
    run_vec<Canon, T, K, W>(p, out);
}
template <class Canon, class T, std::size_t K, int W>
__global__ void region_vec_ref(const region_plan<K>* p, T* out) {
    run_vec<Canon, T, K, W>(*p, out);
}

// Operand element sizes of a canonical form, by slot (for the vector path's alignment).
template <class C, std::size_t K>
struct slot_sizes;
template <std::size_t Off, class T, bool S, std::size_t K>
struct slot_sizes<region::operand_slot<Off, T, S>, K> {
    static constexpr void fill(std::size_t* out) { out[Off] = sizeof(T); }
};
template <class Op, class... C, std::size_t K>
struct slot_sizes<region::canonical_node<Op, C...>, K> {
    static constexpr void fill(std::size_t* out) { (slot_sizes<C, K>::fill(out), ...); }
};

// A plan kept in device memory for kernels whose plan exceeds the parameter space.
template <int N>
void* plan_buffer(std::size_t bytes) {
    thread_local void* buf = nullptr;
    thread_local std::size_t have = 0;
    if (have < bytes) {
        device_context& c = context<N>();
        if (buf) {
            check(cudaStreamSynchronize(c.stream), "fused region", "cudaStreamSynchronize");
            check(cudaFree(buf), "fused region", "cudaFree");
            buf = nullptr;
            have = 0;
        }
        check(cudaMalloc(&buf, bytes), "fused region", "cudaMalloc (region plan)");
        have = bytes;
    }
    return buf;
}
}  // namespace detail

/// Lowers a region's layout into the flat plan its kernel reads.
template <std::size_t K>
region_plan<K> lower(const region::layout& lay, const void* const* base) {
    region_plan<K> p;
    p.numel = lay.numel;
    p.rank = static_cast<int>(lay.rank);
    for (std::size_t a = 0; a < lay.rank; ++a) p.extent[a] = lay.extent[a];
    for (std::size_t k = 0; k < lay.operands.size() && k < K; ++k) {
        p.ptr[k] = base[k];
        p.scalar[k] = lay.operands[k].scalar;
        for (std::size_t a = 0; a < lay.rank; ++a) p.stride[k][a] = lay.operands[k].stride[a];
    }
    return p;
}

/// True when every operand of the plan is read at the output's own index
/// (contiguous, no broadcasting) or is a constant.
template <std::size_t K>
bool contiguous(const region_plan<K>& p) {
    if (p.rank > 1) return false;
    for (std::size_t k = 0; k < K; ++k)
        if (!p.scalar[k] && p.rank == 1 && p.stride[k][0] != 1) return false;
    return true;
}

/// Elements per thread of the vector path for output type T.
template <class T>
inline constexpr int vector_width = sizeof(T) <= 4 ? 4 : 2;

/// True when a region of form Canon writing T at `out` takes the vector path:
/// contiguous operands and every pointer aligned for its vector load.
template <class Canon, class T, std::size_t K>
bool takes_vector_path(const region_plan<K>& p, const void* out) {
    constexpr int W = vector_width<T>;
    if (!contiguous(p) || p.numel < W) return false;
    std::size_t sizes[K]{};
    detail::slot_sizes<Canon, K>::fill(sizes);
    const auto aligned = [](const void* q, std::size_t a) { return reinterpret_cast<std::uintptr_t>(q) % a == 0; };
    bool ok = aligned(out, sizeof(T) * W);
    for (std::size_t k = 0; k < K; ++k) ok = ok && (p.scalar[k] || aligned(p.ptr[k], sizes[k] * W));
    return ok;
}

/// Evaluates a lowered region on the host with the device's evaluator (the
/// same decisions and element functions; tests compare it with the CPU backend).
template <class Canon, class T, std::size_t K>
void eval_on_host(const region_plan<K>& p, T* out) {
    constexpr int W = vector_width<T>;
    if (takes_vector_path<Canon, T, K>(p, out)) {
        const index_t nv = p.numel / W;
        for (index_t v = 0; v < nv; ++v) detail::eval_vec_at<Canon, T, K, W>(p, out, v);
        for (index_t e = nv * W; e < p.numel; ++e) detail::eval_flat_at<Canon, T, K>(p, out, e);
    } else {
        for (index_t e = 0; e < p.numel; ++e) detail::eval_strided_at<Canon, T, K>(p, out, e);
    }
}

}  // namespace typeflow::cuda

namespace typeflow {

/// The GPU evaluator of fused regions: one kernel launch per region.
template <int N>
struct fused<gpu<N>> {
    template <class Form, class T>
    static void eval(const region::layout& lay, const void* const* base, void* out, const parallel_ctx&) {
        using Canon = decltype(cuda::detail::deduced(static_cast<typename cuda::detail::respell<Form>::type*>(nullptr)));
        constexpr std::size_t K = cuda::detail::slot_count<Canon>::value;
        if (lay.numel == 0) return;
        if (lay.operands.size() != K)
            typeflow::detail::raise(typeflow::detail::message() << "fused region on gpu:" << N << ": " << lay.operands.size()
                                                                << " operands for a form of " << K);
        cuda::device_context& c = cuda::context<N>();
        const cuda::region_plan<K> p = cuda::lower<K>(lay, base);
        T* o = static_cast<T*>(out);
        constexpr unsigned threads = 256;
        constexpr int W = cuda::vector_width<T>;
        const bool vec = cuda::takes_vector_path<Canon, T, K>(p, o);
        const std::size_t items = vec ? static_cast<std::size_t>(p.numel) / W : static_cast<std::size_t>(p.numel);
        const unsigned grid = cuda::grid_for(items, threads);
        if constexpr (sizeof(p) <= cuda::max_param_bytes) {
            if (vec) cuda::detail::region_vec<Canon, T, K, W><<<grid, threads, 0, c.stream>>>(p, o);
            else cuda::detail::region_strided<Canon, T, K><<<grid, threads, 0, c.stream>>>(p, o);
        } else {
            // its plan is copied from the host at every run: a CUDA graph would keep this run's copy
            if (cuda::recording(c))
                typeflow::detail::raise(typeflow::detail::message()
                                        << "fused element-wise region: a plan beyond the kernel parameter space cannot be recorded");
            auto* dp = static_cast<cuda::region_plan<K>*>(cuda::detail::plan_buffer<N>(sizeof(p)));
            cuda::check(cudaMemcpyAsync(dp, &p, sizeof(p), cudaMemcpyHostToDevice, c.stream), "fused region",
                        "cudaMemcpyAsync (region plan)");
            if (vec) cuda::detail::region_vec_ref<Canon, T, K, W><<<grid, threads, 0, c.stream>>>(dp, o);
            else cuda::detail::region_strided_ref<Canon, T, K><<<grid, threads, 0, c.stream>>>(dp, o);
        }
        cuda::check_launch("fused element-wise region");
    }
};

}  // namespace typeflow
