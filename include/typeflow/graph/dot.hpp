// typeflow/graph/dot.hpp — the graph of some nodes as Graphviz DOT.
#pragma once
#include <string>

#include <typeflow/expr/leaves.hpp>
#include <typeflow/graph/topo.hpp>

namespace typeflow {

namespace detail {
template <class T>
std::string dot_label() {
    std::string what;
    if constexpr (is_placeholder_v<T>) what = "placeholder \\\"" + std::string(T::name()) + "\\\"";
    else if constexpr (is_variable_v<T>) what = "variable \\\"" + std::string(T::name()) + "\\\"";
    else if constexpr (requires { T::expand_graph; }) what = "expr";  // a tf::expr: its graph is not in its type
    else if constexpr (T::is_leaf) what = "constant";
    else what = std::string(T::op::name);
    return what + "\\n" + std::string(dtype_name(dtype_of<value_type_t<T>>)) + " " + to_string(shape_t<T>::value) +
           " @" + device_t<T>::name();
}
}  // namespace detail

/// Graphviz DOT of the distinct nodes the given expressions reach: one node
/// per op or leaf with its dtype, static shape ("?" for dyn) and device;
/// edges from inputs to consumers (dashed: control dependencies).
template <expression... Es>
std::string to_dot(const Es&...) {
    using G = graph::graph_of<meta::remove_cvref_t<Es>...>;
    std::string s = "digraph typeflow {\n  rankdir=BT;\n  node [shape=box, fontname=\"monospace\"];\n";
    std::size_t i = 0;
    [&]<class... Ts>(meta::list<Ts...>) {
        ((s += "  n" + std::to_string(i) + " [label=\"" + detail::dot_label<Ts>() + "\"" +
               (Ts::is_leaf ? ", shape=ellipse" : "") + (G::flags[i].fetched ? ", style=bold" : "") + "];\n",
          ++i),
         ...);
    }(typename G::nodes{});
    for (const graph::edge& e : G::edges)
        s += "  n" + std::to_string(e.child) + " -> n" + std::to_string(e.parent) + (e.control ? " [style=dashed]" : "") +
             ";\n";
    return s + "}\n";
}

}  // namespace typeflow
