// conv2d (NHWC, HWIO; strides, SAME / VALID, dilation) and its backprop ops
// against naive loops in double written here, on every device; their
// gradients against central finite differences in double.
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {

// TensorFlow's output extent and leading padding, written out again here.
struct axis_rule {
    long long out, pad;
};
axis_rule tf_axis(long long in, long long k, long long s, long long d, bool same) {
    const long long ek = (k - 1) * d + 1;
    if (same) {
        const long long out = (in + s - 1) / s;
        const long long total = std::max((out - 1) * s + ek - in, 0LL);
        return {out, total / 2};  // the extra row goes to the bottom
    }
    return {(in - ek) / s + 1, 0};
}

struct conv_case {
    long long n, h, w, c, kh, kw, co, sh, sw, dh, dw;
    bool same;
    long long oh = 0, ow = 0, pt = 0, pl = 0;
    conv_case(const tf::dims& x, const tf::dims& f, long long sh_, long long sw_, bool same_, long long dh_, long long dw_)
        : n(x.d[0]), h(x.d[1]), w(x.d[2]), c(x.d[3]), kh(f.d[0]), kw(f.d[1]), co(f.d[3]), sh(sh_), sw(sw_), dh(dh_),
          dw(dw_), same(same_) {
        const axis_rule a = tf_axis(h, kh, sh, dh, same), b = tf_axis(w, kw, sw, dw, same);
        oh = a.out, pt = a.pad, ow = b.out, pl = b.pad;
    }
    // f(x index, w index, y index) over every in-range (n, oh, ow, kh, kw, ci, co)
    template <class F>
    void each(F&& f) const {
        for (long long b = 0; b < n; ++b)
            for (long long i = 0; i < oh; ++i)
                for (long long j = 0; j < ow; ++j)
                    for (long long p = 0; p < kh; ++p)
                        for (long long q = 0; q < kw; ++q) {
                            const long long ih = i * sh - pt + p * dh, iw = j * sw - pl + q * dw;
                            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                            for (long long ci = 0; ci < c; ++ci)
                                for (long long o = 0; o < co; ++o)
                                    f(((b * h + ih) * w + iw) * c + ci, ((p * kw + q) * c + ci) * co + o,
                                      ((b * oh + i) * ow + j) * co + o);
                        }
    }
};

// Values and, per element, the sum of |terms| (the scale of the rounding error).
struct ref_t {
    std::vector<long long> dims;
    std::vector<double> values, scale;
};
enum class which { forward, input, filter };

template <class T>
ref_t naive(const conv_case& k, which what, const tf::tensor<T>& a, const tf::tensor<T>& b) {
    ref_t r;
    long long size = 0;
    if (what == which::forward) r.dims = {k.n, k.oh, k.ow, k.co};
    if (what == which::input) r.dims = {k.n, k.h, k.w, k.c};
    if (what == which::filter) r.dims = {k.kh, k.kw, k.c, k.co};
    size = r.dims[0] * r.dims[1] * r.dims[2] * r.dims[3];
    r.values.assign(static_cast<std::size_t>(size), 0.0);
    r.scale.assign(static_cast<std::size_t>(size), 0.0);
    // forward: a = x, b = w; input: a = w, b = dy; filter: a = x, b = dy
    k.each([&](long long xi, long long wi, long long yi) {
        double t = 0;
        long long at = 0;
        if (what == which::forward) t = double(a[xi]) * double(b[wi]), at = yi;
        if (what == which::input) t = double(a[wi]) * double(b[yi]), at = xi;
        if (what == which::filter) t = double(a[xi]) * double(b[yi]), at = wi;
        r.values[static_cast<std::size_t>(at)] += t;
        r.scale[static_cast<std::size_t>(at)] += std::abs(t);
    });
    return r;
}

template <class T>
void expect_ref(const std::string& what, const tf::tensor<T>& got, const ref_t& want) {
    INFO(what);
    REQUIRE(extents(got.dims()) == want.dims);
    const double rt = std::is_same_v<T, float> ? 2e-5 : 1e-12;
    long long bad = 0, first = -1;
    for (std::size_t i = 0; i < want.values.size(); ++i) {
        const double g = static_cast<double>(got[static_cast<tf::index_t>(i)]);
        if (!(std::abs(g - want.values[i]) <= rt * (want.scale[i] + 1e-30))) {
            if (first < 0) first = static_cast<long long>(i);
            ++bad;
        }
    }
    if (bad) {
        std::ostringstream msg;
        msg.precision(17);
        msg << what << ": " << bad << " of " << want.values.size() << " elements differ; first at flat index " << first
            << ": got " << static_cast<double>(got[first]) << ", want " << want.values[static_cast<std::size_t>(first)];
        FAIL_CHECK(msg.str());
    } else {
        SUCCEED();
    }
}

template <class T>
tf::tensor<T> rand_tensor(rng_t& r, const tf::dims& d) {
    return uniform_tensor<T>(r, d, 0, 0, -2, 2);
}

// conv2d and both backprop ops on device D against the naive loops: x of
// static shape XS (fed with extents xd, for a dyn batch), filter WS.
template <class D, class T, class XS, class WS, tf::index_t SH, tf::index_t SW, tf::padding_mode P, tf::index_t DH = 1,
          tf::index_t DW = 1>
void check_conv(std::uint32_t seed, tf::dims xd = XS::value, tf::session* shared = nullptr) {
    constexpr bool same = P == tf::padding_mode::same;
    tf::placeholder<"x", T, XS, D> x;
    tf::placeholder<"w", T, WS, D> w;
    const auto y = tf::conv2d(x, w, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    const conv_case k(xd, WS::value, SH, SW, same, DH, DW);
    tf::placeholder<"dy", T, tf::shape<XS::value.d[0], tf::shape_t<decltype(y)>::value.d[1], tf::shape_t<decltype(y)>::value.d[2],
                                       WS::value.d[3]>,
                    D>
        dy;
    const auto dx = tf::conv2d_backprop_input(x, w, dy, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    const auto dw = tf::conv2d_backprop_filter(x, w, dy, tf::strides<SH, SW>, tf::padding_tag<P>{}, tf::dilations<DH, DW>);
    rng_t r(seed);
    const auto tx = rand_tensor<T>(r, xd), tw = rand_tensor<T>(r, WS::value);
    const auto tdy = rand_tensor<T>(r, tf::dims{k.n, k.oh, k.ow, k.co});
    tf::session own;
    tf::session& s = shared ? *shared : own;
    auto [vy, vdx, vdw] = s.run(tf::fetch(y, dx, dw), tf::feed(x, tx), tf::feed(w, tw), tf::feed(dy, tdy));
    std::ostringstream what;
    what << "conv2d x " << tf::to_string(xd) << " w " << tf::to_string(WS::value) << " strides " << SH << "," << SW
         << (same ? " SAME" : " VALID") << " dilations " << DH << "," << DW;
    expect_ref(what.str() + ": forward", vy, naive(k, which::forward, tx, tw));
    expect_ref(what.str() + ": backprop_input", vdx, naive(k, which::input, tw, tdy));
    expect_ref(what.str() + ": backprop_filter", vdw, naive(k, which::filter, tx, tdy));
}

using tf::shape;
constexpr auto same = tf::padding_mode::same;
constexpr auto valid = tf::padding_mode::valid;

}  // namespace

TEST_CASE("conv2d: output extents follow TensorFlow's SAME and VALID rules", "[ops][conv]") {
    tf::placeholder<"x", float, shape<tf::dyn, 28, 28, 1>> x;
    tf::placeholder<"w", float, shape<3, 3, 1, 32>> w;
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::conv2d(x, w))>, shape<tf::dyn, 26, 26, 32>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::conv2d(x, w, tf::padding::same))>, shape<tf::dyn, 28, 28, 32>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::conv2d(x, w, tf::strides<2, 2>, tf::padding::same))>,
                                  shape<tf::dyn, 14, 14, 32>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::conv2d(x, w, tf::strides<2, 2>, tf::padding::valid))>,
                                  shape<tf::dyn, 13, 13, 32>>);  // ceil((28 - 3 + 1) / 2)
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::conv2d(x, w, tf::strides<3, 1>, tf::padding::valid,
                                                                  tf::dilations<2, 3>))>,
                                  shape<tf::dyn, 8, 22, 32>>);  // EK 5 and 7: ceil(24 / 3), 22
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::conv2d(x, w, tf::strides<3, 3>, tf::padding::same))>,
                                  shape<tf::dyn, 10, 10, 32>>);  // ceil(28 / 3)
}

