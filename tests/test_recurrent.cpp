// Recurrent layers: SimpleRNN, LSTM and GRU against Keras' outputs for the
// same weights (tests/data/keras_rnn.txt, written by
// scripts/keras_rnn_fixture.py with tensorflow-cpu 2.21.0), gradients
// against central finite differences in double, and a training run.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <typeflow/layers/core.hpp>
#include <typeflow/layers/recurrent.hpp>
#include <typeflow/typeflow.hpp>

#include "grad_check.hpp"

namespace tf = typeflow;

namespace {
std::map<std::string, std::vector<float>> keras_fixture() {
    std::ifstream in(std::string(TYPEFLOW_TEST_DATA_DIR) + "/keras_rnn.txt");
    REQUIRE(in.good());
    std::map<std::string, std::vector<float>> m;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream s(line);
        std::string name;
        std::size_t n = 0;
        s >> name >> n;
        std::vector<float> v(n);
        for (float& e : v) s >> e;
        REQUIRE(s);
        m[name] = v;
    }
    return m;
}
template <class V>
void load(V& var, const std::vector<float>& values) {
    REQUIRE(static_cast<std::size_t>(var.value().size()) == values.size());
    for (std::size_t i = 0; i < values.size(); ++i) var.value()[static_cast<tf::index_t>(i)] = values[i];
}
template <class Spec>
void check_against_keras(const char* name) {
    const auto fx = keras_fixture();
    tf::placeholder<"x", float, tf::shape<tf::dyn, 5, 4>> x;
    typename Spec::template bind<"rnn", tf::dims{tf::dyn, 5, 4}, float, tf::cpu> layer;
    load(layer.kernel, fx.at(std::string(name) + "/kernel"));
    load(layer.recurrent_kernel, fx.at(std::string(name) + "/recurrent_kernel"));
    load(layer.bias, fx.at(std::string(name) + "/bias"));
    const auto& xv = fx.at("x");
    tf::tensor<float> xb({2, 5, 4});
    for (std::size_t i = 0; i < xv.size(); ++i) xb[static_cast<tf::index_t>(i)] = xv[i];
    tf::placeholder<"mask", bool, tf::shape<tf::dyn, 5>> mask;
    tf::tensor<bool> mb({2, 5});
    const auto& mv = fx.at("mask");
    for (std::size_t i = 0; i < mv.size(); ++i) mb[static_cast<tf::index_t>(i)] = mv[i] != 0.f;
    tf::session s;
    auto [y, ym] = s.run(tf::fetch(layer(x, tf::inference), layer(x, mask, tf::inference)), tf::feed(x, xb), tf::feed(mask, mb));
    const auto& want = fx.at(std::string(name) + "/output");
    const auto& want_masked = fx.at(std::string(name) + "/masked_output");
    REQUIRE(y.dims() == tf::dims{2, 5, 3});
    REQUIRE(ym.dims() == tf::dims{2, 5, 3});
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO(name << " output " << i);
        CHECK(y[static_cast<tf::index_t>(i)] == Approx(want[i]).margin(2e-6));
        CHECK(ym[static_cast<tf::index_t>(i)] == Approx(want_masked[i]).margin(2e-6));
    }
    // the padded steps of sequence 0 (masked after step 2) leave its state, so its output, as it was
    for (int t = 3; t < 5; ++t)
        for (int u = 0; u < 3; ++u) CHECK(ym(0, t, u) == ym(0, 2, u));
}
}  // namespace

TEST_CASE("recurrent layers equal Keras for the same weights", "[layers][recurrent]") {
    check_against_keras<tf::layers::simple_rnn<3, true>>("simple_rnn");
    check_against_keras<tf::layers::lstm<3, true>>("lstm");
    check_against_keras<tf::layers::gru<3, true>>("gru");
}

