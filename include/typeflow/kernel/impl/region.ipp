// typeflow/kernel/impl/region.ipp — the fused-region layout planner (see kernel/region.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/kernel/region.hpp>

namespace typeflow::region {

TYPEFLOW_DECL layout plan(const dims& out, const operand_info* ops, std::size_t K, std::size_t threads) {
    layout lay;
    lay.numel = out.numel();
    lay.operands.resize(K);
    // broadcast strides over the full output axes
    typeflow::detail::pod_vector<std::array<index_t, max_rank>> full(K);
    for (std::size_t k = 0; k < K; ++k) {
        lay.operands[k].scalar = ops[k].scalar;
        lay.operands[k].elem_size = ops[k].elem_size;
        const dims& d = *ops[k].extents;
        index_t s = 1;
        for (std::size_t i = 0; i < out.rank; ++i) {
            const std::size_t ax = out.rank - 1 - i;
            if (i < d.rank) {
                const index_t e = d.d[d.rank - 1 - i];
                full[k][ax] = (e == 1 && out.d[ax] != 1) ? 0 : s;
                s *= e;
            } else {
                full[k][ax] = 0;
            }
        }
    }
    // drop extents of 1, merge axes contiguous for every operand
    std::array<index_t, max_rank> ext{};
    typeflow::detail::pod_vector<std::array<index_t, max_rank>> st(K);
    std::size_t r = 0;
    for (std::size_t ax = 0; ax < out.rank; ++ax) {
        if (out.d[ax] == 1) continue;
        bool merge = r > 0;
        for (std::size_t k = 0; k < K && merge; ++k)
            if (!ops[k].scalar && st[k][r - 1] != full[k][ax] * out.d[ax]) merge = false;
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
        lay.operands[k].gather = !ops[k].scalar && st[k][r - 1] != 1;
        any_gather |= lay.operands[k].gather;
    }
    lay.block = any_gather ? std::min<index_t>(ext[r - 1], gather_block) : ext[r - 1];
    lay.threads = threads < 1 ? 1 : threads;
    if (any_gather) lay.scratch.assign(static_cast<std::size_t>(lay.block) * K * lay.threads, 0.0);
    lay.ptr.assign(K * lay.threads, nullptr);
    return lay;
}

}  // namespace typeflow::region
