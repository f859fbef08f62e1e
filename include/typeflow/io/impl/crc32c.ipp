// typeflow/io/impl/crc32c.ipp — CRC-32C (see io/crc32c.hpp): inline in
// header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION. The
// SSE4.2 instruction is used when the translation unit that compiles this
// file targets it (-msse4.2, -march=native).
#pragma once
#include <typeflow/io/crc32c.hpp>

#include <cstring>

#if defined(__SSE4_2__) && (defined(__x86_64__) || defined(_M_X64))
#include <nmmintrin.h>
#define TYPEFLOW_IO_CRC32C_HW 1
#endif

namespace typeflow::io {

namespace detail {
// Slicing-by-8 tables of the reflected polynomial 0x82F63B78.
struct crc32c_tables {
    std::uint32_t t[8][256];
    constexpr crc32c_tables() : t{} {
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1u) ? 0x82F63B78u : 0u);
            t[0][i] = c;
        }
        for (std::uint32_t i = 0; i < 256; ++i)
            for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
    }
};
inline constexpr crc32c_tables crc32c_table{};
}  // namespace detail

TYPEFLOW_DECL_HOT std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint32_t c = ~crc;
#ifdef TYPEFLOW_IO_CRC32C_HW
    std::uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
    }
    c = static_cast<std::uint32_t>(c64);
    for (; n; --n, ++p) c = _mm_crc32_u8(c, *p);
#else
    const auto& t = detail::crc32c_table.t;
    for (; n >= 8; n -= 8, p += 8) {
        // little-endian word order, as the reflected CRC consumes bytes
        const std::uint32_t lo = (std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
                                  std::uint32_t(p[3]) << 24) ^ c;
        const std::uint32_t hi =
            std::uint32_t(p[4]) | std::uint32_t(p[5]) << 8 | std::uint32_t(p[6]) << 16 | std::uint32_t(p[7]) << 24;
        c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][hi & 0xFF] ^
            t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    }
    for (; n; --n, ++p) c = (c >> 8) ^ t[0][(c ^ *p) & 0xFFu];
#endif
    return ~c;
}

}  // namespace typeflow::io