TEMPLATE_TEST_CASE("conv2d: SAME puts the odd padding row at the bottom and column at the right", "[ops][conv]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, shape<1, 4, 4, 1>, D> x;
    tf::placeholder<"w", double, shape<3, 3, 1, 1>, D> w;
    tf::tensor<double> tx({1, 4, 4, 1}), tw({3, 3, 1, 1});
    for (tf::index_t i = 0; i < 16; ++i) tx[i] = double(i);
    for (tf::index_t i = 0; i < 9; ++i) tw[i] = 1;
    tf::session s;
    // padding 1 in all along each axis: 0 above / left, 1 below / right
    const auto y = s.run(tf::conv2d(x, w, tf::strides<2, 2>, tf::padding::same), tf::feed(x, tx), tf::feed(w, tw));
    expect_values("4x4 iota, 3x3 ones, stride 2, SAME", y, tf::dims{1, 2, 2, 1}, {45, 39, 66, 50});
    // stride 1: padding 2 per axis, 1 on each side
    const auto y1 = s.run(tf::conv2d(x, w, tf::padding::same), tf::feed(x, tx), tf::feed(w, tw));
    REQUIRE(y1.dims() == tf::dims{1, 4, 4, 1});
    CHECK(y1[0] == 0 + 1 + 4 + 5);
    CHECK(y1[15] == 10 + 11 + 14 + 15);
}

