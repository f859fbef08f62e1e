// typeflow/kernel/kernel.hpp — the kernel protocol: what the runtime asks of
// a backend, keyed by (device, op).
//
// A backend provides, for its device tag D:
//   - fused<D>: evaluates a fused element-wise region of a canonical form
//     (kernel/region.hpp) from the ops' scalar functors;
//   - kernel<D, Op> for every materialised op (op_kind::kernel) it runs:
//       template <class N, class Ctx> static void run(const N& n, const Ctx& ctx, T* out);
//     `n` is the node's signature (sig_node: its op, element type and children
//     as sig_inputs); `ctx.input(n.child<I>())` gives a child's elements and
//     `ctx.dims_of(...)` its run-time extents. Optionally:
//       static std::size_t workspace_bytes(const Ctx& ctx)  scratch memory the
//         plan reserves for the kernel (ctx.workspace() during run);
//       using state = S;  an object (default-constructed) kept per node across
//         runs of one plan (ctx.state<S>() during run);
//       static void run_epilogue(const N& n, const Ctx& ctx, T* out,
//                                const epilogue& e)  the op's result with a
//         bias along its last axis added, and then a ReLU if e.relu, in the
//         same call (cuBLASLt's epilogues): the plan calls it for a matmul
//         whose only reader is `add(matmul, b)` or `relu(add(matmul, b))`;
//         and, when the kernel says `static constexpr bool bias_grad_epilogue
//         = true`, for a matmul(a, g) whose g is also summed over its rows by
//         a sum_like after it (a dense layer's weight and bias gradients):
//         the sums go to e.bias_grad;
//       static constexpr bool replayable = false;  the kernel's queued work
//         depends on more than its pointers, extents and state (a host
//         counter, a host value read at run time), so a run that holds it is
//         never recorded and replayed (see memory_space::begin_recording).
// The runtime names no backend: it instantiates kernel<D, Op> and fused<D>
// for each node's device, and a node whose op has no kernel for its device is
// a compile-time error naming both.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include <typeflow/core/device.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/core/type_list.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/expr/ops/assign.hpp>

namespace typeflow {

/// What a kernel's run_epilogue adds to its result in the same call: a
/// vector along the result's last axis (its elements in this run), then a
/// ReLU when `relu`; or, with bias_grad, what it computes beside its result.
struct epilogue {
    const void* bias = nullptr;
    bool relu = false;
    void* bias_grad = nullptr;  // or: the sums of the second operand over its rows (its first axis), written here
};

/// Where a device's buffers come from: the plan keeps one arena per memory
/// space for the nodes of the devices that use it.
struct memory_space {
    const char* name;
    void* (*allocate)(std::size_t bytes);         // a block of at least `bytes`, aligned for any dtype
    void (*free)(void* p, std::size_t bytes) noexcept;
    void (*zero)(void* p, std::size_t bytes);     // fills a block with zero bytes
    // A device with memory of its own (host == false) also gives:
    bool host = true;                                                       // the host reads and writes it directly
    void (*upload)(void* dst, const void* host_src, std::size_t bytes) = nullptr;    // host to this space
    void (*download)(void* host_dst, const void* src, std::size_t bytes) = nullptr;  // to host, complete on return
    void (*copy)(void* dst, const void* src, std::size_t bytes) = nullptr;           // within this space
    void (*finish)() = nullptr;  // waits until the work queued on this space is done
    // Optional, for a device whose work is queued (a GPU's stream):
    // enter/leave bracket each run's device work; while one run holds them no
    // other thread queues work on this space (runs and copies do not interleave).
    void (*enter)() = nullptr;
    void (*leave)() noexcept = nullptr;
    // A run's queued work recorded once and replayed (a CUDA graph): between
    // begin_recording (false: cannot record now) and end_recording, queued work
    // is recorded, not done; end_recording(true) gives the recording, or null
    // when it failed; end_recording(false) discards it. replay queues the
    // recorded work again, with the same pointers and arguments; drop frees it.
    bool (*begin_recording)() = nullptr;
    void* (*end_recording)(bool keep) noexcept = nullptr;
    void (*replay)(void* recording) = nullptr;
    void (*drop)(void* recording) noexcept = nullptr;
};

namespace detail {
inline void zero_host(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
inline void* allocate_host(std::size_t bytes) { return allocate_buffer(bytes); }
inline void free_host(void* p, std::size_t bytes) noexcept { free_buffer(p, bytes); }
}  // namespace detail

/// The memory space of Device's tensors (specialised by a backend whose
/// device has memory of its own).
template <class Device>
struct device_memory;
/// Devices whose tensors live in host memory share the host's space.
template <class Device>
    requires host_memory_v<Device>
struct device_memory<Device> {
    static constexpr memory_space value{"host", &detail::allocate_host, &detail::free_host, &detail::zero_host,
                                        true,   nullptr,          nullptr,           nullptr,         nullptr};
};

/// The kernel of op Op on device Device (specialised by backends).
template <class Device, class Op>
struct kernel;

/// The evaluator of fused element-wise regions on Device (specialised by backends).
template <class Device>
struct fused;

/// A locked update runs its inner op's kernel (expr/ops/assign.hpp).
template <class Device, class Inner>
    requires requires { sizeof(kernel<Device, Inner>); }
struct kernel<Device, op::locked_update<Inner>> : kernel<Device, Inner> {};

/// True when this build has a kernel of Op for Device.
template <class Device, class Op>
concept has_kernel = requires { sizeof(kernel<Device, Op>); };

/// True when this build has a backend for Device (it evaluates fused regions).
template <class Device>
concept has_backend = requires { sizeof(fused<Device>); };

namespace diagnostic {
/// First error line when a node's op has no kernel on the node's device.
template <class Op, class Device>
struct no_kernel_for_device;
/// First error line when no backend of this build runs a node's device.
template <class Device, class Node>
struct no_backend_for_device;
}  // namespace diagnostic

/// A child as a kernel or an extent rule sees it: its position among the
/// node's children, its element type and (for extent rules) its static shape.
template <std::size_t I, class T, class S = void>
struct sig_input : detail::expression_base {
    static constexpr std::size_t index = I;
    using value_type = T;
    using shape_type = S;
    using device = void;
};
/// A node as a kernel sees it: its op, its element type and its children as
/// sig_inputs, and nothing of the subgraph below. Nodes with one signature
/// (the layers of an MLP, the steps of a chain) share one kernel instance.
template <class Op, class T, class... In>
struct sig_node : detail::expression_base {
    using op = Op;
    using value_type = T;
    using shape_type = void;
    using device = void;
    using children_list = meta::list<In...>;
    template <std::size_t I>
    static constexpr meta::at_t<I, In...> child() noexcept {
        return {};
    }
};

/// The parallelism a backend may use for one kernel: a fork-join over the
/// session's threads (see runtime/thread_pool.hpp). With one thread, `run`
/// calls f(0, n) on the caller's thread.
struct parallel_ctx {
    int threads = 1;
    void* pool = nullptr;
    void (*run_fn)(void* pool, std::size_t tasks, void (*task)(void*, std::size_t), void* arg) = nullptr;

