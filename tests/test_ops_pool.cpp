// max_pool2d, avg_pool2d (NHWC; strides, SAME / VALID) and their gradient ops
// max_pool2d_grad, avg_pool2d_grad, max_pool2d_grad_grad against naive loops
// in double written here, on every device; ties in max pooling; a dyn batch;
// results across thread counts; run-time errors; global pooling; gradients
// against central finite differences in double.
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {

// TensorFlow's pooling geometry, written out again here: output extent and
// leading padding along one axis.
struct axis_rule {
    long long out, pad;
};
axis_rule tf_axis(long long in, long long k, long long s, bool same) {
    if (same) {
        const long long out = (in + s - 1) / s;
        const long long total = std::max((out - 1) * s + k - in, 0LL);
        return {out, total / 2};  // the extra row goes to the bottom
    }
    return {(in - k) / s + 1, 0};
}

struct pool_case {
    long long n, h, w, c, kh, kw, sh, sw;
    bool same;
    long long oh = 0, ow = 0, pt = 0, pl = 0;
    pool_case(const tf::dims& x, long long kh_, long long kw_, long long sh_, long long sw_, bool same_)
        : n(x.d[0]), h(x.d[1]), w(x.d[2]), c(x.d[3]), kh(kh_), kw(kw_), sh(sh_), sw(sw_), same(same_) {
        const axis_rule a = tf_axis(h, kh, sh, same), b = tf_axis(w, kw, sw, same);
        oh = a.out, pt = a.pad, ow = b.out, pl = b.pad;
    }
    long long out_size() const { return n * oh * ow * c; }
    long long in_size() const { return n * h * w * c; }
    // f(output index, input indices of the window inside the input, row-major)
    template <class F>
    void each(F&& f) const {
        std::vector<long long> win;
        for (long long b = 0; b < n; ++b)
            for (long long i = 0; i < oh; ++i)
                for (long long j = 0; j < ow; ++j)
                    for (long long ch = 0; ch < c; ++ch) {
                        win.clear();
                        for (long long p = 0; p < kh; ++p)
                            for (long long q = 0; q < kw; ++q) {
                                const long long ih = i * sh - pt + p, iw = j * sw - pl + q;
                                if (ih >= 0 && ih < h && iw >= 0 && iw < w) win.push_back(((b * h + ih) * w + iw) * c + ch);
                            }
                        f(((b * oh + i) * ow + j) * c + ch, win);
                    }
    }
};

// Expected values and, per element, the sum of |terms| (the rounding scale).
struct ref_t {
    std::vector<double> values, scale;
    explicit ref_t(long long size) : values(static_cast<std::size_t>(size), 0.0), scale(static_cast<std::size_t>(size), 0.0) {}
    void add(long long i, double t) {
        values[static_cast<std::size_t>(i)] += t;
        scale[static_cast<std::size_t>(i)] += std::abs(t);
    }
};

// The five results of one case computed naively: x the input, dy of the
// pooled shape, g of x's shape.
struct naive_pool {
    ref_t ymax, yavg, dxmax, dxavg, gg;
    template <class T>
    naive_pool(const pool_case& k, const tf::tensor<T>& x, const tf::tensor<T>& dy, const tf::tensor<T>& g)
        : ymax(k.out_size()), yavg(k.out_size()), dxmax(k.in_size()), dxavg(k.in_size()), gg(k.out_size()) {
        long long empty = 0;
        k.each([&](long long o, const std::vector<long long>& win) {
            if (win.empty()) return void(++empty);  // none with TensorFlow's rules
            long long arg = win[0];  // the first largest, in row-major window order
            for (long long i : win)
                if (double(x[i]) > double(x[arg])) arg = i;
            ymax.add(o, double(x[arg]));
            gg.add(o, double(g[arg]));
            dxmax.add(arg, double(dy[o]));
            for (long long i : win) {
                yavg.add(o, double(x[i]) / double(win.size()));
                dxavg.add(i, double(dy[o]) / double(win.size()));
            }
        });
        REQUIRE(empty == 0);
    }
};

// |got - want| <= rt * scale everywhere (rt 0: exactly equal).
template <class T>
void expect_ref(const std::string& what, const tf::tensor<T>& got, const tf::dims& want_dims, const ref_t& want, double rt) {
    INFO(what);
    REQUIRE(got.dims() == want_dims);
    REQUIRE(static_cast<std::size_t>(got.size()) == want.values.size());
    long long bad = 0, first = -1;
    for (std::size_t i = 0; i < want.values.size(); ++i) {
        const double g = static_cast<double>(got[static_cast<tf::index_t>(i)]);
        if (!(std::abs(g - want.values[i]) <= rt * want.scale[i])) {
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

// Inputs: uniform in [-2, 2), or (ties) integers in [0, 2].
template <class T>
tf::tensor<T> input_tensor(rng_t& r, const tf::dims& d, bool ties) {
    tf::tensor<T> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) t[i] = ties ? static_cast<T>(r.integer(0, 2)) : static_cast<T>(r.uniform(-2, 2));
    return t;
}

// The five pooling ops on device D against the naive loops: x of static shape
// XS (fed with extents xd, for a dyn batch), window KH x KW, strides SH, SW.
template <class D, class T, class XS, tf::index_t KH, tf::index_t KW, tf::index_t SH, tf::index_t SW, tf::padding_mode P>
void check_pool(std::uint32_t seed, tf::dims xd = XS::value, tf::session* shared = nullptr, bool ties = false) {
    constexpr bool same = P == tf::padding_mode::same;
    constexpr auto st = tf::strides<SH, SW>;
    constexpr auto pad = tf::padding_tag<P>{};
    tf::placeholder<"x", T, XS, D> x;
    const auto ymax = tf::max_pool2d<KH, KW>(x, st, pad);
    const auto yavg = tf::avg_pool2d<KH, KW>(x, st, pad);
    using YS = tf::shape_t<decltype(ymax)>;
    tf::placeholder<"dy", T, YS, D> dy;
    tf::placeholder<"g", T, XS, D> g;
    const auto dxmax = tf::max_pool2d_grad<KH, KW>(x, dy, st, pad);
    const auto dxavg = tf::avg_pool2d_grad<KH, KW>(x, dy, st, pad);
    const auto gg = tf::max_pool2d_grad_grad<KH, KW>(x, g, st, pad);
    const pool_case k(xd, KH, KW, SH, SW, same);
    rng_t r(seed);
    const auto tx = input_tensor<T>(r, xd, ties);
    const auto tdy = input_tensor<T>(r, tf::dims{k.n, k.oh, k.ow, k.c}, false);
    const auto tg = input_tensor<T>(r, xd, false);
    tf::session own;
    tf::session& s = shared ? *shared : own;
    auto [vmax, vavg, vdmax, vdavg, vgg] =
        s.run(tf::fetch(ymax, yavg, dxmax, dxavg, gg), tf::feed(x, tx), tf::feed(dy, tdy), tf::feed(g, tg));
    std::ostringstream what;
    what << "pool x " << tf::to_string(xd) << " window " << KH << "x" << KW << " strides " << SH << "," << SW
         << (same ? " SAME" : " VALID") << (ties ? " (ties)" : "");
    const naive_pool want(k, tx, tdy, tg);
    const double rt = std::is_same_v<T, float> ? 4e-6 : 1e-13;
    const tf::dims yd{k.n, k.oh, k.ow, k.c};
    expect_ref(what.str() + ": max_pool2d", vmax, yd, want.ymax, 0);
    expect_ref(what.str() + ": avg_pool2d", vavg, yd, want.yavg, rt);
    expect_ref(what.str() + ": max_pool2d_grad", vdmax, xd, want.dxmax, rt);
    expect_ref(what.str() + ": avg_pool2d_grad", vdavg, xd, want.dxavg, rt);
    expect_ref(what.str() + ": max_pool2d_grad_grad", vgg, yd, want.gg, 0);
}

using tf::shape;
constexpr auto same = tf::padding_mode::same;
constexpr auto valid = tf::padding_mode::valid;

// Fills a variable with distinct values at least 0.05 apart (no ties, nor
// near-ties that a finite-difference step could reorder).
template <class V>
void distinct_values(V& v, std::uint32_t seed) {
    auto& t = v.value();
    std::vector<double> vals(static_cast<std::size_t>(t.size()));
    for (std::size_t i = 0; i < vals.size(); ++i) vals[i] = -1.0 + 0.05 * double(i);
    rng_t r(seed);
    for (std::size_t i = vals.size(); i > 1; --i) std::swap(vals[i - 1], vals[static_cast<std::size_t>(r.integer(0, static_cast<long long>(i - 1)))]);
    for (tf::index_t i = 0; i < t.size(); ++i) t[i] = vals[static_cast<std::size_t>(i)];
}

}  // namespace

TEST_CASE("pooling: output extents, strides default to the window, padding to VALID", "[ops][pool]") {
    tf::placeholder<"x", float, shape<tf::dyn, 26, 26, 32>> x;
    tf::placeholder<"m", float, shape<tf::dyn, 28, 28, 1>> m;
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::max_pool2d<2, 2>(x))>, shape<tf::dyn, 13, 13, 32>>);
    STATIC_REQUIRE(std::is_same_v<decltype(tf::max_pool2d<2>(x)), decltype(tf::max_pool2d<2, 2>(x))>);
    STATIC_REQUIRE(std::is_same_v<decltype(tf::max_pool2d<2, 2>(x)),
                                  decltype(tf::max_pool2d<2, 2>(x, tf::strides<2, 2>, tf::padding::valid))>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::max_pool2d<3, 3>(m))>, shape<tf::dyn, 9, 9, 1>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::max_pool2d<3, 3>(m, tf::padding::same))>, shape<tf::dyn, 10, 10, 1>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::avg_pool2d<3, 3>(m, tf::strides<1, 1>, tf::padding::same))>,
                                  shape<tf::dyn, 28, 28, 1>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::avg_pool2d<3, 2>(m, tf::strides<2, 3>))>,
                                  shape<tf::dyn, 13, 9, 1>>);  // (28 - 3) / 2 + 1, (28 - 2) / 3 + 1
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::max_pool2d_grad<2>(x, tf::max_pool2d<2>(x)))>, shape<tf::dyn, 26, 26, 32>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::max_pool2d_grad_grad<2>(x, x))>, shape<tf::dyn, 13, 13, 32>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::global_avg_pool2d(x))>, shape<tf::dyn, 32>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::global_max_pool2d(x))>, shape<tf::dyn, 32>>);
}

