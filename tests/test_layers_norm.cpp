// The dropout, batch normalisation and layer normalisation layers: names,
// shapes and parameter counts (Keras counts the moving statistics as
// non-trainable parameters); batch_norm's training output, its moving
// statistics after k steps against their closed form, and its inference
// output from them, on every device; gradients through the training-mode
// layers against finite differences; dropout layers' masks; and a sequential
// CNN with batch_norm and dropout that learns the 8x8 digits, predicts
// deterministically in inference mode and saves and loads its moving
// statistics with its weights.
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "digits.hpp"
#include "io_support.hpp"
#include "support.hpp"

#include <typeflow/models.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;
namespace L = tf::layers;
using namespace tftest;
using tf::shape;

namespace {

// (momentum 0.9: with Keras' 0.99 the moving statistics lag behind the weights
// over the few hundred steps trained here, and inference suffers for it)
using bn_cnn = tf::models::sequential<L::input<float, 8, 8, 1>, L::conv2d<8, 3, L::relu>, L::batch_norm<0.9>,
                                      L::dropout<0.25>, L::flatten, L::dense<32, L::relu>, L::batch_norm<0.9>,
                                      L::dropout<0.5>, L::dense<10>>;
// conv2d 80; batch_normalization 4 * 8 (16 trainable); dense 288 * 32 + 32 = 9248;
// batch_normalization_1 4 * 32 (64 trainable); dense_1 330.
static_assert(bn_cnn::params == 9818 && bn_cnn::trainable_params == 9738);
static_assert(bn_cnn::output_dims == tf::dims{tf::dyn, 10});
static_assert(std::tuple_element_t<2, bn_cnn::layers_type>::output == tf::dims{tf::dyn, 6, 6, 8});
static_assert(L::layer_norm<>::bind<"ln", tf::dims{tf::dyn, 7}, float, tf::cpu>::params == 14);
static_assert(L::layer_norm<1e-5, false>::bind<"ln", tf::dims{tf::dyn, 7}, float, tf::cpu>::trainable_params == 7);
static_assert(L::batch_norm<0.9, 1e-5, false, false>::bind<"bn", tf::dims{tf::dyn, 7}, float, tf::cpu>::params == 14);
static_assert(L::batch_norm<0.9, 1e-5, false, false>::bind<"bn", tf::dims{tf::dyn, 7}, float, tf::cpu>::trainable_params == 0);
static_assert(!L::batch_norm<>::accepts(tf::dims{tf::dyn}) && !L::layer_norm<>::accepts(tf::dims{tf::dyn, tf::dyn}));

using ce = tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>;
using batch = std::pair<tf::tensor<float>, tf::tensor<std::int32_t>>;

using tftest::digits;

template <class T>
std::vector<double> as_vector(const tf::tensor<T>& t) {
    std::vector<double> v(static_cast<std::size_t>(t.size()));
    for (tf::index_t i = 0; i < t.size(); ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(t[i]);
    return v;
}
// a == b, element by element (a CHECK on the vectors would print them whole)
bool equal(const std::vector<double>& a, const std::vector<double>& b) { return a == b; }

// Per-channel (last axis) mean and biased variance of a row-major tensor.
struct channel_stats {
    std::vector<double> mean, variance;
};
channel_stats stats_of(const std::vector<double>& x, std::size_t channels) {
    channel_stats s{std::vector<double>(channels, 0.0), std::vector<double>(channels, 0.0)};
    const double n = static_cast<double>(x.size() / channels);
    for (std::size_t e = 0; e < x.size(); ++e) s.mean[e % channels] += x[e] / n;
    for (std::size_t e = 0; e < x.size(); ++e) s.variance[e % channels] += std::pow(x[e] - s.mean[e % channels], 2) / n;
    return s;
}
// (x - mean) / sqrt(var + eps) * gamma + beta per channel.
std::vector<double> normalized(const std::vector<double>& x, const std::vector<double>& mean, const std::vector<double>& var,
                               const std::vector<double>& gamma, const std::vector<double>& beta, double eps) {
    std::vector<double> y(x.size());
    const std::size_t c = mean.size();
    for (std::size_t e = 0; e < x.size(); ++e)
        y[e] = (x[e] - mean[e % c]) / std::sqrt(var[e % c] + eps) * gamma[e % c] + beta[e % c];
    return y;
}

}  // namespace

TEST_CASE("layers: dropout and the normalisation layers' names, parameter counts and variables", "[layers][norm]") {
    bn_cnn m;
    const std::string s = m.summary_string();
    INFO(s);
    CHECK(s.find("batch_normalization (BatchNormalization)") != std::string::npos);
    CHECK(s.find("batch_normalization_1 (BatchNormalization)") != std::string::npos);
    CHECK(s.find("dropout_1 (Dropout)") != std::string::npos);
    CHECK(s.find("Total params: 9818\n") != std::string::npos);
    CHECK(s.find("Trainable params: 9738\n") != std::string::npos);
    CHECK(s.find("Non-trainable params: 80\n") != std::string::npos);
    std::vector<std::string> names;
    m.for_each_variable([&](const auto& v) { names.emplace_back(v.name()); });
    const std::vector<std::string> want{"conv2d/kernel", "conv2d/bias", "batch_normalization/gamma",
                                        "batch_normalization/beta", "batch_normalization/moving_mean",
                                        "batch_normalization/moving_variance", "dense/kernel", "dense/bias",
                                        "batch_normalization_1/gamma", "batch_normalization_1/beta",
                                        "batch_normalization_1/moving_mean", "batch_normalization_1/moving_variance",
                                        "dense_1/kernel", "dense_1/bias"};
    CHECK(names == want);
    // Keras' initial values; only gamma and beta are trainable
    const auto& bn = m.layer<1>();
    CHECK(equal(as_vector(bn.gamma.value()), std::vector<double>(8, 1.0)));
    CHECK(equal(as_vector(bn.beta.value()), std::vector<double>(8, 0.0)));
    CHECK(equal(as_vector(bn.moving_mean.value()), std::vector<double>(8, 0.0)));
    CHECK(equal(as_vector(bn.moving_variance.value()), std::vector<double>(8, 1.0)));
    static_assert(decltype(bn.gamma)::trainable() && decltype(bn.beta)::trainable());
    static_assert(!decltype(bn.moving_mean)::trainable() && !decltype(bn.moving_variance)::trainable());
    // the optimizer's variables are the trainable ones the loss reaches: the moving statistics are not among them
    bn_cnn::input_placeholder x;
    using trained = tf::train::trainable_variables_t<decltype(tf::sum(m(x, tf::training)))>;
    static_assert(trained::size == 10);
}

TEMPLATE_TEST_CASE("layers: batch_norm normalises with batch statistics in training, updates the moving statistics, "
                   "and uses them in inference",
                   "[layers][norm]", tf::cpu, tf::reference) {
    using D = TestType;
    using layer_t = L::batch_norm<0.9, 1e-3>::bind<"bn", tf::dims{tf::dyn, 2, 3, 4}, double, D>;
    static_assert(layer_t::params == 16 && layer_t::trainable_params == 8);
    layer_t bn;
    tf::placeholder<"x", double, shape<tf::dyn, 2, 3, 4>, D> x;
    rng_t r(31);
    const auto y_train = bn(x, tf::training);
    const auto y_infer = bn(x, tf::inference);
    std::vector<double> mm(4, 0.0), mv(4, 1.0);  // the closed form of the moving statistics
    tf::session s;
    // first with gamma 1 and beta 0: per-channel mean 0 and variance v / (v + eps), about 1
    for (int step = 0; step < 4; ++step) {
        INFO("step " << step);
        if (step == 2) {
            bn.gamma.load(uniform_tensor<double>(r, {4}, 0, 0, 0.5, 2));
            bn.beta.load(uniform_tensor<double>(r, {4}, 0, 0, -1, 1));
        }
        const int n = 3 + 2 * step;
        auto tx = uniform_tensor<double>(r, {n, 2, 3, 4}, 0, 0, -4, 4);
        for (tf::index_t i = 0; i < tx.size(); ++i) tx[i] += static_cast<double>(i % 4) - 1.5;  // channel offsets
        const auto xs = as_vector(tx);
        const auto batch_stats = stats_of(xs, 4);
        const auto y = as_vector(s.run(y_train, tf::feed(x, tx)));
        if (step < 2) {
            const auto ys = stats_of(y, 4);
            for (std::size_t c = 0; c < 4; ++c) {
                CHECK(std::abs(ys.mean[c]) < 1e-12);
                CHECK(ys.variance[c] == Approx(batch_stats.variance[c] / (batch_stats.variance[c] + 1e-3)).epsilon(1e-12));
                CHECK(std::abs(ys.variance[c] - 1) < 1e-3);
            }
        }
        const auto want = normalized(xs, batch_stats.mean, batch_stats.variance, as_vector(bn.gamma.value()),
                                     as_vector(bn.beta.value()), 1e-3);
        for (std::size_t e = 0; e < y.size(); ++e) REQUIRE(y[e] == Approx(want[e]).epsilon(1e-12).margin(1e-12));
        for (std::size_t c = 0; c < 4; ++c) {
            mm[c] = 0.9 * mm[c] + 0.1 * batch_stats.mean[c];
            mv[c] = 0.9 * mv[c] + 0.1 * batch_stats.variance[c];
            CHECK(bn.moving_mean.value()[static_cast<tf::index_t>(c)] == Approx(mm[c]).epsilon(1e-13).margin(1e-15));
            CHECK(bn.moving_variance.value()[static_cast<tf::index_t>(c)] == Approx(mv[c]).epsilon(1e-13));
        }
        // inference: the moving statistics, which it leaves alone
        const auto tz = uniform_tensor<double>(r, {2, 2, 3, 4}, 0, 0, -3, 3);
        const auto z = as_vector(s.run(y_infer, tf::feed(x, tz)));
        const auto want_z =
            normalized(as_vector(tz), mm, mv, as_vector(bn.gamma.value()), as_vector(bn.beta.value()), 1e-3);
        for (std::size_t e = 0; e < z.size(); ++e) REQUIRE(z[e] == Approx(want_z[e]).epsilon(1e-12).margin(1e-12));
        CHECK(!equal(as_vector(bn.moving_mean.value()), std::vector<double>(4, 0.0)));
        for (std::size_t c = 0; c < 4; ++c)
            CHECK(bn.moving_mean.value()[static_cast<tf::index_t>(c)] == Approx(mm[c]).epsilon(1e-13).margin(1e-15));
    }
    // in float, over [batch, features], with the default momentum and epsilon
    using flat_t = L::batch_norm<>::bind<"bn_f", tf::dims{tf::dyn, 5}, float, D>;
    flat_t f;
    tf::placeholder<"xf", float, shape<tf::dyn, 5>, D> xf;
    const auto txf = uniform_tensor<float>(r, {64, 5}, 0, 0, -5, 9);
    const auto yf = as_vector(s.run(f(xf, tf::training), tf::feed(xf, txf)));
    const auto st = stats_of(yf, 5), bs = stats_of(as_vector(txf), 5);
    for (std::size_t c = 0; c < 5; ++c) {
        CHECK(std::abs(st.mean[c]) < 1e-5);
        CHECK(std::abs(st.variance[c] - 1) < 1e-3);
        CHECK(f.moving_mean.value()[static_cast<tf::index_t>(c)] == Approx(0.01 * bs.mean[c]).epsilon(1e-5));
        CHECK(f.moving_variance.value()[static_cast<tf::index_t>(c)] == Approx(0.99 + 0.01 * bs.variance[c]).epsilon(1e-6));
    }
}

TEMPLATE_TEST_CASE("layers: gradients through batch_norm (training and inference) and layer_norm match finite differences",
                   "[layers][norm][grad]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(32);
    tf::variable<"x", double, shape<4, 2, 2, 3>, D> x;
    x.load(uniform_tensor<double>(r, {4, 2, 2, 3}, 0, 0, -2, 3));
    const auto c = tf::constant<shape<4, 2, 2, 3>, D>(uniform_tensor<double>(r, {4, 2, 2, 3}, 0, 0, -1, 1));
    L::batch_norm<>::bind<"bn", tf::dims{4, 2, 2, 3}, double, D> bn;
    bn.gamma.load(uniform_tensor<double>(r, {3}, 0, 0, 0.5, 2));
    bn.beta.load(uniform_tensor<double>(r, {3}, 0, 0, -1, 1));
    bn.moving_mean.load(uniform_tensor<double>(r, {3}, 0, 0, -1, 1));
    bn.moving_variance.load(uniform_tensor<double>(r, {3}, 0, 0, 0.5, 2));
    // the training output is one let (its graph spells x five times; the let's name spells it once)
    static_assert(tf::detail::is_let_v<std::remove_cvref_t<decltype(bn(x, tf::training))>>);
    // (every evaluation updates the moving statistics; the training output does not read them)
    TFTEST_CHECK_GRAD("batch_norm, training", tf::sum(c * bn(x, tf::training)), x, bn.gamma, bn.beta);
    TFTEST_CHECK_GRAD("batch_norm, inference", tf::sum(c * bn(x, tf::inference)), x, bn.gamma, bn.beta);
    L::layer_norm<>::bind<"ln", tf::dims{4, 2, 2, 3}, double, D> ln;
    ln.gamma.load(uniform_tensor<double>(r, {3}, 0, 0, 0.5, 2));
    ln.beta.load(uniform_tensor<double>(r, {3}, 0, 0, -1, 1));
    TFTEST_CHECK_GRAD("layer_norm", tf::sum(c * ln(x, tf::training)), x, ln.gamma, ln.beta);
}

TEMPLATE_TEST_CASE("layers: layer_norm normalises each example over its last axis, in both modes", "[layers][norm]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    using layer_t = L::layer_norm<1e-5>::bind<"ln", tf::dims{tf::dyn, 3, 6}, double, D>;
    static_assert(layer_t::params == 12 && layer_t::trainable_params == 12);
    layer_t ln;
    rng_t r(33);
    ln.gamma.load(uniform_tensor<double>(r, {6}, 0, 0, 0.5, 2));
    ln.beta.load(uniform_tensor<double>(r, {6}, 0, 0, -1, 1));
    tf::placeholder<"x", double, shape<tf::dyn, 3, 6>, D> x;
    const auto tx = uniform_tensor<double>(r, {5, 3, 6}, 0, 0, -4, 7);
    tf::session s;
    auto [yt, yi] = s.run(tf::fetch(ln(x, tf::training), ln(x, tf::inference)), tf::feed(x, tx));
    const auto xs = as_vector(tx);
    const auto g = as_vector(ln.gamma.value()), b = as_vector(ln.beta.value());
    long long bad = 0;
    for (std::size_t row = 0; row < 15; ++row) {
        double m = 0, v = 0;
        for (std::size_t k = 0; k < 6; ++k) m += xs[row * 6 + k] / 6;
        for (std::size_t k = 0; k < 6; ++k) v += std::pow(xs[row * 6 + k] - m, 2) / 6;
        for (std::size_t k = 0; k < 6; ++k) {
            const double want = (xs[row * 6 + k] - m) / std::sqrt(v + 1e-5) * g[k] + b[k];
            const auto e = static_cast<tf::index_t>(row * 6 + k);
            bad += !(std::abs(yt[e] - want) < 1e-12 * std::max(1.0, std::abs(want))) || yi[e] != yt[e];
        }
    }
    CHECK(bad == 0);
}

TEMPLATE_TEST_CASE("layers: dropout drops in training only, each layer of a model draws its own masks", "[layers][dropout]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    constexpr tf::dims in{tf::dyn, 500};
    L::dropout<0.3>::bind<"dropout", in, float, D> d0;
    L::dropout<0.3>::bind<"dropout_1", in, float, D> d1;
    L::dropout<0.3, 5>::bind<"dropout", in, float, D> d0_seeded;
    static_assert(decltype(d0)::params == 0 && decltype(d0)::output == in);
    tf::placeholder<"x", float, shape<tf::dyn, 500>, D> x;
    static_assert(std::is_same_v<decltype(d0(x, tf::inference)), decltype(x)>);  // the identity
    rng_t r(34);
    const auto tx = uniform_tensor<float>(r, {100, 500}, 0, 0, 1, 2);  // no zeros
    // (one graph, run again and again: a graph built anew is planned anew, and a new plan draws from run 0)
    const auto f = tf::fetch(d0(x, tf::training), d1(x, tf::training), d0_seeded(x, tf::training));
    tf::session s;
    auto [a, b, c] = s.run(f, tf::feed(x, tx));
    const float scale = static_cast<float>(1.0 / 0.7);
    long long dropped = 0, bad = 0, same01 = 0, same0s = 0;
    for (tf::index_t i = 0; i < tx.size(); ++i) {
        dropped += a[i] == 0;
        bad += a[i] != 0 && a[i] != tx[i] * scale;
        same01 += (a[i] == 0) == (b[i] == 0);
        same0s += (a[i] == 0) == (c[i] == 0);
    }
    CHECK(bad == 0);
    CHECK(std::abs(static_cast<double>(dropped) / 50000 - 0.3) < 0.01);
    // independent masks agree on r^2 + (1 - r)^2 = 0.58 of the elements
    CHECK(std::abs(static_cast<double>(same01) / 50000 - 0.58) < 0.015);
    CHECK(std::abs(static_cast<double>(same0s) / 50000 - 0.58) < 0.015);
    // the next step draws new masks; a new session the same sequence again
    auto [a_next, b_next, c_next] = s.run(f, tf::feed(x, tx));
    CHECK(!equal(as_vector(a_next), as_vector(a)));
    CHECK(!equal(as_vector(b_next), as_vector(b)));
    CHECK(!equal(as_vector(c_next), as_vector(c)));
    tf::session again;
    auto [a2, b2, c2] = again.run(f, tf::feed(x, tx));
    CHECK(equal(as_vector(a2), as_vector(a)));
    CHECK(equal(as_vector(b2), as_vector(b)));
    CHECK(equal(as_vector(c2), as_vector(c)));
    CHECK(equal(as_vector(s.run(d0(x, tf::inference), tf::feed(x, tx))), as_vector(tx)));
}

TEST_CASE("layers: a CNN with batch_norm and dropout learns the 8x8 digits, inference is deterministic, moving "
          "statistics are saved and loaded",
          "[layers][norm][model]") {
    const auto train = digits(false, 32), test = digits(true, 72);
    auto model = bn_cnn{}.compile(ce{}, tf::optimizers::adam{.learning_rate = 0.005}, tf::metrics::accuracy{});
    model.set_threads(2);
    const auto& bn0 = model.model().layer<1>();
    const auto& bn1 = model.model().layer<5>();
    const auto before = model.evaluate(test);
    CHECK(equal(as_vector(bn0.moving_mean.value()), std::vector<double>(8, 0.0)));  // evaluation updates nothing
    const tf::models::history h = model.fit(train, {.epochs = 4, .verbose = 0});
    const auto& loss = h["loss"];
    const auto after = model.evaluate(test);
    INFO("loss " << loss.front() << " -> " << loss.back() << "; test accuracy " << before.at("accuracy") << " -> "
                 << after.at("accuracy"));
    CHECK(loss.back() < 0.5 * loss.front());
    CHECK(before.at("accuracy") < 0.3);
    CHECK(after.at("accuracy") >= 0.9);
    CHECK(model.iterations() == 4 * 45);
    // training moved the moving statistics away from their initial values, evaluation does not move them
    const tf::tensor<float> mm0 = bn0.moving_mean.value().clone(), mv1 = bn1.moving_variance.value().clone();
    CHECK(!equal(as_vector(mm0), std::vector<double>(8, 0.0)));
    CHECK(!equal(as_vector(mv1), std::vector<double>(32, 1.0)));
    model.evaluate(test);
    CHECK(iotest::same_bits(mm0, bn0.moving_mean.value()));
    // inference predictions are deterministic
    const tf::tensor<float> p0 = model.predict(test[0].first);
    CHECK(iotest::same_bits(p0, model.predict(test[0].first)));
    // the weights file holds the moving statistics
    iotest::temp_dir dir;
    model.save_weights(dir / "w.tfckpt");
    {  // training-mode outputs differ from run to run (dropout), and each run updates the moving statistics
        bn_cnn::input_placeholder x;
        const auto y = model.model()(x, tf::training);
        tf::session s;
        const auto t0 = as_vector(s.run(y, tf::feed(x, test[0].first)));
        const auto t1 = as_vector(s.run(y, tf::feed(x, test[0].first)));
        CHECK(!equal(t0, t1));
    }
    CHECK(!iotest::same_bits(mm0, bn0.moving_mean.value()));
    CHECK(!iotest::same_bits(mv1, bn1.moving_variance.value()));
    CHECK(!iotest::same_bits(p0, model.predict(test[0].first)));
    model.load_weights(dir / "w.tfckpt");
    CHECK(iotest::same_bits(mm0, bn0.moving_mean.value()));
    CHECK(iotest::same_bits(mv1, bn1.moving_variance.value()));
    CHECK(iotest::same_bits(p0, model.predict(test[0].first)));
}
