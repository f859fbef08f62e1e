// tf::expr: type-erased expressions, expanded by the session at run time.
// Values are checked against naive loops, the auto-typed graph or central
// finite differences.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <typeflow/typeflow.hpp>

#include "grad_check.hpp"

namespace tf = typeflow;

namespace {
using row16 = tf::shape<tf::dyn, 16>;
using E = tf::expr<float, row16>;

tf::tensor<float> input(tf::index_t rows, float scale) {
    tf::tensor<float> x({rows, 16});
    for (tf::index_t i = 0; i < x.size(); ++i) x[i] = scale * static_cast<float>((i * 37) % 23) - 0.4f;
    return x;
}
// h <- tanh(h * w + h), `steps` times, w broadcast along rows
std::vector<double> chain_reference(const tf::tensor<float>& x, const tf::tensor<float>& w, int steps) {
    std::vector<double> h(x.data(), x.data() + x.size());
    for (int k = 0; k < steps; ++k)
        for (std::size_t i = 0; i < h.size(); ++i) h[i] = std::tanh(h[i] * static_cast<double>(w[i % 16]) + h[i]);
    return h;
}
}  // namespace

TEST_CASE("expr: a chain built in a loop matches the naive loop and the auto-typed chain", "[expr]") {
    tf::placeholder<"x", float, row16> x;
    tf::variable<"w", float, tf::shape<16>> w{tf::init::uniform{-0.5, 0.5}};
    const int steps = 40;
    E h = x;
    for (int k = 0; k < steps; ++k) h = tf::tanh(h * w + h);
    auto a1 = tf::tanh(x * w + x);
    auto a2 = tf::tanh(a1 * w + a1);
    auto a3 = tf::tanh(a2 * w + a2);
    E h3 = x;
    for (int k = 0; k < 3; ++k) h3 = tf::tanh(h3 * w + h3);

    const tf::tensor<float> xb = input(5, 0.05f);
    tf::session s;
    const auto [r, r3, ra3] = s.run(tf::fetch(h, h3, a3), tf::feed(x, xb));
    const std::vector<double> ref = chain_reference(xb, w.value(), steps);
    REQUIRE(r.size() == xb.size());
    REQUIRE(r.dims() == tf::dims{5, 16});
    for (tf::index_t i = 0; i < r.size(); ++i) CHECK(r[i] == Approx(ref[static_cast<std::size_t>(i)]).margin(1e-5));
    for (tf::index_t i = 0; i < r3.size(); ++i) CHECK(r3[i] == ra3[i]);  // same loops, same bits

    // a new batch size re-plans; the same graph runs again
    const tf::tensor<float> xb2 = input(3, 0.03f);
    const tf::tensor<float> r2 = s.run(h, tf::feed(x, xb2));
    const std::vector<double> ref2 = chain_reference(xb2, w.value(), steps);
    REQUIRE(r2.dims() == tf::dims{3, 16});
    for (tf::index_t i = 0; i < r2.size(); ++i) CHECK(r2[i] == Approx(ref2[static_cast<std::size_t>(i)]).margin(1e-5));
}

TEST_CASE("repeat: a block applied n times matches the loop-built chain and the naive loop", "[expr][repeat]") {
    tf::placeholder<"x", float, row16> x;
    tf::variable<"w", float, tf::shape<16>> w{tf::init::uniform{-0.5, 0.5}};
    const auto step = [&](const auto& h) { return tf::tanh(h * w + h); };
    auto h7 = tf::repeat<7>(x, step);
    static_assert(std::is_same_v<decltype(h7), E>);
    auto hn = tf::repeat(7, x, step);
    auto h0 = tf::repeat(0, x, step);
    // with the step's index: x + 0 + 1 + 2 + 3
    auto hi = tf::repeat(4, x, [](const auto& h, std::size_t i) { return h + static_cast<float>(i); });
    E h = x;
    for (int k = 0; k < 7; ++k) h = step(h);

    const tf::tensor<float> xb = input(5, 0.05f);
    tf::session s;
    const auto [r7, rn, r0, ri, rh] = s.run(tf::fetch(h7, hn, h0, hi, h), tf::feed(x, xb));
    const std::vector<double> ref = chain_reference(xb, w.value(), 7);
    REQUIRE(r7.dims() == tf::dims{5, 16});
    for (tf::index_t i = 0; i < r7.size(); ++i) {
        CHECK(r7[i] == Approx(ref[static_cast<std::size_t>(i)]).margin(1e-5));
        CHECK(rn[i] == r7[i]);
        CHECK(rh[i] == r7[i]);  // the same loops, the same bits
        CHECK(r0[i] == xb[i]);
        CHECK(ri[i] == xb[i] + 6.0f);
    }
}