TEMPLATE_TEST_CASE("pooling: a 4x4 example by hand, SAME pads at the bottom and right and averages in-range only",
                   "[ops][pool]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, shape<1, 4, 4, 1>, D> x;
    tf::tensor<double> tx({1, 4, 4, 1});
    for (tf::index_t i = 0; i < 16; ++i) tx[i] = double((i * 5) % 16);  // 0 5 10 15 / 4 9 14 3 / 8 13 2 7 / 12 1 6 11
    tf::session s;
    expect_values("max 2x2/2", s.run(tf::max_pool2d<2>(x), tf::feed(x, tx)), tf::dims{1, 2, 2, 1}, {9, 15, 13, 11});
    expect_values("avg 2x2/2", s.run(tf::avg_pool2d<2>(x), tf::feed(x, tx)), tf::dims{1, 2, 2, 1}, {4.5, 10.5, 8.5, 6.5});
    // 3x3 stride 2 SAME on 4: 2 outputs, padding 1 in all, at the bottom / right:
    // windows rows {0,1,2} and {2,3} (the latter one row of padding)
    expect_values("avg 3x3/2 SAME", s.run(tf::avg_pool2d<3>(x, tf::strides<2, 2>, tf::padding::same), tf::feed(x, tx)),
                  tf::dims{1, 2, 2, 1}, {65.0 / 9, 51.0 / 6, 42.0 / 6, 26.0 / 4}, 1e-15);
    expect_values("max 3x3/2 SAME", s.run(tf::max_pool2d<3>(x, tf::strides<2, 2>, tf::padding::same), tf::feed(x, tx)),
                  tf::dims{1, 2, 2, 1}, {14, 15, 13, 11});
}

