#pragma once
// typeflow::dist::nccl_collective — collectives on buffers in GPU N's memory
// through NCCL, for tasks that each have a GPU of their own (NCCL refuses two
// ranks on one device: those share through staged_collective). The NCCL
// communicator is bootstrapped over a host collective (the TCP ring, whose
// transport authenticates every peer): rank 0 makes NCCL's unique id and
// broadcasts it. Every call waits for its result (the same contract as
// `collective`), with the collective's deadline: a dead or stalled peer makes
// the call abort the communicator and throw `error` instead of hanging.
// Compiled by nvcc (it includes the CUDA backend's runtime).
//
//   dist::ring_collective host(transport);
//   auto gpu = dist::device_collective<0>(host);   // NCCL, or staged through host
//   gpu->all_reduce(grad_on_gpu, grad_on_gpu, n, dtype::float32, reduce_op::sum);
#include <nccl.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/distributed/collective.hpp>
#include <typeflow/distributed/error.hpp>
#include <typeflow/distributed/staged_collective.hpp>

namespace typeflow::dist {

namespace nccl_detail {
/// NCCL's element type for a typeflow dtype (bool as bytes: max is any, min is all).
constexpr ncclDataType_t type_of(dtype t) noexcept {
    switch (t) {
    case dtype::float32: return ncclFloat32;
    case dtype::float64: return ncclFloat64;
    case dtype::int32: return ncclInt32;
    case dtype::int64: return ncclInt64;
    case dtype::boolean: return ncclUint8;
    }
    return ncclFloat32;
}
/// NCCL's reduction for a reduce_op (mean: ncclAvg, NCCL >= 2.10).
constexpr ncclRedOp_t op_of(reduce_op r) noexcept {
    switch (r) {
    case reduce_op::sum: return ncclSum;
    case reduce_op::mean: return ncclAvg;
    case reduce_op::max: return ncclMax;
    case reduce_op::min: return ncclMin;
    }
    return ncclSum;
}
/// Whether the collective contract allows `op` on `t` (bool: max and min only).
constexpr bool allowed(dtype t, reduce_op op) noexcept {
    return t != dtype::boolean || op == reduce_op::max || op == reduce_op::min;
}
/// True when NCCL's reduction gives the contract's result directly; an
/// integer mean is a sum, then a division by the task count (truncating, as
/// the ring's).
constexpr bool native(dtype t, reduce_op op) noexcept {
    return op != reduce_op::mean || t == dtype::float32 || t == dtype::float64;
}
template <class T>
__global__ void divide_kernel(T* p, std::size_t n, T by) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) p[i] /= by;
}
/// True when no two tasks name the same device (their UUIDs, 16 bytes each).
inline bool distinct_devices(const std::vector<std::array<std::uint8_t, 16>>& uuids) {
    for (std::size_t i = 0; i < uuids.size(); ++i)
        for (std::size_t j = i + 1; j < uuids.size(); ++j)
            if (uuids[i] == uuids[j]) return false;
    return true;
}
}  // namespace nccl_detail

/// Collectives on GPU N's buffers through NCCL (see the file comment). The
/// host collective must outlive the constructor only.
template <int N>
class nccl_collective final : public collective {
public:
    /// Joins the NCCL communicator of the tasks of `bootstrap`: every task
    /// calls this together. Throws `error` when NCCL cannot form it within the
    /// bootstrap's deadline.
    explicit nccl_collective(collective& bootstrap, std::chrono::milliseconds timeout = std::chrono::minutes(5))
        : rank_(bootstrap.rank()), size_(bootstrap.size()), timeout_(timeout) {
        cuda::device_context& c = cuda::context<N>();
        c.activate();
        ncclUniqueId id;
        std::memset(&id, 0, sizeof id);
        if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
        bootstrap.broadcast(&id, sizeof id / sizeof(std::int32_t), dtype::int32, 0);
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;  // returns at once; wait() polls with the deadline
        check(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "ncclCommInitRankConfig");
        wait_comm("ncclCommInitRankConfig");
    }
    nccl_collective(const nccl_collective&) = delete;
    nccl_collective& operator=(const nccl_collective&) = delete;
    ~nccl_collective() override {
        if (token_) (void)cudaFree(token_);
        if (!comm_) return;
        if (broken_) (void)ncclCommAbort(comm_);
        else (void)ncclCommDestroy(comm_);
    }

