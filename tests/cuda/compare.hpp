// What the CUDA tests compare with: tolerances and an elementwise check
// that reports how many elements differ and the first of them.
#pragma once
#include <catch2/catch.hpp>

#include "../support.hpp"

#include <typeflow/core/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

namespace tftest {
namespace tf = typeflow;

template <class T>
double rtol_of() {
    return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

// |a - b| <= rtol * max(|a|, |b|, 1) elementwise, same extents.
template <class T>
void expect_close(const std::string& what, const tf::tensor<T>& got, const tf::tensor<T>& want, double rtol) {
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
        m << what << ": " << bad << " of " << got.size() << " elements differ; first at " << first << ": gpu "
          << static_cast<double>(got[first]) << ", want " << static_cast<double>(want[first]);
        FAIL_CHECK(m.str());
    }
}

}  // namespace tftest
