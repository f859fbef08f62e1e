// Loops over several variables and tf::map_fn: tf::while_loop with a tuple
// of loop variables, tf::scan with a tuple of carries, tf::map_fn over the
// leading axis. Results against plain C++ loops, dyn lengths without new
// plans, gradients against central finite differences in double. And a
// while loop that records the scan its gradient recomputes it with (the
// loop runs once a step), against the chain rule written by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include <typeflow/typeflow.hpp>

#include "grad_check.hpp"

namespace tf = typeflow;

TEST_CASE("while_loop over a tuple of variables against a plain C++ loop", "[control][while_loop][loop_vars]") {
    tf::placeholder<"x", float, tf::shape<3>> x;
    tf::placeholder<"v", float, tf::shape<2, 3>> v;
    // a grows by twice itself plus v's column sums while its sum is under 100; v counts up
    auto [a, b] = tf::while_loop([](const auto& a, const auto&) { return tf::sum(a) < 100.f; },
                                 [](const auto& a, const auto& b) { return std::make_tuple(a * 2.f + tf::sum<0>(b), b + 1.f); },
                                 std::make_tuple(x, v), 50);
    static_assert(std::is_same_v<tf::shape_t<decltype(a)>, tf::shape<3>>);
    static_assert(std::is_same_v<tf::shape_t<decltype(b)>, tf::shape<2, 3>>);
    // the iteration first, and a scalar variable beside a matrix
    tf::placeholder<"s", float, tf::shape<>> s0;
    auto [n, m] = tf::while_loop([](const auto& i, const auto&, const auto&) { return i < 6; },
                                 [](const auto& i, const auto& n, const auto& m) {
                                     return std::make_tuple(n + tf::cast<float>(i), m * 0.5f + n);
                                 },
                                 std::make_tuple(s0, v), 4);
    static_assert(std::is_same_v<tf::shape_t<decltype(n)>, tf::shape<>>);
    tf::session s;
    for (const float start : {1.f, 0.25f, 30.f, 200.f}) {
        tf::tensor<float> xb({3}, {start, 2 * start, -start});
        tf::tensor<float> vb({2, 3}, {1, 0, 2, 0, -1, 1});
        std::vector<float> ea(xb.data(), xb.data() + 3), eb(vb.data(), vb.data() + 6);
        while (ea[0] + ea[1] + ea[2] < 100.f) {
            for (int j = 0; j < 3; ++j) ea[j] = ea[j] * 2.f + (eb[j] + eb[3 + j]);
            for (float& e : eb) e += 1.f;
        }
        float en = start;
        std::vector<float> em(vb.data(), vb.data() + 6);
        for (int i = 0; i < 4; ++i) {  // maximum_iterations (4) before the condition (i < 6)
            const float n_before = en;
            en += static_cast<float>(i);
            for (float& e : em) e = e * 0.5f + n_before;
        }
        auto [ra, rb, rn, rm] = s.run(tf::fetch(a, b, n, m), tf::feed(x, xb), tf::feed(v, vb),
                                      tf::feed(s0, tf::tensor<float>({}, {start})));
        INFO("start " << start);
        for (int j = 0; j < 3; ++j) CHECK(ra[j] == ea[j]);
        for (int j = 0; j < 6; ++j) CHECK(rb[j] == eb[j]);
        CHECK(rn[0] == en);
        for (int j = 0; j < 6; ++j) CHECK(rm[j] == em[j]);
    }
    CHECK(s.stats().plans_built == 1);
}

