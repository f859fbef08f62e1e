// The CUDA backend (tf::gpu<0>) against the CPU backend and against
// independent references: fused regions, matmul, reductions, softmax,
// one_hot, transpose, gathers and sparse updates, linear algebra, transfers, gradients (central finite differences in
// double precision), a training run, variables shared with the host, and
// bad input (feeds, labels, out-of-memory). Built by nvcc; without a CUDA
// device the whole program reports itself skipped (cuda_main.cu).
#include <catch2/catch.hpp>

#include "../support.hpp"
#include "../device_support.hpp"
#include "compare.hpp"
#include "graphs.hpp"

#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;
using G = tf::gpu<0>;

namespace {

// The same element-wise graph on device D: broadcasting, a scalar, a where.
template <class D, class T>
tf::tensor<T> chain_on(const tf::tensor<T>& xa, const tf::tensor<T>& xb) {
    tf::placeholder<"a", T, tf::shape<tf::dyn, 33>, D> a;
    tf::placeholder<"b", T, tf::shape<33>, D> b;
    tf::session s;
    auto y = tf::where(a > b, tf::tanh(a) * b + T(1), tf::exp(-tf::abs(a))) / (tf::sigmoid(b) + T(2)) + a * a;
    return s.run(y, tf::feed(a, xa), tf::feed(b, xb));
}
template <class D, class T>
tf::tensor<T> flat_on(const tf::tensor<T>& xx, const tf::tensor<T>& xz) {
    tf::placeholder<"x", T, tf::shape<tf::dyn>, D> x;
    tf::placeholder<"z", T, tf::shape<tf::dyn>, D> z;
    tf::session s;
    return s.run(tf::sigmoid(T(1.5) * x + T(0.25)) * z + x * x, tf::feed(x, xx), tf::feed(z, xz));
}

}  // namespace

TEST_CASE("cuda fused element-wise regions match the cpu", "[cuda]") {
    rng_t r(11);
    for (long long rows : {1LL, 7LL, 129LL}) {
        const auto xa = uniform_tensor<float>(r, tf::dims{rows, 33}, 0, 0, -2, 2);
        const auto xb = uniform_tensor<float>(r, tf::dims{33}, 0, 0, -2, 2);
        expect_close("broadcast chain, float, rows " + std::to_string(rows), chain_on<G>(xa, xb), chain_on<tf::cpu>(xa, xb),
                     rtol_of<float>());
        const auto da = uniform_tensor<double>(r, tf::dims{rows, 33}, 0, 0, -2, 2);
        const auto db = uniform_tensor<double>(r, tf::dims{33}, 0, 0, -2, 2);
        expect_close("broadcast chain, double", chain_on<G>(da, db), chain_on<tf::cpu>(da, db), rtol_of<double>());
    }
    // contiguous operands (the vector path) with a tail that is not a multiple of the vector width
    for (long long n : {1LL, 3LL, 4LL, 1001LL, 100003LL}) {
        const auto x = uniform_tensor<float>(r, tf::dims{n}, 0, 0, -3, 3);
        const auto z = uniform_tensor<float>(r, tf::dims{n}, 0, 0, -3, 3);
        expect_close("flat chain, n " + std::to_string(n), flat_on<G>(x, z), flat_on<tf::cpu>(x, z), rtol_of<float>());
    }
    // against a naive loop, not only the cpu backend
    const auto x = uniform_tensor<double>(r, tf::dims{517}, 0, 0, -3, 3);
    const auto z = uniform_tensor<double>(r, tf::dims{517}, 0, 0, -3, 3);
    const auto got = flat_on<G>(x, z);
    std::vector<double> want(517);
    for (int i = 0; i < 517; ++i) want[i] = 1.0 / (1.0 + std::exp(-(1.5 * x[i] + 0.25))) * z[i] + x[i] * x[i];
    expect_values("flat chain against a loop", got, tf::dims{517}, want, 1e-13, 1e-13);
}

namespace {
template <class D, class T>
auto matmuls_on(const tf::tensor<T>& xa, const tf::tensor<T>& xb, const tf::tensor<T>& xc) {
    tf::placeholder<"a", T, tf::shape<37, 29>, D> a;
    tf::placeholder<"b", T, tf::shape<29, 53>, D> b;
    tf::placeholder<"c", T, tf::shape<3, 37, 29>, D> c;
    tf::session s;
    auto f = [&](const auto& y) { return s.run(y, tf::feed(a, xa), tf::feed(b, xb), tf::feed(c, xc)); };
    return std::vector<tf::tensor<T>>{f(tf::matmul(a, b)),
                                      f(tf::matmul(a, a, tf::transpose_a)),
                                      f(tf::matmul(a, a, tf::transpose_b)),
                                      f(tf::matmul(b, a, tf::transpose_ab)),
                                      f(tf::matmul(c, b)),
                                      f(tf::matmul(c, c, tf::transpose_a))};
}
}  // namespace

