// typeflow/expr/node.hpp — the expression concept and the operation node.
#pragma once
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/core/device.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/type_list.hpp>

namespace typeflow {

/// How the runtime treats an op.
enum class op_kind {
    leaf,         // placeholder, variable, constant: has storage of its own
    elementwise,  // fused into its consumer's single pass
    view,         // same elements, new extents (reshape): aliases its input
    kernel,       // materialised by a backend kernel (matmul, reductions, ...)
};

namespace detail {
struct expression_base {};
// The children of a node: a minimal tuple (one base per element, no
// constructor templates). std::tuple's constrained converting constructors
// make GCC and Clang work exponentially in the depth of a graph whose nodes
// share children (residual connections).
struct children_tag {};
template <std::size_t I, class T>
struct child_box {
    T value;
};
template <class Seq, class... C>
struct children_impl;
template <std::size_t... I, class... C>
struct children_impl<std::index_sequence<I...>, C...> : child_box<I, C>... {
    explicit children_impl(C... c) : child_box<I, C>{std::move(c)}... {}
};
template <class... C>
struct children_of : children_impl<std::index_sequence_for<C...>, C...> {
    using children_impl<std::index_sequence_for<C...>, C...>::children_impl;
};
template <std::size_t I, class T>
const T& get_child(const child_box<I, T>& b) noexcept {
    return b.value;
}
}  // namespace detail

/// Any typeflow graph node: a leaf or an operation node.
template <class E>
concept expression = std::is_base_of_v<detail::expression_base, std::remove_cvref_t<E>>;

/// Element type, static shape and device of an expression.
template <expression E>
using value_type_t = typename std::remove_cvref_t<E>::value_type;
template <expression E>
using shape_t = typename std::remove_cvref_t<E>::shape_type;
template <expression E>
using device_t = typename std::remove_cvref_t<E>::device;

/// An operation node: the op tag `Op` (static attributes) applied to the
/// children `C...`. A node is a shared handle to its immutable children, so
/// copying it is cheap and never copies tensors; its identity at run time is
/// the address of that shared state.
template <class Op, class... C>
class node : public detail::expression_base {
public:
    using op = Op;
    using traits = typename Op::template traits<C...>;
    using value_type = typename traits::value_type;
    using shape_type = typename traits::shape_type;
    using device = typename traits::device;
    using children_list = meta::list<C...>;
    static constexpr op_kind kind = Op::kind;
    static constexpr bool is_leaf = false;
    /// Leading children that only order execution (control dependencies).
    static constexpr std::size_t control_inputs = [] {
        if constexpr (requires { traits::control_inputs; }) return std::size_t{traits::control_inputs};
        else return std::size_t{0};
    }();

    /// Use make_node or the op functions. The tag keeps this constructor out
    /// of implicit-conversion checks between node types, which otherwise
    /// recurse through every child and cost time exponential in the depth of
    /// graphs with shared children.
    /// (std::make_shared is avoided for the same reason: libstdc++'s
    /// implementation of it is exponential in that depth as well.)
    node(detail::children_tag, C... c) : p_(new detail::children_of<C...>(std::move(c)...)) {}

    /// Calls f(children...).
    template <class F>
    decltype(auto) apply_children(F&& f) const {
        return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
            return std::forward<F>(f)(child<I>()...);
        }(std::index_sequence_for<C...>{});
    }
    template <std::size_t I>
    const auto& child() const noexcept {
        return detail::get_child<I>(*p_);
    }
    /// Address of the shared state: equal for copies of one node.
    const void* identity() const noexcept { return p_.get(); }

private:
    std::shared_ptr<const detail::children_of<C...>> p_;
};

namespace detail {
template <class T>
inline constexpr bool is_node_v = false;
template <class Op, class... C>
inline constexpr bool is_node_v<node<Op, C...>> = true;

template <class E>
struct is_pure;
}  // namespace detail

/// True when no anonymous run-time constant is reachable from E: such a node
/// is identified by its type alone and merged with every node of that type.
template <class E>
inline constexpr bool is_pure_v = detail::is_pure<E>::value;

namespace detail {
template <class E>
struct is_pure {
    static constexpr bool value = E::pure;  // leaves say it
};
template <class Op, class... C>
struct is_pure<node<Op, C...>> {
    static constexpr bool value = (is_pure_v<C> && ...);
};
}  // namespace detail

/// Builds node<Op, decayed operands...>.
template <class Op, class... A>
auto make_node(A&&... a) {
    return node<Op, std::remove_cvref_t<A>...>(detail::children_tag{}, std::forward<A>(a)...);
}

}  // namespace typeflow