TEST_CASE("repeat: gradients through a repeated block match finite differences", "[expr][repeat][grad]") {
    tf::variable<"W", double, tf::shape<4, 4>> W{tf::init::uniform{-0.6, 0.6}};
    tf::variable<"w", double, tf::shape<4>> w{tf::init::uniform{0.5, 1.0}};
    tf::tensor<double> xv({3, 4});
    for (tf::index_t i = 0; i < xv.size(); ++i) xv[i] = 0.1 * static_cast<double>((i * 5) % 9) - 0.4;
    const auto x = tf::constant<tf::shape<3, 4>>(xv);
    const auto h = tf::repeat<5>(x, [&](const auto& h) { return tf::tanh(tf::matmul(h, W)) * w + h; });
    const auto e = tftest::check_gradients(tf::sum(tf::square(h)), W, w);
    INFO(e.where);
    CHECK(e.worst <= 1e-6);
}

TEST_CASE("expr: a chain 40000 steps deep runs and is released without deep recursion", "[expr]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 2>> x;
    tf::variable<"w", float, tf::shape<2>> w{tf::init::constant{0.25}};
    const int steps = 40000;
    tf::tensor<float> xb({1, 2}, {0.3f, -0.2f});
    double ref[2] = {0.3, -0.2};
    for (int k = 0; k < steps; ++k)
        for (double& v : ref) v = std::tanh(v * 0.25 + v);
    {
        tf::expr<float, tf::shape<tf::dyn, 2>> h = x;
        for (int k = 0; k < steps; ++k) h = tf::tanh(h * w + h);
        tf::session s;
        const tf::tensor<float> r = s.run(h, tf::feed(x, xb));
        CHECK(r[0] == Approx(ref[0]).margin(1e-5));
        CHECK(r[1] == Approx(ref[1]).margin(1e-5));
    }  // h, its 40000 segments and the plan are released here
}

TEST_CASE("expr: two tf::expr objects of one type with different extents in one graph", "[expr]") {
    tf::placeholder<"x", float, row16> x;
    tf::placeholder<"y", float, row16> y;
    E a = x * 2.0f;
    E b = y + 1.0f;
    auto total = tf::sum(a) + tf::sum(b);
    const tf::tensor<float> xb = input(4, 0.1f), yb = input(7, 0.2f);
    tf::session s;
    const auto [t, ra, rb] = s.run(tf::fetch(total, a, b), tf::feed(x, xb), tf::feed(y, yb));
    double ref = 0;
    for (tf::index_t i = 0; i < xb.size(); ++i) ref += 2.0 * xb[i];
    for (tf::index_t i = 0; i < yb.size(); ++i) ref += yb[i] + 1.0;
    CHECK(t.item() == Approx(ref).epsilon(1e-5));
    REQUIRE(ra.dims() == tf::dims{4, 16});
    REQUIRE(rb.dims() == tf::dims{7, 16});
    for (tf::index_t i = 0; i < xb.size(); ++i) CHECK(ra[i] == 2.0f * xb[i]);
    for (tf::index_t i = 0; i < yb.size(); ++i) CHECK(rb[i] == yb[i] + 1.0f);
}

