// Optimizers against their update formulas written out here as plain loops;
// which variables minimize() collects; slot names; schedules; global step.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <typeflow/io.hpp>
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;

namespace {
// The op of the first child of node N (a group).
template <class N>
using meta_first_child_op = typename std::remove_cvref_t<decltype(std::declval<const N&>().template child<0>())>::op;

// The problem: loss = sum((w - t)^2 * c) with fixed t and c, so g = 2 c (w - t).
const std::vector<double> t0 = {1.0, -2.0, 0.5, 3.0};
const std::vector<double> c0 = {1.0, 0.5, 2.0, 0.1};
const std::vector<double> w_init = {0.3, 0.7, -1.2, 2.0};

std::vector<double> grad_ref(const std::vector<double>& w) {
    std::vector<double> g(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) g[i] = 2 * c0[i] * (w[i] - t0[i]);
    return g;
}

// The variable w at w_init and the loss above.
template <class D>
struct problem {
    tf::variable<"w", double, tf::shape<4>, D> w;
    tf::constant_tensor<double, tf::shape<4>, D> t, c;
    problem() {
        w.load(tf::view(w_init, {4}));
        t.data = tf::constant<tf::shape<4>>({t0[0], t0[1], t0[2], t0[3]}).data;
        c.data = tf::constant<tf::shape<4>>({c0[0], c0[1], c0[2], c0[3]}).data;
    }
    auto loss() const { return tf::sum(tf::square(w - t) * c); }
};

// Runs `steps` steps of the optimizer built by make(loss) and of the reference
// update ref(w, g, step) and compares the variables.
template <class D, class Make>
void compare(const char* what, Make make, const std::function<void(std::vector<double>&, const std::vector<double>&, int)>& ref,
             int steps = 5) {
    INFO(what);
    problem<D> p;
    auto& w = p.w;
    auto loss = p.loss();
    auto step = make(loss);
    tf::session s;
    std::vector<double> wr = w_init;
    for (int k = 1; k <= steps; ++k) {
        s.run(step);
        ref(wr, grad_ref(wr), k);
        for (std::size_t i = 0; i < 4; ++i) CHECK(w.value()[static_cast<tf::index_t>(i)] == Approx(wr[i]).epsilon(1e-12));
    }
}
}  // namespace

TEMPLATE_TEST_CASE("train: each optimizer follows its update formula", "[train]", tf::cpu, tf::reference) {
    using D = TestType;
    compare<D>("sgd", [](const auto& l) { return tf::train::sgd(0.1).minimize(l); },
            [](auto& w, const auto& g, int) {
                for (std::size_t i = 0; i < w.size(); ++i) w[i] -= 0.1 * g[i];
            });
    {
        std::vector<double> a(4, 0.0);
        compare<D>("momentum", [](const auto& l) { return tf::train::momentum(0.1, {.momentum = 0.8}).minimize(l); },
                [&](auto& w, const auto& g, int) {
                    for (std::size_t i = 0; i < w.size(); ++i) {
                        a[i] = 0.8 * a[i] + g[i];
                        w[i] -= 0.1 * a[i];
                    }
                });
    }
    {
        std::vector<double> a(4, 0.0);
        compare<D>("nesterov",
                [](const auto& l) { return tf::train::momentum(0.1, {.momentum = 0.8, .nesterov = true}).minimize(l); },
                [&](auto& w, const auto& g, int) {
                    for (std::size_t i = 0; i < w.size(); ++i) {
                        a[i] = 0.8 * a[i] + g[i];
                        w[i] -= 0.1 * (g[i] + 0.8 * a[i]);
                    }
                });
    }
    for (double wd : {0.0, 0.01}) {
        std::vector<double> m(4, 0.0), v(4, 0.0);
        compare<D>(wd == 0 ? "adam" : "adamw",
                [wd](const auto& l) { return tf::train::adamw(0.05, wd, {.beta1 = 0.8, .beta2 = 0.95}).minimize(l); },
                [&](auto& w, const auto& g, int k) {
                    for (std::size_t i = 0; i < w.size(); ++i) {
                        m[i] = 0.8 * m[i] + 0.2 * g[i];
                        v[i] = 0.95 * v[i] + 0.05 * g[i] * g[i];
                        const double mh = m[i] / (1 - std::pow(0.8, k)), vh = v[i] / (1 - std::pow(0.95, k));
                        w[i] -= 0.05 * (mh / (std::sqrt(vh) + 1e-8) + wd * w[i]);
                    }
                });
    }
    {
        std::vector<double> ms(4, 1.0), mom(4, 0.0);
        compare<D>("rmsprop", [](const auto& l) { return tf::train::rmsprop(0.01, {.rho = 0.9, .momentum = 0.5}).minimize(l); },
                [&](auto& w, const auto& g, int) {
                    for (std::size_t i = 0; i < w.size(); ++i) {
                        ms[i] = 0.9 * ms[i] + 0.1 * g[i] * g[i];
                        mom[i] = 0.5 * mom[i] + 0.01 * g[i] / std::sqrt(ms[i] + 1e-10);
                        w[i] -= mom[i];
                    }
                });
    }
    {
        std::vector<double> acc(4, 0.1);
        compare<D>("adagrad", [](const auto& l) { return tf::train::adagrad(0.3).minimize(l); },
                [&](auto& w, const auto& g, int) {
                    for (std::size_t i = 0; i < w.size(); ++i) {
                        acc[i] += g[i] * g[i];
                        w[i] -= 0.3 * g[i] / std::sqrt(acc[i]);
                    }
                });
    }
}

