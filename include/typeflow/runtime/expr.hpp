// typeflow/runtime/expr.hpp — tf::expr<T, S>: an expression whose type is a
// short tag (dtype, shape, device), not the graph below it.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

#include <typeflow/core/device.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/pod_vector.hpp>
#include <typeflow/expr/diagnostics.hpp>
#include <typeflow/expr/grad.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/graph/topo.hpp>
#include <typeflow/runtime/plan.hpp>

namespace typeflow::diagnostic {
template <class ExprShape, class ExpressionShape>
struct expr_shape_does_not_fit;
template <class ExprType, class ExpressionType>
struct expr_dtype_differs;
template <class ExprDevice, class ExpressionDevice>
struct expr_device_differs;
}  // namespace typeflow::diagnostic

namespace typeflow {
template <value_type_c T, shape_c S, device_c D>
class expr;

namespace runtime {
/// Adjoints found while differentiating through tf::expr objects: each a
/// tf::expr (held here) keyed by what it is the adjoint of (a tf::expr's or a
/// variable's identity, a placeholder's feed key).
class grad_sink {
public:
    struct entry {
        const void* key;
        expr_ref value;
        std::uint32_t prev;  // the previous entry of the same key, or none
    };
    static constexpr std::uint32_t none = typeflow::detail::key_map::none;
    grad_sink() = default;
    grad_sink(const grad_sink&) = delete;
    grad_sink& operator=(const grad_sink&) = delete;
    ~grad_sink() {
        for (const entry& e : entries_) typeflow::detail::node_handle release(e.value.state);
    }
    /// Adds an adjoint of `key` (shares r).
    void add(const void* key, expr_ref r) {
        r.state->refs.fetch_add(1, std::memory_order_relaxed);
        const auto k = static_cast<std::uint32_t>(entries_.size());
        const std::uint32_t prev = last_.find(key, 0);
        entries_.push_back({key, r, prev});
        if (prev == none) last_.insert(key, 0, k);
        else last_.set(key, 0, k);
    }
    /// The last entry of `key` (follow entry::prev for the others), or none.
    std::uint32_t last(const void* key) const noexcept { return last_.find(key, 0); }
    const entry& operator[](std::uint32_t k) const noexcept { return entries_[k]; }

private:
    typeflow::detail::pod_vector<entry> entries_;
    typeflow::detail::key_map last_;
};

namespace detail {
template <class R>
void backward_of(const void* root, const expr_ref* seeds, std::size_t n, grad_sink& out);
template <class T, bool Leaf = T::is_leaf>
struct has_rule : std::true_type {};
template <class T>
struct has_rule<T, false> : std::bool_constant<typeflow::detail::autodiff::complete_v<gradient<typename T::op>>> {};
template <class L>
struct all_have_rules;
template <class... Ts>
struct all_have_rules<meta::list<Ts...>> : std::bool_constant<(has_rule<Ts>::value && ...)> {};
// The graph of expression type R, and its vector-Jacobian product when
// Backward and R can be differentiated (floating point, every op with a rule).
template <class R, bool Backward>
struct erased_tables {
    using G = graph::graph_of<R>;
    static constexpr backward_fn backward = []() -> backward_fn {
        if constexpr (Backward && std::is_floating_point_v<value_type_t<R>> && all_have_rules<typename G::nodes>::value)
            return &backward_of<R>;
        else
            return nullptr;
    }();
    static constexpr erased_graph value{graph_tables<G>::value, backward};
};
// A tf::expr hiding a leaf: its adjoints go to the leaf's key (a variable's or
// tf::expr's identity, a placeholder's feed key) as they come.
template <class L>
void leaf_backward(const void* root, const expr_ref* seeds, std::size_t n, grad_sink& out);
template <class L, bool Backward>
struct leaf_tables {
    static constexpr erased_graph value{graph_tables<graph::graph_of<L>>::value,
                                        Backward && std::is_floating_point_v<value_type_t<L>> ? &leaf_backward<L>
                                                                                               : nullptr};
};
template <class E>
struct normal_form;
}  // namespace detail
}  // namespace runtime

namespace detail {
struct no_backward_t {};
// What the gradient code needs of a tf::expr's internals.
struct expr_access {
    template <class E>
    static runtime::expr_ref ref(const E& e) noexcept {
        return {e.h_.get(), e.g_};
    }
    // a tf::expr of type E sharing r's state (a tf::expr of another static shape)
    template <class E>
    static E adopt(const runtime::expr_ref& r) noexcept {
        return E(r);
    }
    // hides x in a tf::expr of type E without a vector-Jacobian product (no
    // further instantiation: the adjoints grad makes are not differentiated again)
    template <class E, class X>
    static E erase(const X& x) {
        if constexpr (std::is_base_of_v<E, X>) return E(x);  // E itself, or a slot (which is its tf::expr)
        else return E(x, no_backward_t{});
    }
};

// S fits R: the same rank, and each extent equal or dyn in S.
template <class S, class R>
constexpr bool shape_fits() {
    constexpr dims s = S::value, r = R::value;
    if (s.rank != r.rank) return false;
    for (std::size_t i = 0; i < s.rank; ++i)
        if (s.d[i] != dyn && s.d[i] != r.d[i]) return false;
    return true;
}
}  // namespace detail

/// An expression of element type T, static shape S and device D whose type
/// does not spell the graph below it, like std::function for graphs:
///
///     tf::expr<float, tf::shape<tf::dyn, 16>> h = x;
///     for (int k = 0; k < 100; ++k) h = tf::tanh(h * w + h);
///
/// It keeps the expression it was made from (sharing its nodes) and the
/// compile-time tables of that expression's graph, built once per expression
/// type. A session expands it at run time, so graphs of any depth, and depths
/// known only at run time, compile in the time of one step. S may leave an
/// extent of the expression tf::dyn, never the reverse. A tf::expr is
/// identified by object (as an anonymous constant is): fusion and common
/// subexpressions stop at it. `tf::grad` differentiates through it: each
/// hidden expression type gets its vector-Jacobian product compiled once, and
/// the adjoints cross the tf::expr objects at run time; such a gradient is a
/// tf::expr itself (and is not differentiated again). The variables,
/// placeholders and tf::expr objects an expression reads are not part of the
/// type it is hidden as, only their dtypes, shapes and positions, so that
/// expressions of one structure (the steps of a chain, layers of one shape)
/// share one graph and one vector-Jacobian product.
template <value_type_c T, shape_c S, device_c D = cpu>
class expr : public detail::leaf_base {
public:
    using value_type = T;
    using shape_type = S;
    using device = D;
    static constexpr bool pure = false;

