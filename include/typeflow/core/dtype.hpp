// typeflow/core/dtype.hpp — element types a tensor may hold.
#pragma once
#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace typeflow {

/// Run-time tag of an element type.
enum class dtype : std::uint8_t { float32, float64, int32, int64, boolean };

/// Every dtype, in enumerator order.
inline constexpr dtype all_dtypes[] = {dtype::float32, dtype::float64, dtype::int32, dtype::int64, dtype::boolean};

/// The element types typeflow supports: float, double, int32, int64, bool.
template <class T>
concept value_type_c = std::same_as<T, float> || std::same_as<T, double> ||
                       std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t> ||
                       std::same_as<T, bool>;

template <class T>
concept floating_c = std::same_as<T, float> || std::same_as<T, double>;

template <class T>
concept numeric_c = value_type_c<T> && !std::same_as<T, bool>;

/// The dtype tag of a C++ element type.
template <value_type_c T>
inline constexpr dtype dtype_of = std::same_as<T, float>          ? dtype::float32
                                  : std::same_as<T, double>       ? dtype::float64
                                  : std::same_as<T, std::int32_t> ? dtype::int32
                                  : std::same_as<T, std::int64_t> ? dtype::int64
                                                                  : dtype::boolean;

/// TensorFlow's name of a dtype ("float32", "int64", ...).
constexpr std::string_view dtype_name(dtype d) noexcept {
    switch (d) {
        case dtype::float32: return "float32";
        case dtype::float64: return "float64";
        case dtype::int32: return "int32";
        case dtype::int64: return "int64";
        case dtype::boolean: return "bool";
    }
    return "?";
}

/// Size in bytes of one element of a dtype.
constexpr std::size_t dtype_size(dtype d) noexcept {
    switch (d) {
        case dtype::float32: return 4;
        case dtype::float64: return 8;
        case dtype::int32: return 4;
        case dtype::int64: return 8;
        case dtype::boolean: return sizeof(bool);
    }
    return 0;
}

}  // namespace typeflow
