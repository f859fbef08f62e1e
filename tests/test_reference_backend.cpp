// The reference backend (tf::reference) against the CPU backend: one graph of
// every kernel op and a fused element-wise region with broadcasting, built
// for each device and run on both, must agree within a per-dtype tolerance;
// and to<D> between the two devices is a real copy.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <algorithm>
#include <type_traits>

namespace tf = typeflow;
using namespace tftest;

namespace {

// Tolerance of cpu vs reference, relative: the backends sum in different
// orders and Eigen's vectorised exp/log/tanh/logistic differ from std:: by a
// few ulps. Integers and bool must agree exactly.
template <class T>
constexpr double device_rtol() {
    if constexpr (std::is_same_v<T, float>) return 1e-5;
    else if constexpr (std::is_same_v<T, double>) return 1e-12;
    else return 0.0;
}

template <class T>
void expect_agree(const std::string& what, const tf::tensor<T>& c, const tf::tensor<T>& r, double rtol_scale = 1) {
    expect_tensors_close(what, c, r, device_rtol<T>() * rtol_scale, "cpu", "reference");
}

// Every kernel op and a broadcasting fused region, on device D.
template <class D, class T>
auto run_all(const tf::tensor<T>& xa, const tf::tensor<T>& xb, const tf::tensor<T>& xm, const tf::tensor<std::int32_t>& xl) {
    tf::placeholder<"a", T, tf::shape<2, 3, 4>, D> a;
    tf::placeholder<"b", T, tf::shape<3, 1>, D> b;
    tf::placeholder<"m", T, tf::shape<4, 4>, D> m;
    tf::placeholder<"l", std::int32_t, tf::shape<5>, D> l;
    tf::session s;
    // every fetch gets every feed (a feed of a placeholder that the fetch does not reach is ignored)
    const auto run = [&](const auto& y) { return s.run(y, tf::feed(a, xa), tf::feed(b, xb), tf::feed(m, xm), tf::feed(l, xl)); };
    auto fused = tf::where(a > b, tf::tanh(a) * b + T(1), tf::exp(-tf::abs(a))) / (tf::sigmoid(b) + T(2));
    auto mm = tf::matmul(a, m);                                        // batched, 2-D right operand
    auto mmt = tf::matmul(a, a, tf::transpose_a);  // batched, transposed
    auto mmtb = tf::matmul(tf::transpose<0, 2, 1>(a), a, tf::transpose_ab);
    auto red = tf::sum<1>(a) + tf::max<1>(a) - tf::min<1>(a);
    auto red_keep = tf::mean<0, 2>(a, tf::keepdims) * tf::prod<0, 2>(tf::abs(a) * T(0.5) + T(0.75), tf::keepdims);
    auto sm = tf::softmax<1>(a) + tf::log_softmax(a);
    auto inv = tf::matrix_inverse(m + tf::matmul(m, m, tf::transpose_b));
    auto det = tf::matrix_determinant(m) + tf::log_determinant(m + T(5));
    auto sol = tf::solve(m + T(3), tf::reshape<4, 6>(a));
    auto oh = tf::one_hot<7, T>(l);
    auto am = tf::argmax<1>(a);
    auto amn = tf::argmin<-1>(a);
    auto g = tf::grad(tf::mean(tf::square(fused)), a);  // reduced_count, broadcast_like
    return std::make_tuple(run(fused), run(mm), run(mmt), run(mmtb), run(red),
                           run(red_keep), run(sm), run(inv), run(det),
                           run(sol), run(oh), run(am), run(amn),
                           run(g));
}

}  // namespace

TEMPLATE_TEST_CASE("reference: every kernel op and a fused region agree with cpu", "[reference][device]", float, double) {
    using T = TestType;
    rng_t r(19);
    const auto xa = uniform_tensor<T>(r, tf::dims{2, 3, 4}, 0, 0, -2, 2);
    const auto xb = uniform_tensor<T>(r, tf::dims{3, 1}, 0, 0, -1, 1);
    auto xm = uniform_tensor<T>(r, tf::dims{4, 4}, 0, 0, -1, 1);
    for (int i = 0; i < 4; ++i) xm(i, i) += T(3);  // well conditioned
    const auto xl = uniform_tensor<std::int32_t>(r, tf::dims{5}, 0, 6, 0, 0);
    const auto c = run_all<tf::cpu>(xa, xb, xm, xl);
    const auto f = run_all<tf::reference>(xa, xb, xm, xl);
    const char* names[] = {"fused", "matmul", "matmul transpose_a", "matmul transpose_ab", "sum/max/min", "mean/prod keepdims", "softmax+log_softmax",
                           "matrix_inverse", "determinant", "solve", "one_hot", "argmax", "argmin", "grad"};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (expect_agree(names[I], std::get<I>(c), std::get<I>(f), I == 7 || I == 9 ? 100 : 1), ...);
    }(std::make_index_sequence<14>{});
}