namespace {
// Three variables of other shapes (a matrix, a vector, a scalar) and a loss of
// all three; names take a prefix so that two sets can live side by side.
template <tf::fixed_string P, class D>
struct three {
    tf::variable<tf::concat<P, "a">(), double, tf::shape<2, 3>, D> a;
    tf::variable<tf::concat<P, "b">(), double, tf::shape<3>, D> b;
    tf::variable<tf::concat<P, "c">(), double, tf::shape<>, D> c;
    tf::constant_tensor<double, tf::shape<4, 2>, D> x;
    tf::constant_tensor<double, tf::shape<4, 3>, D> y;
    three() {
        a.load(tf::view(std::vector<double>{0.3, -0.2, 0.5, 0.1, 0.7, -0.4}, {2, 3}));
        b.load(tf::view(std::vector<double>{0.05, -0.1, 0.2}, {3}));
        c.load(tf::view(std::vector<double>{0.5}, {}));
        x.data = tf::constant<tf::shape<4, 2>>({1.0, 2.0, -1.0, 0.5, 0.3, -0.7, 2.0, 1.5}).data;
        y.data = tf::constant<tf::shape<4, 3>>({0.1, 0.2, 0.3, -0.4, 0.5, 0.6, 0.7, -0.8, 0.9, 1.0, 1.1, -1.2}).data;
    }
    auto loss() const { return tf::sum(tf::square(tf::matmul(x, a) + b - y)) + tf::square(c - 2.0) * tf::sum(b * b); }
};
template <class V>
std::vector<double> values_of(const V& v) {
    return std::vector<double>(v.value().data(), v.value().data() + v.value().size());
}
// Each optimizer's minimize over three variables is one apply_dense node; it
// changes them (and their slots) bit for bit as each variable's own update does.
template <class D, class Opt>
void fused_equals_separate(const char* what, const Opt& opt) {
    INFO(what);
    three<"f_", D> f;
    three<"s_", D> p;
    auto fused = opt.minimize(f.loss());
    using apply = meta_first_child_op<decltype(fused)>;
    STATIC_REQUIRE(std::is_same_v<apply, tf::op::apply_dense<typename Opt::rule, 3>>);
    auto gv = opt.compute_gradients(p.loss(), p.a, p.b, p.c);
    auto separate = tf::group(opt.update(gv.template get<0>().grad, p.a), opt.update(gv.template get<1>().grad, p.b),
                              opt.update(gv.template get<2>().grad, p.c));
    tf::session s;
    for (int k = 0; k < 4; ++k) {
        s.run(fused);
        s.run(separate);
        CHECK(values_of(f.a) == values_of(p.a));
        CHECK(values_of(f.b) == values_of(p.b));
        CHECK(values_of(f.c) == values_of(p.c));
    }
    CHECK(values_of(f.a) != std::vector<double>{0.3, -0.2, 0.5, 0.1, 0.7, -0.4});  // it moved
    // the slots too, under the same names
    tf::io::saver sf(fused), sp(separate);
    REQUIRE(sf.tensors().size() == sp.tensors().size());
    std::size_t slots = 0;
    for (const auto& e : sf.tensors()) {
        if (e.name.substr(0, 2) != "f_") continue;
        const std::string twin = "s_" + std::string(e.name.substr(2));
        bool found = false;
        for (const auto& o : sp.tensors())
            if (o.name == twin) {
                found = true;
                REQUIRE(o.shape == e.shape);
                CHECK(std::memcmp(o.data, e.data, static_cast<std::size_t>(e.shape.numel()) * sizeof(double)) == 0);
                if (e.name.find('/') != std::string::npos) ++slots;
            }
        CHECK(found);
    }
    CHECK(slots == 3 * (Opt::rule::slots + Opt::rule::counters));
}
}  // namespace

