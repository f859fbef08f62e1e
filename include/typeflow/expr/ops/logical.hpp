// typeflow/expr/ops/logical.hpp — element-wise and, or, not on bool tensors.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
TYPEFLOW_BINARY_OP(logical_and, logical, a && b)
TYPEFLOW_BINARY_OP(logical_or, logical, a || b)
TYPEFLOW_UNARY_OP(logical_not, logical, !a)
}  // namespace op

/// Element-wise a AND b on bool tensors.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) logical_and(const A& a, const B& b) { return make_binary<op::logical_and>(a, b); }
/// Element-wise a OR b on bool tensors.
template <class A, class B> requires binary_operands<A, B>
decltype(auto) logical_or(const A& a, const B& b) { return make_binary<op::logical_or>(a, b); }
/// Element-wise NOT a on a bool tensor.
template <operand A>
decltype(auto) logical_not(const A& a) { return make_node<op::logical_not>(a); }
template <class A, class B> requires binary_operands<A, B>
decltype(auto) operator&&(const A& a, const B& b) { return logical_and(a, b); }
template <class A, class B> requires binary_operands<A, B>
decltype(auto) operator||(const A& a, const B& b) { return logical_or(a, b); }
template <operand A>
decltype(auto) operator!(const A& a) { return logical_not(a); }

template <> struct gradient<op::logical_and> : no_gradient {};
template <> struct gradient<op::logical_or> : no_gradient {};
template <> struct gradient<op::logical_not> : no_gradient {};

// A misuse (what an op returns when its rule does not hold, expr/node.hpp) is a
// type of namespace diagnostic: it finds these operators there by argument-
// dependent lookup, and so passes through them.
namespace diagnostic {
using typeflow::operator&&;
using typeflow::operator||;
using typeflow::operator!;
}  // namespace diagnostic

}  // namespace typeflow
