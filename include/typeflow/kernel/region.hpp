// typeflow/kernel/region.hpp — fused element-wise regions as every backend
// sees them: the canonical form that selects a region's loop (its op
// structure over operand positions), and the loop structure (layout) that the
// runtime plans once per dyn binding.
//
// Layout: the output extents are collapsed (adjacent axes merge when every
// operand is contiguous across them); the last collapsed axis is the block.
// An operand that is contiguous along the block is read in place; one that is
// broadcast or strided along it is gathered into a small scratch buffer; a
// one-element operand is read as a constant. With no broadcasting the whole
// region is one block over all elements.
#pragma once
#include <array>
#include <cstring>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/pod_vector.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/graph/topo.hpp>

namespace typeflow::region {

/// Element count of a gathered block.
inline constexpr index_t gather_block = 2048;

/// Strides of one region operand over the collapsed output axes.
struct operand_layout {
    std::array<index_t, max_rank> stride{};
    bool gather = false;
    bool scalar = false;        // one element, read as a constant
    std::size_t elem_size = 0;  // bytes per element
};

/// The loop structure of one fused region, fixed per graph and dyn binding.
struct layout {
    std::size_t rank = 0;                   // collapsed axes
    std::array<index_t, max_rank> extent{};  // collapsed output extents
    index_t block = 0;                       // elements per inner block
    index_t numel = 0;
    typeflow::detail::pod_vector<operand_layout> operands;
    std::size_t threads = 1;                 // threads the buffers below are planned for
    mutable typeflow::detail::pod_vector<double> scratch;  // gather buffers: per thread, block doubles per operand (8-byte aligned for every dtype)
    mutable typeflow::detail::pod_vector<const void*> ptr;  // per thread, this block's pointer per operand
};

namespace detail {
// Compile-time facts about a region are class templates and plain constexpr
// functions, not variable templates, static members or function templates
// keyed on the graph: those are entities with mangled names that spell the
// graph type G, and GCC mangles every instantiated entity in time quadratic in
// the name's length. The one exception is tables_of<G>, one entity per graph
// (like G's own tables).

// An operand of the region rooted at a materialised node is a leaf or a
// materialised node; everything else is fused. These facts are read by
// position from G's constexpr tables (edges, flags), not looked up by node
// type: a class keyed on a node type costs a lookup of that type in the graph
// and an instantiation whose arguments spell the node's subgraph.
struct graph_tables {
    const graph::edge* edges;
    const std::size_t* first_edge;
    const graph::node_flags* flags;
};
template <class G>
inline constexpr graph_tables tables_of{G::edges.data(), G::first_edge.data(), G::flags.data()};
constexpr bool is_operand_at(const graph_tables& g, std::size_t i) {
    return g.flags[i].leaf || g.flags[i].materialized;
}
// Operands below fused node i, in region order (its data children: edges not
// marked control); with `upto`, only those of its first `upto` data children.
constexpr std::size_t operands_below(const graph_tables& g, std::size_t i, std::size_t upto = ~std::size_t{0}) {
    std::size_t n = 0, seen = 0;
    for (std::size_t k = g.first_edge[i]; k < g.first_edge[i + 1] && seen < upto; ++k) {
        if (g.edges[k].control) continue;
        ++seen;
        const std::size_t c = g.edges[k].child;
        n += is_operand_at(g, c) ? 1 : operands_below(g, c);
    }
    return n;
}

// The canonical form of a region: its op structure with each operand replaced
// by its position, dtype and scalar-ness. Regions of one structure (the steps
// of a deep chain, the layers of an MLP) share one canonical type, so a
// backend's loop is compiled once for all of them.
template <std::size_t Off, class T, bool Scalar>
struct operand_slot {};
template <class Op, class... C>
struct canonical_node {};

// Node I of G has type N: N is passed along (its children's types come from
// N::children_list, a short list) so that no type is looked up in the graph's
// node list, whose indexing costs time linear in the graph's size.
template <class G, std::size_t Off, std::size_t I, class N, bool Operand = is_operand_at(tables_of<G>, I)>
struct canonical_at : meta::compile_time_only {  // an operand: its slot
    using type = operand_slot<Off, value_type_t<N>, shape_t<N>::numel == 1>;
};
// the fused part below node I (I itself is not an operand here). No static
// data members: GCC writes the debug information of a class with one, and
// this class's name spells the whole graph (G), once per region.
template <class G, std::size_t Off, std::size_t I, class N>
struct canonical_region : meta::compile_time_only {
    template <std::size_t... J>
    static auto make(std::index_sequence<J...>)
        -> canonical_node<typename N::op,
                          typename canonical_at<G, Off + operands_below(tables_of<G>, I, J),
                                                G::edges[G::first_edge[I] + N::control_inputs + J].child,
                                                meta::list_at_t<N::control_inputs + J, meta::children_t<N>>>::type...>;
    using type = decltype(make(std::make_index_sequence<meta::children_t<N>::size - N::control_inputs>{}));
};
template <class G, std::size_t Off, std::size_t I, class N>
struct canonical_at<G, Off, I, N, false> : canonical_region<G, Off, I, N> {};

// Copies `len` elements `step` elements apart (0: one element repeated).
inline void gather(void* dst, const void* src, index_t len, index_t step, std::size_t size) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (index_t t = 0; t < len; ++t)
        std::memcpy(d + static_cast<std::size_t>(t) * size, s + static_cast<std::size_t>(t * step) * size, size);
}
}  // namespace detail

using detail::canonical_node;
using detail::gather;
using detail::operand_slot;

/// The canonical form of the region rooted at node I (of type R) of graph G
/// (its op structure over operand positions): the type that selects the
/// region's loop in every backend.
template <class G, std::size_t I, class R>
using canonical_t = typename detail::canonical_region<G, 0, I, R>::type;

/// One operand of a fused region, as the layout planner sees it.
struct operand_info {
    const dims* extents = nullptr;  // run-time extents
    std::size_t elem_size = 0;      // bytes per element
    bool scalar = false;            // one element by its static shape: read as a constant
};

/// Fixes the loop structure of a region with output extents `out` and the
/// K operands `ops` (in region order), with buffers for `threads` threads.
TYPEFLOW_DECL layout plan(const dims& out, const operand_info* ops, std::size_t K, std::size_t threads = 1);

}  // namespace typeflow::region

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/kernel/impl/region.ipp>
#endif
