// typeflow/data/file.hpp — whole-file reads and writes for the file sources
// of tf::data, with gzip (de)compression through zlib.
//
// gzip support is compiled in when TYPEFLOW_HAVE_ZLIB is defined (in every
// translation unit) and the program links zlib (-lz; Debian's zlib1g-dev).
// Without it a gzip-compressed file is a tf::error that says so.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>


#include <typeflow/core/config.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow::data {

/// True when this build reads and writes gzip-compressed files.
#if defined(TYPEFLOW_HAVE_ZLIB)
inline constexpr bool gzip_supported = true;
#else
inline constexpr bool gzip_supported = false;
#endif

namespace detail {

/// True when the bytes start with the gzip magic number (1f 8b).
inline bool is_gzip(const unsigned char* p, std::size_t n) noexcept { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

/// True when path ends in ".gz".
inline bool has_gz_suffix(std::string_view path) noexcept { return path.size() >= 3 && path.substr(path.size() - 3) == ".gz"; }

[[noreturn]] TYPEFLOW_DECL void raise_file(const char* what, const std::string& path, std::string_view problem, int err);

/// The raw bytes of a file.
TYPEFLOW_DECL std::vector<unsigned char> read_raw(const std::string& path, const char* what);

#if defined(TYPEFLOW_HAVE_ZLIB)
/// The decompressed contents of a gzip file (members one after another).
TYPEFLOW_DECL std::vector<unsigned char> gunzip(const std::vector<unsigned char>& in, const std::string& path, const char* what);
#endif

}  // namespace detail

/// The contents of a file. A file that starts with the gzip magic number is
/// decompressed (a tf::error when gzip_supported is false), and *was_gzip
/// (when given) says so. Errors name the file and `what` (the caller, e.g.
/// "data::read_idx").
TYPEFLOW_DECL std::vector<unsigned char> read_file(const std::string& path, const char* what = "data::read_file",
                                                   bool* was_gzip = nullptr);

/// Writes bytes to a file, replacing it; gzip-compressed when path ends in
/// ".gz" (a tf::error when gzip_supported is false).
TYPEFLOW_DECL void write_file(const std::string& path, const void* data, std::size_t n, const char* what = "data::write_file");

}  // namespace typeflow::data

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/data/impl/file.ipp>
#endif
