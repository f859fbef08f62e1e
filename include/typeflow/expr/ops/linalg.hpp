// typeflow/expr/ops/linalg.hpp — square-matrix linear algebra with
// gradients: matrix_inverse, matrix_determinant, log_determinant, solve.
//
// Operands are 2-D floating-point matrices (batches are not supported yet).
// Kernels (backend/eigen/ops/linalg.hpp) use an LU decomposition with partial
// pivoting. An exactly singular matrix (a zero pivot, or a non-finite
// result) makes matrix_inverse and solve throw a tf::error naming the op and
// the shape; matrix_determinant then yields 0 and log_determinant -inf.
// Matrices that are merely ill-conditioned are not detected.
#pragma once
#include <string>
#include <string_view>

#include <typeflow/core/error.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/expr/ops/transpose.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow::diagnostic {
template <class Op, class Shape>
struct not_a_matrix;
template <class Op, class Shape>
struct matrix_is_not_square;
template <class Op, class ShapeA, class ShapeB>
struct matrix_rows_differ;
}  // namespace typeflow::diagnostic

namespace typeflow {

namespace detail {
// Two extents that must be equal: the known one (dyn when both are dyn), or
// ok = false when both are known and differ.
struct same_extent {
    index_t n = dyn;
    bool ok = true;
};
constexpr same_extent unify(index_t a, index_t b) {
    if (a == dyn) return {b, true};
    if (b == dyn || a == b) return {a, true};
    return {a, false};
}
/// True when every one of `count` elements is finite.
template <class T>
bool all_finite(const T* p, index_t count) {
    for (index_t i = 0; i < count; ++i)
        if (!(p[i] - p[i] == T(0))) return false;  // inf - inf and NaN - NaN are NaN
    return true;
}
/// The error of matrix_inverse and solve on a singular or non-finite matrix
/// (every backend's kernel raises this one).
[[noreturn]] inline void throw_singular(std::string_view op, const dims& a) {
    typeflow::detail::raise(
        typeflow::detail::message()
        << op << ": the matrix of shape " << a
        << " is singular or not finite (a zero pivot in its LU decomposition, or a non-finite result)");
}
// Run-time check of a square 2-D matrix (for dyn extents).
inline void require_square(std::string_view op, const dims& a) {
    if (a.rank != 2 || a.d[0] != a.d[1])
        typeflow::detail::raise(typeflow::detail::message() << op << ": needs a square matrix, got shape " << a);
}
}  // namespace detail

namespace check {
/// S must be a 2-D matrix (rank 2) whose two extents can be equal; yields the
/// extent (dyn when both are dyn).
template <class Op, shape_c S>
constexpr index_t square_matrix() {
    constexpr bool rank_ok = S::rank == 2;
    if constexpr (!rank_ok) {
        diagnostic::not_a_matrix<Op, S> error;
    }
    static_assert(rank_ok, "typeflow: this linear-algebra op needs a 2-D matrix (batches are not supported)");
    constexpr detail::same_extent e = detail::unify(S::value.d[0], S::value.d[1]);
    if constexpr (rank_ok && !e.ok) {
        diagnostic::matrix_is_not_square<Op, S> error;
    }
    static_assert(!rank_ok || e.ok, "typeflow: this linear-algebra op needs a square matrix (rows == columns)");
    return e.n;
}
}  // namespace check

namespace require {
/// S is a 2-D matrix (batches are not supported) whose two extents can be
/// equal (rows == columns).
template <class Op, shape_c S>
using square_matrix = first_failure_t<
    that<S::rank == 2, diagnostic::not_a_matrix<Op, S>>,
    that<S::rank != 2 || detail::unify(S::value.d[0], S::value.d[1]).ok, diagnostic::matrix_is_not_square<Op, S>>>;
}  // namespace require

namespace op {
/// The inverse of a square matrix.
struct matrix_inverse {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "matrix_inverse";
    template <class A>
    static constexpr auto rule() {
        using failure = require::first_failure_t<require::floating<matrix_inverse, value_type_t<A>>,
                                                 require::none<require::square_matrix<matrix_inverse, shape_t<A>>>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr index_t n = detail::unify(shape_t<A>::value.d[0], shape_t<A>::value.d[1]).n;
            return result_traits<value_type_t<A>, shape<n, n>, device_t<A>>{};
        }
    }
    template <class A>
    using traits = decltype(rule<A>());
    static dims infer(const dims& a) {
        detail::require_square(name, a);
        return a;
    }
};

/// det A, or log |det A| when Log (a scalar).
template <bool Log>
struct determinant {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = Log ? "log_determinant" : "matrix_determinant";
    static constexpr bool log = Log;
    template <class A>
    static constexpr auto rule() {
        using failure = require::first_failure_t<require::floating<determinant, value_type_t<A>>,
                                                 require::none<require::square_matrix<determinant, shape_t<A>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<A>, shape<>, device_t<A>>{};
    }
    template <class A>
    using traits = decltype(rule<A>());
    static dims infer(const dims& a) {
        detail::require_square(name, a);
        return dims{};
    }
};

/// X with A X = B: A square [n, n], B [n, k].
struct solve {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "solve";
    template <class A, class B>
    static constexpr auto rule() {
        constexpr index_t n = detail::unify(shape_t<A>::value.d[0], shape_t<A>::value.d[1]).n;
        constexpr bool b_rank = shape_t<B>::rank == 2;
        constexpr detail::same_extent rows = detail::unify(n, shape_t<B>::value.d[0]);
        using failure = require::first_failure_t<
            require::same_device<solve, device_t<A>, device_t<B>>, require::same_dtype<solve, value_type_t<A>, value_type_t<B>>,
            require::floating<solve, value_type_t<A>>, require::none<require::square_matrix<solve, shape_t<A>>>,
            // the right-hand side B must be a 2-D matrix [n, k]
            require::that<b_rank, diagnostic::not_a_matrix<solve, shape_t<B>>>,
            // A [n, n] and B [n, k] must have the same number of rows
            require::that<!b_rank || rows.ok, diagnostic::matrix_rows_differ<solve, shape_t<A>, shape_t<B>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<A>, shape<rows.n, shape_t<B>::value.d[1]>, device_t<A>>{};
    }
    template <class A, class B>
    using traits = decltype(rule<A, B>());
    static dims infer(const dims& a, const dims& b) {
        detail::require_square(name, a);
        if (b.rank != 2 || b.d[0] != a.d[0])
            typeflow::detail::raise(typeflow::detail::message() << "solve: A of shape " << a << " and B of shape " << b
                                                                << " do not match (A [n,n], B [n,k])");
        return b;
    }
};
}  // namespace op

