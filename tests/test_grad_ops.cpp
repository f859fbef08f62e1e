// The gradient of every op against central finite differences in double
// precision (one table: an entry per op and variant), with inputs away from
// kinks; and the ops whose gradient is a static zero.
#include <catch2/catch.hpp>

#include "grad_check.hpp"

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

namespace {
using tf::shape;
// Random weights that turn any f into the scalar sum(f * w), so every element
// of f's Jacobian is checked.
template <class F>
auto project(const F& f, std::uint64_t seed = 99) {
    using S = tf::shape_t<F>;
    tf::tensor<double> w(S::value);
    tf::init::uniform{-1, 1, seed}(w, "w");
    tf::constant_tensor<double, S, tf::device_t<F>> c;  // on f's device
    c.data = tf::constant<S>(w).data;
    return tf::sum(f * c);
}
// Variables a [3, 4], b [4], c [3, 1], p [3, 4] positive, q [4] positive
template <class D>
struct vars {
    tf::variable<"a", double, shape<3, 4>, D> a{tf::init::uniform{-2, 2, 1}};
    tf::variable<"b", double, shape<4>, D> b{tf::init::uniform{-2, 2, 2}};
    tf::variable<"c", double, shape<3, 1>, D> c{tf::init::uniform{-2, 2, 3}};
    tf::variable<"p", double, shape<3, 4>, D> p{tf::init::uniform{0.5, 2, 4}};
    tf::variable<"q", double, shape<4>, D> q{tf::init::uniform{0.5, 2, 5}};
    tf::variable<"s", double, shape<>, D> s{tf::init::uniform{0.5, 2, 6}};
};
// Values at least 0.1 away from 0 (abs, relu) and pairwise distinct (max/min)
void push_from_kinks(tf::tensor<double>& t) {
    for (tf::index_t i = 0; i < t.size(); ++i) {
        if (std::abs(t[i]) < 0.1) t[i] = t[i] < 0 ? -0.1 - 0.05 * double(i % 3) : 0.1 + 0.05 * double(i % 3);
        t[i] += 1e-3 * double(i);
    }
}
}  // namespace

TEMPLATE_TEST_CASE("grad: element-wise ops match finite differences", "[grad]", tf::cpu, tf::reference) {
    using D = TestType;
    vars<D> v;
    push_from_kinks(v.a.value());
    push_from_kinks(v.b.value());
    auto& a = v.a;
    auto& b = v.b;
    auto& c = v.c;
    auto& p = v.p;
    auto& q = v.q;
    auto& s = v.s;
    TFTEST_CHECK_GRAD("add, broadcast [3,4]+[4]", project(a + b), a, b);
    TFTEST_CHECK_GRAD("add, broadcast [3,1]+[4]", project(c + b), c, b);
    TFTEST_CHECK_GRAD("sub, scalar variable", project(a - s), a, s);
    TFTEST_CHECK_GRAD("mul, broadcast", project(a * c), a, c);
    TFTEST_CHECK_GRAD("mul, same node twice", project(a * a), a);
    TFTEST_CHECK_GRAD("mul by a constant", project(a * 3.0), a);
    TFTEST_CHECK_GRAD("div", project(a / q), a, q);
    TFTEST_CHECK_GRAD("div by a scalar", project(s / p), s, p);
    TFTEST_CHECK_GRAD("pow", project(tf::pow(p, q)), p, q);
    TFTEST_CHECK_GRAD("pow with a constant exponent", project(tf::pow(p, 2.5)), p);
    TFTEST_CHECK_GRAD("maximum (no ties)", project(tf::maximum(a, b)), a, b);
    TFTEST_CHECK_GRAD("minimum (no ties)", project(tf::minimum(a, c)), a, c);
    TFTEST_CHECK_GRAD("neg", project(-a), a);
    TFTEST_CHECK_GRAD("exp", project(tf::exp(a)), a);
    TFTEST_CHECK_GRAD("log", project(tf::log(p)), p);
    TFTEST_CHECK_GRAD("sqrt", project(tf::sqrt(p)), p);
    TFTEST_CHECK_GRAD("rsqrt", project(tf::rsqrt(p)), p);
    TFTEST_CHECK_GRAD("sigmoid", project(tf::sigmoid(a)), a);
    TFTEST_CHECK_GRAD("tanh", project(tf::tanh(a)), a);
    TFTEST_CHECK_GRAD("cos", project(tf::cos(a)), a);
    TFTEST_CHECK_GRAD("sin", project(tf::sin(a)), a);
    TFTEST_CHECK_GRAD("abs", project(tf::abs(a)), a);
    TFTEST_CHECK_GRAD("square", project(tf::square(a)), a);
    TFTEST_CHECK_GRAD("relu", project(tf::relu(a)), a);
    TFTEST_CHECK_GRAD("where", project(tf::where(a > b, a * b, tf::exp(c))), a, b, c);
    TFTEST_CHECK_GRAD("cast double to double", project(tf::cast<double>(a)), a);
    TFTEST_CHECK_GRAD("to<cpu>", project(tf::to<tf::cpu>(a)), a);  // from reference: across devices
    TFTEST_CHECK_GRAD("with_dependencies", project(tf::with_dependencies(a * b, tf::exp(c))), a, b);
    TFTEST_CHECK_GRAD("literal", project(a * tf::literal<double, 3, 2, D>{}), a);
}

