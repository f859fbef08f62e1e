// What the CUDA tests compare with: tolerances per dtype and an elementwise check.
#pragma once
#include <catch2/catch.hpp>

#include "../support.hpp"

#include <typeflow/core/tensor.hpp>

#include <string>

namespace tftest {
namespace tf = typeflow;

template <class T>
double rtol_of() {
    return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

// The GPU's result against the reference's (support.hpp's expect_tensors_close).
template <class T>
void expect_close(const std::string& what, const tf::tensor<T>& got, const tf::tensor<T>& want, double rtol) {
    expect_tensors_close(what, got, want, rtol, "gpu", "want");
}

}  // namespace tftest
