// typeflow/runtime/impl/memory_plan.ipp — the arena planner (see runtime/memory_plan.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/runtime/memory_plan.hpp>

namespace typeflow::runtime {

TYPEFLOW_DECL std::size_t plan_memory(std::vector<buffer_request>& reqs) {
    std::vector<std::size_t> order(reqs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return reqs[a].bytes > reqs[b].bytes; });
    std::vector<std::size_t> placed;
    std::size_t total = 0;
    for (std::size_t i : order) {
        buffer_request& r = reqs[i];
        const std::size_t size = (r.bytes + arena_alignment - 1) / arena_alignment * arena_alignment;
        // blocks already placed that are live at the same time, by offset
        std::vector<std::size_t> live;
        for (std::size_t j : placed)
            if (!(reqs[j].last < r.first || r.last < reqs[j].first)) live.push_back(j);
        std::sort(live.begin(), live.end(), [&](std::size_t a, std::size_t b) { return reqs[a].offset < reqs[b].offset; });
        std::size_t off = 0;
        for (std::size_t j : live) {
            if (reqs[j].offset >= off + size) break;
            const std::size_t end = reqs[j].offset + (reqs[j].bytes + arena_alignment - 1) / arena_alignment * arena_alignment;
            off = std::max(off, end);
        }
        r.offset = off;
        total = std::max(total, off + size);
        placed.push_back(i);
    }
    return total;
}

}  // namespace typeflow::runtime
