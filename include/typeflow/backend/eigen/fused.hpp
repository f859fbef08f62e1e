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
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include <Eigen/Core>

#include <typeflow/core/shape.hpp>
#include <typeflow/expr/node.hpp>

namespace typeflow::backend::eigen {

/// Element count of a gathered block.
inline constexpr index_t gather_block = 2048;

/// Strides of one region operand over the collapsed output axes.
struct operand_layout {
    std::array<index_t, max_rank> stride{};
    bool gather = false;
};

/// The loop structure of one fused region, fixed per graph and dyn binding.
struct region_layout {
    std::size_t rank = 0;                   // collapsed axes
    std::array<index_t, max_rank> extent{};  // collapsed output extents
    index_t block = 0;                       // elements per inner block
    index_t numel = 0;
    std::vector<operand_layout> operands;
    mutable std::vector<double> scratch;  // gather buffers: block doubles per operand (8-byte aligned for every dtype)
};

namespace detail {
// An operand of the region rooted at a materialised node: a leaf or a
// materialised node; everything else is fused.
template <class G, class N>
inline constexpr bool is_operand = N::is_leaf || G::template materialized<N>;

template <class G, class N>
struct operand_count;
template <class G, class C>
constexpr std::size_t operands_of() {
    if constexpr (is_operand<G, C>) return 1;
    else return operand_count<G, C>::value;
}
template <class G, class Op, class... C>
constexpr std::size_t data_operand_sum(meta::list<C...>) {
    constexpr std::size_t skip = node<Op, C...>::control_inputs;
    std::size_t j = 0, s = 0;
    ((s += (j++ >= skip ? operands_of<G, C>() : 0)), ...);
    return s;
}
template <class G, class N>
struct operand_count {
    static constexpr std::size_t value = data_operand_sum<G, typename N::op>(typename N::children_list{});
};

// Offset of child J's first operand among the operands of N.
template <class G, class N, std::size_t J>
constexpr std::size_t child_offset() {
    return []<class... C>(meta::list<C...>) {
        std::size_t j = 0, s = 0;
        ((s += (j >= N::control_inputs && j < J ? operands_of<G, C>() : 0), ++j), ...);
        return s;
    }(typename N::children_list{});
}

// Calls f(operand, integral_constant<Off>) for each operand of the region
// below node n, in order.
template <class G, std::size_t Off, class N, class F>
void for_each_operand(const N& n, F&& f) {
    [&]<std::size_t... J>(std::index_sequence<J...>) {
        (([&] {
             if constexpr (J >= N::control_inputs) {
                 using C = std::remove_cvref_t<decltype(n.template child<J>())>;
                 constexpr std::size_t off = Off + child_offset<G, N, J>();
                 if constexpr (is_operand<G, C>) f(n.template child<J>(), std::integral_constant<std::size_t, off>{});
                 else for_each_operand<G, off>(n.template child<J>(), f);
             }
         }()),
         ...);
    }(std::make_index_sequence<N::children_list::size>{});
}

template <class T>
using array_map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// The Eigen expression of node n over one block; ptr[k] is operand k's block.
template <class G, std::size_t Off, class N>
auto build(const N& n, const void* const* ptr, index_t len);

template <class G, std::size_t Off, class C>
auto operand_expr(const void* const* ptr, index_t len) {
    using T = value_type_t<C>;
    if constexpr (shape_t<C>::numel == 1)
        return Eigen::Array<T, Eigen::Dynamic, 1>::Constant(len, *static_cast<const T*>(ptr[Off]));
    else
        return array_map<T>(static_cast<const T*>(ptr[Off]), len);
}

template <class G, std::size_t Off, class N>
auto build(const N& n, const void* const* ptr, index_t len) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
        return N::op::array([&] {
            constexpr std::size_t j = J + N::control_inputs;
            using C = std::remove_cvref_t<decltype(n.template child<j>())>;
            constexpr std::size_t off = Off + child_offset<G, N, j>();
            if constexpr (is_operand<G, C>) return operand_expr<G, off, C>(ptr, len);
            else return build<G, off>(n.template child<j>(), ptr, len);
        }()...);
    }(std::make_index_sequence<N::children_list::size - N::control_inputs>{});
}
}  // namespace detail

/// Number of operands (leaves and materialised inputs) of the region rooted at R.
template <class G, class R>
inline constexpr std::size_t region_operands = detail::operand_count<G, R>::value;

