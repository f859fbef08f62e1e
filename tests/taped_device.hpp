// A test device (tests/test_replay.cpp, tests/test_epilogue.cpp) with
// memory of its own whose queued work can be recorded and replayed, as a
// GPU's stream into a CUDA graph: while the runtime records, the work its
// kernels, regions and copies queue goes into a tape instead of being done,
// and a replay does the tape again with the pointers and arguments it
// recorded. Kernels are the reference backend's; its matmul also offers the
// bias and ReLU epilogue (kernel::run_epilogue), counted.
#pragma once
#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tftest {
namespace tf = typeflow;
/// A device with memory of its own whose work can be recorded and replayed.
struct taped {
    static constexpr int index = -7;
    static std::string name() { return "taped"; }
};
struct tape {
    std::vector<std::function<void()>> work;
};
struct taped_state {
    bool recording = false;
    bool broken = false;        // work the device cannot record was queued while recording
    bool refuse = false;        // begin_recording says no
    bool fail_end = false;      // end_recording fails
    tape* current = nullptr;
    int recordings = 0, replays = 0, dropped = 0, live_tapes = 0;
    int epilogues = 0;       // matmuls run with their bias (and ReLU)
    int relu_epilogues = 0;  // ... of which with the ReLU
    int grad_epilogues = 0;  // matmuls run with the sums of their second operand's rows
    int entered = 0, max_entered = 0;
    std::set<void*> live;
    std::recursive_mutex gate;
};
inline taped_state& tp() {
    static taped_state s;
    return s;
}
inline void reset_taped() {
    taped_state& s = tp();
    s.recording = s.broken = s.refuse = s.fail_end = false;
    s.recordings = s.replays = s.dropped = 0;
    s.epilogues = s.relu_epilogues = s.grad_epilogues = 0;
    s.max_entered = 0;
}
/// Work queued on the device: done now, or recorded.
inline void queue(std::function<void()> f) {
    if (tp().recording) tp().current->work.push_back(std::move(f));
    else f();
}
// Blocks of at least 64 KiB, reused last freed first: an arena re-planned for
// other extents gets the same addresses, as a caching allocator's often does.
struct block_pool {
    std::vector<std::pair<void*, std::size_t>> blocks;
    ~block_pool() {
        for (auto& b : blocks) std::free(b.first);
    }
};
inline std::vector<std::pair<void*, std::size_t>>& tp_pool() {
    static block_pool free_blocks;  // returned to the system at exit
    return free_blocks.blocks;
}
inline std::map<void*, std::size_t>& tp_caps() {
    static std::map<void*, std::size_t> caps;
    return caps;
}
inline void* tp_allocate(std::size_t bytes) {
    const std::size_t cap = std::max<std::size_t>(bytes, std::size_t{1} << 16);
    auto& pool = tp_pool();
    for (std::size_t k = pool.size(); k > 0; --k)
        if (pool[k - 1].second >= bytes) {
            void* p = pool[k - 1].first;
            pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(k - 1));
            std::memset(p, 0x5A, bytes);
            tp().live.insert(p);
            return p;
        }
    void* p = std::malloc(cap);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0x5A, cap);
    tp_caps()[p] = cap;
    tp().live.insert(p);
    return p;
}
inline void tp_free(void* p, std::size_t) noexcept {
    tp().live.erase(p);
    tp_pool().emplace_back(p, tp_caps()[p]);
}
inline void tp_zero(void* p, std::size_t bytes) {
    queue([=] { std::memset(p, 0, bytes); });
}
// host memory in a copy cannot be recorded (it may change or go before the replay): a CUDA
// capture of a pageable copy, or of a wait for the stream, fails the same way
inline void tp_upload(void* d, const void* h, std::size_t bytes) {
    if (tp().recording) tp().broken = true;
    std::memcpy(d, h, bytes);
}
inline void tp_download(void* h, const void* d, std::size_t bytes) {
    if (tp().recording) tp().broken = true;
    std::memcpy(h, d, bytes);
}
inline void tp_copy(void* d, const void* s, std::size_t bytes) {
    queue([=] { std::memmove(d, s, bytes); });
}
inline void tp_finish() {
    if (tp().recording) tp().broken = true;
}
inline void tp_enter() {
    tp().gate.lock();
    tp().max_entered = std::max(tp().max_entered, ++tp().entered);
}
inline void tp_leave() noexcept {
    --tp().entered;
    tp().gate.unlock();
}
inline bool tp_begin() {
    if (tp().refuse) return false;
    tp().recording = true;
    tp().broken = false;
    tp().current = new tape;
    ++tp().live_tapes;
    return true;
}
inline void* tp_end(bool keep) noexcept {
    taped_state& s = tp();
    s.recording = false;
    tape* t = s.current;
    s.current = nullptr;
    if (!keep || s.broken || s.fail_end) {
        delete t;
        --s.live_tapes;
        return nullptr;
    }
    ++s.recordings;
    return t;
}
inline void tp_replay(void* r) {
    ++tp().replays;
    for (auto& f : static_cast<tape*>(r)->work) f();
}
inline void tp_drop(void* r) noexcept {
    ++tp().dropped;
    --tp().live_tapes;
    delete static_cast<tape*>(r);
}
}  // namespace tftest

