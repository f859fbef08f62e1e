// typeflow/graph/topo.hpp — the graph of a set of fetches, derived at compile
// time: distinct nodes in topological order, edges, use counts, and which
// nodes are materialised (the rest fuse into their consumer).
#pragma once
#include <array>
#include <cstddef>
#include <type_traits>

#include <typeflow/core/type_list.hpp>
#include <typeflow/expr/node.hpp>

namespace typeflow::graph {

namespace detail {
// The nodes visited so far: a list, and a set (one tag base per node) for O(1)
// membership. A node already in the set returns at once, so each distinct node
// is expanded once, never once per path.
template <class... Ts>
struct visited : meta::tag<Ts>... {
    using list = meta::list<Ts...>;
};

template <class Acc, class N, bool Seen = __is_base_of(meta::tag<N>, Acc)>
struct visit {
    using type = Acc;
};
template <class Acc, class Children>
struct visit_children;
template <class Acc>
struct visit_children<Acc, meta::list<>> {
    using type = Acc;
};
template <class Acc, class C0, class... Cs>
struct visit_children<Acc, meta::list<C0, Cs...>> {
    using type = typename visit_children<typename visit<Acc, C0>::type, meta::list<Cs...>>::type;
};
template <class Acc, class N>
struct append;
template <class... Ts, class N>
struct append<visited<Ts...>, N> {
    using type = visited<Ts..., N>;
};
template <class Acc, class N>
struct visit<Acc, N, false> {
    using type = typename append<typename visit_children<Acc, typename N::children_list>::type, N>::type;
};
}  // namespace detail

/// Distinct nodes reachable from Fetches..., children before parents.
template <class... Fetches>
using topo_t = typename detail::visit_children<detail::visited<>, meta::list<Fetches...>>::type::list;

/// One edge parent -> child; control edges only order execution.
struct edge {
    std::size_t parent = 0, child = 0;
    bool control = false;
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
    std::size_t uses = 0;           // edges in, plus one per fetch
};

/// True for assign, assign_add and assign_sub nodes (a class, not a variable
/// template: per-node variables are entities whose mangled names spell the
/// node's subgraph).
template <class N>
struct is_assign : std::false_type {};
template <class N>
    requires requires { N::op::is_assign; }
struct is_assign<N> : std::bool_constant<N::op::is_assign> {};
template <class N>
inline constexpr bool is_assign_v = is_assign<N>::value;

/// The keys of a node's children (see meta::type_key), in order.
template <class N, class L = typename N::children_list>
struct child_keys;
template <class N, class... C>
struct child_keys<N, meta::list<C...>> {
    static constexpr const void* keys[sizeof...(C) + 1] = {&meta::type_key<C>..., nullptr};
};

template <class Nodes, class Fetches>
struct info;

template <class... Ts, class... Fs>
struct info<meta::list<Ts...>, meta::list<Fs...>> {
    using nodes = meta::list<Ts...>;
    static constexpr std::size_t size = sizeof...(Ts);
    /// index<T>::value: the position of node T (size when T is not a node of the graph).
    template <class T>
    using index = meta::index_of<nodes, T>;

    static constexpr std::size_t edge_count = (std::size_t{0} + ... + Ts::children_list::size);

    // Edges: each node type lists its children by address of a per-type key
    // (child_keys, keyed on the node alone), and one constexpr loop finds their
    // positions. No template is instantiated per node and graph to list edges.
    static constexpr std::array<edge, edge_count> edges = [] {
        std::array<edge, edge_count> e{};
        const void* const key[] = {&meta::type_key<Ts>..., nullptr};
        const void* const* const kids[] = {child_keys<Ts>::keys..., nullptr};
        const std::size_t arity[] = {Ts::children_list::size..., 0};
        const std::size_t control[] = {Ts::control_inputs..., 0};
        std::size_t k = 0;
        for (std::size_t p = 0; p < size; ++p)
            for (std::size_t j = 0; j < arity[p]; ++j) {
                std::size_t c = p;  // children come before their parent, usually just before
                while (c > 0 && key[c - 1] != kids[p][j]) --c;
                e[k++] = edge{p, c - 1, j < control[p]};
            }
        return e;
    }();

    static constexpr std::array<node_flags, size> flags = [] {
        std::array<node_flags, size> f{};
        std::size_t i = 0;
        ((f[i].kind = Ts::kind, f[i].leaf = Ts::is_leaf, f[i].pure = typeflow::detail::is_pure<Ts>::value,
          f[i].assign = is_assign<Ts>::value, ++i),
         ...);
        ((f[index<Fs>::value].fetched = true, ++f[index<Fs>::value].uses), ...);
        for (const edge& e : edges) {
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

/// The compile-time graph of the fetches Fs...
template <class... Fs>
using graph_of = info<topo_t<Fs...>, meta::list<Fs...>>;

}  // namespace typeflow::graph