TEST_CASE("expr: an object reached twice is computed once, also across tf::expr boundaries", "[expr]") {
    tf::placeholder<"x", float, tf::shape<4, 4>> x;
    tf::variable<"m", float, tf::shape<4, 4>> m{tf::init::uniform{-1, 1}};
    auto inner = tf::matmul(x, m);
    tf::expr<float, tf::shape<4, 4>> e = inner;
    auto y = tf::matmul(e, e) + e;
    tf::tensor<float> xb({4, 4});
    for (tf::index_t i = 0; i < 16; ++i) xb[i] = static_cast<float>(i % 5) - 2.0f;
    tf::session s;
    const tf::tensor<float> r = s.run(y, tf::feed(x, xb));
    // one matmul inside e, one outside; e's two readers share it
    CHECK(s.stats().evaluations == 3);
    std::vector<double> in(16), ref(16);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 4; ++k) in[i * 4 + j] += static_cast<double>(xb[i * 4 + k]) * m.value()[k * 4 + j];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            double acc = in[i * 4 + j];
            for (int k = 0; k < 4; ++k) acc += in[i * 4 + k] * in[k * 4 + j];
            ref[i * 4 + j] = acc;
        }
    for (int i = 0; i < 16; ++i) CHECK(r[i] == Approx(ref[i]).epsilon(1e-5));
    // `inner` fetched beside e: one object with a buffer in both graphs runs once
    const auto [ri, re] = s.run(tf::fetch(inner, e), tf::feed(x, xb));
    CHECK(s.stats().evaluations == 1);
    for (int i = 0; i < 16; ++i) CHECK(ri[i] == re[i]);
    // a fused node (x * 2 inside a region of e2) is computed in each graph
    auto twice = x * 2.0f;
    tf::expr<float, tf::shape<4, 4>> e2 = tf::exp(twice);
    const auto [rt, r2] = s.run(tf::fetch(tf::sum(twice), e2), tf::feed(x, xb));
    double twice_sum = 0;
    for (int i = 0; i < 16; ++i) {
        CHECK(r2[i] == Approx(std::exp(2.0 * xb[i])).epsilon(1e-6));
        twice_sum += 2.0 * xb[i];
    }
    CHECK(rt.item() == Approx(twice_sum));
}

TEST_CASE("expr: leaves, nesting and wider static shapes", "[expr]") {
    tf::placeholder<"x", float, tf::shape<3, 2>> x;
    tf::expr<float, tf::shape<3, 2>> fixed = x;          // a leaf
    tf::expr<float, tf::shape<tf::dyn, 2>> wide = fixed;  // an expr of an expr, one extent left dyn
    tf::expr<float, tf::shape<tf::dyn, tf::dyn>> wider = wide * 3.0f;
    auto y = wider - fixed;
    tf::tensor<float> xb({3, 2}, {1, 2, 3, 4, 5, 6});
    tf::session s;
    const auto [rf, rw, ry] = s.run(tf::fetch(fixed, wide, y), tf::feed(x, xb));
    for (tf::index_t i = 0; i < 6; ++i) {
        CHECK(rf[i] == xb[i]);
        CHECK(rw[i] == xb[i]);
        CHECK(ry[i] == 2.0f * xb[i]);
    }
    REQUIRE(ry.dims() == tf::dims{3, 2});
}

TEST_CASE("expr: feeds, errors and assigns inside a tf::expr", "[expr]") {
    tf::placeholder<"hidden", float, row16> hidden;
    tf::variable<"count", float, tf::shape<>> count;
    E e = hidden * 1.0f;
    tf::session s;
    // a missing feed for a placeholder only the tf::expr holds names it
    try {
        s.run(tf::sum(e));
        FAIL("no error");
    } catch (const tf::error& err) {
        CHECK(std::string(err.what()).find("hidden") != std::string::npos);
    }
    // a feed whose shape does not fit names both shapes
    tf::tensor<float> bad({2, 3});
    CHECK_THROWS_WITH(s.run(tf::sum(e), tf::feed(hidden, bad)), Catch::Contains("hidden") && Catch::Contains("[2,3]"));
    // an assign inside a tf::expr runs once per run
    tf::expr<float, tf::shape<>> tick = tf::assign_add(count, 1.0f);
    auto out = tick * 2.0f;
    for (int i = 1; i <= 3; ++i) CHECK(s.run(out).item() == 2.0f * static_cast<float>(i));
    CHECK(count.value().item() == 3.0f);
}

// ---- gradients through tf::expr ---------------------------------------------


