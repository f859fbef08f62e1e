// typeflow/train/optimizers.hpp — optimizers (SGD, momentum, Adam/AdamW,
// RMSProp, Adagrad) that turn a loss into one update op, and learning-rate
// schedules driven by a global step variable.
//
//   auto step = tf::train::adam(1e-3f).minimize(loss);   // every trainable variable loss reaches
//   s.run(tf::fetch(loss, step), tf::feed(x, xb));
//
// An update reads every variable as it was when the run began and writes at
// the end of the run. Slot variables are named "<variable>/<slot>" (for
// example "W1/m"), so checkpoints can hold them. Momentum, Adam, RMSProp and
// Adagrad update every variable of a dtype and device, with its slots, through
// one apply_dense kernel node (expr/ops/apply.hpp: TensorFlow's ApplyAdam and
// its kin, for all the variables at once as PyTorch's fused optimizers); SGD
// is one assign_sub per variable.
//
// Sparse gradients: when a variable's gradient is an axis-0 indexed_slices of
// that variable (it is used only through tf::gather / tf::embedding_lookup),
// sgd, momentum, adagrad and adam update only the rows present in the batch,
// through one sparse_apply kernel (expr/ops/gather.hpp), as TensorFlow's
// sparse apply ops: sgd and adagrad give exactly the dense result; momentum
// and adam are lazy (the slots and the variable of rows absent from the batch
// are left alone, where the dense update would decay the slots and move the
// rows: TensorFlow's sparse momentum and LazyAdam). That kernel writes the rows
// when it runs, after the gathers that read the variable. RMSProp and any
// other use take the gradient's dense value.
#pragma once
#include <array>
#include <cstdint>
#include <numbers>
#include <type_traits>

#include <typeflow/core/fixed_string.hpp>
#include <typeflow/autodiff/grad.hpp>
#include <typeflow/expr/init.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/apply.hpp>
#include <typeflow/expr/ops/assign.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/expr/ops/group.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/graph/topo.hpp>

namespace typeflow::diagnostic {
template <class Optimizer, class Variable>
struct optimizer_needs_floating_point_variable;
template <class Optimizer, class Arg>
struct optimizer_trains_only_variables;
template <class Optimizer, class Shape>
struct learning_rate_must_be_scalar;
template <class Optimizer, class Type>
struct learning_rate_must_be_numeric;
}  // namespace typeflow::diagnostic

