// typeflow/backend/cuda/runtime.hpp — what every CUDA kernel of typeflow
// shares: status checks that raise tf::error, one stream and one cuBLAS
// handle per GPU, the memory space of gpu<N>, and the error word kernels
// report bad input through. Compiled only by nvcc.
#pragma once
#if !defined(__CUDACC__)
#error "typeflow/backend/cuda needs nvcc (the CPU library compiles without it)"
#endif
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>

#include <typeflow/core/device.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/expr/ops/linalg.hpp>
#include <typeflow/expr/ops/random.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda {

/// Raises a tf::error naming what failed (`what`: the node or the runtime
/// step) and the CUDA call, when `st` is not cudaSuccess.
inline void check(cudaError_t st, std::string_view what, const char* call) {
    if (st == cudaSuccess) return;
    (void)cudaGetLastError();  // a non-sticky error must not fail the next call
    typeflow::detail::raise(typeflow::detail::message() << what << ": " << call << " failed: " << cudaGetErrorName(st)
                                                        << " (" << cudaGetErrorString(st) << ")");
}
/// The same for a cuBLAS status.
inline void check(cublasStatus_t st, std::string_view what, const char* call) {
    if (st == CUBLAS_STATUS_SUCCESS) return;
    typeflow::detail::raise(typeflow::detail::message() << what << ": " << call << " failed: " << cublasGetStatusName(st)
                                                        << " (" << cublasGetStatusString(st) << ")");
}
/// Work items typeflow has queued on its GPUs in this process (kernels,
/// cuBLAS calls, copies): what a benchmark divides by the steps it ran.
inline std::atomic<unsigned long long>& launch_count() {
    static std::atomic<unsigned long long> n{0};
    return n;
}
/// Checks the launch of the kernel that `what` just queued.
inline void check_launch(std::string_view what) {
    launch_count().fetch_add(1, std::memory_order_relaxed);
    check(cudaGetLastError(), what, "kernel launch");
}

/// What a kernel reports about bad input (an out-of-range label): the first
/// report wins; the host reads it when the stream's work is done.
struct error_word {
    int code = 0;  // 0: none
    long long a = 0, b = 0, c = 0;
    const char* what = nullptr;  // the reporting op's name (host memory; kernels only copy the address)
    long long what_len = 0;
};
enum : int { error_label_out_of_range = 1, error_dropout_rate = 2, error_index_out_of_range = 3, error_singular = 4 };

/// Raises the tf::error of a report (the CPU's own where there is one).
inline void raise_error(const error_word& e, int gpu) {
    if (e.code == error_label_out_of_range)
        typeflow::detail::raise(typeflow::detail::message() << "one_hot: label " << e.a << " at flat index " << e.b
                                                            << " is out of range [0, " << e.c << ")");
    if (e.code == error_dropout_rate) {  // a: the rate's bits
        double rate = 0;
        std::memcpy(&rate, &e.a, sizeof rate);
        typeflow::detail::check_dropout_rate(rate);  // the CPU's tf::error
    }
    if (e.code == error_index_out_of_range)  // a: the index's position, b: its value, c: the extent
        typeflow::detail::raise_index_out_of_range(std::string_view(e.what, static_cast<std::size_t>(e.what_len)), e.a, e.b,
                                                   e.c);
    if (e.code == error_singular) {  // a: the matrix's extent
        dims d;
        d.rank = 2;
        d.d[0] = d.d[1] = e.a;
        typeflow::detail::throw_singular(std::string_view(e.what, static_cast<std::size_t>(e.what_len)), d);
    }
    typeflow::detail::raise(typeflow::detail::message() << "gpu:" << gpu << ": a kernel reported error " << e.code);
}

/// One GPU as typeflow uses it: its stream (every kernel and copy of
/// typeflow's runs on it, in order), its cuBLAS handle, a buffer of ones for
/// reductions through GEMV, and the error word.
struct device_context {
    int index = 0;
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    cublasLtHandle_t lt = nullptr;  // cuBLASLt: GEMMs with a bias (and ReLU) epilogue
    error_word* err = nullptr;  // mapped pinned host memory: kernels write it, the host reads it
    void* ones = nullptr;       // `ones_count` floats of 1 (doubles: `ones_d`)
    std::size_t ones_count = 0;
    void* ones_d = nullptr;
    std::size_t ones_d_count = 0;
    void* blas_workspace = nullptr;  // cuBLAS's workspace, fixed: a recorded GEMM keeps using it
    // held by a run (and by each copy) on this GPU: work from other threads does not
    // interleave with it, nor land in a recording of it
    std::recursive_mutex gate;

