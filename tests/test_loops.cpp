// Loops: tf::while_loop and tf::scan. Results against plain C++ loops, the
// iteration limit, dyn trip counts and lengths without new plans, nodes that
// do not depend on the loop running once, conds and loops inside loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <typeflow/typeflow.hpp>

#include "grad_check.hpp"

namespace tf = typeflow;

namespace {
tf::tensor<std::int32_t> i32(std::int32_t v) { return tf::tensor<std::int32_t>({}, {v}); }
}  // namespace

TEST_CASE("while_loop against a plain C++ loop", "[control][while_loop]") {
    tf::placeholder<"x", float, tf::shape<3>> x;
    auto y = tf::while_loop([](const auto& v) { return tf::sum(v) < 100.f; }, [](const auto& v) { return v * 2.f; }, x, 50);
    static_assert(std::is_same_v<tf::shape_t<decltype(y)>, tf::shape<3>>);
    tf::session s;
    for (const float start : {1.f, 0.5f, 40.f, 200.f}) {
        tf::tensor<float> xb({3}, {start, 2 * start, 3 * start});
        std::vector<float> v(xb.data(), xb.data() + 3);
        while (v[0] + v[1] + v[2] < 100.f)
            for (float& e : v) e *= 2.f;
        auto r = s.run(y, tf::feed(x, xb));
        INFO("start " << start);
        for (int i = 0; i < 3; ++i) CHECK(r[i] == v[i]);
    }
}

TEST_CASE("while_loop stops at maximum_iterations when its condition stays true", "[control][while_loop]") {
    tf::placeholder<"x", double, tf::shape<2>> x;
    auto y = tf::while_loop([](const auto&) { return tf::literal<bool, 1>{}; }, [](const auto& v) { return v + 1.0; }, x, 7);
    tf::session s;
    auto r = s.run(y, tf::feed(x, tf::tensor<double>({2}, {0.5, -3})));
    CHECK(r[0] == 7.5);
    CHECK(r[1] == 4.0);
    auto zero = tf::while_loop([](const auto&) { return tf::literal<bool, 1>{}; }, [](const auto& v) { return v + 1.0; }, x, 0);
    CHECK(s.run(zero, tf::feed(x, tf::tensor<double>({2}, {0.5, -3})))[0] == 0.5);
}

TEST_CASE("while_loop with its iteration: a recurrence over a dyn batch and a fed trip count", "[control][while_loop]") {
    // h <- tanh(h W + x U + b) for n steps (n fed): x U + b does not depend on the loop and runs once
    tf::placeholder<"x", double, tf::shape<tf::dyn, 3>> x;
    tf::placeholder<"n", std::int32_t, tf::shape<>> n;
    tf::variable<"W", double, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.6, 21}};
    tf::variable<"U", double, tf::shape<3, 3>> U{tf::init::normal{0.0, 0.6, 22}};
    tf::variable<"b", double, tf::shape<3>> b{tf::init::normal{0.0, 0.3, 23}};
    auto xu = tf::matmul(x, U) + b;
    auto h = tf::while_loop([&](const auto& i, const auto&) { return i < n; },
                            [&](const auto& v) { return tf::tanh(tf::matmul(v, W) + xu); }, x * 0.0, 1000);
    tf::session s;
    auto ref = [&](const tf::tensor<double>& xb, int steps) {
        const auto rows = static_cast<int>(xb.dims().d[0]);
        std::vector<double> hv(static_cast<std::size_t>(rows) * 3, 0.0), xuv(hv.size());
        for (int r = 0; r < rows; ++r)
            for (int j = 0; j < 3; ++j) {
                double a = b.value()[j];
                for (int k = 0; k < 3; ++k) a += xb[r * 3 + k] * U.value()[k * 3 + j];
                xuv[r * 3 + j] = a;
            }
        for (int t = 0; t < steps; ++t) {
            std::vector<double> nh(hv.size());
            for (int r = 0; r < rows; ++r)
                for (int j = 0; j < 3; ++j) {
                    double a = xuv[r * 3 + j];
                    for (int k = 0; k < 3; ++k) a += hv[r * 3 + k] * W.value()[k * 3 + j];
                    nh[r * 3 + j] = std::tanh(a);
                }
            hv = nh;
        }
        return hv;
    };
    std::size_t evals[2] = {};
    for (const int rows : {4, 1, 6})
        for (const int steps : {0, 1, 2, 5}) {
            tf::tensor<double> xb({rows, 3});
            for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = std::sin(0.7 * static_cast<double>(i) + rows);
            auto r = s.run(h, tf::feed(x, xb), tf::feed(n, i32(steps)));
            const auto want = ref(xb, steps);
            INFO(rows << " rows, " << steps << " steps");
            for (tf::index_t i = 0; i < r.size(); ++i) CHECK(r[i] == Approx(want[static_cast<std::size_t>(i)]).epsilon(1e-12));
            if (rows == 4 && steps == 1) evals[0] = s.stats().evaluations;
            if (rows == 4 && steps == 2) evals[1] = s.stats().evaluations;
        }
    CHECK(s.stats().plans_built == 1);
    // an iteration runs the condition (one fused compare), the matmul and the fused tanh: 3 evaluations;
    // x U + b is outside the iterations
    CHECK(evals[1] - evals[0] == 3);
}

