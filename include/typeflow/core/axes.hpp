// typeflow/core/axes.hpp — axis lists of reductions and squeezes.
#pragma once
#include <array>
#include <cstddef>

#include <typeflow/core/index.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow {
namespace detail {
// Normalised axis mask of a reduction over Axes (none = all) of a rank-R shape;
// ok is false for an axis out of range or given twice.
struct axis_mask {
    std::array<bool, max_rank> reduced{};
    bool ok = true;
};
template <index_t... Axes>
constexpr axis_mask make_axis_mask(std::size_t rank) {
    axis_mask m;
    if constexpr (sizeof...(Axes) == 0) {
        for (std::size_t i = 0; i < rank; ++i) m.reduced[i] = true;
    } else {
        for (index_t a : {Axes...}) {
            const index_t n = normalize_axis(a, rank);
            if (n < 0 || n >= static_cast<index_t>(rank) || m.reduced[static_cast<std::size_t>(n)]) {
                m.ok = false;
                continue;
            }
            m.reduced[static_cast<std::size_t>(n)] = true;
        }
    }
    return m;
}
constexpr dims reduced_dims(dims in, axis_mask m, bool keep) {
    dims out;
    for (std::size_t i = 0; i < in.rank; ++i) {
        if (!m.reduced[i]) out.d[out.rank++] = in.d[i];
        else if (keep) out.d[out.rank++] = 1;
    }
    return out;
}
}  // namespace detail
}  // namespace typeflow
