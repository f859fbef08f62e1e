// typeflow/data/idx.hpp — IDX files (the format of MNIST and Fashion-MNIST):
// reading into a tf::tensor, writing one, and a dataset of two IDX files.
//
// An IDX file is a magic number (two zero bytes, an element type code and
// the rank), one big-endian 32-bit extent per axis, then the elements,
// big-endian, row-major. Files may be gzip-compressed (see data/file.hpp).
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/data/dataset.hpp>
#include <typeflow/data/file.hpp>
#include <typeflow/data/from_tensors.hpp>

namespace typeflow::data {

/// The element types of IDX files (the third byte of the magic number).
enum class idx_type : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

/// The IDX type write_idx uses for tensors of T: f32, f64, i32 (int64
/// values must fit it), u8 for bool.
template <value_type_c T>
inline constexpr idx_type idx_type_for = std::is_same_v<T, float>    ? idx_type::f32
                                         : std::is_same_v<T, double> ? idx_type::f64
                                         : std::is_same_v<T, bool>   ? idx_type::u8
                                                                     : idx_type::i32;

/// The name of an IDX type ("u8", "f32", ...).
constexpr std::string_view idx_type_name(idx_type t) noexcept {
    switch (t) {
        case idx_type::u8: return "u8";
        case idx_type::i8: return "i8";
        case idx_type::i16: return "i16";
        case idx_type::i32: return "i32";
        case idx_type::f32: return "f32";
        case idx_type::f64: return "f64";
    }
    return "?";
}

/// Bytes per element of an IDX type.
constexpr std::size_t idx_type_size(idx_type t) noexcept {
    switch (t) {
        case idx_type::u8:
        case idx_type::i8: return 1;
        case idx_type::i16: return 2;
        case idx_type::i32:
        case idx_type::f32: return 4;
        case idx_type::f64: return 8;
    }
    return 0;
}

/// What an IDX header says: the element type, the extents, and where the
/// elements start.
struct idx_header {
    idx_type type = idx_type::u8;
    typeflow::dims extents{};
    std::size_t data_offset = 0;
};

namespace detail {

inline std::uint32_t load_be32(const unsigned char* p) noexcept {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}
inline std::uint64_t load_be64(const unsigned char* p) noexcept {
    return (std::uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}
inline void store_be(unsigned char* p, std::uint64_t v, std::size_t bytes) noexcept {
    for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * (bytes - 1 - i)));
}

/// Writes v as "0x.." to m.
TYPEFLOW_DECL void hex_byte(typeflow::detail::message& m, unsigned v);

/// A tf::error "what: 'path': problem" (+ a note when the offsets are those
/// of the decompressed data).
struct idx_errors {
    const std::string& path;
    bool gz;
    typeflow::detail::message start() const {
        typeflow::detail::message m;
        m << "data::read_idx: '" << path << "': ";
        return m;
    }
    [[noreturn]] void raise(typeflow::detail::message& m) const {
        if (gz) m << " (offsets in the decompressed data)";
        typeflow::detail::raise(m);
    }
};

/// Parses and checks an IDX header against the file's size.
TYPEFLOW_DECL idx_header parse_idx_header(const unsigned char* b, std::size_t size, const idx_errors& err);

/// Converts the n big-endian IDX elements of type `type` at p to V.
template <class V>
void convert_idx(const unsigned char* p, idx_type type, index_t n, V* out) {
    switch (type) {
        case idx_type::u8:
            for (index_t i = 0; i < n; ++i) out[i] = static_cast<V>(p[i]);
            break;
        case idx_type::i8:
            for (index_t i = 0; i < n; ++i) out[i] = static_cast<V>(static_cast<std::int8_t>(p[i]));
            break;
        case idx_type::i16:
            for (index_t i = 0; i < n; ++i)
                out[i] = static_cast<V>(static_cast<std::int16_t>((p[2 * i] << 8) | p[2 * i + 1]));
            break;
        case idx_type::i32:
            for (index_t i = 0; i < n; ++i) out[i] = static_cast<V>(static_cast<std::int32_t>(load_be32(p + 4 * i)));
            break;
        case idx_type::f32:
            if constexpr (std::is_floating_point_v<V>)
                for (index_t i = 0; i < n; ++i) out[i] = static_cast<V>(std::bit_cast<float>(load_be32(p + 4 * i)));
            break;
        case idx_type::f64:
            if constexpr (std::is_floating_point_v<V>)
                for (index_t i = 0; i < n; ++i) out[i] = static_cast<V>(std::bit_cast<double>(load_be64(p + 8 * i)));
            break;
    }
}

}  // namespace detail

/// The header of an IDX file in memory (checked against its size); errors
/// name `path`.
TYPEFLOW_DECL idx_header parse_idx_header(const std::vector<unsigned char>& bytes, const std::string& path);

