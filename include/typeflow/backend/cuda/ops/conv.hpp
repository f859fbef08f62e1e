// typeflow/backend/cuda/ops/conv.hpp — conv2d and its two gradients on a GPU
// through cuDNN (full fp32 or fp64 arithmetic, deterministic algorithms where
// cuDNN's heuristics offer one).
//
// typeflow's layouts are TensorFlow's: NHWC input and HWIO filter. cuDNN
// takes NHWC tensors but its NHWC filters are KRSC ([C_out, KH, KW, C_in]),
// so a filter is transposed on the device (one cuBLAS geam) before the
// forward and input-gradient convolutions, and the filter gradient is
// transposed back. cuDNN pads symmetrically; TensorFlow's SAME padding puts
// the odd row or column after, so such a convolution copies the input into a
// zero-padded buffer (and crops the input gradient out of one). The host-side
// lowering (conv_plan, the pad and crop index maps) is tested without a GPU
// in tests/cuda/test_cuda_host.cu.
#pragma once
#include <cudnn.h>

#include <climits>
#include <cstddef>
#include <string>
#include <string_view>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/expr/ops/conv.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda {

/// Raises a tf::error naming what failed and the cuDNN call, when `st` is not success.
inline void check(cudnnStatus_t st, std::string_view what, const char* call) {
    if (st == CUDNN_STATUS_SUCCESS) return;
    typeflow::detail::raise(typeflow::detail::message() << what << ": " << call << " failed: " << cudnnGetErrorString(st));
}

/// GPU N's cuDNN handle, on the GPU's stream (made on first use).
template <int N>
cudnnHandle_t cudnn() {
    static cudnnHandle_t h = [] {
        device_context& c = context<N>();
        c.activate();
        cudnnHandle_t r = nullptr;
        check(cudnnCreate(&r), "gpu:" + std::to_string(N), "cudnnCreate");
        check(cudnnSetStream(r, c.stream), "gpu:" + std::to_string(N), "cudnnSetStream");
        return r;
    }();
    return h;
}

/// How one typeflow convolution maps onto cuDNN's: cuDNN convolves (cross-
/// correlation) an input [n, hp, wp, c] (NHWC) with a filter [co, kh, kw, c]
/// (KRSC) under symmetric zero padding (pad_h, pad_w) into [n, oh, ow, co].
/// When TensorFlow's padding is not symmetric, explicit_pad is set: the input
/// is copied into a zero-filled [n, hp, wp, c] at (pad_top, pad_left) and
/// cuDNN pads nothing.
struct conv_plan {
    index_t n = 0, h = 0, w = 0, c = 0, kh = 0, kw = 0, co = 0, oh = 0, ow = 0;
    index_t hp = 0, wp = 0, pad_top = 0, pad_left = 0;
    int pad_h = 0, pad_w = 0, sh = 1, sw = 1, dh = 1, dw = 1;
    bool explicit_pad = false;
    /// Elements of the padded input (0 without explicit padding).
    constexpr index_t padded_elements() const { return explicit_pad ? n * hp * wp * c : 0; }
    constexpr index_t filter_elements() const { return kh * kw * c * co; }
};

/// The plan of a convolution of geometry g (conv2d_attrs::geometry).
constexpr conv_plan plan_conv(const typeflow::detail::conv2d_geometry& g) {
    conv_plan p;
    p.n = g.n, p.h = g.h, p.w = g.w, p.c = g.c, p.kh = g.kh, p.kw = g.kw, p.co = g.co, p.oh = g.oh, p.ow = g.ow;
    p.sh = static_cast<int>(g.sh), p.sw = static_cast<int>(g.sw), p.dh = static_cast<int>(g.dh), p.dw = static_cast<int>(g.dw);
    p.pad_top = g.pad_top, p.pad_left = g.pad_left;
    // the input extent the windows span: (out - 1) * stride + dilated kernel
    const auto spanned = [](index_t out, index_t s, index_t k, index_t d) { return out > 0 ? (out - 1) * s + (k - 1) * d + 1 : 0; };
    const index_t need_h = spanned(g.oh, g.sh, g.kh, g.dh), need_w = spanned(g.ow, g.sw, g.kw, g.dw);
    // padding after the input: what the windows reach beyond it (never negative)
    const index_t after_h = need_h - g.h - g.pad_top > 0 ? need_h - g.h - g.pad_top : 0;
    const index_t after_w = need_w - g.w - g.pad_left > 0 ? need_w - g.w - g.pad_left : 0;
    if (after_h == g.pad_top && after_w == g.pad_left) {
        p.hp = g.h, p.wp = g.w;
        p.pad_h = static_cast<int>(g.pad_top), p.pad_w = static_cast<int>(g.pad_left);
    } else {
        p.explicit_pad = true;
        p.hp = g.h + g.pad_top + after_h, p.wp = g.w + g.pad_left + after_w;
    }
    return p;
}

