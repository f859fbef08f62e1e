// typeflow/core/device_mirror.hpp — the copy of a host-owned value (a
// variable's) in the memory of a device that has memory of its own (a GPU).
#pragma once
#include <cstddef>

namespace typeflow::detail {

/// A value's copy in device memory, kept coherent with its host storage: the
/// runtime reads and writes the device copy, host reads pull the newer device
/// value first, host writes make the device copy stale. Owned by the value's
/// state; the functions come from the device's memory space.
struct device_mirror {
    void* dev = nullptr;
    void* next = nullptr;  // where an assign computes the next value (swapped in when the run commits)
    std::size_t bytes = 0;
    void (*free_fn)(void*, std::size_t) noexcept = nullptr;
    void (*download_fn)(void* host, const void* dev, std::size_t bytes) = nullptr;
    bool host_stale = false;   // the device copy is newer than the host storage
    bool device_stale = true;  // the host storage is newer than the device copy

    device_mirror() = default;
    device_mirror(const device_mirror&) = delete;
    device_mirror& operator=(const device_mirror&) = delete;
    ~device_mirror() {
        if (dev) free_fn(dev, bytes);
        if (next) free_fn(next, bytes);
    }
    /// Brings the host storage up to date (a download when the device copy is newer).
    void pull(void* host) {
        if (host_stale && dev) {
            download_fn(host, dev, bytes);
            host_stale = false;
        }
    }
};

}  // namespace typeflow::detail
