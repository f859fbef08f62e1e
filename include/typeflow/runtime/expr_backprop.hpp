// typeflow/runtime/expr_backprop.hpp — run-time backpropagation through
// tf::expr objects: each hidden expression's vector-Jacobian product runs
// after every reader of it has added its adjoint (see runtime/expr_type.hpp).
#pragma once
#include <typeflow/runtime/expr_type.hpp>
#include <typeflow/runtime/expr_normal_form.hpp>

namespace typeflow {

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