TEST_CASE("recurrent layers: the last step alone, shapes and parameter counts", "[layers][recurrent]") {
    using L = tf::layers::lstm<3>::bind<"l", tf::dims{tf::dyn, tf::dyn, 4}, float, tf::cpu>;
    STATIC_REQUIRE(L::output == tf::dims{tf::dyn, 3});
    STATIC_REQUIRE(L::params == 4 * (4 * 3 + 3 * 3 + 3));  // Keras' LSTM(3) on 4 features: 96
    STATIC_REQUIRE(tf::layers::gru<3>::bind<"g", tf::dims{tf::dyn, 5, 4}, float, tf::cpu>::params == 3 * (4 * 3 + 3 * 3 + 2 * 3));
    STATIC_REQUIRE(tf::layers::simple_rnn<3>::bind<"s", tf::dims{tf::dyn, 5, 4}, float, tf::cpu>::params == 4 * 3 + 3 * 3 + 3);
    L all;
    tf::layers::lstm<3, true>::bind<"m", tf::dims{tf::dyn, tf::dyn, 4}, float, tf::cpu> seq;  // the same weights
    seq.kernel.value() = all.kernel.value().clone();
    seq.recurrent_kernel.value() = all.recurrent_kernel.value().clone();
    seq.bias.value() = all.bias.value().clone();
    // the forget gate's bias starts at 1 (Keras' unit_forget_bias), the others at 0
    CHECK(all.bias.value()[0] == 0.f);
    CHECK(all.bias.value()[3] == 1.f);
    CHECK(all.bias.value()[5] == 1.f);
    CHECK(all.bias.value()[6] == 0.f);
    // the recurrent kernel [3, 12] has orthonormal rows
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double dot = 0;
            for (int k = 0; k < 12; ++k) dot += all.recurrent_kernel.value()[i * 12 + k] * all.recurrent_kernel.value()[j * 12 + k];
            CHECK(dot == Approx(i == j ? 1.0 : 0.0).margin(1e-6));
        }
    tf::placeholder<"x", float, tf::shape<tf::dyn, tf::dyn, 4>> x;
    tf::session s;
    for (const int time : {1, 6}) {
        tf::tensor<float> xb({2, time, 4});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = std::sin(0.9f * static_cast<float>(i));
        auto [last, every] = s.run(tf::fetch(all(x, tf::inference), seq(x, tf::inference)), tf::feed(x, xb));
        REQUIRE(last.dims() == tf::dims{2, 3});
        REQUIRE(every.dims() == tf::dims{2, time, 3});
        for (int b = 0; b < 2; ++b)
            for (int u = 0; u < 3; ++u) CHECK(last(b, u) == every(b, time - 1, u));
    }
}

TEST_CASE("with_state gives the final states: h is the last output, c the LSTM's cell, a mask holds them", "[layers][recurrent]") {
    const auto fx = keras_fixture();
    tf::placeholder<"x", float, tf::shape<tf::dyn, 5, 4>> x;
    tf::placeholder<"mask", bool, tf::shape<tf::dyn, 5>> mask;
    tf::layers::lstm<3, true>::bind<"rnn", tf::dims{tf::dyn, 5, 4}, float, tf::cpu> l;
    load(l.kernel, fx.at("lstm/kernel"));
    load(l.recurrent_kernel, fx.at("lstm/recurrent_kernel"));
    load(l.bias, fx.at("lstm/bias"));
    tf::tensor<float> xb({2, 5, 4});
    for (std::size_t i = 0; i < fx.at("x").size(); ++i) xb[static_cast<tf::index_t>(i)] = fx.at("x")[i];
    tf::tensor<bool> mb({2, 5});
    for (std::size_t i = 0; i < fx.at("mask").size(); ++i) mb[static_cast<tf::index_t>(i)] = fx.at("mask")[i] != 0.f;
    auto [seq, h, c] = l.with_state(x, tf::inference);
    auto [mseq, mh, mc] = l.with_state(x, mask, tf::inference);
    tf::session s;
    auto [sv, hv, cv, msv, mhv, mcv] = s.run(tf::fetch(seq, h, c, mseq, mh, mc), tf::feed(x, xb), tf::feed(mask, mb));
    REQUIRE(hv.dims() == tf::dims{2, 3});
    REQUIRE(cv.dims() == tf::dims{2, 3});
    // c by a plain C++ LSTM over the same weights (gates i, f, g, o), with and without the mask
    const auto& W = fx.at("lstm/kernel");
    const auto& U = fx.at("lstm/recurrent_kernel");
    const auto& B = fx.at("lstm/bias");
    const auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
    for (int masked = 0; masked < 2; ++masked)
        for (int b = 0; b < 2; ++b) {
            double hh[3] = {}, cc[3] = {};
            for (int t = 0; t < 5; ++t) {
                if (masked && !mb(b, t)) continue;
                double a[12];
                for (int j = 0; j < 12; ++j) {
                    a[j] = B[static_cast<std::size_t>(j)];
                    for (int k = 0; k < 4; ++k) a[j] += xb(b, t, k) * W[static_cast<std::size_t>(k * 12 + j)];
                    for (int k = 0; k < 3; ++k) a[j] += hh[k] * U[static_cast<std::size_t>(k * 12 + j)];
                }
                for (int u = 0; u < 3; ++u) {
                    cc[u] = sig(a[3 + u]) * cc[u] + sig(a[u]) * std::tanh(a[6 + u]);
                    hh[u] = sig(a[9 + u]) * std::tanh(cc[u]);
                }
            }
            for (int u = 0; u < 3; ++u) {
                INFO("masked " << masked << " sequence " << b << " unit " << u);
                CHECK((masked ? mcv : cv)(b, u) == Approx(cc[u]).margin(1e-6));
                CHECK((masked ? mhv : hv)(b, u) == Approx(hh[u]).margin(1e-6));
                CHECK((masked ? mhv : hv)(b, u) == (masked ? msv : sv)(b, 4, u));  // the last output
            }
        }
    // sequence 0 is masked after step 2: its final state is the one after step 2
    for (int u = 0; u < 3; ++u) CHECK(mhv(0, u) == msv(0, 2, u));

    tf::layers::gru<3>::bind<"g", tf::dims{tf::dyn, 5, 4}, float, tf::cpu> g;
    auto [out, gh] = g.with_state(x, tf::inference);
    auto [ov, ghv] = s.run(tf::fetch(out, gh), tf::feed(x, xb));
    for (int i = 0; i < 6; ++i) CHECK(ghv[i] == ov[i]);  // without sequences the output is the final h
}

