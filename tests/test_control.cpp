// Conditionals: tf::cond and tf::switch_case. Values against plain C++, only
// the taken branch runs (counted, and by side effects and errors a run of the
// other branch would have), gradients against central finite differences in
// double through either branch and nested conds, dyn extents, training.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <typeflow/typeflow.hpp>

#include "grad_check.hpp"

namespace tf = typeflow;

namespace {
tf::tensor<bool> flag(bool v) { return tf::tensor<bool>({}, {v}); }
}  // namespace

TEST_CASE("cond gives the taken branch's value, against plain C++", "[control][cond]") {
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    auto y = tf::cond(p, [&] { return tf::tanh(x) * 2.f; }, [&] { return x * x - 1.f; });
    static_assert(std::is_same_v<tf::shape_t<decltype(y)>, tf::shape<tf::dyn, 3>>);
    tf::session s;
    for (const int rows : {2, 5, 1}) {  // a dyn batch: new extents, the same plan
        tf::tensor<float> xb({rows, 3});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = 0.37f * static_cast<float>(i) - 1.1f;
        for (const bool taken : {true, false}) {
            auto r = s.run(y, tf::feed(p, flag(taken)), tf::feed(x, xb));
            REQUIRE(r.dims() == tf::dims{rows, 3});
            for (tf::index_t i = 0; i < xb.size(); ++i) {
                const float want = taken ? std::tanh(xb[i]) * 2.f : xb[i] * xb[i] - 1.f;
                CHECK(r[i] == Approx(want).margin(1e-6));
            }
        }
    }
    CHECK(s.stats().plans_built == 1);
}

TEST_CASE("only the taken branch of a cond runs", "[control][cond]") {
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"a", float, tf::shape<2, 2>> a;
    tf::variable<"W", float, tf::shape<2, 2>> W{tf::init::ones{}};
    tf::tensor<float> ab({2, 2}, {1, 2, 3, 4});
    tf::session s;

    SECTION("counted: two matmuls, or one fused region") {
        auto y = tf::cond(p, [&] { return tf::matmul(tf::matmul(a, W), W); }, [&] { return a * 2.f; });
        auto r = s.run(y, tf::feed(p, flag(true)), tf::feed(a, ab));
        CHECK(r(0, 0) == 6.f);  // [1 2] W = [3 3]; W again: [6 6]
        CHECK(r(1, 1) == 14.f);
        CHECK(s.stats().evaluations == 3);  // matmul, matmul, cond
        r = s.run(y, tf::feed(p, flag(false)), tf::feed(a, ab));
        CHECK(r(1, 0) == 6.f);
        CHECK(s.stats().evaluations == 2);  // a * 2, cond
    }
    SECTION("an assign in the branch not taken changes nothing") {
        auto y = tf::cond(p, [&] { return tf::assign_add(W, a); }, [&] { return W * 1.f; });
        auto r = s.run(y, tf::feed(p, flag(false)), tf::feed(a, ab));
        CHECK(r(1, 1) == 1.f);
        CHECK(W.value()[3] == 1.f);
        r = s.run(y, tf::feed(p, flag(true)), tf::feed(a, ab));
        CHECK(r(1, 1) == 5.f);
        CHECK(W.value()[3] == 5.f);
        CHECK(W.value()[0] == 2.f);
    }
    SECTION("a node that would fail in the branch not taken does not run") {
        tf::placeholder<"ids", std::int32_t, tf::shape<2>> ids;
        tf::tensor<std::int32_t> bad({2}, {0, 9});  // row 9 of a 2-row table
        auto y = tf::cond(p, [&] { return tf::gather(W, ids); }, [&] { return a + 1.f; });
        auto r = s.run(y, tf::feed(p, flag(false)), tf::feed(a, ab), tf::feed(ids, bad));
        CHECK(r(1, 1) == 5.f);
        CHECK_THROWS_WITH(s.run(y, tf::feed(p, flag(true)), tf::feed(a, ab), tf::feed(ids, bad)),
                          Catch::Contains("indices[1] = 9"));
    }
    SECTION("a node the rest of the graph reads runs whichever branch is taken") {
        auto m = tf::matmul(a, W);
        auto y = tf::cond(p, [&] { return m * 2.f; }, [&] { return a * 1.f; }) + m;
        auto r = s.run(y, tf::feed(p, flag(false)), tf::feed(a, ab));
        CHECK(r(0, 0) == 4.f);  // a[0][0] + (a W)[0][0] = 1 + 3
        r = s.run(y, tf::feed(p, flag(true)), tf::feed(a, ab));
        CHECK(r(0, 0) == 9.f);
    }
}

