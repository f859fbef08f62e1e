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
        const T lr = h[0], b1 = h[1], b2 = h[2], eps = h[3], wd = h[4], cb1 = h[5], cb2 = h[6], t1 = h[7] + T(1);
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

/// Threads split the elements in blocks of this many (so every split gives
/// each element the same vectorised code, and the same bits).
inline constexpr index_t apply_block = 64;
/// Blocks a thread updates at least.
inline constexpr index_t apply_grain = (index_t{1} << 15) / apply_block;

/// Rule's update of the count elements of var (into out) and of its slots s
/// (into so), row parameters h (the hyperparameters, then the counters),
/// gradient g, split over par's threads.
template <class Rule, class T>
void apply_dense_run(const parallel_ctx& par, const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g,
                     index_t count) {
    const auto part = [&](std::size_t, index_t b0, index_t b1) {
        const index_t b = b0 * apply_block, e = std::min(count, b1 * apply_block);
        const T* sb[Rule::slots + 1] = {};
        T* sob[Rule::slots + 1] = {};
        for (std::size_t q = 0; q < Rule::slots; ++q) sb[q] = s[q] + b, sob[q] = so[q] + b;
        dense_rule<Rule>::run(var + b, out + b, sb, sob, h, g + b, e - b);
    };
    const index_t blocks = (count + apply_block - 1) / apply_block;
    if (par.threads > 1 && blocks >= 2 * apply_grain) par.for_range(blocks, apply_grain, part);
    else part(0, 0, blocks);
}

/// Rule's update of each of the n variables of groups grp (see
/// typeflow::detail::apply_group), with hyperparameters hyper, one after the other.
template <class Rule, class T>
void apply_dense_groups(const parallel_ctx& par, const typeflow::detail::apply_group<Rule, T>* grp, std::size_t n,
                        const T* const* hyper) {
    for (std::size_t k = 0; k < n; ++k) {
        const typeflow::detail::apply_group<Rule, T>& a = grp[k];
        T h[Rule::hypers + Rule::counters];
        typeflow::detail::apply_params(a, hyper, h);
        apply_dense_run<Rule>(par, a.var, a.out, a.s, a.so, h, a.g, a.count);
        typeflow::detail::apply_count(a, h);
    }
}

// The instantiations that TYPEFLOW_SEPARATE_COMPILATION compiles once, in
// typeflow/src.hpp (impl/kernels.ipp): KW is `extern template` or `template`.
#define TYPEFLOW_APPLY_INSTANCE(KW, R, T)                                                                                    \
    KW void apply_dense_run<R, T>(const parallel_ctx&, const T*, T*, const T* const*, T* const*, const T*, const T*, index_t); \
    KW void apply_dense_groups<R, T>(const parallel_ctx&, const typeflow::detail::apply_group<R, T>*, std::size_t,           \
                                     const T* const*);
#define TYPEFLOW_APPLY_INSTANCES(KW, T)                                                                        \
    TYPEFLOW_APPLY_INSTANCE(KW, update_rule::sgd, T) TYPEFLOW_APPLY_INSTANCE(KW, update_rule::momentum, T)     \
    TYPEFLOW_APPLY_INSTANCE(KW, update_rule::adagrad, T) TYPEFLOW_APPLY_INSTANCE(KW, update_rule::adam, T)     \
    TYPEFLOW_APPLY_INSTANCE(KW, update_rule::rmsprop, T)
#if defined(TYPEFLOW_SEPARATE_COMPILATION)
TYPEFLOW_APPLY_INSTANCES(extern template, float)
TYPEFLOW_APPLY_INSTANCES(extern template, double)
#endif
}  // namespace backend::eigen::detail

template <class Rule, std::size_t N>
struct kernel<cpu, op::apply_dense<Rule, N>> {
    template <class Nd, class Ctx>
    static void run(const Nd&, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        const typeflow::detail::apply_node<Rule, T, N> a(ctx, out);
        backend::eigen::detail::apply_dense_groups<Rule, T>(ctx.par, a.grp, N, a.hyper);
    }
};

}  // namespace typeflow
