// typeflow/runtime/session.hpp — runs graphs: session::run(fetch(...), feed(...)...).
#pragma once
#include <memory>
#include <tuple>
#include <typeinfo>
#include <vector>

#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/plan.hpp>

namespace typeflow {

using runtime::run_stats;

/// Runs graphs on the CPU. The first run of a set of fetches makes its plan
/// (node order, fusion, memory); later runs reuse it and allocate nothing,
/// unless a dyn extent changes or the caller still holds last run's results.
class session {
public:
    session() = default;
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
    /// Computes one node and returns its value.
    template <expression E, class... Feeds>
    tensor<value_type_t<E>> run(const E& e, const Feeds&... feeds) {
        return std::get<0>(run(fetch(e), feeds...));
    }

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
        P* raw = new P(f);
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
    std::vector<entry> plans_;
    run_stats stats_;
};

}  // namespace typeflow
