// typeflow/graph/topo.hpp — the graph of a set of fetches, derived at compile
// time: distinct nodes in topological order, edges, use counts, and which
// nodes are materialised (the rest fuse into their consumer).
#pragma once
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include <typeflow/core/pod_vector.hpp>
#include <typeflow/core/type_list.hpp>
#include <typeflow/expr/node.hpp>

namespace typeflow::graph {

namespace detail {
// The graph walk: a depth-first visit from the fetches, children before
// parents, that expands each distinct node once. Its state is the set of
// nodes visited so far (visited<...>: one tag base per node, O(1)
// membership; visited_list gives the list at the end; a member naming it
// would make GCC's -g output write a meta::list of every prefix).
//
// Every class the walk instantiates is a type whose -g name and debug entry
// GCC builds, used or not, unless it is dynamic (meta::compile_time_only):
// the sets and the steps are, so none of them reaches the debug
// information. A step's class is nested in the set it starts from
// (visited<...>::visit<N>): its debug name spells N, not the set, which
// spells every node visited so far. As a namespace-scope visit<Acc, N>,
// one class per edge spelled its prefix of the graph's node list, and
// those names were most of the memory a -g build took (a scan's gradient:
// 2.1 GB of 2.4 GB of names); the sets were most of the rest.
template <class... Ts>
struct visited;
// The set with N added, by a declared function in decltype (a qualified call:
// no argument-dependent lookup through the nodes' types), given references
// from std::declval: a static_cast to a pointer type marks the type as used,
// and -g then writes every visited<...> out (990 MB of names for
// tests/test_loops_while_grad.cpp). A class per step, as an
// append<visited<...>, N> was, is a name that spells every node visited so
// far; a member alias of visited costs more memory still (tests/deep_chain,
// 160 tf::let steps, -O2: 758 MB with the alias, 697 MB with the class,
// 677 MB).
template <class... Ts, class N>
visited<Ts..., N> append_fn(visited<Ts...>&, N&);
template <class Acc, class N>
using append_t = decltype(detail::append_fn(std::declval<Acc&>(), std::declval<N&>()));
template <class Acc, class N>
using visit_t = typename Acc::template visit<N>::type;
// Acc::visit_all<Cs...> for the list of Cs (a declared function: no class
// per set).
template <class Acc, class... Cs>
typename Acc::template visit_all<Cs...> visit_all_fn(meta::list<Cs...>*);
template <class... Ts>
struct visited : meta::tag<Ts>..., meta::compile_time_only {
    // The set after visiting each of Cs in turn.
    template <class... Cs>
    struct visit_all : meta::compile_time_only {
        using type = visited;
    };
    template <class C0, class... Cs>
    struct visit_all<C0, Cs...> : meta::compile_time_only {
        using type = typename visit_t<visited, C0>::template visit_all<Cs...>::type;
    };
    // The set after visiting N (its children, then N): the set itself if N
    // is in it.
    template <class N, bool Seen = __is_base_of(meta::tag<N>, visited)>
    struct visit : meta::compile_time_only {
        using type = visited;
    };
    template <class N>
    struct visit<N, false> : meta::compile_time_only {
        using type = append_t<typename decltype(detail::visit_all_fn<visited>(
                                  static_cast<meta::children_t<N>*>(nullptr)))::type,
                              N>;
    };
    // Nodes of one to three children visit them in one expression: one
    // nested instantiation per node along a path, not two (visit, then
    // visit_all). GCC stops at 900 nested instantiations, and its error then
    // prints the whole chain of types and runs out of memory: with two per
    // node, a chain of 150 residual steps (450 nodes deep) crossed that limit.
    template <class Op, class C0>
    struct visit<node<Op, C0>, false> : meta::compile_time_only {
        using type = append_t<visit_t<visited, C0>, node<Op, C0>>;
    };
    template <class Op, class C0, class C1>
    struct visit<node<Op, C0, C1>, false> : meta::compile_time_only {
        using type = append_t<visit_t<visit_t<visited, C0>, C1>, node<Op, C0, C1>>;
    };
    template <class Op, class C0, class C1, class C2>
    struct visit<node<Op, C0, C1, C2>, false> : meta::compile_time_only {
        using type = append_t<visit_t<visit_t<visit_t<visited, C0>, C1>, C2>, node<Op, C0, C1, C2>>;
    };
    // A tf::let node: its one child is the expression its lambda returned.
    template <class F>
    struct visit<let_node<F>, false> : meta::compile_time_only {
        using type = append_t<visit_t<visited, typename let_node<F>::value_expression>, let_node<F>>;
    };
};
template <class V>
struct visited_list;
template <class... Ts>
struct visited_list<visited<Ts...>> : meta::compile_time_only {
    using type = meta::list<Ts...>;
};
}  // namespace detail

/// Distinct nodes reachable from Fetches..., children before parents.
template <class... Fetches>
using topo_t = typename detail::visited_list<typename detail::visited<>::template visit_all<Fetches...>::type>::type;

/// One edge parent -> child; control edges only order execution, and
/// extents-only edges read the child's extents, not its elements (the child
/// gets no buffer, no use and no lifetime for them).
struct edge {
    std::size_t parent = 0, child = 0;
    bool control = false;
    bool extents_only = false;
};

/// What the runtime needs to know of one node, fixed at compile time.
struct node_flags {
    op_kind kind = op_kind::leaf;
    bool leaf = false;
    bool pure = true;
    bool fetched = false;
    bool assign = false;
    bool materialized = false;  // has a value buffer (or aliases one, for views)
    bool immediate_write = false;  // an assign some with_dependencies waits for
    bool locked = false;           // a locked update: computed and written under the update lock, at the end
    std::size_t uses = 0;           // edges in, plus one per fetch
    // reads a loop's variable or counter (a node of a loop's body or condition,
    // or one of those two): no tf::grad adjoint reaches it, since a loop's
    // gradient recomputes its step (nested loops: the inner loop's own node
    // counts as outside when it reads the outer variable only through its body)
    bool in_loop = false;
};

/// True for assign, assign_add and assign_sub nodes (a class, not a variable
/// template: per-node variables are entities whose mangled names spell the
/// node's subgraph; nor a constexpr function, which -g writes out).
template <class N>
struct is_assign : std::false_type, meta::compile_time_only {};
template <class N>
    requires requires { typename N::op; }
struct is_assign<N> : is_assign_op<typename N::op>, meta::compile_time_only {};
template <class N>
inline constexpr bool is_assign_v = is_assign<N>::value;
/// True for locked updates (op::locked_update).
template <class N>
struct is_locked_update : std::false_type, meta::compile_time_only {};
template <class N>
    requires requires { typename N::op; }
struct is_locked_update<N> : is_locked_update_op<typename N::op>, meta::compile_time_only {};

/// The positions in Nodes of a node's children, as an index_sequence (a type:
/// no entity with a mangled name is made per node). An alias through a class
/// per children list: a class per (Nodes, node) would spell the whole node
/// list in the debug information once per node.
template <class L>
struct children_positions;
template <class... C>
struct children_positions<meta::list<C...>> : meta::compile_time_only {
    template <class Nodes>
    using in = std::index_sequence<meta::index_of<Nodes, C>::value...>;
};
template <class Nodes, class N>
using child_indices_t = typename children_positions<meta::children_t<N>>::template in<Nodes>;
// Appends the edges of parent p (children at positions I...), keyed on the positions alone.
template <std::size_t... I>
constexpr void put_edges(edge* e, std::size_t& k, std::size_t p, std::size_t control, unsigned extents_only,
                         std::index_sequence<I...>) {
    if constexpr (sizeof...(I) > 0) {
        std::size_t j = 0;
        ((e[k++] = edge{p, I, j < control, j < 32 && ((extents_only >> j) & 1u) != 0}, ++j), ...);
    } else {
        (void)e, (void)k, (void)p, (void)control, (void)extents_only;
    }
}

template <class Nodes, class Fetches>
struct info;

template <class... Ts, class... Fs>
struct info<meta::list<Ts...>, meta::list<Fs...>> {
    using nodes = meta::list<Ts...>;
    static constexpr std::size_t size = sizeof...(Ts);
    /// index<T>::value: the position of node T (size when T is not a node of the graph).
    template <class T>
    using index = meta::index_of<nodes, T>;

