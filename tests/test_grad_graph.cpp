// The gradient as graph: loss and gradients fetched together compute each
// forward node once (counted by a test op's kernel); Hessian-vector products
// (gradients of gradients) against finite differences of gradients; gradient
// simplification at the type level; grad errors.
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <array>

namespace tf = typeflow;

namespace {
// How often each counted<K> node has been computed.
std::array<int, 8> g_count{};
}  // namespace

namespace typeflow {
namespace op {
/// Test op: the identity, computed by a kernel that counts its calls.
template <int K>
struct counted {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "counted";
    template <class A>
    using traits = result_traits<value_type_t<A>, shape_t<A>, device_t<A>>;
    static dims infer(const dims& a) { return a; }
};
}  // namespace op
template <int K>
struct gradient<op::counted<K>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) { return g; }
};
template <class D, int K>  // on every host-memory device
    requires host_memory_v<D>
struct kernel<D, op::counted<K>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto& c = n.template child<0>();
        const auto* in = ctx.input(c);
        std::copy(in, in + ctx.dims_of(c).numel(), out);
        ++g_count[K];
    }
};
}  // namespace typeflow

namespace {
template <int K, class A>
auto counted(const A& a) {
    return tf::make_node<tf::op::counted<K>>(a);
}
}  // namespace

TEST_CASE("grad: loss and gradients fetched together compute the forward pass once", "[grad]") {
    tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
    tf::placeholder<"y", double, tf::shape<tf::dyn, 2>> y;
    tf::variable<"W1", double, tf::shape<4, 8>> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", double, tf::shape<8>> b1{tf::init::uniform{-0.1, 0.1}};
    tf::variable<"W2", double, tf::shape<8, 2>> W2{tf::init::glorot_uniform{}};
    auto z1 = counted<0>(tf::matmul(x, W1) + b1);
    auto h1 = counted<1>(tf::tanh(z1));
    auto out = counted<2>(tf::matmul(h1, W2));
    auto loss = counted<3>(tf::mean(tf::square(out - y)));
    auto [dW1, db1, dW2] = tf::grad(loss, W1, b1, W2);
    tftest::rng_t r(5);
    auto xb = tftest::uniform_tensor<double>(r, {16, 4}, 0, 0, -1, 1);
    auto yb = tftest::uniform_tensor<double>(r, {16, 2}, 0, 0, -1, 1);
    tf::session s;
    g_count = {};
    s.run(tf::fetch(loss, dW1, db1, dW2), tf::feed(x, xb), tf::feed(y, yb));
    CHECK(g_count[0] == 1);
    CHECK(g_count[1] == 1);
    CHECK(g_count[2] == 1);
    CHECK(g_count[3] == 1);
    // and again: still once per run
    g_count = {};
    s.run(tf::fetch(loss, dW1, db1, dW2), tf::feed(x, xb), tf::feed(y, yb));
    CHECK(g_count == std::array<int, 8>{1, 1, 1, 1, 0, 0, 0, 0});
    // an optimizer's step shares the forward nodes with the fetched loss too
    auto step = tf::train::sgd(0.1).minimize(loss);
    g_count = {};
    s.run(tf::fetch(loss, step), tf::feed(x, xb), tf::feed(y, yb));
    CHECK(g_count == std::array<int, 8>{1, 1, 1, 1, 0, 0, 0, 0});
}

