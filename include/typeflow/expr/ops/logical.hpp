// typeflow/expr/ops/logical.hpp — element-wise and, or, not on bool tensors.
#pragma once
#include <typeflow/expr/elementwise.hpp>

namespace typeflow {
namespace op {
struct logical_and {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "logical_and";
    template <class A, class B>
    using traits = decltype(binary_rule<logical_and, rule::logical, A, B>());
    static auto array(const auto& a, const auto& b) { return a && b; }
};
struct logical_or {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "logical_or";
    template <class A, class B>
    using traits = decltype(binary_rule<logical_or, rule::logical, A, B>());
    static auto array(const auto& a, const auto& b) { return a || b; }
};
struct logical_not {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "logical_not";
    template <class A>
    using traits = decltype(unary_rule<logical_not, rule::logical, A>());
    static auto array(const auto& a) { return a == false; }
};
}  // namespace op

/// Element-wise a AND b on bool tensors.
template <class A, class B> requires binary_operands<A, B>
auto logical_and(A&& a, B&& b) { return make_binary<op::logical_and>(std::forward<A>(a), std::forward<B>(b)); }
/// Element-wise a OR b on bool tensors.
template <class A, class B> requires binary_operands<A, B>
auto logical_or(A&& a, B&& b) { return make_binary<op::logical_or>(std::forward<A>(a), std::forward<B>(b)); }
/// Element-wise NOT a on a bool tensor.
template <expression A>
auto logical_not(A&& a) { return make_node<op::logical_not>(std::forward<A>(a)); }
template <class A, class B> requires binary_operands<A, B>
auto operator&&(A&& a, B&& b) { return logical_and(std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires binary_operands<A, B>
auto operator||(A&& a, B&& b) { return logical_or(std::forward<A>(a), std::forward<B>(b)); }
template <expression A>
auto operator!(A&& a) { return logical_not(std::forward<A>(a)); }

}  // namespace typeflow