TEMPLATE_TEST_CASE("grad: reductions match finite differences", "[grad]", tf::cpu, tf::reference) {
    using D = TestType;
    vars<D> v;
    push_from_kinks(v.a.value());
    auto& a = v.a;
    auto& p = v.p;
    TFTEST_CHECK_GRAD("sum all", tf::sum(tf::square(a)), a);
    TFTEST_CHECK_GRAD("sum axis 1", project(tf::sum<1>(a)), a);
    TFTEST_CHECK_GRAD("sum axis 0 keepdims", project(tf::sum<0>(a, tf::keepdims)), a);
    TFTEST_CHECK_GRAD("mean all", tf::mean(tf::exp(a)), a);
    TFTEST_CHECK_GRAD("mean axis 0", project(tf::mean<0>(a)), a);
    TFTEST_CHECK_GRAD("mean axis 1 keepdims", project(tf::mean<-1>(a, tf::keepdims)), a);
    TFTEST_CHECK_GRAD("max axis 1", project(tf::max<1>(a)), a);
    TFTEST_CHECK_GRAD("max all", tf::max(a), a);
    TFTEST_CHECK_GRAD("min axis 0 keepdims", project(tf::min<0>(a, tf::keepdims)), a);
    TFTEST_CHECK_GRAD("prod axis 1", project(tf::prod<1>(p)), p);
    TFTEST_CHECK_GRAD("prod all", tf::prod(p), p);
}

TEMPLATE_TEST_CASE("grad: matmul, transpose and views match finite differences", "[grad]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"m", double, shape<3, 4>, D> m{tf::init::uniform{-1, 1, 11}};
    tf::variable<"n", double, shape<4, 5>, D> n{tf::init::uniform{-1, 1, 12}};
    tf::variable<"mt", double, shape<4, 3>, D> mt{tf::init::uniform{-1, 1, 13}};
    tf::variable<"nt", double, shape<5, 4>, D> nt{tf::init::uniform{-1, 1, 14}};
    tf::variable<"bm", double, shape<2, 3, 4>, D> bm{tf::init::uniform{-1, 1, 15}};
    tf::variable<"bn", double, shape<2, 4, 5>, D> bn{tf::init::uniform{-1, 1, 16}};
    TFTEST_CHECK_GRAD("matmul", project(tf::matmul(m, n)), m, n);
    TFTEST_CHECK_GRAD("matmul transpose_a", project(tf::matmul(mt, n, tf::transpose_a)), mt, n);
    TFTEST_CHECK_GRAD("matmul transpose_b", project(tf::matmul(m, nt, tf::transpose_b)), m, nt);
    TFTEST_CHECK_GRAD("matmul transpose_ab", project(tf::matmul(mt, nt, tf::transpose_ab)), mt, nt);
    TFTEST_CHECK_GRAD("batched matmul", project(tf::matmul(bm, bn)), bm, bn);
    TFTEST_CHECK_GRAD("batched x 2-D matmul", project(tf::matmul(bm, n)), bm, n);
    TFTEST_CHECK_GRAD("2-D x batched matmul", project(tf::matmul(m, bn)), m, bn);
    TFTEST_CHECK_GRAD("transpose", project(tf::transpose(m) * 2.0), m);
    TFTEST_CHECK_GRAD("permute 3-D", project(tf::transpose<2, 0, 1>(bm)), bm);
    TFTEST_CHECK_GRAD("reshape", project(tf::exp(tf::reshape<2, -1>(m))), m);
    TFTEST_CHECK_GRAD("expand_dims", project(tf::expand_dims<0>(m) * bm), m, bm);
    TFTEST_CHECK_GRAD("squeeze", project(tf::squeeze<0>(tf::reshape<1, 12>(m))), m);
}