TEMPLATE_TEST_CASE("pooling: forward and gradient ops against naive loops, float", "[ops][pool]", tf::cpu, tf::reference) {
    using D = TestType;
    check_pool<D, float, shape<1, 4, 4, 1>, 2, 2, 2, 2, valid>(1);
    check_pool<D, float, shape<3, 7, 6, 5>, 2, 2, 2, 2, valid>(2);   // batch 3, 7 rows: the last one left out
    check_pool<D, float, shape<3, 7, 6, 5>, 2, 2, 2, 2, same>(3);    // ... padded instead
    check_pool<D, float, shape<2, 9, 8, 3>, 3, 3, 1, 1, same>(4);    // overlapping windows
    check_pool<D, float, shape<2, 9, 8, 3>, 3, 3, 2, 2, valid>(5);   // overlapping, stride 2
    check_pool<D, float, shape<2, 9, 8, 3>, 3, 2, 3, 3, same>(6);    // stride 3 > window width: gaps
    check_pool<D, float, shape<2, 10, 11, 4>, 2, 3, 3, 1, valid>(7); // unequal strides, windows 2x3
    check_pool<D, float, shape<2, 5, 5, 2>, 1, 1, 1, 1, valid>(8);   // 1x1 windows
    check_pool<D, float, shape<2, 5, 5, 2>, 1, 1, 2, 2, valid>(9);
    check_pool<D, float, shape<1, 5, 7, 2>, 1, 1, 3, 3, same>(10);
    check_pool<D, float, shape<2, 4, 5, 3>, 4, 5, 1, 1, valid>(11);  // window = input: 1x1 output
    check_pool<D, float, shape<1, 2, 3, 2>, 5, 5, 1, 1, same>(12);   // window larger than the input, SAME
    check_pool<D, float, shape<2, 26, 26, 32>, 2, 2, 2, 2, valid>(13);  // the target layer, in channel blocks
    check_pool<D, float, shape<2, 11, 10, 37>, 3, 3, 2, 2, same>(14);   // blocks and a channel tail
    check_pool<D, float, shape<1, 13, 9, 21>, 3, 3, 1, 2, valid>(15);   // overlapping rows only
}

