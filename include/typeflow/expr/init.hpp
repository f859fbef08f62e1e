// typeflow/expr/init.hpp — variable initialisers (seedable and reproducible).
#pragma once
#include <vector>
#include <cmath>
#include <cstdint>
#include <random>
#include <string_view>

#include <typeflow/core/tensor.hpp>

namespace typeflow::init {

/// Seed used when an initialiser is given none: derived from the variable's
/// name, so a variable starts from the same values in every run and build.
inline std::uint64_t seed_from_name(std::string_view name) noexcept {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

namespace detail {
// The engine's output sequence is fixed by the C++ standard; the maps from bits
// to distributions below are ours, so values are identical on every platform.
struct rng {
    std::mt19937_64 e;
    explicit rng(std::uint64_t s) : e(s) {}
    double uniform01() { return static_cast<double>(e() >> 11) * 0x1.0p-53; }  // [0, 1)
    double normal() {  // Box-Muller
        double u1 = uniform01();
        while (u1 <= 0.0) u1 = uniform01();
        const double u2 = uniform01();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    double truncated_normal() {  // resampled beyond two standard deviations
        for (;;) {
            const double z = normal();
            if (std::abs(z) <= 2.0) return z;
        }
    }
};
// Fan-in and fan-out as Keras computes them ([in, out], or kernels [..., in, out]).
inline void fans(const dims& d, double& fan_in, double& fan_out) {
    if (d.rank == 0) { fan_in = fan_out = 1; return; }
    if (d.rank == 1) { fan_in = fan_out = static_cast<double>(d[0]); return; }
    double receptive = 1;
    for (std::size_t i = 0; i + 2 < d.rank; ++i) receptive *= static_cast<double>(d[i]);
    fan_in = static_cast<double>(d[d.rank - 2]) * receptive;
    fan_out = static_cast<double>(d[d.rank - 1]) * receptive;
}
inline std::uint64_t pick_seed(std::uint64_t seed, std::string_view name) {
    return seed ? seed : seed_from_name(name);
}
template <class T, class F>
void fill(tensor<T>& t, F f) {
    for (index_t i = 0; i < t.size(); ++i) t[i] = static_cast<T>(f());
}
}  // namespace detail

/// All zeros.
struct zeros {
    template <class T>
    void operator()(tensor<T>&, std::string_view) const {}
};
/// All ones.
struct ones {
    template <class T>
    void operator()(tensor<T>& t, std::string_view) const {
        detail::fill(t, [] { return 1; });
    }
};
/// Every element equal to `value`.
struct constant {
    double value = 0;
    template <class T>
    void operator()(tensor<T>& t, std::string_view) const {
        detail::fill(t, [v = value] { return v; });
    }
};
/// Uniform on [low, high). seed 0 means "derive from the variable's name".
struct uniform {
    double low = -0.05, high = 0.05;
    std::uint64_t seed = 0;
    template <class T>
    void operator()(tensor<T>& t, std::string_view name) const {
        detail::rng r(detail::pick_seed(seed, name));
        detail::fill(t, [&] { return low + (high - low) * r.uniform01(); });
    }
};
/// Normal with the given mean and standard deviation.
struct normal {
    double mean = 0, stddev = 1;
    std::uint64_t seed = 0;
    template <class T>
    void operator()(tensor<T>& t, std::string_view name) const {
        detail::rng r(detail::pick_seed(seed, name));
        detail::fill(t, [&] { return mean + stddev * r.normal(); });
    }
};
/// Glorot (Xavier) uniform: U(-l, l) with l = sqrt(6 / (fan_in + fan_out)).
struct glorot_uniform {
    std::uint64_t seed = 0;
    template <class T>
    void operator()(tensor<T>& t, std::string_view name) const {
        double fi, fo;
        detail::fans(t.dims(), fi, fo);
        const double l = std::sqrt(6.0 / (fi + fo));
        detail::rng r(detail::pick_seed(seed, name));
        detail::fill(t, [&] { return -l + 2 * l * r.uniform01(); });
    }
};
/// He normal: truncated normal (at 2 sd) with standard deviation sqrt(2 / fan_in).
struct he_normal {
    std::uint64_t seed = 0;
    template <class T>
    void operator()(tensor<T>& t, std::string_view name) const {
        double fi, fo;
        detail::fans(t.dims(), fi, fo);
        // 0.8796... is the standard deviation of a unit normal truncated at 2 sd
        const double sd = std::sqrt(2.0 / fi) / 0.87962566103423978;
        detail::rng r(detail::pick_seed(seed, name));
        detail::fill(t, [&] { return sd * r.truncated_normal(); });
    }
};

/// Orthogonal (Keras' default for recurrent kernels): the matrix [rows, cols]
/// (rows: the product of all extents but the last) has orthonormal columns,
/// or rows when there are fewer rows than columns, times `gain`: the Q of a
/// QR decomposition of a normal matrix, with R's diagonal made positive.
struct orthogonal {
    double gain = 1.0;
    std::uint64_t seed = 0;
    template <class T>
    void operator()(tensor<T>& t, std::string_view name) const {
        const dims d = t.dims();
        const index_t cols = d.rank ? d[d.rank - 1] : 1;
        const index_t rows = cols ? t.size() / cols : 0;
        // Gram-Schmidt on the columns of a tall normal matrix [m, n], m >= n
        const index_t m = rows > cols ? rows : cols, n = rows > cols ? cols : rows;
        std::vector<double> q(static_cast<std::size_t>(m * n));
        detail::rng r(detail::pick_seed(seed, name));
        for (double& e : q) e = r.normal();
        for (index_t j = 0; j < n; ++j) {
            for (index_t k = 0; k < j; ++k) {
                double dot = 0;
                for (index_t i = 0; i < m; ++i) dot += q[static_cast<std::size_t>(i * n + j)] * q[static_cast<std::size_t>(i * n + k)];
                for (index_t i = 0; i < m; ++i) q[static_cast<std::size_t>(i * n + j)] -= dot * q[static_cast<std::size_t>(i * n + k)];
            }
            double norm = 0;
            for (index_t i = 0; i < m; ++i) norm += q[static_cast<std::size_t>(i * n + j)] * q[static_cast<std::size_t>(i * n + j)];
            norm = std::sqrt(norm);
            for (index_t i = 0; i < m; ++i) q[static_cast<std::size_t>(i * n + j)] /= norm;
        }
        // [rows, cols]: q itself, or its transpose when rows < cols
        for (index_t i = 0; i < rows; ++i)
            for (index_t j = 0; j < cols; ++j)
                t[i * cols + j] = static_cast<T>(gain * (rows >= cols ? q[static_cast<std::size_t>(i * n + j)]
                                                                      : q[static_cast<std::size_t>(j * n + i)]));
    }
};

}  // namespace typeflow::init