/// Fixes the loop structure of the region rooted at R for output extents
/// `out`; `dims_of(operand)` gives each operand's run-time extents.
template <class G, class R, class DimsOf>
region_layout plan_region(const R& root, const dims& out, DimsOf&& dims_of) {
    constexpr std::size_t K = region_operands<G, R>;
    region_layout lay;
    lay.numel = out.numel();
    lay.operands.resize(K);
    std::array<bool, K + 1> scalar{};
    // broadcast strides over the full output axes
    std::vector<std::array<index_t, max_rank>> full(K);
    detail::for_each_operand<G, 0>(root, [&](const auto& c, auto off) {
        using C = std::remove_cvref_t<decltype(c)>;
        scalar[off] = shape_t<C>::numel == 1;
        const dims d = dims_of(c);
        index_t s = 1;
        for (std::size_t i = 0; i < out.rank; ++i) {
            const std::size_t ax = out.rank - 1 - i;
            if (i < d.rank) {
                const index_t e = d.d[d.rank - 1 - i];
                full[off][ax] = (e == 1 && out.d[ax] != 1) ? 0 : s;
                s *= e;
            } else {
                full[off][ax] = 0;
            }
        }
    });
    // drop extents of 1, merge axes contiguous for every operand
    std::array<index_t, max_rank> ext{};
    std::vector<std::array<index_t, max_rank>> st(K);
    std::size_t r = 0;
    for (std::size_t ax = 0; ax < out.rank; ++ax) {
        if (out.d[ax] == 1) continue;
        bool merge = r > 0;
        for (std::size_t k = 0; k < K && merge; ++k)
            if (!scalar[k] && st[k][r - 1] != full[k][ax] * out.d[ax]) merge = false;
        if (merge) {
            ext[r - 1] *= out.d[ax];
            for (std::size_t k = 0; k < K; ++k) st[k][r - 1] = full[k][ax];
        } else {
            ext[r] = out.d[ax];
            for (std::size_t k = 0; k < K; ++k) st[k][r] = full[k][ax];
            ++r;
        }
    }
    if (r == 0) {  // a single element
        ext[0] = 1;
        for (std::size_t k = 0; k < K; ++k) st[k][0] = 0;
        r = 1;
    }
    lay.rank = r;
    lay.extent = ext;
    bool any_gather = false;
    for (std::size_t k = 0; k < K; ++k) {
        lay.operands[k].stride = st[k];
        lay.operands[k].gather = !scalar[k] && st[k][r - 1] != 1;
        any_gather |= lay.operands[k].gather;
    }
    lay.block = any_gather ? std::min<index_t>(ext[r - 1], gather_block) : ext[r - 1];
    if (any_gather) lay.scratch.assign(static_cast<std::size_t>(lay.block) * K, 0.0);
    return lay;
}

/// Evaluates the region rooted at R into `out`; `input(operand)` gives each
/// operand's elements for this run.
template <class G, class R, class Input>
void eval_region(const R& root, const region_layout& lay, Input&& input, value_type_t<R>* out) {
    using T = value_type_t<R>;
    constexpr std::size_t K = region_operands<G, R>;
    if (lay.numel == 0) return;
    std::array<const void*, K + 1> base{};
    detail::for_each_operand<G, 0>(root, [&](const auto& c, auto off) { base[off] = input(c); });

    const std::size_t last = lay.rank - 1;
    const index_t inner = lay.extent[last];
    index_t outer = 1;
    for (std::size_t i = 0; i < last; ++i) outer *= lay.extent[i];

    std::array<index_t, max_rank> idx{};
    std::array<const void*, K + 1> ptr{};
    index_t out_off = 0;
    for (index_t o = 0; o < outer; ++o) {
        for (index_t c0 = 0; c0 < inner; c0 += lay.block) {
            const index_t len = std::min(lay.block, inner - c0);
            detail::for_each_operand<G, 0>(root, [&](const auto& c, auto off) {
                using C = std::remove_cvref_t<decltype(c)>;
                using V = value_type_t<C>;
                const auto& ol = lay.operands[off];
                const V* b = static_cast<const V*>(base[off]);
                if constexpr (shape_t<C>::numel == 1) {
                    ptr[off] = b;
                } else {
                    index_t e = c0 * ol.stride[last];
                    for (std::size_t i = 0; i < last; ++i) e += idx[i] * ol.stride[i];
                    if (!ol.gather) {
                        ptr[off] = b + e;
                    } else {
                        V* s = reinterpret_cast<V*>(lay.scratch.data() +
                                                    static_cast<std::size_t>(off) * static_cast<std::size_t>(lay.block));
                        const index_t step = ol.stride[last];
                        if (step == 0) std::fill(s, s + len, b[e]);
                        else
                            for (index_t t = 0; t < len; ++t) s[t] = b[e + t * step];
                        ptr[off] = s;
                    }
                }
            });
            Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(out + out_off + c0, len) =
                detail::build<G, 0>(root, ptr.data(), len);
        }
        out_off += inner;
        for (std::size_t i = last; i-- > 0;) {  // odometer over the outer axes
            if (++idx[i] < lay.extent[i]) break;
            idx[i] = 0;
        }
    }
}

}  // namespace typeflow::backend::eigen
