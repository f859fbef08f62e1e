// typeflow/data/impl/mnist.ipp — finding the MNIST-format files (see data/mnist.hpp): inline in
// header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION (typeflow/src.hpp).
#pragma once
#include <sys/stat.h>

#include <typeflow/data/mnist.hpp>

namespace typeflow::data {

namespace detail {
TYPEFLOW_DECL bool file_exists(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
/// dir/name, or dir/name.gz when only that exists; empty when neither does.
TYPEFLOW_DECL std::string find_idx(const std::string& dir, const char* name) {
    const std::string p = dir + "/" + name;
    if (file_exists(p)) return p;
    if (file_exists(p + ".gz")) return p + ".gz";
    return {};
}
}  // namespace detail

TYPEFLOW_DECL bool mnist_available(const std::string& dir) {
    for (const char* name : detail::mnist_files) {
        const std::string p = detail::find_idx(dir, name);
        if (p.empty() || (detail::has_gz_suffix(p) && !gzip_supported)) return false;
    }
    return true;
}

TYPEFLOW_DECL bool fashion_mnist_available(const std::string& dir) { return mnist_available(dir); }

}  // namespace typeflow::data