TEST_CASE("cuda matmul matches the cpu in every transpose and batched", "[cuda]") {
    rng_t r(12);
    {
        const auto a = uniform_tensor<float>(r, tf::dims{37, 29}, 0, 0, -1, 1);
        const auto b = uniform_tensor<float>(r, tf::dims{29, 53}, 0, 0, -1, 1);
        const auto c = uniform_tensor<float>(r, tf::dims{3, 37, 29}, 0, 0, -1, 1);
        const auto g = matmuls_on<G>(a, b, c), h = matmuls_on<tf::cpu>(a, b, c);
        for (std::size_t i = 0; i < g.size(); ++i) expect_close("float matmul " + std::to_string(i), g[i], h[i], 1e-5);
    }
    const auto a = uniform_tensor<double>(r, tf::dims{37, 29}, 0, 0, -1, 1);
    const auto b = uniform_tensor<double>(r, tf::dims{29, 53}, 0, 0, -1, 1);
    const auto c = uniform_tensor<double>(r, tf::dims{3, 37, 29}, 0, 0, -1, 1);
    const auto g = matmuls_on<G>(a, b, c);
    // against the triple loop
    std::vector<double> want(37 * 53);
    for (int i = 0; i < 37; ++i)
        for (int j = 0; j < 53; ++j) {
            double sum = 0;
            for (int p = 0; p < 29; ++p) sum += a[i * 29 + p] * b[p * 53 + j];
            want[static_cast<std::size_t>(i * 53 + j)] = sum;
        }
    expect_values("double matmul against a loop", g[0], tf::dims{37, 53}, want, 1e-12, 1e-12);
    const auto h = matmuls_on<tf::cpu>(a, b, c);
    for (std::size_t i = 0; i < g.size(); ++i) expect_close("double matmul " + std::to_string(i), g[i], h[i], 1e-12);
}

namespace {
template <class D, class T>
auto reductions_on(const tf::tensor<T>& xa) {
    tf::placeholder<"a", T, tf::shape<5, 6, 7>, D> a;
    tf::session s;
    auto f = [&](const auto& y) { return s.run(y, tf::feed(a, xa)); };
    return std::vector<tf::tensor<T>>{f(tf::sum<2>(a)),       f(tf::sum<0>(a)),         f(tf::mean<1>(a)),
                                      f(tf::max<0, 2>(a)),    f(tf::min<2>(a)),         f(tf::prod<0>(a * T(0.1) + T(1))),
                                      f(tf::mean(a)),         f(tf::sum<0, 1>(a)),      f(tf::max<1>(a)),
                                      f(tf::mean<0>(a, tf::keepdims)), f(tf::sum<1, 2>(a, tf::keepdims))};
}
}  // namespace

TEST_CASE("cuda reductions match the cpu over every kind of axis set", "[cuda]") {
    rng_t r(13);
    const auto xf = uniform_tensor<float>(r, tf::dims{5, 6, 7}, 0, 0, -2, 2);
    const auto g = reductions_on<G>(xf), h = reductions_on<tf::cpu>(xf);
    for (std::size_t i = 0; i < g.size(); ++i) expect_close("float reduction " + std::to_string(i), g[i], h[i], 1e-5);
    const auto xd = uniform_tensor<double>(r, tf::dims{5, 6, 7}, 0, 0, -2, 2);
    const auto gd = reductions_on<G>(xd), hd = reductions_on<tf::cpu>(xd);
    for (std::size_t i = 0; i < gd.size(); ++i) expect_close("double reduction " + std::to_string(i), gd[i], hd[i], 1e-12);
    // a long sum over a leading axis (the GEMV path) against a loop
    tf::placeholder<"x", double, tf::shape<tf::dyn, 3>, G> x;
    const auto big = uniform_tensor<double>(r, tf::dims{4097, 3}, 0, 0, -1, 1);
    tf::session s;
    const auto got = s.run(tf::sum<0>(x), tf::feed(x, big));
    std::vector<double> want(3, 0.0);
    for (int i = 0; i < 4097; ++i)
        for (int j = 0; j < 3; ++j) want[static_cast<std::size_t>(j)] += big[i * 3 + j];
    expect_values("sum over 4097 rows", got, tf::dims{3}, want, 1e-12, 1e-12);
}

namespace {
template <class D, class T>
auto nn_on(const tf::tensor<T>& xa, const tf::tensor<std::int32_t>& xl) {
    tf::placeholder<"a", T, tf::shape<4, 5, 6>, D> a;
    tf::placeholder<"l", std::int32_t, tf::shape<9>, D> l;
    tf::session s;
    auto f = [&](const auto& y) { return s.run(y, tf::feed(a, xa), tf::feed(l, xl)); };
    return std::vector<tf::tensor<T>>{f(tf::softmax(a)), f(tf::log_softmax(a)), f(tf::softmax<1>(a)),
                                      f(tf::one_hot<7, T>(l)), f(tf::transpose<2, 0, 1>(a)), f(tf::transpose<1, 0, 2>(a) * T(2))};
}
}  // namespace