    static constexpr std::size_t edge_count = (std::size_t{0} + ... + meta::children_t<Ts>::size);

    // Edges: the children's positions, found by index_of.
    static constexpr std::array<edge, edge_count> edges = [] {
        std::array<edge, edge_count> e{};
        std::size_t k = 0, p = 0;
        (put_edges(e.data(), k, p++, Ts::control_inputs, Ts::extents_only_inputs,
                   child_indices_t<nodes, Ts>{}),
         ...);
        return e;
    }();

    /// Node p's edges are edges[first_edge[p]] .. edges[first_edge[p + 1] - 1], in child order.
    static constexpr std::array<std::size_t, size + 1> first_edge = [] {
        std::array<std::size_t, size + 1> f{};
        for (const edge& e : edges) ++f[e.parent + 1];
        for (std::size_t i = 0; i < size; ++i) f[i + 1] += f[i];
        return f;
    }();

    static constexpr std::array<node_flags, size> flags = [] {
        std::array<node_flags, size> f{};
        std::size_t i = 0;
        ((f[i].kind = Ts::kind, f[i].leaf = Ts::is_leaf, f[i].pure = typeflow::detail::is_pure<Ts>::value,
          f[i].assign = is_assign<Ts>::value, f[i].locked = is_locked_update<Ts>::value, ++i),
         ...);
        ((f[index<Fs>::value].fetched = true, ++f[index<Fs>::value].uses), ...);
        {
            const bool state[] = {requires { Ts::op::loop_state; }...};
            const bool loop[] = {requires { Ts::op::loop_kind; }...};
            for (std::size_t p = 0; p < size; ++p) {  // children before parents
                std::size_t from = first_edge[p];
                if (loop[p]) {  // its variable's initial value, and its children after the condition
                    f[p].in_loop = f[edges[first_edge[edges[from].child]].child].in_loop;
                    from += 4;
                }
                f[p].in_loop = f[p].in_loop || state[p];
                for (std::size_t e = from; e < first_edge[p + 1]; ++e) f[p].in_loop = f[p].in_loop || f[edges[e].child].in_loop;
            }
        }
        for (const edge& e : edges) {
            if (e.extents_only) continue;  // reads no elements
            ++f[e.child].uses;
            // a child of anything but an element-wise op needs a buffer of its own
            if (f[e.parent].kind != op_kind::elementwise || e.control) f[e.child].materialized = true;
            if (e.control && f[e.child].assign) f[e.child].immediate_write = true;
        }
        for (auto& n : f) {
            if (n.leaf) n.materialized = false;
            else if (n.kind != op_kind::elementwise || n.fetched || n.uses > 1 || n.assign) n.materialized = true;
        }
        return f;
    }();