TEMPLATE_TEST_CASE("grad: ops without a gradient give a static zero", "[grad]", tf::cpu, tf::reference) {
    using D = TestType;
    vars<D> v;
    auto& a = v.a;
    auto& b = v.b;
    tf::session s;
    // comparisons, argmax, casts to integers, stop_gradient: the cost does not
    // depend on a through them
    auto y1 = tf::sum(tf::cast<double>(a > b)) + tf::sum(tf::cast<double>(tf::argmax<1>(a))) +
              tf::sum(tf::cast<double>(tf::cast<std::int64_t>(a * 10.0))) + tf::sum(tf::stop_gradient(a) * b);
    using G1 = decltype(tf::grad(y1, a));
    STATIC_REQUIRE(std::is_same_v<tf::value_type_t<G1>, double>);
    auto [ga, gb] = tf::grad(y1, a, b);
    auto [gav, gbv] = s.run(tf::fetch(ga, gb));
    REQUIRE(gav.dims() == tf::dims{3, 4});
    for (tf::index_t i = 0; i < gav.size(); ++i) CHECK(gav[i] == 0.0);
    // b's gradient is sum over rows of a
    for (tf::index_t j = 0; j < 4; ++j) {
        double want = 0;
        for (tf::index_t i = 0; i < 3; ++i) want += a.value()[i * 4 + j];
        CHECK(gbv[j] == Approx(want).epsilon(1e-12));
    }
    // a variable the cost does not reach: a zero of its shape
    tf::variable<"unused", double, shape<2, 5>, D> u;
    auto gu = s.run(tf::grad(tf::sum(a), u));
    REQUIRE(gu.dims() == tf::dims{2, 5});
    for (tf::index_t i = 0; i < gu.size(); ++i) CHECK(gu[i] == 0.0);
    // the gradient of y with respect to itself is one
    auto y = tf::sum(a);
    CHECK(s.run(tf::grad(y, y))[0] == 1.0);
}

namespace {
// Central finite differences of the scalar y (fetched with the feeds of fx
// and more...) with respect to each element of the tensor fed to x; compared
// with grad's value g, which must have the feed's shape.
template <class Y, class X, class... More>
void check_fed_gradient(const std::string& what, const Y& y, const X& x, tf::tensor<double> xt, const More&... more) {
    INFO(what);
    tf::session s;
    const tf::tensor<double> g = s.run(tf::grad(y, x), tf::feed(x, xt), more...);
    REQUIRE(g.dims() == xt.dims());
    const double h = 1e-5;
    double worst = 0;
    for (tf::index_t i = 0; i < xt.size(); ++i) {
        const double x0 = xt[i];
        xt[i] = x0 + h;
        const double yp = s.run(y, tf::feed(x, xt), more...).item();
        xt[i] = x0 - h;
        const double ym = s.run(y, tf::feed(x, xt), more...).item();
        xt[i] = x0;
        const double num = (yp - ym) / (2 * h);
        worst = std::max(worst, std::abs(g[i] - num) / std::max({1.0, std::abs(g[i]), std::abs(num)}));
    }
    CHECK(worst <= 1e-6);
}
tf::tensor<double> filled(const tf::dims& d, double from) {
    tf::tensor<double> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) t[i] = from + 0.37 * double(i) - 0.05 * double(i * i % 7);
    return t;
}
}  // namespace

