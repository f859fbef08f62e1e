// typeflow/expr/ops/arithmetic.hpp — + - * / and unary minus, pow, maximum,
// minimum, with numpy broadcasting.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
TYPEFLOW_BINARY_OP(add, numeric, A(a + b))
TYPEFLOW_BINARY_OP(sub, numeric, A(a - b))
TYPEFLOW_BINARY_OP(mul, numeric, A(a * b))
TYPEFLOW_BINARY_OP(div, numeric, A(a / b))
TYPEFLOW_BINARY_OP(pow, floating, math::pow(a, b))
TYPEFLOW_BINARY_OP(maximum, numeric, a < b ? b : a)
TYPEFLOW_BINARY_OP(minimum, numeric, b < a ? b : a)
TYPEFLOW_UNARY_OP(neg, numeric, A(-a))
}  // namespace op
template <>
inline constexpr epilogue_role epilogue_role_of<op::add> = epilogue_role::bias_add;

/// Element-wise a + b with broadcasting.
template <class A, class B>
    requires binary_operands<A, B>
decltype(auto) operator+(const A& a, const B& b) {
    return make_binary<op::add>(a, b);
}
/// Element-wise a - b with broadcasting.
template <class A, class B>
    requires binary_operands<A, B>
decltype(auto) operator-(const A& a, const B& b) {
    return make_binary<op::sub>(a, b);
}
/// Element-wise a * b with broadcasting (not a matrix product: see matmul).
template <class A, class B>
    requires binary_operands<A, B>
decltype(auto) operator*(const A& a, const B& b) {
    return make_binary<op::mul>(a, b);
}
/// Element-wise a / b with broadcasting (integer division truncates).
template <class A, class B>
    requires binary_operands<A, B>
decltype(auto) operator/(const A& a, const B& b) {
    return make_binary<op::div>(a, b);
}
/// Element-wise -a.
template <operand A>
decltype(auto) operator-(const A& a) {
    return make_node<op::neg>(a);
}
/// Element-wise a to the power b (floating point).
template <class A, class B>
    requires binary_operands<A, B>
decltype(auto) pow(const A& a, const B& b) {
    return make_binary<op::pow>(a, b);
}
/// Element-wise larger of a and b.
template <class A, class B>
    requires binary_operands<A, B>
decltype(auto) maximum(const A& a, const B& b) {
    return make_binary<op::maximum>(a, b);
}
/// Element-wise smaller of a and b.
template <class A, class B>
    requires binary_operands<A, B>
decltype(auto) minimum(const A& a, const B& b) {
    return make_binary<op::minimum>(a, b);
}

// ---- vector-Jacobian products (maximum/minimum: ties send the gradient to a) ----
template <>
struct gradient<op::add> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) { return g; }
};
template <>
struct gradient<op::sub> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        if constexpr (I == 0) return g;
        else return ad::neg(g);
    }
};
template <>
struct gradient<op::mul> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::mul(g, n.template child<1 - I>()); }
};
template <>
struct gradient<op::div> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        const auto& b = n.template child<1>();
        if constexpr (I == 0) return ad::div(g, b);
        else return ad::neg(ad::div(ad::mul(g, n.template child<0>()), square(b)));
    }
};
template <>
struct gradient<op::pow> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        const auto& a = n.template child<0>();
        const auto& b = n.template child<1>();
        if constexpr (I == 0) return ad::mul(ad::mul(g, b), pow(a, ad::sub(b, ad::lit_like<1>(b))));
        else return ad::mul(ad::mul(g, n), log(a));
    }
};
template <>
struct gradient<op::maximum> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        auto first = n.template child<0>() >= n.template child<1>();
        if constexpr (I == 0) return where(first, g, ad::lit_like<0>(g));
        else return where(first, ad::lit_like<0>(g), g);
    }
};
template <>
struct gradient<op::minimum> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        auto first = n.template child<0>() <= n.template child<1>();
        if constexpr (I == 0) return where(first, g, ad::lit_like<0>(g));
        else return where(first, ad::lit_like<0>(g), g);
    }
};
template <>
struct gradient<op::neg> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) { return ad::neg(g); }
};

// A misuse (what an op returns when its rule does not hold, expr/node.hpp) is a
// type of namespace diagnostic: it finds these operators there by argument-
// dependent lookup, and so passes through them.
namespace diagnostic {
using typeflow::operator+;
using typeflow::operator-;
using typeflow::operator*;
using typeflow::operator/;
}  // namespace diagnostic

}  // namespace typeflow
