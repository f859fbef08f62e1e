// typeflow/core/impl/shape.ipp — printing extents (see core/shape.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/core/shape.hpp>

namespace typeflow {

TYPEFLOW_DECL char* print_integer(long long v, char* end) noexcept {
    char* p = end;
    const bool neg = v < 0;
    unsigned long long u = neg ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
    do {
        *--p = static_cast<char>('0' + u % 10);
        u /= 10;
    } while (u);
    if (neg) *--p = '-';
    return p;
}

TYPEFLOW_DECL std::size_t print_dims(const dims& d, char* buf) noexcept {
    std::size_t n = 0;
    buf[n++] = '[';
    for (std::size_t i = 0; i < d.rank && i < max_rank; ++i) {
        if (i) buf[n++] = ',';
        if (d.d[i] == dyn) {
            buf[n++] = '?';
        } else {
            char t[20];
            const char* b = print_integer(d.d[i], t + sizeof t);
            while (b != t + sizeof t) buf[n++] = *b++;
        }
    }
    buf[n++] = ']';
    return n;
}

TYPEFLOW_DECL std::string to_string(const dims& s) {
    char b[dims_chars];
    return std::string(b, print_dims(s, b));
}

}  // namespace typeflow
