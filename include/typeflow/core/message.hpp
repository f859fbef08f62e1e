// typeflow/core/message.hpp — building tf::error messages at throw sites.
#pragma once
#include <typeflow/core/config.hpp>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include <typeflow/core/error.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow::detail {

/// An error message built piece by piece: strings, integers and extents
/// (printed as to_string prints them), one out-of-line call per piece, so a
/// throw site holds no string code of its own. A message longer than 1 KiB
/// is cut there.
class message {
public:
    message() noexcept = default;
    TYPEFLOW_NOINLINE message& operator<<(std::string_view s) noexcept {
        const std::size_t k = s.size() < cap - n_ ? s.size() : cap - n_;
        if (k) std::memcpy(buf_ + n_, s.data(), k);
        n_ += k;
        return *this;
    }
    message& operator<<(const char* s) noexcept { return *this << std::string_view(s); }
    TYPEFLOW_NOINLINE message& operator<<(long long v) noexcept {
        char t[20];
        const char* p = print_integer(v, t + sizeof t);
        return *this << std::string_view(p, static_cast<std::size_t>(t + sizeof t - p));
    }
    message& operator<<(int v) noexcept { return *this << static_cast<long long>(v); }
    message& operator<<(long v) noexcept { return *this << static_cast<long long>(v); }
    message& operator<<(unsigned v) noexcept { return *this << static_cast<long long>(v); }
    message& operator<<(unsigned long v) noexcept { return *this << static_cast<long long>(v); }
    message& operator<<(unsigned long long v) noexcept { return *this << static_cast<long long>(v); }
    TYPEFLOW_NOINLINE message& operator<<(const dims& d) noexcept {
        char b[dims_chars];
        return *this << std::string_view(b, print_dims(d, b));
    }
    std::string_view view() const noexcept { return {buf_, n_}; }

private:
    static constexpr std::size_t cap = 1024;
    char buf_[cap];
    std::size_t n_ = 0;
};

/// Throws a tf::error with message m.
[[noreturn]] TYPEFLOW_NOINLINE inline void raise(const message& m) { throw error(std::string(m.view())); }

}  // namespace typeflow::detail
