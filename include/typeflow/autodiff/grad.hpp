// typeflow/autodiff/grad.hpp — compile-time reverse-mode differentiation:
// tf::grad(y, xs...) builds the gradient of y with respect to each x as more
// graph.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <typeflow/core/error.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/assign.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/let.hpp>
#include <typeflow/expr/ops/control.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/logical.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/expr/ops/reshape.hpp>
#include <typeflow/expr/ops/to_device.hpp>
#include <typeflow/expr/ops/transpose.hpp>
#include <typeflow/expr/ops/where.hpp>
#include <typeflow/graph/topo.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow::diagnostic {
template <class Op>
struct op_has_no_gradient_rule;
template <class Expr, class Type>
struct gradient_needs_floating_point_cost;
template <class Variable>
struct grad_wrt_integer_variable;
template <class Placeholder>
struct grad_wrt_integer_placeholder;
template <class Expr, class Type>
struct grad_wrt_integer_expression;
}  // namespace typeflow::diagnostic

namespace typeflow {

/// The gradients of one cost with respect to several expressions, in order;
/// usable with structured bindings: `auto [dW, db] = tf::grad(loss, W, b);`.
template <class... Gs>
struct gradients : detail::children_of<Gs...> {
    explicit gradients(Gs... g) : detail::children_of<Gs...>(std::move(g)...) {}
    template <std::size_t I>
    const auto& get() const noexcept {
        return detail::get_child<I>(*this);
    }
};

namespace detail::autodiff {

// What gradient rules keep while one gradient is built, so that the rules of
// one node's several children can share a piece (a while loop's reverse scan,
// built once for all its leaves): per thread, keyed by the rule's three
// pointers, dropped when the outermost builder is done. Not in the node
// itself: a piece that reads the node's adjoint, which reads the node, would
// keep the node alive for ever.
struct rule_memo {
    struct entry {
        const void* key[3];
        std::shared_ptr<void> value;
    };
    std::vector<entry> entries;
    int depth = 0;
    static rule_memo& current() {
        static thread_local rule_memo m;
        return m;
    }
    // The kept value for the key, or make()'s (kept until the outermost builder is done).
    template <class T, class Make>
    static const T& get(const void* k0, const void* k1, const void* k2, Make&& make) {
        rule_memo& m = current();
        for (const entry& e : m.entries)
            if (e.key[0] == k0 && e.key[1] == k1 && e.key[2] == k2) return *static_cast<const T*>(e.value.get());
        auto p = std::make_shared<T>(make());
        const T& r = *p;
        m.entries.push_back(entry{{k0, k1, k2}, std::move(p)});
        return r;
    }
};
// Counts the builders alive on this thread; the last one out drops the rules' kept values.
struct rule_memo_scope {
    rule_memo_scope() noexcept { ++rule_memo::current().depth; }
    ~rule_memo_scope() {
        rule_memo& m = rule_memo::current();
        if (--m.depth == 0) m.entries.clear();
    }
    rule_memo_scope(const rule_memo_scope&) = delete;
    rule_memo_scope& operator=(const rule_memo_scope&) = delete;
};

template <class T, class = void>
inline constexpr bool complete_v = false;
template <class T>
inline constexpr bool complete_v<T, std::void_t<decltype(sizeof(T))>> = true;

template <class Op>
constexpr bool has_rule() {
    constexpr bool ok = complete_v<gradient<Op>>;
    if constexpr (!ok) {
        diagnostic::op_has_no_gradient_rule<Op> error;
    }
    static_assert(ok, "typeflow: grad: this op has no gradient rule (specialise typeflow::gradient<Op>)");
    return ok;
}

/// One way into a node: parent index and the child slot it reads.
struct use {
    std::size_t parent = 0, slot = 0;
};

template <class Nodes>
struct node_at;
template <class... Ts>
struct node_at<meta::list<Ts...>> : meta::compile_time_only {
    template <std::size_t I>
    using type = meta::at_t<I, Ts...>;
};

// The uses (parent, slot) of every node, for data edges, grouped by node in
// edge order: node i's uses are u[first[i]] .. u[first[i + 1] - 1]. One table
// per graph: a function or variable per node keyed on the graph type would be
// an entity whose mangled name spells the whole graph.
template <std::size_t E, std::size_t N>
struct use_lists {
    std::array<use, E + 1> u{};
    std::array<std::size_t, N + 1> first{};
};
template <class G>
struct use_table {
    static constexpr use_lists<G::edge_count, G::size> value = [] {
        use_lists<G::edge_count, G::size> t{};
        for (const graph::edge& e : G::edges)
            if (!e.control) ++t.first[e.child + 1];
        for (std::size_t i = 0; i < G::size; ++i) t.first[i + 1] += t.first[i];
        std::array<std::size_t, G::size + 1> fill = t.first;
        for (std::size_t k = 0; k < G::edge_count; ++k) {
            const graph::edge& e = G::edges[k];
            if (!e.control) t.u[fill[e.child]++] = use{e.parent, k - G::first_edge[e.parent]};
        }
        return t;
    }();
};

// True for a node that passes its adjoint on to its children: an op of
// floating-point value whose rule is not no_gradient (stop_gradient,
// comparisons and the like pass nothing). An op without a rule counts as
// passing, so that reaching it is the error it is.
template <class T, bool Leaf = T::is_leaf>
inline constexpr bool passes_adjoint_v = false;
template <class T>
inline constexpr bool passes_adjoint_v<T, false> = [] {
    if constexpr (!ad::differentiable_v<T>) return false;
    else if constexpr (!complete_v<gradient<typename T::op>>) return true;
    else return !std::is_base_of_v<no_gradient, gradient<typename T::op>>;
}();
// Which nodes the cost's adjoint reaches: the cost (the last node), and each
// node that a reached node passing adjoints on reads. The builder instantiates
// nothing for the rest (below a loop gradient's stop_gradient entries lies
// the whole forward loop, whose every node reads the same variables).
template <class G>
struct reach_table {
    template <class... Ts>
    static constexpr std::array<bool, G::size> passes(meta::list<Ts...>) {
        return {passes_adjoint_v<Ts>...};
    }
    static constexpr std::array<bool, G::size> value = [] {
        constexpr std::array<bool, G::size> pass = passes(typename G::nodes{});
        constexpr const auto& t = use_table<G>::value;
        std::array<bool, G::size> r{};
        r[G::size - 1] = true;
        for (std::size_t i = G::size - 1; i-- > 0;)  // parents come after their children
            for (std::size_t k = t.first[i]; k < t.first[i + 1] && !r[i]; ++k) r[i] = r[t.u[k].parent] && pass[t.u[k].parent];
        return r;
    }();
};

// An op's name for messages (keyed on the op alone), "" for leaves.
template <class T, bool Leaf = T::is_leaf>
struct op_of {
    using type = void;
};
template <class T>
struct op_of<T, false> {
    using type = typename T::op;
};
template <class Op>
struct op_label {
    static constexpr std::string_view value = op_name_v<Op>;
};
template <class L>
struct node_labels;
template <class... Ts>
struct node_labels<meta::list<Ts...>> {
    static constexpr std::array<std::string_view, sizeof...(Ts)> value = {op_label<typename op_of<Ts>::type>::value...};
};

// The contribution of a vjp to child C, summed over the axes it was broadcast
// along, with C's rank.
struct sum_plan {
    std::array<index_t, max_rank> axes{};
    std::size_t n = 0;
};
constexpr sum_plan broadcast_axes(dims child, dims got) {
    sum_plan p;
    const std::size_t lead = got.rank - child.rank;
    for (std::size_t i = 0; i < got.rank; ++i) {
        if (i < lead) p.axes[p.n++] = static_cast<index_t>(i);
        else if (child.d[i - lead] == 1 && got.d[i] != 1) p.axes[p.n++] = static_cast<index_t>(i);
    }
    return p;
}
// Whether the child was broadcast along an axis where its extent is dyn is
// known only at run time (an extent of 1 broadcast against a larger one):
//   - where the contribution's extent is static and not 1;
//   - where it is dyn and another operand of an element-wise parent has a dyn
//     extent too (bit i of `partners`, counted on the parent's result axes;
//     see dyn_partners). Without such an operand the child's extent is the
//     result's, and nothing is summed.
constexpr bool broadcast_at_run_time(dims child, dims got, unsigned partners) {
    if (got.rank < child.rank) return false;
    const std::size_t lead = got.rank - child.rank;
    for (std::size_t i = 0; i < child.rank; ++i) {
        if (child.d[i] != dyn) continue;
        const index_t g = got.d[i + lead];
        if (g != 1 && g != dyn) return true;
        if (g == dyn && (partners >> (i + lead) & 1u)) return true;
    }
    return false;
}
// For an element-wise parent P (result rank R) and its data operand in slot
// Slot: bit i is set when another data operand, a different node, has a dyn
// extent on result axis i. 0 for other parents, whose rules give each child
// a contribution of its own extents.
// (the value is a base's: a static member of its own, or a lambda, would give
// the class a debug entry, whose name spells P)
template <std::size_t N>
constexpr unsigned dyn_partner_mask(const std::array<dims, N>& ds, const std::array<bool, N>& same, std::size_t R,
                                    std::size_t slot, std::size_t control) {
    unsigned m = 0;
    for (std::size_t j = control; j < N; ++j) {
        if (j == slot || same[j] || ds[j].rank > R) continue;
        for (std::size_t i = 0; i < ds[j].rank; ++i)
            if (ds[j].d[i] == dyn) m |= 1u << (R - ds[j].rank + i);
    }
    return m;
}
template <class P, std::size_t Slot, class L = meta::children_t<P>>
struct dyn_partners : std::integral_constant<unsigned, 0>, meta::compile_time_only {};
template <class P, std::size_t Slot, class... C>
    requires(P::kind == op_kind::elementwise)
struct dyn_partners<P, Slot, meta::list<C...>>
    : std::integral_constant<unsigned, dyn_partner_mask<sizeof...(C)>({shape_t<C>::value...},
                                                                      {std::is_same_v<C, meta::at_t<Slot, C...>>...},
                                                                      shape_t<P>::rank, Slot, P::control_inputs)>,
      meta::compile_time_only {};
constexpr std::size_t dyn_count(dims d) {
    std::size_t c = 0;
    for (std::size_t i = 0; i < d.rank; ++i) c += d.d[i] == dyn;
    return c;
}

// The contribution v of a parent to child C, summed over the axes it was
// broadcast along, with C's rank; `partners` as for broadcast_at_run_time.
template <unsigned Partners, class C, class V>
auto unbroadcast(const C& child, const V& v) {
    if constexpr (ad::is_zero_v<V>) {
        return ad::zero{};
    } else if constexpr (broadcast_at_run_time(shape_t<C>::value, shape_t<V>::value, Partners)) {
        // the axes to sum are decided per run from the child's and v's extents
        return sum_like(v, child);
    } else if constexpr (std::is_same_v<shape_t<C>, shape_t<V>>) {
        return v;
    } else {
        constexpr dims st = shape_t<C>::value, sv = shape_t<V>::value;
        if constexpr (sv.rank < st.rank) {
            return broadcast_like(v, child);
        } else {
            constexpr sum_plan p = broadcast_axes(st, sv);
            auto r = [&]<std::size_t... K>(std::index_sequence<K...>) {
                if constexpr (sizeof...(K) == 0) return v;
                else return make_node<op::reduce<reduction::sum, true, p.axes[K]...>>(v);
            }(std::make_index_sequence<p.n>{});
            if constexpr (sv.rank == st.rank) {
                return r;
            } else if constexpr (dyn_count(st) <= 1) {
                return [&]<std::size_t... K>(std::index_sequence<K...>) {
                    return make_node<op::reshape<(st.d[K] == dyn ? index_t{-1} : st.d[K])...>>(r);
                }(std::make_index_sequence<st.rank>{});
            } else {
                return reshape_like(r, child);
            }
        }
    }
}

template <class Y, class Seed>
class builder;
// The adjoint of node I of builder<Y, Seed> as a tf::let: a node named by
// (Y, Seed, I), not by the adjoint's expression, which spells the adjoints of
// every node above I (in a graph that reads a value twice, as h * w + h does,
// that name doubles with each such step).
template <class Y, class Seed, std::size_t I>
struct adjoint_let {
    const void* r;
    const typename builder<Y, Seed>::template expression_of<I>& operator()() const {
        return *static_cast<const typename builder<Y, Seed>::template expression_of<I>*>(r);
    }
};

// Builds adjoints over the distinct nodes of y, children of a node after the
// node (reverse topological order), memoised per node. The adjoint of y is
// ones, or `seed` (an expression of y's shape) when Seed is not void. The
// adjoint of a node that two or more parents read, an element-wise sum of
// their contributions, is an adjoint_let.
template <class Y, class Seed = void>
class builder {
    using G = graph::graph_of<Y>;
    static constexpr std::size_t N = G::size;
    template <std::size_t I>
    using at = typename node_at<typename G::nodes>::template type<I>;

public:
    template <class S = Seed>
        requires(!std::is_void_v<S>)
    builder(const Y& y, const S& seed) : builder(y) {
        seed_ = &seed;
    }
    explicit builder(const Y& y) {
        const std::size_t clash = graph::find_objects<G>(&y, obj_.data());
        if (clash != graph::no_node)
            typeflow::detail::raise(
                typeflow::detail::message()
                << "grad: the cost holds two different '" << node_labels<typename G::nodes>::value[clash]
                <<
                        "' nodes of one type that differ only in anonymous constants (such as x * 2.0f and "
                        "x * 3.0f), or only in the tf::expr objects they read; grad identifies nodes by type. Make one "
                        "of the constants a tf::literal<T, num, den>, a placeholder or a variable; hide each term "
                        "that reads a different tf::expr in a tf::expr of its own");
    }

