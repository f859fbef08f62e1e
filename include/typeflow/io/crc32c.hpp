// typeflow/io/crc32c.hpp — CRC-32C (Castagnoli), the checksum of TFRecord
// framing and of checkpoint tensors, and TensorFlow's masked form of it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <typeflow/core/config.hpp>

namespace typeflow::io {

/// Extends the CRC-32C `crc` (0 for a fresh one) over n bytes.
TYPEFLOW_DECL_HOT std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t n) noexcept;

/// The CRC-32C of n bytes.
inline std::uint32_t crc32c(const void* data, std::size_t n) noexcept { return crc32c_extend(0, data, n); }
/// The CRC-32C of a string's bytes.
inline std::uint32_t crc32c(std::string_view s) noexcept { return crc32c(s.data(), s.size()); }

/// TensorFlow's masked CRC (stored in TFRecord files): rotate right by 15, add a constant.
constexpr std::uint32_t mask_crc(std::uint32_t crc) noexcept {
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
/// The inverse of mask_crc.
constexpr std::uint32_t unmask_crc(std::uint32_t masked) noexcept {
    const std::uint32_t rot = masked - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

}  // namespace typeflow::io

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/io/impl/crc32c.ipp>
#endif
