// typeflow/backend/eigen/fused.hpp — the CPU evaluator of fused element-wise
// regions (a materialised element-wise node and the non-materialised
// element-wise nodes beneath it): one pass over memory, as Eigen array
// expressions over the contiguous blocks of the region's layout
// (kernel/region.hpp). Each op's array form comes from
// backend/eigen/elementwise.hpp.
#pragma once
#include <algorithm>
#include <array>

#include <Eigen/Core>

#include <typeflow/backend/eigen/elementwise.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/device.hpp>
#include <typeflow/core/index.hpp>
#include <typeflow/kernel/kernel.hpp>
#include <typeflow/kernel/region.hpp>

namespace typeflow::backend::eigen {
namespace detail {
template <class T>
using array_map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <std::size_t Off, class T, bool Scalar>
auto build_canonical(region::operand_slot<Off, T, Scalar>, const void* const* ptr, index_t len) {
    if constexpr (Scalar) return Eigen::Array<T, Eigen::Dynamic, 1>::Constant(len, *static_cast<const T*>(ptr[Off]));
    else return array_map<T>(static_cast<const T*>(ptr[Off]), len);
}
template <class Op, class... C>
auto build_canonical(region::canonical_node<Op, C...>, const void* const* ptr, index_t len) {
    return array_form<Op>::eval(build_canonical(C{}, ptr, len)...);
}

// The block loop of a region of canonical form Canon writing T, over the
// outer index range [o0, o1) (or, with one outer index, the inner range
// [c_begin, c_end)); `ptr` and `scratch` are this thread's.
template <class Canon, class T>
void run_blocks(const region::layout& lay, const void* const* base, T* out, index_t o0, index_t o1,
                index_t c_begin, index_t c_end, const void** ptr, double* scratch) {
    const std::size_t K = lay.operands.size();
    const std::size_t last = lay.rank - 1;
    const index_t inner = lay.extent[last];
    multi_index idx;  // over the outer axes, from o0
    idx.seek(o0, lay.extent.data(), last);
    index_t out_off = o0 * inner;
    for (index_t o = o0; o < o1; ++o) {
        for (index_t c0 = c_begin; c0 < c_end; c0 += lay.block) {
            const index_t len = std::min(lay.block, c_end - c0);
            for (std::size_t k = 0; k < K; ++k) {
                const region::operand_layout& ol = lay.operands[k];
                if (ol.scalar) {
                    ptr[k] = base[k];
                    continue;
                }
                const index_t e = c0 * ol.stride[last] + idx.offset(ol.stride.data(), last);
                const auto* b = static_cast<const unsigned char*>(base[k]) + static_cast<std::size_t>(e) * ol.elem_size;
                if (!ol.gather) {
                    ptr[k] = b;
                } else {
                    double* s = scratch + k * static_cast<std::size_t>(lay.block);
                    region::gather(s, b, len, ol.stride[last], ol.elem_size);
                    ptr[k] = s;
                }
            }
            Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(out + out_off + c0, len) =
                build_canonical(Canon{}, ptr, len);
        }
        out_off += inner;
        idx.next(lay.extent.data(), last);
    }
}
}  // namespace detail

/// Elements below which a fused region runs on one thread.
inline constexpr index_t parallel_region_grain = 32768;

namespace detail {
/// The block loop of one region form: run_blocks<Canon, T> behind a plain
/// function pointer, so the threading code below is compiled once, not once
/// per region form.
using block_fn = void (*)(const region::layout&, const void* const*, void*, index_t, index_t, index_t, index_t,
                          const void**, double*);
template <class Canon, class T>
void blocks_of(const region::layout& lay, const void* const* base, void* out, index_t o0, index_t o1, index_t c0,
               index_t c1, const void** ptr, double* scratch) {
    run_blocks<Canon>(lay, base, static_cast<T*>(out), o0, o1, c0, c1, ptr, scratch);
}
/// Runs a region's block loop, split over par's threads when it is large:
/// over its outer index, or over whole vector packets of a single row. Each
/// output element is computed by one thread.
inline TYPEFLOW_COLD_OPTIMIZE void run_region(block_fn f, const region::layout& lay, const void* const* base, void* out,
                                  const parallel_ctx& par) {
    if (lay.numel == 0) return;
    const std::size_t last = lay.rank - 1;
    const index_t inner = lay.extent[last];
    const index_t outer = lay.numel / inner;
    if (par.threads <= 1 || lay.threads <= 1 || lay.numel < 2 * parallel_region_grain) {
        f(lay, base, out, 0, outer, 0, inner, lay.ptr.data(), lay.scratch.data());
        return;
    }
    const std::size_t K = lay.operands.size();
    parallel_ctx p = par;
    p.threads = std::min<int>(p.threads, static_cast<int>(lay.threads));
    p.for_range(outer > 1 ? outer : inner, outer > 1 ? 1 : parallel_region_grain, [&](std::size_t t, index_t b, index_t e) {
        // this thread's operand pointers and gather buffers (planned per thread)
        const void** ptr = lay.ptr.data() + t * K;
        double* scratch = lay.scratch.empty() ? nullptr : lay.scratch.data() + t * K * static_cast<std::size_t>(lay.block);
        if (outer > 1) {
            f(lay, base, out, b, e, 0, inner, ptr, scratch);
        } else {
            const index_t b16 = (b + 15) / 16 * 16, e16 = e == inner ? e : (e + 15) / 16 * 16;
            if (b16 < e16) f(lay, base, out, 0, 1, b16, e16, ptr, scratch);
        }
    });
}
}  // namespace detail

}  // namespace typeflow::backend::eigen

namespace typeflow {

/// The CPU evaluator of fused regions.
template <>
struct fused<cpu> {
    /// Evaluates a region of canonical form Canon, writing T, into `out`;
    /// `base` holds each operand's elements for this run, in region order.
    /// Large regions are split over the session's threads (each output
    /// element is computed by one thread, so results do not depend on the
    /// thread count).
    template <class Canon, class T>
    static void eval(const region::layout& lay, const void* const* base, void* out, const parallel_ctx& par) {
        backend::eigen::detail::run_region(&backend::eigen::detail::blocks_of<Canon, T>, lay, base, out, par);
    }
};

}  // namespace typeflow