    /// Hides expression `e` (which it shares).
    template <expression E>
        requires(!std::is_base_of_v<expr, std::remove_cvref_t<E>>)
    expr(const E& e)  // NOLINT(google-explicit-constructor): `tf::expr<...> h = a + b;`
        : h_(detail::new_node_state(1)) {
        init<E, true>(e);
    }

    const void* identity() const noexcept { return h_.get(); }
    /// The graph it hides and the object of that graph's root (for plans).
    static const runtime::subgraph* expand_graph(const void* obj, const void** root) noexcept {
        const expr& e = *static_cast<const expr*>(obj);
        *root = e.h_.get()->slots()[0].bytes;
        return &e.g_->g;
    }

protected:
    /// Shares r's state.
    explicit expr(const runtime::expr_ref& r) noexcept : h_(r.state), g_(r.g) {
        h_.get()->refs.fetch_add(1, std::memory_order_relaxed);
    }

private:
    friend struct detail::expr_access;
    template <class E>
    expr(const E& e, detail::no_backward_t) : h_(detail::new_node_state(1)) {
        init<E, false>(e);
    }
    template <class E, bool Backward>
    void init(const E& e) {
        static_assert(check<E>());
        using nodes = typename graph::graph_of<E>::nodes;
        static_assert(sizeof(runtime::detail::check_devices<nodes, runtime::detail::all_have_backends<nodes>::value>) > 0);
        if constexpr (E::is_leaf) {
            g_ = &runtime::detail::leaf_tables<E, Backward>::value;
            detail::child_ops<E>::type::store(h_.get(), &e);
        } else if constexpr (Backward && runtime::detail::normal_form<E>::applies) {
            // hidden as its normal form (see runtime::detail::normal_form)
            using R = typename runtime::detail::normal_form<E>::type;
            g_ = &runtime::detail::erased_tables<R, true>::value;
            const R r = runtime::detail::normal_form<E>::make(e);
            detail::child_ops<R>::type::store(h_.get(), &r);
        } else {
            g_ = &runtime::detail::erased_tables<E, Backward>::value;
            detail::child_ops<E>::type::store(h_.get(), &e);
        }
    }

