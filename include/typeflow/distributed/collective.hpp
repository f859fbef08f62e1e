#pragma once
// typeflow::dist::collective — the collective-communication interface.
// Implementations: ring_collective (CPU buffers over the TCP transport);
// for GPU buffers nccl_collective (NCCL) and staged_collective (through a
// host collective), chosen by device_collective (nccl_collective.hpp).

#include <typeflow/distributed/reduce_op.hpp>

#include <chrono>
#include <cstddef>
#include <span>

namespace typeflow::dist {

/// Collective operations over the tasks of a communicator. Every task must
/// call the same collectives in the same order with the same counts, dtypes,
/// reductions and roots; a mismatch fails every task with an `error`.
/// Results are bitwise identical on every task and from run to run.
/// Buffers are raw (pointer, element count, dtype); `in == out` is in place.
/// The dtype is the library's (typeflow::dtype, a tensor's dtype()); bool
/// buffers reduce with max (any) and min (all) only.
class collective {
public:
    virtual ~collective() = default;

    virtual int rank() const noexcept = 0;
    virtual int size() const noexcept = 0;

    /// out[i] = reduction over tasks of in[i], for i < count.
    virtual void all_reduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op) = 0;
    /// buf on every task = buf on `root`.
    virtual void broadcast(void* buf, std::size_t count, dtype t, int root) = 0;
    /// out[k*count + i] = in[i] of task k; `out` holds size()*count elements.
    /// In place when in == out + rank()*count.
    virtual void all_gather(const void* in, void* out, std::size_t count, dtype t) = 0;
    /// out[i] = reduction over tasks of in[rank()*count + i]; `in` holds
    /// size()*count elements. In place when out == in + rank()*count.
    virtual void reduce_scatter(const void* in, void* out, std::size_t count, dtype t, reduce_op op) = 0;
    /// Returns once every task has entered.
    virtual void barrier() = 0;

    /// Deadline of each later call (default: transport_options::op_timeout);
    /// `t` must be within op_timeout's range, 1 ms .. 2^31 - 1 ms, else `error`.
    virtual void set_timeout(std::chrono::milliseconds t) = 0;

    // Typed conveniences.
    template <class T> void all_reduce(std::span<T> data, reduce_op op = reduce_op::sum) {
        all_reduce(data.data(), data.data(), data.size(), dtype_of<T>, op);
    }
    template <class T> void all_reduce(std::span<const T> in, std::span<T> out, reduce_op op = reduce_op::sum) {
        all_reduce(in.data(), out.data(), in.size(), dtype_of<T>, op);
    }
    template <class T> void broadcast(std::span<T> data, int root) { broadcast(data.data(), data.size(), dtype_of<T>, root); }
};

} // namespace typeflow::dist