    template <class X>
    auto of(const X& x) {
        constexpr std::size_t i = G::template index<X>::value;
        if constexpr (i >= N) {
            return zeros(x);
        } else {
            auto a = adjoint<i>();
            if constexpr (ad::is_zero_v<decltype(a)>) return zeros(x);
            else return a;
        }
    }

    /// Node I's adjoint (ad::zero when nothing flows to it) and object.
    template <std::size_t I>
    auto adjoint_at() {
        return adjoint<I>();
    }
    template <std::size_t I>
    const at<I>& object_at() const {
        return object<I>();
    }
    /// What parent P's vector-Jacobian product gives its child slot `Slot` (node I).
    template <std::size_t P, std::size_t Slot, std::size_t I>
    auto contribution_at() {
        return contribution<P, Slot, I>();
    }

private:
    template <class X>
    static auto zeros(const X& x) {
#ifdef TYPEFLOW_WARN_ZERO_GRADIENT
        unreached_warning<X>();
#endif
        return broadcast_like(literal<value_type_t<X>, 0, 1, device_t<X>>{}, x);
    }
#ifdef TYPEFLOW_WARN_ZERO_GRADIENT
    template <class X>
    [[deprecated("typeflow: grad: the cost does not depend on this expression; its gradient is a static zero")]]
    static void unreached_warning() {}
#endif

