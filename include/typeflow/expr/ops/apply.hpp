// typeflow/expr/ops/apply.hpp — the optimizers' update rules, and apply_dense:
// one kernel node that updates variables and their slot variables from dense
// gradients (TensorFlow's ApplyAdam, ApplyMomentum, ...; for several
// variables at once, PyTorch's fused "foreach" optimizers).
//
// A rule says how elements of a variable and of its slots change, given the
// gradient g and the parameters h (the hyperparameters, in the order of the
// op's children, then the variable's counters). Each rule has a name (the
// dense op's), a sparse_name (the sparse_apply op's, expr/ops/gather.hpp),
// its number of slots (tensors of the variable's shape), of counters
// (scalars a dense update increments by one: Adam's step count) and of
// hyperparameters, and
//   template <class T> static void row(const T* var, T* var_out, const T* const* s, T* const* s_out,
//                                      const T* h, const T* g, index_t n);
// which reads n elements of the variable and slots and writes their new values
// (out may be the same memory as in: each element is read before it is
// written).
//
// An apply_dense node behaves as the assigns it replaces (expr/ops/assign.hpp):
// it reads the variables, slots and counters as they were when the run began,
// and its outputs (each variable's new value, then its slots' and counters')
// are written to them after all other work of the run. One node for every
// variable of a dtype and device, instead of one per term of the formula and
// per variable, keeps the training graph's types small: each update spells
// its gradient once, and a model's updates are one node type.
// Kernels: backend/eigen/ops/apply.hpp, backend/reference/ops/apply.hpp,
// backend/cuda/ops/apply.hpp.
#pragma once
#include <cmath>
#include <cstddef>
#include <string_view>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {

/// The optimizers' update rules (see the file comment).
namespace update_rule {
/// var -= lr g. h: lr.
struct sgd {
    using type = sgd;  // the rule itself, spelled without the alias a caller reached it by
    static constexpr std::string_view name = "apply_sgd", sparse_name = "sparse_apply_sgd";
    static constexpr std::size_t slots = 0, counters = 0, hypers = 1;
    template <class T>
    TYPEFLOW_HOST_DEVICE static void row(const T* var, T* out, const T* const*, T* const*, const T* h, const T* g, index_t n) {
        for (index_t j = 0; j < n; ++j) out[j] = var[j] - h[0] * g[j];
    }
};
/// a = mu a + g; var -= lr (ca a + cg g): ca = 1, cg = 0 for plain momentum,
/// ca = mu, cg = 1 for Nesterov's. Slot: a. h: lr, mu, ca, cg.
struct momentum {
    using type = momentum;  // the rule itself, spelled without the alias a caller reached it by
    static constexpr std::string_view name = "apply_momentum", sparse_name = "sparse_apply_momentum";
    static constexpr std::size_t slots = 1, counters = 0, hypers = 4;
    template <class T>
    TYPEFLOW_HOST_DEVICE static void row(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const T* a = s[0];
        T* ao = so[0];
        for (index_t j = 0; j < n; ++j) {
            const T a1 = h[1] * a[j] + g[j];
            ao[j] = a1;
            out[j] = var[j] - h[0] * (h[2] * a1 + h[3] * g[j]);
        }
    }
};
/// acc += g^2; var -= lr g / sqrt(acc). Slot: acc. h: lr.
struct adagrad {
    using type = adagrad;  // the rule itself, spelled without the alias a caller reached it by
    static constexpr std::string_view name = "apply_adagrad", sparse_name = "sparse_apply_adagrad";
    static constexpr std::size_t slots = 1, counters = 0, hypers = 1;
    template <class T>
    TYPEFLOW_HOST_DEVICE static void row(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const T* acc = s[0];
        T* acco = so[0];
        for (index_t j = 0; j < n; ++j) {
            const T a1 = acc[j] + g[j] * g[j];
            acco[j] = a1;
            out[j] = var[j] - h[0] * g[j] * (T(1) / std::sqrt(a1));
        }
    }
};
/// Adam with bias correction, t the step count before this step (a dense
/// update increments it, a sparse one leaves that to its caller):
/// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// var -= lr (m / (1 - b1^(t+1)) / (sqrt(v / (1 - b2^(t+1))) + eps) + wd var).
/// As a sparse rule: LazyAdam (only the rows present). Slots: m, v. Counter: t.
/// h: lr, b1, b2, eps, wd, 1 - b1, 1 - b2 (the last two rounded once from
/// double, as Keras computes them), then t.
struct adam {
    using type = adam;  // the rule itself, spelled without the alias a caller reached it by
    static constexpr std::string_view name = "apply_adam", sparse_name = "sparse_apply_lazy_adam";
    static constexpr std::size_t slots = 2, counters = 1, hypers = 7;
    template <class T>
    TYPEFLOW_HOST_DEVICE static void row(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const T lr = h[0], b1 = h[1], b2 = h[2], eps = h[3], wd = h[4], cb1 = h[5], cb2 = h[6], t1 = h[7] + T(1);
        const T c1 = T(1) - std::pow(b1, t1), c2 = T(1) - std::pow(b2, t1);
        const T* m = s[0];
        const T* v = s[1];
        T* mo = so[0];
        T* vo = so[1];
        for (index_t j = 0; j < n; ++j) {
            const T m1 = b1 * m[j] + cb1 * g[j];
            const T v1 = b2 * v[j] + cb2 * (g[j] * g[j]);
            mo[j] = m1;
            vo[j] = v1;
            out[j] = var[j] - lr * ((m1 / c1) / (std::sqrt(v1 / c2) + eps) + wd * var[j]);
        }
    }
};
/// RMSProp (TensorFlow 1's): ms = rho ms + (1 - rho) g^2;
/// mom = momentum mom + lr g / sqrt(ms + eps); var -= mom.
/// Slots: ms, mom. h: lr, rho, momentum, eps, 1 - rho.
struct rmsprop {
    using type = rmsprop;  // the rule itself, spelled without the alias a caller reached it by
    static constexpr std::string_view name = "apply_rmsprop", sparse_name = "sparse_apply_rmsprop";
    static constexpr std::size_t slots = 2, counters = 0, hypers = 5;
    template <class T>
    TYPEFLOW_HOST_DEVICE static void row(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const T lr = h[0], rho = h[1], mu = h[2], eps = h[3], crho = h[4];
        const T* ms = s[0];
        const T* mom = s[1];
        T* mso = so[0];
        T* momo = so[1];
        for (index_t j = 0; j < n; ++j) {
            const T ms1 = rho * ms[j] + crho * (g[j] * g[j]);
            const T mom1 = mu * mom[j] + lr * g[j] / std::sqrt(ms1 + eps);
            mso[j] = ms1;
            momo[j] = mom1;
            out[j] = var[j] - mom1;
        }
    }
};
}  // namespace update_rule