TEST_CASE("scan against a plain C++ loop, for sequence lengths known only at run time", "[control][scan]") {
    // an Elman recurrence: h_t = tanh(h_{t-1} W + x_t), every h_t stacked
    tf::placeholder<"xs", float, tf::shape<tf::dyn, 2, 3>> xs;  // [time, batch, features]
    tf::placeholder<"h0", float, tf::shape<2, 3>> h0;
    tf::variable<"W", float, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.5, 31}};
    auto hs = tf::scan([&](const auto& h, const auto& x) { return tf::tanh(tf::matmul(h, W) + x); }, xs, h0);
    static_assert(std::is_same_v<tf::shape_t<decltype(hs)>, tf::shape<tf::dyn, 2, 3>>);
    tf::tensor<float> h0b({2, 3}, {0.1f, -0.2f, 0.3f, 0.f, 0.5f, -0.5f});
    tf::session s;
    for (const int len : {5, 1, 12, 0}) {
        tf::tensor<float> xb({len, 2, 3});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = std::cos(0.3f * static_cast<float>(i));
        auto r = s.run(hs, tf::feed(xs, xb), tf::feed(h0, h0b));
        REQUIRE(r.dims() == tf::dims{len, 2, 3});
        std::vector<float> h(h0b.data(), h0b.data() + 6);
        for (int t = 0; t < len; ++t) {
            std::vector<float> nh(6);
            for (int bi = 0; bi < 2; ++bi)
                for (int j = 0; j < 3; ++j) {
                    float a = xb[(t * 2 + bi) * 3 + j];
                    for (int k = 0; k < 3; ++k) a += h[bi * 3 + k] * W.value()[k * 3 + j];
                    nh[bi * 3 + j] = std::tanh(a);
                }
            h = nh;
            for (int e = 0; e < 6; ++e) CHECK(r[t * 6 + e] == Approx(h[e]).margin(1e-6));
        }
    }
    CHECK(s.stats().plans_built == 1);
}

TEST_CASE("a cond and a loop inside a loop's body", "[control][while_loop][cond]") {
    // for i in 0..4: v = (i < 2 ? v + 1 : v * 2); then v = v + (sum of 0..i, by an inner loop)
    tf::placeholder<"x", double, tf::shape<2>> x;
    auto y = tf::while_loop(
        [](const auto& i, const auto&) { return i < 5; },
        [&](const auto& i, const auto& v) {
            auto step = tf::cond(i < 2, [&] { return v + 1.0; }, [&] { return v * 2.0; });
            auto inner = tf::while_loop([&](const auto& j, const auto&) { return j <= i; },
                                        [](const auto& j, const auto& a) { return a + tf::cast<double>(j); }, v * 0.0, 100);
            return step + inner;
        },
        x, 100);
    tf::session s;
    auto r = s.run(y, tf::feed(x, tf::tensor<double>({2}, {1, -2})));
    for (int e = 0; e < 2; ++e) {
        double v = e == 0 ? 1 : -2;
        for (int i = 0; i < 5; ++i) {
            v = i < 2 ? v + 1 : v * 2;
            v += i * (i + 1) / 2;
        }
        CHECK(r[e] == v);
    }
}

TEST_CASE("loop errors: a body whose extents change in a run", "[control][while_loop][errors]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn>> x;
    tf::placeholder<"u", float, tf::shape<tf::dyn>> u;
    auto y = tf::while_loop([](const auto& i, const auto&) { return i < 3; }, [&](const auto&) { return u; }, x, 10);
    tf::session s;
    tf::tensor<float> x3({3}, {1, 2, 3}), u2({2}, {1, 1}), u3({3}, {1, 1, 1});
    CHECK_THROWS_WITH(s.run(y, tf::feed(x, x3), tf::feed(u, u2)), Catch::Contains("while_loop: the body turns the loop variable's extents"));
    CHECK(s.run(y, tf::feed(x, x3), tf::feed(u, u3))[2] == 1.f);
}