TEMPLATE_TEST_CASE("conv2d: forward and both backprop ops against naive loops, float", "[ops][conv]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    check_conv<D, float, shape<1, 5, 5, 1>, shape<3, 3, 1, 1>, 1, 1, valid>(1);
    check_conv<D, float, shape<3, 7, 6, 2>, shape<3, 3, 2, 4>, 1, 1, same>(2);   // batch 3
    check_conv<D, float, shape<2, 9, 8, 3>, shape<3, 2, 3, 5>, 2, 2, same>(3);   // stride 2, even filter width
    check_conv<D, float, shape<2, 9, 8, 3>, shape<3, 3, 3, 2>, 2, 2, valid>(4);
    check_conv<D, float, shape<3, 4, 5, 6>, shape<1, 1, 6, 7>, 1, 1, same>(5);   // 1x1: no im2col
    check_conv<D, float, shape<1, 5, 5, 2>, shape<1, 1, 2, 3>, 2, 2, valid>(6);  // 1x1, stride 2
    check_conv<D, float, shape<2, 4, 4, 3>, shape<4, 4, 3, 2>, 1, 1, valid>(7);  // window = input: 1x1 output
    check_conv<D, float, shape<1, 2, 3, 1>, shape<5, 5, 1, 2>, 1, 1, same>(8);   // window larger than input, SAME
    check_conv<D, float, shape<2, 16, 16, 8>, shape<3, 3, 8, 16>, 1, 1, same>(9);
}

TEMPLATE_TEST_CASE("conv2d: dilation, unequal strides, double", "[ops][conv]", tf::cpu, tf::reference) {
    using D = TestType;
    check_conv<D, double, shape<3, 11, 10, 2>, shape<3, 3, 2, 3>, 1, 1, valid, 2, 2>(11);
    check_conv<D, double, shape<2, 10, 9, 3>, shape<3, 2, 3, 2>, 2, 3, same, 2, 1>(12);
    check_conv<D, double, shape<1, 9, 9, 1>, shape<2, 2, 1, 1>, 3, 3, same, 3, 3>(13);
    check_conv<D, double, shape<2, 7, 13, 4>, shape<2, 3, 4, 3>, 2, 2, valid, 1, 2>(14);
    check_conv<D, double, shape<1, 6, 6, 2>, shape<3, 3, 2, 2>, 4, 4, same>(15);  // stride larger than the filter
}

TEMPLATE_TEST_CASE("conv2d: a dyn batch, across runs (including 0 images)", "[ops][conv][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::session s;
    for (long long n : {3, 1, 0, 2}) {
        INFO("batch " << n);
        check_conv<D, float, shape<tf::dyn, 6, 7, 2>, shape<3, 3, 2, 3>, 2, 1, same>(20 + std::uint32_t(n), tf::dims{n, 6, 7, 2},
                                                                                 &s);
    }
}