TEST_CASE("cuda softmax one_hot and transpose match the cpu", "[cuda]") {
    rng_t r(14);
    const auto xa = uniform_tensor<float>(r, tf::dims{4, 5, 6}, 0, 0, -4, 4);
    const auto xl = uniform_tensor<std::int32_t>(r, tf::dims{9}, 0, 6, 0, 0);
    const auto g = nn_on<G>(xa, xl), h = nn_on<tf::cpu>(xa, xl);
    for (std::size_t i = 0; i < g.size(); ++i) expect_close("op " + std::to_string(i), g[i], h[i], 1e-5);
    // argmax and argmin, with a tie and a NaN
    tf::tensor<float> xm = xa.clone();
    xm[3] = xm[4];
    xm[20] = std::nanf("");
    const auto arg_on = [&](auto dev) {
        using D = decltype(dev);
        tf::placeholder<"a", float, tf::shape<4, 5, 6>, D> a;
        tf::session s;
        return std::vector<tf::tensor<std::int64_t>>{s.run(tf::argmax<2>(a), tf::feed(a, xm)), s.run(tf::argmin<1>(a), tf::feed(a, xm)),
                                                     s.run(tf::argmax<0>(a), tf::feed(a, xm))};
    };
    const auto ag = arg_on(G{}), ac = arg_on(tf::cpu{});
    for (std::size_t i = 0; i < ag.size(); ++i) {
        INFO("arg reduction " << i);
        CHECK(ag[i].to_vector() == ac[i].to_vector());
    }
}

TEST_CASE("cuda one_hot reports an out of range label as a tf::error", "[cuda]") {
    tf::placeholder<"l", std::int32_t, tf::shape<3>, G> l;
    tf::session s;
    const std::vector<std::int32_t> bad{1, 9, 0};
    CHECK_THROWS_WITH(s.run(tf::one_hot<4, float>(l), tf::feed(l, bad)),
                      Catch::Contains("one_hot: label 9 at flat index 1 is out of range [0, 4)"));
    // a run that updates a variable from the bad labels writes nothing
    tf::variable<"v", float, tf::shape<4>, G> v;
    auto upd = tf::assign_add(v, tf::sum<0>(tf::one_hot<4, float>(l)));
    CHECK_THROWS_WITH(s.run(upd, tf::feed(l, bad)), Catch::Contains("out of range"));
    expect_values("the variable after the failed run", v.value(), tf::dims{4}, {0, 0, 0, 0});
    // the session runs on afterwards
    const auto ok = s.run(tf::one_hot<4, float>(l), tf::feed(l, std::vector<std::int32_t>{3, 0, 1}));
    expect_values("one_hot after the error", ok, tf::dims{3, 4}, {0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0});
}

TEST_CASE("cuda transfers between the host and the gpu, and their gradients", "[cuda]") {
    rng_t r(15);
    tf::placeholder<"x", double, tf::shape<4, 3>> x;  // on the cpu
    tf::variable<"W", double, tf::shape<3, 2>, G> W;
    const auto wv = uniform_tensor<double>(r, tf::dims{3, 2}, 0, 0, -1, 1);
    W.load(wv.view());
    const auto xv = uniform_tensor<double>(r, tf::dims{4, 3}, 0, 0, -1, 1);
    auto y = tf::sum(tf::to<tf::cpu>(tf::tanh(tf::matmul(tf::to<G>(x), W))) * 3.0);  // back on the cpu
    tf::session s;
    const double got = s.run(y, tf::feed(x, xv))[0];
    double want = 0;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) {
            double h = 0;
            for (int p = 0; p < 3; ++p) h += xv[i * 3 + p] * wv[p * 2 + j];
            want += 3 * std::tanh(h);
        }
    CHECK(std::abs(got - want) < 1e-12);
    // the gradient crosses both transfers: against central finite differences
    const auto gw = s.run(tf::grad(y, W), tf::feed(x, xv));
    REQUIRE(extents(gw.dims()) == std::vector<long long>{3, 2});
    for (int e = 0; e < 6; ++e) {
        const double h = 1e-6;
        tf::tensor<double> wp = wv.clone(), wm = wv.clone();
        wp[e] += h;
        wm[e] -= h;
        W.load(wp.view());
        const double fp = s.run(y, tf::feed(x, xv))[0];
        W.load(wm.view());
        const double fm = s.run(y, tf::feed(x, xv))[0];
        CHECK(std::abs(gw[e] - (fp - fm) / (2 * h)) < 1e-7);
    }
}