    /// materialized<T>::value: true when node T has a value of its own at run time.
    template <class T>
    using materialized = std::bool_constant<flags[index<T>::value].materialized>;
};

/// Finds the object of every node below object `o` of node i: obj[j] is the
/// first object found for node j. An operation node's children are its
/// state's slots in order, and the edges say which node each is, so this is
/// one plain function, not one per node type. Returns the first impure node
/// reached through two distinct objects, or `none` (grad refuses those).
inline constexpr std::size_t no_node = ~std::size_t{0};
inline std::size_t collect_objects(const edge* edges, const std::size_t* first_edge, const node_flags* flags,
                                   std::size_t i, const void* o, const void** obj,
                                   typeflow::detail::pointer_set& seen) {
    if (flags[i].leaf) {
        if (!obj[i]) obj[i] = o;
        return no_node;
    }
    const typeflow::detail::node_state* s = static_cast<const typeflow::detail::node_handle*>(o)->get();
    if (!seen.insert(s)) return no_node;
    std::size_t clash = no_node;
    if (!obj[i]) obj[i] = o;
    else if (!flags[i].pure && !flags[i].in_loop) clash = i;  // loops' insides get no adjoints
    for (std::size_t k = first_edge[i]; k < first_edge[i + 1]; ++k) {
        const std::size_t c = collect_objects(edges, first_edge, flags, edges[k].child, s->slots()[k - first_edge[i]].bytes, obj, seen);
        if (clash == no_node) clash = c;
    }
    return clash;
}
/// The objects of every node of graph G, from the object of its last node (the
/// only fetch): see collect_objects.
template <class G>
std::size_t find_objects(const void* root, const void** obj) {
    typeflow::detail::pointer_set seen;
    return collect_objects(G::edges.data(), G::first_edge.data(), G::flags.data(), G::size - 1, root, obj, seen);
}

/// The compile-time graph of the fetches Fs...: info of its nodes, as a class
/// whose name spells the fetches alone. Templates keyed on a graph and one of
/// its nodes or regions (kernel/region.hpp, runtime/plan.hpp) are
/// instantiated once per node, and with -g GCC writes out each one's name:
/// with info<all nodes...> as the argument, that is quadratic in the graph's
/// size (1.7 GB of compiler memory for 160 tf::let steps, against 0.6 GB
/// without -g).
template <class... Fs>
struct graph : info<topo_t<Fs...>, meta::list<Fs...>> {};
template <class... Fs>
using graph_of = graph<Fs...>;

}  // namespace typeflow::graph
