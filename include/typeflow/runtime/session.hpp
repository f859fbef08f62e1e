// typeflow/runtime/session.hpp — runs graphs: session::run(fetch(...), feed(...)...).
#pragma once
#include <memory>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/plan.hpp>
#include <typeflow/runtime/thread_pool.hpp>

namespace typeflow {

using runtime::run_stats;

/// How a session runs.
struct session_options {
    /// Threads that kernels and fused regions split their work over, the
    /// caller's included; 0 (the default) uses every hardware thread. Results
    /// do not depend on it beyond floating-point summation order, and a given
    /// count always sums in the same order.
    int threads = 0;
};

/// Runs graphs on their devices. The first run of a set of fetches makes its
/// plan (node order, fusion, memory); later runs reuse it and allocate
/// nothing, unless a dyn extent changes or the caller still holds last run's
/// results.
class session {
public:
    /// A session on every hardware thread.
    session() : session(session_options{}) {}
    explicit session(const session_options& o)
        : pool_(std::make_unique<runtime::thread_pool>(o.threads > 0 ? o.threads : runtime::thread_pool::hardware_threads())) {}
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    session(session&&) noexcept = default;
    session& operator=(session&&) noexcept = default;

    /// Computes the fetched nodes and returns their values, in order. Only
    /// what they depend on runs; each node runs once. Throws tf::error for a
    /// missing feed or one whose shape does not fit, naming the placeholder.
    template <class... Fs, class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run(const fetch_list<Fs...>& f, const Feeds&... feeds) {
        return plan_for(f).run(stats_, feeds...);
    }
    /// run, and calls on_ready(k, data) on the calling thread as soon as the
    /// value of fetch k is final, before the nodes after it run: `data` points
    /// at its elements (value_type_t of the k-th fetch; those of the result
    /// returned). A computed fetch is reported right after its node (the order
    /// of the fetch list sets the node order), a fetched leaf or view after the
    /// last node. Lets a caller start work on early results, such as sending
    /// the gradients of the last layers while earlier ones are computed. An
    /// exception from on_ready ends the run (nothing is written).
    template <class... Fs, class OnReady, class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run_streaming(const fetch_list<Fs...>& f, OnReady&& on_ready,
                                                          const Feeds&... feeds) {
        using R = std::remove_reference_t<OnReady>;
        const runtime::ready_hook hook{[](void* ctx, std::size_t k, const void* data) { (*static_cast<R*>(ctx))(k, data); },
                                       const_cast<void*>(static_cast<const void*>(&on_ready))};
        return plan_for(f).run_hooked(stats_, &hook, feeds...);
    }
    /// Computes one node and returns its value.
    template <expression E, class... Feeds>
    tensor<value_type_t<E>> run(const E& e, const Feeds&... feeds) {
        return std::get<0>(run(fetch(e), feeds...));
    }

    /// The threads this session runs kernels on, the caller's included.
    int threads() const noexcept { return pool_->threads(); }

    /// Counters of the last run (and plans made so far).
    const run_stats& stats() const noexcept { return stats_; }

private:
    template <class... Fs>
    runtime::plan<Fs...>& plan_for(const fetch_list<Fs...>& f) {
        using P = runtime::plan<Fs...>;
        for (entry& e : plans_)
            if (*e.type == typeid(P)) {
                auto* p = static_cast<P*>(e.plan.get());
                if (p->same_roots(f)) return *p;
            }
        // not std::make_unique: libstdc++'s is exponential in a deep graph's depth
        P* raw = new P(f, pool_->context());
        std::unique_ptr<runtime::plan_base> p(raw);
        P& ref = *raw;
        if (plans_.size() >= max_plans) plans_.erase(plans_.begin());
        plans_.push_back({&typeid(P), std::move(p)});
        ++stats_.plans_built;
        return ref;
    }

    struct entry {
        const std::type_info* type;
        std::unique_ptr<runtime::plan_base> plan;
    };
    static constexpr std::size_t max_plans = 64;
    std::unique_ptr<runtime::thread_pool> pool_;  // before the plans, which run on it
    std::vector<entry> plans_;
    run_stats stats_;
};

}  // namespace typeflow