TEMPLATE_TEST_CASE("train: one apply_dense node updates every variable as each variable's own update does", "[train]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    fused_equals_separate<D>("momentum", tf::train::momentum(0.05, {.momentum = 0.8}));
    fused_equals_separate<D>("nesterov", tf::train::momentum(0.05, {.momentum = 0.8, .nesterov = true}));
    fused_equals_separate<D>("adam", tf::train::adam(0.05, {.beta1 = 0.8, .beta2 = 0.95}));
    fused_equals_separate<D>("adamw", tf::train::adamw(0.05, 0.01));
    fused_equals_separate<D>("rmsprop", tf::train::rmsprop(0.01, {.rho = 0.9, .momentum = 0.5}));
    fused_equals_separate<D>("adagrad", tf::train::adagrad(0.3));
    // Adam's step counts: one per variable, each counted once per step
    three<"t_", D> t;
    auto step = tf::train::adam(0.05).minimize(t.loss());
    tf::session s;
    for (int k = 0; k < 3; ++k) s.run(step);
    std::size_t counters = 0;
    for (const auto& e : tf::io::saver(step).tensors())
        if (e.name.size() > 2 && e.name.substr(e.name.size() - 2) == "/t") {
            CHECK(*static_cast<const double*>(e.data) == 3.0);
            ++counters;
        }
    CHECK(counters == 3);
}

namespace {
// An embedding table read by gather (a sparse gradient) beside two dense variables.
template <tf::fixed_string P>
struct with_table {
    tf::variable<tf::concat<P, "e">(), double, tf::shape<5, 2>> e;
    tf::variable<tf::concat<P, "w">(), double, tf::shape<2>> w;
    tf::variable<tf::concat<P, "c">(), double, tf::shape<>> c;
    tf::variable<tf::concat<P, "ids">(), std::int32_t, tf::shape<3>> ids;
    with_table() {
        e.load(tf::view(std::vector<double>{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0}, {5, 2}));
        w.load(tf::view(std::vector<double>{0.5, -0.25}, {2}));
        c.load(tf::view(std::vector<double>{0.5}, {}));
        ids.load(tf::view(std::vector<std::int32_t>{0, 3, 3}, {3}));
    }
    auto loss() const { return tf::sum(tf::square(tf::gather(e, ids) * w - 1.0)) + tf::square(c - 2.0) * tf::sum(w * w); }
};
}  // namespace

