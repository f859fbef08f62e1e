// typeflow/core/index.hpp — the index arithmetic that kernels share: axis
// normalisation, row-major strides, and a multi-index (odometer) over extents.
#pragma once
#include <array>
#include <cstddef>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow {

/// An axis counted from the end when negative (-1 is the last) as a position
/// in a rank-`rank` shape; range checks are the caller's (the ops' rules).
constexpr index_t normalize_axis(index_t axis, std::size_t rank) noexcept {
    return axis < 0 ? axis + static_cast<index_t>(rank) : axis;
}

/// Row-major strides of extents d (the last axis has stride 1).
constexpr std::array<index_t, max_rank> strides_of(dims d) noexcept {
    std::array<index_t, max_rank> s{};
    index_t step = 1;
    for (std::size_t i = d.rank; i-- > 0;) {
        s[i] = step;
        step *= d.d[i];
    }
    return s;
}

/// Extents d seen as [outer, len, inner] around axis `ax`: the element at
/// (o, l, i) is at (o * len + l) * inner + i.
struct axis_split {
    index_t outer = 1, len = 1, inner = 1;
};
constexpr axis_split split_at(dims d, std::size_t ax) noexcept {
    axis_split s;
    for (std::size_t i = 0; i < ax; ++i) s.outer *= d.d[i];
    for (std::size_t i = ax + 1; i < d.rank; ++i) s.inner *= d.d[i];
    s.len = d.d[ax];
    return s;
}

/// A row-major multi-index over the first n axes of some extents (an
/// odometer: the last axis moves fastest).
struct multi_index {
    std::array<index_t, max_rank> at{};

    /// Moves to the next position; false when it wraps around to the start.
    TYPEFLOW_HOST_DEVICE bool next(const index_t* ext, std::size_t n) noexcept {
        for (std::size_t a = n; a-- > 0;) {
            if (++at[a] < ext[a]) return true;
            at[a] = 0;
        }
        return false;
    }
    /// Moves to the position of flat (row-major) index f.
    TYPEFLOW_HOST_DEVICE void seek(index_t f, const index_t* ext, std::size_t n) noexcept {
        for (std::size_t a = n; a-- > 0;) {
            at[a] = f % ext[a];
            f /= ext[a];
        }
    }
    /// The offset of this position under strides st (first n axes).
    TYPEFLOW_HOST_DEVICE index_t offset(const index_t* st, std::size_t n) const noexcept {
        index_t o = 0;
        for (std::size_t a = 0; a < n; ++a) o += at[a] * st[a];
        return o;
    }
};

}  // namespace typeflow
