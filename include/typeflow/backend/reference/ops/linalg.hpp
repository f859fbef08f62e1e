// typeflow/backend/reference/ops/linalg.hpp — reference matrix_inverse,
// matrix_determinant, log_determinant and solve: Gaussian elimination with
// partial pivoting.
#pragma once
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/linalg.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::reference {
namespace detail {
/// The LU decomposition with partial pivoting of a row-major n x n matrix,
/// in place: `lu` holds U on and above the diagonal and L's multipliers
/// below it; `perm[i]` is the original row of row i.
template <class T>
struct lu_result {
    std::vector<T> lu;
    std::vector<index_t> perm;
    int sign = 1;             // the permutation's sign
    bool zero_pivot = false;  // a pivot that is exactly zero or not finite
};
template <class T>
lu_result<T> lu_of(const T* a, index_t n) {
    lu_result<T> r;
    r.lu.assign(a, a + n * n);
    r.perm.resize(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) r.perm[static_cast<std::size_t>(i)] = i;
    T* m = r.lu.data();
    for (index_t j = 0; j < n; ++j) {
        index_t p = j;
        for (index_t i = j + 1; i < n; ++i)
            if (std::abs(m[i * n + j]) > std::abs(m[p * n + j])) p = i;
        if (p != j) {
            for (index_t c = 0; c < n; ++c) std::swap(m[j * n + c], m[p * n + c]);
            std::swap(r.perm[static_cast<std::size_t>(j)], r.perm[static_cast<std::size_t>(p)]);
            r.sign = -r.sign;
        }
        const T piv = m[j * n + j];
        if (!(piv != T(0)) || !std::isfinite(piv)) {
            r.zero_pivot = true;
            continue;
        }
        for (index_t i = j + 1; i < n; ++i) {
            const T l = m[i * n + j] / piv;
            m[i * n + j] = l;
            for (index_t c = j + 1; c < n; ++c) m[i * n + c] -= l * m[j * n + c];
        }
    }
    return r;
}
/// X = A^-1 B from A's decomposition, B row-major n x k (no zero pivot).
template <class T>
void lu_solve(const lu_result<T>& r, index_t n, const T* b, index_t k, T* x) {
    const T* m = r.lu.data();
    for (index_t c = 0; c < k; ++c) {
        for (index_t i = 0; i < n; ++i) {  // L y = P b
            T s = b[r.perm[static_cast<std::size_t>(i)] * k + c];
            for (index_t j = 0; j < i; ++j) s -= m[i * n + j] * x[j * k + c];
            x[i * k + c] = s;
        }
        for (index_t i = n; i-- > 0;) {  // U x = y
            T s = x[i * k + c];
            for (index_t j = i + 1; j < n; ++j) s -= m[i * n + j] * x[j * k + c];
            x[i * k + c] = s / m[i * n + i];
        }
    }
}
}  // namespace detail
}  // namespace typeflow::backend::reference

namespace typeflow {

template <>
struct kernel<reference, op::matrix_inverse> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        namespace ref = backend::reference::detail;
        const dims a = ctx.dims_of(n.template child<0>());
        const index_t m = a.d[0];
        if (m == 0) return;
        const auto lu = ref::lu_of(ctx.input(n.template child<0>()), m);
        if (lu.zero_pivot) typeflow::detail::throw_singular(op::matrix_inverse::name, a);
        std::vector<T> eye(static_cast<std::size_t>(m * m), T(0));
        for (index_t i = 0; i < m; ++i) eye[static_cast<std::size_t>(i * m + i)] = T(1);
        ref::lu_solve(lu, m, eye.data(), m, out);
        if (!typeflow::detail::all_finite(out, m * m)) typeflow::detail::throw_singular(op::matrix_inverse::name, a);
    }
};

template <bool Log>
struct kernel<reference, op::determinant<Log>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims a = ctx.dims_of(n.template child<0>());
        const index_t m = a.d[0];
        const auto lu = backend::reference::detail::lu_of(ctx.input(n.template child<0>()), m);
        T r = Log ? T(0) : T(lu.sign);
        for (index_t i = 0; i < m; ++i) {
            const T piv = lu.lu[static_cast<std::size_t>(i * m + i)];
            if constexpr (Log) r += std::log(std::abs(piv));  // no overflow where det itself would overflow
            else r *= piv;
        }
        *out = r;
    }
};

template <>
struct kernel<reference, op::solve> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        namespace ref = backend::reference::detail;
        const dims a = ctx.dims_of(n.template child<0>());
        const dims b = ctx.dims_of(n.template child<1>());
        const index_t m = a.d[0], k = b.d[1];
        if (m == 0 || k == 0) return;
        const auto lu = ref::lu_of(ctx.input(n.template child<0>()), m);
        if (lu.zero_pivot) typeflow::detail::throw_singular(op::solve::name, a);
        ref::lu_solve(lu, m, ctx.input(n.template child<1>()), k, out);
        if (!typeflow::detail::all_finite(out, m * k)) typeflow::detail::throw_singular(op::solve::name, a);
    }
};

}  // namespace typeflow
