// typeflow/data/impl/file.ipp — whole-file reads and writes (see data/file.hpp): inline in
// header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION (typeflow/src.hpp).
#pragma once
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(TYPEFLOW_HAVE_ZLIB)
#include <zlib.h>
#endif

#include <typeflow/data/file.hpp>

namespace typeflow::data {

namespace detail {

TYPEFLOW_DECL void raise_file(const char* what, const std::string& path, std::string_view problem, int err) {
    typeflow::detail::raise(typeflow::detail::message() << what << ": '" << path << "': " << problem << ": "
                                                        << std::string_view(std::strerror(err)));
}

/// The raw bytes of a file.
TYPEFLOW_DECL std::vector<unsigned char> read_raw(const std::string& path, const char* what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) raise_file(what, path, "cannot open", errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        raise_file(what, path, "cannot stat", e);
    }
    std::vector<unsigned char> bytes(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 0) + 1);
    std::size_t n = 0;
    for (;;) {
        if (n == bytes.size()) bytes.resize(bytes.size() * 2);
        const ssize_t r = ::read(fd, bytes.data() + n, bytes.size() - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            raise_file(what, path, "read failed", e);
        }
        if (r == 0) break;
        n += static_cast<std::size_t>(r);
    }
    bytes.resize(n);
    ::close(fd);
    return bytes;
}

#if defined(TYPEFLOW_HAVE_ZLIB)
/// The decompressed contents of a gzip file (members one after another).
TYPEFLOW_DECL std::vector<unsigned char> gunzip(const std::vector<unsigned char>& in, const std::string& path, const char* what) {
    auto fail = [&](std::string_view problem, std::size_t at, const char* zmsg) {
        typeflow::detail::message m;
        m << what << ": '" << path << "': " << problem << " at compressed byte offset "
          << static_cast<unsigned long long>(at);
        if (zmsg) m << " (" << std::string_view(zmsg) << ")";
        typeflow::detail::raise(m);
    };
    z_stream zs{};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) fail("cannot start zlib", 0, zs.msg);
    struct guard {
        z_stream* z;
        ~guard() { inflateEnd(z); }
    } g{&zs};
    // The last four bytes hold the size modulo 2^32: a first guess, trusted
    // only as far as a plausible ratio (the file may be corrupt).
    std::size_t guess = in.size() * 4;
    if (in.size() >= 18) {
        const std::size_t isize = in[in.size() - 4] | (in[in.size() - 3] << 8) | (in[in.size() - 2] << 16) |
                                  (static_cast<std::size_t>(in[in.size() - 1]) << 24);
        if (isize <= in.size() * 16) guess = isize;
    }
    std::vector<unsigned char> out(guess + 1);
    std::size_t used = 0, produced = 0;
    for (;;) {
        if (produced == out.size()) out.resize(out.size() * 2);
        const std::size_t in_left = in.size() - used, out_left = out.size() - produced;
        zs.next_in = const_cast<Bytef*>(in.data() + used);
        zs.avail_in = static_cast<uInt>(in_left < UINT_MAX ? in_left : UINT_MAX);
        zs.next_out = out.data() + produced;
        zs.avail_out = static_cast<uInt>(out_left < UINT_MAX ? out_left : UINT_MAX);
        const uInt avail_in = zs.avail_in, avail_out = zs.avail_out;
        const int rc = inflate(&zs, Z_NO_FLUSH);
        used += avail_in - zs.avail_in;
        produced += avail_out - zs.avail_out;
        if (rc == Z_STREAM_END) {
            if (used == in.size()) break;
            if (!is_gzip(in.data() + used, in.size() - used)) fail("bytes after the end of the gzip stream", used, nullptr);
            inflateReset(&zs);  // another gzip member follows
            continue;
        }
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR && used == in.size()) fail("truncated gzip stream: the file ends", used, nullptr);
        if (rc == Z_BUF_ERROR) continue;  // no room left in out: grown above
        fail(rc == Z_MEM_ERROR ? "out of memory decompressing" : "corrupt gzip data", used, zs.msg);
    }
    out.resize(produced);
    return out;
}
#endif

}  // namespace detail

TYPEFLOW_DECL std::vector<unsigned char> read_file(const std::string& path, const char* what, bool* was_gzip) {
    std::vector<unsigned char> bytes = detail::read_raw(path, what);
    const bool gz = detail::is_gzip(bytes.data(), bytes.size());
    if (was_gzip) *was_gzip = gz;
    if (!gz) return bytes;
#if defined(TYPEFLOW_HAVE_ZLIB)
    return detail::gunzip(bytes, path, what);
#else
    typeflow::detail::raise(typeflow::detail::message()
                            << what << ": '" << path
                            << "' is gzip-compressed, and this build has no gzip support (define TYPEFLOW_HAVE_ZLIB "
                               "and link zlib, or decompress the file)");
#endif
}

/// Writes bytes to a file, replacing it; gzip-compressed when path ends in
/// ".gz" (a tf::error when gzip_supported is false).
TYPEFLOW_DECL void write_file(const std::string& path, const void* data, std::size_t n, const char* what) {
    if (detail::has_gz_suffix(path)) {
#if defined(TYPEFLOW_HAVE_ZLIB)
        gzFile f = gzopen(path.c_str(), "wb");
        if (!f) detail::raise_file(what, path, "cannot create", errno ? errno : ENOMEM);
        const auto* p = static_cast<const char*>(data);
        bool ok = true;
        while (n && ok) {
            const unsigned chunk = n < (1u << 30) ? static_cast<unsigned>(n) : (1u << 30);
            ok = gzwrite(f, p, chunk) == static_cast<int>(chunk);
            p += chunk;
            n -= chunk;
        }
        if (gzclose(f) != Z_OK || !ok)
            typeflow::detail::raise(typeflow::detail::message() << what << ": '" << path << "': gzip write failed");
        return;
#else
        typeflow::detail::raise(typeflow::detail::message()
                                << what << ": '" << path
                                << "': writing .gz files needs gzip support (define TYPEFLOW_HAVE_ZLIB and link zlib)");
#endif
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) detail::raise_file(what, path, "cannot create", errno);
    const auto* p = static_cast<const unsigned char*>(data);
    while (n) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            detail::raise_file(what, path, "write failed", e);
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    if (::close(fd) != 0) detail::raise_file(what, path, "close failed", errno);
}

}  // namespace typeflow::data
