#pragma once
// Element types of the raw buffers the distributed runtime moves and reduces.
// (Stand-in until the foundation's dtype lands; the numeric values are part
// of the wire format.)

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace typeflow::dist {

/// Element type of a buffer on the wire. Values are stable wire codes.
enum class dtype : std::uint8_t { float32 = 1, float64 = 2, int32 = 3, int64 = 4, uint8 = 5 };

/// Size in bytes of one element, 0 for an unknown code.
constexpr std::size_t size_of(dtype t) noexcept {
    switch (t) {
    case dtype::float32: return 4;
    case dtype::float64: return 8;
    case dtype::int32: return 4;
    case dtype::int64: return 8;
    case dtype::uint8: return 1;
    }
    return 0;
}

/// Lower-case name ("float32"), "?" for an unknown code.
constexpr std::string_view name_of(dtype t) noexcept {
    switch (t) {
    case dtype::float32: return "float32";
    case dtype::float64: return "float64";
    case dtype::int32: return "int32";
    case dtype::int64: return "int64";
    case dtype::uint8: return "uint8";
    }
    return "?";
}

/// True when `code` names a dtype.
constexpr bool is_dtype_code(std::uint8_t code) noexcept { return code >= 1 && code <= 5; }

template <class T> struct dtype_of_t;
template <> struct dtype_of_t<float> : std::integral_constant<dtype, dtype::float32> {};
template <> struct dtype_of_t<double> : std::integral_constant<dtype, dtype::float64> {};
template <> struct dtype_of_t<std::int32_t> : std::integral_constant<dtype, dtype::int32> {};
template <> struct dtype_of_t<std::int64_t> : std::integral_constant<dtype, dtype::int64> {};
template <> struct dtype_of_t<std::uint8_t> : std::integral_constant<dtype, dtype::uint8> {};

/// The dtype of C++ type T (float -> float32 ...).
template <class T> inline constexpr dtype dtype_of = dtype_of_t<std::remove_cv_t<T>>::value;

/// Reduction applied by all_reduce and reduce_scatter. Values are wire codes.
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