namespace detail {
/// The output of an apply_dense node at position O of a group of G (the
/// variable, its slots, then its counters): the variable's shape for the
/// variable and slots, a scalar for a counter.
template <class V, bool Counter>
using apply_output_t = result_traits<value_type_t<V>, meta::if_t<Counter, shape<>, shape_t<V>>, device_t<V>>;
template <std::size_t G, std::size_t S, class Seq, class... C>
struct apply_outputs;
template <std::size_t G, std::size_t S, std::size_t... O, class... C>
struct apply_outputs<G, S, std::index_sequence<O...>, C...> {
    using type = meta::list<apply_output_t<meta::at_t<O - O % G, C...>, (O % G > S)>...>;
};
}  // namespace detail

namespace op {
/// node<apply_dense<Rule, N>, [Var, Slots..., Counters...] x N, Hypers..., G x N>:
/// the new values of N variables and of their slots and counters by Rule,
/// from gradients G of each variable's shape, with the hyperparameters (scalars)
/// shared; written to them at the end of the run, as an assign's value is.
/// Output k is the new value of child k (outputs 0 .. N * group - 1). Every
/// variable has one dtype and device.
template <class Rule, std::size_t N = 1>
struct apply_dense {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr bool is_assign = true;
    static constexpr std::string_view name = Rule::name;
    static constexpr std::size_t variables = N, slots = Rule::slots, counters = Rule::counters, hypers = Rule::hypers;
    /// Children per variable (the variable, its slots, its counters), and the outputs.
    static constexpr std::size_t group = 1 + slots + counters, outputs = N * group;
    /// Positions of the first hyperparameter and of the first gradient.
    static constexpr std::size_t hyper_at = outputs, grad_at = hyper_at + hypers;
    /// Positions of variable k, of its first slot, of its first counter and of its gradient.
    static constexpr std::size_t var_at(std::size_t k) { return k * group; }
    static constexpr std::size_t slot_at(std::size_t k) { return k * group + 1; }
    static constexpr std::size_t counter_at(std::size_t k) { return k * group + 1 + slots; }
    static constexpr std::size_t gradient_at(std::size_t k) { return grad_at + k; }
    template <class... C>
    struct traits {
        static_assert(sizeof...(C) == grad_at + N,
                      "typeflow: apply_dense: give each variable with its slots and counters, the hyperparameters, "
                      "then each variable's gradient");
        using V = meta::at_t<0, C...>;
        static_assert(floating_c<value_type_t<V>>, "typeflow: apply_dense: the variable must be floating point");
        using value_type = value_type_t<V>;
        using shape_type = shape_t<V>;
        using device = device_t<V>;
        using outputs_list = typename typeflow::detail::apply_outputs<group, slots, std::make_index_sequence<outputs>, C...>::type;
    };
    /// The first variable's extents, after checking each variable's gradient
    /// and slots against it, and its counters (scalars).
    template <class... D>
    static dims infer(const D&... d) {
        const dims* r[] = {&d...};
        const auto check = [&](const dims& x, const dims& var, const char* what) {
            if (!(x == var))
                typeflow::detail::raise(typeflow::detail::message()
                                        << name << ": " << what << " " << x << " differs from the variable's " << var);
        };
        for (std::size_t k = 0; k < N; ++k) {
            const dims& var = *r[var_at(k)];
            for (std::size_t q = 0; q < slots; ++q) check(*r[slot_at(k) + q], var, "a slot's shape");
            if constexpr (counters > 0)
                for (std::size_t q = 0; q < counters; ++q) check(*r[counter_at(k) + q], dims{}, "a counter's shape");
            check(*r[gradient_at(k)], var, "the gradient's shape");
        }
        return *r[0];
    }
    template <class... D>
    static dims infer_output(std::size_t o, const D&... d) {
        const dims* r[] = {&d...};
        return o % group > slots ? dims{} : *r[o - o % group];
    }
};
}  // namespace op