TEST_CASE("expr: gradients through a loop-built residual stack match finite differences", "[expr][grad]") {
    tf::variable<"W", double, tf::shape<4, 4>> W{tf::init::uniform{-0.6, 0.6}};
    tf::variable<"b", double, tf::shape<4>> b{tf::init::uniform{-0.3, 0.3}};
    tf::variable<"w", double, tf::shape<4>> w{tf::init::uniform{0.5, 1.0}};
    tf::tensor<double> xv({3, 4});
    for (tf::index_t i = 0; i < xv.size(); ++i) xv[i] = 0.1 * static_cast<double>((i * 7) % 11) - 0.5;
    const auto x = tf::constant<tf::shape<3, 4>>(xv);
    tf::expr<double, tf::shape<3, 4>> h = x;
    for (int k = 0; k < 6; ++k) h = tf::tanh(tf::matmul(h, W) + b) * w + h;
    const auto e = tftest::check_gradients(tf::sum(tf::square(h)), W, b, w);
    INFO(e.where);
    CHECK(e.worst <= 1e-6);
}

TEST_CASE("expr: gradients equal those of the auto-typed graph", "[expr][grad]") {
    tf::placeholder<"x", float, row16> x;
    tf::variable<"w", float, tf::shape<16>> w{tf::init::uniform{-0.5, 0.5}};
    auto a1 = tf::tanh(x * w + x);
    auto a2 = tf::tanh(a1 * w + a1);
    auto a3 = tf::tanh(a2 * w + a2);
    E h1 = tf::tanh(x * w + x);
    E h2 = tf::tanh(h1 * w + h1);
    E h3 = tf::tanh(h2 * w + h2);
    // with respect to a variable, a placeholder and an intermediate tf::expr (several at once)
    auto [gw, gx, g1] = tf::grad(tf::sum(h3), w, x, h1);
    auto [rw, rx, r1] = tf::grad(tf::sum(a3), w, x, a1);
    // two tf::expr objects of one type read by one node: their adjoints stay apart
    E p = x * w, q = x + w;
    auto gpq = tf::grad(tf::sum(p * q + p), w);
    auto rpq = tf::grad(tf::sum((x * w) * (x + w) + x * w), w);
    const tf::tensor<float> xb = input(4, 0.05f);
    tf::session s;
    const auto [vgw, vgx, vg1, vrw, vrx, vr1, vpq, vrpq] =
        s.run(tf::fetch(gw, gx, g1, rw, rx, r1, gpq, rpq), tf::feed(x, xb));
    REQUIRE(vgw.dims() == tf::dims{16});
    REQUIRE(vgx.dims() == tf::dims{4, 16});
    for (tf::index_t i = 0; i < vgw.size(); ++i) CHECK(vgw[i] == Approx(vrw[i]).epsilon(1e-5));
    for (tf::index_t i = 0; i < vgx.size(); ++i) CHECK(vgx[i] == Approx(vrx[i]).epsilon(1e-5));
    for (tf::index_t i = 0; i < vg1.size(); ++i) CHECK(vg1[i] == Approx(vr1[i]).epsilon(1e-5));
    for (tf::index_t i = 0; i < vpq.size(); ++i) CHECK(vpq[i] == Approx(vrpq[i]).epsilon(1e-5));
}

