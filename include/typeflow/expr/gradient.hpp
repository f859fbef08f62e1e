// typeflow/expr/gradient.hpp — the protocol by which an op states its
// vector-Jacobian product, and the simplifying helpers those rules use.
//
// Each op header specialises `gradient<Op>` with
//   template <std::size_t I, class N, class G>
//   static auto vjp(const N& n, const G& g);
// returning the adjoint contribution to child I of node n (of op Op) given the
// adjoint g of n, as an expression, or ad::zero when it is statically zero.
// The contribution may have any shape that broadcasts to the child's shape;
// tf::grad sums it back over broadcast axes. Rules are built from other ops,
// so gradients are graphs and can be differentiated again.
#pragma once
#include <cstddef>
#include <type_traits>

#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/node.hpp>

namespace typeflow {

/// The vector-Jacobian product of op Op; specialised in each op's header.
template <class Op>
struct gradient;

namespace ad {

/// A statically zero adjoint: simplifies away and is never evaluated.
struct zero {};

template <class T>
inline constexpr bool is_zero_v = std::is_same_v<meta::remove_cvref_t<T>, zero>;

template <class T>
inline constexpr bool is_one_v = false;
template <class T, long long N, class D>
inline constexpr bool is_one_v<literal<T, N, N, D>> = true;

/// The literal Num/Den with the dtype and device of expression E.
template <long long Num, long long Den = 1, class E>
auto lit_like(const E&) {
    return literal<value_type_t<E>, Num, Den, device_t<E>>{};
}

/// a + b, where a zero operand vanishes.
template <class A, class B>
auto add(const A& a, const B& b) {
    if constexpr (is_zero_v<A>) return b;
    else if constexpr (is_zero_v<B>) return a;
    else return a + b;
}
/// -a (zero stays zero).
template <class A>
auto neg(const A& a) {
    if constexpr (is_zero_v<A>) return zero{};
    else return -a;
}
/// a - b, where a zero operand vanishes.
template <class A, class B>
auto sub(const A& a, const B& b) {
    if constexpr (is_zero_v<B>) return a;
    else if constexpr (is_zero_v<A>) return -b;
    else return a - b;
}
/// a * b, where a zero makes zero and a literal one vanishes.
template <class A, class B>
auto mul(const A& a, const B& b) {
    if constexpr (is_zero_v<A> || is_zero_v<B>) return zero{};
    else if constexpr (is_one_v<A>) return b;
    else if constexpr (is_one_v<B>) return a;
    else return a * b;
}
/// a / b (a zero numerator makes zero, a literal one denominator vanishes).
template <class A, class B>
auto div(const A& a, const B& b) {
    if constexpr (is_zero_v<A>) return zero{};
    else if constexpr (is_one_v<B>) return a;
    else return a / b;
}

/// True when a contribution to a child of dtype T can be non-zero: only
/// floating-point values have gradients.
template <class E>
inline constexpr bool differentiable_v = std::is_floating_point_v<value_type_t<E>>;

}  // namespace ad

/// The rule of ops whose outputs do not depend differentiably on any input
/// (comparisons, logical ops, argmax, assignments): every contribution is zero.
struct no_gradient {
    template <std::size_t I, class N, class G>
    static ad::zero vjp(const N&, const G&) {
        return {};
    }
};

}  // namespace typeflow
