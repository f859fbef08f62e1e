// typeflow/core/shape.hpp — static shapes (`shape<dyn, 64>`) and run-time dims.
#pragma once
#include <typeflow/core/config.hpp>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace typeflow {

using index_t = std::int64_t;

/// A dimension whose extent is known only at run time (bound by the feeds).
inline constexpr index_t dyn = -1;

/// The largest rank a tensor may have.
inline constexpr std::size_t max_rank = 8;

/// Run-time extents of a tensor, rank <= max_rank, row-major.
struct dims {
    std::array<index_t, max_rank> d{};
    std::size_t rank = 0;

    constexpr dims() = default;
    constexpr dims(std::initializer_list<index_t> l) : rank(l.size()) {
        std::size_t i = 0;
        for (index_t v : l) d[i++] = v;
    }
    constexpr index_t operator[](std::size_t i) const { return d[i]; }
    constexpr index_t& operator[](std::size_t i) { return d[i]; }
    /// Number of elements (1 for rank 0). Unchecked: extents that came from
    /// outside (a feed, a tensor's constructor, a run's extent rules) are
    /// checked with count_elements before anything is allocated for them, so
    /// this product of known-good extents cannot overflow.
    constexpr index_t numel() const {
        index_t n = 1;
        for (std::size_t i = 0; i < rank; ++i) n *= d[i];
        return n;
    }
    constexpr bool operator==(dims o) const {
        if (rank != o.rank) return false;
        for (std::size_t i = 0; i < rank; ++i)
            if (d[i] != o.d[i]) return false;
        return true;
    }
};

/// The most bytes one tensor or buffer may take (the largest object size).
inline constexpr std::size_t max_tensor_bytes = static_cast<std::size_t>(PTRDIFF_MAX);

/// What count_elements finds: the element count and the bytes of a tensor of
/// some extents, and whether they are valid.
struct element_count {
    index_t numel = 0;
    std::size_t bytes = 0;
    bool ok = false;  // every extent >= 0, and numel * elem_size <= max_tensor_bytes (no overflow)
};
/// The element count of extents d and its size in bytes for elements of
/// elem_size bytes; ok is false when an extent is negative (or dyn) or when
/// the count or the byte count overflows. Every prefix of the extents is
/// checked (a later zero extent does not excuse an overflow before it), so
/// d.numel() of accepted extents cannot overflow either.
constexpr element_count count_elements(dims d, std::size_t elem_size) noexcept {
    element_count c;
    for (std::size_t i = 0; i < d.rank; ++i)
        if (d.d[i] < 0) return c;
    const std::size_t limit = elem_size ? max_tensor_bytes / elem_size : max_tensor_bytes;
    std::size_t n = 1;
    for (std::size_t i = 0; i < d.rank; ++i) {
        const std::size_t e = static_cast<std::size_t>(d.d[i]);
        if (e != 0 && n > limit / e) return c;
        n *= e;
    }
    c.ok = true;
    c.numel = static_cast<index_t>(n);
    c.bytes = n * elem_size;
    return c;
}

/// "[2,3]"; a dyn extent prints as "?".
TYPEFLOW_DECL std::string to_string(const dims& s);
/// Characters enough for any dims printed by print_dims.
inline constexpr std::size_t dims_chars = 2 + max_rank * 21;
/// Writes d as to_string prints it into buf (dims_chars long); returns its length.
TYPEFLOW_DECL std::size_t print_dims(const dims& d, char* buf) noexcept;
/// Writes v in decimal so that it ends at `end` (20 characters before it
/// suffice); returns where it starts.
TYPEFLOW_DECL char* print_integer(long long v, char* end) noexcept;

/// A static shape; `dyn` marks an extent bound at run time. `shape<>` is a scalar.
template <index_t... D>
struct shape {
    static_assert(sizeof...(D) <= max_rank, "typeflow: shape: rank is larger than typeflow::max_rank (8)");
    static_assert(((D >= 0 || D == dyn) && ...), "typeflow: shape: extents must be >= 0 or tf::dyn");
    static constexpr std::size_t rank = sizeof...(D);
    static constexpr dims value{D...};
    static constexpr bool is_static = ((D != dyn) && ...);
    /// Number of elements, or dyn when an extent is dyn.
    static constexpr index_t numel = is_static ? (index_t{1} * ... * D) : dyn;
};

namespace detail {
template <class S>
inline constexpr bool is_shape_v = false;
template <index_t... D>
inline constexpr bool is_shape_v<shape<D...>> = true;

// A constexpr dims value turned back into a shape type.
template <dims R, class Seq = std::make_index_sequence<R.rank>>
struct shape_from_dims_impl;
template <dims R, std::size_t... I>
struct shape_from_dims_impl<R, std::index_sequence<I...>> {
    using type = shape<R.d[I]...>;
};
}  // namespace detail

/// Satisfied by `shape<...>` types.
template <class S>
concept shape_c = detail::is_shape_v<S>;

/// The shape type whose extents are the constexpr dims R.
template <dims R>
using shape_from_dims = typename detail::shape_from_dims_impl<R>::type;

/// Numpy broadcasting of two static extent lists; dyn meets anything.
/// ok is false when two known extents differ and neither is 1.
struct broadcast_result {
    dims out;
    bool ok = true;
};
constexpr broadcast_result broadcast_dims(dims a, dims b) {
    broadcast_result r;
    r.out.rank = a.rank > b.rank ? a.rank : b.rank;
    for (std::size_t i = 0; i < r.out.rank; ++i) {
        // align from the right
        const index_t x = i < r.out.rank - a.rank ? 1 : a.d[i - (r.out.rank - a.rank)];
        const index_t y = i < r.out.rank - b.rank ? 1 : b.d[i - (r.out.rank - b.rank)];
        index_t o;
        if (x == y) o = x;
        else if (x == 1) o = y;
        else if (y == 1) o = x;
        else if (x == dyn) o = y;  // the dyn extent must be 1 or y at run time
        else if (y == dyn) o = x;
        else { o = x; r.ok = false; }
        r.out.d[i] = o;
    }
    return r;
}

}  // namespace typeflow

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/core/impl/shape.ipp>
#endif