namespace typeflow {
template <>
inline constexpr bool is_device_v<tftest::taped> = true;
template <>
inline constexpr bool host_memory_v<tftest::taped> = false;
template <>
struct device_memory<tftest::taped> {
    static constexpr memory_space value{"taped",           &tftest::tp_allocate, &tftest::tp_free,   &tftest::tp_zero,
                                        false,             &tftest::tp_upload,   &tftest::tp_download, &tftest::tp_copy,
                                        &tftest::tp_finish, &tftest::tp_enter,   &tftest::tp_leave,  &tftest::tp_begin,
                                        &tftest::tp_end,   &tftest::tp_replay,   &tftest::tp_drop};
};
/// Regions: the reference evaluator, queued with a copy of this run's operand pointers.
template <>
struct fused<tftest::taped> {
    template <class Canon, class T>
    static void eval(const region::layout& lay, const void* const* base, void* out, const parallel_ctx& par) {
        std::vector<const void*> b(base, base + lay.operands.size());
        tftest::queue([&lay, b, out, par] { fused<reference>::eval<Canon, T>(lay, b.data(), out, par); });
    }
};
/// Kernels: the reference kernels, queued with a copy of what their context points to.
template <class Op>
struct kernel<tftest::taped, Op> : kernel<reference, Op> {
    template <class N, class Ctx>
    static void run(const N&, const Ctx& ctx, value_type_t<N>* out) {
        constexpr std::size_t A = meta::children_t<N>::size;
        constexpr std::size_t O = outputs_of_v<Op>;
        struct frame {
            std::array<const void*, A + 1> in{};
            std::array<dims, A + 1> d{};
            std::array<const dims*, A + 1> dp{};
            std::array<void*, O> outs{};
            kernel_ctx ctx{nullptr, nullptr};
        };
        auto f = std::make_shared<frame>();
        for (std::size_t j = 0; j < A; ++j) {
            f->in[j] = ctx.in[j];
            f->d[j] = *ctx.in_dims[j];
            f->dp[j] = &f->d[j];
        }
        for (std::size_t o = 1; o < O; ++o) f->outs[o - 1] = ctx.outs[o - 1];
        f->ctx = kernel_ctx{f->in.data(), f->dp.data(), ctx.work, ctx.st, ctx.par, f->outs.data()};
        tftest::queue([f, out] { kernel<reference, Op>::run(N{}, f->ctx, out); });
    }
};
template <class From>
    requires host_memory_v<From>
struct kernel<tftest::taped, op::to<tftest::taped, From>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto& a = n.template child<0>();
        tftest::tp_upload(out, ctx.input(a), static_cast<std::size_t>(ctx.dims_of(a).numel()) * sizeof(value_type_t<N>));
    }
};
template <class To>
    requires host_memory_v<To>
struct kernel<To, op::to<To, tftest::taped>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto& a = n.template child<0>();
        tftest::tp_download(out, ctx.input(a), static_cast<std::size_t>(ctx.dims_of(a).numel()) * sizeof(value_type_t<N>));
    }
};
/// The matmul: the reference kernel, and its epilogue as the same element
/// operations as the fused add and relu it replaces.
template <bool TA, bool TB>
struct kernel<tftest::taped, op::matmul<TA, TB>> {
    static constexpr bool bias_grad_epilogue = !TB;
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto a = ctx.input(n.template child<0>());
        const auto b = ctx.input(n.template child<1>());
        const dims da = ctx.dims_of(n.template child<0>()), db = ctx.dims_of(n.template child<1>());
        tftest::queue([=] {
            const dims* d[] = {&da, &db};
            const void* in[] = {a, b};
            kernel<reference, op::matmul<TA, TB>>::run(N{}, kernel_ctx{in, d}, out);
        });
    }
    template <class N, class Ctx>
    static void run_epilogue(const N& n, const Ctx& ctx, value_type_t<N>* out, const epilogue& e) {
        using T = value_type_t<N>;
        run(n, ctx, out);
        if (e.bias_grad) {  // the reference sum_like's loop over the second operand's rows
            ++tftest::tp().grad_epilogues;
            const T* g = ctx.input(n.template child<1>());
            const dims gd = ctx.dims_of(n.template child<1>());
            T* sums = static_cast<T*>(e.bias_grad);
            tftest::queue([=] {
                typeflow::detail::axis_mask rows;
                rows.reduced[0] = true;
                backend::reference::reduce_into<reduction::sum>(g, gd, rows, sums);
            });
            return;
        }
        ++tftest::tp().epilogues;
        tftest::tp().relu_epilogues += e.relu ? 1 : 0;
        const auto z = op::matmul<TA, TB>::sizes_of(ctx.dims_of(n.template child<0>()), ctx.dims_of(n.template child<1>()));
        const T* bias = static_cast<const T*>(e.bias);
        const bool relu = e.relu;
        tftest::queue([=] {
            for (index_t i = 0; i < z.m; ++i)
                for (index_t j = 0; j < z.n; ++j) {
                    const T v = T(out[i * z.n + j] + bias[j]);
                    out[i * z.n + j] = relu ? (v > T(0) ? v : T(0)) : v;
                }
        });
    }
};
}  // namespace typeflow
