// typeflow/runtime/impl/thread_pool.ipp — see runtime/thread_pool.hpp.
#pragma once
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include <unsupported/Eigen/CXX11/ThreadPool>

#include <typeflow/runtime/thread_pool.hpp>

namespace typeflow::runtime {

struct thread_pool::impl {
    explicit impl(int workers) : pool(workers) {}
    Eigen::ThreadPool pool;
};

TYPEFLOW_DECL thread_pool::thread_pool(int n) : n_(n < 1 ? 1 : n) {
    if (n_ > 1) impl_ = std::make_unique<impl>(n_ - 1);
}

TYPEFLOW_DECL thread_pool::~thread_pool() = default;

TYPEFLOW_DECL int thread_pool::hardware_threads() noexcept {
    const unsigned h = std::thread::hardware_concurrency();
    return h == 0 ? 1 : static_cast<int>(h);
}

TYPEFLOW_DECL parallel_ctx thread_pool::context() noexcept {
    parallel_ctx c;
    c.threads = n_;
    c.pool = impl_.get();
    c.run_fn = n_ > 1 ? &thread_pool::run : nullptr;
    return c;
}

// Tasks 1.. go to the workers, task 0 runs on the caller; the first
// exception a task throws is rethrown on the caller once every task is done.
TYPEFLOW_DECL_HOT void thread_pool::run(void* pool, std::size_t tasks, void (*task)(void*, std::size_t), void* arg) {
    struct shared {
        void (*task)(void*, std::size_t);
        void* arg;
        Eigen::Barrier done;
        std::atomic<bool> failed{false};
        std::exception_ptr error;
        std::mutex m;
        shared(void (*t)(void*, std::size_t), void* a, std::size_t n) : task(t), arg(a), done(static_cast<unsigned>(n)) {}
        void call(std::size_t t) noexcept {
            try {
                task(arg, t);
            } catch (...) {
                std::lock_guard<std::mutex> lock(m);
                if (!failed.exchange(true)) error = std::current_exception();
            }
        }
    };
    auto& p = static_cast<impl*>(pool)->pool;
    shared s(task, arg, tasks - 1);
    for (std::size_t t = 1; t < tasks; ++t)
        p.Schedule([&s, t] {  // two words: fits std::function's own storage, no allocation
            s.call(t);
            s.done.Notify();
        });
    s.call(0);
    s.done.Wait();
    if (s.failed.load()) std::rethrow_exception(s.error);
}

}  // namespace typeflow::runtime