    /// Makes this GPU current on the calling thread.
    void activate() const { check(cudaSetDevice(index), "gpu:" + std::to_string(index), "cudaSetDevice"); }
};

/// Bytes of the cuBLAS and cuBLASLt workspace of each GPU (NVIDIA's
/// recommendation for Hopper: 32 MiB).
inline constexpr std::size_t blas_workspace_bytes = std::size_t{32} << 20;

namespace detail {
inline void init_context(device_context& c, int n) {
    const std::string who = "gpu:" + std::to_string(n);
    int count = 0;
    const cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess || n >= count) {
        (void)cudaGetLastError();
        typeflow::detail::raise(typeflow::detail::message()
                                << who << ": no such CUDA device in this process ("
                                << (st != cudaSuccess ? cudaGetErrorString(st) : "found " + std::to_string(count) + " devices")
                                << "); place the graph on tf::cpu, or run it where a GPU is present");
    }
    c.index = n;
    check(cudaSetDevice(n), who, "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), who, "cudaStreamCreateWithFlags");
    check(cublasCreate(&c.blas), who, "cublasCreate");
    check(cublasSetStream(c.blas, c.stream), who, "cublasSetStream");
    // full fp32 GEMMs (no TF32), as the CPU backend computes them
    check(cublasSetMathMode(c.blas, CUBLAS_DEFAULT_MATH), who, "cublasSetMathMode");
    // a workspace of its own (after cublasSetStream, which resets it): cuBLAS then allocates
    // nothing while a run is recorded as a CUDA graph
    check(cudaMalloc(&c.blas_workspace, blas_workspace_bytes), who, "cudaMalloc (cuBLAS workspace)");
    check(cublasSetWorkspace(c.blas, c.blas_workspace, blas_workspace_bytes), who, "cublasSetWorkspace");
    check(cublasLtCreate(&c.lt), who, "cublasLtCreate");
    check(cudaHostAlloc(reinterpret_cast<void**>(&c.err), sizeof(error_word), cudaHostAllocMapped), who, "cudaHostAlloc");
    *c.err = error_word{};
}
}  // namespace detail

/// The context of GPU N, made on first use (a tf::error when the process has
/// no such device). Never destroyed: kernels may still be queued at exit.
template <int N>
device_context& context() {
    static device_context* c = [] {
        auto* p = new device_context;
        detail::init_context(*p, N);
        return p;
    }();
    return *c;
}

/// Raises the error a kernel of this GPU reported, once its work is done.
inline void raise_reported(device_context& c) {
    const volatile error_word* w = c.err;
    const error_word e{w->code, w->a, w->b, w->c, w->what, w->what_len};
    if (e.code == 0) return;
    *c.err = error_word{};
    raise_error(e, c.index);
}

/// Waits for GPU N's queued work and raises what its kernels reported.
template <int N>
void finish() {
    device_context& c = context<N>();
    check(cudaStreamSynchronize(c.stream), "gpu:" + std::to_string(N), "cudaStreamSynchronize");
    raise_reported(c);
}

/// The device address of the error word (kernels write it).
inline error_word* device_error_word(const device_context& c) {
    void* p = nullptr;
    check(cudaHostGetDevicePointer(&p, c.err, 0), "gpu:" + std::to_string(c.index), "cudaHostGetDevicePointer");
    return static_cast<error_word*>(p);
}

namespace detail {
template <class T>
__global__ void fill_kernel(T* p, std::size_t n, T v) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) p[i] = v;
}
}  // namespace detail

/// A grid of `threads`-thread blocks covering n items, capped (grid-stride loops do the rest).
inline unsigned grid_for(std::size_t n, unsigned threads, unsigned cap = 132 * 32) {
    const std::size_t b = (n + threads - 1) / threads;
    return static_cast<unsigned>(b == 0 ? 1 : b < cap ? b : cap);
}

