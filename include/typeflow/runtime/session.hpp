// typeflow/runtime/session.hpp — runs graphs: session::run(fetch(...), feed(...)...).
#pragma once
#include <memory>
#include <mutex>
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
    /// caller's included; 0 (the default) uses TYPEFLOW_NUM_THREADS when set,
    /// else every thread this process may run on (its CPU affinity). Results
    /// do not depend on it beyond floating-point summation order, and a given
    /// count always sums in the same order.
    int threads = 0;
    /// Whether a run whose work all lies on one GPU is recorded once as a CUDA
    /// graph and replayed in later runs with the same buffers (one launch per
    /// step instead of one per kernel). Results are the same either way.
    bool replay = true;
};

/// Runs graphs on their devices. The first run of a set of fetches makes its
/// plan (node order, fusion, memory); later runs reuse it and allocate
/// nothing, unless a dyn extent changes or the caller still holds last run's
/// results.
///
/// run may be called from several threads at once, as TensorFlow's
/// concurrent steps on one model: each call runs a plan of its own (a second
/// plan of the same fetches is made when the first is busy), so scratch
/// memory and results are per call, while variables are shared. Updates of
/// a variable are not locked against other steps reading or updating it
/// (Hogwild, TensorFlow's use_locking=False): optimizers' locking option
/// orders updates against each other. Kernels use the session's threads in
/// one call at a time; a call that finds them busy runs its kernels on its
/// own thread, with the same results.
class session {
public:
    /// A session on every hardware thread.
    session() : session(session_options{}) {}
    explicit session(const session_options& o)
        : pool_(std::make_unique<runtime::thread_pool>(o.threads > 0 ? o.threads : runtime::thread_pool::default_threads())),
          m_(std::make_unique<std::mutex>()), replay_(o.replay) {}
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    session(session&&) noexcept = default;
    session& operator=(session&&) noexcept = default;

    /// Computes the fetched nodes and returns their values, in order. Only
    /// what they depend on runs; each node runs once. Throws tf::error for a
    /// missing feed or one whose shape does not fit, naming the placeholder.
    template <class... Fs, class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run(const fetch_list<Fs...>& f, const Feeds&... feeds) {
        lease l(*this);
        return plan_for(f, l).run(l.stats, feeds...);
    }
    /// run with the plan of fetches f, computing only what the first k of
    /// them need: the other fetches' results are empty, and an update among
    /// them (or that only they read) is not applied. A program that runs
    /// f in full (a training step) and its first fetches alone (an
    /// evaluation) compiles one plan for both.
    template <class... Fs, class... Feeds>
    std::tuple<tensor<value_type_t<Fs>>...> run_first(std::size_t k, const fetch_list<Fs...>& f, const Feeds&... feeds) {
        lease l(*this);
        auto& p = plan_for(f, l);
        struct restore {
            runtime::plan<Fs...>& p;
            ~restore() { p.keep_fetches(~std::size_t{0}); }
        } r{p};
        p.keep_fetches(k);
        return p.run(l.stats, feeds...);
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
        lease l(*this);
        return plan_for(f, l).run_hooked(l.stats, &hook, feeds...);
    }
    /// Computes one node and returns its value.
    template <expression E, class... Feeds>
    tensor<value_type_t<E>> run(const E& e, const Feeds&... feeds) {
        return std::get<0>(run(fetch(e), feeds...));
    }

    /// The threads this session runs kernels on, the caller's included.
    int threads() const noexcept { return pool_->threads(); }

    /// Counters of the last run to finish (and plans made so far); inside a
    /// run (from run_streaming's on_ready), those of that run so far. Read
    /// it on a thread with no run of this session in progress, or inside one.
    const run_stats& stats() const noexcept {
        const in_run& r = current();
        return r.s == this ? *r.stats : stats_;
    }

private:
    // The run of a session in progress on this thread, if any.
    struct in_run {
        const session* s = nullptr;
        const run_stats* stats = nullptr;
    };
    static in_run& current() noexcept {
        static thread_local in_run r;
        return r;
    }
    struct entry {
        const std::type_info* type;
        std::unique_ptr<runtime::plan_base> plan;
        bool busy;
    };
    // One call's hold on the plan it runs (none else runs it meanwhile) and
    // its counters, which start from the session's; plain code, not a
    // template: nothing here is keyed on a graph.
    struct lease {
        session& s;
        runtime::plan_base* plan = nullptr;
        run_stats stats, start;
        in_run outer;  // the run this one is nested in (an on_ready that runs another session)
        explicit lease(session& se) : s(se), outer(current()) {
            {
                std::lock_guard<std::mutex> lock(*s.m_);
                stats = start = s.stats_;
            }
            current() = {&s, &stats};
        }
        lease(const lease&) = delete;
        lease& operator=(const lease&) = delete;
        // the counters become the session's (those of a run that failed too),
        // and the plan is free for the next call
        ~lease() {
            current() = outer;
            std::lock_guard<std::mutex> lock(*s.m_);
            s.stats_.evaluations = stats.evaluations;
            s.stats_.recorded_loops = stats.recorded_loops;
            s.stats_.arena_bytes = stats.arena_bytes;
            s.stats_.plans_built += stats.plans_built - start.plans_built;
            s.stats_.rebinds += stats.rebinds - start.rebinds;
            s.stats_.recordings += stats.recordings - start.recordings;
            s.stats_.replays += stats.replays - start.replays;
            if (plan)
                for (entry& e : s.plans_)
                    if (e.plan.get() == plan) e.busy = false;
        }
    };
    // A plan of f that no other call is running, held by l: a free one, or a new one.
    template <class... Fs>
    runtime::plan<Fs...>& plan_for(const fetch_list<Fs...>& f, lease& l) {
        using P = runtime::plan<Fs...>;
        {
            std::lock_guard<std::mutex> lock(*m_);
            for (entry& e : plans_)
                if (!e.busy && *e.type == typeid(P)) {
                    auto* p = static_cast<P*>(e.plan.get());
                    if (p->same_roots(f)) {
                        e.busy = true;
                        l.plan = p;
                        return *p;
                    }
                }
        }
        // not std::make_unique: libstdc++'s is exponential in a deep graph's depth
        P* raw = new P(f, pool_->context());
        raw->allow_replay(replay_);
        std::unique_ptr<runtime::plan_base> p(raw);
        std::lock_guard<std::mutex> lock(*m_);
        add_plan({&typeid(P), std::move(p), true});
        l.plan = raw;
        ++l.stats.plans_built;
        return *raw;
    }
    // Keeps at most max_plans plans: the oldest one not running makes room.
    void add_plan(entry e) {
        if (plans_.size() >= max_plans)
            for (auto it = plans_.begin(); it != plans_.end(); ++it)
                if (!it->busy) {
                    plans_.erase(it);
                    break;
                }
        plans_.push_back(std::move(e));
    }

    static constexpr std::size_t max_plans = 64;
    std::unique_ptr<runtime::thread_pool> pool_;  // before the plans, which run on it
    std::vector<entry> plans_;
    run_stats stats_;
    std::unique_ptr<std::mutex> m_;  // plans_ and stats_ (a pointer: sessions move)
    bool replay_ = true;
};

}  // namespace typeflow