    template <class E>
    static constexpr bool check() {
        constexpr bool type_ok = std::is_same_v<value_type_t<E>, T>;
        if constexpr (!type_ok) {
            diagnostic::expr_dtype_differs<T, value_type_t<E>> error;
        }
        static_assert(type_ok, "typeflow: expr: the expression's dtype differs from the tf::expr's");
        constexpr bool device_ok = std::is_same_v<device_t<E>, D>;
        if constexpr (!device_ok) {
            diagnostic::expr_device_differs<D, device_t<E>> error;
        }
        static_assert(device_ok, "typeflow: expr: the expression's device differs from the tf::expr's");
        constexpr bool shape_ok = detail::shape_fits<S, shape_t<E>>();
        if constexpr (!shape_ok) {
            diagnostic::expr_shape_does_not_fit<S, shape_t<E>> error;
        }
        static_assert(shape_ok,
                      "typeflow: expr: the expression's shape does not fit the tf::expr's (same rank; each extent "
                      "equal, or tf::dyn in the tf::expr)");
        return type_ok && device_ok && shape_ok;
    }

    detail::node_handle h_;                     // a state whose one slot holds the hidden expression
    const runtime::erased_graph* g_ = nullptr;  // that expression's graph and vector-Jacobian product
};

namespace detail {
/// The K-th distinct variable, placeholder or tf::expr type that a hidden
/// expression reads, in that expression's normal form: a tf::expr (of the
/// leaf's dtype, shape and device) sharing a state that hides the leaf.
template <std::size_t K, value_type_c T, shape_c S, device_c D>
class expr_slot : public expr<T, S, D> {
public:
    explicit expr_slot(const runtime::expr_ref& r) noexcept : expr<T, S, D>(r) {}
};

template <class T>
inline constexpr bool is_expr_v = false;
template <class T, class S, class D>
inline constexpr bool is_expr_v<expr<T, S, D>> = true;
template <std::size_t K, class T, class S, class D>
inline constexpr bool is_expr_v<expr_slot<K, T, S, D>> = true;
}  // namespace detail

namespace runtime::detail {
using typeflow::detail::expr_access;
// The leaves that get adjoints, and that a normal form replaces by slots (see normal_form).
template <class L>
inline constexpr bool slot_leaf_v =
    typeflow::detail::is_placeholder_v<L> || typeflow::detail::is_variable_v<L> || typeflow::detail::is_expr_v<L>;
// The key of a leaf's adjoints in a grad_sink: a placeholder's feed key, a
// variable's storage, a tf::expr's state.
template <class L>
const void* sink_key(const void* leaf) {
    if constexpr (typeflow::detail::is_placeholder_v<L>) return (void)leaf, &feed_key<L>;
    else return static_cast<const L*>(leaf)->identity();
}
TYPEFLOW_NOINLINE inline void add_seeds(grad_sink& out, const void* key, const expr_ref* seeds, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) out.add(key, seeds[k]);
}
template <class L>
void leaf_backward(const void* root, const expr_ref* seeds, std::size_t n, grad_sink& out) {
    if constexpr (slot_leaf_v<L>) add_seeds(out, sink_key<L>(root), seeds, n);  // constants: nothing
}

// The normal form of a hidden expression E: E with its k-th distinct
// variable, placeholder or tf::expr type replaced by expr_slot<k, ...> (the
// other leaves, constants, stay). Expressions of one structure over leaves
// of the same dtypes and shapes have one normal form, so the tables and the
// vector-Jacobian product compiled for it serve them all. Its object is
// built at run time from E's: the same states with the slot leaves filled
// (a variable or placeholder by a new tf::expr hiding it, a tf::expr by
// itself); pure nodes stay merged as in E. Not applied to expressions with
// assignments (their variables are written, not read).
template <class Nodes, std::size_t I>
struct slot_index;
template <class... Ts, std::size_t I>
struct slot_index<meta::list<Ts...>, I>
    : std::integral_constant<std::size_t, meta::sum_first({std::size_t{slot_leaf_v<Ts>}...}, I)> {};
template <class Nodes, class N, bool Leaf = N::is_leaf, bool Slot = slot_leaf_v<N>>
struct normal_node {
    using type = N;  // a constant
};
template <class Nodes, class N>
struct normal_node<Nodes, N, true, true> {
    using type = typeflow::detail::expr_slot<slot_index<Nodes, meta::index_of<Nodes, N>::value>::value, value_type_t<N>,
                                             shape_t<N>, device_t<N>>;
};
template <class Nodes, class Op, class... C>
struct normal_node<Nodes, node<Op, C...>, false, false> {
    using type = node<Op, typename normal_node<Nodes, C>::type...>;
};

// What the rebuild does with node i of E (plain data; see rebuild_normal).
struct normal_action {
    enum kind_t : std::uint8_t { op, keep, wrap, share } kind = op;
    void (*store)(typeflow::detail::node_state*, const void*) noexcept = nullptr;  // keep: copies the leaf
    expr_ref (*ref)(const void*) = nullptr;  // wrap: a new tf::expr hiding the leaf (owned); share: the tf::expr's own
    const void* (*identity)(const void*) = nullptr;  // wrap: what makes two leaves one (sink_key)
    void (*store_slot)(typeflow::detail::node_state*, const expr_ref&) = nullptr;  // wrap, share
};
template <class Slot>
void store_slot(typeflow::detail::node_state* s, const expr_ref& r) {
    const Slot x = expr_access::adopt<Slot>(r);
    typeflow::detail::leaf_child_ops<Slot>::store(s, &x);
}
template <class L>
expr_ref wrap_leaf(const void* p) {
    const expr<value_type_t<L>, shape_t<L>, device_t<L>> e = *static_cast<const L*>(p);
    const expr_ref r = expr_access::ref(e);
    r.state->refs.fetch_add(1, std::memory_order_relaxed);  // owned by the caller
    return r;
}
template <class L>
expr_ref share_expr(const void* p) {
    return expr_access::ref(*static_cast<const L*>(p));
}
template <class L>
constexpr expr_ref (*slot_ref())(const void*) {
    if constexpr (typeflow::detail::is_expr_v<L>) return &share_expr<L>;
    else return &wrap_leaf<L>;
}
template <class Slot, class L, bool IsSlot = slot_leaf_v<L>>
struct leaf_action {
    static constexpr normal_action value{normal_action::keep, &typeflow::detail::leaf_child_ops<L>::store};
};
template <class Slot, class L>
struct leaf_action<Slot, L, true> {
    static constexpr bool shares = typeflow::detail::is_expr_v<L>;
    static constexpr normal_action value{shares ? normal_action::share : normal_action::wrap, nullptr,
                                         slot_ref<L>(), &sink_key<L>,
                                         &store_slot<Slot>};
};
struct op_action {
    static constexpr normal_action value{};
};
template <class Nodes, class N, bool Leaf = N::is_leaf>
struct action_of {
    using type = op_action;
};
template <class Nodes, class N>
struct action_of<Nodes, N, true> {
    using type = leaf_action<typename normal_node<Nodes, N>::type, N>;
};

// Plain code of the rebuild: node i's new state from its old state `o`.
struct normal_rebuild {
    const graph::edge* edges;
    const std::size_t* first_edge;
    const graph::node_flags* flags;
    const normal_action* const* act;
    typeflow::detail::pod_vector<typeflow::detail::node_state*> by_node;  // pure nodes: the state made for node i
    typeflow::detail::key_map by_state;                                  // impure nodes: old state -> made[k]
    typeflow::detail::pod_vector<typeflow::detail::node_state*> made;
    typeflow::detail::key_map wrapper_of;  // a wrapped leaf's identity -> wrappers[k]
    typeflow::detail::pod_vector<expr_ref> wrappers;

