// typeflow/runtime/expr.hpp — tf::expr<T, S>: an expression whose type is a
// short tag (dtype, shape, device), not the graph below it; tf::repeat.
#pragma once
#include <cstddef>
#include <utility>

#include <typeflow/runtime/expr_type.hpp>
#include <typeflow/runtime/expr_normal_form.hpp>
#include <typeflow/runtime/expr_backprop.hpp>

namespace typeflow {

/// The expression `step` applied n times to x, each result held in a
/// tf::expr of x's dtype, shape and device: the form for deep stacks of one
/// block (residual steps, an unrolled recurrence) that compiles the block
/// once, whatever n is (see tf::expr). `step` takes the running
/// tf::expr, or the tf::expr and the step's index (0 .. n - 1), and returns
/// an expression that fits x's shape. n = 0 gives x itself, in a tf::expr.
///
///     auto h = tf::repeat(100, h0, [&](const auto& h) { return tf::tanh(h * w + h); });
template <expression E, class F>
auto repeat(std::size_t n, const E& x, F&& step) {
    using H = expr<value_type_t<E>, shape_t<E>, device_t<E>>;
    H h = x;
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (requires { step(std::as_const(h), i); }) h = step(std::as_const(h), i);
        else h = step(std::as_const(h));
    }
    return h;
}
/// repeat with the count fixed at compile time: tf::repeat<N>(x, step).
template <std::size_t N, expression E, class F>
auto repeat(const E& x, F&& step) {
    return repeat(N, x, static_cast<F&&>(step));
}

}  // namespace typeflow