TEST_CASE("reference: integer and bool graphs agree exactly with cpu", "[reference][device]") {
    rng_t r(7);
    const auto xi = uniform_tensor<std::int32_t>(r, tf::dims{3, 4}, -9, 9, 0, 0);
    const auto run = [&]<class D>(D) {
        tf::placeholder<"i", std::int32_t, tf::shape<3, 4>, D> i;
        tf::session s;
        auto y = tf::maximum(i * 3 - 2, -i) / 2 + tf::sum<0>(i);
        auto z = (i > 0) && !tf::equal(i, 3);
        auto p = tf::transpose(i);
        return std::make_tuple(s.run(y, tf::feed(i, xi)), s.run(z, tf::feed(i, xi)), s.run(p, tf::feed(i, xi)));
    };
    const auto c = run(tf::cpu{});
    const auto f = run(tf::reference{});
    expect_agree("int arithmetic", std::get<0>(c), std::get<0>(f));
    expect_agree("bool logic", std::get<1>(c), std::get<1>(f));
    expect_agree("int transpose", std::get<2>(c), std::get<2>(f));
}

TEST_CASE("reference: to<reference> of a cpu graph is a materialised copy", "[reference][device][transfer]") {
    tf::placeholder<"x", float, tf::shape<2, 3>> x;
    auto moved = tf::to<tf::reference>(x * 2.0f);
    static_assert(std::is_same_v<tf::device_t<decltype(moved)>, tf::reference>);
    auto y = moved + 1.0f;  // on reference
    using G = tf::graph::graph_of<decltype(y)>;
    STATIC_REQUIRE(G::materialized<decltype(moved)>::value);
    tf::tensor<float> xv({2, 3});
    for (tf::index_t i = 0; i < 6; ++i) xv[i] = static_cast<float>(i) - 2.5f;
    tf::session s;
    const auto got = s.run(moved, tf::feed(x, xv));
    const auto got_y = s.run(y, tf::feed(x, xv));
    for (tf::index_t i = 0; i < 6; ++i) {
        CHECK(got[i] == xv[i] * 2.0f);
        CHECK(got_y[i] == xv[i] * 2.0f + 1.0f);
    }
}

TEST_CASE("reference: a graph mixing cpu and reference through to<> runs", "[reference][device][transfer]") {
    tf::placeholder<"x", double, tf::shape<3, 4>> x;                         // cpu
    tf::variable<"w", double, tf::shape<4, 2>, tf::reference> w{tf::init::constant{0.5}};  // reference
    auto h = tf::matmul(tf::to<tf::reference>(tf::relu(x)), w);             // on reference
    auto y = tf::sum(tf::to<tf::cpu>(h) * 2.0);                              // back on cpu
    tf::tensor<double> xv({3, 4});
    for (tf::index_t i = 0; i < 12; ++i) xv[i] = static_cast<double>(i) - 5.0;
    tf::session s;
    const auto got = s.run(y, tf::feed(x, xv));
    double want = 0;
    for (tf::index_t i = 0; i < 12; ++i) want += std::max(xv[i], 0.0) * 0.5 * 2.0 * 2.0;  // two output columns
    CHECK(got[0] == Approx(want).epsilon(1e-12));
    // the gradient flows back across both transfers
    const auto gw = s.run(tf::grad(y, w), tf::feed(x, xv));
    for (tf::index_t k = 0; k < 4; ++k) {
        double want_k = 0;
        for (tf::index_t i = 0; i < 3; ++i) want_k += std::max(xv(i, k), 0.0) * 2.0;
        CHECK(gw(k, 0) == Approx(want_k).epsilon(1e-12));
        CHECK(gw(k, 1) == Approx(want_k).epsilon(1e-12));
    }
}
