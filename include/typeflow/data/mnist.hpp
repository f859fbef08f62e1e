// typeflow/data/mnist.hpp — MNIST-format data sets (MNIST, Fashion-MNIST):
// the train and test splits of a folder of IDX files, e.g. the one Debian's
// package dataset-fashion-mnist installs.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>


#include <typeflow/core/message.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/data/file.hpp>
#include <typeflow/data/idx.hpp>

namespace typeflow::data {

/// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST.
inline constexpr const char* fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

/// The extents of the images a loader returns.
enum class image_layout {
    nhwc,  ///< [N, 28, 28, 1]: a channel axis, as convolutions take it
    nhw,   ///< [N, 28, 28]
    flat,  ///< [N, 784]: one row per image, as a dense layer takes it
};

/// How to load MNIST-format images.
struct mnist_options {
    /// Floating-point images are divided by 255 (values in [0, 1]);
    /// otherwise pixels keep their values 0..255.
    bool scale = true;
    /// The extents of the images.
    image_layout layout = image_layout::nhwc;
};

/// One split: images of T (tf::tensor has no uint8: use int32 for the raw
/// bytes, or float/double) and labels (int32, 0..9).
template <value_type_c T = float>
struct mnist_split {
    tensor<T> images;
    tensor<std::int32_t> labels;
};

/// The train and test splits of an MNIST-format data set.
template <value_type_c T = float>
struct mnist_data {
    mnist_split<T> train, test;
};

namespace detail {
/// True when p is a regular file.
TYPEFLOW_DECL bool file_exists(const std::string& p);
/// dir/name, or dir/name.gz when only that exists; empty when neither does.
TYPEFLOW_DECL std::string find_idx(const std::string& dir, const char* name);
inline constexpr const char* mnist_files[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
}  // namespace detail

/// Loads one split from an images file (u8, [N, rows, cols]) and a labels
/// file (u8, [N], values 0..9). A file of another type, extents or label
/// range is a tf::error naming it (and the record, for a bad label).
template <value_type_c T = float>
mnist_split<T> load_mnist_split(const std::string& images_path, const std::string& labels_path,
                                const mnist_options& o = {}) {
    idx_header hi, hl;
    mnist_split<T> s{detail::read_idx_with_header<T>(images_path, hi),
                     detail::read_idx_with_header<std::int32_t>(labels_path, hl)};
    if (hi.type != idx_type::u8 || hi.extents.rank != 3)
        typeflow::detail::raise(typeflow::detail::message()
                                << "data::load_mnist: '" << images_path << "' holds " << idx_type_name(hi.type)
                                << " extents " << hi.extents << " where MNIST images are u8 [N,rows,cols]");
    if (hl.type != idx_type::u8 || hl.extents.rank != 1 || hl.extents[0] != hi.extents[0])
        typeflow::detail::raise(typeflow::detail::message()
                                << "data::load_mnist: '" << labels_path << "' holds " << idx_type_name(hl.type)
                                << " extents " << hl.extents << " where the labels of '" << images_path << "' are u8 ["
                                << hi.extents[0] << "]");
    for (index_t i = 0; i < s.labels.size(); ++i)
        if (s.labels[i] < 0 || s.labels[i] > 9)
            typeflow::detail::raise(typeflow::detail::message()
                                    << "data::load_mnist: '" << labels_path << "': label " << s.labels[i]
                                    << " of record " << i << " (byte offset " << static_cast<long long>(hl.data_offset) + i
                                    << ") is outside 0..9");
    if constexpr (std::is_floating_point_v<T>)
        if (o.scale)
            for (index_t i = 0; i < s.images.size(); ++i) s.images[i] /= T(255);
    const index_t n = hi.extents[0], r = hi.extents[1], c = hi.extents[2];
    switch (o.layout) {
        case image_layout::nhwc: s.images = s.images.reshaped(dims{n, r, c, 1}); break;
        case image_layout::nhw: break;
        case image_layout::flat: s.images = s.images.reshaped(dims{n, r * c}); break;
    }
    return s;
}

/// True when dir holds the four MNIST-format files (each plain or .gz) and
/// this build can read them (a .gz file needs gzip_supported).
TYPEFLOW_DECL bool mnist_available(const std::string& dir);

/// Loads the train and test splits of a folder in the MNIST layout
/// (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
/// t10k-labels-idx1-ubyte, each plain or .gz). A missing file is a tf::error
/// naming it.
template <value_type_c T = float>
mnist_data<T> load_mnist(const std::string& dir, const mnist_options& o = {}) {
    std::string p[4];
    for (int i = 0; i < 4; ++i) {
        p[i] = detail::find_idx(dir, detail::mnist_files[i]);
        if (p[i].empty())
            typeflow::detail::raise(typeflow::detail::message()
                                    << "data::load_mnist: neither '" << dir << "/" << detail::mnist_files[i]
                                    << "' nor its .gz exists");
    }
    return {load_mnist_split<T>(p[0], p[1], o), load_mnist_split<T>(p[2], p[3], o)};
}

/// Loads Fashion-MNIST (60000 train and 10000 test images of 28x28, labels
/// 0..9) from dir, by default where Debian's dataset-fashion-mnist puts it.
template <value_type_c T = float>
mnist_data<T> load_fashion_mnist(const mnist_options& o = {}, const std::string& dir = fashion_mnist_dir) {
    return load_mnist<T>(dir, o);
}

/// True when load_fashion_mnist(dir) can read the files.
TYPEFLOW_DECL bool fashion_mnist_available(const std::string& dir = fashion_mnist_dir);

}  // namespace typeflow::data

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/data/impl/mnist.ipp>
#endif
