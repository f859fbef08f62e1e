#pragma once
// typeflow::dist::staged_collective — collectives on buffers in a device's
// memory (a GPU's) through a host collective: each call copies the device
// buffer to a host staging buffer, runs the host collective (the TCP ring)
// there, and copies the result back. It serves tasks that share one GPU
// (NCCL refuses two ranks on one device) and machines without NCCL.
#include <typeflow/core/dtype.hpp>
#include <typeflow/distributed/collective.hpp>
#include <typeflow/kernel/kernel.hpp>

#include <chrono>
#include <cstddef>
#include <vector>

namespace typeflow::dist {

/// A collective whose buffers live in memory space `device` (for a GPU:
/// `device_memory<gpu<N>>::value`), carried out by `host` on staged copies.
/// Same contract as `collective` (orders, results, errors); `host` must
/// outlive it.
class staged_collective final : public collective {
public:
    staged_collective(collective& host, const memory_space& device) : host_(host), dev_(device) {}

    int rank() const noexcept override { return host_.rank(); }
    int size() const noexcept override { return host_.size(); }

    void all_reduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op) override {
        const std::size_t bytes = count * dtype_size(t);
        std::byte* s = stage(bytes);
        if (bytes) dev_.download(s, in, bytes);
        host_.all_reduce(s, s, count, t, op);
        if (bytes) dev_.upload(out, s, bytes);
        finish();
    }
    void broadcast(void* buf, std::size_t count, dtype t, int root) override {
        const std::size_t bytes = count * dtype_size(t);
        std::byte* s = stage(bytes);
        if (bytes && rank() == root) dev_.download(s, buf, bytes);
        host_.broadcast(s, count, t, root);
        if (bytes && rank() != root) dev_.upload(buf, s, bytes);
        finish();
    }
    void all_gather(const void* in, void* out, std::size_t count, dtype t) override {
        const std::size_t bytes = count * dtype_size(t), n = static_cast<std::size_t>(size());
        std::byte* s = stage(bytes * n);
        std::byte* mine = s + static_cast<std::size_t>(rank()) * bytes;
        if (bytes) dev_.download(mine, in, bytes);
        host_.all_gather(mine, s, count, t);
        if (bytes) dev_.upload(out, s, bytes * n);
        finish();
    }
    void reduce_scatter(const void* in, void* out, std::size_t count, dtype t, reduce_op op) override {
        const std::size_t bytes = count * dtype_size(t), n = static_cast<std::size_t>(size());
        std::byte* s = stage(bytes * n);
        std::byte* mine = s + static_cast<std::size_t>(rank()) * bytes;
        if (bytes) dev_.download(s, in, bytes * n);
        host_.reduce_scatter(s, mine, count, t, op);
        if (bytes) dev_.upload(out, mine, bytes);
        finish();
    }
    void barrier() override { host_.barrier(); }
    void set_timeout(std::chrono::milliseconds t) override { host_.set_timeout(t); }

private:
    std::byte* stage(std::size_t bytes) {
        if (staging_.size() < bytes) staging_.resize(bytes);
        return staging_.data();
    }
    // the uploads are complete before the call returns (the caller may free or reuse the staging's source)
    void finish() {
        if (dev_.finish) dev_.finish();
    }

    collective& host_;
    const memory_space& dev_;
    std::vector<std::byte> staging_;
};

}  // namespace typeflow::dist