TEST_CASE("expr: expressions of one structure share one hidden graph, whatever leaves they read", "[expr][grad]") {
    using access = tf::detail::expr_access;
    tf::placeholder<"x", float, row16> x;
    tf::variable<"u", float, tf::shape<16>> u{tf::init::uniform{-0.5, 0.5}};
    tf::variable<"v", float, tf::shape<16>> v{tf::init::uniform{-0.5, 0.5}};
    tf::variable<"m", float, tf::shape<16, 16>> m{tf::init::uniform{-0.3, 0.3}};
    // a placeholder or a tf::expr, then u or v: one normal form, one table
    E h1 = tf::tanh(x * u + x);
    E h2 = tf::tanh(h1 * v + h1);
    E h3 = tf::tanh(h2 * u + h2);
    CHECK(access::ref(h1).g == access::ref(h2).g);
    CHECK(access::ref(h2).g == access::ref(h3).g);
    // another structure, or the same one over a leaf of another shape: other tables
    E k1 = tf::tanh(x * u + u);
    E k2 = tf::matmul(h1, m);
    CHECK(access::ref(k1).g != access::ref(h1).g);
    CHECK(access::ref(k2).g != access::ref(h1).g);
    // two leaves of one dtype and shape stay two leaves
    E d = x * u + x * v;
    // two objects of one pure type are one node, as in an auto-typed graph
    auto p = tf::matmul(x, m);
    auto q = tf::matmul(x, m);
    E pq = p + q;
    auto a1 = tf::tanh(x * u + x);
    auto a2 = tf::tanh(a1 * v + a1);
    auto a3 = tf::tanh(a2 * u + a2);
    const tf::tensor<float> xb = input(5, 0.05f);
    tf::session s;
    const auto [r3, ra3, rd, rpq] = s.run(tf::fetch(h3, a3, d, pq), tf::feed(x, xb));
    for (tf::index_t i = 0; i < r3.size(); ++i) CHECK(r3[i] == Approx(ra3[i]).epsilon(1e-6));
    for (tf::index_t r = 0; r < 5; ++r)
        for (tf::index_t j = 0; j < 16; ++j) {
            const double xv = xb[r * 16 + j];
            CHECK(rd[r * 16 + j] == Approx(xv * u.value()[j] + xv * v.value()[j]).epsilon(1e-5).margin(1e-6));
            double acc = 0;
            for (tf::index_t k = 0; k < 16; ++k) acc += static_cast<double>(xb[r * 16 + k]) * m.value()[k * 16 + j];
            CHECK(rpq[r * 16 + j] == Approx(2 * acc).epsilon(1e-5));
        }
    s.run(pq, tf::feed(x, xb));
    CHECK(s.stats().evaluations == 2);  // the matmul once, then the sum
    // gradients: each variable gets its own, equal to the auto-typed graph's
    auto [gu, gv, gx] = tf::grad(tf::sum(h3), u, v, x);
    auto [ru, rv, rx] = tf::grad(tf::sum(a3), u, v, x);
    auto [du, dv] = tf::grad(tf::sum(d * d), u, v);
    auto [eu, ev] = tf::grad(tf::sum((x * u + x * v) * (x * u + x * v)), u, v);
    auto gm = tf::grad(tf::sum(pq * pq), m);
    auto rm = tf::grad(tf::sum((p + q) * (p + q)), m);
    const auto [vgu, vgv, vgx, vru, vrv, vrx, vdu, vdv, veu, vev, vgm, vrm] =
        s.run(tf::fetch(gu, gv, gx, ru, rv, rx, du, dv, eu, ev, gm, rm), tf::feed(x, xb));
    for (tf::index_t i = 0; i < 16; ++i) {
        CHECK(vgu[i] == Approx(vru[i]).epsilon(1e-5));
        CHECK(vgv[i] == Approx(vrv[i]).epsilon(1e-5));
        CHECK(vdu[i] == Approx(veu[i]).epsilon(1e-5));
        CHECK(vdv[i] == Approx(vev[i]).epsilon(1e-5));
    }
    CHECK(vgu[0] != Approx(vgv[0]));
    for (tf::index_t i = 0; i < vgx.size(); ++i) CHECK(vgx[i] == Approx(vrx[i]).epsilon(1e-5));
    for (tf::index_t i = 0; i < vgm.size(); ++i) CHECK(vgm[i] == Approx(vrm[i]).epsilon(1e-5));
}

