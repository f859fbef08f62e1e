// tests/fuzz/fuzz_util.hpp — what the file-reading fuzz targets share: the
// input written to a private temporary file (the readers take paths).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace fuzz {
/// Writes [data, data + size) to this process's file with the given suffix; returns its path.
inline const std::string& write_input(const std::uint8_t* data, std::size_t size, const char* suffix) {
    static const std::string path = [&] {
        const char* dir = std::getenv("TMPDIR");
        return std::string(dir && *dir ? dir : "/tmp") + "/typeflow-fuzz-" + std::to_string(::getpid()) + suffix;
    }();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path;
}
}  // namespace fuzz
