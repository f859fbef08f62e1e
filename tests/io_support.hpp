// Helpers of the tf::io tests: a temporary directory removed at the end, file
// surgery (truncate, flip a byte, patch bytes) and bitwise tensor comparison.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <typeflow/core/tensor.hpp>

namespace iotest {
namespace tf = typeflow;

struct temp_dir {
    std::string path;
    temp_dir() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/typeflow_io_XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
        path = buf.data();
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string operator/(const std::string& f) const { return path + "/" + f; }
};

inline std::string read_file(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
inline void write_file(const std::string& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
inline void truncate_file(const std::string& p, std::size_t n) {
    auto s = read_file(p);
    write_file(p, s.substr(0, n));
}
inline void flip_byte(const std::string& p, std::size_t at) {
    auto s = read_file(p);
    s.at(at) = static_cast<char>(s.at(at) ^ 0x5A);
    write_file(p, s);
}

// Same extents and the same bytes (so NaN payloads and -0.0 count).
template <class T>
bool same_bits(const tf::tensor<T>& a, const tf::tensor<T>& b) {
    return a.dims() == b.dims() &&
           std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0;
}
}  // namespace iotest