TEST_CASE("loops on the reference device", "[control][scan][reference]") {
    tf::placeholder<"xs", float, tf::shape<4, 2>, tf::reference> xs;
    tf::placeholder<"a", float, tf::shape<2>, tf::reference> a;
    auto sums = tf::scan([](const auto& acc, const auto& x) { return acc + x; }, xs, a);
    tf::session s;
    auto r = s.run(sums, tf::feed(xs, tf::tensor<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})), tf::feed(a, tf::tensor<float>({2}, {10, 20})));
    CHECK(r(0, 0) == 11.f);
    CHECK(r(3, 1) == 40.f);
}

TEST_CASE("scan gradients match finite differences: weights, rows and the initial carry", "[control][scan][grad]") {
    tf::variable<"W", double, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.5, 31}};
    tf::variable<"b", double, tf::shape<3>> b{tf::init::normal{0.0, 0.5, 34}};
    tf::variable<"xs", double, tf::shape<4, 2, 3>> xs{tf::init::normal{0.0, 1.0, 32}};
    tf::variable<"h0", double, tf::shape<2, 3>> h0{tf::init::normal{0.0, 1.0, 33}};
    auto hs = tf::scan([&](const auto& h, const auto& x) { return tf::tanh(tf::matmul(h, W) + x * b); }, xs, h0);
    // every step's carry reaches the cost, with its own weight
    auto y = tf::sum(hs * hs * tf::reshape<4, 1, 1>(tf::constant<tf::shape<4>>({1.0, -2.0, 0.5, 3.0})));
    TFTEST_CHECK_GRAD("scan, all steps", y, W, b, xs, h0);
    // only the last carry
    auto last = tf::sum(tf::gather(hs, tf::literal<std::int32_t, 3>{}));
    TFTEST_CHECK_GRAD("scan, last step", last, W, b, xs, h0);
}

TEST_CASE("scan gradients over a dyn length: finite differences, and work linear in the length", "[control][scan][grad]") {
    tf::placeholder<"xs", double, tf::shape<tf::dyn, 3>> xs;
    tf::variable<"W", double, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.5, 41}};
    tf::variable<"h0", double, tf::shape<3>> h0{tf::init::normal{0.0, 1.0, 42}};
    auto hs = tf::scan([&](const auto& h, const auto& x) { return tf::tanh(tf::reshape<3>(tf::matmul(tf::reshape<1, 3>(h), W)) + x); },
                       xs, h0);
    // an anonymous constant in the cost makes each piece of the gradient a graph of its own
    // (identified by object): the reverse scan that the weights' scans read must still run once
    auto y = tf::sum(tf::square(hs)) * 0.5;
    auto [gW, gh] = tf::grad(y, W, h0);
    tf::session s;
    std::size_t evals[4] = {};
    for (const int len : {0, 1, 3, 2, 4, 6}) {
        tf::tensor<double> xb({len, 3});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = std::sin(1.3 * static_cast<double>(i));
        auto [aW, ah] = s.run(tf::fetch(gW, gh), tf::feed(xs, xb));
        if (len >= 2 && len % 2 == 0) evals[len / 2 - 1] = s.stats().evaluations;
        auto check = [&](auto& v, const tf::tensor<double>& analytic) {
            auto& t = v.value();
            for (tf::index_t i = 0; i < t.size(); ++i) {
                const double x0 = t[i];
                t[i] = x0 + 1e-6;
                const double p = s.run(y, tf::feed(xs, xb))[0];
                t[i] = x0 - 1e-6;
                const double m = s.run(y, tf::feed(xs, xb))[0];
                t[i] = x0;
                INFO("length " << len << ", element " << i);
                CHECK(analytic[i] == Approx((p - m) / 2e-6).epsilon(1e-6).margin(1e-8));
            }
        };
        check(W, aW);
        check(h0, ah);
    }
    CHECK(s.stats().plans_built == 2);  // the gradients' plan and the cost's, each for every length
    // two more steps cost the same whatever the length: no step's work is repeated per step
    CHECK(evals[2] - evals[1] == evals[1] - evals[0]);
}

namespace {
template <tf::index_t Steps>
void check_scan_length() {
    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.4, 51}};
    tf::variable<"h0", double, tf::shape<2>> h0{tf::init::normal{0.0, 1.0, 52}};
    tf::variable<"xs", double, tf::shape<Steps, 2>> xs{tf::init::normal{0.0, 1.0, 53}};
    auto hs = tf::scan([&](const auto& h, const auto& x) { return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(h), W)) + x); },
                       xs, h0);
    auto y = tf::sum(tf::square(hs));
    INFO(Steps << " steps");
    TFTEST_CHECK_GRAD("scan", y, W, h0, xs);
}
}  // namespace

