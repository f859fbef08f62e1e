// Gradients of tf::while_loop through 1, 2 and 50 iterations, through a
// scan in its body and inside a cond (finite differences in double
// precision). Apart from test_loops.cpp: these are the suite's most costly
// instantiations, so that the two files build side by side.
#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>

#include "grad_check.hpp"

namespace tf = typeflow;

namespace {
// x <- tanh(x W + b) for `iterations` steps (the condition counts)
template <int Iterations>
void check_while_iterations() {
    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.5, 71}};
    tf::variable<"b", double, tf::shape<2>> b{tf::init::normal{0.0, 0.5, 72}};
    tf::variable<"x0", double, tf::shape<2>> x0{tf::init::normal{0.0, 1.0, 73}};
    auto x = tf::while_loop([](const auto& i, const auto&) { return i < Iterations; },
                            [&](const auto& v) { return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(v), W)) + b); }, x0,
                            Iterations + 3);
    // every adjoint from one reverse loop (the leaves' adjoints in its carry)
    static_assert(tf::detail::joint_ok<typename decltype(x)::value_expression>());  // the loop under its let
    auto y = tf::sum(tf::square(x) * tf::constant<tf::shape<2>>({1.0, -2.0}));
    INFO(Iterations << " iterations");
    TFTEST_CHECK_GRAD("while_loop", y, W, b, x0);
}
// The gradient with respect to W alone (x0, whose adjoint also reads the
// reverse scan, is not asked for) after `Iterations` iterations; returns the
// run's evaluations.
template <int Iterations>
std::size_t while_grad_work() {
    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.5, 81}};
    tf::variable<"x0", double, tf::shape<2>> x0{tf::init::normal{0.0, 1.0, 82}};
    auto x = tf::while_loop([](const auto& i, const auto&) { return i < Iterations; },
                            [&](const auto& v) { return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(v), W))); }, x0,
                            Iterations);
    auto y = tf::sum(tf::square(x));
    INFO(Iterations << " iterations, W alone");
    TFTEST_CHECK_GRAD("while_loop", y, W);
    tf::session s;
    s.run(tf::grad(y, W));
    return s.stats().evaluations;
}
}  // namespace

TEST_CASE("while_loop gradient with respect to one weight: finite differences, work linear in the iterations",
          "[control][while_loop][grad]") {
    // the reverse scan runs once: each further iteration adds the same work
    const std::size_t e2 = while_grad_work<2>(), e4 = while_grad_work<4>(), e6 = while_grad_work<6>();
    INFO("evaluations " << e2 << ", " << e4 << ", " << e6);
    CHECK(e4 > e2);
    CHECK(e6 - e4 == e4 - e2);
}

TEST_CASE("while_loop gradients match finite differences: 1 and 2 and 50 iterations", "[control][while_loop][grad]") {
    check_while_iterations<1>();
    check_while_iterations<2>();
    check_while_iterations<50>();
}

TEST_CASE("while_loop gradients when the leaves cannot share one reverse loop", "[control][while_loop][grad]") {
    // a leaf of another dtype (float, in a double loop) cannot join the joint loop's carry: every
    // adjoint then comes from the reverse scan and a scan per leaf
    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.5, 74}};
    tf::variable<"x0", double, tf::shape<2>> x0{tf::init::normal{0.0, 1.0, 75}};
    tf::variable<"s", float, tf::shape<2>> scale{tf::init::normal{1.0f, 0.2f, 76}};
    auto x = tf::while_loop([](const auto& i, const auto&) { return i < 4; },
                            [&](const auto& v) {
                                return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(v), W))) * tf::cast<double>(scale);
                            },
                            x0, 6);
    using X = typename decltype(x)::value_expression;  // the loop under its let
    static_assert(!tf::detail::joint_ok<X>());
    auto y = tf::sum(tf::square(x) * tf::constant<tf::shape<2>>({1.0, -2.0}));
    TFTEST_CHECK_GRAD("per leaf", y, W, x0);
}

