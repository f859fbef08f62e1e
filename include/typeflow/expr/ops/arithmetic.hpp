// typeflow/expr/ops/arithmetic.hpp — + - * / and unary minus, pow, maximum,
// minimum, with numpy broadcasting.
#pragma once
#include <typeflow/expr/elementwise.hpp>

namespace typeflow {
namespace op {
TYPEFLOW_BINARY_OP(add, numeric, a + b)
TYPEFLOW_BINARY_OP(sub, numeric, a - b)
TYPEFLOW_BINARY_OP(mul, numeric, a * b)
TYPEFLOW_BINARY_OP(div, numeric, a / b)
TYPEFLOW_BINARY_OP(pow, floating, a.pow(b))
TYPEFLOW_BINARY_OP(maximum, numeric, a.max(b))
TYPEFLOW_BINARY_OP(minimum, numeric, a.min(b))
TYPEFLOW_UNARY_OP(neg, numeric, -a)
}  // namespace op

/// Element-wise a + b with broadcasting.
template <class A, class B>
    requires binary_operands<A, B>
auto operator+(A&& a, B&& b) {
    return make_binary<op::add>(std::forward<A>(a), std::forward<B>(b));
}
/// Element-wise a - b with broadcasting.
template <class A, class B>
    requires binary_operands<A, B>
auto operator-(A&& a, B&& b) {
    return make_binary<op::sub>(std::forward<A>(a), std::forward<B>(b));
}
/// Element-wise a * b with broadcasting (not a matrix product: see matmul).
template <class A, class B>
    requires binary_operands<A, B>
auto operator*(A&& a, B&& b) {
    return make_binary<op::mul>(std::forward<A>(a), std::forward<B>(b));
}
/// Element-wise a / b with broadcasting (integer division truncates).
template <class A, class B>
    requires binary_operands<A, B>
auto operator/(A&& a, B&& b) {
    return make_binary<op::div>(std::forward<A>(a), std::forward<B>(b));
}
/// Element-wise -a.
template <expression A>
auto operator-(A&& a) {
    return make_node<op::neg>(std::forward<A>(a));
}
/// Element-wise a to the power b (floating point).
template <class A, class B>
    requires binary_operands<A, B>
auto pow(A&& a, B&& b) {
    return make_binary<op::pow>(std::forward<A>(a), std::forward<B>(b));
}
/// Element-wise larger of a and b.
template <class A, class B>
    requires binary_operands<A, B>
auto maximum(A&& a, B&& b) {
    return make_binary<op::maximum>(std::forward<A>(a), std::forward<B>(b));
}
/// Element-wise smaller of a and b.
template <class A, class B>
    requires binary_operands<A, B>
auto minimum(A&& a, B&& b) {
    return make_binary<op::minimum>(std::forward<A>(a), std::forward<B>(b));
}

}  // namespace typeflow