/// Element e of the padded input [n, hp, wp, c]: the index of its source in
/// x [n, h, w, c], or -1 for padding.
TYPEFLOW_HOST_DEVICE inline index_t pad_source(const conv_plan& p, index_t e) {
    const index_t ch = e % p.c, j = (e / p.c) % p.wp, i = (e / (p.c * p.wp)) % p.hp, b = e / (p.c * p.wp * p.hp);
    const index_t ih = i - p.pad_top, iw = j - p.pad_left;
    if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) return -1;
    return ((b * p.h + ih) * p.w + iw) * p.c + ch;
}
/// Element e of x [n, h, w, c]: its index in the padded input.
TYPEFLOW_HOST_DEVICE inline index_t crop_source(const conv_plan& p, index_t e) {
    const index_t ch = e % p.c, iw = (e / p.c) % p.w, ih = (e / (p.c * p.w)) % p.h, b = e / (p.c * p.w * p.h);
    return ((b * p.hp + ih + p.pad_top) * p.wp + iw + p.pad_left) * p.c + ch;
}

namespace detail {
template <class T>
__global__ void pad_kernel(const T* x, T* xp, conv_plan p, index_t count) {
    const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride) {
        const index_t s = pad_source(p, e);
        xp[e] = s < 0 ? T(0) : x[s];
    }
}
template <class T>
__global__ void crop_kernel(const T* xp, T* x, conv_plan p, index_t count) {
    const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride) x[e] = xp[crop_source(p, e)];
}

template <class T>
constexpr cudnnDataType_t cudnn_type() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "typeflow: conv2d on a GPU: float or double");
    return std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

}  // namespace detail

/// What a convolution node keeps across runs on its GPU: the cuDNN
/// descriptors and algorithm for the extents it last ran with, and its
/// device scratch memory (cuDNN's workspace, the KRSC filter, the padded input).
struct conv_state {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t f = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    dims key_x{}, key_f{};
    bool ready = false;
    int algo = 0;
    std::size_t algo_bytes = 0;
    device_scratch scratch;
    conv_plan plan{};

    conv_state() = default;
    conv_state(const conv_state&) = delete;
    conv_state& operator=(const conv_state&) = delete;
    ~conv_state() {
        if (x) (void)cudnnDestroyTensorDescriptor(x);
        if (y) (void)cudnnDestroyTensorDescriptor(y);
        if (f) (void)cudnnDestroyFilterDescriptor(f);
        if (conv) (void)cudnnDestroyConvolutionDescriptor(conv);
    }
};

