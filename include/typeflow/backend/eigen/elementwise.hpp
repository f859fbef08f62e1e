// typeflow/backend/eigen/elementwise.hpp — element-wise ops as vectorised
// Eigen array expressions: array_form<Op>::eval(arrays...) for the CPU's fused
// regions. An op without an entry here is evaluated through its scalar
// functor (Op::apply), correct but not vectorised.
#pragma once
#include <Eigen/Core>

#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/assign.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/ops/control.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/let.hpp>
#include <typeflow/expr/ops/logical.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/where.hpp>

namespace typeflow::backend::eigen {

/// The Eigen array form of element-wise op Op (default: its scalar functor).
template <class Op>
struct array_form {
    static auto eval(const auto& a) {
        return a.unaryExpr([](auto x) { return Op::apply(x); });
    }
    static auto eval(const auto& a, const auto& b) {
        return a.binaryExpr(b, [](auto x, auto y) { return Op::apply(x, y); });
    }
};

#define TYPEFLOW_EIGEN_UNARY(OP, ARRAY)                     \
    template <>                                             \
    struct array_form<op::OP> {                             \
        static auto eval(const auto& a) { return ARRAY; }   \
    };
#define TYPEFLOW_EIGEN_BINARY(OP, ARRAY)                                     \
    template <>                                                              \
    struct array_form<op::OP> {                                              \
        static auto eval(const auto& a, const auto& b) { return ARRAY; }     \
    };

TYPEFLOW_EIGEN_BINARY(add, a + b)
TYPEFLOW_EIGEN_BINARY(sub, a - b)
TYPEFLOW_EIGEN_BINARY(mul, a * b)
TYPEFLOW_EIGEN_BINARY(div, a / b)
TYPEFLOW_EIGEN_BINARY(pow, a.pow(b))
TYPEFLOW_EIGEN_BINARY(maximum, a.max(b))
TYPEFLOW_EIGEN_BINARY(minimum, a.min(b))
TYPEFLOW_EIGEN_UNARY(neg, -a)
TYPEFLOW_EIGEN_UNARY(exp, a.exp())
TYPEFLOW_EIGEN_UNARY(log, a.log())
TYPEFLOW_EIGEN_UNARY(sqrt, a.sqrt())
TYPEFLOW_EIGEN_UNARY(rsqrt, a.rsqrt())
TYPEFLOW_EIGEN_UNARY(sigmoid, a.logistic())
TYPEFLOW_EIGEN_UNARY(tanh, a.tanh())
TYPEFLOW_EIGEN_UNARY(cos, a.cos())
TYPEFLOW_EIGEN_UNARY(sin, a.sin())
TYPEFLOW_EIGEN_UNARY(abs, a.abs())
TYPEFLOW_EIGEN_UNARY(square, a.square())
TYPEFLOW_EIGEN_UNARY(relu, a.max(typename meta::remove_cvref_t<decltype(a)>::Scalar(0)))
TYPEFLOW_EIGEN_BINARY(less, a < b)
TYPEFLOW_EIGEN_BINARY(less_equal, a <= b)
TYPEFLOW_EIGEN_BINARY(greater, a > b)
TYPEFLOW_EIGEN_BINARY(greater_equal, a >= b)
TYPEFLOW_EIGEN_BINARY(equal, a == b)
TYPEFLOW_EIGEN_BINARY(not_equal, a != b)
TYPEFLOW_EIGEN_BINARY(logical_and, a && b)
TYPEFLOW_EIGEN_BINARY(logical_or, a || b)
TYPEFLOW_EIGEN_UNARY(logical_not, a == false)
TYPEFLOW_EIGEN_BINARY(broadcast_like, ((void)b, a))
TYPEFLOW_EIGEN_UNARY(stop_gradient, a)
TYPEFLOW_EIGEN_UNARY(after, a)
TYPEFLOW_EIGEN_UNARY(identity, a)
#undef TYPEFLOW_EIGEN_UNARY
#undef TYPEFLOW_EIGEN_BINARY

template <>
struct array_form<op::where> {
    static auto eval(const auto& c, const auto& a, const auto& b) { return c.select(a, b); }
};
template <class To>
struct array_form<op::cast<To>> {
    static auto eval(const auto& a) { return a.template cast<To>(); }
};
template <assign_mode M>
struct array_form<op::assign<M>> {
    static auto eval(const auto& v, const auto& e) {
        if constexpr (M == assign_mode::set) return e;
        else if constexpr (M == assign_mode::add) return v + e;
        else return v - e;
    }
};
template <class Inner>
struct array_form<op::locked_update<Inner>> : array_form<Inner> {};

}  // namespace typeflow::backend::eigen