namespace typeflow::train {

// ---------------------------------------------------------------------------
// Which variables a loss trains
// ---------------------------------------------------------------------------
namespace detail {
template <class Acc, class T>
struct keep_trainable {
    using type = Acc;
};
template <class... Vs, class T>
    requires(typeflow::detail::is_variable_v<T> && T::trainable())
struct keep_trainable<meta::list<Vs...>, T> {
    using type = meta::list<Vs..., T>;
};
template <class Acc, class L>
struct filter_trainable;
template <class Acc>
struct filter_trainable<Acc, meta::list<>> {
    using type = Acc;
};
template <class Acc, class T, class... Ts>
struct filter_trainable<Acc, meta::list<T, Ts...>> {
    using type = typename filter_trainable<typename keep_trainable<Acc, T>::type, meta::list<Ts...>>::type;
};

}  // namespace detail

/// The trainable variables (floating point, not non_trainable_variable) that
/// expression E reaches, in topological order, as a meta::list.
template <expression E>
using trainable_variables_t = typename detail::filter_trainable<meta::list<>, graph::topo_t<E>>::type;

/// A gradient and the variable it belongs to.
template <class G, class V>
struct grad_and_var {
    G grad;
    V var;
};
/// What compute_gradients returns and apply_gradients takes (the distributed
/// runtime averages the gradients in between).
template <class... P>
struct grads_and_vars : typeflow::detail::children_of<P...> {
    static constexpr std::size_t size = sizeof...(P);
    explicit grads_and_vars(P... p) : typeflow::detail::children_of<P...>(std::move(p)...) {}
    template <std::size_t I>
    const auto& get() const noexcept {
        return typeflow::detail::get_child<I>(*this);
    }
};

/// Passed to minimize / apply_gradients: the variable that counts steps
/// (an integer scalar), incremented by one with every update.
template <variable_c V>
struct global_step_t {
    V var;
};
template <variable_c V>
global_step_t<V> global_step(const V& v) {
    static_assert(std::is_integral_v<value_type_t<V>> && shape_t<V>::rank == 0,
                  "typeflow: global_step: the step counter must be an integer scalar variable");
    return {v};
}

namespace detail {
template <class T>
inline constexpr bool is_global_step_v = false;
template <class V>
inline constexpr bool is_global_step_v<global_step_t<V>> = true;
template <class... A>
constexpr bool last_is_step() {
    if constexpr (sizeof...(A) == 0) return false;
    else return is_global_step_v<meta::at_t<sizeof...(A) - 1, A...>>;
}

// A learning rate (or other hyperparameter) as an expression of dtype T.
template <class T, class D, class L>
auto as_rate(const L& l) {
    if constexpr (expression<L>) {
        if constexpr (std::is_same_v<value_type_t<L>, T>) return l;
        else return cast<T>(l);
    } else {
        return scalar<T, D>(static_cast<T>(l));
    }
}

// Whether L is a learning rate: a number (not bool) or a numeric scalar
// (rank-0) expression.
template <class L>
constexpr bool rate_valid() {
    if constexpr (expression<L>) return numeric_c<value_type_t<L>> && shape_t<L>::rank == 0;
    else return std::is_arithmetic_v<L> && !std::is_same_v<L, bool>;
}
// The check of optimizer Opt's learning rate L, in its constructor: an error
// naming the optimizer (whose type holds L) and L's shape or type. The
// checks below are called as statements (not in a constant expression, where
// a failed static_assert adds "non-constant condition" errors); minimize and
// apply_gradients test the plain traits, and stop after an error.
template <class Opt, class L>
void check_rate() {
    if constexpr (expression<L>) {
        if constexpr (shape_t<L>::rank != 0) {
            diagnostic::learning_rate_must_be_scalar<Opt, shape_t<L>> error;
        } else if constexpr (!numeric_c<value_type_t<L>>) {
            diagnostic::learning_rate_must_be_numeric<Opt, value_type_t<L>> error;
        }
    } else if constexpr (!rate_valid<L>()) {
        diagnostic::learning_rate_must_be_numeric<Opt, L> error;
    }
    static_assert(rate_valid<L>(), "typeflow: optimizer: the learning rate must be a number or a numeric scalar "
                                   "(rank-0) expression, such as a placeholder<\"lr\", float, shape<>> or a schedule");
}
// Whether Opt's learning rate is valid (true for an optimizer that names none).
template <class Opt>
constexpr bool rate_ok() {
    if constexpr (requires { typename Opt::learning_rate_type; })
        return rate_valid<typename Opt::learning_rate_type>();
    else return true;
}

// Whether an optimizer can train V (given to minimize or compute_gradients,
// or in the pairs given to apply_gradients): a floating-point variable.
template <class V>
inline constexpr bool trainable_arg_v = [] {
    if constexpr (variable_c<V>) return floating_c<value_type_t<V>>;
    else return false;
}();
// The error for a V that optimizer Opt cannot train, naming both.
template <class Opt, class V>
void check_trainable() {
    if constexpr (!variable_c<V>) {
        diagnostic::optimizer_trains_only_variables<Opt, V> error;
        static_assert(variable_c<V>, "typeflow: minimize: the arguments after the loss are variables to train "
                                     "(and, last, an optional tf::train::global_step(v))");
    } else {
        constexpr bool ok = floating_c<value_type_t<V>>;
        if constexpr (!ok) {
            diagnostic::optimizer_needs_floating_point_variable<Opt, V> error;
        }
        static_assert(ok, "typeflow: optimizer: only floating-point (float or double) variables can be trained; "
                          "an integer or bool variable has no gradient (a step counter goes in last as "
                          "tf::train::global_step(v))");
    }
}
// The first N of A... (minimize's arguments before the global step) are trainable.
template <std::size_t N, class... A>
inline constexpr bool first_trainable_v = []<std::size_t... K>(std::index_sequence<K...>) {
    return (trainable_arg_v<meta::at_t<K, A...>> && ...);
}(std::make_index_sequence<N>{});
template <class Opt, std::size_t N, class... A>
void check_first_trainable() {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
        (check_trainable<Opt, meta::at_t<K, A...>>(), ...);
    }(std::make_index_sequence<N>{});
}
// What minimize / apply_gradients return after a compile error they reported
// (an op that does nothing, of a group's dtype), so that no second error follows.
inline auto no_update() { return scalar<bool>(true); }

template <fixed_string VarName, fixed_string Slot, class V, class Init>
auto slot(Init init) {
    return non_trainable_variable<concat<VarName, concat<"/", Slot>()>(), value_type_t<V>, shape_t<V>, device_t<V>>(
        init);
}

/// True when gradient G of variable V is sparse (an axis-0 indexed_slices of V).
template <class G, class V>
inline constexpr bool sparse_v = is_indexed_slices_of<G, V>::value;

/// The sparse update of variable v by rule Rule from g, an axis-0
/// indexed_slices of v: one sparse_apply node, ordered after a gather of v at
/// each of g's indices (the forward gathers, merged with them by type), with
/// slots and hyperparameters x... (scalar expressions of v's dtype).
template <class Rule, class G, class V, class... X>
auto sparse_update(const G& g, const V& v, const X&... x) {
    constexpr std::size_t P = (meta::children_t<G>::size - 1) / 2;
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return make_node<op::sparse_apply<Rule, P, P>>(make_node<op::gather<0>>(v, g.template child<2 + 2 * K>())..., v,
                                                       x..., g.template child<1 + 2 * K>()...,
                                                       g.template child<2 + 2 * K>()...);
    }(std::make_index_sequence<P>{});
}

