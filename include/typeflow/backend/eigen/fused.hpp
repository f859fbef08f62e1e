// typeflow/backend/eigen/fused.hpp — evaluates a fused element-wise region
// (a materialised element-wise node and the non-materialised element-wise
// nodes beneath it) in one pass, as Eigen array expressions over contiguous
// blocks.
//
// Layout: the output extents are collapsed (adjacent axes merge when every
// operand is contiguous across them); the last collapsed axis is the block.
// An operand that is contiguous along the block is read in place; one that is
// broadcast or strided along it is gathered into a small scratch buffer; a
// one-element operand becomes an Eigen constant. With no broadcasting the
// whole region is a single Eigen expression over all elements.
#pragma once
#include <typeflow/core/config.hpp>
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <typeflow/core/pod_vector.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/graph/topo.hpp>

namespace typeflow::backend::eigen {

/// Element count of a gathered block.
inline constexpr index_t gather_block = 2048;

/// Strides of one region operand over the collapsed output axes.
struct operand_layout {
    std::array<index_t, max_rank> stride{};
    bool gather = false;
    bool scalar = false;        // one element, read as an Eigen constant
    std::size_t elem_size = 0;  // bytes per element
};

/// The loop structure of one fused region, fixed per graph and dyn binding.
struct region_layout {
    std::size_t rank = 0;                   // collapsed axes
    std::array<index_t, max_rank> extent{};  // collapsed output extents
    index_t block = 0;                       // elements per inner block
    index_t numel = 0;
    typeflow::detail::pod_vector<operand_layout> operands;
    mutable typeflow::detail::pod_vector<double> scratch;  // gather buffers: block doubles per operand (8-byte aligned for every dtype)
    mutable typeflow::detail::pod_vector<const void*> ptr;  // this block's pointer per operand
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

template <class T>
using array_map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

}  // namespace detail

namespace detail {
// The canonical form of a region: its op structure with each operand replaced
// by its position, dtype and scalar-ness. Regions of one structure (the steps
// of a deep chain, the layers of an MLP) share one canonical type, so the
// Eigen loop below is compiled once for all of them.
template <std::size_t Off, class T, bool Scalar>
struct operand_slot {};
template <class Op, class... C>
struct canonical_node {};

// Node I of G has type N: N is passed along (its children's types come from
// N::children_list, a short list) so that no type is looked up in the graph's
// node list, whose indexing costs time linear in the graph's size.
template <class G, std::size_t Off, std::size_t I, class N, bool Operand = is_operand_at(tables_of<G>, I)>
struct canonical_at {  // an operand: its slot
    using type = operand_slot<Off, value_type_t<N>, shape_t<N>::numel == 1>;
};
// the fused part below node I (I itself is not an operand here)
template <class G, std::size_t Off, std::size_t I, class N>
struct canonical_region {
    static constexpr std::size_t control = N::control_inputs;
    static constexpr std::size_t first = G::first_edge[I] + control;
    template <std::size_t... J>
    static auto make(std::index_sequence<J...>)
        -> canonical_node<typename N::op,
                          typename canonical_at<G, Off + operands_below(tables_of<G>, I, J), G::edges[first + J].child,
                                                meta::list_at_t<control + J, typename N::children_list>>::type...>;
    using type = decltype(make(std::make_index_sequence<N::children_list::size - control>{}));
};
template <class G, std::size_t Off, std::size_t I, class N>
struct canonical_at<G, Off, I, N, false> : canonical_region<G, Off, I, N> {};

template <std::size_t Off, class T, bool Scalar>
auto build_canonical(operand_slot<Off, T, Scalar>, const void* const* ptr, index_t len) {
    if constexpr (Scalar) return Eigen::Array<T, Eigen::Dynamic, 1>::Constant(len, *static_cast<const T*>(ptr[Off]));
    else return array_map<T>(static_cast<const T*>(ptr[Off]), len);
}
template <class Op, class... C>
auto build_canonical(canonical_node<Op, C...>, const void* const* ptr, index_t len) {
    return Op::array(build_canonical(C{}, ptr, len)...);
}

// Copies `len` elements `step` elements apart (0: one element repeated).
inline void gather(void* dst, const void* src, index_t len, index_t step, std::size_t size) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (index_t t = 0; t < len; ++t)
        std::memcpy(d + static_cast<std::size_t>(t) * size, s + static_cast<std::size_t>(t * step) * size, size);
}

// The block loop of a region of canonical form Canon writing T.
template <class Canon, class T>
void run_blocks(const region_layout& lay, const void* const* base, T* out) {
    const std::size_t K = lay.operands.size();
    const std::size_t last = lay.rank - 1;
    const index_t inner = lay.extent[last];
    index_t outer = 1;
    for (std::size_t i = 0; i < last; ++i) outer *= lay.extent[i];
    std::array<index_t, max_rank> idx{};
    const void** ptr = lay.ptr.data();
    index_t out_off = 0;
    for (index_t o = 0; o < outer; ++o) {
        for (index_t c0 = 0; c0 < inner; c0 += lay.block) {
            const index_t len = std::min(lay.block, inner - c0);
            for (std::size_t k = 0; k < K; ++k) {
                const operand_layout& ol = lay.operands[k];
                if (ol.scalar) {
                    ptr[k] = base[k];
                    continue;
                }
                index_t e = c0 * ol.stride[last];
                for (std::size_t i = 0; i < last; ++i) e += idx[i] * ol.stride[i];
                const auto* b = static_cast<const unsigned char*>(base[k]) + static_cast<std::size_t>(e) * ol.elem_size;
                if (!ol.gather) {
                    ptr[k] = b;
                } else {
                    double* s = lay.scratch.data() + k * static_cast<std::size_t>(lay.block);
                    gather(s, b, len, ol.stride[last], ol.elem_size);
                    ptr[k] = s;
                }
            }
            Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(out + out_off + c0, len) =
                build_canonical(Canon{}, ptr, len);
        }
        out_off += inner;
        for (std::size_t i = last; i-- > 0;) {  // odometer over the outer axes
            if (++idx[i] < lay.extent[i]) break;
            idx[i] = 0;
        }
    }
}
}  // namespace detail

/// The canonical form of the region rooted at node I (of type R) of graph G (its op
/// structure over operand positions): the type that selects the region's Eigen loop.
template <class G, std::size_t I, class R>
using canonical_region_t = typename detail::canonical_region<G, 0, I, R>::type;

/// One operand of a fused region, as the layout planner sees it.
struct operand_info {
    const dims* extents = nullptr;  // run-time extents
    std::size_t elem_size = 0;      // bytes per element
    bool scalar = false;            // one element by its static shape: read as an Eigen constant
};

/// Fixes the loop structure of a region with output extents `out` and the
/// K operands `ops` (in region order).
TYPEFLOW_DECL region_layout plan_region(const dims& out, const operand_info* ops, std::size_t K);

/// Evaluates a region of canonical form Canon, writing T, into `out`; `base`
/// holds each operand's elements for this run, in region order.
template <class Canon, class T>
void eval_region(const region_layout& lay, const void* const* base, void* out) {
    if (lay.numel == 0) return;
    detail::run_blocks<Canon>(lay, base, static_cast<T*>(out));
}

}  // namespace typeflow::backend::eigen

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/backend/eigen/impl/fused.ipp>
#endif