// A dyn extent fed as 1 and broadcast against a larger one: the gradient has
// the feed's shape, summed over the broadcast axis (it had the broadcast
// shape, [3,4] for a [1,4] feed). Whether the feed was broadcast is known only
// per run, so one graph serves feeds that are and are not broadcast.
TEMPLATE_TEST_CASE("grad: a dyn extent fed as 1 and broadcast gets a gradient of the feed's shape", "[grad][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, shape<tf::dyn, 4>, D> x;
    tf::variable<"c", double, shape<3, 4>, D> c{tf::init::uniform{-1, 1, 31}};
    {  // the defect's own case: sum(x + c), d/dx = 3 per element for a [1,4] feed
        tf::session s;
        const tf::tensor<double> g = s.run(tf::grad(tf::sum(x + c), x), tf::feed(x, filled({1, 4}, 0.5)));
        CHECK(g.dims() == tf::dims{1, 4});
        for (tf::index_t i = 0; i < g.size(); ++i) CHECK(g[i] == 3.0);
    }
    const auto y = tf::sum(tf::square(tf::tanh(x * c) + x));
    check_fed_gradient("[1,4] against [3,4]", y, x, filled({1, 4}, -0.6));
    check_fed_gradient("[3,4] against [3,4]", y, x, filled({3, 4}, -0.6));
    // a rank-1 dyn feed against [3,4]: the leading axis and the fed 1 are both summed
    tf::placeholder<"v", double, shape<tf::dyn>, D> v;
    const auto yv = tf::sum(tf::exp(v * c * 0.3));
    check_fed_gradient("[1] against [3,4]", yv, v, filled({1}, 0.2));
    check_fed_gradient("[4] against [3,4]", yv, v, filled({4}, 0.2));
    // dyn against dyn: which operand is broadcast is decided by the feeds
    tf::placeholder<"z", double, shape<tf::dyn, tf::dyn>, D> z;
    tf::placeholder<"w", double, shape<tf::dyn, 1>, D> w;
    const auto yz = tf::sum(tf::square(x * z + w));
    const tf::tensor<double> z34 = filled({3, 4}, 0.1), z14 = filled({1, 4}, 0.1), w31 = filled({3, 1}, -0.3),
                             w11 = filled({1, 1}, -0.3);
    check_fed_gradient("x [1,4] with z [3,4], w [3,1]", yz, x, filled({1, 4}, 0.4), tf::feed(z, z34), tf::feed(w, w31));
    check_fed_gradient("z [1,4] with x [3,4], w [1,1]", yz, z, z14.clone(), tf::feed(x, filled({3, 4}, 0.4)),
                       tf::feed(w, w11));
    check_fed_gradient("w [1,1] with x [3,4], z [3,4]", yz, w, w11.clone(), tf::feed(x, filled({3, 4}, 0.4)),
                       tf::feed(z, z34));
    check_fed_gradient("w [3,1] with x [1,4], z [1,4]", yz, w, w31.clone(), tf::feed(x, filled({1, 4}, 0.4)),
                       tf::feed(z, z14));
    // a rank-1 dyn feed against a [1,?] operand: the leading axis of 1 is summed, or passed through
    tf::placeholder<"r", double, shape<1, tf::dyn>, D> r;
    const auto yr = tf::sum(tf::sin(v * r));
    check_fed_gradient("[4] against [1,4]", yr, v, filled({4}, 0.2), tf::feed(r, filled({1, 4}, 0.7)));
    check_fed_gradient("[1] against [1,4]", yr, v, filled({1}, 0.2), tf::feed(r, filled({1, 4}, 0.7)));
    check_fed_gradient("[1,4] against [4]", yr, r, filled({1, 4}, 0.7), tf::feed(v, filled({4}, 0.2)));
    check_fed_gradient("[1,1] against [4]", yr, r, filled({1, 1}, 0.7), tf::feed(v, filled({4}, 0.2)));
    // a second derivative through the run-time sum (its gradient broadcasts back)
    const auto gx = tf::grad(y, x);
    check_fed_gradient("grad of sum(square(grad)) for a [1,4] feed", tf::sum(tf::square(gx)), x, filled({1, 4}, -0.6));
}