    template <std::size_t I>
    const at<I>& object() const {
        return *static_cast<const at<I>*>(obj_[I]);
    }

    template <std::size_t I>
    auto compute() {
        using T = at<I>;
        if constexpr (I + 1 == N && !std::is_void_v<Seed>) {
            return *seed_;
        } else if constexpr (I + 1 == N) {
            if constexpr (shape_t<T>::rank == 0) return literal<value_type_t<T>, 1, 1, device_t<T>>{};
            else return broadcast_like(literal<value_type_t<T>, 1, 1, device_t<T>>{}, object<I>());
        } else if constexpr (!ad::differentiable_v<T> || !reach_table<G>::value[I]) {
            return ad::zero{};
        } else {
            constexpr const auto& t = use_table<G>::value;
            constexpr std::size_t b = t.first[I];
            return [&]<std::size_t... K>(std::index_sequence<K...>) {
                return sum(contribution<t.u[b + K].parent, t.u[b + K].slot, I>()...);
            }(std::make_index_sequence<t.first[I + 1] - b>{});
        }
    }
    static ad::zero sum() { return {}; }
    template <class A, class... R>
    static auto sum(const A& a, const R&... r) {
        return ad::add(a, sum(r...));
    }

    // Whether node I's adjoint R is named by an adjoint_let: I is not a leaf
    // (a variable's gradient stays as its rules made it, for the optimizers),
    // two or more parents read it, and R is element-wise (the let is an
    // identity that fuses with it).
    template <std::size_t I, class R>
    static constexpr bool named_adjoint() {
        constexpr const auto& t = use_table<G>::value;
        if constexpr (at<I>::is_leaf || t.first[I + 1] - t.first[I] < 2) return false;
        else if constexpr (!typeflow::detail::is_node_v<R> || typeflow::detail::is_let_v<R>) return false;
        else return R::op::kind == op_kind::elementwise;
    }
    template <std::size_t I>
    auto adjoint() {
        using R = decltype(compute<I>());
        if constexpr (ad::is_zero_v<R>) {
            return ad::zero{};
        } else {
            using A = meta::if_t<named_adjoint<I, R>(), let_node<adjoint_let<Y, Seed, I>>, R>;
            // memoised in the slots of one node state (as a node holds its
            // children): a shared_ptr per adjoint type would instantiate a
            // control block with a vtable and type name per type
            if (slot_[I] == none) {
                const A a(compute<I>());  // may memoise other adjoints first
                slot_[I] = memo_.get()->count;
                typeflow::detail::child_ops<A>::type::store(memo_.get(), &a);
            }
            return *__builtin_launder(reinterpret_cast<const A*>(memo_.get()->slots()[slot_[I]].bytes));
        }
    }