    int rank() const noexcept override { return rank_; }
    int size() const noexcept override { return size_; }

    void all_reduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op) override {
        refuse_unless(nccl_detail::allowed(t, op), "all_reduce", t, op);
        const bool native = nccl_detail::native(t, op);
        run(
            "ncclAllReduce",
            [&](cudaStream_t s) {
                return ncclAllReduce(in, out, count, nccl_detail::type_of(t), nccl_detail::op_of(native ? op : reduce_op::sum), comm_, s);
            },
            [&](cudaStream_t s) {
                if (!native) divide(out, count, t, s);
            });
    }
    void broadcast(void* buf, std::size_t count, dtype t, int root) override {
        if (root < 0 || root >= size_)
            throw error("nccl_collective: broadcast root " + std::to_string(root) + " is not a rank of " + std::to_string(size_));
        run("ncclBroadcast", [&](cudaStream_t s) { return ncclBroadcast(buf, buf, count, nccl_detail::type_of(t), root, comm_, s); });
    }
    void all_gather(const void* in, void* out, std::size_t count, dtype t) override {
        run("ncclAllGather", [&](cudaStream_t s) { return ncclAllGather(in, out, count, nccl_detail::type_of(t), comm_, s); });
    }
    void reduce_scatter(const void* in, void* out, std::size_t count, dtype t, reduce_op op) override {
        refuse_unless(nccl_detail::allowed(t, op), "reduce_scatter", t, op);
        const bool native = nccl_detail::native(t, op);
        run(
            "ncclReduceScatter",
            [&](cudaStream_t s) {
                return ncclReduceScatter(in, out, count, nccl_detail::type_of(t), nccl_detail::op_of(native ? op : reduce_op::sum), comm_,
                                         s);
            },
            [&](cudaStream_t s) {
                if (!native) divide(out, count, t, s);
            });
    }
    /// A one-element all-reduce on the device: returns once every task has entered.
    void barrier() override {
        if (!token_) {
            cuda::check(cudaMalloc(&token_, sizeof(std::int32_t)), "nccl_collective", "cudaMalloc");
            cuda::check(cudaMemset(token_, 0, sizeof(std::int32_t)), "nccl_collective", "cudaMemset");
        }
        all_reduce(token_, token_, 1, dtype::int32, reduce_op::max);
    }
    void set_timeout(std::chrono::milliseconds t) override {
        if (t.count() < 1 || t.count() > 2147483647)
            throw error("nccl_collective: timeout " + std::to_string(t.count()) + " ms is outside 1 ms .. 2^31 - 1 ms");
        timeout_ = t;
    }