/// An optimizer that updates through an apply_dense rule: Opt::rule; a new
/// slot or counter J of variable v (`state<J>(v)`: the slots, then the
/// counters); its learning rate as an expression of v's dtype and device
/// (`rate<T, D>()`, the rule's first hyperparameter) and its other
/// hyperparameters (`constants()`, an array of doubles); `sparse_rows` when a
/// sparse gradient updates only its rows (else it is taken as dense).
template <class Opt>
concept rule_optimizer = requires { typename Opt::rule; };
/// Whether the gradient G of variable V is updated by rows (sparse_apply).
template <class Opt, class G, class V>
inline constexpr bool by_rows_v = Opt::sparse_rows && sparse_v<G, V>;
template <class T, class D, class V>
inline constexpr bool same_kind_v = std::is_same_v<value_type_t<V>, T> && std::is_same_v<device_t<V>, D>;
/// Which of the pairs P... one apply_dense node updates: the dense ones of
/// the first dense pair's dtype and device (`fused`, in order); the others
/// (`rest`: sparse gradients, other dtypes or devices) get a node each.
template <class Opt, class... P>
struct fuse_plan {
    static constexpr std::size_t n = sizeof...(P);
    static constexpr std::array<bool, n> dense = {!by_rows_v<Opt, decltype(P::grad), decltype(P::var)>...};
    static constexpr std::size_t first = [] {
        std::size_t k = 0;
        while (k < n && !dense[k]) ++k;
        return k;
    }();
    static constexpr std::array<bool, n> in = [] {
        if constexpr (first == n) return std::array<bool, n>{};
        else {
            using V0 = meta::remove_cvref_t<decltype(meta::at_t<first, P...>::var)>;
            std::array<bool, n> r = {same_kind_v<value_type_t<V0>, device_t<V0>, decltype(P::var)>...};
            for (std::size_t k = 0; k < n; ++k) r[k] = r[k] && dense[k];
            return r;
        }
    }();
    static constexpr std::size_t fused = [] {
        std::size_t c = 0;
        for (bool b : in) c += b;
        return c;
    }();
    template <bool In, std::size_t C>
    static constexpr std::array<std::size_t, C> positions() {
        std::array<std::size_t, C> r{};
        for (std::size_t k = 0, j = 0; k < n; ++k)
            if (in[k] == In) r[j++] = k;
        return r;
    }
    static constexpr auto fused_at = positions<true, fused>();
    static constexpr auto rest_at = positions<false, n - fused>();
};
/// How many of the pairs P... optimizer Opt updates through one node (0: none, or not a rule optimizer).
template <class Opt, class... P>
constexpr std::size_t fused_count() {
    if constexpr (rule_optimizer<Opt>) return fuse_plan<Opt, P...>::fused;
    else return 0;
}
}  // namespace detail