    template <std::size_t P, std::size_t Slot, std::size_t I>
    auto contribution() {
        using PT = at<P>;
        if constexpr (!reach_table<G>::value[P] || !passes_adjoint_v<PT>) return ad::zero{};
        else return reached_contribution<P, Slot, I>();
    }
    template <std::size_t P, std::size_t Slot, std::size_t I>
    auto reached_contribution() {
        using PT = at<P>;
        static_assert(has_rule<typename PT::op>());
        auto gp = adjoint<P>();
        if constexpr (ad::is_zero_v<decltype(gp)>) {
            return ad::zero{};
        } else {
            const PT& p = object<P>();
            const auto v = gradient<typename PT::op>::template vjp<Slot>(p, gp);
            using V = meta::remove_cvref_t<decltype(v)>;
            // the partners' bits count the parent's result axes: v's, when it has their rank
            constexpr unsigned partners = [] {
                if constexpr (ad::is_zero_v<V>) return 0u;
                else if constexpr (shape_t<V>::rank != shape_t<PT>::rank) return 0u;
                else return dyn_partners<PT, Slot>::value;
            }();
            return unbroadcast<partners>(p.template child<Slot>(), v);
        }
    }

    static constexpr std::size_t none = ~std::size_t{0};
    rule_memo_scope scope_;  // the rules' kept values live as long as the outermost builder
    const meta::if_t<std::is_void_v<Seed>, char, Seed>* seed_ = nullptr;
    std::array<const void*, N> obj_{};
    typeflow::detail::node_handle memo_{typeflow::detail::new_node_state(N)};  // the adjoints computed so far
    std::array<std::size_t, N> slot_ = [] {
        std::array<std::size_t, N> a{};
        a.fill(none);
        return a;
    }();
public:
    /// The expression of node I's adjoint (before adjoint_let names it);
    /// declared after compute, for nvcc's front end.
    template <std::size_t I>
    using expression_of = decltype(std::declval<builder&>().template compute<I>());
};

// True when a node of L is a tf::expr (its graph is known only at run time).
template <class T>
concept erased_node = requires { T::expand_graph; };
template <class L>
struct has_erased;
template <class... Ts>
struct has_erased<meta::list<Ts...>> : std::bool_constant<(erased_node<Ts> || ...)>, meta::compile_time_only {};
template <class Y>
constexpr bool floating_cost() {
    constexpr bool ok = std::is_floating_point_v<value_type_t<Y>>;
    if constexpr (!ok) {
        diagnostic::gradient_needs_floating_point_cost<Y, value_type_t<Y>> error;
    }
    static_assert(ok, "typeflow: grad: the cost must have a floating-point dtype");
    return ok;
}
// A gradient is taken only with respect to a floating-point x: an integer or
// bool one (a step counter, ids, labels) has none (tf.gradients gives None),
// where a zero would hide the mistake. The error names the variable or
// placeholder (or the expression and its dtype).
template <class X>
constexpr bool floating_wrt() {
    using T = value_type_t<X>;
    constexpr bool ok = floating_c<T>;
    if constexpr (!ok) {
        if constexpr (typeflow::detail::is_variable_v<X>) {
            diagnostic::grad_wrt_integer_variable<X> error;
        } else if constexpr (typeflow::detail::is_placeholder_v<X>) {
            diagnostic::grad_wrt_integer_placeholder<X> error;
        } else {
            diagnostic::grad_wrt_integer_expression<X, T> error;
        }
    }
    static_assert(ok,
                  "typeflow: grad: a gradient is taken only with respect to a floating-point (float or double) "
                  "expression; an integer or bool variable or placeholder has none: leave it out of grad");
    return ok;
}
// Whether grad(y, xs...) is well typed: a floating-point cost and xs. When
// it is not, report_grad_args names the first mistake (the cost's dtype, or
// each integer x), and grad returns zeros of each x's dtype and shape (what
// it gave before), so that no second error follows. The checks are called as
// statements, not in a constant expression: a failed static_assert there
// would add "non-constant condition" errors.
template <class Y, class... Xs>
inline constexpr bool grad_args_valid_v = floating_c<value_type_t<Y>> && (floating_c<value_type_t<Xs>> && ...);
template <class Y, class... Xs>
void report_grad_args() {
    if constexpr (!floating_c<value_type_t<Y>>) (void)floating_cost<Y>();
    else ((void)floating_wrt<Xs>(), ...);
}
template <class X>
auto inert_gradient(const X& x) {
    return broadcast_like(literal<value_type_t<X>, 0, 1, device_t<X>>{}, x);
}

}  // namespace detail::autodiff

/// grad through tf::expr objects, whose graphs are known only at run time: a
/// customisation point of the runtime layer (defined in
/// runtime/expr_backprop.hpp), declared here so that the walk names no layer
/// above its own.
template <expression Y, expression... Xs>
auto erased_grad(const Y& y, const Xs&... xs);

/// The gradient of y with respect to x (y summed over its elements when it is
/// not a scalar, as tf.gradients does): an expression of x's shape, sharing
/// y's nodes, so that fetching y and its gradient computes y once. An x that
/// y does not depend on gets a zero gradient (a warning with
/// -DTYPEFLOW_WARN_ZERO_GRADIENT); an integer or bool x is a compile error
/// naming it (grad_wrt_integer_variable<V>, ..._placeholder<P>). When y reaches a tf::expr, the gradient
/// is a tf::expr of x's dtype and shape (see runtime/expr.hpp).
template <expression Y, expression X>
auto grad(const Y& y, const X& x) {
    if constexpr (!detail::autodiff::grad_args_valid_v<Y, X>) {
        detail::autodiff::report_grad_args<Y, X>();
        return detail::autodiff::inert_gradient(x);
    } else if constexpr (detail::autodiff::has_erased<typename graph::graph_of<Y>::nodes>::value) {
        return erased_grad(y, x);  // through tf::expr (runtime/expr_backprop.hpp)
    } else {
        detail::autodiff::builder<Y> b(y);
        return b.of(x);
    }
}
/// Gradients of y with respect to each of xs..., built in one pass.
template <expression Y, expression... Xs>
    requires(sizeof...(Xs) > 1)
auto grad(const Y& y, const Xs&... xs) {
    if constexpr (!detail::autodiff::grad_args_valid_v<Y, Xs...>) {
        detail::autodiff::report_grad_args<Y, Xs...>();
        return gradients<decltype(detail::autodiff::inert_gradient(xs))...>(detail::autodiff::inert_gradient(xs)...);
    } else if constexpr (detail::autodiff::has_erased<typename graph::graph_of<Y>::nodes>::value) {
        return erased_grad(y, xs...);
    } else {
        detail::autodiff::builder<Y> b(y);
        return gradients<decltype(b.of(xs))...>(b.of(xs)...);
    }
}

}  // namespace typeflow

template <class... Gs>
struct std::tuple_size<typeflow::gradients<Gs...>> : std::integral_constant<std::size_t, sizeof...(Gs)> {};
template <std::size_t I, class... Gs>
struct std::tuple_element<I, typeflow::gradients<Gs...>> {
    using type = const typeflow::meta::at_t<I, Gs...>;
};
