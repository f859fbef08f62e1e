// typeflow/backend/reference/fused.hpp — the reference evaluator of fused
// element-wise regions: each output element computed on its own from the
// ops' scalar functors (Op::apply).
#pragma once
#include <array>
#include <cstddef>

#include <typeflow/core/config.hpp>
#include <typeflow/core/device.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/kernel/kernel.hpp>
#include <typeflow/kernel/region.hpp>

namespace typeflow::backend::reference {
namespace detail {
template <std::size_t Off, class T, bool Scalar>
T element(region::operand_slot<Off, T, Scalar>, const void* const* ptr) {
    return *static_cast<const T*>(ptr[Off]);
}
template <class Op, class... C>
auto element(region::canonical_node<Op, C...>, const void* const* ptr) {
    return Op::apply(element(C{}, ptr)...);
}
}  // namespace detail
}  // namespace typeflow::backend::reference

namespace typeflow {

/// The reference evaluator of fused regions (one thread).
template <>
struct fused<reference> {
    /// Evaluates a region of canonical form Canon, writing T, into `out`;
    /// `base` holds each operand's elements for this run, in region order.
    template <class Canon, class T>
    static void eval(const region::layout& lay, const void* const* base, void* out, const parallel_ctx&) {
        if (lay.numel == 0) return;
        const std::size_t K = lay.operands.size();
        const void** ptr = lay.ptr.data();
        T* o = static_cast<T*>(out);
        multi_index idx;  // over the output axes
        for (index_t e = 0; e < lay.numel; ++e) {
            for (std::size_t k = 0; k < K; ++k) {
                const region::operand_layout& ol = lay.operands[k];
                const index_t off = ol.scalar ? 0 : idx.offset(ol.stride.data(), lay.rank);
                ptr[k] = static_cast<const unsigned char*>(base[k]) + static_cast<std::size_t>(off) * ol.elem_size;
            }
            o[e] = static_cast<T>(backend::reference::detail::element(Canon{}, ptr));
            idx.next(lay.extent.data(), lay.rank);
        }
    }
};

}  // namespace typeflow