TEST_CASE("train: a sparse gradient beside dense ones: one node for the dense variables, one for the table's rows",
          "[train]") {
    with_table<"f_"> f;
    with_table<"s_"> p;
    const auto opt = tf::train::adam(0.05, {.beta1 = 0.8, .beta2 = 0.95});
    auto fused = opt.minimize(f.loss());
    STATIC_REQUIRE(std::is_same_v<meta_first_child_op<decltype(fused)>, tf::op::apply_dense<tf::update_rule::adam, 2>>);
    auto gv = opt.compute_gradients(p.loss(), p.e, p.w, p.c);
    STATIC_REQUIRE(tf::is_indexed_slices_of<std::remove_cvref_t<decltype(gv.template get<0>().grad)>, decltype(p.e)>::value);
    auto separate = tf::group(opt.update(gv.template get<0>().grad, p.e), opt.update(gv.template get<1>().grad, p.w),
                              opt.update(gv.template get<2>().grad, p.c));
    tf::session s;
    const std::vector<double> e0 = values_of(f.e);
    for (int k = 0; k < 3; ++k) {
        s.run(fused);
        s.run(separate);
        CHECK(values_of(f.e) == values_of(p.e));
        CHECK(values_of(f.w) == values_of(p.w));
        CHECK(values_of(f.c) == values_of(p.c));
    }
    // LazyAdam: the rows the batch does not read stay as they were
    const std::vector<double> e3 = values_of(f.e);
    for (std::size_t r : {1u, 2u, 4u})
        for (std::size_t j = 0; j < 2; ++j) CHECK(e3[r * 2 + j] == e0[r * 2 + j]);
    CHECK(e3[0] != e0[0]);
    CHECK(e3[6] != e0[6]);
}

TEST_CASE("train: variables of two dtypes: one node for the first dtype's, one for each other variable", "[train]") {
    tf::variable<"w64", double, tf::shape<3>> w64{tf::init::ones{}};
    tf::variable<"w32", float, tf::shape<2>> w32{tf::init::ones{}};
    auto loss = tf::sum(tf::square(w64 - 3.0)) + tf::cast<double>(tf::sum(tf::square(w32 + 2.0f)));
    auto step = tf::train::adam(0.1).minimize(loss);
    using first = meta_first_child_op<decltype(step)>;
    STATIC_REQUIRE(std::is_same_v<first, tf::op::apply_dense<tf::update_rule::adam, 1>>);
    tf::session s;
    s.run(step);
    // Adam's first step moves each weight by lr against its gradient's sign
    for (tf::index_t i = 0; i < 3; ++i) CHECK(w64.value()[i] == Approx(1.1).epsilon(1e-6));
    for (tf::index_t i = 0; i < 2; ++i) CHECK(w32.value()[i] == Approx(0.9f).epsilon(1e-5));
}

TEMPLATE_TEST_CASE("train: minimize collects the trainable variables the loss reaches", "[train]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"a", float, tf::shape<2>, D> a{tf::init::ones{}};
    tf::variable<"b", float, tf::shape<2>, D> b{tf::init::ones{}};
    tf::non_trainable_variable<"frozen", float, tf::shape<2>, D> fr{tf::init::ones{}};
    tf::variable<"unused", float, tf::shape<2>, D> un{tf::init::ones{}};
    tf::variable<"n", std::int32_t, tf::shape<2>, D> n{tf::init::ones{}};
    auto loss = tf::sum(a * b * fr * tf::cast<float>(n));
    using V = tf::train::trainable_variables_t<decltype(loss)>;
    STATIC_REQUIRE(V::size == 2);
    STATIC_REQUIRE(std::is_same_v<V, tf::meta::list<decltype(a), decltype(b)>>);
    tf::session s;
    s.run(tf::train::sgd(0.5f).minimize(loss));
    // dL/da = b * fr * n = 1, dL/db = 1
    CHECK(a.value()[0] == 0.5f);
    CHECK(b.value()[1] == 0.5f);
    CHECK(fr.value()[0] == 1.0f);
    CHECK(un.value()[0] == 1.0f);
    CHECK(n.value()[0] == 1);
    // minimize(loss, vars...) updates only those
    s.run(tf::train::sgd(0.5f).minimize(loss, a));
    CHECK(a.value()[0] == 0.25f);
    CHECK(b.value()[0] == 0.5f);
}