namespace detail {
enum class conv_pass { forward, input_grad, filter_grad };

/// Sets the state's descriptors for plan p (of dtype T) and picks the pass's
/// algorithm: the first of cuDNN's heuristic ranking that runs in plain FMA
/// arithmetic and is deterministic, else the first that runs.
template <class T, conv_pass Pass>
void prepare(conv_state& s, cudnnHandle_t h, const conv_plan& p, const dims& x, const dims& f, std::string_view what) {
    if (s.ready && s.key_x == x && s.key_f == f) return;
    s.ready = false;
    const auto fits = [](index_t v) { return v >= 0 && v <= INT_MAX; };
    if (!fits(p.n) || !fits(p.c) || !fits(p.hp) || !fits(p.wp) || !fits(p.co) || !fits(p.oh) || !fits(p.ow) ||
        !fits(p.n * p.hp * p.wp * p.c) || !fits(p.n * p.oh * p.ow * p.co))
        typeflow::detail::raise(typeflow::detail::message() << what << ": extents beyond cuDNN's 32-bit sizes");
    constexpr cudnnDataType_t dt = cudnn_type<T>();
    if (!s.x) check(cudnnCreateTensorDescriptor(&s.x), what, "cudnnCreateTensorDescriptor");
    if (!s.y) check(cudnnCreateTensorDescriptor(&s.y), what, "cudnnCreateTensorDescriptor");
    if (!s.f) check(cudnnCreateFilterDescriptor(&s.f), what, "cudnnCreateFilterDescriptor");
    if (!s.conv) check(cudnnCreateConvolutionDescriptor(&s.conv), what, "cudnnCreateConvolutionDescriptor");
    const auto i = [](index_t v) { return static_cast<int>(v); };
    check(cudnnSetTensor4dDescriptor(s.x, CUDNN_TENSOR_NHWC, dt, i(p.n), i(p.c), i(p.hp), i(p.wp)), what,
          "cudnnSetTensor4dDescriptor");
    check(cudnnSetTensor4dDescriptor(s.y, CUDNN_TENSOR_NHWC, dt, i(p.n), i(p.co), i(p.oh), i(p.ow)), what,
          "cudnnSetTensor4dDescriptor");
    check(cudnnSetFilter4dDescriptor(s.f, dt, CUDNN_TENSOR_NHWC, i(p.co), i(p.c), i(p.kh), i(p.kw)), what,
          "cudnnSetFilter4dDescriptor");
    check(cudnnSetConvolution2dDescriptor(s.conv, p.pad_h, p.pad_w, p.sh, p.sw, p.dh, p.dw, CUDNN_CROSS_CORRELATION, dt), what,
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionMathType(s.conv, CUDNN_FMA_MATH), what, "cudnnSetConvolutionMathType");
    const auto choose = [&](const auto* perf, int count) {
        int pick = -1;
        for (int k = 0; k < count && pick < 0; ++k)
            if (perf[k].status == CUDNN_STATUS_SUCCESS && perf[k].mathType == CUDNN_FMA_MATH &&
                perf[k].determinism == CUDNN_DETERMINISTIC)
                pick = k;
        for (int k = 0; k < count && pick < 0; ++k)
            if (perf[k].status == CUDNN_STATUS_SUCCESS) pick = k;
        if (pick < 0) typeflow::detail::raise(typeflow::detail::message() << what << ": cuDNN offers no algorithm for these extents");
        return static_cast<int>(perf[pick].algo);
    };
    constexpr int want = 8;
    int got = 0;
    std::size_t bytes = 0;
    if constexpr (Pass == conv_pass::forward) {
        cudnnConvolutionFwdAlgoPerf_t perf[want];
        check(cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.f, s.conv, s.y, want, &got, perf), what,
              "cudnnGetConvolutionForwardAlgorithm_v7");
        s.algo = choose(perf, got);
        check(cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.f, s.conv, s.y, static_cast<cudnnConvolutionFwdAlgo_t>(s.algo), &bytes),
              what, "cudnnGetConvolutionForwardWorkspaceSize");
    } else if constexpr (Pass == conv_pass::input_grad) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[want];
        check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, s.f, s.y, s.conv, s.x, want, &got, perf), what,
              "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        s.algo = choose(perf, got);
        check(cudnnGetConvolutionBackwardDataWorkspaceSize(h, s.f, s.y, s.conv, s.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(s.algo),
                                                           &bytes),
              what, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[want];
        check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, s.x, s.y, s.conv, s.f, want, &got, perf), what,
              "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        s.algo = choose(perf, got);
        check(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, s.x, s.y, s.conv, s.f,
                                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(s.algo), &bytes),
              what, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    }
    s.algo_bytes = bytes;
    s.plan = p;
    s.key_x = x, s.key_f = f;
    s.ready = true;
}

