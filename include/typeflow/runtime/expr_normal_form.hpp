// typeflow/runtime/expr_normal_form.hpp — the normal form of the expression a
// tf::expr hides (see runtime/expr_type.hpp): its variables, placeholders and
// tf::expr leaves replaced by positional slots, so that expressions of one
// structure share one graph table and one vector-Jacobian product.
#pragma once
#include <typeflow/runtime/expr_type.hpp>

namespace typeflow {

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
    bool loop = false;  // op: a while_loop or scan (children: variable, counter, ...)
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
struct loop_action {
    static constexpr normal_action value{normal_action::op, nullptr, nullptr, nullptr, nullptr, true};
};
template <class Nodes, class N, bool Leaf = N::is_leaf>
struct action_of {
    using type = meta::if_t<requires { N::op::loop_kind; }, loop_action, op_action>;
};
template <class Nodes, class N>
struct action_of<Nodes, N, true> {
    using type = leaf_action<typename normal_node<Nodes, N>::type, N>;
};

// Plain code of the rebuild: node i's new state from its old state `o`.
// Pure nodes stay merged as in E: one state per node type, except that what
// reads a pure loop's variable or counter is keyed on that loop as well
// (the plan does the same: two loops may share those types; see
// plan_core::walk).
struct normal_rebuild {
    static constexpr std::uint32_t none = typeflow::detail::key_map::none;
    struct scoped {
        std::size_t node;
        std::uint32_t scope, made;
    };
    struct loop_scope {
        std::size_t loop, var, counter;
    };
    const graph::edge* edges;
    const std::size_t* first_edge;
    const graph::node_flags* flags;
    const normal_action* const* act;
    typeflow::detail::pod_vector<std::uint32_t> by_node;  // pure nodes outside loops: made[k] for node i, or none
    typeflow::detail::pod_vector<scoped> by_scope;        // pure nodes that read a loop's variable or counter
    typeflow::detail::key_map by_state;                   // old state -> made[k]
    typeflow::detail::pod_vector<typeflow::detail::node_state*> made;
    typeflow::detail::pod_vector<std::uint32_t> made_scope;  // per made state: the innermost loop it reads (loop_scope::loop), or none
    typeflow::detail::pod_vector<loop_scope> scopes;         // the loops being rebuilt, outermost first
    std::size_t n_nodes = 0, loops = 0;                      // numbers for the loops that are not pure: n_nodes + k
    typeflow::detail::key_map wrapper_of;  // a wrapped leaf's identity -> wrappers[k]
    typeflow::detail::pod_vector<expr_ref> wrappers;