TEST_CASE("cond in a larger graph: buffers of branches and of the rest do not collide", "[control][cond]") {
    // intermediate buffers are reused between nodes whose lifetimes do not overlap;
    // nodes in a branch run inside the cond's step, which the memory plan must know
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"x", double, tf::shape<3, 3>> x;
    tf::variable<"W", double, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.5, 7}};
    auto h = tf::tanh(tf::matmul(x, W));
    auto y = tf::cond(p, [&] { return tf::matmul(tf::tanh(tf::matmul(h, W)), W); },
                      [&] { return tf::matmul(h, W) * 3.0; });
    auto z = tf::matmul(y, W) + h + tf::matmul(tf::exp(h), W);
    tf::tensor<double> xb({3, 3});
    for (tf::index_t i = 0; i < 9; ++i) xb[i] = 0.1 * static_cast<double>(i) - 0.3;
    const auto& w = W.value();
    using M = std::vector<double>;
    auto mm = [](const M& l, const M& r) {
        M o(9, 0.0);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                for (int k = 0; k < 3; ++k) o[i * 3 + j] += l[i * 3 + k] * r[k * 3 + j];
        return o;
    };
    auto map = [](M v, auto f) {
        for (double& e : v) e = f(e);
        return v;
    };
    const M X(xb.data(), xb.data() + 9), Wm(w.data(), w.data() + 9);
    const M H = map(mm(X, Wm), [](double e) { return std::tanh(e); });
    tf::session s;
    for (const bool taken : {true, false, true}) {
        const M Y = taken ? mm(map(mm(H, Wm), [](double e) { return std::tanh(e); }), Wm)
                          : map(mm(H, Wm), [](double e) { return 3 * e; });
        const M A = mm(Y, Wm), B = mm(map(H, [](double e) { return std::exp(e); }), Wm);
        auto r = s.run(z, tf::feed(p, flag(taken)), tf::feed(x, xb));
        for (int i = 0; i < 9; ++i) CHECK(r[i] == Approx(A[i] + H[i] + B[i]).epsilon(1e-12));
    }
}

TEST_CASE("cond: a branch's buffers never take the memory of a node read after the cond", "[control][cond]") {
    // u runs before the cond (the else branch and the sum read it); the then
    // branch's matmul and tanh run inside the cond's step, while u is still live
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"x", float, tf::shape<4, 4>> x;
    tf::variable<"W", float, tf::shape<4, 4>> W{tf::init::normal{0.0, 0.5, 11}};
    tf::variable<"V", float, tf::shape<4, 4>> V{tf::init::normal{0.0, 0.5, 12}};
    auto u = tf::matmul(x, V);
    auto y = tf::cond(p, [&] { return tf::matmul(tf::tanh(tf::matmul(x, W)), W); }, [&] { return u * 3.f; }) + u;
    tf::tensor<float> xb({4, 4});
    for (tf::index_t i = 0; i < 16; ++i) xb[i] = 0.25f * static_cast<float>(i % 5) - 0.4f;
    auto mm = [](const float* l, const float* r, float* o) {
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                float a = 0;
                for (int k = 0; k < 4; ++k) a += l[i * 4 + k] * r[k * 4 + j];
                o[i * 4 + j] = a;
            }
    };
    float U[16], G[16], A[16];
    mm(xb.data(), V.value().data(), U);
    mm(xb.data(), W.value().data(), G);
    for (float& e : G) e = std::tanh(e);
    mm(G, W.value().data(), A);
    tf::session s;
    for (const bool taken : {true, false}) {
        auto r = s.run(y, tf::feed(p, flag(taken)), tf::feed(x, xb));
        for (int i = 0; i < 16; ++i) CHECK(r[i] == Approx((taken ? A[i] : 3 * U[i]) + U[i]).margin(1e-5));
    }
}

TEST_CASE("cond gradients match finite differences through either branch", "[control][cond][grad]") {
    tf::variable<"w", double, tf::shape<3>> w{tf::init::normal{0.0, 1.0, 3}};
    tf::variable<"x", double, tf::shape<3>> x{tf::init::normal{0.0, 1.0, 4}};
    tf::variable<"c", double, tf::shape<>> c{tf::init::ones{}};
    auto y = tf::sum(tf::cond(c > 0.0, [&] { return tf::tanh(x * w) * w; }, [&] { return tf::exp(w) * x * x; })) +
             tf::sum(w * x);
    for (const double side : {1.0, -1.0}) {
        c.value()[0] = side;
        INFO("predicate " << side);
        TFTEST_CHECK_GRAD("cond", y, w, x);
    }
    // the branch not taken contributes nothing: through else, w's gradient is exp(w) x^2 + x
    c.value()[0] = -1.0;
    tf::session s;
    auto g = s.run(tf::grad(y, w));
    for (int i = 0; i < 3; ++i) {
        const double wi = w.value()[i], xi = x.value()[i];
        CHECK(g[i] == Approx(std::exp(wi) * xi * xi + xi).epsilon(1e-12));
    }
}

