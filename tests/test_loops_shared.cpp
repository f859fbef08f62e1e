// Loops whose variable and counter share a type with another loop's: one
// step function scanned over two inputs, and the reverse scans of two costs
// through one scan. A pure node is one computation per type, so what reads
// a loop's variable or counter must still be each loop's own (plan_core::walk
// and the tf::expr normal form key it on the loop). Results against plain
// C++ loops and central finite differences.
#include <catch2/catch.hpp>

#include <cmath>
#include <type_traits>

#include <typeflow/typeflow.hpp>

#include "grad_check.hpp"

namespace tf = typeflow;

namespace {
// The running tanh(c) + x over the rows of x (n rows of 2), from c0; returns sum f(c_t).
template <class F>
double reference_scan(const double* x, int n, const double* c0, F f) {
    double out = 0;
    for (int j = 0; j < 2; ++j) {
        double c = c0[j];
        for (int t = 0; t < n; ++t) {
            c = std::tanh(c) + x[t * 2 + j];
            out += f(c);
        }
    }
    return out;
}
}  // namespace

TEST_CASE("one step function scanned over two inputs: each scan runs its own steps", "[control][scan][shared]") {
    tf::variable<"xs", double, tf::shape<4, 2>> xs{tf::init::normal{0.0, 1.0, 32}};
    tf::variable<"ys", double, tf::shape<3, 2>> ys{tf::init::normal{0.0, 1.0, 35}};
    tf::variable<"a", double, tf::shape<2>> a{tf::init::normal{0.0, 1.0, 33}};
    // both scans' variables and counters are of one type (the step's closure type and a's)
    auto step = [](const auto& acc, const auto& x) { return tf::tanh(acc) + x; };
    auto s1 = tf::scan(step, xs, a);
    auto s2 = tf::scan(step, ys, a);
    static_assert(!std::is_same_v<decltype(s1), decltype(s2)>);
    const auto id = [](double c) { return c; };
    const auto sq = [](double c) { return c * c; };
    const double want1 = reference_scan(xs.value().data(), 4, a.value().data(), id);
    const double want2 = reference_scan(ys.value().data(), 3, a.value().data(), sq);

    SECTION("the values, fetched together") {
        tf::session s;
        const auto [r1, r2] = s.run(tf::fetch(s1, s2));
        for (int j = 0; j < 2; ++j) {
            double c1 = a.value()[j], c2 = a.value()[j];
            for (int t = 0; t < 4; ++t) {
                c1 = std::tanh(c1) + xs.value()[t * 2 + j];
                CHECK(r1(t, j) == Approx(c1).epsilon(1e-12));
            }
            for (int t = 0; t < 3; ++t) {
                c2 = std::tanh(c2) + ys.value()[t * 2 + j];
                CHECK(r2(t, j) == Approx(c2).epsilon(1e-12));
            }
        }
    }
    SECTION("gradients through both, against finite differences") {
        auto y = tf::sum(s1) + tf::sum(tf::square(s2));
        tf::session s;
        CHECK(s.run(y)[0] == Approx(want1 + want2).epsilon(1e-12));
        TFTEST_CHECK_GRAD("pure cost", y, xs, ys, a);
        // an anonymous constant: the gradient's pieces are identified by object
        auto y2 = tf::sum(s1) * 0.5 + tf::sum(tf::square(s2));
        TFTEST_CHECK_GRAD("cost with a constant", y2, xs, ys, a);
    }
    SECTION("hidden in a tf::expr (its normal form), and differentiated through it") {
        tf::expr<double, tf::shape<>> y = tf::sum(s1) + tf::sum(tf::square(s2));
        tf::session s;
        CHECK(s.run(y)[0] == Approx(want1 + want2).epsilon(1e-12));
        TFTEST_CHECK_GRAD("through a tf::expr", y, xs, ys, a);
    }
}

TEST_CASE("two costs through one scan, their gradients fetched in one run", "[control][scan][shared][grad]") {
    tf::variable<"W", double, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.5, 31}};
    tf::variable<"xs", double, tf::shape<4, 2, 3>> xs{tf::init::normal{0.0, 1.0, 32}};
    tf::variable<"h0", double, tf::shape<2, 3>> h0{tf::init::normal{0.0, 1.0, 33}};
    auto hs = tf::scan([&](const auto& h, const auto& x) { return tf::tanh(tf::matmul(h, W) + x); }, xs, h0);
    // each cost's reverse scan: one variable and counter type, two bodies (each reads its cost's adjoint)
    auto y1 = tf::sum(hs * hs);
    auto y2 = tf::sum(tf::tanh(hs) * xs);
    TFTEST_CHECK_GRAD("first cost", y1, W, h0);
    TFTEST_CHECK_GRAD("second cost", y2, W, h0);
    tf::session s;
    const auto [g1, g2] = s.run(tf::fetch(tf::grad(y1, W), tf::grad(y2, W)));
    const auto g1_alone = s.run(tf::grad(y1, W));
    const auto g2_alone = s.run(tf::grad(y2, W));
    for (tf::index_t i = 0; i < 9; ++i) {
        CHECK(g1[i] == Approx(g1_alone[i]).epsilon(1e-12));
        CHECK(g2[i] == Approx(g2_alone[i]).epsilon(1e-12));
    }
    CHECK(g1[0] != Approx(g2[0]));
}

TEST_CASE("scan gradients: one reverse loop for the carry and the leaves, or a scan per leaf", "[control][scan][grad]") {
    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.5, 41}};
    tf::variable<"b", double, tf::shape<2>> b{tf::init::normal{0.0, 0.5, 42}};
    tf::variable<"xs", double, tf::shape<5, 2>> xs{tf::init::normal{0.0, 1.0, 43}};
    tf::variable<"h0", double, tf::shape<2>> h0{tf::init::normal{0.0, 1.0, 44}};
    SECTION("leaves of the carry's dtype: the joint loop") {
        auto hs = tf::scan(
            [&](const auto& h, const auto& x) { return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(h), W)) + b + x); }, xs, h0);
        static_assert(tf::detail::joint_ok<typename decltype(hs)::value_expression>());  // the scan under its let
        auto y = tf::sum(tf::square(hs) * tf::reshape<5, 1>(tf::constant<tf::shape<5>>({1.0, -2.0, 0.5, 3.0, 1.5})));
        TFTEST_CHECK_GRAD("joint", y, W, b, xs, h0);
    }
    SECTION("a leaf of another dtype (float in a double scan): a scan per leaf") {
        tf::variable<"s", float, tf::shape<2>> scale{tf::init::normal{1.0f, 0.2f, 45}};
        auto hs = tf::scan(
            [&](const auto& h, const auto& x) {
                return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(h), W)) + b + x) * tf::cast<double>(scale);
            },
            xs, h0);
        static_assert(!tf::detail::joint_ok<typename decltype(hs)::value_expression>());
        auto y = tf::sum(tf::square(hs) * tf::reshape<5, 1>(tf::constant<tf::shape<5>>({1.0, -2.0, 0.5, 3.0, 1.5})));
        TFTEST_CHECK_GRAD("per leaf", y, W, b, xs, h0);
    }
}