    // the new root state (one reference, the caller's); the rest is held by it
    typeflow::detail::node_state* root(std::size_t n, const void* e);
    typeflow::detail::node_state* node(std::size_t i, typeflow::detail::node_state* o) { return made[build(i, o)]; }
    std::uint32_t build(std::size_t i, typeflow::detail::node_state* o) {
        using typeflow::detail::node_state;
        const std::uint32_t seen = by_state.find(o, 0);
        if (seen != none) return seen;
        const bool pure = flags[i].pure;
        const std::size_t n_children = first_edge[i + 1] - first_edge[i];
        // the operation children first (their scopes decide which state a pure node merges with)
        typeflow::detail::pod_vector<std::uint32_t> kids(n_children);
        const bool loop = act[i]->loop;  // keyed as in plan_core::walk
        if (loop) scopes.push_back({pure ? i : n_nodes + loops++, edges[first_edge[i]].child, edges[first_edge[i] + 1].child});
        for (std::size_t e = first_edge[i]; e < first_edge[i + 1]; ++e)
            if (act[edges[e].child]->kind == normal_action::op)
                kids[e - first_edge[i]] =
                    build(edges[e].child, static_cast<const typeflow::detail::node_handle*>(
                                              static_cast<const void*>(o->slots()[e - first_edge[i]].bytes))->get());
        const std::size_t own = loop ? scopes[scopes.size() - 1].loop : none;
        if (loop) scopes.pop_back();
        std::uint32_t scope = none;
        if (pure) {
            for (std::size_t q = scopes.size(); q-- > 0 && scope == none;)
                if (scopes[q].var == i || scopes[q].counter == i) scope = static_cast<std::uint32_t>(scopes[q].loop);
            std::size_t depth = 0;  // the innermost: the latest on the stack
            for (std::size_t e = first_edge[i]; e < first_edge[i + 1] && scope == none; ++e) {
                if (act[edges[e].child]->kind != normal_action::op) continue;
                const std::uint32_t c = made_scope[kids[e - first_edge[i]]];
                if (c == none || c == own) continue;
                for (std::size_t q = scopes.size(); q-- > depth;)
                    if (scopes[q].loop == c) {
                        depth = q + 1;
                        break;
                    }
            }
            if (scope == none && depth > 0) scope = static_cast<std::uint32_t>(scopes[depth - 1].loop);
            std::uint32_t k = none;
            if (scope == none) k = by_node[i];
            else
                for (const scoped& x : by_scope)
                    if (x.node == i && x.scope == scope) k = x.made;
            if (k != none) {
                by_state.insert(o, 0, k);
                return k;
            }
        }
        node_state* s = typeflow::detail::new_node_state(n_children);
        s->origin = o->origin ? o->origin : o;  // the same node: fetched beside it, it runs once
        s->origin->refs.fetch_add(1, std::memory_order_relaxed);
        const auto k = static_cast<std::uint32_t>(made.size());
        made.push_back(s);
        made_scope.push_back(scope);
        by_state.insert(o, 0, k);
        if (pure && scope == none) by_node[i] = k;
        else if (pure) by_scope.push_back({i, scope, k});
        for (std::size_t e = first_edge[i]; e < first_edge[i + 1]; ++e) {
            const std::size_t c = edges[e].child;
            const void* bytes = o->slots()[e - first_edge[i]].bytes;
            const normal_action& a = *act[c];
            switch (a.kind) {
            case normal_action::op: {
                node_state* cs = made[kids[e - first_edge[i]]];
                cs->refs.fetch_add(1, std::memory_order_relaxed);
                const typeflow::detail::node_handle h(cs);
                typeflow::detail::node_child_ops::store(s, &h);
                break;
            }
            case normal_action::keep: a.store(s, bytes); break;
            case normal_action::share: a.store_slot(s, a.ref(bytes)); break;
            case normal_action::wrap: {
                const void* id = a.identity(bytes);
                std::uint32_t w = wrapper_of.find(id, 0);
                if (w == none) {
                    w = static_cast<std::uint32_t>(wrappers.size());
                    wrappers.push_back(a.ref(bytes));
                    wrapper_of.insert(id, 0, w);
                }
                a.store_slot(s, wrappers[w]);
                break;
            }
            }
        }
        return k;
    }
};
// E's normal-form state from E's object e (one reference, the caller's).
TYPEFLOW_NOINLINE inline typeflow::detail::node_state* rebuild_normal(const graph::edge* edges, const std::size_t* first_edge,
                                                                   const graph::node_flags* flags,
                                                                   const normal_action* const* act, std::size_t n,
                                                                   const void* e) {
    normal_rebuild b{edges, first_edge, flags, act, {}, {}, {}, {}, {}, {}, 0, 0, {}, {}};
    return b.root(n, e);
}
inline typeflow::detail::node_state* normal_rebuild::root(std::size_t n, const void* e) {
    by_node.assign(n, none);
    n_nodes = n;
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
// tf::let nodes keep their short names only as they are: an expression with
// one is hidden as it is, not as a normal form spelling each step's graph.
template <class L>
struct has_let;
template <class... Ts>
struct has_let<meta::list<Ts...>> : std::bool_constant<(typeflow::detail::is_let_v<Ts> || ...)> {};

template <class E>
struct normal_form {
    using G = graph::graph_of<E>;
    static constexpr bool applies = !has_assign<typename G::nodes>::value &&
                                    !has_let<typename G::nodes>::value && has_slot_leaf<typename G::nodes>::value;
    using type = typename normal_node<typename G::nodes, E>::type;
    static type make(const E& e) {
        return type(typeflow::detail::adopt_state_tag{},
                    typeflow::detail::node_handle(rebuild_normal(G::edges.data(), G::first_edge.data(),
                                                                 G::flags.data(), normal_tables<G>::act, G::size, &e)));
    }
};
}  // namespace runtime::detail

}  // namespace typeflow
