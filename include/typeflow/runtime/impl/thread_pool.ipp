// typeflow/runtime/impl/thread_pool.ipp — see runtime/thread_pool.hpp.
//
// A fork-join pool: one job at a time (a kernel's tasks), handed out one task
// per lock; workers spin briefly on the job counter before they sleep, so
// back-to-back kernels do not pay a wake-up each. Not Eigen's ThreadPool:
// in a header-only build its templates added 12 KB of code and about 0.2 s
// of compile time to every program that runs a session (see
// docs/design-notes.md), for a work-stealing scheduler a fork-join does not
// need.
#pragma once
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstdint>
#include <exception>
#include <mutex>
#include <memory>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#define TYPEFLOW_POOL_PTHREADS 1
#else
#include <thread>
#include <vector>
#endif

#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/runtime/thread_pool.hpp>

namespace typeflow::runtime {

struct thread_pool::impl {
    std::mutex m;
    std::condition_variable wake, done;
    std::uint64_t gen = 0;  // jobs posted (under m)
    std::atomic<std::uint64_t> posted{0};  // gen, for spinning without the lock
    std::atomic<std::size_t> left{0};      // pending, for spinning without the lock
    bool stop = false;
    void (*task)(void*, std::size_t) = nullptr;
    void* arg = nullptr;
    std::size_t tasks = 0, next = 0, pending = 0;
    std::exception_ptr error;
    // a job is running: a caller that finds the pool busy (another
    // session::run on another thread) does its tasks itself
    std::atomic<bool> busy{false};
#if TYPEFLOW_POOL_PTHREADS
    // POSIX threads directly: std::thread's templates cost every header-only
    // program that runs a session about 0.1 s of compile time
    std::unique_ptr<pthread_t[]> threads;
    int count = 0;
    TYPEFLOW_COLD_OPTIMIZE static void* start(void* p) {
        static_cast<impl*>(p)->loop();
        return nullptr;
    }
#else
    std::vector<std::thread> threads;
#endif

    static constexpr int spin_rounds = 2000;  // about 50 us of pause instructions

    static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif TYPEFLOW_POOL_PTHREADS
        sched_yield();
#else
        std::this_thread::yield();
#endif
    }

    // takes tasks of the current job until none is left
    TYPEFLOW_COLD_OPTIMIZE void work() {
        std::unique_lock<std::mutex> l(m);
        while (next < tasks) {
            const std::size_t t = next++;
            void (*f)(void*, std::size_t) = task;
            void* a = arg;
            l.unlock();
            std::exception_ptr e;
            try {
                f(a, t);
            } catch (...) {
                e = std::current_exception();
            }
            l.lock();
            if (e && !error) error = e;
            left.store(--pending, std::memory_order_release);
            if (pending == 0) done.notify_one();
        }
    }
    TYPEFLOW_COLD_OPTIMIZE void loop() {
        std::uint64_t seen = 0;
        for (;;) {
            for (int i = 0; i < spin_rounds && posted.load(std::memory_order_acquire) == seen; ++i) relax();
            {
                std::unique_lock<std::mutex> l(m);
                wake.wait(l, [&] { return stop || gen != seen; });
                if (stop) return;
                seen = gen;
            }
            work();
        }
    }
};

TYPEFLOW_DECL thread_pool::thread_pool(int n) : n_(n < 1 ? 1 : n) {
    if (n_ == 1) return;
    impl_ = std::make_unique<impl>();
#if TYPEFLOW_POOL_PTHREADS
    impl_->threads.reset(new pthread_t[static_cast<std::size_t>(n_ - 1)]);
    for (int i = 1; i < n_; ++i) {
        if (pthread_create(&impl_->threads[impl_->count], nullptr, &impl::start, impl_.get()) != 0) break;
        ++impl_->count;
    }
    n_ = impl_->count + 1;  // fewer threads when the system refuses more
#else
    impl_->threads.reserve(static_cast<std::size_t>(n_ - 1));
    for (int i = 1; i < n_; ++i) impl_->threads.emplace_back([p = impl_.get()] { p->loop(); });
#endif
}

TYPEFLOW_DECL thread_pool::~thread_pool() {
    if (!impl_) return;
    {
        std::lock_guard<std::mutex> l(impl_->m);
        impl_->stop = true;
    }
    impl_->wake.notify_all();
#if TYPEFLOW_POOL_PTHREADS
    for (int i = 0; i < impl_->count; ++i) pthread_join(impl_->threads[i], nullptr);
#else
    for (std::thread& t : impl_->threads) t.join();
#endif
}

TYPEFLOW_DECL int thread_pool::hardware_threads() noexcept {
#if defined(__linux__)
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
#endif
#if TYPEFLOW_POOL_PTHREADS
    const long h = sysconf(_SC_NPROCESSORS_ONLN);
    return h < 1 ? 1 : static_cast<int>(h);
#else
    const unsigned h = std::thread::hardware_concurrency();
    return h == 0 ? 1 : static_cast<int>(h);
#endif
}

TYPEFLOW_DECL int thread_pool::default_threads() {
    const char* e = std::getenv("TYPEFLOW_NUM_THREADS");
    if (!e) return hardware_threads();
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(e, &end, 10);
    if (end == e || *end != '\0' || errno == ERANGE || n < 1 || n > 65536)
        typeflow::detail::raise(typeflow::detail::message()
                                << "session: TYPEFLOW_NUM_THREADS is '" << e << "'; it must be a positive integer (threads a session "
                                << "runs kernels on), or unset for every thread this process may run on");
    return static_cast<int>(n);
}

TYPEFLOW_DECL parallel_ctx thread_pool::context() noexcept {
    parallel_ctx c;
    c.threads = n_;
    c.pool = impl_.get();
    c.run_fn = n_ > 1 ? &thread_pool::run : nullptr;
    return c;
}

// The caller takes tasks too; the first exception a task throws is rethrown
// on the caller once every task is done. The pool runs one job at a time: a
// caller that finds it busy (runs of a session on several threads) runs its
// tasks alone, in task order, so its results are those of a pooled run.
TYPEFLOW_DECL void thread_pool::run(void* pool, std::size_t tasks, void (*task)(void*, std::size_t), void* arg) {
    impl& p = *static_cast<impl*>(pool);
    if (p.busy.exchange(true, std::memory_order_acquire)) {
        for (std::size_t t = 0; t < tasks; ++t) task(arg, t);
        return;
    }
    {
        std::lock_guard<std::mutex> l(p.m);
        p.task = task;
        p.arg = arg;
        p.tasks = tasks;
        p.next = 0;
        p.pending = tasks;
        p.left.store(tasks, std::memory_order_relaxed);
        p.error = nullptr;
        p.posted.store(++p.gen, std::memory_order_release);
    }
    p.wake.notify_all();
    p.work();
    for (int i = 0; i < impl::spin_rounds && p.left.load(std::memory_order_acquire) != 0; ++i) impl::relax();
    std::exception_ptr e;
    {
        std::unique_lock<std::mutex> l(p.m);
        p.done.wait(l, [&] { return p.pending == 0; });
        e = p.error;
        p.error = nullptr;
        p.tasks = 0;
    }
    p.busy.store(false, std::memory_order_release);
    if (e) std::rethrow_exception(e);
}

}  // namespace typeflow::runtime
#undef TYPEFLOW_POOL_PTHREADS