    // the new root state (one reference, the caller's); the rest is held by it
    typeflow::detail::node_state* root(std::size_t n, const void* e);
    typeflow::detail::node_state* node(std::size_t i, typeflow::detail::node_state* o) {
        using typeflow::detail::node_state;
        const bool pure = flags[i].pure;
        if (pure && by_node[i]) return by_node[i];
        if (!pure) {
            const std::uint32_t k = by_state.find(o, 0);
            if (k != typeflow::detail::key_map::none) return made[k];
        }
        node_state* s = typeflow::detail::new_node_state(first_edge[i + 1] - first_edge[i]);
        s->origin = o->origin ? o->origin : o;  // the same node: fetched beside it, it runs once
        s->origin->refs.fetch_add(1, std::memory_order_relaxed);
        made.push_back(s);
        if (pure) by_node[i] = s;
        else by_state.insert(o, 0, static_cast<std::uint32_t>(made.size() - 1));
        for (std::size_t e = first_edge[i]; e < first_edge[i + 1]; ++e) {
            const std::size_t c = edges[e].child;
            const void* bytes = o->slots()[e - first_edge[i]].bytes;
            const normal_action& a = *act[c];
            switch (a.kind) {
            case normal_action::op: {
                node_state* cs = node(c, static_cast<const typeflow::detail::node_handle*>(bytes)->get());
                cs->refs.fetch_add(1, std::memory_order_relaxed);
                const typeflow::detail::node_handle h(cs);
                typeflow::detail::node_child_ops::store(s, &h);
                break;
            }
            case normal_action::keep: a.store(s, bytes); break;
            case normal_action::share: a.store_slot(s, a.ref(bytes)); break;
            case normal_action::wrap: {
                const void* id = a.identity(bytes);
                std::uint32_t k = wrapper_of.find(id, 0);
                if (k == typeflow::detail::key_map::none) {
                    k = static_cast<std::uint32_t>(wrappers.size());
                    wrappers.push_back(a.ref(bytes));
                    wrapper_of.insert(id, 0, k);
                }
                a.store_slot(s, wrappers[k]);
                break;
            }
            }
        }
        return s;
    }
};
// E's normal-form state from E's object e (one reference, the caller's).
TYPEFLOW_NOINLINE inline typeflow::detail::node_state* rebuild_normal(const graph::edge* edges, const std::size_t* first_edge,
                                                                   const graph::node_flags* flags,
                                                                   const normal_action* const* act, std::size_t n,
                                                                   const void* e) {
    normal_rebuild b{edges, first_edge, flags, act, {}, {}, {}, {}, {}};
    return b.root(n, e);
}
inline typeflow::detail::node_state* normal_rebuild::root(std::size_t n, const void* e) {
    by_node.resize(n);
    typeflow::detail::node_state* r = node(n - 1, static_cast<const typeflow::detail::node_handle*>(e)->get());
    for (typeflow::detail::node_state* s : made)
        if (s != r) typeflow::detail::node_handle release(s);
    for (const expr_ref& w : wrappers) typeflow::detail::node_handle release(w.state);
    return r;
}

template <class G, class L = typename G::nodes>
struct normal_tables;
template <class G, class... Ts>
struct normal_tables<G, meta::list<Ts...>> {
    static constexpr const normal_action* act[sizeof...(Ts)] = {&action_of<meta::list<Ts...>, Ts>::type::value...};
};
template <class L>
struct has_assign;
template <class... Ts>
struct has_assign<meta::list<Ts...>> : std::bool_constant<(graph::is_assign<Ts>::value || ...)> {};
template <class L>
struct has_slot_leaf;
template <class... Ts>
struct has_slot_leaf<meta::list<Ts...>> : std::bool_constant<(slot_leaf_v<Ts> || ...)> {};

template <class E>
struct normal_form {
    using G = graph::graph_of<E>;
    static constexpr bool applies = !has_assign<typename G::nodes>::value && has_slot_leaf<typename G::nodes>::value;
    using type = typename normal_node<typename G::nodes, E>::type;
    static type make(const E& e) {
        return type(typeflow::detail::adopt_state_tag{},
                    typeflow::detail::node_handle(rebuild_normal(G::edges.data(), G::first_edge.data(),
                                                                 G::flags.data(), normal_tables<G>::act, G::size, &e)));
    }
};
}  // namespace runtime::detail