TEST_CASE("expr: gradients that cannot cross a tf::expr are errors", "[expr][grad]") {
    tf::placeholder<"x", float, row16> x;
    tf::variable<"w", float, tf::shape<16>> w{tf::init::uniform{-0.5, 0.5}};
    // a node hidden in a tf::expr
    auto inner = x * w;
    E e = tf::tanh(inner);
    CHECK_THROWS_WITH(tf::grad(tf::sum(e), inner), Catch::Contains("a node that a tf::expr hides"));
    // a gradient is a tf::expr that is not differentiated again
    auto g = tf::grad(tf::sum(e * e), w);
    CHECK_THROWS_WITH(tf::grad(tf::sum(g * w), w), Catch::Contains("cannot be differentiated through"));
    // two tf::expr objects of one type under two nodes of one type
    E a = x * w, b = x * 2.0f;
    CHECK_THROWS_WITH(tf::grad(tf::sum(tf::tanh(a)) + tf::sum(tf::tanh(b)), w),
                      Catch::Contains("grad identifies nodes by type"));
    // a variable the cost does not reach gets zeros
    tf::variable<"unused", float, tf::shape<16>> unused{tf::init::constant{1.0}};
    auto gu = tf::grad(tf::sum(e), unused);
    // what the message advises: each term in a tf::expr of its own
    tf::expr<float, tf::shape<>> ta = tf::sum(tf::tanh(a)), tb = tf::sum(tf::tanh(b));
    auto g_terms = tf::grad(ta + tb, w);
    auto g_ref = tf::grad(tf::sum(tf::tanh(x * w)) + tf::sum(tf::tanh(x * 2.0f)), w);
    const tf::tensor<float> xb = input(3, 0.1f);
    tf::session s;
    const auto [v, r, vu] = s.run(tf::fetch(g_terms, g_ref, gu), tf::feed(x, xb));
    for (tf::index_t i = 0; i < 16; ++i) CHECK(v[i] == Approx(r[i]).epsilon(1e-5));
    for (tf::index_t i = 0; i < 16; ++i) CHECK(vu[i] == 0.0f);
}

TEST_CASE("expr: an optimizer trains a tf::expr model as it trains the auto-typed one", "[expr][grad][train]") {
    tf::placeholder<"x", float, row16> x;
    tf::variable<"w1", float, tf::shape<16>> w1{tf::init::constant{0.3}};
    tf::variable<"w2", float, tf::shape<16>> w2{tf::init::constant{0.3}};
    E h = x;
    for (int k = 0; k < 4; ++k) h = tf::tanh(h * w1 + h);
    auto a = tf::tanh(x * w2 + x);
    auto a2 = tf::tanh(a * w2 + a);
    auto a3 = tf::tanh(a2 * w2 + a2);
    auto a4 = tf::tanh(a3 * w2 + a3);
    auto loss_e = tf::mean(tf::square(h - 0.5f));
    auto loss_a = tf::mean(tf::square(a4 - 0.5f));
    auto step_e = tf::train::adam(0.05f).minimize(loss_e, w1);
    auto step_a = tf::train::adam(0.05f).minimize(loss_a, w2);
    const tf::tensor<float> xb = input(8, 0.05f);
    tf::session s;
    const float first = s.run(loss_e, tf::feed(x, xb)).item();
    float le = 0, la = 0;
    for (int i = 0; i < 30; ++i) {
        const auto [l1, u1, l2, u2] = s.run(tf::fetch(loss_e, step_e, loss_a, step_a), tf::feed(x, xb));
        le = l1.item();
        la = l2.item();
        (void)u1, (void)u2;
    }
    CHECK(le == Approx(la).epsilon(1e-4));
    CHECK(le < 0.9f * first);  // it learns (and exactly as the auto-typed model does)
    for (tf::index_t i = 0; i < 16; ++i) CHECK(w1.value()[i] == Approx(w2.value()[i]).epsilon(1e-4));
}

TEST_CASE("expr: integer dtypes, and the graph as DOT", "[expr]") {
    tf::placeholder<"i", std::int32_t, tf::shape<3>> i;
    tf::expr<std::int32_t, tf::shape<3>> twice = i * 2;
    auto y = twice + i;
    tf::tensor<std::int32_t> ib({3}, {1, -4, 7});
    tf::session s;
    const tf::tensor<std::int32_t> r = s.run(y, tf::feed(i, ib));
    for (tf::index_t k = 0; k < 3; ++k) CHECK(r[k] == 3 * ib[k]);
    const std::string dot = tf::to_dot(y);
    CHECK(dot.find("expr\\nint32 [3] @cpu") != std::string::npos);
}

// ---------------------------------------------------------------------------
// tf::let and tf::identity
// ---------------------------------------------------------------------------

