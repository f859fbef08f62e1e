// typeflow/backend/eigen/ops/apply.hpp — CPU kernel of apply_dense: each
// rule's formula as Eigen array expressions (vectorised: the scalar loop of
// update_rule::*::row, with its possible aliasing and std::sqrt's errno, is
// not), over blocks of the variable split between threads.
#pragma once
#include <algorithm>
#include <cstddef>
#include <utility>

#include <Eigen/Core>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {
namespace backend::eigen::detail {
template <class T>
using apply_in = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using apply_out = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

/// Rule's update of n elements, as update_rule::Rule::row computes it, with
/// the same operations in the same order.
template <class Rule>
struct dense_rule;
template <>
struct dense_rule<update_rule::sgd> {
    template <class T>
    static void run(const T* var, T* out, const T* const*, T* const*, const T* h, const T* g, index_t n) {
        apply_out<T>(out, n) = apply_in<T>(var, n) - h[0] * apply_in<T>(g, n);
    }
};
template <>
struct dense_rule<update_rule::momentum> {
    template <class T>
    static void run(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const apply_in<T> G(g, n);
        apply_out<T> A(so[0], n);
        A = h[1] * apply_in<T>(s[0], n) + G;
        apply_out<T>(out, n) = apply_in<T>(var, n) - h[0] * (h[2] * A + h[3] * G);
    }
};
template <>
struct dense_rule<update_rule::adagrad> {
    template <class T>
    static void run(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const apply_in<T> G(g, n);
        apply_out<T> A(so[0], n);
        A = apply_in<T>(s[0], n) + G * G;
        apply_out<T>(out, n) = apply_in<T>(var, n) - h[0] * G * (T(1) / A.sqrt());
    }
};
template <>
struct dense_rule<update_rule::adam> {
    template <class T>
    static void run(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const T lr = h[0], b1 = h[1], b2 = h[2], eps = h[3], wd = h[4], t1 = h[5] + T(1), cb1 = h[6], cb2 = h[7];
        const T c1 = T(1) - std::pow(b1, t1), c2 = T(1) - std::pow(b2, t1);
        const apply_in<T> G(g, n), V(var, n);
        apply_out<T> M(so[0], n), S(so[1], n);
        M = b1 * apply_in<T>(s[0], n) + cb1 * G;
        S = b2 * apply_in<T>(s[1], n) + cb2 * (G * G);
        apply_out<T>(out, n) = V - lr * ((M / c1) / ((S / c2).sqrt() + eps) + wd * V);
    }
};
template <>
struct dense_rule<update_rule::rmsprop> {
    template <class T>
    static void run(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const T lr = h[0], rho = h[1], mu = h[2], eps = h[3], crho = h[4];
        const apply_in<T> G(g, n);
        apply_out<T> MS(so[0], n), MOM(so[1], n);
        MS = rho * apply_in<T>(s[0], n) + crho * (G * G);
        MOM = mu * apply_in<T>(s[1], n) + lr * G / (MS + eps).sqrt();
        apply_out<T>(out, n) = apply_in<T>(var, n) - MOM;
    }
};
}  // namespace backend::eigen::detail

template <class Rule>
struct kernel<cpu, op::apply_dense<Rule>> {
    using Op = op::apply_dense<Rule>;
    /// Threads split the elements in blocks of this many (so every split
    /// gives each element the same vectorised code, and the same bits).
    static constexpr index_t block = 64;
    /// Blocks a thread updates at least.
    static constexpr index_t grain = (index_t{1} << 15) / block;

    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const T* var = ctx.input(n.template child<Op::var_at>());
        const T* g = ctx.input(n.template child<Op::grad_at>());
        const index_t count = ctx.dims_of(n.template child<Op::var_at>()).numel();
        const typeflow::detail::apply_operands<Rule, T> a(n, ctx);
        const auto part = [&](std::size_t, index_t b0, index_t b1) {
            const index_t b = b0 * block, e = std::min(count, b1 * block);
            const T* sb[Rule::slots + 1] = {};
            T* sob[Rule::slots + 1] = {};
            for (std::size_t q = 0; q < Rule::slots; ++q) sb[q] = a.s[q] + b, sob[q] = a.so[q] + b;
            backend::eigen::detail::dense_rule<Rule>::run(var + b, out + b, sb, sob, a.h, g + b, e - b);
        };
        const index_t blocks = (count + block - 1) / block;
        if (ctx.par.threads > 1 && blocks >= 2 * grain) ctx.par.for_range(blocks, grain, part);
        else part(0, 0, blocks);
    }
};

}  // namespace typeflow
