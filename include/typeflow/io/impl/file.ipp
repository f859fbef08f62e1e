// typeflow/io/impl/file.ipp — atomic file writes (see io/file.hpp): inline
// in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/io/file.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <streambuf>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace typeflow::io {

namespace detail {
TYPEFLOW_DECL std::string errno_text(int e) { return std::strerror(e); }

TYPEFLOW_DECL std::function<void(const std::string&, std::uint64_t)>& write_hook() {
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

TYPEFLOW_DECL void fsync_directory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw error("cannot open directory '" + dir + "': " + detail::errno_text(errno));
    const int rc = ::fsync(fd);
    const int e = errno;
    ::close(fd);
    if (rc != 0 && e != EINVAL) throw error("fsync of directory '" + dir + "' failed: " + detail::errno_text(e));
}

TYPEFLOW_DECL atomic_file::atomic_file(std::string path) : path_(std::move(path)) {
    const auto slash = path_.find_last_of('/');
    dir_ = slash == std::string::npos ? std::string(".") : (slash == 0 ? std::string("/") : path_.substr(0, slash));
    const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
    tmp_ = dir_ + "/." + base + ".tmp." + std::to_string(::getpid());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw error("cannot create '" + tmp_ + "': " + detail::errno_text(errno));
    buf_ = std::make_unique<detail::fd_streambuf>(fd_, tmp_);
    os_ = std::make_unique<std::ostream>(buf_.get());
}

TYPEFLOW_DECL atomic_file::~atomic_file() {
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(tmp_.c_str());
    }
}

TYPEFLOW_DECL void atomic_file::commit() {
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

}  // namespace typeflow::io