TEST_CASE("let: a residual chain of let steps matches the naive loop and the auto-typed chain", "[let]") {
    tf::placeholder<"x", float, row16> x;
    tf::variable<"w", float, tf::shape<16>> w{tf::init::uniform{-0.5, 0.5}};
    auto h1 = tf::let([&] { return tf::tanh(x * w + x); });
    auto h2 = tf::let([&] { return tf::tanh(h1 * w + h1); });
    auto h3 = tf::let([&] { return tf::tanh(h2 * w + h2); });
    auto h4 = tf::tanh(h3 * w + h3);  // let and auto steps mix
    auto a1 = tf::tanh(x * w + x);
    auto a2 = tf::tanh(a1 * w + a1);
    auto a3 = tf::tanh(a2 * w + a2);
    auto a4 = tf::tanh(a3 * w + a3);
    static_assert(std::is_same_v<tf::value_type_t<decltype(h3)>, float>);
    static_assert(std::is_same_v<tf::shape_t<decltype(h3)>, row16>);
    // the step's nodes are one node each: h2's graph is x, w, and three nodes per step
    static_assert(tf::graph::graph_of<decltype(h2)>::size == 2 + 4 * 2);
    const tf::tensor<float> xb = input(5, 0.05f);
    tf::session s;
    const auto [v4, r4] = s.run(tf::fetch(h4, a4), tf::feed(x, xb));
    const std::vector<double> ref = chain_reference(xb, w.value(), 4);
    REQUIRE(v4.dims() == tf::dims{5, 16});
    for (tf::index_t i = 0; i < v4.size(); ++i) {
        CHECK(v4[i] == Approx(ref[static_cast<std::size_t>(i)]).margin(1e-5));
        CHECK(v4[i] == r4[i]);  // the same kernels, in the same order
    }
    // a step the session reaches twice (h2 from h3 and from the fetch) runs once
    const auto [v2, v3] = s.run(tf::fetch(h2, h3), tf::feed(x, xb));
    const std::vector<double> ref2 = chain_reference(xb, w.value(), 2), ref3 = chain_reference(xb, w.value(), 3);
    for (tf::index_t i = 0; i < v2.size(); ++i) {
        CHECK(v2[i] == Approx(ref2[static_cast<std::size_t>(i)]).margin(1e-5));
        CHECK(v3[i] == Approx(ref3[static_cast<std::size_t>(i)]).margin(1e-5));
    }
}

TEST_CASE("let: gradients through let steps match finite differences and the auto-typed graph", "[let][grad]") {
    tf::variable<"W", double, tf::shape<4, 4>> W{tf::init::uniform{-0.6, 0.6}};
    tf::variable<"b", double, tf::shape<4>> b{tf::init::uniform{-0.3, 0.3}};
    tf::variable<"w", double, tf::shape<4>> w{tf::init::uniform{0.5, 1.0}};
    tf::tensor<double> xv({3, 4});
    for (tf::index_t i = 0; i < xv.size(); ++i) xv[i] = 0.1 * static_cast<double>((i * 7) % 11) - 0.5;
    const auto x = tf::constant<tf::shape<3, 4>>(xv);
    auto h1 = tf::let([&] { return tf::tanh(tf::matmul(x, W) + b) * w + x; });
    auto h2 = tf::let([&] { return tf::tanh(tf::matmul(h1, W) + b) * w + h1; });
    auto h3 = tf::let([&] { return tf::tanh(tf::matmul(h2, W) + b) * w + h2; });
    const auto e = tftest::check_gradients(tf::sum(tf::square(h3)), W, b, w);
    INFO(e.where);
    CHECK(e.worst <= 1e-6);
    // with respect to a let step itself, against the same graph built with auto
    auto a1 = tf::tanh(tf::matmul(x, W) + b) * w + x;
    auto a2 = tf::tanh(tf::matmul(a1, W) + b) * w + a1;
    auto a3 = tf::tanh(tf::matmul(a2, W) + b) * w + a2;
    auto [g1, gw] = tf::grad(tf::sum(tf::square(h3)), h1, w);
    auto [r1, rw] = tf::grad(tf::sum(tf::square(a3)), a1, w);
    tf::session s;
    const auto [vg1, vgw, vr1, vrw] = s.run(tf::fetch(g1, gw, r1, rw));
    REQUIRE(vg1.dims() == tf::dims{3, 4});
    for (tf::index_t i = 0; i < vg1.size(); ++i) CHECK(vg1[i] == Approx(vr1[i]).epsilon(1e-12));
    for (tf::index_t i = 0; i < vgw.size(); ++i) CHECK(vgw[i] == Approx(vrw[i]).epsilon(1e-12));
}

