// typeflow/backend/eigen/ops/linalg.hpp — CPU kernels of matrix_inverse,
// matrix_determinant, log_determinant and solve, through Eigen's LU
// decomposition with partial pivoting.
#pragma once
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include <Eigen/Core>
#include <Eigen/LU>

#include <typeflow/kernel/kernel.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/expr/ops/linalg.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow::backend::eigen {

namespace detail {
template <class T>
using col_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The LU decomposition (partial pivoting) of the row-major n x n matrix at p.
template <class T>
Eigen::PartialPivLU<col_matrix<T>> lu_of(const T* p, index_t n) {
    return Eigen::PartialPivLU<col_matrix<T>>(Eigen::Map<const row_matrix<T>>(p, n, n));
}
/// True when a pivot of the decomposition is exactly zero (or not a number).
template <class T>
bool has_zero_pivot(const Eigen::PartialPivLU<col_matrix<T>>& lu) {
    const auto d = lu.matrixLU().diagonal();
    for (index_t i = 0; i < d.size(); ++i)
        if (!(d[i] != T(0)) || !std::isfinite(d[i])) return true;
    return false;
}
}  // namespace detail

}  // namespace typeflow::backend::eigen

namespace typeflow {

template <>
struct kernel<cpu, op::matrix_inverse> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims a = ctx.dims_of(n.template child<0>());
        const index_t m = a.d[0];
        if (m == 0) return;
        const auto lu = backend::eigen::detail::lu_of(ctx.input(n.template child<0>()), m);
        if (backend::eigen::detail::has_zero_pivot<T>(lu)) typeflow::detail::throw_singular(op::matrix_inverse::name, a);
        Eigen::Map<backend::eigen::detail::row_matrix<T>>(out, m, m) = lu.inverse();
        if (!typeflow::detail::all_finite(out, m * m)) typeflow::detail::throw_singular(op::matrix_inverse::name, a);
    }
};

template <bool Log>
struct kernel<cpu, op::determinant<Log>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims a = ctx.dims_of(n.template child<0>());
        const index_t m = a.d[0];
        if (m == 0) {
            *out = Log ? T(0) : T(1);
            return;
        }
        const auto lu = backend::eigen::detail::lu_of(ctx.input(n.template child<0>()), m);
        if constexpr (Log) {
            // sum of log |pivot|: no overflow where det itself would overflow
            const auto d = lu.matrixLU().diagonal();
            T s = 0;
            for (index_t i = 0; i < m; ++i) s += std::log(std::abs(d[i]));
            *out = s;
        } else {
            *out = lu.determinant();
        }
    }
};

template <>
struct kernel<cpu, op::solve> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims a = ctx.dims_of(n.template child<0>());
        const dims b = ctx.dims_of(n.template child<1>());
        const index_t m = a.d[0], k = b.d[1];
        if (m == 0 || k == 0) return;
        const auto lu = backend::eigen::detail::lu_of(ctx.input(n.template child<0>()), m);
        if (backend::eigen::detail::has_zero_pivot<T>(lu)) typeflow::detail::throw_singular(op::solve::name, a);
        Eigen::Map<backend::eigen::detail::row_matrix<T>>(out, m, k) =
            lu.solve(Eigen::Map<const backend::eigen::detail::row_matrix<T>>(ctx.input(n.template child<1>()), m, k));
        if (!typeflow::detail::all_finite(out, m * k)) typeflow::detail::throw_singular(op::solve::name, a);
    }
};

}  // namespace typeflow
