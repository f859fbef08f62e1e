// The CUDA backend's convolution and pooling lowering, tested without a GPU.
//
// Pooling: a test device in host memory whose pooling kernels are the GPU
// kernels' element functions (cuda::pool::element) run on the host; its
// results must match the CPU backend's.
//
// Convolution: cuDNN cannot run here, so the test runs the rest of the GPU
// path on the host — the plan (cuda::plan_conv: symmetric padding for cuDNN
// or an explicitly padded input), the filter transposition HWIO -> KRSC, the
// pad and crop index maps — around naive loops that compute what cuDNN's
// documentation defines (NHWC cross-correlation with a KRSC filter and
// symmetric zero padding), and compares with the CPU backend's conv2d and
// its gradients.
#include <catch2/catch.hpp>

#include "../support.hpp"
#include "compare.hpp"
#include "graphs.hpp"

#include <typeflow/typeflow.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace tftest {
/// Host memory; pooling through the GPU kernels' element functions.
struct pooled {
    static constexpr int index = -5;
    static std::string name() { return "pooled"; }
};
}  // namespace tftest

namespace typeflow {
template <>
inline constexpr bool is_device_v<tftest::pooled> = true;
template <>
struct fused<tftest::pooled> : fused<reference> {};
template <class Op>
struct kernel<tftest::pooled, Op> : kernel<reference, Op> {};
}  // namespace typeflow

namespace tftest {
// Every element of a pooling op of kind K, on the host, as a GPU thread computes it.
template <tf::cuda::pool::kind K, class Op, bool OutIsInput, bool TwoInputs>
struct pooled_kernel {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, tf::value_type_t<N>* out) {
        const auto g = Op::geometry(ctx.dims_of(n.template child<0>()));
        const auto* a = ctx.input(n.template child<0>());
        const auto* b = [&] {
            if constexpr (TwoInputs) return ctx.input(n.template child<1>());
            else return a;
        }();
        const tf::index_t count = OutIsInput ? g.in().numel() : g.out().numel();
        for (tf::index_t e = 0; e < count; ++e) out[e] = tf::cuda::pool::element<K>(a, b, g, e);
    }
};
}  // namespace tftest

namespace typeflow {
using tftest::pooled;
namespace pk = cuda::pool;
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode P>
struct kernel<pooled, op::max_pool2d<KH, KW, SH, SW, P>> : tftest::pooled_kernel<pk::kind::max, op::max_pool2d<KH, KW, SH, SW, P>, false, false> {};
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode P>
struct kernel<pooled, op::avg_pool2d<KH, KW, SH, SW, P>> : tftest::pooled_kernel<pk::kind::avg, op::avg_pool2d<KH, KW, SH, SW, P>, false, false> {};
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode P>
struct kernel<pooled, op::max_pool2d_grad<KH, KW, SH, SW, P>>
    : tftest::pooled_kernel<pk::kind::max_grad, op::max_pool2d_grad<KH, KW, SH, SW, P>, true, true> {};
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode P>
struct kernel<pooled, op::avg_pool2d_grad<KH, KW, SH, SW, P>>
    : tftest::pooled_kernel<pk::kind::avg_grad, op::avg_pool2d_grad<KH, KW, SH, SW, P>, true, true> {};
template <index_t KH, index_t KW, index_t SH, index_t SW, padding_mode P>
struct kernel<pooled, op::max_pool2d_grad_grad<KH, KW, SH, SW, P>>
    : tftest::pooled_kernel<pk::kind::max_grad_grad, op::max_pool2d_grad_grad<KH, KW, SH, SW, P>, false, true> {};
}  // namespace typeflow