TEST_CASE("while_loop over a tuple of variables: gradients match finite differences", "[control][while_loop][loop_vars][grad]") {
    tf::variable<"W", double, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.4, 61}};
    tf::variable<"h0", double, tf::shape<2, 3>> h0{tf::init::normal{0.0, 1.0, 62}};
    tf::variable<"c0", double, tf::shape<3>> c0{tf::init::normal{0.0, 1.0, 63}};
    // h <- tanh(h W + c), c <- 0.5 c + column means of h: the variables feed each other
    auto body = [&](const auto& h, const auto& c) {
        const auto nh = tf::tanh(tf::matmul(h, W) + c);
        return std::make_tuple(nh, c * 0.5 + tf::mean<0>(nh));
    };
    // a data-dependent trip count (the sum of c squared stays small), at most 8 steps
    auto [h, c] = tf::while_loop([](const auto&, const auto& c) { return tf::sum(c * c) < 2.5; }, body,
                                 std::make_tuple(h0, c0), 8);
    auto y = tf::sum(h * h) + tf::sum(c * tf::constant<tf::shape<3>>({1.0, -2.0, 0.5}));
    TFTEST_CHECK_GRAD("data-dependent trip count", y, W, h0, c0);
    // a condition that never turns false: maximum_iterations (1, 2, 5) steps
    auto never = [](const auto&, const auto&) { return tf::literal<bool, 1>{}; };
    auto [h1, c1] = tf::while_loop(never, body, std::make_tuple(h0, c0), 1);
    TFTEST_CHECK_GRAD("1 step", tf::sum(h1 * c1), W, h0, c0);
    auto [h2, c2] = tf::while_loop(never, body, std::make_tuple(h0, c0), 2);
    TFTEST_CHECK_GRAD("2 steps", tf::sum(h2 * c2), W, h0, c0);
    auto [h5, c5] = tf::while_loop(never, body, std::make_tuple(h0, c0), 5);
    TFTEST_CHECK_GRAD("5 steps, one output", tf::sum(tf::square(c5)), W, h0, c0);
    (void)h5;
}

TEST_CASE("scan over a tuple of carries against a plain C++ loop, for lengths known only at run time",
          "[control][scan][loop_vars]") {
    tf::placeholder<"xs", float, tf::shape<tf::dyn, 3>> xs;
    tf::placeholder<"a0", float, tf::shape<3>> a0;
    tf::placeholder<"p0", float, tf::shape<>> p0;
    // running sums of the rows, and a running product of the rows' sums
    auto [sums, prods] = tf::scan(
        [](const auto& a, const auto& p, const auto& x) { return std::make_tuple(a + x, p * tf::sum(x)); }, xs,
        std::make_tuple(a0, p0));
    static_assert(std::is_same_v<tf::shape_t<decltype(sums)>, tf::shape<tf::dyn, 3>>);
    static_assert(std::is_same_v<tf::shape_t<decltype(prods)>, tf::shape<tf::dyn>>);
    tf::session s;
    tf::tensor<float> ab({3}, {1, -1, 0.5f});
    for (const int len : {4, 1, 7, 0}) {
        tf::tensor<float> xb({len, 3});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = 0.5f + 0.25f * std::cos(0.7f * static_cast<float>(i));
        auto [rs, rp] = s.run(tf::fetch(sums, prods), tf::feed(xs, xb), tf::feed(a0, ab),
                              tf::feed(p0, tf::tensor<float>({}, {2.f})));
        REQUIRE(rs.dims() == tf::dims{len, 3});
        REQUIRE(rp.dims() == tf::dims{len});
        std::vector<float> a(ab.data(), ab.data() + 3);
        float p = 2.f;
        for (int t = 0; t < len; ++t) {
            float row = 0;
            for (int j = 0; j < 3; ++j) a[j] += xb[t * 3 + j], row += xb[t * 3 + j];
            p *= row;
            INFO("len " << len << " step " << t);
            for (int j = 0; j < 3; ++j) CHECK(rs[t * 3 + j] == Approx(a[j]).margin(1e-6));
            CHECK(rp[t] == Approx(p).epsilon(1e-6));
        }
    }
    CHECK(s.stats().plans_built == 1);
}

TEST_CASE("scan over a tuple of carries: gradients match finite differences", "[control][scan][loop_vars][grad]") {
    tf::variable<"W", double, tf::shape<3, 3>> W{tf::init::normal{0.0, 0.5, 71}};
    tf::variable<"xs", double, tf::shape<5, 2, 3>> xs{tf::init::normal{0.0, 1.0, 72}};
    tf::variable<"h0", double, tf::shape<2, 3>> h0{tf::init::normal{0.0, 1.0, 73}};
    tf::variable<"m0", double, tf::shape<2>> m0{tf::init::normal{0.0, 1.0, 74}};
    // an RNN's state and a running maximum-free summary of it (each row's mean, decayed)
    auto [hs, ms] = tf::scan(
        [&](const auto& h, const auto& m, const auto& x) {
            const auto nh = tf::tanh(tf::matmul(h, W) + x);
            return std::make_tuple(nh, m * 0.8 + tf::mean<1>(nh));
        },
        xs, std::make_tuple(h0, m0));
    static_assert(std::is_same_v<tf::shape_t<decltype(hs)>, tf::shape<5, 2, 3>>);
    static_assert(std::is_same_v<tf::shape_t<decltype(ms)>, tf::shape<5, 2>>);
    auto y = tf::sum(hs * hs) + tf::sum(ms * tf::constant<tf::shape<5, 1>>({1.0, -1.0, 2.0, 0.5, 3.0}));
    TFTEST_CHECK_GRAD("both carries", y, W, xs, h0, m0);
    auto last = tf::sum(tf::gather(ms, tf::literal<std::int32_t, 4>{}));
    TFTEST_CHECK_GRAD("the last summary", last, W, xs, h0, m0);
}