private:
    void check(ncclResult_t r, const char* call) {
        if (r == ncclSuccess || r == ncclInProgress) return;
        broken_ = true;
        throw error(std::string("nccl_collective: ") + call + " failed: " + ncclGetErrorString(r) + " (rank " +
                    std::to_string(rank_) + " of " + std::to_string(size_) + ")");
    }
    // out /= size() on the stream, after the sum (an integer mean)
    void divide(void* out, std::size_t count, dtype t, cudaStream_t s) {
        if (count == 0) return;
        const unsigned grid = cuda::grid_for(count, 256);
        if (t == dtype::int32) nccl_detail::divide_kernel<<<grid, 256, 0, s>>>(static_cast<std::int32_t*>(out), count, std::int32_t(size_));
        else nccl_detail::divide_kernel<<<grid, 256, 0, s>>>(static_cast<std::int64_t*>(out), count, std::int64_t(size_));
        cuda::check_launch("nccl_collective: mean");
    }
    void refuse_unless(bool ok, const char* what, dtype t, reduce_op op) const {
        if (!ok)
            throw error(std::string("nccl_collective: ") + what + " cannot reduce " + std::string(dtype_name(t)) + " with " +
                        std::string(name_of(op)));
    }
    // Waits until the communicator is no longer in progress, within the deadline.
    void wait_comm(const char* call) {
        const auto deadline = std::chrono::steady_clock::now() + timeout_;
        for (;;) {
            ncclResult_t st = ncclSuccess;
            check(ncclCommGetAsyncError(comm_, &st), "ncclCommGetAsyncError");
            if (st == ncclSuccess) return;
            if (st != ncclInProgress) check(st, call);
            if (std::chrono::steady_clock::now() > deadline) abort_after(call);
            std::this_thread::yield();
        }
    }
    [[noreturn]] void abort_after(const char* call) {
        broken_ = true;
        (void)ncclCommAbort(comm_);
        comm_ = nullptr;
        throw error(std::string("nccl_collective: ") + call + " timed out after " + std::to_string(timeout_.count()) +
                    " ms (a peer is dead or stalled); the communicator is aborted");
    }
    // Enqueues a collective on GPU N's stream (then `after`, once NCCL has
    // enqueued it) and waits for it within the deadline.
    template <class Enqueue, class After = void (*)(cudaStream_t)>
    void run(const char* call, Enqueue&& enqueue, After&& after = [](cudaStream_t) {}) {
        if (broken_ || !comm_) throw error(std::string("nccl_collective: ") + call + ": the communicator was aborted by an earlier failure");
        cuda::device_context& c = cuda::context<N>();
        c.activate();
        check(enqueue(c.stream), call);
        wait_comm(call);
        after(c.stream);
        cuda::launch_count().fetch_add(1, std::memory_order_relaxed);
        const auto deadline = std::chrono::steady_clock::now() + timeout_;
        for (;;) {
            const cudaError_t q = cudaStreamQuery(c.stream);
            if (q == cudaSuccess) return;
            if (q != cudaErrorNotReady) cuda::check(q, "nccl_collective", call);
            ncclResult_t st = ncclSuccess;
            check(ncclCommGetAsyncError(comm_, &st), "ncclCommGetAsyncError");
            if (st != ncclSuccess && st != ncclInProgress) check(st, call);
            if (std::chrono::steady_clock::now() > deadline) abort_after(call);
            std::this_thread::yield();
        }
    }

    int rank_, size_;
    std::chrono::milliseconds timeout_;
    ncclComm_t comm_ = nullptr;
    bool broken_ = false;
    void* token_ = nullptr;
};

/// The collective for buffers on GPU N of every task of `host`: NCCL when no
/// two tasks share a GPU (their devices' UUIDs, gathered over `host`), else
/// the host collective on staged copies. Every task calls it together; `host`
/// must outlive the result.
template <int N>
std::unique_ptr<collective> device_collective(collective& host) {
    cuda::device_context& c = cuda::context<N>();
    cudaDeviceProp prop{};
    cuda::check(cudaGetDeviceProperties(&prop, c.index), "device_collective", "cudaGetDeviceProperties");
    std::array<std::uint8_t, 16> mine{};
    std::memcpy(mine.data(), &prop.uuid, mine.size());
    std::vector<std::array<std::uint8_t, 16>> all(static_cast<std::size_t>(host.size()));
    host.all_gather(mine.data(), all.data(), 4, dtype::int32);  // 16 bytes as 4 int32
    if (nccl_detail::distinct_devices(all)) return std::make_unique<nccl_collective<N>>(host);
    return std::make_unique<staged_collective>(host, device_memory<gpu<N>>::value);
}

}  // namespace typeflow::dist