TEST_CASE("cuda gradients match central finite differences in double precision", "[cuda]") {
    rng_t r(16);
    tf::placeholder<"x", double, tf::shape<5, 4>, G> x;
    tf::placeholder<"l", std::int32_t, tf::shape<5>, G> l;
    tf::variable<"W", double, tf::shape<4, 3>, G> W;
    tf::variable<"b", double, tf::shape<3>, G> b;
    const auto wv = uniform_tensor<double>(r, tf::dims{4, 3}, 0, 0, -1, 1);
    const auto bv = uniform_tensor<double>(r, tf::dims{3}, 0, 0, -1, 1);
    const auto xv = uniform_tensor<double>(r, tf::dims{5, 4}, 0, 0, -1, 1);
    const auto lv = uniform_tensor<std::int32_t>(r, tf::dims{5}, 0, 2, 0, 0);
    W.load(wv.view());
    b.load(bv.view());
    auto logits = tf::matmul(tf::sigmoid(x) * x, W) + b;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, l)) + tf::sum(tf::max<1>(logits)) * 0.1;
    tf::session s;
    auto [gx, gw, gb] = s.run(tf::fetch(tf::grad(loss, x), tf::grad(loss, W), tf::grad(loss, b)), tf::feed(x, xv), tf::feed(l, lv));
    const double h = 1e-6;
    auto f_at = [&](const tf::tensor<double>& xx) { return s.run(loss, tf::feed(x, xx), tf::feed(l, lv))[0]; };
    for (int e = 0; e < 20; ++e) {
        tf::tensor<double> xp = xv.clone(), xm = xv.clone();
        xp[e] += h;
        xm[e] -= h;
        INFO("x element " << e);
        CHECK(std::abs(gx[e] - (f_at(xp) - f_at(xm)) / (2 * h)) < 1e-7);
    }
    for (int e = 0; e < 3; ++e) {
        tf::tensor<double> bp = bv.clone(), bm = bv.clone();
        bp[e] += h;
        bm[e] -= h;
        b.load(bp.view());
        const double fp = f_at(xv);
        b.load(bm.view());
        const double fm = f_at(xv);
        INFO("b element " << e);
        CHECK(std::abs(gb[e] - (fp - fm) / (2 * h)) < 1e-7);
    }
    b.load(bv.view());
    for (int e = 0; e < 12; ++e) {
        tf::tensor<double> wp = wv.clone(), wm = wv.clone();
        wp[e] += h;
        wm[e] -= h;
        W.load(wp.view());
        const double fp = f_at(xv);
        W.load(wm.view());
        const double fm = f_at(xv);
        INFO("W element " << e);
        CHECK(std::abs(gw[e] - (fp - fm) / (2 * h)) < 1e-7);
    }
}

namespace {
// Trains a 20-16-3 MLP with SGD on device D for `steps` steps from the given
// weights; returns the losses and the final weights.
template <class D>
std::pair<std::vector<float>, std::vector<tf::tensor<float>>> train_on(const std::vector<tf::tensor<float>>& init, const tf::tensor<float>& xv,
                                                                       const tf::tensor<std::int32_t>& yv, int steps, bool replay = true,
                                                                       tf::run_stats* stats = nullptr) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 20>, D> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, D> y;
    tf::variable<"W1", float, tf::shape<20, 16>, D> W1;
    tf::variable<"b1", float, tf::shape<16>, D> b1;
    tf::variable<"W2", float, tf::shape<16, 3>, D> W2;
    tf::variable<"b2", float, tf::shape<3>, D> b2;
    W1.load(init[0].view());
    b1.load(init[1].view());
    W2.load(init[2].view());
    b2.load(init[3].view());
    auto logits = tf::matmul(tf::relu(tf::matmul(x, W1) + b1), W2) + b2;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::sgd(0.5f).minimize(loss);
    tf::session s(tf::session_options{.replay = replay});
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) losses.push_back(std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xv), tf::feed(y, yv)))[0]);
    if (stats) *stats = s.stats();
    return {losses, {W1.value().clone(), b1.value().clone(), W2.value().clone(), b2.value().clone()}};
}
// Initial weights of train_on's MLP.
std::vector<tf::tensor<float>> mlp_init(rng_t& r) {
    std::vector<tf::tensor<float>> w;
    w.push_back(uniform_tensor<float>(r, tf::dims{20, 16}, 0, 0, -0.4, 0.4));
    w.push_back(uniform_tensor<float>(r, tf::dims{16}, 0, 0, -0.1, 0.1));
    w.push_back(uniform_tensor<float>(r, tf::dims{16, 3}, 0, 0, -0.4, 0.4));
    w.push_back(uniform_tensor<float>(r, tf::dims{3}, 0, 0, -0.1, 0.1));
    return w;
}
}  // namespace

TEST_CASE("cuda training of an MLP follows the cpu step for step", "[cuda]") {
    rng_t r(17);
    const std::vector<tf::tensor<float>> init = mlp_init(r);
    // three separable classes: the label is the argmax of three input features
    const auto xv = uniform_tensor<float>(r, tf::dims{64, 20}, 0, 0, -1, 1);
    tf::tensor<std::int32_t> yv(tf::dims{64});
    for (int i = 0; i < 64; ++i) {
        const float* row = xv.data() + i * 20;
        yv[i] = row[0] > row[1] ? (row[0] > row[2] ? 0 : 2) : (row[1] > row[2] ? 1 : 2);
    }
    const auto [lg, wg] = train_on<G>(init, xv, yv, 60);
    const auto [lc, wc] = train_on<tf::cpu>(init, xv, yv, 60);
    for (std::size_t i = 0; i < lg.size(); ++i) {
        INFO("step " << i);
        CHECK(std::abs(lg[i] - lc[i]) <= 1e-4f * std::max(1.0f, std::abs(lc[i])));
    }
    CHECK(lg.back() < 0.5f * lg.front());  // it learns
    for (std::size_t i = 0; i < wg.size(); ++i) expect_close("weights " + std::to_string(i), wg[i], wc[i], 1e-3);
}