namespace runtime::detail {
namespace adx = typeflow::detail::autodiff;
using typeflow::detail::expr_access;

// The adjoint tensors of the leaves of graph G that grad reports through a
// tf::expr: variables and placeholders of floating dtype, and tf::expr
// leaves (one entry per use, keyed by the object in that slot, so that two
// tf::expr objects of one type read by one node stay apart). `roots`
// collects the tf::expr objects (top-level call only).
template <class A>
void add_adjoint(grad_sink& out, const void* key, const A& a) {
    if constexpr (!typeflow::ad::is_zero_v<A>) {
        using EA = expr<value_type_t<A>, shape_t<A>, device_t<A>>;
        const EA e = expr_access::erase<EA>(a);
        out.add(key, expr_access::ref(e));
    }
}
template <class G, std::size_t P, std::size_t Slot, std::size_t I, class B>
void emit_use(B& b, grad_sink& out, typeflow::detail::pod_vector<expr_ref>* roots) {
    const auto& leaf = b.template object_at<P>().template child<Slot>();
    if (roots) roots->push_back(expr_access::ref(leaf));
    add_adjoint(out, leaf.identity(), b.template contribution_at<P, Slot, I>());
}
template <class G, class L, std::size_t I, class B>
void emit_node(B& b, grad_sink& out, typeflow::detail::pod_vector<expr_ref>* roots) {
    if constexpr (L::is_leaf && typeflow::ad::differentiable_v<L>) {
        if constexpr (typeflow::detail::is_expr_v<L>) {
            if (roots) roots->push_back(expr_access::ref(b.template object_at<I>()));
            if constexpr (I + 1 == G::size) {
                add_adjoint(out, b.template object_at<I>().identity(), b.template adjoint_at<I>());
            } else {
                constexpr const auto& t = adx::use_table<G>::value;
                [&]<std::size_t... K>(std::index_sequence<K...>) {
                    (emit_use<G, t.u[t.first[I] + K].parent, t.u[t.first[I] + K].slot, I>(b, out, roots), ...);
                }(std::make_index_sequence<t.first[I + 1] - t.first[I]>{});
            }
        } else if constexpr (slot_leaf_v<L>) {  // a variable or a placeholder
            add_adjoint(out, sink_key<L>(&b.template object_at<I>()), b.template adjoint_at<I>());
        }
    }
}
template <class Y, class B>
void emit_leaves(B& b, grad_sink& out, typeflow::detail::pod_vector<expr_ref>* roots) {
    using G = graph::graph_of<Y>;
    [&]<class... Ts, std::size_t... I>(meta::list<Ts...>, std::index_sequence<I...>) {
        (emit_node<G, Ts, I>(b, out, roots), ...);
    }(typename G::nodes{}, std::make_index_sequence<G::size>{});
}

template <class R>
void backward_of(const void* root, const expr_ref* seeds, std::size_t n, grad_sink& out) {
    using ES = expr<value_type_t<R>, shape_t<R>, device_t<R>>;  // the adjoint, at R's static shape
    ES acc = expr_access::adopt<ES>(seeds[0]);
    for (std::size_t k = 1; k < n; ++k) acc = expr_access::erase<ES>(acc + expr_access::adopt<ES>(seeds[k]));
    adx::builder<R, ES> b(*static_cast<const R*>(root), acc);
    emit_leaves<R>(b, out, nullptr);
}

// The tf::expr objects below `roots`, each after those it reads (depth-first
// with an explicit stack: a chain built in a loop may be deeper than the call
// stack); `ops` gets the operation nodes met, for the check that no gradient
// is asked of a node hidden in a tf::expr.
inline void order_erased(const expr_ref* roots, std::size_t n, typeflow::detail::pointer_set& ops,
                         typeflow::detail::pod_vector<expr_ref>& order) {
    struct task {
        const subgraph* g;
        const void* obj;
        std::size_t i;
        expr_ref done;  // when set: every task of this tf::expr is done
    };
    typeflow::detail::pod_vector<task> stack;
    typeflow::detail::pointer_set visited;
    typeflow::detail::pod_vector<const void*> kids;
    const auto enter = [&](const expr_ref& r) {
        if (!visited.insert(r.state)) return;
        stack.push_back({nullptr, nullptr, 0, r});
        stack.push_back({&r.g->g, r.state->slots()[0].bytes, r.g->g.n - 1, {}});
    };
    for (std::size_t k = 0; k < n; ++k) enter(roots[k]);
    while (!stack.empty()) {
        const task t = stack[stack.size() - 1];
        stack.pop_back();
        if (t.done.state) {
            order.push_back(t.done);
            continue;
        }
        const node_desc& d = *t.g->descs[t.i];
        if (d.kind == op_kind::leaf) {
            if (d.expand) {
                const void* root = nullptr;
                const auto* eg = reinterpret_cast<const erased_graph*>(d.expand(t.obj, &root));
                enter({static_cast<typeflow::detail::node_state*>(const_cast<void*>(d.identity(t.obj))), eg});
            }
            continue;
        }
        if (!ops.insert(d.identity(t.obj))) continue;
        kids.resize(d.children);
        if (d.children) d.children_of(t.obj, kids.data());
        for (std::size_t j = d.children; j-- > 0;)
            stack.push_back({t.g, kids[j], t.g->edges[t.g->first_edge[t.i] + j].child, {}});
    }
}
// Runs the vector-Jacobian products of the tf::expr objects below `roots`,
// each after every reader of it has added its adjoint to `sink`.
inline void propagate(grad_sink& sink, const expr_ref* roots, std::size_t n, typeflow::detail::pointer_set& ops) {
    typeflow::detail::pod_vector<expr_ref> order;
    order_erased(roots, n, ops, order);
    typeflow::detail::pod_vector<expr_ref> seeds;
    for (std::size_t k = order.size(); k-- > 0;) {
        const expr_ref r = order[k];
        seeds.clear();
        for (std::uint32_t e = sink.last(r.state); e != grad_sink::none; e = sink[e].prev) seeds.push_back(sink[e].value);
        if (seeds.empty()) continue;
        if (!r.g->backward)
            throw error("grad: the cost reaches a tf::expr that cannot be differentiated through (one made by "
                        "tf::grad, or hiding an op without a gradient rule)");
        r.g->backward(r.state->slots()[0].bytes, seeds.data(), seeds.size(), sink);
    }
}

template <class B, class X>
auto gradient_of(B& b, const grad_sink& sink, const typeflow::detail::pointer_set& ops, const X& x) {
    using RX = expr<value_type_t<X>, shape_t<X>, device_t<X>>;
    if constexpr (typeflow::detail::is_variable_v<X> || typeflow::detail::is_expr_v<X> ||
                  typeflow::detail::is_placeholder_v<X>) {
        std::uint32_t e = sink.last(sink_key<X>(&x));
        if (e == grad_sink::none)  // nothing reaches x
            return expr_access::erase<RX>(broadcast_like(literal<value_type_t<X>, 0, 1, device_t<X>>{}, x));
        RX acc = expr_access::adopt<RX>(sink[e].value);
        for (e = sink[e].prev; e != grad_sink::none; e = sink[e].prev)
            acc = expr_access::erase<RX>(acc + expr_access::adopt<RX>(sink[e].value));
        return acc;
    } else {
        if constexpr (!X::is_leaf) {
            if (ops.contains(x.identity()))
                throw error("grad: a gradient was asked of a node that a tf::expr hides; ask it of a variable, a "
                            "placeholder or the tf::expr");
        }
        return expr_access::erase<RX>(b.of(x));
    }
}
}  // namespace runtime::detail