TEMPLATE_TEST_CASE("train: compute_gradients, apply_gradients, global step and slots", "[train]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"w", double, tf::shape<3>, D> w{tf::init::constant{2.0}};
    tf::variable<"global_step", std::int64_t, tf::shape<>, D> gs;
    auto loss = tf::sum(tf::square(w));
    auto opt = tf::train::adam(0.1);
    auto gv = opt.compute_gradients(loss);
    STATIC_REQUIRE(decltype(gv)::size == 1);
    tf::session s;
    auto [g] = s.run(tf::fetch(gv.template get<0>().grad));
    CHECK(g[0] == 4.0);
    auto step = opt.apply_gradients(gv, tf::train::global_step(gs));
    for (int i = 0; i < 3; ++i) s.run(step);
    CHECK(gs.value()[0] == 3);
    // Adam's first step moves each weight by lr (bias-corrected m/sqrt(v) = sign(g))
    // the slots are variables named <var>/<slot>
    std::string dot = tf::to_dot(step);
    CHECK(dot.find("variable \\\"w/m\\\"") != std::string::npos);
    CHECK(dot.find("variable \\\"w/v\\\"") != std::string::npos);
    CHECK(dot.find("variable \\\"w/t\\\"") != std::string::npos);
    // minimize(loss, global_step(gs)) increments the step as well
    s.run(tf::train::sgd(0.1).minimize(loss, tf::train::global_step(gs)));
    CHECK(gs.value()[0] == 4);
}

TEMPLATE_TEST_CASE("train: a fused update reads the values the run began with and writes at its end", "[train]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    problem<D> p;
    auto& w = p.w;
    auto loss = p.loss();
    auto opt = tf::train::adam(0.05);
    auto gv = opt.compute_gradients(loss);
    auto apply = opt.update(gv.template get<0>().grad, w);  // apply_adam, which also counts the step
    STATIC_REQUIRE(std::is_same_v<typename decltype(apply)::op, tf::op::apply_dense<tf::update_rule::adam>>);
    tf::session s;
    // fetched with the update: the loss and the variable are those of the run's start,
    // the node's outputs are the new variable and slots, written once the run ends
    auto [l, w_before, w_new, m_new, v_new] =
        s.run(tf::fetch(loss, w + 0.0, tf::output<0>(apply), tf::output<1>(apply), tf::output<2>(apply)));
    const auto g = grad_ref(w_init);
    double l_ref = 0;
    for (std::size_t i = 0; i < 4; ++i) l_ref += (w_init[i] - t0[i]) * (w_init[i] - t0[i]) * c0[i];
    CHECK(l[0] == Approx(l_ref).epsilon(1e-14));
    for (std::size_t i = 0; i < 4; ++i) {
        const auto k = static_cast<tf::index_t>(i);
        CHECK(w_before[k] == w_init[i]);
        const double m = 0.1 * g[i], v = 0.001 * g[i] * g[i];
        CHECK(m_new[k] == Approx(m).epsilon(1e-14));
        CHECK(v_new[k] == Approx(v).epsilon(1e-14));
        const double w1 = w_init[i] - 0.05 * (m / 0.1) / (std::sqrt(v / 0.001) + 1e-8);
        CHECK(w_new[k] == Approx(w1).epsilon(1e-12));
        CHECK(w.value()[k] == w_new[k]);
    }
}

TEST_CASE("train: a fused update of a large variable split over threads equals one thread bit for bit", "[train]") {
    // 300 x 300 = 90,000 elements: more than two parts of the kernel's grain
    constexpr tf::index_t n = 300;
    auto run = [&](int threads) {
        tf::variable<"big", float, tf::shape<n, n>> w{tf::init::uniform{-1.0, 1.0, 7}};
        tf::variable<"aim", float, tf::shape<n, n>> aim{tf::init::uniform{-1.0, 1.0, 8}};
        auto loss = tf::sum(tf::square(w - tf::stop_gradient(aim)) * w);
        auto step = tf::train::rmsprop(0.01f, {.momentum = 0.5}).minimize(loss, w);
        tf::session s(tf::session_options{.threads = threads});
        for (int k = 0; k < 3; ++k) s.run(step);
        return std::vector<float>(w.value().data(), w.value().data() + n * n);
    };
    const auto one = run(1), two = run(2);
    REQUIRE(one.size() == static_cast<std::size_t>(n * n));
    CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
}