TEST_CASE("cuda a training step recorded as a CUDA graph and replayed follows the step without it", "[cuda]") {
    rng_t r(19);
    const std::vector<tf::tensor<float>> init = mlp_init(r);
    const auto xv = uniform_tensor<float>(r, tf::dims{64, 20}, 0, 0, -1, 1);
    const auto yv = uniform_tensor<std::int32_t>(r, tf::dims{64}, 0, 2, 0, 0);
    tf::run_stats on_stats, off_stats;
    const auto [lr, wr] = train_on<G>(init, xv, yv, 20, true, &on_stats);
    const auto [ln, wn] = train_on<G>(init, xv, yv, 20, false, &off_stats);
    CHECK(on_stats.recordings == 2);  // SGD swaps its variables' buffers: two pointer sets alternate
    CHECK(on_stats.replays == 18);
    CHECK(off_stats.replays == 0);
    for (std::size_t i = 0; i < lr.size(); ++i) {
        INFO("step " << i);
        CHECK(lr[i] == ln[i]);  // the same kernels on the same values
    }
    for (std::size_t i = 0; i < wr.size(); ++i)
        for (tf::index_t k = 0; k < wr[i].size(); ++k) CHECK(wr[i][k] == wn[i][k]);
    // a replayed step queues its feeds' uploads, one graph launch and the loss's download
    tf::placeholder<"x", float, tf::shape<4>, G> x;
    tf::session s;
    auto y = tf::sum(tf::exp(x) * 2.0f) + tf::sum(x);
    const std::vector<float> xs{0, 0, 0, 0};
    for (int i = 0; i < 3; ++i) CHECK(s.run(y, tf::feed(x, xs))[0] == 8.0f);
    const unsigned long long l0 = tf::cuda::launch_count().load();
    CHECK(s.run(y, tf::feed(x, xs))[0] == 8.0f);
    CHECK(tf::cuda::launch_count().load() - l0 == 3);
    CHECK(s.stats().replays == 2);
}

namespace {
// A dense layer, with and without ReLU, and with transposed operands, on device D.
template <class D, class T, bool TA, bool TB>
std::vector<tf::tensor<T>> dense_on(const tf::tensor<T>& av, const tf::tensor<T>& wv, const tf::tensor<T>& bv) {
    using AS = std::conditional_t<TA, tf::shape<37, tf::dyn>, tf::shape<tf::dyn, 37>>;
    using WS = std::conditional_t<TB, tf::shape<29, 37>, tf::shape<37, 29>>;
    tf::placeholder<"a", T, AS, D> a;
    tf::placeholder<"w", T, WS, D> w;
    tf::placeholder<"b", T, tf::shape<29>, D> b;
    tf::session s;
    auto [r, p] = s.run(tf::fetch(tf::relu(tf::matmul(a, w, tf::transpose_flags<TA, TB>{}) + b), tf::matmul(a, w, tf::transpose_flags<TA, TB>{}) * T(2) + b), tf::feed(a, av),
                        tf::feed(w, wv), tf::feed(b, bv));
    auto plain = s.run(b + tf::matmul(a, w, tf::transpose_flags<TA, TB>{}), tf::feed(a, av), tf::feed(w, wv), tf::feed(b, bv));
    // the weight and bias gradients: one GEMM with the BGRADA epilogue where B's rows are its first axis
    auto [dw, db] = tf::grad(tf::sum(tf::tanh(tf::matmul(a, w, tf::transpose_flags<TA, TB>{}) + b)), w, b);
    auto [gw, gb] = s.run(tf::fetch(dw, db), tf::feed(a, av), tf::feed(w, wv), tf::feed(b, bv));
    return {r, p, plain, gw, gb};
}
template <class T, bool TA, bool TB>
void check_dense(rng_t& r, tf::index_t rows) {
    INFO("rows " << rows << " ta " << TA << " tb " << TB << " " << (sizeof(T) == 4 ? "float" : "double"));
    const auto av = uniform_tensor<T>(r, TA ? tf::dims{37, rows} : tf::dims{rows, 37}, 0, 0, -1, 1);
    const auto wv = uniform_tensor<T>(r, TB ? tf::dims{29, 37} : tf::dims{37, 29}, 0, 0, -1, 1);
    const auto bv = uniform_tensor<T>(r, tf::dims{29}, 0, 0, -1, 1);
    const auto g = dense_on<G, T, TA, TB>(av, wv, bv), c = dense_on<tf::cpu, T, TA, TB>(av, wv, bv);
    for (std::size_t i = 0; i < g.size(); ++i) expect_close("output " + std::to_string(i), g[i], c[i], sizeof(T) == 4 ? 1e-5 : 1e-12);
}
}  // namespace

