// session::run from several threads at once (TensorFlow's concurrent steps
// on one model): results equal to sequential runs, a plan per concurrent
// call, the session's threads shared, errors per call; and 4 threads of
// asynchronous (Hogwild) SGD steps on one model reaching the loss of the
// same number of steps on one thread.
#include <catch2/catch.hpp>

#include <typeflow/io/saver.hpp>
#include <typeflow/typeflow.hpp>

#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tf = typeflow;

namespace {

tf::tensor<float> random_tensor(const tf::dims& d, std::uint32_t seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    tf::tensor<float> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) t[i] = u(g);
    return t;
}

}  // namespace

TEST_CASE("runs of one graph on several threads give the results of sequential runs", "[unit][session][concurrent]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 64>> x;
    tf::variable<"W", float, tf::shape<64, 32>> W{tf::init::glorot_uniform{}};
    auto y = tf::sum<1>(tf::tanh(tf::matmul(x, W)));
    for (int pool : {1, 2}) {
        tf::session s{tf::session_options{.threads = pool}};
        constexpr int threads = 4, runs = 25;
        std::vector<tf::tensor<float>> inputs, expected;
        for (int i = 0; i < threads * runs; ++i) {
            inputs.push_back(random_tensor(tf::dims{17 + i % 5, 64}, static_cast<std::uint32_t>(i)));
            expected.push_back(s.run(y, tf::feed(x, inputs.back())));
        }
        const std::size_t plans_before = s.stats().plans_built;
        std::atomic<int> mismatches{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&, t] {
                for (int r = 0; r < runs; ++r) {
                    const int i = t * runs + r;
                    const tf::tensor<float> got = s.run(y, tf::feed(x, inputs[static_cast<std::size_t>(i)]));
                    const tf::tensor<float>& want = expected[static_cast<std::size_t>(i)];
                    bool same = got.dims() == want.dims();
                    for (tf::index_t k = 0; same && k < got.size(); ++k) same = got[k] == want[k];  // bit-equal
                    if (!same) ++mismatches;
                }
            });
        for (auto& t : ts) t.join();
        INFO("session threads " << pool);
        CHECK(mismatches == 0);
        // a plan per call running at once, at most one per thread
        CHECK(s.stats().plans_built >= plans_before);
        CHECK(s.stats().plans_built <= plans_before + threads - 1);
    }
}

TEST_CASE("a bad feed on one thread is that call's error and the others run", "[unit][session][concurrent]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 8>> x;
    auto y = tf::sum(x * x);
    tf::session s{tf::session_options{.threads = 2}};
    std::atomic<int> ok{0}, errors{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([&, t] {
            for (int r = 0; r < 20; ++r) {
                const bool bad = t == 1 && r % 2 == 0;
                tf::tensor<float> v(tf::dims{3, bad ? 7 : 8});
                for (tf::index_t k = 0; k < v.size(); ++k) v[k] = 1.f;
                try {
                    const float got = s.run(y, tf::feed(x, v)).item();
                    if (got == 24.f) ++ok;
                } catch (const tf::error& e) {
                    if (bad && std::string(e.what()).find("'x'") != std::string::npos) ++errors;
                }
            }
        });
    for (auto& t : ts) t.join();
    CHECK(ok == 70);
    CHECK(errors == 10);
}

// y = X w* + b* + noise, fit by SGD on minibatches: the asynchronous updates
// of 4 threads (no locks, as TensorFlow's use_locking=False) reach the loss
// of one thread taking all their steps.
TEST_CASE("4 threads of Hogwild SGD steps on one model reach the single-thread loss", "[unit][session][concurrent]") {
    constexpr int n = 2048, features = 8, batch = 32, steps = 400;
    tf::tensor<float> X(tf::dims{n, features}), Y(tf::dims{n, 1});
    std::mt19937 g(5);
    std::normal_distribution<float> noise(0.f, 0.01f);
    const float w_true[features] = {0.5f, -1.f, 2.f, 0.25f, -0.75f, 1.5f, -2.f, 1.f};
    for (int i = 0; i < n; ++i) {
        float v = 0.3f;
        for (int f = 0; f < features; ++f) {
            X(i, f) = std::uniform_real_distribution<float>(-1.f, 1.f)(g);
            v += w_true[f] * X(i, f);
        }
        Y(i, 0) = v + noise(g);
    }
    auto train = [&](int threads) {
        tf::placeholder<"x", float, tf::shape<tf::dyn, features>> x;
        tf::placeholder<"y", float, tf::shape<tf::dyn, 1>> y;
        tf::variable<"w", float, tf::shape<features, 1>> w{tf::init::zeros{}};
        tf::variable<"b", float, tf::shape<1>> b{tf::init::zeros{}};
        auto loss = tf::mean(tf::square(tf::matmul(x, w) + b - y));
        auto step = tf::train::sgd(0.1f).minimize(loss);
        tf::session s{tf::session_options{.threads = 1}};
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&, t] {
                std::mt19937 pick(static_cast<std::uint32_t>(100 + t));
                tf::tensor<float> xb(tf::dims{batch, features}), yb(tf::dims{batch, 1});
                for (int k = 0; k < steps / threads; ++k) {
                    for (int r = 0; r < batch; ++r) {
                        const int i = static_cast<int>(pick() % n);
                        for (int f = 0; f < features; ++f) xb(r, f) = X(i, f);
                        yb(r, 0) = Y(i, 0);
                    }
                    s.run(step, tf::feed(x, xb), tf::feed(y, yb));
                }
            });
        for (auto& t : ts) t.join();
        return static_cast<double>(s.run(loss, tf::feed(x, X), tf::feed(y, Y)).item());
    };
    const double one = train(1), four = train(4);
    INFO("loss after " << steps << " steps: 1 thread " << one << ", 4 threads " << four);
    CHECK(one < 1e-3);  // from about 2.6 at w = 0
    CHECK(four < 1e-3);
    CHECK(four < 2 * one + 1e-4);
}