/// The scratch of a pass: cuDNN's workspace, the KRSC filter (or filter
/// gradient), then the padded input (or padded input gradient).
struct conv_scratch {
    void* work;
    void* filter;
    void* padded;
};
template <class T>
conv_scratch carve(conv_state& s, device_context& c, std::string_view what) {
    const std::size_t a = align_up(s.algo_bytes), b = align_up(static_cast<std::size_t>(s.plan.filter_elements()) * sizeof(T)),
                      d = align_up(static_cast<std::size_t>(s.plan.padded_elements()) * sizeof(T));
    char* base = static_cast<char*>(s.scratch.reserve(c, a + b + d == 0 ? 256 : a + b + d, what));
    return {base, base + a, base + a + b};
}
template <class T>
void pad_into(device_context& c, const T* x, T* xp, const conv_plan& p, std::string_view what) {
    const index_t count = p.padded_elements();
    pad_kernel<T><<<grid_for(static_cast<std::size_t>(count), 256), 256, 0, c.stream>>>(x, xp, p, count);
    check_launch(what);
}
template <class T>
void zero_out(device_context& c, T* out, index_t count, std::string_view what) {
    if (count > 0) check(cudaMemsetAsync(out, 0, static_cast<std::size_t>(count) * sizeof(T), c.stream), what, "cudaMemsetAsync");
}
}  // namespace detail

/// y = conv2d(x, w) for geometry g (x NHWC, w HWIO, y NHWC).
template <int N, class T>
void conv_forward(conv_state& s, const typeflow::detail::conv2d_geometry& g, const dims& xd, const dims& fd, const T* x, const T* w,
                  T* y) {
    constexpr std::string_view what = "conv2d";
    device_context& c = context<N>();
    const conv_plan p = plan_conv(g);
    if (p.n * p.oh * p.ow * p.co == 0) return;
    if (p.h * p.w * p.c == 0 || p.kh * p.kw == 0) return detail::zero_out(c, y, p.n * p.oh * p.ow * p.co, what);
    const cudnnHandle_t h = cudnn<N>();
    detail::prepare<T, detail::conv_pass::forward>(s, h, p, xd, fd, what);
    const detail::conv_scratch sc = detail::carve<T>(s, c, what);
    detail::transpose(c, w, static_cast<T*>(sc.filter), p.kh * p.kw * p.c, p.co, what);
    const T* in = x;
    if (p.explicit_pad) detail::pad_into(c, x, static_cast<T*>(sc.padded), p, what), in = static_cast<const T*>(sc.padded);
    const T one = T(1), zero = T(0);
    launch_count().fetch_add(1, std::memory_order_relaxed);
    check(cudnnConvolutionForward(h, &one, s.x, in, s.f, sc.filter, s.conv, static_cast<cudnnConvolutionFwdAlgo_t>(s.algo), sc.work,
                                  s.algo_bytes, &zero, s.y, y),
          what, "cudnnConvolutionForward");
}

/// dx = conv2d_backprop_input(w, dy) for geometry g.
template <int N, class T>
void conv_input_grad(conv_state& s, const typeflow::detail::conv2d_geometry& g, const dims& xd, const dims& fd, const T* w, const T* dy,
                     T* dx) {
    constexpr std::string_view what = "conv2d_backprop_input";
    device_context& c = context<N>();
    const conv_plan p = plan_conv(g);
    const index_t count = p.n * p.h * p.w * p.c;
    if (count == 0) return;
    if (p.oh * p.ow * p.co == 0 || p.kh * p.kw == 0) return detail::zero_out(c, dx, count, what);
    const cudnnHandle_t h = cudnn<N>();
    detail::prepare<T, detail::conv_pass::input_grad>(s, h, p, xd, fd, what);
    const detail::conv_scratch sc = detail::carve<T>(s, c, what);
    detail::transpose(c, w, static_cast<T*>(sc.filter), p.kh * p.kw * p.c, p.co, what);
    T* target = p.explicit_pad ? static_cast<T*>(sc.padded) : dx;
    const T one = T(1), zero = T(0);
    launch_count().fetch_add(1, std::memory_order_relaxed);
    check(cudnnConvolutionBackwardData(h, &one, s.f, sc.filter, s.y, dy, s.conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(s.algo),
                                       sc.work, s.algo_bytes, &zero, s.x, target),
          what, "cudnnConvolutionBackwardData");
    if (p.explicit_pad) {
        detail::crop_kernel<T><<<grid_for(static_cast<std::size_t>(count), 256), 256, 0, c.stream>>>(target, dx, p, count);
        check_launch(what);
    }
}

