#pragma once
// typeflow::dist::detail::example_count — how many examples a task's run of
// a distribution strategy covers, read from its feeds.
#include <typeflow/core/shape.hpp>
#include <typeflow/runtime/feed.hpp>

namespace typeflow::dist::detail {

/// The leading extent of the first feed (1 for a scalar feed or none).
inline index_t example_count() noexcept { return 1; }
template <class F0, class... F>
index_t example_count(const F0& f, const F&...) noexcept {
    return f.data.dims.rank ? f.data.dims.d[0] : 1;
}

}  // namespace typeflow::dist::detail