TEST_CASE("scan gradients through 1 and 2 and 50 steps and nested scans and a scan inside a cond", "[control][scan][grad]") {
    check_scan_length<1>();
    check_scan_length<2>();
    check_scan_length<50>();

    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.4, 61}};
    tf::variable<"h0", double, tf::shape<2>> h0{tf::init::normal{0.0, 1.0, 62}};
    tf::variable<"xs", double, tf::shape<3, 2, 2>> xs{tf::init::normal{0.0, 1.0, 63}};
    const auto step = [&](const auto& h, const auto& x) {
        return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(h), W)) + x);
    };
    SECTION("a scan inside a scan: each outer step runs 2 inner steps from its carry") {
        auto outer = tf::scan(
            [&](const auto& h, const auto& rows) { return tf::gather(tf::scan(step, rows, h), tf::literal<std::int32_t, 1>{}); },
            xs, h0);
        auto y = tf::sum(tf::square(outer));
        TFTEST_CHECK_GRAD("nested scans", y, W, h0, xs);
    }
    SECTION("a cond inside a scan's step: the carry's adjoint flows through the taken branch") {
        // (it did not before cond kept the gradient's stand-ins for the carry: the reverse scan stopped)
        tf::variable<"ys", double, tf::shape<5, 2>> ys{tf::init::normal{0.0, 1.0, 65}};
        auto hs = tf::scan(
            [&](const auto& h, const auto& x) {
                return tf::cond(tf::sum(x) > 0.0, [&] { return step(h, x); }, [&] { return h * 0.5 - x; });
            },
            ys, h0);
        auto y = tf::sum(tf::square(hs));
        TFTEST_CHECK_GRAD("cond in a scan", y, W, h0, ys);
    }
    SECTION("a cond inside the step of a scan with independent rows: the carries' adjoints flow through it") {
        // the gradient evaluates every step at once, on the carries as one grad entry (in a tf::let)
        tf::variable<"ys", double, tf::shape<5, 3, 2>> ys{tf::init::normal{0.0, 1.0, 66}};
        tf::variable<"g0", double, tf::shape<3, 2>> g0{tf::init::normal{0.0, 1.0, 67}};
        auto hs = tf::scan(
            [&](const auto& h, const auto& x) {
                // literals: the gradient applies the step again (anonymous constants would be two nodes of one type)
                return tf::cond(tf::sum(W) > tf::literal<double, -1000>{}, [&] { return tf::tanh(tf::matmul(h, W) + x); },
                                [&] { return h * tf::literal<double, 1, 2>{} - x; });
            },
            ys, g0, tf::independent_rows);
        auto y = tf::sum(tf::square(hs));
        TFTEST_CHECK_GRAD("cond in a scan with independent rows", y, W, g0, ys);
    }
    SECTION("a scan inside a cond, both branches") {
        tf::variable<"ys", double, tf::shape<4, 2>> ys{tf::init::normal{0.0, 1.0, 64}};
        const auto scanned = [&] { return tf::gather(tf::scan(step, ys, h0), tf::literal<std::int32_t, 3>{}); };
        const auto other = [&] { return h0 * 2.0; };
        auto taken = tf::sum(tf::square(tf::cond(tf::sum(h0) < 100.0, scanned, other)));
        TFTEST_CHECK_GRAD("scan in the taken branch", taken, W, h0, ys);
        auto not_taken = tf::sum(tf::square(tf::cond(tf::sum(h0) > 100.0, scanned, other)));
        TFTEST_CHECK_GRAD("scan in the branch not taken", not_taken, h0);
        tf::session s;
        CHECK(s.run(tf::grad(not_taken, W))[0] == 0.0);  // the scan's weights get nothing
    }
}

TEST_CASE("while_loop gradients: a data-dependent trip count and a loop that hits maximum_iterations", "[control][while_loop][grad]") {
    tf::variable<"a", double, tf::shape<3>> a{tf::init::normal{0.0, 0.3, 81}};
    tf::variable<"x0", double, tf::shape<3>> x0{tf::init::ones{}};
    // doubles-and-shifts while the sum stays under 40: the trip count depends on the values
    auto x = tf::while_loop([](const auto& v) { return tf::sum(v) < 40.0; }, [&](const auto& v) { return v * 1.5 + a; }, x0, 20);
    auto y = tf::sum(tf::square(x));
    TFTEST_CHECK_GRAD("data-dependent trip count", y, a, x0);
    // a condition that never turns false: the loop stops at maximum_iterations (4)
    auto capped = tf::while_loop([](const auto& v) { return tf::sum(v) > -1e9; }, [&](const auto& v) { return v * 0.5 + a; }, x0, 4);
    tf::session s;
    auto xv = s.run(capped);
    auto av = a.value();
    for (int e = 0; e < 3; ++e) {
        double v = 1;
        for (int k = 0; k < 4; ++k) v = v * 0.5 + av[e];
        CHECK(xv[e] == Approx(v).epsilon(1e-12));
    }
    auto yc = tf::sum(capped * capped);
    TFTEST_CHECK_GRAD("capped", yc, a, x0);
}
