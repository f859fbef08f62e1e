// typeflow/runtime/feed.hpp — fetch lists and feeds for session::run.
#pragma once
#include <tuple>
#include <type_traits>
#include <vector>

#include <typeflow/core/tensor.hpp>
#include <typeflow/expr/diagnostics.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow {

/// The nodes one run computes and returns, in order.
/// (Held in the same flat aggregate as a node's children: std::tuple's
/// constructor checks cost time exponential in a deep graph's depth.)
template <expression... Fs>
struct fetch_list {
    detail::children_of<Fs...> nodes;
    template <std::size_t K>
    const auto& get() const noexcept {
        return detail::get_child<K>(nodes);
    }
};
/// fetch(a, b, ...): what session::run returns, as a tuple of tensors.
template <expression... Fs>
fetch_list<meta::remove_cvref_t<Fs>...> fetch(Fs&&... fs) {
    return {detail::children_of<meta::remove_cvref_t<Fs>...>(std::forward<Fs>(fs)...)};
}

/// Data for placeholder P in one run; it views the caller's memory, which
/// must stay valid during the run.
template <class P>
struct feed_entry {
    using placeholder_type = P;
    tensor_view<const value_type_t<P>> data;
};

namespace detail {
template <class P, class U>
constexpr bool feed_dtype_ok() {
    constexpr bool ok = std::is_same_v<value_type_t<P>, U>;
    if constexpr (!ok) {
        diagnostic::feed_dtype_differs<P, U> error;
    }
    static_assert(ok, "typeflow: feed: the data's element type differs from the placeholder's dtype");
    return ok;
}
}  // namespace detail

/// feed(x, data): data is a tensor, a tensor_view, or (for a placeholder of
/// static shape) a std::vector holding exactly that many elements.
template <placeholder_c P, class U>
feed_entry<P> feed(const P&, tensor_view<U> v) {
    static_assert(detail::feed_dtype_ok<P, std::remove_const_t<U>>());
    if constexpr (std::is_same_v<value_type_t<P>, std::remove_const_t<U>>) return {{v.data, v.dims}};
    else return {};
}
template <placeholder_c P, class U>
feed_entry<P> feed(const P& p, const tensor<U>& t) {
    return feed(p, t.view());
}
template <placeholder_c P, class U>
feed_entry<P> feed(const P&, const std::vector<U>& v) {
    static_assert(detail::feed_dtype_ok<P, U>());
    static_assert(shape_t<P>::is_static,
                  "typeflow: feed: a std::vector feeds only a placeholder of static shape; use tf::view(vec, dims)");
    if (static_cast<index_t>(v.size()) != shape_t<P>::numel)
        detail::raise(detail::message() << "feed for placeholder '" << P::name() << "': expected shape "
                                        << shape_t<P>::value << " (" << shape_t<P>::numel << " elements), got "
                                        << v.size() << " elements");
    return {{v.data(), shape_t<P>::value}};
}

}  // namespace typeflow