// ---------------------------------------------------------------------------
// The optimizer interface: Derived::update(grad, var) gives one variable's
// update op (assignments, or an apply_dense node).
// ---------------------------------------------------------------------------
template <class Derived>
class optimizer {
public:
    /// The gradients of loss for each of vars (or every trainable variable
    /// loss reaches).
    template <expression L, variable_c... Vs>
    auto compute_gradients(const L& loss, const Vs&... vars) const {
        if constexpr (sizeof...(Vs) == 0) {
            return with_trainable(loss, [&](const auto&... v) { return compute_gradients(loss, v...); });
        } else if constexpr (!(detail::trainable_arg_v<Vs> && ...)) {
            (detail::check_trainable<Derived, Vs>(), ...);
            return grads_and_vars<>();
        } else if constexpr (sizeof...(Vs) == 1) {
            auto g = grad(loss, vars...);
            return grads_and_vars<grad_and_var<decltype(g), Vs>...>(grad_and_var<decltype(g), Vs>{g, vars}...);
        } else {
            auto gs = grad(loss, vars...);
            return [&]<std::size_t... K>(std::index_sequence<K...>) {
                return grads_and_vars<grad_and_var<meta::remove_cvref_t<decltype(gs.template get<K>())>, Vs>...>(
                    grad_and_var<meta::remove_cvref_t<decltype(gs.template get<K>())>, Vs>{gs.template get<K>(),
                                                                                          vars}...);
            }(std::index_sequence_for<Vs...>{});
        }
    }