namespace detail {
/// One variable of an apply_dense node as its kernel sees it: the variable's
/// elements and where its new values go, its slots' likewise, its counters'
/// (one element each), its gradient and its element count.
template <class Rule, class T>
struct apply_group {
    const T* var = nullptr;
    T* out = nullptr;
    const T* s[Rule::slots + 1] = {};
    T* so[Rule::slots + 1] = {};
    const T* counter[Rule::counters + 1] = {};
    T* counter_out[Rule::counters + 1] = {};
    const T* g = nullptr;
    index_t count = 0;
};
/// The operands of an apply_dense node of n variables (kernel context ctx):
/// each variable's group (variable 0's new values go to out), and each
/// hyperparameter's element. One function per rule and dtype, not per node.
template <class Rule, class T, class Ctx>
void apply_operands(const Ctx& ctx, std::size_t n, T* out, apply_group<Rule, T>* grp, const T** hyper) {
    constexpr std::size_t group = 1 + Rule::slots + Rule::counters;
    const auto in = [&](std::size_t j) { return static_cast<const T*>(ctx.in[j]); };
    const auto res = [&](std::size_t o) { return static_cast<T*>(o == 0 ? static_cast<void*>(out) : ctx.output(o)); };
    for (std::size_t k = 0; k < n; ++k) {
        apply_group<Rule, T>& a = grp[k];
        const std::size_t v = k * group;
        a.var = in(v);
        a.out = res(v);
        for (std::size_t q = 0; q < Rule::slots; ++q) a.s[q] = in(v + 1 + q), a.so[q] = res(v + 1 + q);
        if constexpr (Rule::counters > 0)
            for (std::size_t c = 0; c < Rule::counters; ++c)
                a.counter[c] = in(v + 1 + Rule::slots + c), a.counter_out[c] = res(v + 1 + Rule::slots + c);
        a.g = in(n * group + Rule::hypers + k);
        a.count = ctx.in_dims[v]->numel();
    }
    for (std::size_t h = 0; h < Rule::hypers; ++h) hyper[h] = in(n * group + h);
}
/// The operands of an apply_dense node of N variables, as apply_operands
/// gathers them (what each backend's kernel starts from).
template <class Rule, class T, std::size_t N>
struct apply_node {
    apply_group<Rule, T> grp[N];
    const T* hyper[Rule::hypers + 1] = {};
    template <class Ctx>
    apply_node(const Ctx& ctx, T* out) {
        apply_operands<Rule>(ctx, N, out, grp, hyper);
    }
};
/// A row's parameters for group a (host memory): the hyperparameters, then a's counters.
template <class Rule, class T>
void apply_params(const apply_group<Rule, T>& a, const T* const* hyper, T* h) {
    for (std::size_t k = 0; k < Rule::hypers; ++k) h[k] = *hyper[k];
    if constexpr (Rule::counters > 0)
        for (std::size_t c = 0; c < Rule::counters; ++c) h[Rule::hypers + c] = *a.counter[c];
}
/// Writes group a's counters' next values (one more), from its parameters h.
template <class Rule, class T>
void apply_count(const apply_group<Rule, T>& a, const T* h) {
    if constexpr (Rule::counters > 0)
        for (std::size_t c = 0; c < Rule::counters; ++c) *a.counter_out[c] = h[Rule::hypers + c] + T(1);
}
}  // namespace detail

/// Updates have no gradient.
template <class Rule, std::size_t N>
struct gradient<op::apply_dense<Rule, N>> : no_gradient {};

}  // namespace typeflow