TEST_CASE("cuda a dense layer's bias and ReLU run in the GEMM (cuBLASLt epilogues) as on the cpu", "[cuda]") {
    rng_t r(23);
    for (tf::index_t rows : {1, 5, 64, 257}) {
        check_dense<float, false, false>(r, rows);
        check_dense<float, true, false>(r, rows);
        check_dense<float, false, true>(r, rows);
        check_dense<double, false, false>(r, rows);
        check_dense<double, true, true>(r, rows);
    }
    // the layer is one launch: the feed's upload, the GEMM, the download
    tf::placeholder<"x", float, tf::shape<tf::dyn, 37>, G> x;
    tf::variable<"W", float, tf::shape<37, 29>, G> W{tf::init::glorot_uniform{}};
    tf::variable<"b", float, tf::shape<29>, G> b{tf::init::uniform{-0.1, 0.1}};
    tf::session s(tf::session_options{.replay = false});
    const auto xv = uniform_tensor<float>(r, tf::dims{8, 37}, 0, 0, -1, 1);
    auto y = tf::relu(tf::matmul(x, W) + b);
    (void)s.run(y, tf::feed(x, xv));
    const unsigned long long l0 = tf::cuda::launch_count().load();
    (void)s.run(y, tf::feed(x, xv));
    CHECK(tf::cuda::launch_count().load() - l0 == 3);
}

TEST_CASE("cuda array ops and their gradients match the cpu", "[cuda]") {
    rng_t r(29);
    for (tf::index_t rows : {1, 7, 64}) {
        const auto xv = uniform_tensor<float>(r, tf::dims{rows, 5, 4}, 0, 0, -1, 1);
        const auto yv = uniform_tensor<float>(r, tf::dims{rows, 3, 4}, 0, 0, -1, 1);
        const auto g = arrays_on<G>(xv, yv), c = arrays_on<tf::cpu>(xv, yv);
        for (std::size_t i = 0; i < g.size(); ++i) expect_close(std::to_string(rows) + " rows: " + array_names[i], g[i], c[i], 2e-5);
    }
}

TEST_CASE("cuda embedding lookups, gathers and sparse updates (SGD, Adam) match the cpu", "[cuda]") {
    rng_t r(43);
    for (tf::index_t n : {1, 7, 3000}) {  // 3000: a radix sort over many blocks
        embedding_feeds f;
        f.ids = uniform_tensor<std::int32_t>(r, tf::dims{n, 3}, 0, 8, 0, 0);
        f.ids64 = tf::tensor<std::int64_t>(tf::dims{5}, {2, 8, 2, 0, 5});
        f.x = uniform_tensor<float>(r, tf::dims{n, 5, 2}, 0, 0, -1, 1);
        const auto sg = embeddings_on<G>(tf::train::sgd(0.01f), f, 3), sc = embeddings_on<tf::cpu>(tf::train::sgd(0.01f), f, 3);
        for (std::size_t i = 0; i < sg.size(); ++i) expect_close(std::to_string(n) + " sgd: " + embedding_names[i], sg[i], sc[i], 1e-4);
        const auto ag = embeddings_on<G>(tf::train::adam(0.01f), f, 3), ac = embeddings_on<tf::cpu>(tf::train::adam(0.01f), f, 3);
        for (std::size_t i = 0; i < ag.size(); ++i) expect_close(std::to_string(n) + " adam: " + embedding_names[i], ag[i], ac[i], 1e-4);
    }
}

TEST_CASE("cuda a bad embedding index is the cpu's tf::error and updates no row", "[cuda]") {
    std::string ge, ce;
    const auto g = lookup_step_on<G>({2, 6, 1, 7}, ge), c = lookup_step_on<tf::cpu>({2, 6, 1, 7}, ce);
    CHECK(ce.find("indices[1] = 6 is not in [0, 6)") != std::string::npos);
    CHECK(ge == ce);
    for (tf::index_t e = 0; e < g.size(); ++e) CHECK(g[e] == c[e]);  // both untouched
    std::string none;
    const auto moved = lookup_step_on<G>({2, 2}, none);
    CHECK(none.empty());
    CHECK(moved[4] != g[4]);
}

namespace {
// The inverse, determinants and a solve of [n, n] matrices on device D, and
// the gradient of a loss through all of them with respect to the matrix.
template <class D, class T>
std::vector<tf::tensor<T>> linalg_on(const tf::tensor<T>& av, const tf::tensor<T>& bv) {
    tf::placeholder<"a", T, tf::shape<tf::dyn, tf::dyn>, D> a;
    tf::placeholder<"b", T, tf::shape<tf::dyn, 3>, D> b;
    auto inv = tf::matrix_inverse(a);
    auto x = tf::solve(a, b);
    auto loss = tf::sum(inv * inv) + tf::log_determinant(a) + tf::sum(x * x);
    tf::session s;
    auto [i, d, l, xs, g] =
        s.run(tf::fetch(inv, tf::matrix_determinant(a), tf::log_determinant(a), x, tf::grad(loss, a)), tf::feed(a, av), tf::feed(b, bv));
    return {i, d, l, xs, g};
}
}  // namespace