TEST_CASE("map_fn against a plain C++ loop, for lengths known only at run time", "[control][map_fn]") {
    tf::placeholder<"xs", float, tf::shape<tf::dyn, 2, 3>> xs;
    tf::variable<"w", float, tf::shape<3>> w{tf::init::normal{0.0, 1.0, 81}};
    // each row's norms of its two vectors, weighted: [?, 2]
    auto norms = tf::map_fn([&](const auto& x) { return tf::sqrt(tf::sum<1>(x * x * w)); }, xs);
    static_assert(std::is_same_v<tf::shape_t<decltype(norms)>, tf::shape<tf::dyn, 2>>);
    // another result dtype: whether each row's sum is positive, and a row's argmax as int64
    auto pos = tf::map_fn([](const auto& x) { return tf::sum(x) > 0.f; }, xs);
    static_assert(std::is_same_v<tf::value_type_t<decltype(pos)>, bool>);
    auto best = tf::map_fn([](const auto& x) { return tf::argmax<1>(x); }, xs);
    static_assert(std::is_same_v<tf::shape_t<decltype(best)>, tf::shape<tf::dyn, 2>>);
    tf::session s;
    const auto wv = w.value();
    for (const float scale : {1.f, -1.f}) {
        for (const int len : {3, 1, 6, 0}) {
            tf::tensor<float> xb({len, 2, 3});
            for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = scale * (0.3f + std::sin(0.9f * static_cast<float>(i)));
            auto [rn, rp, rb] = s.run(tf::fetch(norms, pos, best), tf::feed(xs, xb));
            REQUIRE(rn.dims() == tf::dims{len, 2});
            REQUIRE(rp.dims() == tf::dims{len});
            for (int t = 0; t < len; ++t) {
                float total = 0;
                for (int r = 0; r < 2; ++r) {
                    float q = 0;
                    int arg = 0;
                    for (int j = 0; j < 3; ++j) {
                        const float e = xb[(t * 2 + r) * 3 + j];
                        q += e * e * wv[j];
                        total += e;
                        if (e > xb[(t * 2 + r) * 3 + arg]) arg = j;
                    }
                    INFO("len " << len << " row " << t << " vector " << r);
                    if (q >= 0) CHECK(rn[t * 2 + r] == Approx(std::sqrt(q)).epsilon(1e-6));
                    else CHECK(std::isnan(rn[t * 2 + r]));
                    CHECK(rb[t * 2 + r] == arg);
                }
                CHECK(rp[t] == (total > 0.f));
            }
        }
    }
    CHECK(s.stats().plans_built == 1);
}

TEST_CASE("map_fn gradients match finite differences", "[control][map_fn][grad]") {
    tf::variable<"W", double, tf::shape<3, 2>> W{tf::init::normal{0.0, 0.5, 91}};
    tf::variable<"xs", double, tf::shape<4, 2, 3>> xs{tf::init::normal{0.0, 1.0, 92}};
    // a small layer applied to each row on its own
    auto ys = tf::map_fn([&](const auto& x) { return tf::tanh(tf::matmul(x, W)); }, xs);
    static_assert(std::is_same_v<tf::shape_t<decltype(ys)>, tf::shape<4, 2, 2>>);
    auto y = tf::sum(ys * ys * tf::reshape<4, 1, 1>(tf::constant<tf::shape<4>>({1.0, -2.0, 0.5, 3.0})));
    TFTEST_CHECK_GRAD("every row", y, W, xs);
    // only one row's result reaches the cost: the others' adjoints are zero
    auto one = tf::sum(tf::gather(ys, tf::literal<std::int32_t, 2>{}));
    TFTEST_CHECK_GRAD("one row", one, W, xs);
}