/// The inverse of the square matrix a (a tf::error at run time when a is singular).
template <operand A>
decltype(auto) matrix_inverse(const A& a) {
    return make_node<op::matrix_inverse>(a);
}
/// The determinant of the square matrix a (a scalar).
template <operand A>
decltype(auto) matrix_determinant(const A& a) {
    return make_node<op::determinant<false>>(a);
}
/// log |det a| of the square matrix a (a scalar): the logarithm of the
/// absolute value, whatever the sign of the determinant (numpy's slogdet
/// without the sign); -inf for a singular matrix.
template <operand A>
decltype(auto) log_determinant(const A& a) {
    return make_node<op::determinant<true>>(a);
}
/// The solution X of a X = b, for a square [n, n] and b [n, k] (a tf::error at
/// run time when a is singular).
template <operand A, operand B>
decltype(auto) solve(const A& a, const B& b) {
    return make_node<op::solve>(a, b);
}

// ---- vector-Jacobian products (built from ops, so they differentiate again) ----

/// inverse Y = A^-1: dA = -Y^T g Y^T.
template <>
struct gradient<op::matrix_inverse> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return -matmul(matmul(n, g, transpose_a), n, transpose_b);
    }
};

/// det: dA = g det(A) A^-T; log |det|: dA = g A^-T.
template <bool Log>
struct gradient<op::determinant<Log>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        auto inv_t = transpose(matrix_inverse(n.template child<0>()));
        if constexpr (Log) return ad::mul(g, inv_t);
        else return ad::mul(ad::mul(g, n), inv_t);
    }
};

/// solve X = A^-1 B: dB = solve(A^T, g), dA = -dB X^T.
template <>
struct gradient<op::solve> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        auto db = solve(transpose(n.template child<0>()), g);
        if constexpr (I == 1) return db;
        else return -matmul(db, n, transpose_b);
    }
};

}  // namespace typeflow