TEST_CASE("nested conds: values and gradients on every path", "[control][cond][grad]") {
    tf::variable<"w", double, tf::shape<2>> w{tf::init::normal{0.0, 1.0, 5}};
    tf::variable<"c1", double, tf::shape<>> c1{tf::init::ones{}};
    tf::variable<"c2", double, tf::shape<>> c2{tf::init::ones{}};
    auto inner = [&] { return tf::cond(c2 > 0.0, [&] { return tf::sin(w) * w; }, [&] { return w * w * w; }); };
    auto y = tf::sum(tf::cond(c1 > 0.0, inner, [&] { return tf::exp(w); }) * w);
    tf::session s;
    for (const double a : {1.0, -1.0})
        for (const double b : {1.0, -1.0}) {
            c1.value()[0] = a;
            c2.value()[0] = b;
            double want = 0;
            for (int i = 0; i < 2; ++i) {
                const double v = w.value()[i];
                want += (a > 0 ? (b > 0 ? std::sin(v) * v : v * v * v) : std::exp(v)) * v;
            }
            CHECK(s.run(y)[0] == Approx(want).epsilon(1e-12));
            INFO("predicates " << a << ", " << b);
            TFTEST_CHECK_GRAD("nested cond", y, w);
        }
}

TEST_CASE("the gradient of the branch not taken does not run", "[control][cond][grad]") {
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"ids", std::int32_t, tf::shape<2>> ids;
    tf::variable<"T", double, tf::shape<2, 3>> T{tf::init::ones{}};
    auto y = tf::sum(tf::cond(p, [&] { return tf::gather(T, ids) * 2.0; }, [&] { return T * T; }));
    auto g = tf::grad(y, T);
    tf::tensor<std::int32_t> bad({2}, {1, 5});
    tf::session s;
    auto r = s.run(g, tf::feed(p, flag(false)), tf::feed(ids, bad));
    CHECK(r(1, 2) == 2.0);
    CHECK_THROWS_WITH(s.run(g, tf::feed(p, flag(true)), tf::feed(ids, bad)), Catch::Contains("indices[1] = 5"));
    tf::tensor<std::int32_t> good({2}, {1, 1});
    r = s.run(g, tf::feed(p, flag(true)), tf::feed(ids, good));
    CHECK(r(0, 0) == 0.0);
    CHECK(r(1, 0) == 4.0);
}

TEST_CASE("switch_case runs the branch its index selects, the last for any other index", "[control][switch_case]") {
    tf::placeholder<"i", std::int32_t, tf::shape<>> i;
    tf::placeholder<"x", float, tf::shape<2>> x;
    auto y = tf::switch_case(i, [&] { return x + 1.f; }, [&] { return x * x; }, [&] { return -x; });
    tf::tensor<float> xb({2}, {3, -2});
    tf::session s;
    const std::vector<std::pair<std::int32_t, std::vector<float>>> cases = {
        {0, {4, -1}}, {1, {9, 4}}, {2, {-3, 2}}, {7, {-3, 2}}, {-1, {-3, 2}}};
    for (const auto& [k, want] : cases) {
        auto r = s.run(y, tf::feed(i, tf::tensor<std::int32_t>({}, {k})), tf::feed(x, xb));
        INFO("index " << k);
        CHECK(r[0] == want[0]);
        CHECK(r[1] == want[1]);
    }
}

TEST_CASE("training through a cond updates only the taken branch's variables", "[control][cond][train]") {
    // y = a x for inputs of kind 0, b x for kind 1; data from a = 3, b = -2
    tf::placeholder<"kind", bool, tf::shape<>> kind;
    tf::placeholder<"x", float, tf::shape<tf::dyn>> x;
    tf::placeholder<"t", float, tf::shape<tf::dyn>> t;
    tf::variable<"a", float, tf::shape<>> a{tf::init::zeros{}};
    tf::variable<"b", float, tf::shape<>> b{tf::init::zeros{}};
    auto pred = tf::cond(kind, [&] { return x * b; }, [&] { return x * a; });
    auto loss = tf::mean(tf::square(pred - t));
    auto step = tf::train::sgd(0.1f).minimize(loss);
    tf::session s;
    tf::tensor<float> xb({4}, {0.5f, -1.f, 1.5f, 2.f}), ta({4}), tb({4});
    for (int i = 0; i < 4; ++i) {
        ta[i] = 3 * xb[i];
        tb[i] = -2 * xb[i];
    }
    s.run(step, tf::feed(kind, flag(false)), tf::feed(x, xb), tf::feed(t, ta));
    CHECK(b.value()[0] == 0.f);  // the else branch ran: b untouched
    CHECK(a.value()[0] != 0.f);
    for (int k = 0; k < 200; ++k) {
        s.run(step, tf::feed(kind, flag(k % 2 == 1)), tf::feed(x, xb), tf::feed(t, k % 2 ? tb : ta));
    }
    CHECK(a.value()[0] == Approx(3.f).epsilon(1e-4));
    CHECK(b.value()[0] == Approx(-2.f).epsilon(1e-4));
}