namespace detail {
/// read_idx, also giving the file's header.
template <value_type_c T>
tensor<T> read_idx_with_header(const std::string& path, idx_header& h) {
    bool gz = false;
    const std::vector<unsigned char> raw = read_file(path, "data::read_idx", &gz);
    const idx_errors err{path, gz};
    h = parse_idx_header(raw.data(), raw.size(), err);
    if constexpr (!std::is_floating_point_v<T>) {
        if (h.type == idx_type::f32 || h.type == idx_type::f64) {
            auto m = err.start();
            m << "holds " << idx_type_name(h.type) << " elements (type code at byte offset 2); read it as float or double, not "
              << dtype_name(dtype_of<T>);
            err.raise(m);
        }
    }
    tensor<T> t(h.extents);
    const unsigned char* p = raw.data() + h.data_offset;
    if constexpr (std::is_same_v<T, bool>) {
        std::vector<std::int32_t> v(static_cast<std::size_t>(t.size()));
        convert_idx(p, h.type, t.size(), v.data());
        for (index_t i = 0; i < t.size(); ++i) t[i] = v[static_cast<std::size_t>(i)] != 0;
    } else {
        convert_idx(p, h.type, t.size(), t.data());
    }
    return t;
}
}  // namespace detail

/// Reads an IDX file (gzip-compressed or not) into a tensor of T of the
/// file's extents, converting each element. Integer files convert to any
/// T (bool: nonzero); f32 and f64 files only to float or double. A
/// malformed file (bad magic number, truncated header or data, extents that
/// overflow, bytes after the data) is a tf::error naming the file and the
/// byte offset.
template <value_type_c T>
tensor<T> read_idx(const std::string& path) {
    idx_header h;
    return detail::read_idx_with_header<T>(path, h);
}

/// Writes a tensor as an IDX file of element type `type` (gzip-compressed
/// when path ends in ".gz"). For an integer type every value must be an
/// integer the type holds; otherwise a tf::error names the first that is not.
template <value_type_c T>
void write_idx(const std::string& path, const tensor<T>& t, idx_type type = idx_type_for<T>) {
    const dims& d = t.dims();
    for (std::size_t i = 0; i < d.rank; ++i)
        if (d.d[i] > index_t{0xFFFFFFFF})
            typeflow::detail::raise(typeflow::detail::message() << "data::write_idx: '" << path << "': extent "
                                                                << d.d[i] << " does not fit the 32 bits IDX has");
    const std::size_t es = idx_type_size(type), n = static_cast<std::size_t>(t.size());
    std::vector<unsigned char> out(4 + 4 * d.rank + es * n);
    out[2] = static_cast<unsigned char>(type);
    out[3] = static_cast<unsigned char>(d.rank);
    for (std::size_t i = 0; i < d.rank; ++i) detail::store_be(&out[4 + 4 * i], static_cast<std::uint64_t>(d.d[i]), 4);
    unsigned char* p = out.data() + 4 + 4 * d.rank;
    double lo = 0, hi = 0;
    switch (type) {
        case idx_type::u8: lo = 0, hi = 255; break;
        case idx_type::i8: lo = -128, hi = 127; break;
        case idx_type::i16: lo = -32768, hi = 32767; break;
        case idx_type::i32: lo = -2147483648.0, hi = 2147483647.0; break;
        default: break;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const T v = t[static_cast<index_t>(i)];
        if (type == idx_type::f32) {
            detail::store_be(p + 4 * i, std::bit_cast<std::uint32_t>(static_cast<float>(v)), 4);
        } else if (type == idx_type::f64) {
            detail::store_be(p + 8 * i, std::bit_cast<std::uint64_t>(static_cast<double>(v)), 8);
        } else {
            const double x = static_cast<double>(v);
            if (!(x >= lo && x <= hi && x == std::floor(x)))
                typeflow::detail::raise(typeflow::detail::message()
                                        << "data::write_idx: '" << path << "': element "
                                        << static_cast<unsigned long long>(i) << " is not an integer that "
                                        << idx_type_name(type) << " holds");
            detail::store_be(p + es * i, static_cast<std::uint64_t>(static_cast<std::int64_t>(x)), es);
        }
    }
    write_file(path, out.data(), out.size(), "data::write_idx");
}

/// A dataset of (features[i], labels[i]) from two IDX files of one first
/// extent (e.g. MNIST's images and labels).
template <value_type_c TX, value_type_c TY = std::int32_t>
dataset<TX, TY> from_idx(const std::string& features_path, const std::string& labels_path) {
    tensor<TX> x = read_idx<TX>(features_path);
    tensor<TY> y = read_idx<TY>(labels_path);
    if (x.rank() == 0 || y.rank() == 0 || x.dims()[0] != y.dims()[0])
        typeflow::detail::raise(typeflow::detail::message()
                                << "data::from_idx: '" << features_path << "' has extents " << x.dims() << " and '"
                                << labels_path << "' has " << y.dims() << ": they need one first extent");
    return from_tensors(x, y);
}

}  // namespace typeflow::data

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/data/impl/idx.ipp>
#endif
