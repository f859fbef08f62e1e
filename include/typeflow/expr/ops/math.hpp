// typeflow/expr/ops/math.hpp — unary element-wise functions: exp, log, sqrt,
// rsqrt, abs, square, sigmoid, tanh, cos, sin, relu.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
TYPEFLOW_UNARY_OP(exp, floating, math::exp(a))
TYPEFLOW_UNARY_OP(log, floating, math::log(a))
TYPEFLOW_UNARY_OP(sqrt, floating, math::sqrt(a))
TYPEFLOW_UNARY_OP(rsqrt, floating, A(1) / math::sqrt(a))
TYPEFLOW_UNARY_OP(sigmoid, floating, math::sigmoid(a))
TYPEFLOW_UNARY_OP(tanh, floating, math::tanh(a))
TYPEFLOW_UNARY_OP(cos, floating, math::cos(a))
TYPEFLOW_UNARY_OP(sin, floating, math::sin(a))
TYPEFLOW_UNARY_OP(abs, numeric, a < A(0) ? A(-a) : a)
TYPEFLOW_UNARY_OP(square, numeric, A(a * a))
TYPEFLOW_UNARY_OP(relu, numeric, a > A(0) ? a : A(0))
}  // namespace op
template <>
inline constexpr epilogue_role epilogue_role_of<op::relu> = epilogue_role::relu;

/// e^x, element-wise.
template <operand A> decltype(auto) exp(const A& a) { return make_node<op::exp>(a); }
/// Natural logarithm, element-wise.
template <operand A> decltype(auto) log(const A& a) { return make_node<op::log>(a); }
/// Square root, element-wise.
template <operand A> decltype(auto) sqrt(const A& a) { return make_node<op::sqrt>(a); }
/// 1 / sqrt(x), element-wise.
template <operand A> decltype(auto) rsqrt(const A& a) { return make_node<op::rsqrt>(a); }
/// 1 / (1 + e^-x), element-wise.
template <operand A> decltype(auto) sigmoid(const A& a) { return make_node<op::sigmoid>(a); }
/// Hyperbolic tangent, element-wise.
template <operand A> decltype(auto) tanh(const A& a) { return make_node<op::tanh>(a); }
/// Cosine, element-wise.
template <operand A> decltype(auto) cos(const A& a) { return make_node<op::cos>(a); }
/// Sine, element-wise.
template <operand A> decltype(auto) sin(const A& a) { return make_node<op::sin>(a); }
/// |x|, element-wise.
template <operand A> decltype(auto) abs(const A& a) { return make_node<op::abs>(a); }
/// x * x, element-wise.
template <operand A> decltype(auto) square(const A& a) { return make_node<op::square>(a); }
/// max(x, 0), element-wise.
template <operand A> decltype(auto) relu(const A& a) { return make_node<op::relu>(a); }

// ---- vector-Jacobian products (abs: sign(0) = 0; relu: 0 at 0) ----
template <>
struct gradient<op::exp> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::mul(g, n); }
};
template <>
struct gradient<op::log> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::div(g, n.template child<0>()); }
};
template <>
struct gradient<op::sqrt> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::div(ad::mul(g, ad::lit_like<1, 2>(n)), n); }
};
template <>
struct gradient<op::rsqrt> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return ad::neg(ad::mul(ad::mul(g, ad::lit_like<1, 2>(n)), n / n.template child<0>()));
    }
};
template <>
struct gradient<op::sigmoid> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::mul(ad::mul(g, n), ad::lit_like<1>(n) - n); }
};
template <>
struct gradient<op::tanh> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::mul(g, ad::lit_like<1>(n) - square(n)); }
};
template <>
struct gradient<op::cos> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::neg(ad::mul(g, sin(n.template child<0>()))); }
};
template <>
struct gradient<op::sin> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::mul(g, cos(n.template child<0>())); }
};
template <>
struct gradient<op::abs> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        const auto& a = n.template child<0>();
        const auto z = ad::lit_like<0>(a);
        return where(a > z, g, where(a < z, ad::neg(g), ad::lit_like<0>(g)));
    }
};
template <>
struct gradient<op::square> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return ad::mul(g, n.template child<0>() * ad::lit_like<2>(n)); }
};
template <>
struct gradient<op::relu> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        const auto& a = n.template child<0>();
        return where(a > ad::lit_like<0>(a), g, ad::lit_like<0>(g));
    }
};

}  // namespace typeflow