TEST_CASE("cond errors: a missing predicate, branch extents that differ in a run", "[control][cond][errors]") {
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"u", float, tf::shape<tf::dyn>> u;
    tf::placeholder<"v", float, tf::shape<tf::dyn>> v;
    auto y = tf::cond(p, [&] { return u * 2.f; }, [&] { return v + 0.f; });
    tf::session s;
    tf::tensor<float> u3({3}, {1, 2, 3}), v3({3}, {4, 5, 6}), v2({2}, {7, 8});
    CHECK_THROWS_WITH(s.run(y, tf::feed(u, u3), tf::feed(v, v3)), Catch::Contains("'p'"));
    CHECK_THROWS_WITH(s.run(y, tf::feed(p, flag(true)), tf::feed(u, u3), tf::feed(v, v2)),
                      Catch::Contains("cond: the branches' extents differ in this run: then [3], else [2]"));
    auto r = s.run(y, tf::feed(p, flag(false)), tf::feed(u, u3), tf::feed(v, v3));  // nothing lost
    CHECK(r[2] == 6.f);
}

TEST_CASE("cond on the reference device", "[control][cond][reference]") {
    tf::placeholder<"p", bool, tf::shape<>, tf::reference> p;
    tf::placeholder<"x", float, tf::shape<3>, tf::reference> x;
    auto y = tf::cond(p, [&] { return x * 2.f; }, [&] { return x - 1.f; });
    tf::session s;
    tf::tensor<float> xb({3}, {1, 2, 3});
    CHECK(s.run(y, tf::feed(p, flag(true)), tf::feed(x, xb))[2] == 6.f);
    CHECK(s.run(y, tf::feed(p, flag(false)), tf::feed(x, xb))[2] == 2.f);
}

TEST_CASE("a cond keeps the leaves its gradient reaches: once each, in walk order", "[control][cond][grad]") {
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::variable<"a", double, tf::shape<2>> a{tf::init::constant{1.5}};
    tf::variable<"b", double, tf::shape<2>> b{tf::init::constant{0.5}};
    tf::variable<"c", double, tf::shape<2>> c{tf::init::zeros{}};
    tf::variable<"k", std::int32_t, tf::shape<2>> k{tf::init::zeros{}};
    // b twice; a grad entry (kept, and c below it not); c behind a stop_gradient; an integer variable
    const auto entry = tf::identity(tf::stop_gradient(c * 2.0));
    const auto then_e = b * a + b;
    const auto else_e = entry + tf::stop_gradient(c) + tf::cast<double>(k) + a;
    auto y = tf::cond(p, [&] { return then_e; }, [&] { return else_e; });
    using V = std::remove_cvref_t<decltype(a)>;
    using W = std::remove_cvref_t<decltype(b)>;
    using E = std::remove_cvref_t<decltype(entry)>;
    static_assert(std::is_same_v<tf::meta::children_t<decltype(y)>,
                                 tf::meta::list<std::remove_cvref_t<decltype(p)>, std::remove_cvref_t<decltype(then_e)>,
                                                std::remove_cvref_t<decltype(else_e)>, W, V, E>>);
    static_assert(std::is_same_v<tf::detail::cond_gradient_leaves_t<decltype(else_e)>, tf::meta::list<E, V>>);
    static_assert(std::is_same_v<tf::detail::cond_gradient_leaves_t<decltype(c * 2.0)>,
                                 tf::meta::list<std::remove_cvref_t<decltype(c)>>>);
    // and the gradient reaches them: y = b * a + b when p, so dy/da = b, dy/db = a + 1
    tf::session s;
    auto [ga, gb] = s.run(tf::fetch(tf::grad(tf::sum(y), a), tf::grad(tf::sum(y), b)), tf::feed(p, flag(true)));
    CHECK(ga[0] == 0.5);
    CHECK(ga[1] == 0.5);
    CHECK(gb[0] == 2.5);
    CHECK(gb[1] == 2.5);
    auto [fa, fb] = s.run(tf::fetch(tf::grad(tf::sum(y), a), tf::grad(tf::sum(y), b)), tf::feed(p, flag(false)));
    CHECK(fa[0] == 1.0);
    CHECK(fb[1] == 0.0);
}