namespace {
// h <- tanh(h W + b) * 1.25 while sum(h^2) < limit, at most n steps; y = sum(h^2); dy/dW, dy/db, dy/dh0 by hand
struct recurrence_by_hand {
    int rows = 0, units = 0;
    std::vector<double> W, b, h0, dW, db, dh0;
    double y = 0;
    int trips = 0;
    void run(double limit, int n) {
        std::vector<std::vector<double>> hs{h0}, zs;
        const auto sq = [](const std::vector<double>& v) {
            double s = 0;
            for (double e : v) s += e * e;
            return s;
        };
        while (static_cast<int>(zs.size()) < n && sq(hs.back()) < limit) {
            const auto& h = hs.back();
            std::vector<double> z(h.size()), nh(h.size());
            for (int r = 0; r < rows; ++r)
                for (int j = 0; j < units; ++j) {
                    double a = b[j];
                    for (int k = 0; k < units; ++k) a += h[r * units + k] * W[k * units + j];
                    z[r * units + j] = a;
                    nh[r * units + j] = std::tanh(a) * 1.25;
                }
            zs.push_back(z);
            hs.push_back(nh);
        }
        trips = static_cast<int>(zs.size());
        y = sq(hs.back());
        std::vector<double> g(hs.back().size());
        for (std::size_t e = 0; e < g.size(); ++e) g[e] = 2 * hs.back()[e];
        dW.assign(W.size(), 0);
        db.assign(b.size(), 0);
        for (int t = trips; t-- > 0;) {
            std::vector<double> dz(g.size()), ng(g.size(), 0);
            for (std::size_t e = 0; e < g.size(); ++e) {
                const double th = std::tanh(zs[t][e]);
                dz[e] = g[e] * 1.25 * (1 - th * th);
            }
            for (int r = 0; r < rows; ++r)
                for (int j = 0; j < units; ++j) {
                    db[j] += dz[r * units + j];
                    for (int k = 0; k < units; ++k) {
                        dW[k * units + j] += hs[t][r * units + k] * dz[r * units + j];
                        ng[r * units + k] += dz[r * units + j] * W[k * units + j];
                    }
                }
            g = ng;
        }
        dh0 = g;
    }
};
template <class V>
std::vector<double> values_of(const V& v) {
    const auto t = v.value();
    return std::vector<double>(t.data(), t.data() + t.size());
}
}  // namespace