TEMPLATE_TEST_CASE("pooling: forward and gradient ops against naive loops, double", "[ops][pool]", tf::cpu, tf::reference) {
    using D = TestType;
    check_pool<D, double, shape<3, 7, 9, 2>, 2, 2, 2, 2, same>(21);
    check_pool<D, double, shape<2, 8, 8, 11>, 3, 3, 1, 1, same>(22);
    check_pool<D, double, shape<2, 9, 7, 9>, 2, 3, 2, 3, valid>(23);
    check_pool<D, double, shape<1, 6, 6, 3>, 2, 2, 4, 4, same>(24);  // stride larger than the window
}

TEMPLATE_TEST_CASE("pooling: ties go to the first maximum in row-major window order", "[ops][pool][ties]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    // inputs in {0, 1, 2}: most windows hold ties
    check_pool<D, float, shape<2, 8, 8, 20>, 2, 2, 2, 2, valid>(31, shape<2, 8, 8, 20>::value, nullptr, true);
    check_pool<D, float, shape<2, 7, 9, 20>, 3, 3, 1, 1, same>(32, shape<2, 7, 9, 20>::value, nullptr, true);
    check_pool<D, double, shape<1, 9, 8, 10>, 3, 2, 2, 3, same>(33, shape<1, 9, 8, 10>::value, nullptr, true);
    // all equal: every gradient goes to the window's first element
    tf::placeholder<"x", float, shape<1, 2, 4, 1>, D> x;
    tf::placeholder<"dy", float, shape<1, 1, 2, 1>, D> dy;
    tf::session s;
    const auto dx = s.run(tf::max_pool2d_grad<2>(x, dy), tf::feed(x, tf::tensor<float>({1, 2, 4, 1})),
                          tf::feed(dy, std::vector<float>{3, 4}));
    expect_values("all zeros", dx, tf::dims{1, 2, 4, 1}, {3, 0, 4, 0, 0, 0, 0, 0});
}

TEMPLATE_TEST_CASE("pooling: a dyn batch, across runs (including 0 images)", "[ops][pool][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::session s;
    for (long long n : {3, 1, 0, 2}) {
        INFO("batch " << n);
        check_pool<D, float, shape<tf::dyn, 7, 6, 3>, 3, 3, 2, 2, same>(40 + std::uint32_t(n), tf::dims{n, 7, 6, 3}, &s);
        check_pool<D, float, shape<tf::dyn, 7, 6, 3>, 2, 2, 2, 2, valid>(50 + std::uint32_t(n), tf::dims{n, 7, 6, 3}, &s);
    }
}