TEST_CASE("cuda inverse, determinants and solve (cuBLAS LU) and their gradients match the cpu", "[cuda]") {
    rng_t r(59);
    for (tf::index_t n : {1, 3, 8, 40}) {
        auto av = uniform_tensor<double>(r, tf::dims{n, n}, 0, 0, -1, 1);
        for (tf::index_t i = 0; i < n; ++i) av[i * n + i] += 2.0;  // well conditioned
        const auto bv = uniform_tensor<double>(r, tf::dims{n, 3}, 0, 0, -1, 1);
        const auto g = linalg_on<G>(av, bv), c = linalg_on<tf::cpu>(av, bv);
        for (std::size_t i = 0; i < g.size(); ++i) expect_close(std::to_string(n) + " output " + std::to_string(i), g[i], c[i], 1e-9);
        tf::tensor<float> af(tf::dims{n, n}), bf(tf::dims{n, 3});
        for (tf::index_t e = 0; e < af.size(); ++e) af[e] = static_cast<float>(av[e]);
        for (tf::index_t e = 0; e < bf.size(); ++e) bf[e] = static_cast<float>(bv[e]);
        const auto gf = linalg_on<G>(af, bf), cf = linalg_on<tf::cpu>(af, bf);
        for (std::size_t i = 0; i < gf.size(); ++i) expect_close(std::to_string(n) + " float output " + std::to_string(i), gf[i], cf[i], 1e-3);
    }
    // a singular matrix: the cpu's error for the inverse and the solve; det 0, log det -inf
    const auto singular = [](auto d) {
        tf::placeholder<"a", double, tf::shape<2, 2>, decltype(d)> a;
        tf::placeholder<"b", double, tf::shape<2, 3>, decltype(d)> b;
        tf::session s;
        const tf::tensor<double> av(tf::dims{2, 2}, {1, 2, 2, 4}), bv(tf::dims{2, 3});
        std::vector<std::string> errors;
        for (int k = 0; k < 2; ++k) {
            try {
                if (k == 0) (void)s.run(tf::matrix_inverse(a), tf::feed(a, av));
                else (void)s.run(tf::solve(a, b), tf::feed(a, av), tf::feed(b, bv));
                errors.push_back("");
            } catch (const tf::error& e) {
                errors.push_back(e.what());
            }
        }
        auto [det, logdet] = s.run(tf::fetch(tf::matrix_determinant(a), tf::log_determinant(a)), tf::feed(a, av));
        CHECK(det[0] == 0.0);
        CHECK(std::isinf(logdet[0]));
        return errors;
    };
    const auto ge = singular(G{}), ce = singular(tf::cpu{});
    CHECK(ce[0].find("singular") != std::string::npos);
    CHECK(ge == ce);
}

namespace {
// Four runs of dropout masks (static rate, fed rate) on device D, the third
// with a fed rate outside [0, 1): the masks of the others, and that run's error.
template <class D>
std::pair<std::vector<tf::tensor<float>>, std::string> dropouts_on() {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 33>, D> x;
    tf::placeholder<"r", float, tf::shape<>, D> rate;
    tf::session s;
    const tf::tensor<float> xv(tf::dims{65, 33});
    auto y = tf::fetch(tf::dropout_mask<0.4, 3>(x), tf::dropout_mask(x, rate, 17));
    std::vector<tf::tensor<float>> masks;
    std::string error;
    const float rates[] = {0.5f, 0.1f, 1.5f, 0.7f};
    for (float r : rates) {
        tf::tensor<float> rv(tf::dims{});
        rv[0] = r;
        try {
            auto [a, b] = s.run(y, tf::feed(x, xv), tf::feed(rate, rv));
            masks.push_back(a);
            masks.push_back(b);
        } catch (const tf::error& e) {
            error = e.what();
        }
    }
    return {masks, error};
}
}  // namespace

TEST_CASE("cuda dropout masks equal the cpu's run for run, and a bad fed rate is the cpu's tf::error", "[cuda]") {
    const auto [g, ge] = dropouts_on<G>();
    const auto [c, ce] = dropouts_on<tf::cpu>();
    REQUIRE(g.size() == 6);
    REQUIRE(c.size() == 6);
    for (std::size_t i = 0; i < g.size(); ++i)
        for (tf::index_t k = 0; k < g[i].size(); ++k) {
            INFO("mask " << i << " element " << k);
            CHECK(g[i][k] == c[i][k]);  // the same generator: bit for bit, replayed or not
        }
    CHECK(!ge.empty());
    CHECK(ge == ce);
}

