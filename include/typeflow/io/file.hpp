// typeflow/io/file.hpp — atomic file writes (temporary file, fsync, rename,
// fsync of the directory) and the small POSIX helpers checkpoints use.
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <typeflow/core/error.hpp>

namespace typeflow::io {

namespace detail {
inline std::string errno_text(int e) { return std::strerror(e); }

/// Test hook: called after each block of bytes reaches a temporary file,
/// with the file's path and the bytes written so far (crash tests use it to
/// stop a writer mid-file). Empty by default.
inline std::function<void(const std::string&, std::uint64_t)>& write_hook() {
    static std::function<void(const std::string&, std::uint64_t)> hook;
    return hook;
}

// An output stream buffer over a POSIX file descriptor. Large writes bypass
// the buffer. Errors are remembered and reported by the owner.
class fd_streambuf : public std::streambuf {
public:
    fd_streambuf(int fd, std::string path, std::size_t buffer = std::size_t{1} << 20)
        : fd_(fd), path_(std::move(path)), buf_(buffer) {
        setp(buf_.data(), buf_.data() + buf_.size());
    }
    bool failed() const noexcept { return err_ != 0; }
    int error_number() const noexcept { return err_; }
    std::uint64_t written() const noexcept { return written_; }

protected:
    int_type overflow(int_type ch) override {
        if (!drain()) return traits_type::eof();
        if (!traits_type::eq_int_type(ch, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(ch);
            pbump(1);
        }
        return traits_type::not_eof(ch);
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        if (n >= static_cast<std::streamsize>(buf_.size() / 4)) {
            if (!drain() || !raw_write(s, static_cast<std::size_t>(n))) return 0;
            return n;
        }
        return std::streambuf::xsputn(s, n);
    }
    int sync() override { return drain() ? 0 : -1; }

private:
    bool drain() {
        const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
        setp(buf_.data(), buf_.data() + buf_.size());
        return n == 0 || raw_write(buf_.data(), n);
    }
    bool raw_write(const char* p, std::size_t n) {
        if (err_) return false;
        while (n) {
            // at most 64 MiB per call, so the hook sees progress inside large tensors
            const std::size_t chunk = n < (std::size_t{1} << 26) ? n : (std::size_t{1} << 26);
            const ssize_t w = ::write(fd_, p, chunk);
            if (w < 0) {
                if (errno == EINTR) continue;
                err_ = errno;
                return false;
            }
            p += w;
            n -= static_cast<std::size_t>(w);
            written_ += static_cast<std::uint64_t>(w);
            if (auto& h = write_hook()) h(path_, written_);
        }
        return true;
    }

    int fd_;
    std::string path_;
    std::vector<char> buf_;
    int err_ = 0;
    std::uint64_t written_ = 0;
};
}  // namespace detail

/// Makes a directory's entries durable (fsync of the directory itself).
inline void fsync_directory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw error("cannot open directory '" + dir + "': " + detail::errno_text(errno));
    const int rc = ::fsync(fd);
    const int e = errno;
    ::close(fd);
    if (rc != 0 && e != EINVAL) throw error("fsync of directory '" + dir + "' failed: " + detail::errno_text(e));
}

/// Writes a file atomically: the bytes go to "<dir>/.<name>.tmp.<pid>", which
/// is fsynced and renamed over `path` by commit(), and the directory is
/// fsynced. A writer destroyed without commit() removes its temporary file;
/// a process killed mid-write leaves `path` as it was.
class atomic_file {
public:
    explicit atomic_file(std::string path) : path_(std::move(path)) {
        const auto slash = path_.find_last_of('/');
        dir_ = slash == std::string::npos ? std::string(".") : (slash == 0 ? std::string("/") : path_.substr(0, slash));
        const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
        tmp_ = dir_ + "/." + base + ".tmp." + std::to_string(::getpid());
        fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd_ < 0) throw error("cannot create '" + tmp_ + "': " + detail::errno_text(errno));
        buf_ = std::make_unique<detail::fd_streambuf>(fd_, tmp_);
        os_ = std::make_unique<std::ostream>(buf_.get());
    }
    atomic_file(const atomic_file&) = delete;
    atomic_file& operator=(const atomic_file&) = delete;
    ~atomic_file() {
        if (fd_ >= 0) {
            ::close(fd_);
            ::unlink(tmp_.c_str());
        }
    }

    /// The stream to write the contents to.
    std::ostream& stream() noexcept { return *os_; }
    /// The final path.
    const std::string& path() const noexcept { return path_; }
    /// Flushes, fsyncs, renames over the final path and fsyncs the directory.
    void commit() {
        os_->flush();
        if (buf_->failed() || !*os_)
            throw error("writing '" + tmp_ + "' failed: " +
                        (buf_->failed() ? detail::errno_text(buf_->error_number()) : std::string("stream error")));
        if (::fsync(fd_) != 0) throw error("fsync of '" + tmp_ + "' failed: " + detail::errno_text(errno));
        if (::close(fd_) != 0) {
            fd_ = -1;
            ::unlink(tmp_.c_str());
            throw error("closing '" + tmp_ + "' failed: " + detail::errno_text(errno));
        }
        fd_ = -1;
        if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
            const int e = errno;
            ::unlink(tmp_.c_str());
            throw error("cannot rename '" + tmp_ + "' to '" + path_ + "': " + detail::errno_text(e));
        }
        fsync_directory(dir_);
    }

private:
    std::string path_, dir_, tmp_;
    int fd_ = -1;
    std::unique_ptr<detail::fd_streambuf> buf_;
    std::unique_ptr<std::ostream> os_;
};

}  // namespace typeflow::io