/// The expression `step` applied n times to x, each result held in a
/// tf::expr of x's dtype, shape and device: the form for deep stacks of one
/// block (residual steps, an unrolled recurrence) that compiles the block
/// once, whatever n is (see tf::expr). `step` takes the running
/// tf::expr, or the tf::expr and the step's index (0 .. n - 1), and returns
/// an expression that fits x's shape. n = 0 gives x itself, in a tf::expr.
///
///     auto h = tf::repeat(100, h0, [&](const auto& h) { return tf::tanh(h * w + h); });
template <expression E, class F>
auto repeat(std::size_t n, const E& x, F&& step) {
    using H = expr<value_type_t<E>, shape_t<E>, device_t<E>>;
    H h = x;
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_invocable_v<F&, const H&, std::size_t>) h = step(std::as_const(h), i);
        else h = step(std::as_const(h));
    }
    return h;
}
/// repeat with the count fixed at compile time: tf::repeat<N>(x, step).
template <std::size_t N, expression E, class F>
auto repeat(const E& x, F&& step) {
    return repeat(N, x, static_cast<F&&>(step));
}

/// grad(y, xs...) for a cost that reaches a tf::expr (called by tf::grad):
/// the top graph's adjoints at compile time, then each tf::expr's
/// vector-Jacobian product, readers before what they read.
template <expression Y, expression... Xs>
auto erased_grad(const Y& y, const Xs&... xs) {
    detail::autodiff::builder<Y> b(y);
    runtime::grad_sink sink;
    detail::pod_vector<runtime::expr_ref> roots;
    runtime::detail::emit_leaves<Y>(b, sink, &roots);
    detail::pointer_set ops;
    runtime::detail::propagate(sink, roots.data(), roots.size(), ops);
    if constexpr (sizeof...(Xs) == 1) {
        return runtime::detail::gradient_of(b, sink, ops, xs...);
    } else {
        return gradients<expr<value_type_t<Xs>, shape_t<Xs>, device_t<Xs>>...>(
            runtime::detail::gradient_of(b, sink, ops, xs)...);
    }
}

}  // namespace typeflow
