// typeflow/expr/ops/arithmetic.hpp — + - * / and unary minus, pow, maximum,
// minimum, with numpy broadcasting.
#pragma once
#include <typeflow/expr/elementwise.hpp>

namespace typeflow {
namespace op {
struct add {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "add";
    template <class A, class B>
    using traits = decltype(binary_rule<add, rule::numeric, A, B>());
    static auto array(const auto& a, const auto& b) { return a + b; }
};
struct sub {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "sub";
    template <class A, class B>
    using traits = decltype(binary_rule<sub, rule::numeric, A, B>());
    static auto array(const auto& a, const auto& b) { return a - b; }
};
struct mul {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "mul";
    template <class A, class B>
    using traits = decltype(binary_rule<mul, rule::numeric, A, B>());
    static auto array(const auto& a, const auto& b) { return a * b; }
};
struct div {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "div";
    template <class A, class B>
    using traits = decltype(binary_rule<div, rule::numeric, A, B>());
    static auto array(const auto& a, const auto& b) { return a / b; }
};
struct pow {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "pow";
    template <class A, class B>
    using traits = decltype(binary_rule<pow, rule::floating, A, B>());
    static auto array(const auto& a, const auto& b) { return a.pow(b); }
};
struct maximum {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "maximum";
    template <class A, class B>
    using traits = decltype(binary_rule<maximum, rule::numeric, A, B>());
    static auto array(const auto& a, const auto& b) { return a.max(b); }
};
struct minimum {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "minimum";
    template <class A, class B>
    using traits = decltype(binary_rule<minimum, rule::numeric, A, B>());
    static auto array(const auto& a, const auto& b) { return a.min(b); }
};
struct neg {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "neg";
    template <class A>
    using traits = decltype(unary_rule<neg, rule::numeric, A>());
    static auto array(const auto& a) { return -a; }
};
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