    /// Calls f(task) for task in [0, tasks) on up to `threads` threads and waits.
    template <class F>
    void for_each_task(std::size_t tasks, F&& f) const {
        if (tasks == 0) return;
        if (threads <= 1 || tasks == 1 || !run_fn) {
            for (std::size_t t = 0; t < tasks; ++t) f(t);
            return;
        }
        using Fn = std::remove_reference_t<F>;
        run_fn(pool, tasks, [](void* a, std::size_t t) { (*static_cast<Fn*>(a))(t); }, const_cast<void*>(static_cast<const void*>(&f)));
    }
    /// Splits [0, n) into at most `threads` contiguous ranges of at least
    /// `grain` elements (a fixed split for a given thread count) and calls
    /// f(part, begin, end) for each (part < threads).
    template <class F>
    void for_range(index_t n, index_t grain, F&& f) const {
        const index_t max_parts = grain > 0 ? (n + grain - 1) / grain : n;
        const index_t parts = std::max<index_t>(1, std::min<index_t>(threads, max_parts));
        for_each_task(static_cast<std::size_t>(parts), [&](std::size_t t) {
            const index_t b = n * static_cast<index_t>(t) / parts, e = n * static_cast<index_t>(t + 1) / parts;
            if (b < e) f(t, b, e);
        });
    }
};

/// What a kernel sees of its node's children and of the run: ctx.input(child),
/// ctx.dims_of(child), ctx.workspace(), ctx.state<S>(), ctx.par.
struct kernel_ctx {
    const void* const* in;
    const dims* const* in_dims;
    void* work = nullptr;    // the kernel's workspace in this run
    void* st = nullptr;      // the node's persistent state
    parallel_ctx par{};
    void* const* outs = nullptr;  // outputs 1.. of a multi-output op

    /// Elements of a child in this run.
    template <std::size_t I, class T, class S>
    const T* input(const sig_input<I, T, S>&) const noexcept {
        return static_cast<const T*>(in[I]);
    }
    /// Run-time extents of a child.
    template <std::size_t I, class T, class S>
    const dims& dims_of(const sig_input<I, T, S>&) const noexcept {
        return *in_dims[I];
    }
    /// Output k (k >= 1) of a multi-output op's node (output 0 is `out`).
    void* output(std::size_t k) const noexcept { return outs[k - 1]; }
    /// The workspace the kernel asked for (workspace_bytes), suitably aligned.
    void* workspace() const noexcept { return work; }
    /// The node's state object (the kernel's `state` type), kept across runs.
    template <class S>
    S& state() const noexcept {
        return *static_cast<S*>(st);
    }
};

}  // namespace typeflow