TEST_CASE("conv2d: several im2col chunks and several threads (cpu)", "[ops][conv][threads]") {
    // 64 * 64 * (3 * 3 * 32) = 1.2M im2col elements an image: chunks of 3 images
    for (int threads : {1, 3}) {
        INFO("threads " << threads);
        tf::session s{tf::session_options{.threads = threads}};
        check_conv<tf::cpu, float, shape<7, 64, 64, 32>, shape<3, 3, 32, 4>, 1, 1, same>(31, shape<7, 64, 64, 32>::value, &s);
        check_conv<tf::cpu, double, shape<5, 20, 20, 16>, shape<3, 3, 16, 32>, 1, 1, valid>(32, shape<5, 20, 20, 16>::value, &s);
    }
}

TEMPLATE_TEST_CASE("conv2d: a mismatched dyn extent is a run-time error naming the op", "[ops][conv][dyn]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, shape<1, 5, 5, tf::dyn>, D> x;
    tf::placeholder<"w", float, shape<3, 3, 2, 1>, D> w;
    tf::session s;
    REQUIRE_THROWS_WITH(s.run(tf::conv2d(x, w), tf::feed(x, tf::tensor<float>({1, 5, 5, 3})), tf::feed(w, tf::tensor<float>({3, 3, 2, 1}))),
                        Catch::Contains("conv2d") && Catch::Contains("channels"));
}

TEMPLATE_TEST_CASE("conv2d: gradients w.r.t. input and filter match finite differences", "[ops][conv][grad]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    tf::variable<"x", double, shape<2, 5, 6, 2>, D> x{tf::init::uniform{-1, 1, 1}};
    tf::variable<"w", double, shape<3, 3, 2, 3>, D> w{tf::init::uniform{-1, 1, 2}};
    tf::variable<"w2", double, shape<2, 2, 2, 2>, D> w2{tf::init::uniform{-1, 1, 3}};
    TFTEST_CHECK_GRAD("stride 1, VALID", tf::sum(tf::square(tf::conv2d(x, w))), x, w);
    TFTEST_CHECK_GRAD("stride 2, SAME", tf::sum(tf::square(tf::conv2d(x, w, tf::strides<2, 2>, tf::padding::same))), x, w);
    TFTEST_CHECK_GRAD("stride 1, SAME, even filter",
                      tf::sum(tf::square(tf::conv2d(x, w2, tf::strides<1, 1>, tf::padding::same))), x, w2);
    TFTEST_CHECK_GRAD("dilation 2, VALID",
                      tf::sum(tf::square(tf::conv2d(x, w2, tf::strides<1, 1>, tf::padding::valid, tf::dilations<2, 2>))), x, w2);
    TFTEST_CHECK_GRAD("strides 2,1, dilation 1,2, SAME",
                      tf::sum(tf::square(tf::conv2d(x, w, tf::strides<2, 1>, tf::padding::same, tf::dilations<1, 2>))), x, w);
}

TEMPLATE_TEST_CASE("conv2d: gradients of the backprop ops (second order) match finite differences", "[ops][conv][grad]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"x", double, shape<2, 5, 6, 2>, D> x{tf::init::uniform{-1, 1, 4}};
    tf::variable<"w", double, shape<3, 3, 2, 3>, D> w{tf::init::uniform{-1, 1, 5}};
    tf::variable<"dy", double, shape<2, 3, 3, 3>, D> dy{tf::init::uniform{-1, 1, 6}};
    const auto bi = tf::conv2d_backprop_input(x, w, dy, tf::strides<2, 2>, tf::padding::same);
    const auto bf = tf::conv2d_backprop_filter(x, w, dy, tf::strides<2, 2>, tf::padding::same);
    TFTEST_CHECK_GRAD("backprop_input w.r.t. filter and dy", tf::sum(tf::square(bi)), w, dy);
    TFTEST_CHECK_GRAD("backprop_filter w.r.t. input and dy", tf::sum(tf::square(bf)), x, dy);
    // the gradient of a gradient: d/dx of |d/dw sum(conv(x, w)^2)|^2
    auto inner = tf::grad(tf::sum(tf::square(tf::conv2d(x, w, tf::strides<2, 2>, tf::padding::same))), w);
    TFTEST_CHECK_GRAD("second order through conv2d", tf::sum(tf::square(inner)), x);
}
