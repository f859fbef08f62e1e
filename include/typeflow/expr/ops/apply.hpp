// typeflow/expr/ops/apply.hpp — the optimizers' update rules, and apply_dense:
// one kernel node that updates a variable and its slot variables from a dense
// gradient (TensorFlow's ApplyAdam, ApplyMomentum, ...).
//
// A rule says how elements of a variable and of its slots change, given the
// gradient g and the hyperparameters h (scalars, in the order of the op's
// children). Each rule has a name (the dense op's), a sparse_name (the
// sparse_apply op's, expr/ops/gather.hpp), its number of slots and of
// hyperparameters, and
//   template <class T> static void row(const T* var, T* var_out, const T* const* s, T* const* s_out,
//                                      const T* h, const T* g, index_t n);
// which reads n elements of the variable and slots and writes their new values
// (out may be the same memory as in: each element is read before it is
// written).
//
// An apply_dense node behaves as the assigns it replaces (expr/ops/assign.hpp):
// it reads the variable and slots as they were when the run began, and its
// outputs (the variable's new value, then each slot's) are written to them
// after all other work of the run. One node per variable instead of one per
// term of the formula keeps the training graph's types small: each update
// spells its gradient once.
// Kernels: backend/eigen/ops/apply.hpp, backend/reference/ops/apply.hpp.
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
    static constexpr std::string_view name = "apply_sgd", sparse_name = "sparse_apply_sgd";
    static constexpr std::size_t slots = 0, hypers = 1;
    template <class T>
    TYPEFLOW_HOST_DEVICE static void row(const T* var, T* out, const T* const*, T* const*, const T* h, const T* g, index_t n) {
        for (index_t j = 0; j < n; ++j) out[j] = var[j] - h[0] * g[j];
    }
};
/// a = mu a + g; var -= lr (ca a + cg g): ca = 1, cg = 0 for plain momentum,
/// ca = mu, cg = 1 for Nesterov's. Slot: a. h: lr, mu, ca, cg.
struct momentum {
    static constexpr std::string_view name = "apply_momentum", sparse_name = "sparse_apply_momentum";
    static constexpr std::size_t slots = 1, hypers = 4;
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
    static constexpr std::string_view name = "apply_adagrad", sparse_name = "sparse_apply_adagrad";
    static constexpr std::size_t slots = 1, hypers = 1;
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
/// Adam with bias correction, t the step count before this step (the caller
/// increments it): m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// var -= lr (m / (1 - b1^(t+1)) / (sqrt(v / (1 - b2^(t+1))) + eps) + wd var).
/// As a sparse rule: LazyAdam (only the rows present). Slots: m, v.
/// h: lr, b1, b2, eps, wd, t, 1 - b1, 1 - b2 (the last two rounded once from
/// double, as Keras computes them).
struct adam {
    static constexpr std::string_view name = "apply_adam", sparse_name = "sparse_apply_lazy_adam";
    static constexpr std::size_t slots = 2, hypers = 8;
    template <class T>
    TYPEFLOW_HOST_DEVICE static void row(const T* var, T* out, const T* const* s, T* const* so, const T* h, const T* g, index_t n) {
        const T lr = h[0], b1 = h[1], b2 = h[2], eps = h[3], wd = h[4], t1 = h[5] + T(1), cb1 = h[6], cb2 = h[7];
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
    static constexpr std::string_view name = "apply_rmsprop", sparse_name = "sparse_apply_rmsprop";
    static constexpr std::size_t slots = 2, hypers = 5;
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
template <class R, class Seq>
struct repeated;
template <class R, std::size_t... K>
struct repeated<R, std::index_sequence<K...>> {
    template <std::size_t>
    using same = R;
    using type = meta::list<same<K>...>;
};
}  // namespace detail

namespace op {
/// node<apply_dense<Rule>, Var, Slots..., Hypers..., G>: the new values of
/// variable Var (output 0) and of its slots (outputs 1..) by Rule from the
/// gradient G of Var's shape; written to them at the end of the run, as an
/// assign's value is.
template <class Rule>
struct apply_dense {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr bool is_assign = true;
    static constexpr std::string_view name = Rule::name;
    static constexpr std::size_t slots = Rule::slots, hypers = Rule::hypers, outputs = Rule::slots + 1;
    /// Positions of the variable, of the first slot, of the first hyperparameter and of the gradient.
    static constexpr std::size_t var_at = 0, slot_at = 1, hyper_at = slot_at + slots, grad_at = hyper_at + hypers;
    template <class... C>
    struct traits {
        static_assert(sizeof...(C) == grad_at + 1,
                      "typeflow: apply_dense: give the variable, its slots, the hyperparameters, then the gradient");
        using V = meta::at_t<var_at, C...>;
        static_assert(floating_c<value_type_t<V>>, "typeflow: apply_dense: the variable must be floating point");
        using value_type = value_type_t<V>;
        using shape_type = shape_t<V>;
        using device = device_t<V>;
        using outputs_list =
            typename typeflow::detail::repeated<result_traits<value_type, shape_type, device>,
                                                std::make_index_sequence<outputs>>::type;
    };
    /// The variable's extents, after checking the gradient's and the slots' against them.
    template <class... D>
    static dims infer(const D&... d) {
        const dims* r[] = {&d...};
        const dims& var = *r[var_at];
        const auto check = [&](const dims& x, const char* what) {
            if (!(x == var))
                typeflow::detail::raise(typeflow::detail::message()
                                        << name << ": " << what << " " << x << " differs from the variable's " << var);
        };
        for (std::size_t k = 0; k < slots; ++k) check(*r[slot_at + k], "a slot's shape");
        check(*r[grad_at], "the gradient's shape");
        return var;
    }
    template <class... D>
    static dims infer_output(std::size_t, const D&... d) {
        const dims* r[] = {&d...};
        return *r[var_at];
    }
};
}  // namespace op

namespace detail {
/// What a kernel of apply_dense node n reads besides the variable and the
/// gradient: each slot's elements, where each slot's new values go, and the
/// hyperparameters.
template <class Rule, class T>
struct apply_operands {
    using Op = op::apply_dense<Rule>;
    const T* s[Rule::slots + 1] = {};
    T* so[Rule::slots + 1] = {};
    T h[Rule::hypers];
    template <class N, class Ctx>
    apply_operands(const N& n, const Ctx& ctx) {
        [&]<std::size_t... S, std::size_t... H>(std::index_sequence<S...>, std::index_sequence<H...>) {
            ((s[S] = ctx.input(n.template child<Op::slot_at + S>())), ...);
            ((so[S] = static_cast<T*>(ctx.output(1 + S))), ...);
            ((h[H] = ctx.input(n.template child<Op::hyper_at + H>())[0]), ...);
        }(std::make_index_sequence<Rule::slots>{}, std::make_index_sequence<Rule::hypers>{});
    }
};
}  // namespace detail

/// Updates have no gradient.
template <class Rule>
struct gradient<op::apply_dense<Rule>> : no_gradient {};

}  // namespace typeflow