    /// One op applying the updates for these gradients (and incrementing the
    /// global step, when one is given).
    template <class... P, class... Step>
        requires(sizeof...(Step) <= 1 && (detail::is_global_step_v<Step> && ...))
    auto apply_gradients(const grads_and_vars<P...>& gv, const Step&... step) const {
        if constexpr (!detail::rate_ok<Derived>()) {
            return detail::no_update();  // reported by the constructor
        } else if constexpr (!(detail::trainable_arg_v<decltype(std::declval<P>().var)> && ...)) {
            (detail::check_trainable<Derived, decltype(std::declval<P>().var)>(), ...);
            return detail::no_update();
        } else if constexpr (sizeof...(P) + sizeof...(Step) == 0) {
            return detail::no_update();  // after compute_gradients reported an error
        } else if constexpr (detail::fused_count<Derived, P...>() > 0) {
            using F = detail::fuse_plan<Derived, P...>;
            return [&]<std::size_t... A, std::size_t... B>(std::index_sequence<A...>, std::index_sequence<B...>) {
                return group(update_all(grads_and_vars<meta::at_t<F::fused_at[A], P...>...>(gv.template get<F::fused_at[A]>()...)),
                             self().update(gv.template get<F::rest_at[B]>().grad, gv.template get<F::rest_at[B]>().var)...,
                             assign_add(step.var, value_type_t<decltype(step.var)>(1))...);
            }(std::make_index_sequence<F::fused>{}, std::make_index_sequence<F::n - F::fused>{});
        } else return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return group(self().update(gv.template get<K>().grad, gv.template get<K>().var)...,
                         assign_add(step.var, value_type_t<decltype(step.var)>(1))...);
        }(std::index_sequence_for<P...>{});
    }

    /// compute_gradients then apply_gradients: one update op for the given
    /// variables (or every trainable variable loss reaches); a last argument
    /// global_step(gs) also increments gs.
    template <expression L, class... A>
    auto minimize(const L& loss, const A&... a) const {
        if constexpr (!detail::rate_ok<Derived>()) {
            return detail::no_update();  // reported by the constructor
        } else if constexpr (!detail::first_trainable_v<sizeof...(A) - detail::last_is_step<A...>(), A...>) {
            detail::check_first_trainable<Derived, sizeof...(A) - detail::last_is_step<A...>(), A...>();
            return detail::no_update();
        } else if constexpr (detail::last_is_step<A...>()) {
            const typeflow::detail::children_of<const A*...> args(&a...);
            return [&]<std::size_t... K>(std::index_sequence<K...>) {
                return apply_gradients(compute_gradients(loss, *typeflow::detail::get_child<K>(args)...),
                                       *typeflow::detail::get_child<sizeof...(A) - 1>(args));
            }(std::make_index_sequence<sizeof...(A) - 1>{});
        } else {
            return apply_gradients(compute_gradients(loss, a...));
        }
    }

    /// One variable's update (a rule optimizer's): its apply_dense node, or
    /// the update of the rows of a sparse gradient (with its counter
    /// incremented beside it).
    template <class G, class V>
        requires detail::rule_optimizer<Derived>
    auto update(const G& g, const V& v) const {
        using Rule = typename Derived::rule::type;  // not via Derived (nvcc's host stubs spell kernel arguments as written)
        using T = value_type_t<V>;
        using D = device_t<V>;
        static_assert(Rule::counters <= 1);
        const auto c = self().constants();
        return [&]<std::size_t... S, std::size_t... H>(std::index_sequence<S...>, std::index_sequence<H...>) {
            if constexpr (!detail::by_rows_v<Derived, G, V>) {
                return update_all(grads_and_vars<grad_and_var<G, V>>(grad_and_var<G, V>{g, v}));  // a node of one variable
            } else if constexpr (Rule::counters == 0) {
                return detail::sparse_update<Rule>(g, v, self().template state<S>(v)..., self().template rate<T, D>(),
                                                   scalar<T, D>(static_cast<T>(c[H]))...);
            } else {
                auto t = self().template state<Rule::slots>(v);
                return group(assign_add(t, T(1)),
                             detail::sparse_update<Rule>(g, v, self().template state<S>(v)..., self().template rate<T, D>(),
                                                         scalar<T, D>(static_cast<T>(c[H]))..., t));
            }
        }(std::make_index_sequence<Rule::slots>{}, std::make_index_sequence<Rule::hypers - 1>{});
    }

private:
    const Derived& self() const { return static_cast<const Derived&>(*this); }

    // The update of every pair of gv (dense, one dtype and device): one apply_dense node.
    template <class... P>
    auto update_all(const grads_and_vars<P...>& gv) const {
        using Rule = typename Derived::rule::type;  // not via Derived (nvcc's host stubs spell kernel arguments as written)
        constexpr std::size_t N = sizeof...(P), G = 1 + Rule::slots + Rule::counters;
        using V0 = meta::remove_cvref_t<decltype(meta::at_t<0, P...>::var)>;
        using T = value_type_t<V0>;
        using D = device_t<V0>;
        const auto c = self().constants();
        // child I of the first N * G: variable I / G, then its slots and counters
        const auto item = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
            if constexpr (I % G == 0) return gv.template get<I / G>().var;
            else return self().template state<I % G - 1>(gv.template get<I / G>().var);
        };
        return [&]<std::size_t... I, std::size_t... H, std::size_t... K>(std::index_sequence<I...>, std::index_sequence<H...>,
                                                                         std::index_sequence<K...>) {
            return make_node<op::apply_dense<Rule, N>>(item(std::integral_constant<std::size_t, I>{})...,
                                                       self().template rate<T, D>(),
                                                       scalar<T, D>(static_cast<T>(c[H]))..., gv.template get<K>().grad...);
        }(std::make_index_sequence<N * G>{}, std::make_index_sequence<Rule::hypers - 1>{}, std::make_index_sequence<N>{});
    }


    template <class L, class F>
    static auto with_trainable(const L& loss, F&& f) {
        using Vars = trainable_variables_t<L>;
        static_assert(!typeflow::detail::autodiff::has_erased<typename graph::graph_of<L>::nodes>::value,
                      "typeflow: minimize: the loss reaches a tf::expr, whose variables are not part of its type; "
                      "name the variables to train: minimize(loss, vars...)");
        static_assert(Vars::size > 0, "typeflow: minimize: the loss reaches no trainable variable");
        using G = graph::graph_of<L>;
        std::array<const void*, G::size> obj{};
        graph::find_objects<G>(&loss, obj.data());
        return [&]<class... V>(meta::list<V...>) {
            return f(*static_cast<const V*>(obj[G::template index<V>::value])...);
        }(Vars{});
    }
};

