// typeflow/expr/ops/compare.hpp — element-wise comparisons yielding bool.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
TYPEFLOW_BINARY_OP(less, ordering, a < b)
TYPEFLOW_BINARY_OP(less_equal, ordering, a <= b)
TYPEFLOW_BINARY_OP(greater, ordering, a > b)
TYPEFLOW_BINARY_OP(greater_equal, ordering, a >= b)
TYPEFLOW_BINARY_OP(equal, equality, a == b)
TYPEFLOW_BINARY_OP(not_equal, equality, a != b)
}  // namespace op

/// a < b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) operator<(const A& a, const B& b) { return make_binary<op::less>(a, b); }
/// a <= b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) operator<=(const A& a, const B& b) { return make_binary<op::less_equal>(a, b); }
/// a > b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) operator>(const A& a, const B& b) { return make_binary<op::greater>(a, b); }
/// a >= b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) operator>=(const A& a, const B& b) { return make_binary<op::greater_equal>(a, b); }
/// a == b, element-wise, as bool (a function, so == keeps its usual meaning).
template <class A, class B> requires binary_operands<A, B>
decltype(auto) equal(const A& a, const B& b) { return make_binary<op::equal>(a, b); }
/// a != b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) not_equal(const A& a, const B& b) { return make_binary<op::not_equal>(a, b); }
/// Function forms of the ordering operators.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) less(const A& a, const B& b) { return a < b; }
template <class A, class B> requires binary_operands<A, B>
decltype(auto) less_equal(const A& a, const B& b) { return a <= b; }
template <class A, class B> requires binary_operands<A, B>
decltype(auto) greater(const A& a, const B& b) { return a > b; }
template <class A, class B> requires binary_operands<A, B>
decltype(auto) greater_equal(const A& a, const B& b) { return a >= b; }

// comparisons have no gradient (a static zero)
template <> struct gradient<op::less> : no_gradient {};
template <> struct gradient<op::less_equal> : no_gradient {};
template <> struct gradient<op::greater> : no_gradient {};
template <> struct gradient<op::greater_equal> : no_gradient {};
template <> struct gradient<op::equal> : no_gradient {};
template <> struct gradient<op::not_equal> : no_gradient {};

// A misuse (what an op returns when its rule does not hold, expr/node.hpp) is a
// type of namespace diagnostic: it finds these operators there by argument-
// dependent lookup, and so passes through them.
namespace diagnostic {
using typeflow::operator<;
using typeflow::operator<=;
using typeflow::operator>;
using typeflow::operator>=;
}  // namespace diagnostic

}  // namespace typeflow
