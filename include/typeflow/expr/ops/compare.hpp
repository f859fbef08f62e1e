// typeflow/expr/ops/compare.hpp — element-wise comparisons yielding bool.
#pragma once
#include <typeflow/expr/elementwise.hpp>

namespace typeflow {
namespace op {
#define TYPEFLOW_COMPARE_OP(NAME, RULE, SYM)                                   \
    struct NAME {                                                              \
        static constexpr op_kind kind = op_kind::elementwise;                  \
        static constexpr std::string_view name = #NAME;                        \
        template <class A, class B>                                            \
        using traits = decltype(binary_rule<NAME, rule::RULE, A, B>());        \
        static auto array(const auto& a, const auto& b) { return a SYM b; }    \
    };
TYPEFLOW_COMPARE_OP(less, ordering, <)
TYPEFLOW_COMPARE_OP(less_equal, ordering, <=)
TYPEFLOW_COMPARE_OP(greater, ordering, >)
TYPEFLOW_COMPARE_OP(greater_equal, ordering, >=)
TYPEFLOW_COMPARE_OP(equal, equality, ==)
TYPEFLOW_COMPARE_OP(not_equal, equality, !=)
#undef TYPEFLOW_COMPARE_OP
}  // namespace op

/// a < b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
auto operator<(A&& a, B&& b) { return make_binary<op::less>(std::forward<A>(a), std::forward<B>(b)); }
/// a <= b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
auto operator<=(A&& a, B&& b) { return make_binary<op::less_equal>(std::forward<A>(a), std::forward<B>(b)); }
/// a > b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
auto operator>(A&& a, B&& b) { return make_binary<op::greater>(std::forward<A>(a), std::forward<B>(b)); }
/// a >= b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
auto operator>=(A&& a, B&& b) { return make_binary<op::greater_equal>(std::forward<A>(a), std::forward<B>(b)); }
/// a == b, element-wise, as bool (a function, so == keeps its usual meaning).
template <class A, class B> requires binary_operands<A, B>
auto equal(A&& a, B&& b) { return make_binary<op::equal>(std::forward<A>(a), std::forward<B>(b)); }
/// a != b, element-wise, as bool.
template <class A, class B> requires binary_operands<A, B>
auto not_equal(A&& a, B&& b) { return make_binary<op::not_equal>(std::forward<A>(a), std::forward<B>(b)); }
/// Function forms of the ordering operators.
template <class A, class B> requires binary_operands<A, B>
auto less(A&& a, B&& b) { return std::forward<A>(a) < std::forward<B>(b); }
template <class A, class B> requires binary_operands<A, B>
auto less_equal(A&& a, B&& b) { return std::forward<A>(a) <= std::forward<B>(b); }
template <class A, class B> requires binary_operands<A, B>
auto greater(A&& a, B&& b) { return std::forward<A>(a) > std::forward<B>(b); }
template <class A, class B> requires binary_operands<A, B>
auto greater_equal(A&& a, B&& b) { return std::forward<A>(a) >= std::forward<B>(b); }

}  // namespace typeflow