TEST_CASE("recurrent layer gradients match finite differences", "[layers][recurrent][grad]") {
    tf::variable<"x", double, tf::shape<2, 3, 2>> x{tf::init::normal{0.0, 1.0, 51}};
    SECTION("simple_rnn") {
        tf::layers::simple_rnn<2, true>::bind<"s", tf::dims{2, 3, 2}, double, tf::cpu> l;
        auto y = tf::sum(tf::square(l(x, tf::training)));
        TFTEST_CHECK_GRAD("simple_rnn", y, l.kernel, l.recurrent_kernel, l.bias, x);
    }
    SECTION("lstm") {
        tf::layers::lstm<2, true>::bind<"l", tf::dims{2, 3, 2}, double, tf::cpu> l;
        tf::variable<"w", double, tf::shape<2, 3, 2>> w{tf::init::normal{0.0, 1.0, 52}};
        auto y = tf::sum(l(x, tf::training) * w);
        TFTEST_CHECK_GRAD("lstm", y, l.kernel, l.recurrent_kernel, l.bias, x);
    }
    SECTION("lstm with a mask: padded steps have no effect on the value or the gradient") {
        tf::layers::lstm<2>::bind<"l", tf::dims{2, 3, 2}, double, tf::cpu> l;
        tf::placeholder<"m", bool, tf::shape<2, 3>> m;
        tf::tensor<bool> mb({2, 3}, {true, true, false, true, true, true});
        auto y = tf::sum(tf::square(l(x, m, tf::training)));
        tf::session s;
        auto gx = s.run(tf::grad(y, x), tf::feed(m, mb));
        for (int f = 0; f < 2; ++f) CHECK(gx(0, 2, f) == 0.0);  // sequence 0's padded step
        auto [gk, gu] = s.run(tf::fetch(tf::grad(y, l.kernel), tf::grad(y, l.recurrent_kernel)), tf::feed(m, mb));
        auto fd = [&](auto& v, const tf::tensor<double>& analytic) {
            auto& t = v.value();
            for (tf::index_t i = 0; i < t.size(); ++i) {
                const double x0 = t[i];
                t[i] = x0 + 1e-6;
                const double p = s.run(y, tf::feed(m, mb))[0];
                t[i] = x0 - 1e-6;
                const double q = s.run(y, tf::feed(m, mb))[0];
                t[i] = x0;
                CHECK(analytic[i] == Approx((p - q) / 2e-6).epsilon(1e-6).margin(1e-8));
            }
        };
        fd(l.kernel, gk);
        fd(l.recurrent_kernel, gu);
    }
    SECTION("gru, the last step") {
        tf::layers::gru<2>::bind<"g", tf::dims{2, 3, 2}, double, tf::cpu> l;
        l.bias.value()[1] = 0.3;
        l.bias.value()[10] = -0.2;
        auto y = tf::sum(tf::square(l(x, tf::training)));
        TFTEST_CHECK_GRAD("gru", y, l.kernel, l.recurrent_kernel, l.bias, x);
    }
}

TEST_CASE("an LSTM learns the sign of a sequence's sum", "[layers][recurrent][train]") {
    // 256 sequences of 8 steps, 1 feature; label 1 when the sum is positive
    tf::placeholder<"x", float, tf::shape<tf::dyn, 8, 1>> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>> y;
    tf::layers::lstm<8>::bind<"lstm", tf::dims{tf::dyn, 8, 1}, float, tf::cpu> rnn;
    tf::layers::dense<2>::bind<"out", tf::dims{tf::dyn, 8}, float, tf::cpu> out;
    auto logits = out(rnn(x, tf::training), tf::training);
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::adam(0.02f).minimize(loss);
    auto correct = tf::mean(tf::cast<float>(tf::equal(tf::argmax<1>(logits), tf::cast<std::int64_t>(y))));
    tf::tensor<float> xb({256, 8, 1});
    tf::tensor<std::int32_t> yb({256});
    tf::init::detail::rng r(7);
    for (int i = 0; i < 256; ++i) {
        double total = 0;
        for (int t = 0; t < 8; ++t) {
            const double v = r.normal();
            xb[i * 8 + t] = static_cast<float>(v);
            total += v;
        }
        yb[i] = total > 0 ? 1 : 0;
    }
    tf::session s;
    for (int epoch = 0; epoch < 150; ++epoch) s.run(step, tf::feed(x, xb), tf::feed(y, yb));
    const float accuracy = s.run(correct, tf::feed(x, xb), tf::feed(y, yb))[0];
    INFO("accuracy " << accuracy);
    CHECK(accuracy >= 0.95f);
}