/// dw = conv2d_backprop_filter(x, dy) for geometry g (dw HWIO).
template <int N, class T>
void conv_filter_grad(conv_state& s, const typeflow::detail::conv2d_geometry& g, const dims& xd, const dims& fd, const T* x, const T* dy,
                      T* dw) {
    constexpr std::string_view what = "conv2d_backprop_filter";
    device_context& c = context<N>();
    const conv_plan p = plan_conv(g);
    const index_t count = p.filter_elements();
    if (count == 0) return;
    if (p.n * p.oh * p.ow == 0 || p.h * p.w == 0) return detail::zero_out(c, dw, count, what);
    const cudnnHandle_t h = cudnn<N>();
    detail::prepare<T, detail::conv_pass::filter_grad>(s, h, p, xd, fd, what);
    const detail::conv_scratch sc = detail::carve<T>(s, c, what);
    const T* in = x;
    if (p.explicit_pad) detail::pad_into(c, x, static_cast<T*>(sc.padded), p, what), in = static_cast<const T*>(sc.padded);
    const T one = T(1), zero = T(0);
    launch_count().fetch_add(1, std::memory_order_relaxed);
    check(cudnnConvolutionBackwardFilter(h, &one, s.x, in, s.y, dy, s.conv, static_cast<cudnnConvolutionBwdFilterAlgo_t>(s.algo),
                                         sc.work, s.algo_bytes, &zero, s.f, sc.filter),
          what, "cudnnConvolutionBackwardFilter");
    detail::transpose(c, static_cast<const T*>(sc.filter), dw, p.co, p.kh * p.kw * p.c, what);
}

}  // namespace typeflow::cuda

namespace typeflow {

template <int N, index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<gpu<N>, op::conv2d<SH, SW, Pad, DH, DW>> {
    using Op = op::conv2d<SH, SW, Pad, DH, DW>;
    using state = cuda::conv_state;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* y) {
        const dims& x = ctx.dims_of(n.template child<0>());
        const dims& f = ctx.dims_of(n.template child<1>());
        cuda::conv_forward<N>(ctx.template state<state>(), Op::geometry(x, f), x, f, ctx.input(n.template child<0>()),
                              ctx.input(n.template child<1>()), y);
    }
};

template <int N, index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<gpu<N>, op::conv2d_backprop_input<SH, SW, Pad, DH, DW>> {
    using Op = op::conv2d_backprop_input<SH, SW, Pad, DH, DW>;
    using state = cuda::conv_state;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* dx) {
        const dims& x = ctx.dims_of(n.template child<0>());
        const dims& f = ctx.dims_of(n.template child<1>());
        cuda::conv_input_grad<N>(ctx.template state<state>(), Op::geometry(x, f), x, f, ctx.input(n.template child<1>()),
                                 ctx.input(n.template child<2>()), dx);
    }
};

template <int N, index_t SH, index_t SW, padding_mode Pad, index_t DH, index_t DW>
struct kernel<gpu<N>, op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>> {
    using Op = op::conv2d_backprop_filter<SH, SW, Pad, DH, DW>;
    using state = cuda::conv_state;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* dw) {
        const dims& x = ctx.dims_of(n.template child<0>());
        const dims& f = ctx.dims_of(n.template child<1>());
        cuda::conv_filter_grad<N>(ctx.template state<state>(), Op::geometry(x, f), x, f, ctx.input(n.template child<0>()),
                                  ctx.input(n.template child<2>()), dw);
    }
};

}  // namespace typeflow