// ---------------------------------------------------------------------------
// The optimizers
// ---------------------------------------------------------------------------

/// Plain gradient descent: var -= lr * grad.
template <class LR>
class gradient_descent : public optimizer<gradient_descent<LR>> {
public:
    using learning_rate_type = LR;
    explicit gradient_descent(LR lr) : lr_(std::move(lr)) { detail::check_rate<gradient_descent, LR>(); }
    template <class G, class V>
    auto update(const G& g, const V& v) const {
        if constexpr (detail::sparse_v<G, V>)
            return detail::sparse_update<update_rule::sgd>(g, v, detail::as_rate<value_type_t<V>, device_t<V>>(lr_));
        else return assign_sub(v, detail::as_rate<value_type_t<V>, device_t<V>>(lr_) * g);
    }

private:
    LR lr_;
};
/// SGD with learning rate lr (a number or a scalar expression, e.g. a placeholder or schedule).
template <class LR>
gradient_descent<LR> sgd(LR lr) {
    return gradient_descent<LR>(std::move(lr));
}

/// Options of momentum.
struct momentum_options {
    double momentum = 0.9;
    bool nesterov = false;
};
/// Momentum: a = mu * a + g; var -= lr * a (Nesterov: var -= lr * (g + mu * a)).
/// Slot "<var>/momentum".
template <class LR>
class momentum_optimizer : public optimizer<momentum_optimizer<LR>> {
public:
    using learning_rate_type = LR;
    momentum_optimizer(LR lr, momentum_options o) : lr_(std::move(lr)), o_(o) {
        detail::check_rate<momentum_optimizer, LR>();
    }
    using rule = update_rule::momentum;
    static constexpr bool sparse_rows = true;
    /// Variable v's slot.
    template <std::size_t, class V>
    auto state(const V&) const {
        return detail::slot<V::fixed_name, "momentum", V>(init::zeros{});
    }
    template <class T, class D>
    auto rate() const {
        return detail::as_rate<T, D>(lr_);
    }
    /// mu, and the weights of a and g in the step (plain: lr * a; Nesterov: lr * (mu * a + g)).
    std::array<double, 3> constants() const {
        return {o_.momentum, o_.nesterov ? o_.momentum : 1.0, o_.nesterov ? 1.0 : 0.0};
    }

private:
    LR lr_;
    momentum_options o_;
};
template <class LR>
momentum_optimizer<LR> momentum(LR lr, momentum_options o = {}) {
    return momentum_optimizer<LR>(std::move(lr), o);
}

