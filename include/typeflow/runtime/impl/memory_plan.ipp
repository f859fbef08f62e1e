// typeflow/runtime/impl/memory_plan.ipp — the arena planner (see runtime/memory_plan.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <cstring>

#include <typeflow/core/message.hpp>
#include <typeflow/core/pod_vector.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/runtime/memory_plan.hpp>

namespace typeflow::runtime {

namespace detail {
// Sorts idx[0..n) stably by reqs[idx].*key (ascending, or descending), with a
// bottom-up merge sort: plain code, no std::stable_sort instantiation.
TYPEFLOW_DECL_HOT void stable_order(std::size_t* idx, std::size_t n, const buffer_request* reqs,
                                std::size_t buffer_request::*key, bool descending) {
    typeflow::detail::pod_vector<std::size_t> tmp(n);
    std::size_t* a = idx;
    std::size_t* b = tmp.data();
    for (std::size_t w = 1; w < n; w *= 2) {
        for (std::size_t lo = 0; lo < n; lo += 2 * w) {
            const std::size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            std::size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                const std::size_t ki = reqs[a[i]].*key, kj = reqs[a[j]].*key;
                b[o++] = (descending ? kj > ki : kj < ki) ? a[j++] : a[i++];
            }
            while (i < mid) b[o++] = a[i++];
            while (j < hi) b[o++] = a[j++];
        }
        std::size_t* t = a;
        a = b;
        b = t;
    }
    if (a != idx) std::memcpy(idx, a, n * sizeof(std::size_t));
}
}  // namespace detail

TYPEFLOW_DECL_HOT std::size_t plan_memory(buffer_request* reqs, std::size_t n) {
    // sizes, offsets and the total stay below max_tensor_bytes: their sums cannot wrap
    std::size_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t b = reqs[i].bytes;
        if (b > max_tensor_bytes - arena_alignment || b + arena_alignment > max_tensor_bytes - sum)
            typeflow::detail::raise(typeflow::detail::message()
                                    << "memory plan: buffers of more than " << max_tensor_bytes
                                    << " bytes together do not fit one arena (buffer " << i << " has " << b
                                    << " bytes)");
        sum += b + arena_alignment;
    }
    const auto padded = [](std::size_t bytes) { return (bytes + arena_alignment - 1) / arena_alignment * arena_alignment; };
    typeflow::detail::pod_vector<std::size_t> order(n), placed, live;
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    detail::stable_order(order.data(), n, reqs, &buffer_request::bytes, true);  // largest first
    std::size_t total = 0;
    for (std::size_t i : order) {
        buffer_request& r = reqs[i];
        const std::size_t size = padded(r.bytes);
        // blocks already placed that are live at the same time, by offset
        live.clear();
        for (std::size_t j : placed)
            if (!(reqs[j].last < r.first || r.last < reqs[j].first)) live.push_back(j);
        detail::stable_order(live.data(), live.size(), reqs, &buffer_request::offset, false);
        std::size_t off = 0;
        for (std::size_t j : live) {
            if (reqs[j].offset >= off + size) break;
            const std::size_t end = reqs[j].offset + padded(reqs[j].bytes);
            if (end > off) off = end;
        }
        r.offset = off;
        if (off + size > total) total = off + size;
        placed.push_back(i);
    }
    return total;
}

}  // namespace typeflow::runtime
