// typeflow/runtime/thread_pool.hpp — the threads a session runs kernels on.
#pragma once
#include <cstddef>
#include <memory>

#include <typeflow/core/config.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::runtime {

/// A fixed set of threads for fork-join work inside kernels. The calling
/// thread takes part, so a pool of n threads starts n - 1 workers; a pool of
/// 1 starts none.
class thread_pool {
public:
    /// n threads in all (at least 1).
    explicit thread_pool(int n);
    ~thread_pool();
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;

    /// The number of threads, the caller's included.
    int threads() const noexcept { return n_; }
    /// What kernels are given to split their work over this pool.
    parallel_ctx context() noexcept;

    /// The threads this process may run on (at least 1): its CPU affinity
    /// where the system reports one (taskset, a container's cpuset), else the
    /// hardware's.
    static int hardware_threads() noexcept;
    /// A session's threads by default: TYPEFLOW_NUM_THREADS when it is set (a
    /// positive integer, as OMP_NUM_THREADS; typeflow-launch sets it to share
    /// the cores among a machine's tasks), else hardware_threads(). A value
    /// that is not a positive integer is a tf::error naming it.
    static int default_threads();

private:
    struct impl;
    static void run(void* pool, std::size_t tasks, void (*task)(void*, std::size_t), void* arg);
    int n_ = 1;
    std::unique_ptr<impl> impl_;
};

}  // namespace typeflow::runtime

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/runtime/impl/thread_pool.ipp>
#endif