namespace {

template <class T, class XS, tf::index_t KH, tf::index_t KW, tf::index_t SH, tf::index_t SW, tf::padding_mode P>
void check_pools(std::uint32_t seed, bool ties) {
    const auto geo = tf::op::max_pool2d<KH, KW, SH, SW, P>::geometry(XS::value);
    rng_t r(seed);
    auto tx = uniform_tensor<T>(r, XS::value, 0, 0, -2, 2);
    if (ties)  // few distinct values: windows with equal maxima
        for (tf::index_t i = 0; i < tx.size(); ++i) tx[i] = static_cast<T>(static_cast<int>(tx[i]));
    const auto tdy = uniform_tensor<T>(r, geo.out(), 0, 0, -2, 2);
    const auto tg = uniform_tensor<T>(r, XS::value, 0, 0, -2, 2);
    const auto got = pools_on<tftest::pooled, T, XS, KH, KW, SH, SW, P>(tx, tdy, tg);
    const auto want = pools_on<tf::cpu, T, XS, KH, KW, SH, SW, P>(tx, tdy, tg);
    std::ostringstream what;
    what << "window " << KH << "x" << KW << " strides " << SH << "," << SW << (P == tf::padding_mode::same ? " SAME" : " VALID")
         << " x " << tf::to_string(XS::value) << (ties ? " with ties" : "");
    const double rt = std::is_same_v<T, float> ? 1e-6 : 1e-14;
    const char* names[] = {"max_pool2d", "avg_pool2d", "max_pool2d_grad", "avg_pool2d_grad", "max_pool2d_grad_grad"};
    for (std::size_t i = 0; i < got.size(); ++i) expect_close(what.str() + ": " + names[i], got[i], want[i], rt);
}

}  // namespace

TEST_CASE("cuda pooling: the GPU kernels' element functions, run on the host, match the cpu", "[host]") {
    using tf::shape;
    constexpr auto same = tf::padding_mode::same;
    constexpr auto valid = tf::padding_mode::valid;
    for (bool ties : {false, true}) {
        check_pools<float, shape<2, 6, 6, 3>, 2, 2, 2, 2, valid>(1, ties);       // the lecture's MaxPooling2D()
        check_pools<float, shape<1, 7, 5, 2>, 3, 3, 2, 2, same>(2, ties);        // SAME with an odd padding row after
        check_pools<float, shape<2, 5, 6, 1>, 3, 2, 1, 1, same>(3, ties);        // overlapping windows
        check_pools<double, shape<1, 9, 7, 2>, 2, 3, 3, 2, valid>(4, ties);      // strides past the window
        check_pools<double, shape<1, 4, 4, 1>, 4, 4, 3, 3, same>(5, ties);       // windows mostly padding
        check_pools<double, shape<3, 1, 8, 2>, 1, 3, 1, 2, same>(6, ties);       // one row
    }
}

