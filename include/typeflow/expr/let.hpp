// typeflow/expr/let.hpp — tf::identity, and tf::let: a step of a graph whose
// type is named by the lambda that builds it, not by the graph below it.
#pragma once
#include <concepts>
#include <string_view>
#include <type_traits>

#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/node.hpp>

namespace typeflow {
namespace op {
/// node<identity, X>: the value of X.
struct identity {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "identity";
    template <class X>
    struct traits {
        using value_type = value_type_t<X>;
        using shape_type = shape_t<X>;
        using device = device_t<X>;
    };
    template <class X>
    TYPEFLOW_HOST_DEVICE static constexpr X apply(X x) { return x; }
};
/// node<let_view, X>: X's value as a view of its buffer (a tf::let over an
/// expression that is not element-wise: a loop, a matrix product, a leaf).
struct let_view {
    static constexpr op_kind kind = op_kind::view;
    static constexpr std::string_view name = "let";
    template <class X>
    using traits = identity::traits<X>;
    static dims infer(dims x) { return x; }
};
}  // namespace op

/// The value of x, as a node of its own (TensorFlow's tf.identity).
template <operand X>
decltype(auto) identity(const X& x) {
    return make_node<op::identity>(x);
}

/// identity: the adjoint passes through.
template <>
struct gradient<op::identity> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        return g;
    }
};

/// let_view: the adjoint passes through.
template <>
struct gradient<op::let_view> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        return g;
    }
};

namespace detail {
// A step or a branch (tf::let, tf::cond, tf::switch_case): callable with no arguments (std::invocable instantiates the
// standard's invoke classes, whose -g names spell the node each returns).
template <class F>
concept nullary = requires(F& f) { f(); };

template <class F>
using let_value_t = meta::remove_cvref_t<decltype(std::declval<F&>()())>;
template <class X>
struct let_op {
    using type = op::let_view;
};
template <class X>
    requires(is_node_v<X> && X::op::kind == op_kind::elementwise)
struct let_op<X> {
    using type = op::identity;
};
template <class F>
struct let_op<let_node<F>> {
    using type = typename let_node<F>::op;
};
// op::identity over an element-wise value (it fuses with it), else op::let_view (no copy)
template <class F>
using let_op_t = typename let_op<let_value_t<F>>::type;
}  // namespace detail

/// The node tf::let makes: the identity of the expression F returns, with F
/// (a lambda's closure type) as its only template argument. Its type does not
/// spell the graph below it, so the names the compiler writes for graphs
/// built of such steps (debug information, diagnostics) grow with the number
/// of steps, not with the number of paths through them.
template <class F>
class let_node : public node<detail::let_op_t<F>, detail::let_value_t<F>> {
public:
    using value_expression = detail::let_value_t<F>;
    explicit let_node(const value_expression& x)
        : node<detail::let_op_t<F>, value_expression>(detail::children_tag{}, x) {}
};

namespace detail {
template <class F>
struct child_ops<let_node<F>> : meta::compile_time_only {
    using type = node_child_ops;
};
template <class F>
struct is_pure<let_node<F>> : is_pure<let_value_t<F>> {};
template <class T>
inline constexpr bool is_let_v = false;
template <class F>
inline constexpr bool is_let_v<let_node<F>> = true;
}  // namespace detail

/// The expression `step()` returns, as one node whose type is named by the
/// lambda `step`:
///
///     auto h1 = tf::let([&] { return tf::tanh(h0 * w + h0); });
///
/// A graph built with `auto` spells every node below a step in the step's
/// type, so a step that reads its input twice (a residual connection) doubles
/// the length of every later type's name: a Debug build (`-g`) of 20 such
/// steps needs gigabytes of compiler memory. Wrapped in tf::let, each step's
/// name is `let_node<f()::<lambda()>>`, however deep the graph. Write the
/// lambda in a function that is not a template (the closure's name includes
/// the enclosing function's template arguments). Over an element-wise step the
/// node is an element-wise identity that fuses with it; over anything else (a
/// loop, a matrix product, a leaf) a view of its buffer, so nothing is copied.
/// tf::grad passes through it.
template <class F>
    requires detail::nullary<F>
decltype(auto) let(F step) {
    using R = decltype(step());
    if constexpr (detail::is_misuse_v<meta::remove_reference_t<R>>) {
        return step();  // a misuse inside the step stays one error
    } else {
        static_assert(expression<R>, "typeflow: let: the lambda must return a graph expression");
        if constexpr (expression<R>) return let_node<F>(step());
    }
}

}  // namespace typeflow
