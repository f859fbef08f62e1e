// typeflow/core/device.hpp — device tags: where a tensor lives and an op runs.
#pragma once
#include <string>

namespace typeflow {

/// The host CPU (the default device).
struct cpu {
    static constexpr int index = -1;
    static std::string name() { return "cpu"; }
};

/// The N-th CUDA GPU. Only a CUDA build can run nodes placed here.
template <int N>
struct gpu {
    static_assert(N >= 0, "typeflow: gpu<N> needs a non-negative device index");
    static constexpr int index = N;
    static std::string name() { return "gpu:" + std::to_string(N); }
};

/// The reference device: host memory, kernels that are naive loops. Tests run
/// graphs on it beside `cpu` and compare (as TensorFlow tests every kernel on
/// every device).
struct reference {
    static constexpr int index = -2;
    static std::string name() { return "reference"; }
};

template <class D>
inline constexpr bool is_device_v = false;
template <>
inline constexpr bool is_device_v<cpu> = true;
template <>
inline constexpr bool is_device_v<reference> = true;
template <int N>
inline constexpr bool is_device_v<gpu<N>> = true;

/// True when a device's tensors live in host memory (a transfer between two
/// such devices is a copy in host memory).
template <class D>
inline constexpr bool host_memory_v = true;
template <int N>
inline constexpr bool host_memory_v<gpu<N>> = false;

/// Satisfied by `cpu`, `reference` and `gpu<N>`.
template <class D>
concept device_c = is_device_v<D>;

}  // namespace typeflow
