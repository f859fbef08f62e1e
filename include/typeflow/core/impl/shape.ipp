// typeflow/core/impl/shape.ipp — printing extents (see core/shape.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/core/shape.hpp>

namespace typeflow {

TYPEFLOW_DECL std::string to_string(const dims& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.rank; ++i) {
        if (i) r += ',';
        r += s.d[i] == dyn ? std::string("?") : std::to_string(s.d[i]);
    }
    return r + "]";
}

}  // namespace typeflow