// ---- convolution: the plan and index maps around cuDNN's documented semantics ----
namespace {

// Every tap of cuDNN's convolution as its documentation defines it: input xp
// [n, hp, wp, c] (NHWC), filter [co, kh, kw, c] (KRSC), symmetric zero
// padding, strides, dilations, output [n, oh, ow, co]; f(output index, input
// index, filter index) for each product inside the input.
template <class F>
void for_each_tap(const tf::cuda::conv_plan& p, F&& f) {
    for (tf::index_t b = 0; b < p.n; ++b)
        for (tf::index_t i = 0; i < p.oh; ++i)
            for (tf::index_t j = 0; j < p.ow; ++j)
                for (tf::index_t k = 0; k < p.co; ++k)
                    for (tf::index_t r = 0; r < p.kh; ++r)
                        for (tf::index_t q = 0; q < p.kw; ++q) {
                            const tf::index_t ih = i * p.sh - p.pad_h + r * p.dh, iw = j * p.sw - p.pad_w + q * p.dw;
                            if (ih < 0 || ih >= p.hp || iw < 0 || iw >= p.wp) continue;
                            for (tf::index_t c = 0; c < p.c; ++c)
                                f(static_cast<std::size_t>(((b * p.oh + i) * p.ow + j) * p.co + k),
                                  static_cast<std::size_t>(((b * p.hp + ih) * p.wp + iw) * p.c + c),
                                  static_cast<std::size_t>(((k * p.kh + r) * p.kw + q) * p.c + c));
                        }
}
// cuDNN's forward: y from xp and the KRSC filter.
std::vector<double> cudnn_forward(const tf::cuda::conv_plan& p, const std::vector<double>& xp, const std::vector<double>& f) {
    std::vector<double> y(static_cast<std::size_t>(p.n * p.oh * p.ow * p.co), 0.0);
    for_each_tap(p, [&](std::size_t yi, std::size_t xi, std::size_t fi) { y[yi] += xp[xi] * f[fi]; });
    return y;
}
// cuDNN's backward data: dxp [n, hp, wp, c] from dy and the KRSC filter.
std::vector<double> cudnn_backward_data(const tf::cuda::conv_plan& p, const std::vector<double>& dy, const std::vector<double>& f) {
    std::vector<double> dx(static_cast<std::size_t>(p.n * p.hp * p.wp * p.c), 0.0);
    for_each_tap(p, [&](std::size_t yi, std::size_t xi, std::size_t fi) { dx[xi] += dy[yi] * f[fi]; });
    return dx;
}
// cuDNN's backward filter: df [co, kh, kw, c] (KRSC) from xp and dy.
std::vector<double> cudnn_backward_filter(const tf::cuda::conv_plan& p, const std::vector<double>& xp, const std::vector<double>& dy) {
    std::vector<double> df(static_cast<std::size_t>(p.co * p.kh * p.kw * p.c), 0.0);
    for_each_tap(p, [&](std::size_t yi, std::size_t xi, std::size_t fi) { df[fi] += dy[yi] * xp[xi]; });
    return df;
}
// What the geam of cuda::detail::transpose computes: out [cols, rows] = in [rows, cols]^T.
std::vector<double> transposed(const std::vector<double>& in, tf::index_t rows, tf::index_t cols) {
    std::vector<double> out(in.size());
    for (tf::index_t i = 0; i < rows; ++i)
        for (tf::index_t j = 0; j < cols; ++j) out[static_cast<std::size_t>(j * rows + i)] = in[static_cast<std::size_t>(i * cols + j)];
    return out;
}
std::vector<double> values_of(const tf::tensor<double>& t) { return t.to_vector(); }
tf::tensor<double> tensor_of(const tf::dims& d, const std::vector<double>& v) {
    tf::tensor<double> t(d);
    REQUIRE(static_cast<std::size_t>(t.size()) == v.size());
    std::copy(v.begin(), v.end(), t.data());
    return t;
}

template <class XS, class WS, tf::index_t SH, tf::index_t SW, tf::padding_mode P, tf::index_t DH = 1, tf::index_t DW = 1>
void check_conv_lowering(std::uint32_t seed, bool want_explicit) {
    tf::placeholder<"x", double, XS> x;
    tf::placeholder<"w", double, WS> w;
    const auto y = tf::conv2d(x, w, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    using YS = tf::shape_t<decltype(y)>;
    tf::placeholder<"dy", double, YS> dy;
    const auto dx = tf::conv2d_backprop_input(x, w, dy, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    const auto dw = tf::conv2d_backprop_filter(x, w, dy, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    rng_t r(seed);
    const auto tx = uniform_tensor<double>(r, XS::value, 0, 0, -2, 2), tw = uniform_tensor<double>(r, WS::value, 0, 0, -2, 2);
    const auto tdy = uniform_tensor<double>(r, YS::value, 0, 0, -2, 2);
    tf::session s;
    auto [vy, vdx, vdw] = s.run(tf::fetch(y, dx, dw), tf::feed(x, tx), tf::feed(w, tw), tf::feed(dy, tdy));

    const auto g = tf::op::conv2d<SH, SW, P, DH, DW>::geometry(XS::value, WS::value);
    const tf::cuda::conv_plan p = tf::cuda::plan_conv(g);
    std::ostringstream what;
    what << "conv2d x " << tf::to_string(XS::value) << " w " << tf::to_string(WS::value) << " strides " << SH << "," << SW
         << (P == tf::padding_mode::same ? " SAME" : " VALID") << " dilations " << DH << "," << DW;
    INFO(what.str());
    CHECK(p.explicit_pad == want_explicit);
    CHECK(p.oh == YS::value.d[1]);
    CHECK(p.ow == YS::value.d[2]);
    if (!p.explicit_pad) {
        CHECK(p.hp == p.h);
        CHECK(p.wp == p.w);
        CHECK(p.padded_elements() == 0);
    } else {
        CHECK(p.pad_h == 0);
        CHECK(p.pad_w == 0);
    }
    // the input cuDNN sees: x itself, or x copied into the padded buffer by pad_source
    const std::vector<double> xv = values_of(tx);
    std::vector<double> xp = xv;
    if (p.explicit_pad) {
        xp.assign(static_cast<std::size_t>(p.padded_elements()), 0.0);
        for (tf::index_t e = 0; e < p.padded_elements(); ++e) {
            const tf::index_t src = tf::cuda::pad_source(p, e);
            xp[static_cast<std::size_t>(e)] = src < 0 ? 0.0 : xv[static_cast<std::size_t>(src)];
        }
        // crop_source inverts pad_source
        for (tf::index_t e = 0; e < tx.size(); ++e) REQUIRE(tf::cuda::pad_source(p, tf::cuda::crop_source(p, e)) == e);
    }
    const tf::index_t K = p.kh * p.kw * p.c;
    const std::vector<double> f_krsc = transposed(values_of(tw), K, p.co);
    const auto y_gpu = cudnn_forward(p, xp, f_krsc);
    expect_close(what.str() + ": forward", tensor_of(vy.dims(), y_gpu), vy, 1e-12);

    const auto dxp = cudnn_backward_data(p, values_of(tdy), f_krsc);
    std::vector<double> dx_gpu = dxp;
    if (p.explicit_pad) {
        dx_gpu.assign(static_cast<std::size_t>(tx.size()), 0.0);
        for (tf::index_t e = 0; e < tx.size(); ++e) dx_gpu[static_cast<std::size_t>(e)] = dxp[static_cast<std::size_t>(tf::cuda::crop_source(p, e))];
    }
    expect_close(what.str() + ": backprop_input", tensor_of(vdx.dims(), dx_gpu), vdx, 1e-12);

    const auto df_krsc = cudnn_backward_filter(p, xp, values_of(tdy));
    expect_close(what.str() + ": backprop_filter", tensor_of(vdw.dims(), transposed(df_krsc, p.co, K)), vdw, 1e-12);
}

}  // namespace

TEST_CASE("cuda conv2d lowering: plan, filter transposition and padding around cuDNN's semantics match the cpu", "[host]") {
    using tf::shape;
    constexpr auto same = tf::padding_mode::same;
    constexpr auto valid = tf::padding_mode::valid;
    check_conv_lowering<shape<2, 9, 9, 1>, shape<3, 3, 1, 4>, 1, 1, valid>(11, false);      // the lecture's layer, smaller
    check_conv_lowering<shape<1, 7, 6, 3>, shape<3, 3, 3, 2>, 1, 1, same>(12, false);       // SAME, odd kernel: symmetric
    check_conv_lowering<shape<2, 8, 8, 2>, shape<3, 3, 2, 3>, 2, 2, same>(13, true);        // SAME, stride 2: one more row after
    check_conv_lowering<shape<1, 6, 7, 2>, shape<2, 2, 2, 2>, 1, 1, same>(14, true);        // even kernel: padding only after
    check_conv_lowering<shape<1, 9, 8, 1>, shape<3, 2, 1, 2>, 2, 3, valid>(15, false);      // VALID: rows past the last window unused
    check_conv_lowering<shape<1, 9, 9, 2>, shape<3, 3, 2, 2>, 1, 1, same, 2, 2>(16, false); // dilation 2, SAME: symmetric
    check_conv_lowering<shape<1, 8, 10, 1>, shape<2, 3, 1, 2>, 3, 2, same, 2, 1>(17, true); // dilation and strides, uneven
    check_conv_lowering<shape<1, 6, 6, 1>, shape<1, 1, 1, 2>, 4, 4, same>(18, false);       // SAME with no padding at all
}