/// Fills n elements at p with v on c's stream.
template <class T>
void fill(device_context& c, T* p, std::size_t n, T v, std::string_view what) {
    if (n == 0) return;
    detail::fill_kernel<T><<<grid_for(n, 256), 256, 0, c.stream>>>(p, n, v);
    check_launch(what);
}

/// A device buffer of at least n ones (float or double), kept by the context.
template <class T>
const T* ones(device_context& c, std::size_t n, std::string_view what) {
    void*& buf = std::is_same_v<T, double> ? c.ones_d : c.ones;
    std::size_t& have = std::is_same_v<T, double> ? c.ones_d_count : c.ones_count;
    if (have < n) {
        if (buf) {
            check(cudaStreamSynchronize(c.stream), what, "cudaStreamSynchronize");
            check(cudaFree(buf), what, "cudaFree");
            buf = nullptr;
            have = 0;
        }
        const std::size_t want = n < 4096 ? 4096 : n;
        check(cudaMalloc(&buf, want * sizeof(T)), what, "cudaMalloc");
        fill(c, static_cast<T*>(buf), want, T(1), what);
        have = want;
    }
    return static_cast<const T*>(buf);
}

/// Device scratch memory a kernel node keeps across runs (in its state),
/// grown when a run needs more; freed once the GPU's queued work is done.
struct device_scratch {
    void* p = nullptr;
    std::size_t bytes = 0;
    cudaStream_t stream = nullptr;

    device_scratch() = default;
    device_scratch(const device_scratch&) = delete;
    device_scratch& operator=(const device_scratch&) = delete;
    ~device_scratch() {
        if (p) {
            (void)cudaStreamSynchronize(stream);
            (void)cudaFree(p);
        }
    }
    /// At least `want` bytes on c's GPU; running out of memory is a tf::error
    /// naming `what` (the op) and the bytes.
    void* reserve(device_context& c, std::size_t want, std::string_view what) {
        if (want <= bytes) return p;
        if (p) {
            check(cudaStreamSynchronize(c.stream), what, "cudaStreamSynchronize");
            check(cudaFree(p), what, "cudaFree");
            p = nullptr, bytes = 0;
        }
        stream = c.stream;
        const cudaError_t st = cudaMalloc(&p, want);
        if (st == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            p = nullptr;
            typeflow::detail::raise(typeflow::detail::message() << what << ": out of GPU memory for " << want << " bytes of scratch");
        }
        check(st, what, "cudaMalloc");
        bytes = want;
        return p;
    }
};