TEST_CASE("locked optimizers lose no update of concurrent steps, and equal unlocked ones on one thread", "[unit][session][concurrent]") {
    constexpr int threads = 4, steps = 250;
    SECTION("sgd: each step subtracts exactly lr * gradient") {
        tf::placeholder<"c", double, tf::shape<16>> c;
        tf::variable<"w", double, tf::shape<16>> w{tf::init::zeros{}};
        auto loss = tf::sum(w * c);  // gradient c whatever w is
        auto step = tf::train::use_locking(tf::train::sgd(0.5)).minimize(loss);
        tf::tensor<double> cv({16});
        for (int i = 0; i < 16; ++i) cv[i] = double(1 << (i % 4));  // updates are exact in double
        tf::session s{tf::session_options{.threads = 1}};
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&] {
                for (int k = 0; k < steps; ++k) s.run(step, tf::feed(c, cv));
            });
        for (auto& t : ts) t.join();
        for (int i = 0; i < 16; ++i) CHECK(w.value()[i] == -0.5 * threads * steps * cv[i]);
    }
    SECTION("adam: its step count and slots see every step") {
        tf::placeholder<"c", float, tf::shape<8>> c;
        tf::variable<"v", float, tf::shape<8>> v{tf::init::zeros{}};
        auto step = tf::train::use_locking(tf::train::adam(0.01f)).minimize(tf::sum(v * c));
        tf::tensor<float> cv({8}, {1, 1, 1, 1, 1, 1, 1, 1});
        tf::session s{tf::session_options{.threads = 1}};
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&] {
                for (int k = 0; k < steps; ++k) s.run(step, tf::feed(c, cv));
            });
        for (auto& t : ts) t.join();
        bool found_t = false;
        tf::io::saver sv(step);
        for (const auto& e : sv.tensors())
            if (e.name == "v/t") {
                CHECK(*static_cast<const float*>(e.data) == float(threads * steps));
                found_t = true;
            }
        CHECK(found_t);
        // with a constant gradient Adam moves each coordinate by about lr per step
        CHECK(v.value()[0] == Approx(-0.01 * threads * steps).epsilon(0.05));
    }
    SECTION("on one thread a locked optimizer computes what the unlocked one does") {
        tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
        tf::variable<"a", float, tf::shape<3, 1>> a{tf::init::normal{0.f, 1.f, 5}};
        tf::variable<"b", float, tf::shape<3, 1>> b{tf::init::normal{0.f, 1.f, 5}};
        auto step_a = tf::train::adam(0.05f).minimize(tf::mean(tf::square(tf::matmul(x, a) - 1.f)));
        auto step_b = tf::train::use_locking(tf::train::adam(0.05f)).minimize(tf::mean(tf::square(tf::matmul(x, b) - 1.f)));
        tf::session s;
        const auto xv = random_tensor(tf::dims{16, 3}, 9);
        for (int k = 0; k < 20; ++k) {
            s.run(step_a, tf::feed(x, xv));
            s.run(step_b, tf::feed(x, xv));
        }
        for (int i = 0; i < 3; ++i) CHECK(a.value()[i] == b.value()[i]);
    }
}
