// Helpers shared by the op tests: a seeded generator with our own mapping
// from bits to values, and an element-by-element comparison that reports the
// first difference.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <typeflow/core/tensor.hpp>

namespace tftest {
namespace tf = typeflow;

struct rng_t {
    std::mt19937 g;
    explicit rng_t(std::uint32_t seed) : g(seed) {}
    double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(g()) / 4294967296.0); }
    long long integer(long long lo, long long hi) {
        return lo + static_cast<long long>(g() % static_cast<std::uint32_t>(hi - lo + 1));
    }
    bool coin() { return (g() >> 7) & 1u; }
};

// A tensor of extents d: integers in [ilo, ihi] for integer T, else uniform in [lo, hi).
template <class T>
tf::tensor<T> uniform_tensor(rng_t& r, const tf::dims& d, long long ilo, long long ihi, double lo, double hi) {
    tf::tensor<T> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i)
        t[i] = std::is_integral_v<T> ? static_cast<T>(r.integer(ilo, ihi)) : static_cast<T>(r.uniform(lo, hi));
    return t;
}

inline std::vector<long long> extents(const tf::dims& d) { return std::vector<long long>(d.d.begin(), d.d.begin() + d.rank); }

inline const std::vector<long long>& extents(const std::vector<long long>& e) { return e; }

// Checks shape and values: |got - want| <= atol + rtol * |want|. The expected
// extents are dims or a vector (a braced list means dims).
template <class T, class E = tf::dims>
void expect_values(const std::string& what, const tf::tensor<T>& got, const E& want_dims,
                   const std::vector<double>& want, double rtol = 0, double atol = 0) {
    INFO(what);
    REQUIRE(extents(got.dims()) == extents(want_dims));
    REQUIRE(static_cast<std::size_t>(got.size()) == want.size());
    long long bad = 0, first = -1;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double g = static_cast<double>(got[static_cast<tf::index_t>(i)]);
        if (!(std::abs(g - want[i]) <= atol + rtol * std::abs(want[i]))) {
            if (first < 0) first = static_cast<long long>(i);
            ++bad;
        }
    }
    if (bad) {
        std::ostringstream m;
        m.precision(17);
        m << what << ": " << bad << " of " << want.size() << " elements differ; first at flat index " << first
          << ": got " << static_cast<double>(got[first]) << ", want " << want[static_cast<std::size_t>(first)];
        FAIL_CHECK(m.str());
    } else {
        SUCCEED();
    }
}

// Checks that two tensors agree: same extents and |a - b| <= rtol * max(|a|,
// |b|, 1) elementwise; a failure says how many elements differ and shows the
// first, as `got_name` and `want_name`.
template <class T>
void expect_tensors_close(const std::string& what, const tf::tensor<T>& got, const tf::tensor<T>& want, double rtol,
                          const char* got_name = "got", const char* want_name = "want") {
    INFO(what);
    REQUIRE(extents(got.dims()) == extents(want.dims()));
    long long bad = 0, first = -1;
    for (tf::index_t i = 0; i < got.size(); ++i) {
        const double a = static_cast<double>(got[i]), b = static_cast<double>(want[i]);
        const double scale = std::max({std::abs(a), std::abs(b), 1.0});
        if (!(a == b || std::abs(a - b) <= rtol * scale)) {
            if (first < 0) first = i;
            ++bad;
        }
    }
    if (bad) {
        std::ostringstream m;
        m.precision(17);
        m << what << ": " << bad << " of " << got.size() << " elements differ; first at " << first << ": " << got_name << " "
          << static_cast<double>(got[first]) << ", " << want_name << " " << static_cast<double>(want[first]);
        FAIL_CHECK(m.str());
    }
}

}  // namespace tftest
