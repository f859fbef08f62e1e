// typeflow/layers/merge.hpp — layers of the functional API that join
// several expressions (Keras' Concatenate, Add, Multiply, Average). They own
// no variables, so they are plain functions:
//
//   auto h = tf::layers::concatenate<-1>(title_features, body_features);
#pragma once
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/array.hpp>

namespace typeflow::layers {

/// The inputs joined along Axis (default: the last).
template <index_t Axis = -1, expression A, expression B, expression... R>
auto concatenate(const A& a, const B& b, const R&... r) {
    return concat<Axis>(a, b, r...);
}
/// The element-wise sum of the inputs.
template <expression A, expression... R>
auto add(const A& a, const R&... r) {
    return (a + ... + r);
}
/// The element-wise product of the inputs.
template <expression A, expression... R>
auto multiply(const A& a, const R&... r) {
    return (a * ... * r);
}
/// The element-wise mean of the inputs.
template <expression A, expression... R>
auto average(const A& a, const R&... r) {
    using T = value_type_t<A>;
    return (a + ... + r) * scalar<T, device_t<A>>(T(1) / T(1 + sizeof...(R)));
}

}  // namespace typeflow::layers
