// typeflow/expr/ops/normalization.hpp — moments, batch normalisation and
// layer normalisation (TensorFlow's tf.nn.moments and
// tf.nn.batch_normalization; Keras' LayerNormalization over the last axis).
//
//   auto [m, v] = tf::moments<0, 1, 2>(x);                 // NHWC: per-channel mean and variance, [C]
//   auto y = tf::batch_normalization(x, m, v, beta, gamma, 1e-3f);
//   auto z = tf::layer_normalization(x, gamma, beta, 1e-3f);  // over the last axis
//
// All three are compositions of existing ops (reductions and element-wise
// ops, which fuse), so they need no kernel and their gradients come from the
// rules of the ops they are built from. The variance is the biased one
// (divided by the count), as tf.nn.moments computes it.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

#include <typeflow/core/axes.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/reduce.hpp>

namespace typeflow::diagnostic {
/// A parameter of a normalisation (mean, variance, offset, scale) does not
/// broadcast to the input's shape without enlarging it.
template <class Op, class InputShape, class ParameterShape>
struct normalization_parameter_does_not_fit;
}  // namespace typeflow::diagnostic

namespace typeflow {

namespace op {
// Name tags of the composite normalisations (they build no node of their
// own): the first argument of their compile-time diagnostics.
struct moments {};
struct batch_normalization {};
struct layer_normalization {};
}  // namespace op

/// The mean and variance of a tensor over some axes (what moments returns;
/// `auto [m, v] = tf::moments<0>(x)`).
template <class M, class V>
struct moments_result {
    M mean;
    V variance;
};

namespace detail {
// True when a parameter of shape P broadcasts to shape X and gives X.
template <class X, class P>
constexpr bool fits_into() {
    const dims x = X::value, p = P::value;
    if (p.rank > x.rank) return false;
    for (std::size_t i = 0; i < p.rank; ++i) {
        const index_t a = x.d[x.rank - p.rank + i], b = p.d[i];
        if (b != 1 && b != a && b != dyn && a != dyn) return false;  // dyn: checked at run time
    }
    return true;
}
// The rule of a parameter P of input X: its diagnostic, or void.
template <class Op, class X, class P>
using parameter_failure = require::first_failure_t<
    require::same_dtype<Op, value_type_t<X>, value_type_t<P>>, require::same_device<Op, device_t<X>, device_t<P>>,
    // a parameter (mean, variance, offset or scale) must broadcast to the input's shape, e.g. [C] for input [..., C]
    require::that<fits_into<shape_t<X>, shape_t<P>>(), diagnostic::normalization_parameter_does_not_fit<Op, shape_t<X>, shape_t<P>>>>;
// The rule of a normalisation of X with parameters P...: its diagnostic, or void.
template <class Op, class X, class... P>
using normalization_failure =
    require::first_failure_t<require::floating<Op, value_type_t<X>>, require::none<parameter_failure<Op, X, P>>...>;
// A number becomes a scalar of x's dtype and device; an expression stays.
template <class X, class E>
auto epsilon_operand(const E& e) {
    return as_operand<value_type_t<X>, device_t<X>>(e);
}
}  // namespace detail

/// The mean and (biased) variance of x over Axes (all when none are given),
/// as tf.nn.moments: `auto [mean, variance] = tf::moments<0, 1, 2>(x)`. The
/// reduced axes are dropped, or kept with extent 1 given tf::keepdims. As in
/// TensorFlow, the variance is mean(square(x - stop_gradient(mean))): its
/// gradient is exact, though its second derivative through the mean is not.
template <index_t... Axes, operand X>
decltype(auto) moments(const X& x, keepdims_t) {
    if constexpr (detail::is_misuse_v<X>) {
        return detail::first_misuse<X>();
    } else if constexpr (!floating_c<value_type_t<X>>) {
        return detail::misuse<diagnostic::needs_floating_point<op::moments, value_type_t<X>>>();
    } else {
        auto m = mean<Axes...>(x, keepdims);
        auto v = mean<Axes...>(square(x - stop_gradient(m)), keepdims);
        return moments_result<decltype(m), decltype(v)>{m, v};
    }
}
template <index_t... Axes, operand X>
decltype(auto) moments(const X& x) {
    if constexpr (detail::is_misuse_v<X>) {
        return detail::first_misuse<X>();
    } else if constexpr (!floating_c<value_type_t<X>>) {
        return detail::misuse<diagnostic::needs_floating_point<op::moments, value_type_t<X>>>();
    } else {
        constexpr std::size_t rank = shape_t<X>::rank;
        auto m = mean<Axes...>(x);
        auto mb = [&] {  // m with the reduced axes put back as extents of 1
            if constexpr (sizeof...(Axes) == 0) return m;  // a scalar broadcasts as it is
            else return detail::with_reduced_axes<0, rank, Axes...>(m);
        }();
        auto v = mean<Axes...>(square(x - stop_gradient(mb)));
        return moments_result<decltype(m), decltype(v)>{m, v};
    }
}

/// (x - mean) * scale / sqrt(variance + epsilon) + offset, as
/// tf.nn.batch_normalization computes it: inv = rsqrt(variance + epsilon) *
/// scale, then x * inv + (offset - mean * inv). mean, variance, offset and
/// scale broadcast to x's shape ([C] for NHWC input [N, H, W, C]); epsilon is
/// a number or a scalar expression. Element-wise ops: the result fuses.
template <operand X, operand M, operand V, operand B, operand G, class E>
decltype(auto) batch_normalization(const X& x, const M& mean, const V& variance, const B& offset, const G& scale,
                                   const E& epsilon) {
    using Op = op::batch_normalization;
    if constexpr (detail::is_misuse_v<X> || detail::is_misuse_v<M> || detail::is_misuse_v<V> || detail::is_misuse_v<B> ||
                  detail::is_misuse_v<G>) {
        return detail::first_misuse<X, M, V, B, G>();
    } else if constexpr (!std::is_void_v<detail::normalization_failure<Op, X, M, V, B, G>>) {
        return detail::misuse<detail::normalization_failure<Op, X, M, V, B, G>>();
    } else {
        auto inv = rsqrt(variance + detail::epsilon_operand<X>(epsilon)) * scale;
        return x * inv + (offset - mean * inv);
    }
}

/// Layer normalisation over the last axis (Keras' LayerNormalization):
/// each example's features normalised by their own mean and variance, then
/// scaled by `scale` and shifted by `offset` ([C] for input [..., C]).
template <operand X, operand G, operand B, class E>
decltype(auto) layer_normalization(const X& x, const G& scale, const B& offset, const E& epsilon) {
    using Op = op::layer_normalization;
    if constexpr (detail::is_misuse_v<X> || detail::is_misuse_v<G> || detail::is_misuse_v<B>) {
        return detail::first_misuse<X, G, B>();
    } else if constexpr (!std::is_void_v<detail::normalization_failure<Op, X, G, B>>) {
        return detail::misuse<detail::normalization_failure<Op, X, G, B>>();
    } else {
        auto [m, v] = moments<-1>(x, keepdims);
        return batch_normalization(x, m, v, offset, scale, epsilon);
    }
}

}  // namespace typeflow
