// typeflow/expr/scalar_math.hpp — the scalar functions that element-wise ops
// are written in, usable on the host and (under nvcc) on a CUDA device.
#pragma once
#include <cmath>

#include <typeflow/core/config.hpp>

namespace typeflow::math {

/// e^x.
template <class T>
TYPEFLOW_HOST_DEVICE T exp(T x) {
    using std::exp;
    return exp(x);
}
/// Natural logarithm.
template <class T>
TYPEFLOW_HOST_DEVICE T log(T x) {
    using std::log;
    return log(x);
}
/// Square root.
template <class T>
TYPEFLOW_HOST_DEVICE T sqrt(T x) {
    using std::sqrt;
    return sqrt(x);
}
/// Hyperbolic tangent.
template <class T>
TYPEFLOW_HOST_DEVICE T tanh(T x) {
    using std::tanh;
    return tanh(x);
}
/// Cosine.
template <class T>
TYPEFLOW_HOST_DEVICE T cos(T x) {
    using std::cos;
    return cos(x);
}
/// Sine.
template <class T>
TYPEFLOW_HOST_DEVICE T sin(T x) {
    using std::sin;
    return sin(x);
}
/// x^y.
template <class T>
TYPEFLOW_HOST_DEVICE T pow(T x, T y) {
    using std::pow;
    return pow(x, y);
}
/// 1 / (1 + e^-x), without overflow for large |x|.
template <class T>
TYPEFLOW_HOST_DEVICE T sigmoid(T x) {
    if (x >= T(0)) return T(1) / (T(1) + exp(-x));
    const T e = exp(x);
    return e / (T(1) + e);
}

}  // namespace typeflow::math