/// Options of Adam / AdamW.
struct adam_options {
    double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
    double weight_decay = 0;  // AdamW: decoupled, var -= lr * weight_decay * var
};
/// Adam with bias correction: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// var -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) [+ lr * wd * var].
/// Slots "<var>/m", "<var>/v" and the step count "<var>/t" (a dense update
/// increments it in its apply_dense node; a sparse one, LazyAdam, beside it).
template <class LR>
class adam_optimizer : public optimizer<adam_optimizer<LR>> {
public:
    using learning_rate_type = LR;
    adam_optimizer(LR lr, adam_options o) : lr_(std::move(lr)), o_(o) {
        detail::check_rate<adam_optimizer, LR>();
    }
    using rule = update_rule::adam;
    static constexpr bool sparse_rows = true;
    /// Variable v's slots m and v (J = 0, 1), and its step count t (J = 2).
    template <std::size_t J, class V>
    auto state(const V&) const {
        if constexpr (J == 0) return detail::slot<V::fixed_name, "m", V>(init::zeros{});
        else if constexpr (J == 1) return detail::slot<V::fixed_name, "v", V>(init::zeros{});
        else return non_trainable_variable<concat<V::fixed_name, "/t">(), value_type_t<V>, shape<>, device_t<V>>(init::zeros{});
    }
    template <class T, class D>
    auto rate() const {
        return detail::as_rate<T, D>(lr_);
    }
    /// b1, b2, eps, wd, 1 - b1, 1 - b2.
    std::array<double, 6> constants() const {
        return {o_.beta1, o_.beta2, o_.epsilon, o_.weight_decay, 1 - o_.beta1, 1 - o_.beta2};
    }

private:
    LR lr_;
    adam_options o_;
};
template <class LR>
adam_optimizer<LR> adam(LR lr, adam_options o = {}) {
    return adam_optimizer<LR>(std::move(lr), o);
}
/// AdamW: Adam with decoupled weight decay.
template <class LR>
adam_optimizer<LR> adamw(LR lr, double weight_decay, adam_options o = {}) {
    o.weight_decay = weight_decay;
    return adam_optimizer<LR>(std::move(lr), o);
}

/// Options of RMSProp.
struct rmsprop_options {
    double rho = 0.9, epsilon = 1e-10, momentum = 0;
};
/// RMSProp (TensorFlow 1's): ms = rho ms + (1 - rho) g^2;
/// mom = momentum * mom + lr g / sqrt(ms + eps); var -= mom.
/// Slots "<var>/rms" and "<var>/momentum".
template <class LR>
class rmsprop_optimizer : public optimizer<rmsprop_optimizer<LR>> {
public:
    using learning_rate_type = LR;
    rmsprop_optimizer(LR lr, rmsprop_options o) : lr_(std::move(lr)), o_(o) {
        detail::check_rate<rmsprop_optimizer, LR>();
    }
    using rule = update_rule::rmsprop;
    static constexpr bool sparse_rows = false;  // a sparse gradient is taken as dense
    /// Variable v's slots rms (J = 0) and momentum (J = 1).
    template <std::size_t J, class V>
    auto state(const V&) const {
        if constexpr (J == 0) return detail::slot<V::fixed_name, "rms", V>(init::ones{});
        else return detail::slot<V::fixed_name, "momentum", V>(init::zeros{});
    }
    template <class T, class D>
    auto rate() const {
        return detail::as_rate<T, D>(lr_);
    }
    /// rho, momentum, eps, 1 - rho.
    std::array<double, 4> constants() const { return {o_.rho, o_.momentum, o_.epsilon, 1 - o_.rho}; }

private:
    LR lr_;
    rmsprop_options o_;
};
template <class LR>
rmsprop_optimizer<LR> rmsprop(LR lr, rmsprop_options o = {}) {
    return rmsprop_optimizer<LR>(std::move(lr), o);
}

/// Options of Adagrad.
struct adagrad_options {
    double initial_accumulator = 0.1;
};
/// Adagrad: acc += g^2; var -= lr g / sqrt(acc). Slot "<var>/accumulator".
template <class LR>
class adagrad_optimizer : public optimizer<adagrad_optimizer<LR>> {
public:
    using learning_rate_type = LR;
    adagrad_optimizer(LR lr, adagrad_options o) : lr_(std::move(lr)), o_(o) {
        detail::check_rate<adagrad_optimizer, LR>();
    }
    using rule = update_rule::adagrad;
    static constexpr bool sparse_rows = true;
    /// Variable v's slot.
    template <std::size_t, class V>
    auto state(const V&) const {
        return detail::slot<V::fixed_name, "accumulator", V>(init::constant{o_.initial_accumulator});
    }
    template <class T, class D>
    auto rate() const {
        return detail::as_rate<T, D>(lr_);
    }
    std::array<double, 0> constants() const { return {}; }

private:
    LR lr_;
    adagrad_options o_;
};
template <class LR>
adagrad_optimizer<LR> adagrad(LR lr, adagrad_options o = {}) {
    return adagrad_optimizer<LR>(std::move(lr), o);
}

// ---------------------------------------------------------------------------
// Locking (TensorFlow's use_locking=True)
// ---------------------------------------------------------------------------