TEST_CASE("a while loop writes the scan its gradient recomputes it with: one forward pass, the chain rule's values",
          "[control][while_loop][grad]") {
    tf::variable<"W", double, tf::shape<4, 4>> W{tf::init::normal{0.0, 0.5, 101}};
    tf::variable<"b", double, tf::shape<4>> b{tf::init::normal{0.0, 0.3, 102}};
    tf::variable<"h0", double, tf::shape<3, 4>> h0{tf::init::normal{0.0, 0.5, 103}};
    tf::placeholder<"limit", double, tf::shape<>> limit;
    auto h = tf::while_loop([&](const auto& v) { return tf::sum(v * v) < limit; },
                            [&](const auto& v) { return tf::tanh(tf::matmul(v, W) + b) * 1.25; }, h0, 9);
    auto y = tf::sum(h * h);
    auto [gW, gb, gh] = tf::grad(y, W, b, h0);
    recurrence_by_hand ref{3, 4, values_of(W), values_of(b), values_of(h0), {}, {}, {}};
    tf::session s;
    // trip counts 0 (the limit is below the start), some, and the maximum (9)
    for (const double lim : {0.0, 4.0, 9.0, 1e9}) {
        ref.run(lim, 9);
        INFO("limit " << lim << ", " << ref.trips << " steps");
        const tf::tensor<double> lv({}, {lim});
        for (int order = 0; order < 2; ++order) {  // the loss fetched first or last
            auto [ry, rW, rb, rh] = order == 0 ? s.run(tf::fetch(y, gW, gb, gh), tf::feed(limit, lv)) : [&] {
                auto [a, c, d, e] = s.run(tf::fetch(gW, gb, gh, y), tf::feed(limit, lv));
                return std::make_tuple(e, a, c, d);
            }();
            CHECK(s.stats().recorded_loops == 1);
            CHECK(ry[0] == Approx(ref.y).epsilon(1e-12));
            for (int e = 0; e < 16; ++e) CHECK(rW[e] == Approx(ref.dW[e]).epsilon(1e-10).margin(1e-12));
            for (int e = 0; e < 4; ++e) CHECK(rb[e] == Approx(ref.db[e]).epsilon(1e-10).margin(1e-12));
            for (int e = 0; e < 12; ++e) CHECK(rh[e] == Approx(ref.dh0[e]).epsilon(1e-10).margin(1e-12));
        }
        // the loop alone: nothing to record
        auto ry = s.run(y, tf::feed(limit, lv));
        CHECK(s.stats().recorded_loops == 0);
        CHECK(ry[0] == Approx(ref.y).epsilon(1e-12));
    }
    const tf::tensor<double> lv({}, {1e9});
    s.run(tf::fetch(gW, gb, gh, y), tf::feed(limit, lv));
    const std::size_t paired = s.stats().evaluations;
    // a loop inside a cond is not paired with its scan (they run in different contexts): still the chain rule's values
    auto hc = tf::cond(limit > 0.0, [&] { return h; }, [&] { return h0 * 1.0; });
    auto yc = tf::sum(hc * hc);
    auto [cW, cb, ch] = tf::grad(yc, W, b, h0);
    ref.run(4.0, 9);
    s.run(tf::fetch(yc, cW, cb, ch), tf::feed(limit, lv));
    CHECK(s.stats().recorded_loops == 0);
    const std::size_t unpaired = s.stats().evaluations;
    // without the pairing the scan runs its 9 steps too: each at least a matmul, the fused
    // tanh, the concat of its flag and the cond choosing the body (280 against 808 here)
    CHECK(paired + 9 * 4 <= unpaired);
    auto [ryc, rcW, rcb, rch] = s.run(tf::fetch(yc, cW, cb, ch), tf::feed(limit, tf::tensor<double>({}, {4.0})));
    CHECK(ryc[0] == Approx(ref.y).epsilon(1e-12));
    for (int e = 0; e < 16; ++e) CHECK(rcW[e] == Approx(ref.dW[e]).epsilon(1e-10).margin(1e-12));
    for (int e = 0; e < 4; ++e) CHECK(rcb[e] == Approx(ref.db[e]).epsilon(1e-10).margin(1e-12));
    for (int e = 0; e < 12; ++e) CHECK(rch[e] == Approx(ref.dh0[e]).epsilon(1e-10).margin(1e-12));
}

TEST_CASE("a scan's stacked carries are planned memory: the arena grows with the length, runs allocate nothing",
          "[control][scan][grad][memory]") {
    tf::placeholder<"xs", float, tf::shape<tf::dyn, 8, 16>> xs;
    tf::variable<"W", float, tf::shape<16, 16>> W{tf::init::normal{0.0, 0.3, 111}};
    tf::variable<"h0", float, tf::shape<8, 16>> h0{tf::init::zeros{}};
    auto hs = tf::scan([&](const auto& h, const auto& x) { return tf::tanh(tf::matmul(h, W) + x); }, xs, h0);
    auto y = tf::sum(hs * hs);
    auto gW = tf::grad(y, W);
    tf::session s;
    constexpr std::size_t row = 8 * 16 * sizeof(float);  // one step's carry
    std::size_t arena[3] = {};
    const int lengths[3] = {10, 20, 40};
    for (int k = 0; k < 3; ++k) {
        tf::tensor<float> xb({lengths[k], 8, 16});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = std::sin(0.01f * static_cast<float>(i));
        s.run(tf::fetch(y, gW), tf::feed(xs, xb));
        arena[k] = s.stats().arena_bytes;
        const std::size_t rebinds = s.stats().rebinds;
        // the same length again: the plan and its arena as they are
        s.run(tf::fetch(y, gW), tf::feed(xs, xb));
        CHECK(s.stats().rebinds == rebinds);
        CHECK(s.stats().arena_bytes == arena[k]);
        INFO("length " << lengths[k] << ": arena " << arena[k] << " bytes");
        // the forward scan's stacked carries at least (the gradient's reverse scan stacks as many)
        CHECK(arena[k] >= static_cast<std::size_t>(lengths[k]) * row);
    }
    CHECK(s.stats().plans_built == 1);
    // linear in the length: each added step adds the same bytes (to the page rounding of large buffers)
    const double per_step_1 = static_cast<double>(arena[1] - arena[0]) / 10, per_step_2 = static_cast<double>(arena[2] - arena[1]) / 20;
    CHECK(per_step_1 >= static_cast<double>(row));
    CHECK(per_step_2 == Approx(per_step_1).epsilon(0.25));
}