TEST_CASE("grad: Hessian-vector products match finite differences of gradients", "[grad]") {
    tf::variable<"W", double, tf::shape<3, 4>> W{tf::init::uniform{-1, 1, 21}};
    tf::variable<"u", double, tf::shape<4>> u{tf::init::uniform{-1, 1, 22}};
    tf::placeholder<"v", double, tf::shape<3, 4>> v;
    tf::variable<"X", double, tf::shape<5, 3>> X{tf::init::uniform{-1, 1, 23}};
    // a smooth non-quadratic function of W (and u)
    auto f = tf::sum(tf::square(tf::tanh(tf::matmul(X, W) + u))) + tf::sum(tf::exp(W * 0.3)) * tf::sum(u * u);
    auto g = tf::grad(f, W);
    auto hv = tf::grad(tf::sum(g * v), W);
    tftest::rng_t r(7);
    auto vt = tftest::uniform_tensor<double>(r, {3, 4}, 0, 0, -1, 1);
    tf::session s;
    auto hvt = s.run(hv, tf::feed(v, vt));
    // central differences of the gradient along v
    const double h = 1e-5;
    auto w0 = W.value().clone();
    for (tf::index_t i = 0; i < w0.size(); ++i) W.value()[i] = w0[i] + h * vt[i];
    auto gp = s.run(g).clone();
    for (tf::index_t i = 0; i < w0.size(); ++i) W.value()[i] = w0[i] - h * vt[i];
    auto gm = s.run(g).clone();
    W.load(w0.view());
    double worst = 0;
    for (tf::index_t i = 0; i < w0.size(); ++i) {
        const double num = (gp[i] - gm[i]) / (2 * h);
        worst = std::max(worst, std::abs(num - hvt[i]) / std::max({1.0, std::abs(num), std::abs(hvt[i])}));
    }
    INFO("worst relative error " << worst);
    CHECK(worst <= 1e-6);
    // mixed second derivative: d/du of <grad_W f, v>
    auto hu = tf::grad(tf::sum(g * v), u);
    auto hut = s.run(hu, tf::feed(v, vt)).clone();
    auto u0 = u.value().clone();
    worst = 0;
    for (tf::index_t j = 0; j < u0.size(); ++j) {
        u.value()[j] = u0[j] + h;
        auto p = s.run(tf::sum(g * v), tf::feed(v, vt))[0];
        u.value()[j] = u0[j] - h;
        auto m = s.run(tf::sum(g * v), tf::feed(v, vt))[0];
        u.value()[j] = u0[j];
        const double num = (p - m) / (2 * h);
        worst = std::max(worst, std::abs(num - hut[j]) / std::max({1.0, std::abs(num), std::abs(hut[j])}));
    }
    INFO("mixed: worst relative error " << worst);
    CHECK(worst <= 1e-6);
}

TEST_CASE("grad: the gradient graph is simplified at the type level", "[grad]") {
    tf::variable<"a", double, tf::shape<3>> a;
    tf::variable<"b", double, tf::shape<3>> b;
    // d/da sum(a + b) = ones (a one broadcast to the shape of a + b): no
    // multiplication by one, no addition of zero
    using G = decltype(tf::grad(tf::sum(a + b), a));
    STATIC_REQUIRE(std::is_same_v<G, tf::node<tf::op::broadcast_like, tf::literal<double, 1, 1>, decltype(a + b)>>);
    // d/da of a scalar function of a only: b contributes nothing
    using Gb = decltype(tf::grad(tf::sum(a * 2.0), b));
    STATIC_REQUIRE(std::is_same_v<Gb, tf::node<tf::op::broadcast_like, tf::literal<double, 0, 1>, decltype(b)>>);
    // through stop_gradient: a static zero as well
    using Gs = decltype(tf::grad(tf::sum(tf::stop_gradient(a) * b), a));
    STATIC_REQUIRE(std::is_same_v<Gs, tf::node<tf::op::broadcast_like, tf::literal<double, 0, 1>, decltype(a)>>);
    // pure expressions stay pure: loss and gradient can be merged by type
    auto loss = tf::sum(tf::square(a - b));
    STATIC_REQUIRE(tf::is_pure_v<decltype(tf::grad(loss, a))>);
}

TEST_CASE("grad: two different anonymous constants at one place are an error", "[grad]") {
    tf::variable<"a", double, tf::shape<3>> a;
    auto y = tf::sum(a * 2.0) + tf::sum(a * 3.0);  // one type, two values
    REQUIRE_THROWS_WITH(tf::grad(y, a), Catch::Contains("anonymous constants") && Catch::Contains("tf::literal"));
    // with a literal the two differ by type, and the gradient is right
    auto y2 = tf::sum(a * tf::literal<double, 2>{}) + tf::sum(a * 3.0);
    tf::session s;
    auto g = s.run(tf::grad(y2, a));
    for (tf::index_t i = 0; i < 3; ++i) CHECK(g[i] == 5.0);
}