// ---- the memory space of gpu<N> ----
namespace detail {
template <int N>
void* allocate(std::size_t bytes) {
    device_context& c = context<N>();
    c.activate();
    void* p = nullptr;
    const cudaError_t st = cudaMalloc(&p, bytes);
    if (st == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        throw std::bad_alloc();  // the runtime names the node and the bytes
    }
    check(st, "gpu:" + std::to_string(N), "cudaMalloc");
    return p;
}
template <int N>
void release(void* p, std::size_t) noexcept {
    device_context& c = context<N>();
    std::lock_guard<std::recursive_mutex> hold(c.gate);
    (void)cudaStreamSynchronize(c.stream);  // no queued kernel may still use it
    (void)cudaFree(p);
}
template <int N>
void zero(void* p, std::size_t bytes) {
    device_context& c = context<N>();
    std::lock_guard<std::recursive_mutex> hold(c.gate);
    launch_count().fetch_add(1, std::memory_order_relaxed);
    check(cudaMemsetAsync(p, 0, bytes, c.stream), "gpu:" + std::to_string(N), "cudaMemsetAsync");
}
// One counted copy of `bytes` on GPU N's stream.
template <int N>
void copy_on_stream(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, const char* call) {
    launch_count().fetch_add(1, std::memory_order_relaxed);
    check(cudaMemcpyAsync(dst, src, bytes, kind, context<N>().stream), "gpu:" + std::to_string(N), call);
}
template <int N>
void upload(void* dst, const void* src, std::size_t bytes) {
    std::lock_guard<std::recursive_mutex> hold(context<N>().gate);
    copy_on_stream<N>(dst, src, bytes, cudaMemcpyHostToDevice, "cudaMemcpyAsync (host to device)");
}
template <int N>
void download(void* dst, const void* src, std::size_t bytes) {
    std::lock_guard<std::recursive_mutex> hold(context<N>().gate);
    copy_on_stream<N>(dst, src, bytes, cudaMemcpyDeviceToHost, "cudaMemcpyAsync (device to host)");
    finish<N>();
}
template <int N>
void copy(void* dst, const void* src, std::size_t bytes) {
    std::lock_guard<std::recursive_mutex> hold(context<N>().gate);
    copy_on_stream<N>(dst, src, bytes, cudaMemcpyDeviceToDevice, "cudaMemcpyAsync (device to device)");
}
template <int N>
void synchronized_finish() {
    std::lock_guard<std::recursive_mutex> hold(context<N>().gate);
    finish<N>();
}
template <int N>
void enter() {
    context<N>().gate.lock();
}
template <int N>
void leave() noexcept {
    context<N>().gate.unlock();
}

// ---- a run recorded as a CUDA graph (stream capture) and replayed ----
template <int N>
bool begin_recording() {
    device_context& c = context<N>();
    if (cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
}
template <int N>
void* end_recording(bool keep) noexcept {
    device_context& c = context<N>();
    cudaGraph_t g = nullptr;
    const cudaError_t st = cudaStreamEndCapture(c.stream, &g);  // invalidated captures end here too
    cudaGraphExec_t exec = nullptr;
    if (st == cudaSuccess && keep && g && cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) exec = nullptr;
    if (g) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();
    return exec;
}
template <int N>
void replay(void* recording) {
    device_context& c = context<N>();
    launch_count().fetch_add(1, std::memory_order_relaxed);
    check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(recording), c.stream), "gpu:" + std::to_string(N), "cudaGraphLaunch");
}
template <int N>
void drop(void* recording) noexcept {
    (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(recording));  // freed when a launch in flight ends
}
}  // namespace detail

/// True while c's stream is being recorded as a CUDA graph: work that reads
/// host memory or waits for the stream must not be queued then (the caller
/// raises, and the run is done without a recording).
inline bool recording(const device_context& c) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(c.stream, &st), "gpu:" + std::to_string(c.index), "cudaStreamIsCapturing");
    return st != cudaStreamCaptureStatusNone;
}

namespace detail {
/// out [cols, rows] = in [rows, cols]^T (row-major), on c's stream.
template <class T>
void transpose(device_context& c, const T* in, T* out, index_t rows, index_t cols, std::string_view what) {
    // column-major: in is cols x rows (ld cols); out = in^T is rows x cols (ld rows)
    const T one = T(1), zero = T(0);
    launch_count().fetch_add(1, std::memory_order_relaxed);
    const int m = static_cast<int>(rows), n = static_cast<int>(cols);
    if constexpr (std::is_same_v<T, float>)
        check(cublasSgeam(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, in, n, &zero, out, m, out, m), what, "cublasSgeam");
    else
        check(cublasDgeam(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, in, n, &zero, out, m, out, m), what, "cublasDgeam");
}

/// b rounded up to a multiple of 256 bytes (scratch layouts).
inline std::size_t align_up(std::size_t b) { return (b + 255) / 256 * 256; }
}  // namespace detail

}  // namespace typeflow::cuda

namespace typeflow {

/// The memory of GPU N: cudaMalloc'd blocks, every copy on the GPU's stream.
template <int N>
struct device_memory<gpu<N>> {
    static constexpr memory_space value{"cuda",
                                        &cuda::detail::allocate<N>,
                                        &cuda::detail::release<N>,
                                        &cuda::detail::zero<N>,
                                        false,
                                        &cuda::detail::upload<N>,
                                        &cuda::detail::download<N>,
                                        &cuda::detail::copy<N>,
                                        &cuda::detail::synchronized_finish<N>,
                                        &cuda::detail::enter<N>,
                                        &cuda::detail::leave<N>,
                                        &cuda::detail::begin_recording<N>,
                                        &cuda::detail::end_recording<N>,
                                        &cuda::detail::replay<N>,
                                        &cuda::detail::drop<N>};
};

}  // namespace typeflow