TEST_CASE("pooling: the same results for every thread count (cpu)", "[ops][pool][threads]") {
    tf::placeholder<"x", float, shape<tf::dyn, 26, 26, 32>> x;
    tf::placeholder<"dy", float, shape<tf::dyn, 13, 13, 32>> dy;
    tf::placeholder<"dy3", float, shape<tf::dyn, 26, 26, 32>> dy3;
    const auto ops = tf::fetch(tf::max_pool2d<2>(x), tf::avg_pool2d<2>(x), tf::max_pool2d_grad<2>(x, dy),
                               tf::avg_pool2d_grad<2>(x, dy), tf::max_pool2d_grad_grad<2>(x, x),
                               // overlapping windows: the gradients split over images
                               tf::max_pool2d_grad<3>(x, dy3, tf::strides<1, 1>, tf::padding::same),
                               tf::avg_pool2d_grad<3>(x, dy3, tf::strides<1, 1>, tf::padding::same));
    for (long long n : {1LL, 7LL}) {
        rng_t r(60 + std::uint32_t(n));
        const auto tx = input_tensor<float>(r, tf::dims{n, 26, 26, 32}, false);
        const auto tdy = input_tensor<float>(r, tf::dims{n, 13, 13, 32}, false);
        const auto tdy3 = input_tensor<float>(r, tf::dims{n, 26, 26, 32}, false);
        tf::session one;
        const auto base = one.run(ops, tf::feed(x, tx), tf::feed(dy, tdy), tf::feed(dy3, tdy3));
        // the one-thread results are right
        const pool_case k2(tf::dims{n, 26, 26, 32}, 2, 2, 2, 2, false), k3(tf::dims{n, 26, 26, 32}, 3, 3, 1, 1, true);
        const naive_pool want2(k2, tx, tdy, tx), want3(k3, tx, tdy3, tx);
        const tf::dims xd{n, 26, 26, 32}, yd{n, 13, 13, 32};
        expect_ref("max_pool2d", std::get<0>(base), yd, want2.ymax, 0);
        expect_ref("avg_pool2d", std::get<1>(base), yd, want2.yavg, 4e-6);
        expect_ref("max_pool2d_grad", std::get<2>(base), xd, want2.dxmax, 4e-6);
        expect_ref("avg_pool2d_grad", std::get<3>(base), xd, want2.dxavg, 4e-6);
        expect_ref("max_pool2d_grad_grad", std::get<4>(base), yd, want2.gg, 0);
        expect_ref("max_pool2d_grad 3x3/1", std::get<5>(base), xd, want3.dxmax, 4e-6);
        expect_ref("avg_pool2d_grad 3x3/1", std::get<6>(base), xd, want3.dxavg, 4e-6);
        for (int threads : {2, 3, 4}) {
            INFO("batch " << n << ", threads " << threads);
            tf::session s{tf::session_options{.threads = threads}};
            const auto got = s.run(ops, tf::feed(x, tx), tf::feed(dy, tdy), tf::feed(dy3, tdy3));
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                const auto bit_equal = [](const tf::tensor<float>& a, const tf::tensor<float>& b) {
                    return a.dims() == b.dims() &&
                           std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
                };
                ([&] {
                    INFO("result " << I);
                    CHECK(bit_equal(std::get<I>(got), std::get<I>(base)));
                }(), ...);
            }(std::make_index_sequence<7>{});
        }
    }
}

TEMPLATE_TEST_CASE("pooling: a dyn extent that does not fit is a run-time error naming the op", "[ops][pool][dyn]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, shape<1, tf::dyn, 5, 2>, D> x;
    tf::placeholder<"dy", float, shape<tf::dyn, 2, 2, 2>, D> dy;
    tf::session s;
    REQUIRE_THROWS_WITH(s.run(tf::max_pool2d<3>(x), tf::feed(x, tf::tensor<float>({1, 2, 5, 2}))),
                        Catch::Contains("max_pool2d") && Catch::Contains("[1,2,5,2]") && Catch::Contains("larger than the input"));
    REQUIRE_THROWS_WITH(s.run(tf::avg_pool2d<3>(x, tf::strides<1, 1>), tf::feed(x, tf::tensor<float>({1, 1, 5, 2}))),
                        Catch::Contains("avg_pool2d") && Catch::Contains("3x3"));
    REQUIRE_THROWS_WITH(s.run(tf::max_pool2d_grad<2>(x, dy), tf::feed(x, tf::tensor<float>({1, 4, 5, 2})),
                              tf::feed(dy, tf::tensor<float>({2, 2, 2, 2}))),
                        Catch::Contains("max_pool2d_grad") && Catch::Contains("[2,2,2,2]") && Catch::Contains("[1,2,2,2]"));
    // SAME never fails: a window larger than the input
    const auto y = s.run(tf::max_pool2d<3>(x, tf::padding::same), tf::feed(x, tf::tensor<float>({1, 1, 5, 2})));
    CHECK(y.dims() == tf::dims{1, 1, 2, 2});
}