TEST_CASE("while_loop gradients through a scan in its body and a loop inside a cond", "[control][while_loop][grad]") {
    tf::variable<"w", double, tf::shape<2>> w{tf::init::normal{0.0, 0.5, 91}};
    tf::variable<"x0", double, tf::shape<2>> x0{tf::init::normal{0.0, 1.0, 92}};
    SECTION("a scan in a while loop's body") {
        tf::variable<"ys", double, tf::shape<2, 2>> ys{tf::init::normal{0.0, 1.0, 93}};
        auto x = tf::while_loop(
            [](const auto& i, const auto&) { return i < 3; },
            [&](const auto& v) {
                return tf::gather(tf::scan([&](const auto& u, const auto& r) { return tf::sin(u * w) + r * 0.5; }, ys, v),
                                  tf::literal<std::int32_t, 1>{});
            },
            x0, 5);
        auto y = tf::sum(tf::square(x));
        TFTEST_CHECK_GRAD("a scan in a while loop", y, w, x0, ys);
    }
    SECTION("a while loop in a cond, taken and not taken") {
        const auto loop = [&] {
            return tf::while_loop([](const auto& i, const auto&) { return i < 3; }, [&](const auto& v) { return tf::cos(v) * w; },
                                  x0, 3);
        };
        auto taken = tf::sum(tf::square(tf::cond(tf::sum(x0) < 100.0, loop, [&] { return x0 * 3.0; })));
        TFTEST_CHECK_GRAD("while in the taken branch", taken, w, x0);
        auto not_taken = tf::sum(tf::square(tf::cond(tf::sum(x0) > 100.0, loop, [&] { return x0 * 3.0; })));
        TFTEST_CHECK_GRAD("while in the branch not taken", not_taken, x0);
    }
}

TEST_CASE("while_loop gradients: a body that ignores its variable, and two costs through one loop in one run",
          "[control][while_loop][grad]") {
    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.5, 95}};
    tf::variable<"u", double, tf::shape<2>> u{tf::init::normal{0.0, 1.0, 96}};
    tf::variable<"x0", double, tf::shape<2>> x0{tf::init::normal{0.0, 1.0, 97}};
    SECTION("the body ignores the variable: nothing flows to the initial value") {
        auto x = tf::while_loop([](const auto& i, const auto&) { return i < 2; }, [&](const auto&) { return u * 3.0; }, x0, 4);
        auto y = tf::sum(tf::square(x));
        TFTEST_CHECK_GRAD("a body that ignores its variable", y, u, x0);
        tf::session s;
        const auto g = s.run(tf::grad(y, x0));
        CHECK(g[0] == 0.0);
        CHECK(g[1] == 0.0);
    }
    SECTION("two costs: each gets its own reverse scan (kept per adjoint)") {
        auto x = tf::while_loop([](const auto& i, const auto&) { return i < 3; },
                                [&](const auto& v) { return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(v), W))); }, x0, 5);
        // costs of one type (their constants are anonymous): their adjoints differ by object alone
        auto y1 = tf::sum(x * tf::constant<tf::shape<2>>({2.0, 0.5}));
        auto y2 = tf::sum(x * tf::constant<tf::shape<2>>({1.0, -3.0}));
        static_assert(std::is_same_v<decltype(y1), decltype(y2)>);
        TFTEST_CHECK_GRAD("first cost", y1, W);
        TFTEST_CHECK_GRAD("second cost", y2, W);
        tf::session s;
        const auto [g1, g2] = s.run(tf::fetch(tf::grad(y1, W), tf::grad(y2, W)));
        const auto g1_alone = s.run(tf::grad(y1, W));
        const auto g2_alone = s.run(tf::grad(y2, W));
        for (tf::index_t i = 0; i < 4; ++i) {
            CHECK(g1[i] == g1_alone[i]);
            CHECK(g2[i] == g2_alone[i]);
        }
        CHECK(g1[0] != g2[0]);
    }
}