TEST_CASE("let: over a matrix product the let is a view of its buffer, values and gradients as without it", "[let][grad]") {
    tf::variable<"A", double, tf::shape<3, 4>> A{tf::init::uniform{-1.0, 1.0}};
    tf::variable<"B", double, tf::shape<4, 2>> B{tf::init::uniform{-1.0, 1.0}};
    auto p = tf::let([&] { return tf::matmul(A, B); });
    STATIC_REQUIRE(std::is_same_v<typename decltype(p)::op, tf::op::let_view>);
    auto q = tf::let([&] { return tf::tanh(p) + p; });  // over an element-wise value: the identity
    STATIC_REQUIRE(std::is_same_v<typename decltype(q)::op, tf::op::identity>);
    tf::session s;
    const auto [vp, vq] = s.run(tf::fetch(p, q));
    REQUIRE(vp.dims() == tf::dims{3, 2});
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) {
            double r = 0;
            for (int k = 0; k < 4; ++k) r += A.value()(i, k) * B.value()(k, j);
            CHECK(vp(i, j) == Approx(r).epsilon(1e-12));
            CHECK(vq(i, j) == Approx(std::tanh(r) + r).epsilon(1e-12));
        }
    const auto e = tftest::check_gradients(tf::sum(tf::square(q) * p), A, B);
    INFO(e.where);
    CHECK(e.worst <= 1e-6);
}

TEST_CASE("let: a let step hidden in a tf::expr, trained by an optimizer, and tf::identity", "[let][train]") {
    tf::placeholder<"x", float, row16> x;
    tf::variable<"w", float, tf::shape<16>> w{tf::init::constant{0.25}};
    auto h1 = tf::let([&] { return tf::tanh(x * w + x); });
    E e = tf::let([&] { return tf::tanh(h1 * w + h1); });
    const tf::tensor<float> xb = input(3, 0.05f);
    tf::session s;
    const auto [ve] = s.run(tf::fetch(e + 0.0f), tf::feed(x, xb));
    const std::vector<double> ref = chain_reference(xb, w.value(), 2);
    for (tf::index_t i = 0; i < ve.size(); ++i) CHECK(ve[i] == Approx(ref[static_cast<std::size_t>(i)]).margin(1e-5));
    // an optimizer steps through a let: one SGD step against the hand-computed update
    tf::variable<"v", double, tf::shape<3>> v{tf::init::constant{1.0}};
    auto loss = tf::let([&] { return tf::sum(tf::square(v * 2.0 - 1.0)); });
    auto step = tf::train::sgd(0.1).minimize(loss, v);
    s.run(step);
    for (tf::index_t i = 0; i < 3; ++i) CHECK(v.value()[i] == Approx(1.0 - 0.1 * 4.0 * (2.0 - 1.0)).epsilon(1e-12));
    // identity: the value, of any dtype, as a node of its own
    tf::placeholder<"k", std::int32_t, tf::shape<tf::dyn>> k;
    tf::tensor<std::int32_t> kb({4});
    for (tf::index_t i = 0; i < 4; ++i) kb[i] = static_cast<std::int32_t>(3 * i - 5);
    const auto [vk, vl] = s.run(tf::fetch(tf::identity(k * 2), tf::identity(tf::let([&] { return k; }))), tf::feed(k, kb));
    for (tf::index_t i = 0; i < 4; ++i) {
        CHECK(vk[i] == 2 * kb[i]);
        CHECK(vl[i] == kb[i]);
    }
    static_assert(std::is_same_v<tf::value_type_t<decltype(tf::identity(k))>, std::int32_t>);
    auto gx = tf::grad(tf::sum(tf::identity(x) * 3.0f), x);
    const auto [vgx] = s.run(tf::fetch(gx), tf::feed(x, xb));
    for (tf::index_t i = 0; i < vgx.size(); ++i) CHECK(vgx[i] == 3.0f);
}
