#pragma once
// typeflow::dist::reduce_op — the reductions of all_reduce and reduce_scatter.
// The element types of the buffers the distributed runtime moves and reduces
// are the library's own (typeflow::dtype, core/dtype.hpp), also named
// typeflow::dist::dtype here; frame.hpp maps them to their wire codes.

#include <typeflow/core/dtype.hpp>

#include <cstdint>
#include <string_view>

namespace typeflow::dist {

using typeflow::dtype;
using typeflow::dtype_of;

/// Reduction applied by all_reduce and reduce_scatter. Values are wire codes.
/// bool buffers take max (any) and min (all) only.
enum class reduce_op : std::uint8_t { sum = 1, mean = 2, max = 3, min = 4 };

/// "sum", "mean", "max", "min"; "?" for an unknown code.
constexpr std::string_view name_of(reduce_op r) noexcept {
    switch (r) {
    case reduce_op::sum: return "sum";
    case reduce_op::mean: return "mean";
    case reduce_op::max: return "max";
    case reduce_op::min: return "min";
    }
    return "?";
}

} // namespace typeflow::dist