namespace {
// Batch and layer normalisation (compositions of reductions and element-wise
// ops) and their gradients on device D.
template <class D>
std::vector<tf::tensor<float>> norms_on(const tf::tensor<float>& xv, const tf::tensor<float>& gv, const tf::tensor<float>& bv) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 5, 4, 3>, D> x;
    tf::placeholder<"g", float, tf::shape<3>, D> g;
    tf::placeholder<"b", float, tf::shape<3>, D> b;
    auto [m, v] = tf::moments<0, 1, 2>(x);
    auto y = tf::batch_normalization(x, m, v, b, g, 1e-3f);
    auto z = tf::layer_normalization(x, g, b, 1e-3f);
    auto loss = tf::sum(y * y * z) + tf::sum(tf::tanh(z));
    auto [dx, dg, db] = tf::grad(loss, x, g, b);
    tf::session s;
    auto [a, bb, c, d, e, f, h] = s.run(tf::fetch(m, v, y, z, dx, dg, db), tf::feed(x, xv), tf::feed(g, gv), tf::feed(b, bv));
    return {a, bb, c, d, e, f, h};
}
}  // namespace

TEST_CASE("cuda batch and layer normalisation and their gradients match the cpu", "[cuda]") {
    rng_t r(37);
    for (tf::index_t rows : {1, 9}) {
        const auto xv = uniform_tensor<float>(r, tf::dims{rows, 5, 4, 3}, 0, 0, -2, 2);
        const auto gv = uniform_tensor<float>(r, tf::dims{3}, 0, 0, 0.5, 1.5);
        const auto bv = uniform_tensor<float>(r, tf::dims{3}, 0, 0, -0.5, 0.5);
        const auto g = norms_on<G>(xv, gv, bv), c = norms_on<tf::cpu>(xv, gv, bv);
        const char* names[] = {"mean", "variance", "batch_normalization", "layer_normalization", "dx", "dgamma", "dbeta"};
        for (std::size_t i = 0; i < g.size(); ++i) expect_close(std::to_string(rows) + " rows: " + names[i], g[i], c[i], 1e-4);
    }
}

TEST_CASE("cuda variables: the host sees gpu updates and gpu runs see host writes", "[cuda]") {
    tf::variable<"v", float, tf::shape<3>, G> v;
    tf::session s;
    auto inc = tf::assign_add(v, 1.0f);
    s.run(inc);
    s.run(inc);
    expect_values("after two increments", v.value(), tf::dims{3}, {2, 2, 2});
    v.value()[1] = 10.0f;  // a host write
    s.run(inc);
    expect_values("after a host write and an increment", v.value(), tf::dims{3}, {3, 11, 3});
    const std::vector<float> nv{5, 6, 7};
    v.load(tf::view(nv));
    expect_values("read through the graph", s.run(v * 2.0f), tf::dims{3}, {10, 12, 14});
}

TEST_CASE("cuda bad feeds are the same tf::error as on the cpu", "[cuda]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>, G> xg;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>> xc;
    tf::session s;
    const tf::tensor<float> wrong(tf::dims{2, 5});
    std::string eg, ec;
    try {
        s.run(xg * 2.0f, tf::feed(xg, wrong));
    } catch (const tf::error& e) {
        eg = e.what();
    }
    try {
        s.run(xc * 2.0f, tf::feed(xc, wrong));
    } catch (const tf::error& e) {
        ec = e.what();
    }
    CHECK(!eg.empty());
    CHECK(eg == ec);
    CHECK_THROWS_WITH(s.run(xg * 2.0f), Catch::Contains("'x'"));
}

TEST_CASE("cuda out of device memory is a tf::error naming the node and the bytes", "[cuda]") {
    tf::placeholder<"col", float, tf::shape<tf::dyn, 1>, G> col;
    tf::placeholder<"row", float, tf::shape<1, tf::dyn>, G> row;
    tf::session s;
    // 2^19 x 2^19 floats: 1 TiB, far beyond any GPU of today
    const tf::tensor<float> c(tf::dims{1 << 19, 1}), r(tf::dims{1, 1 << 19});
    try {
        s.run(tf::sum(col + row), tf::feed(col, c), tf::feed(row, r));
        FAIL("no error");
    } catch (const tf::error& e) {
        const std::string m = e.what();
        INFO(m);
        CHECK(m.find("add") != std::string::npos);
        CHECK(m.find("1099511627776") != std::string::npos);
    }
    // the session and the device remain usable
    const tf::tensor<float> c2(tf::dims{3, 1}), r2(tf::dims{1, 2});
    const auto ok = s.run(tf::sum(col + row + 1.0f), tf::feed(col, c2), tf::feed(row, r2));
    CHECK(ok[0] == 6.0f);
}


TEST_CASE("cuda optimizers with slots update as on the cpu", "[cuda]") {
    rng_t r(18);
    const auto w0 = uniform_tensor<float>(r, tf::dims{3, 2}, 0, 0, -1, 1);
    const auto xv = uniform_tensor<float>(r, tf::dims{4, 3}, 0, 0, -1, 1);
    const auto g = optimize_on<G>(w0, xv), c = optimize_on<tf::cpu>(w0, xv);
    REQUIRE(g.size() == c.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
        INFO("value " << i);
        CHECK(std::abs(g[i] - c[i]) <= 2e-5f * std::max(1.0f, std::abs(c[i])));
    }
}