TEST_CASE("train: apply_dense refuses a slot or gradient of another shape than the variable's and writes nothing",
          "[train]") {
    tf::variable<"w", double, tf::shape<4>> w{tf::init::ones{}};
    tf::non_trainable_variable<"w/short", double, tf::shape<3>> short_acc{tf::init::ones{}};
    tf::non_trainable_variable<"w/acc", double, tf::shape<4>> acc{tf::init::ones{}};
    tf::variable<"x", double, tf::shape<3>> x{tf::init::ones{}};
    using adagrad = tf::op::apply_dense<tf::update_rule::adagrad>;
    tf::session s;
    CHECK_THROWS_WITH(s.run(tf::group(tf::make_node<adagrad>(w, short_acc, tf::scalar<double>(0.1), w * 2.0))),
                      Catch::Contains("apply_adagrad: a slot's shape") && Catch::Contains("differs from the variable's"));
    CHECK_THROWS_WITH(s.run(tf::group(tf::make_node<adagrad>(w, acc, tf::scalar<double>(0.1), x * 2.0))),
                      Catch::Contains("apply_adagrad: the gradient's shape") &&
                          Catch::Contains("differs from the variable's"));
    for (tf::index_t i = 0; i < 4; ++i) CHECK(w.value()[i] == 1.0);
    for (tf::index_t i = 0; i < 4; ++i) CHECK(acc.value()[i] == 1.0);
    for (tf::index_t i = 0; i < 3; ++i) CHECK(short_acc.value()[i] == 1.0);
    // a node of two variables: the second's gradient of another shape; neither variable is written
    tf::variable<"x2", double, tf::shape<3>> x2{tf::init::ones{}};
    tf::non_trainable_variable<"x2/acc", double, tf::shape<3>> x2acc{tf::init::ones{}};
    using adagrad2 = tf::op::apply_dense<tf::update_rule::adagrad, 2>;
    CHECK_THROWS_WITH(s.run(tf::group(tf::make_node<adagrad2>(w, acc, x2, x2acc, tf::scalar<double>(0.1), w * 2.0, w * 2.0))),
                      Catch::Contains("apply_adagrad: the gradient's shape [4]") && Catch::Contains("variable's [3]"));
    for (tf::index_t i = 0; i < 4; ++i) CHECK(w.value()[i] == 1.0);
    for (tf::index_t i = 0; i < 4; ++i) CHECK(acc.value()[i] == 1.0);
    for (tf::index_t i = 0; i < 3; ++i) CHECK((x2.value()[i] == 1.0 && x2acc.value()[i] == 1.0));
    // the session stays usable: the same op with matching shapes updates both
    s.run(tf::group(tf::make_node<adagrad>(w, acc, tf::scalar<double>(0.1), w * 2.0)));
    CHECK(acc.value()[0] == 5.0);                                     // 1 + 2^2
    CHECK(w.value()[0] == Approx(1.0 - 0.1 * 2.0 / std::sqrt(5.0)));  // w - lr g / sqrt(acc)
}

TEMPLATE_TEST_CASE("train: learning-rate schedules, on the step's device", "[train]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"step", std::int64_t, tf::shape<>, D> gs;
    tf::session s;
    auto ex = tf::train::exponential_decay(0.1f, gs, 10, 0.5);
    auto st = tf::train::step_decay(0.1f, gs, 10, 0.5);
    auto co = tf::train::cosine_decay(0.1f, gs, 100, 0.1);
    for (std::int64_t k : {0, 5, 10, 25, 100, 150}) {
        gs.value()[0] = k;
        auto [e, sd, c] = s.run(tf::fetch(ex, st, co));
        const double p = std::min<double>(double(k), 100.0) / 100.0;
        CHECK(e[0] == Approx(0.1 * std::pow(0.5, double(k) / 10)).epsilon(1e-5));
        CHECK(sd[0] == Approx(0.1 * std::pow(0.5, double(k / 10))).epsilon(1e-5));
        CHECK(c[0] == Approx(0.1 * (0.9 * 0.5 * (1 + std::cos(M_PI * p)) + 0.1)).epsilon(1e-5).margin(1e-7));
    }
    // a schedule drives an optimizer
    tf::variable<"w", float, tf::shape<>, D> w{tf::init::constant{1.0}};
    gs.value()[0] = 10;
    s.run(tf::train::sgd(ex).minimize(tf::square(w), tf::train::global_step(gs)));
    CHECK(w.value()[0] == Approx(1.0f - 0.05f * 2.0f));
    CHECK(gs.value()[0] == 11);
}
