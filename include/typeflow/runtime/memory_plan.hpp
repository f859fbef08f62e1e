// typeflow/runtime/memory_plan.hpp — offsets of buffers in one arena, reusing
// memory between buffers whose lifetimes do not overlap.
#pragma once
#include <typeflow/core/config.hpp>
#include <cstddef>

namespace typeflow::runtime {

/// A buffer live from step `first` to step `last` (inclusive).
struct buffer_request {
    std::size_t bytes = 0;
    std::size_t first = 0, last = 0;
    std::size_t offset = 0;  // filled by plan_memory
};

inline constexpr std::size_t arena_alignment = 64;

/// Places n buffers in one arena (sets each offset) so that buffers live at
/// the same time never overlap (largest first, at the lowest offset that fits
/// among the buffers live at the same time); returns the arena's size in
/// bytes. A tf::error when the buffers, padded and side by side, would take
/// more than max_tensor_bytes (no offset or size can wrap).
TYPEFLOW_DECL_HOT std::size_t plan_memory(buffer_request* reqs, std::size_t n);

}  // namespace typeflow::runtime

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/runtime/impl/memory_plan.ipp>
#endif