TEMPLATE_TEST_CASE("global_avg_pool2d and global_max_pool2d against naive loops", "[ops][pool]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, shape<tf::dyn, 5, 3, 4>, D> x;
    rng_t r(70);
    const auto tx = input_tensor<double>(r, tf::dims{3, 5, 3, 4}, false);
    tf::session s;
    auto [avg, mx] = s.run(tf::fetch(tf::global_avg_pool2d(x), tf::global_max_pool2d(x)), tf::feed(x, tx));
    std::vector<double> want_avg, want_max;
    for (long long b = 0; b < 3; ++b)
        for (long long ch = 0; ch < 4; ++ch) {
            double sum = 0, best = -1e300;
            for (long long i = 0; i < 15; ++i) {
                sum += tx[(b * 15 + i) * 4 + ch];
                best = std::max(best, tx[(b * 15 + i) * 4 + ch]);
            }
            want_avg.push_back(sum / 15);
            want_max.push_back(best);
        }
    expect_values("global_avg_pool2d", avg, tf::dims{3, 4}, want_avg, 1e-14);
    expect_values("global_max_pool2d", mx, tf::dims{3, 4}, want_max);
}

TEMPLATE_TEST_CASE("pooling: gradients match finite differences", "[ops][pool][grad]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"x", double, shape<2, 5, 6, 2>, D> x;
    distinct_values(x, 1);
    TFTEST_CHECK_GRAD("max 2x2/2 VALID", tf::sum(tf::square(tf::max_pool2d<2>(x))), x);
    TFTEST_CHECK_GRAD("max 3x3/1 SAME", tf::sum(tf::square(tf::max_pool2d<3>(x, tf::strides<1, 1>, tf::padding::same))), x);
    TFTEST_CHECK_GRAD("max 3x2, strides 2,1, SAME", tf::sum(tf::square(tf::max_pool2d<3, 2>(x, tf::strides<2, 1>, tf::padding::same))), x);
    TFTEST_CHECK_GRAD("avg 2x2/2 VALID", tf::sum(tf::square(tf::avg_pool2d<2>(x))), x);
    TFTEST_CHECK_GRAD("avg 3x3/1 SAME", tf::sum(tf::square(tf::avg_pool2d<3>(x, tf::strides<1, 1>, tf::padding::same))), x);
    TFTEST_CHECK_GRAD("avg 3x2, strides 2,3, SAME", tf::sum(tf::square(tf::avg_pool2d<3, 2>(x, tf::strides<2, 3>, tf::padding::same))), x);
    TFTEST_CHECK_GRAD("global avg", tf::sum(tf::square(tf::global_avg_pool2d(x))), x);
    TFTEST_CHECK_GRAD("global max", tf::sum(tf::square(tf::global_max_pool2d(x))), x);
}

TEMPLATE_TEST_CASE("pooling: gradients of the gradient ops (second order) match finite differences", "[ops][pool][grad]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"x", double, shape<2, 5, 6, 2>, D> x;
    tf::variable<"dy", double, shape<2, 3, 3, 2>, D> dy{tf::init::uniform{-1, 1, 2}};
    tf::variable<"g", double, shape<2, 5, 6, 2>, D> g{tf::init::uniform{-1, 1, 3}};
    distinct_values(x, 4);
    const auto st = tf::strides<2, 2>;
    const auto pad = tf::padding::same;
    TFTEST_CHECK_GRAD("avg_pool2d_grad w.r.t. dy", tf::sum(tf::square(tf::avg_pool2d_grad<3>(x, dy, st, pad))), dy);
    TFTEST_CHECK_GRAD("max_pool2d_grad w.r.t. x and dy", tf::sum(tf::square(tf::max_pool2d_grad<3>(x, dy, st, pad))), x, dy);
    TFTEST_CHECK_GRAD("max_pool2d_grad_grad w.r.t. x and g", tf::sum(tf::square(tf::max_pool2d_grad_grad<3>(x, g, st, pad))), x, g);
    // the gradient of a gradient: d/dx of |d/dx sum(max_pool(x)^2)|^2
    auto inner = tf::grad(tf::sum(tf::square(tf::max_pool2d<3>(x, st, pad))), x);
    TFTEST_CHECK_GRAD("second order through max_pool2d", tf::sum(tf::square(inner)), x);
    auto inner_avg = tf::grad(tf::sum(tf::square(tf::avg_pool2d<3>(x, st, pad))), x);
    TFTEST_CHECK_GRAD("second order through avg_pool2d", tf::sum(tf::square(inner_avg)), x);
}
