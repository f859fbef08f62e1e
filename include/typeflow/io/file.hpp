// typeflow/io/file.hpp — atomic file writes (temporary file, fsync, rename,
// fsync of the directory) and the small POSIX helpers checkpoints use.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>

namespace typeflow::io {

namespace detail {
/// strerror(e) as a string.
TYPEFLOW_DECL std::string errno_text(int e);

/// Test hook: called after each block of bytes reaches a temporary file,
/// with the file's path and the bytes written so far (crash tests use it to
/// stop a writer mid-file). Empty by default.
TYPEFLOW_DECL std::function<void(const std::string&, std::uint64_t)>& write_hook();

class fd_streambuf;  // impl/file.ipp
}  // namespace detail

/// Makes a directory's entries durable (fsync of the directory itself).
TYPEFLOW_DECL void fsync_directory(const std::string& dir);

/// Writes a file atomically: the bytes go to "<dir>/.<name>.tmp.<pid>", which
/// is fsynced and renamed over `path` by commit(), and the directory is
/// fsynced. A writer destroyed without commit() removes its temporary file;
/// a process killed mid-write leaves `path` as it was.
class atomic_file {
public:
    explicit atomic_file(std::string path);
    atomic_file(const atomic_file&) = delete;
    atomic_file& operator=(const atomic_file&) = delete;
    ~atomic_file();

    /// The stream to write the contents to.
    std::ostream& stream() noexcept { return *os_; }
    /// The final path.
    const std::string& path() const noexcept { return path_; }
    /// Flushes, fsyncs, renames over the final path and fsyncs the directory.
    void commit();

private:
    std::string path_, dir_, tmp_;
    int fd_ = -1;
    std::unique_ptr<detail::fd_streambuf> buf_;
    std::unique_ptr<std::ostream> os_;
};

}  // namespace typeflow::io

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/io/impl/file.ipp>
#endif
