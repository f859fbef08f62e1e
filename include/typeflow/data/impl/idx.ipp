// typeflow/data/impl/idx.ipp — the IDX header parser (see data/idx.hpp): inline in header-only
// builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION (typeflow/src.hpp).
#pragma once
#include <typeflow/data/idx.hpp>

namespace typeflow::data {

namespace detail {

TYPEFLOW_DECL void hex_byte(typeflow::detail::message& m, unsigned v) {
    const char h[] = "0123456789abcdef";
    const char s[4] = {'0', 'x', h[(v >> 4) & 15], h[v & 15]};
    m << std::string_view(s, 4);
}

TYPEFLOW_DECL idx_header parse_idx_header(const unsigned char* b, std::size_t size, const idx_errors& err) {
    if (size < 4) {
        auto m = err.start();
        m << "truncated header: the file has " << static_cast<unsigned long long>(size)
          << " bytes, the magic number needs 4 (it ends at byte offset " << static_cast<unsigned long long>(size)
          << ")";
        err.raise(m);
    }
    if (b[0] != 0 || b[1] != 0) {
        auto m = err.start();
        m << "bad magic number at byte offset 0: it starts ";
        hex_byte(m, b[0]);
        m << " ";
        hex_byte(m, b[1]);
        m << " where an IDX file starts 0x00 0x00";
        err.raise(m);
    }
    idx_header h;
    const unsigned code = b[2];
    if (code != 0x08 && code != 0x09 && code != 0x0B && code != 0x0C && code != 0x0D && code != 0x0E) {
        auto m = err.start();
        m << "bad magic number: unknown element type code ";
        hex_byte(m, code);
        m << " at byte offset 2 (known: 0x08 u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32, 0x0e f64)";
        err.raise(m);
    }
    h.type = static_cast<idx_type>(code);
    const std::size_t rank = b[3];
    if (rank > max_rank) {
        auto m = err.start();
        m << "bad magic number: rank " << static_cast<unsigned long long>(rank)
          << " at byte offset 3 is larger than typeflow::max_rank (" << static_cast<unsigned long long>(max_rank) << ")";
        err.raise(m);
    }
    h.data_offset = 4 + 4 * rank;
    if (size < h.data_offset) {
        auto m = err.start();
        m << "truncated header: rank " << static_cast<unsigned long long>(rank) << " needs "
          << static_cast<unsigned long long>(h.data_offset) << " header bytes, the file ends at byte offset "
          << static_cast<unsigned long long>(size);
        err.raise(m);
    }
    h.extents.rank = rank;
    std::uint64_t numel = 1;
    bool overflow = false;
    for (std::size_t i = 0; i < rank; ++i) {
        const std::uint32_t e = load_be32(b + 4 + 4 * i);
        h.extents.d[i] = e;
        overflow = overflow || __builtin_mul_overflow(numel, std::uint64_t{e}, &numel);
    }
    std::uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(numel, std::uint64_t{idx_type_size(h.type)}, &bytes) ||
               numel > static_cast<std::uint64_t>(std::numeric_limits<index_t>::max());
    if (overflow) {
        auto m = err.start();
        m << "extents " << h.extents << " (byte offsets 4 to " << static_cast<unsigned long long>(h.data_offset)
          << ") overflow: their product times " << static_cast<unsigned long long>(idx_type_size(h.type))
          << " bytes does not fit 63 bits";
        err.raise(m);
    }
    const std::size_t have = size - h.data_offset;
    if (bytes > have) {
        auto m = err.start();
        m << "truncated data: extents " << h.extents << " of " << idx_type_name(h.type) << " need "
          << static_cast<unsigned long long>(bytes) << " bytes from byte offset "
          << static_cast<unsigned long long>(h.data_offset) << ", the file ends at byte offset "
          << static_cast<unsigned long long>(size) << " (it holds "
          << static_cast<unsigned long long>(have / idx_type_size(h.type)) << " of the "
          << static_cast<unsigned long long>(numel) << " elements)";
        err.raise(m);
    }
    if (bytes < have) {
        auto m = err.start();
        m << static_cast<unsigned long long>(have - bytes) << " bytes after the data, from byte offset "
          << static_cast<unsigned long long>(h.data_offset + bytes) << " (extents " << h.extents << " of "
          << idx_type_name(h.type) << " end there)";
        err.raise(m);
    }
    return h;
}

}  // namespace detail

TYPEFLOW_DECL idx_header parse_idx_header(const std::vector<unsigned char>& bytes, const std::string& path) {
    return detail::parse_idx_header(bytes.data(), bytes.size(), detail::idx_errors{path, false});
}

}  // namespace typeflow::data