namespace detail {
template <class Op>
inline constexpr bool lockable_v = false;
template <assign_mode M>
inline constexpr bool lockable_v<op::assign<M>> = true;
template <class Rule, std::size_t N>
inline constexpr bool lockable_v<op::apply_dense<Rule, N>> = true;
// An update op with its dense updates locked (op::locked_update): groups are
// rebuilt around locked children; a sparse update (which writes its rows when
// it runs) stays as it was.
template <class N>
auto lock_update(const N& n) {
    if constexpr (requires { typename N::op; }) {
        using Op = typename N::op;
        constexpr std::size_t C = meta::children_t<N>::size;
        if constexpr (std::is_same_v<Op, op::group>) {
            return [&]<std::size_t... I>(std::index_sequence<I...>) {
                return group(lock_update(n.template child<I>())...);
            }(std::make_index_sequence<C>{});
        } else if constexpr (lockable_v<Op>) {
            return [&]<std::size_t... I>(std::index_sequence<I...>) {
                return make_node<op::locked_update<Op>>(n.template child<I>()...);
            }(std::make_index_sequence<C>{});
        } else {
            return n;
        }
    } else {
        return n;
    }
}
}  // namespace detail

/// Optimizer Opt whose dense updates are locked (TensorFlow's
/// use_locking=True): each run's updates are computed at the end of the run
/// under one process-wide lock, from the variables' and slots' values as the
/// lock finds them, and written before the lock is released, so concurrent
/// steps lose no update. Without it (the default), concurrent steps update
/// without locks (Hogwild): a step's update is computed from the values its
/// run began with, and a concurrent write may be overwritten. Sparse updates
/// (embedding rows) are not locked.
template <class Opt>
class locking_optimizer : public optimizer<locking_optimizer<Opt>> {
public:
    using learning_rate_type = typename Opt::learning_rate_type;
    explicit locking_optimizer(Opt o) : opt_(std::move(o)) {}
    template <class G, class V>
    auto update(const G& g, const V& v) const {
        return detail::lock_update(opt_.update(g, v));
    }

private:
    Opt opt_;
};
/// opt with locked updates: tf::train::use_locking(tf::train::sgd(0.1f)).minimize(loss).
template <class Opt>
locking_optimizer<Opt> use_locking(Opt opt) {
    return locking_optimizer<Opt>(std::move(opt));
}

// ---------------------------------------------------------------------------
// Learning-rate schedules: scalar expressions of a global step variable, on
// the step's device
// ---------------------------------------------------------------------------

/// lr0 * rate^(step / decay_steps).
template <class T = float, variable_c S>
auto exponential_decay(T lr0, const S& step, double decay_steps, double rate) {
    using D = device_t<S>;
    return scalar<T, D>(lr0) * pow(scalar<T, D>(T(rate)), cast<T>(step) / scalar<T, D>(T(decay_steps)));
}
/// lr0 * factor^floor(step / step_size): the rate drops by `factor` every step_size steps.
template <class T = float, variable_c S>
auto step_decay(T lr0, const S& step, std::int64_t step_size, double factor) {
    using I = value_type_t<S>;
    using D = device_t<S>;
    return scalar<T, D>(lr0) * pow(scalar<T, D>(T(factor)), cast<T>(step / scalar<I, D>(I(step_size))));
}
/// lr0 * ((1 - alpha) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2 + alpha).
template <class T = float, variable_c S>
auto cosine_decay(T lr0, const S& step, std::int64_t decay_steps, double alpha = 0) {
    using I = value_type_t<S>;
    using D = device_t<S>;
    auto p = cast<T>(minimum(step, scalar<I, D>(I(decay_steps)))) / scalar<T, D>(T(decay_steps));
    auto cosine = scalar<T, D>(T(0.5)) * (scalar<T, D>(T(1)) + cos(scalar<T, D>(std::numbers::pi_v<T>) * p));
    return scalar<T, D>(lr0) * (scalar<T, D>(T(1 - alpha)) * cosine + scalar<T, D>(T(alpha)));
}

}  // namespace typeflow::train
