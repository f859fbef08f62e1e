// Element-wise ops (arithmetic, math functions, comparisons, logical ops,
// where, cast) and numpy broadcasting, checked against naive loops written
// here: every reference value is computed with plain C++ on the fed data, with
// the broadcast index computed by this file, never by typeflow.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {

// ---------------------------------------------------------------------------
// Test data
// ---------------------------------------------------------------------------

enum class dist {
    any,        // floats in [-3, 3), ints in [-20, 20]
    positive,   // floats in [0.1, 4), ints in [1, 20]
    nonzero,    // |v| in [0.5, 3) (floats) or [1, 9] (ints), random sign
    small_int,  // integers in [-3, 3] (as floats too): comparisons see ties
};

template <class T>
tf::tensor<T> rand_tensor(rng_t& r, const tf::dims& d, dist k = dist::any) {
    tf::tensor<T> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) {
        if constexpr (std::is_same_v<T, bool>) {
            t[i] = r.coin();
        } else if constexpr (std::is_integral_v<T>) {
            long long v = 0;
            switch (k) {
                case dist::any: v = r.integer(-20, 20); break;
                case dist::positive: v = r.integer(1, 20); break;
                case dist::nonzero: v = r.integer(1, 9) * (r.coin() ? 1 : -1); break;
                case dist::small_int: v = r.integer(-3, 3); break;
            }
            t[i] = static_cast<T>(v);
        } else {
            double v = 0;
            switch (k) {
                case dist::any: v = r.uniform(-3, 3); break;
                case dist::positive: v = r.uniform(0.1, 4); break;
                case dist::nonzero: v = r.uniform(0.5, 3) * (r.coin() ? 1 : -1); break;
                case dist::small_int: v = static_cast<double>(r.integer(-3, 3)); break;
            }
            t[i] = static_cast<T>(v);
        }
    }
    return t;
}

template <class T>
tf::tensor<T> scalar_tensor(T v) {
    tf::tensor<T> t{tf::dims{}};
    t[0] = v;
    return t;
}

// ---------------------------------------------------------------------------
// Reference broadcasting (independent of the library)
// ---------------------------------------------------------------------------

long long numel_of(const tf::dims& d) {
    long long n = 1;
    for (std::size_t i = 0; i < d.rank; ++i) n *= d.d[i];
    return n;
}

// numpy broadcast of two extent lists (asserts they are compatible)
tf::dims bshape(const tf::dims& a, const tf::dims& b) {
    tf::dims o;
    o.rank = a.rank > b.rank ? a.rank : b.rank;
    for (std::size_t i = 0; i < o.rank; ++i) {
        const long long x = i + a.rank >= o.rank ? a.d[i + a.rank - o.rank] : 1;
        const long long y = i + b.rank >= o.rank ? b.d[i + b.rank - o.rank] : 1;
        REQUIRE((x == y || x == 1 || y == 1));
        o.d[i] = x == 1 ? y : x;
    }
    return o;
}

// Flat index into a tensor of extents `in` of the element broadcast to flat
// output index `o` of extents `out`.
long long bidx(const tf::dims& out, const tf::dims& in, long long o) {
    long long multi[tf::max_rank] = {};
    for (std::size_t i = out.rank; i-- > 0;) {
        multi[i] = o % out.d[i];
        o /= out.d[i];
    }
    long long off = 0;
    for (std::size_t j = 0; j < in.rank; ++j) {
        const std::size_t ax = out.rank - in.rank + j;
        off = off * in.d[j] + (in.d[j] == 1 ? 0 : multi[ax]);
    }
    return off;
}

// The element of t seen at flat output index o of extents out.
template <class T>
T at(const tf::tensor<T>& t, const tf::dims& out, long long o) {
    return t[bidx(out, t.dims(), o)];
}

// Arithmetic type of the reference: double for floating dtypes, the dtype itself otherwise.
template <class T>
using calc_t = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// Reference of a binary op over two broadcast tensors.
template <class T, class F>
std::vector<double> ref2(const tf::tensor<T>& a, const tf::tensor<T>& b, const tf::dims& out, F f) {
    std::vector<double> r(static_cast<std::size_t>(numel_of(out)));
    for (long long o = 0; o < numel_of(out); ++o)
        r[static_cast<std::size_t>(o)] = static_cast<double>(f(calc_t<T>(at(a, out, o)), calc_t<T>(at(b, out, o))));
    return r;
}
template <class T, class F>
std::vector<double> ref1(const tf::tensor<T>& a, F f) {
    std::vector<double> r(static_cast<std::size_t>(a.size()));
    for (long long o = 0; o < a.size(); ++o) r[static_cast<std::size_t>(o)] = static_cast<double>(f(calc_t<T>(a[o])));
    return r;
}

template <class T>
constexpr double arith_rtol() {
    return std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, double> ? 1e-12 : 0.0;
}
template <class T>
constexpr double trans_rtol() {
    return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}
// tiny absolute floor for transcendental results close to 0
template <class T>
constexpr double trans_atol() {
    return std::is_same_v<T, float> ? 1e-7 : 1e-15;
}

// tf::constant<S>(values) placed on device D.
template <class D, class S, class T>
tf::constant_tensor<T, S, D> constant_on(std::initializer_list<T> values) {
    tf::constant_tensor<T, S, D> c;
    c.data = tf::constant<S>(values).data;
    return c;
}

template <class T>
std::string dtype_tag() {
    return std::string(tf::dtype_name(tf::dtype_of<T>));
}

// ---------------------------------------------------------------------------
// + - * / maximum minimum between two placeholders of static shapes SA, SB
// ---------------------------------------------------------------------------
// Full: all six ops; otherwise a - b only (for shape variants: the
// kernels are shared with the full check, only the broadcast layout differs).
template <class D, class T, class SA, class SB, bool Full = true>
void check_arith_static(std::uint32_t seed) {
    const tf::dims da = SA::value, db = SB::value;
    const std::string tag = dtype_tag<T>() + " " + tf::to_string(da) + " op " + tf::to_string(db);
    INFO(tag);
    tf::placeholder<"a", T, SA, D> a;
    tf::placeholder<"b", T, SB, D> b;
    rng_t r(seed);
    const auto ta = rand_tensor<T>(r, da, Full ? dist::any : dist::nonzero);
    const auto tb = rand_tensor<T>(r, db, dist::nonzero);
    const tf::dims out = bshape(da, db);
    const double rt = arith_rtol<T>();
    tf::session s;
    if constexpr (Full) {
        auto [add, sub, mul, div, mx, mn] =
            s.run(tf::fetch(a + b, a - b, a * b, a / b, tf::maximum(a, b), tf::minimum(a, b)), tf::feed(a, ta),
                  tf::feed(b, tb));
        expect_values("a + b", add, out, ref2(ta, tb, out, [](auto x, auto y) { return x + y; }), rt);
        expect_values("a - b", sub, out, ref2(ta, tb, out, [](auto x, auto y) { return x - y; }), rt);
        expect_values("a * b", mul, out, ref2(ta, tb, out, [](auto x, auto y) { return x * y; }), rt);
        expect_values("a / b", div, out, ref2(ta, tb, out, [](auto x, auto y) { return x / y; }), rt);
        expect_values("maximum", mx, out, ref2(ta, tb, out, [](auto x, auto y) { return x < y ? y : x; }), rt);
        expect_values("minimum", mn, out, ref2(ta, tb, out, [](auto x, auto y) { return y < x ? y : x; }), rt);
    } else {
        auto sub = s.run(a - b, tf::feed(a, ta), tf::feed(b, tb));
        expect_values("a - b", sub, out, ref2(ta, tb, out, [](auto x, auto y) { return x - y; }), rt);
    }
}

}  // namespace

// ===========================================================================

TEMPLATE_TEST_CASE("elementwise: + - * / maximum minimum, equal shapes, all numeric dtypes", "[ops][elementwise]", tf::cpu, tf::reference) {
    using D = TestType;
    check_arith_static<D, float, tf::shape<5, 7>, tf::shape<5, 7>>(1);
    check_arith_static<D, double, tf::shape<5, 7>, tf::shape<5, 7>, false>(2);
    check_arith_static<D, std::int32_t, tf::shape<5, 7>, tf::shape<5, 7>, false>(3);
    check_arith_static<D, std::int64_t, tf::shape<5, 7>, tf::shape<5, 7>, false>(4);
}

TEMPLATE_TEST_CASE("elementwise: arithmetic broadcasting [2,3,4] with [3,1], all numeric dtypes", "[ops][elementwise][broadcast]", tf::cpu, tf::reference) {
    using D = TestType;
    check_arith_static<D, float, tf::shape<2, 3, 4>, tf::shape<3, 1>>(11);
    check_arith_static<D, double, tf::shape<2, 3, 4>, tf::shape<3, 1>>(12);
    check_arith_static<D, std::int32_t, tf::shape<2, 3, 4>, tf::shape<3, 1>>(13);
    check_arith_static<D, std::int64_t, tf::shape<2, 3, 4>, tf::shape<3, 1>>(14);
}

TEMPLATE_TEST_CASE("elementwise: arithmetic broadcasting with size-1 axes on either side and different ranks",
          "[ops][elementwise][broadcast]", tf::cpu, tf::reference) {
    using D = TestType;
    check_arith_static<D, float, tf::shape<3, 1>, tf::shape<1, 4>, false>(21);       // both sides broadcast
    check_arith_static<D, std::int32_t, tf::shape<3, 1>, tf::shape<1, 4>, false>(22);
    check_arith_static<D, float, tf::shape<4>, tf::shape<2, 3, 4>, false>(23);       // lower rank on the left
    check_arith_static<D, double, tf::shape<4>, tf::shape<2, 3, 4>, false>(24);
    check_arith_static<D, double, tf::shape<2, 1, 5>, tf::shape<3, 1>, false>(25);   // [2,1,5] with [3,1] -> [2,3,5]
    check_arith_static<D, std::int64_t, tf::shape<1, 3, 1, 2>, tf::shape<2, 1, 4, 1>, false>(26);  // rank 4, alternating
    check_arith_static<D, float, tf::shape<1>, tf::shape<2, 3>, false>(27);          // one-element rank-1 operand
    check_arith_static<D, float, tf::shape<2, 3>, tf::shape<1, 1>, false>(28);       // one-element rank-2 operand
    check_arith_static<D, float, tf::shape<3, 1000>, tf::shape<3, 1>, false>(29);    // long rows (several blocks)
}

namespace {
// C++ scalars (either side), rank-0 placeholders and constants as operands.
// Full: nine forms; otherwise three (the rest share kernels across dtypes).
template <class D, class T, bool Full>
void check_scalar_operands(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"a", T, tf::shape<3, 4>, D> a;
    tf::placeholder<"s", T, tf::shape<>, D> sc;
    rng_t r(seed);
    const auto ta = rand_tensor<T>(r, {3, 4}, dist::nonzero);
    const T sv = std::is_floating_point_v<T> ? static_cast<T>(1.75) : static_cast<T>(3);
    const auto ts = scalar_tensor<T>(sv);
    const tf::dims out{3, 4};
    using C = calc_t<T>;
    const double rt = arith_rtol<T>();
    const C s_ = C(sv);
    tf::session s;
    if constexpr (Full) {
        auto [r1, r2, r3, r4, r5, r6, r7, r8, r9] =
            s.run(tf::fetch(a + 2, 7 - a, a * sc, sc / a, tf::maximum(a, 1), tf::minimum(0, a), sc - a, a / 2,
                            sc * tf::scalar<T, D>(static_cast<T>(2)) + a),
                  tf::feed(a, ta), tf::feed(sc, ts));
        expect_values("a + 2", r1, out, ref1(ta, [](C x) { return x + C(2); }), rt);
        expect_values("7 - a", r2, out, ref1(ta, [](C x) { return C(7) - x; }), rt);
        expect_values("a * s", r3, out, ref1(ta, [&](C x) { return x * s_; }), rt);
        expect_values("s / a", r4, out, ref1(ta, [&](C x) { return s_ / x; }), rt);
        expect_values("maximum(a, 1)", r5, out, ref1(ta, [](C x) { return x < C(1) ? C(1) : x; }), rt);
        expect_values("minimum(0, a)", r6, out, ref1(ta, [](C x) { return x < C(0) ? x : C(0); }), rt);
        expect_values("s - a", r7, out, ref1(ta, [&](C x) { return s_ - x; }), rt);
        expect_values("a / 2", r8, out, ref1(ta, [](C x) { return x / C(2); }), rt);
        expect_values("s * constant(2) + a", r9, out, ref1(ta, [&](C x) { return s_ * C(2) + x; }), rt);
    } else {
        auto [r2, r4, r7] = s.run(tf::fetch(7 - a, sc / a, sc - a), tf::feed(a, ta), tf::feed(sc, ts));
        expect_values("7 - a", r2, out, ref1(ta, [](C x) { return C(7) - x; }), rt);
        expect_values("s / a", r4, out, ref1(ta, [&](C x) { return s_ / x; }), rt);
        expect_values("s - a", r7, out, ref1(ta, [&](C x) { return s_ - x; }), rt);
    }
    // scalar op scalar: a rank-0 result
    auto r0 = s.run(sc * sc - 1, tf::feed(sc, ts));
    expect_values("s * s - 1 (rank 0)", r0, tf::dims{}, {static_cast<double>(s_ * s_ - C(1))}, rt);
}
}  // namespace

TEMPLATE_TEST_CASE("elementwise: C++ scalar, rank-0 placeholder and constant operands, all numeric dtypes",
          "[ops][elementwise][broadcast]", tf::cpu, tf::reference) {
    using D = TestType;
    check_scalar_operands<D, float, true>(31);
    check_scalar_operands<D, double, false>(32);
    check_scalar_operands<D, std::int32_t, false>(33);
    check_scalar_operands<D, std::int64_t, false>(34);
}

TEMPLATE_TEST_CASE("elementwise: integer division truncates toward zero", "[ops][elementwise]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", std::int32_t, tf::shape<6>, D> a;
    tf::placeholder<"b", std::int64_t, tf::shape<6>, D> b;
    tf::tensor<std::int32_t> ta({6}, {7, -7, 7, -7, 0, 5});
    tf::tensor<std::int64_t> tb({6}, {7, -7, 7, -7, 0, 5});
    tf::session s;
    auto [q32, q64] = s.run(tf::fetch(a / 2, b / -2), tf::feed(a, ta), tf::feed(b, tb));
    expect_values("int32 a / 2", q32, {6}, {3, -3, 3, -3, 0, 2});
    expect_values("int64 b / -2", q64, {6}, {-3, 3, -3, 3, 0, -2});
}

TEMPLATE_TEST_CASE("elementwise: constant tensor operands broadcast", "[ops][elementwise][broadcast]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, tf::shape<2, 3, 4>, D> x;
    auto c31 = constant_on<D, tf::shape<3, 1>>({10.0, 20.0, 30.0});
    auto c4 = constant_on<D, tf::shape<4>>({1.0, -1.0, 0.5, 2.0});
    rng_t r(41);
    const auto tx = rand_tensor<double>(r, {2, 3, 4});
    const double v31[3] = {10.0, 20.0, 30.0}, v4[4] = {1.0, -1.0, 0.5, 2.0};
    tf::session s;
    auto [y, z] = s.run(tf::fetch(x * c4 + c31, c31 - c4), tf::feed(x, tx));
    std::vector<double> wy(24), wz(12);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k) wy[(i * 3 + j) * 4 + k] = tx(i, j, k) * v4[k] + v31[j];
    for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) wz[j * 4 + k] = v31[j] - v4[k];
    expect_values("x * c4 + c31", y, {2, 3, 4}, wy, 1e-12);
    expect_values("c31 - c4", z, {3, 4}, wz, 1e-12);
}

namespace {
// Placeholders with dyn extents fed different sizes across runs of one session.
template <class D, class T>
void check_dyn_broadcast(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"a", T, tf::shape<tf::dyn, tf::dyn>, D> a;
    tf::placeholder<"b", T, tf::shape<tf::dyn>, D> b;
    const auto e1 = a + b;
    const auto e2 = a - b * a;
    const auto e3 = b / a;
    rng_t r(seed);
    tf::session s;
    const std::vector<std::pair<tf::dims, tf::dims>> cases = {
        {{2, 3}, {3}}, {{2, 3}, {1}}, {{1, 3}, {3}}, {{4, 1}, {5}}, {{1, 1}, {6}},
        {{3, 5}, {5}}, {{0, 3}, {3}}, {{2, 3}, {3}}, {{1, 1}, {1}}, {{7, 300}, {1}},
    };
    // results of the first run are kept and checked again at the end: later
    // runs must not write into tensors the caller still holds
    tf::tensor<T> keep1, keep2, keep3;
    std::vector<double> want1, want2, want3;
    tf::dims keep_out;
    const double rt = arith_rtol<T>();
    for (std::size_t c = 0; c < cases.size(); ++c) {
        const auto& [da, db] = cases[c];
        INFO("case " << c << ": " << tf::to_string(da) << " with " << tf::to_string(db));
        const auto ta = rand_tensor<T>(r, da, dist::nonzero);
        const auto tb = rand_tensor<T>(r, db, dist::nonzero);
        const tf::dims out = bshape(da, db);
        auto [y1, y2, y3] = s.run(tf::fetch(e1, e2, e3), tf::feed(a, ta), tf::feed(b, tb));
        auto w1 = ref2(ta, tb, out, [](auto x, auto y) { return x + y; });
        auto w2 = ref2(ta, tb, out, [](auto x, auto y) { return x - y * x; });
        auto w3 = ref2(ta, tb, out, [](auto x, auto y) { return y / x; });
        expect_values("a + b", y1, out, w1, rt);
        expect_values("a - b * a", y2, out, w2, rt);
        expect_values("b / a", y3, out, w3, rt);
        if (c == 0) {
            keep1 = y1, keep2 = y2, keep3 = y3;
            want1 = w1, want2 = w2, want3 = w3;
            keep_out = out;
        }
    }
    expect_values("first a + b, after later runs", keep1, keep_out, want1, rt);
    expect_values("first a - b * a, after later runs", keep2, keep_out, want2, rt);
    expect_values("first b / a, after later runs", keep3, keep_out, want3, rt);

    // extents that do not broadcast: a tf::error, and the session still works afterwards
    const auto ta = rand_tensor<T>(r, {2, 3}, dist::nonzero);
    const auto tb4 = rand_tensor<T>(r, {4}, dist::nonzero);
    REQUIRE_THROWS_AS(s.run(tf::fetch(e1, e2, e3), tf::feed(a, ta), tf::feed(b, tb4)), tf::error);
    const auto tb3 = rand_tensor<T>(r, {3}, dist::nonzero);
    auto [y1, y2, y3] = s.run(tf::fetch(e1, e2, e3), tf::feed(a, ta), tf::feed(b, tb3));
    (void)y2;
    (void)y3;
    expect_values("a + b after an error", y1, {2, 3}, ref2(ta, tb3, {2, 3}, [](auto x, auto y) { return x + y; }), rt);
}
}  // namespace

TEMPLATE_TEST_CASE("elementwise: dyn extents fed different sizes across runs, extent 1 broadcasting",
          "[ops][elementwise][broadcast][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    check_dyn_broadcast<D, float>(51);
    check_dyn_broadcast<D, std::int32_t>(52);
}

TEMPLATE_TEST_CASE("elementwise: dyn extent of 1 on either side against a static extent", "[ops][elementwise][broadcast][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", double, tf::shape<tf::dyn, 4>, D> a;
    tf::placeholder<"b", double, tf::shape<tf::dyn, 1>, D> b;
    const auto e = a * b - b;
    rng_t r(61);
    tf::session s;
    const std::vector<std::pair<tf::dims, tf::dims>> cases = {
        {{3, 4}, {3, 1}}, {{1, 4}, {6, 1}}, {{5, 4}, {1, 1}}, {{1, 4}, {1, 1}}, {{2, 4}, {2, 1}}};
    for (const auto& [da, db] : cases) {
        INFO(tf::to_string(da) << " with " << tf::to_string(db));
        const auto ta = rand_tensor<double>(r, da);
        const auto tb = rand_tensor<double>(r, db);
        const tf::dims out = bshape(da, db);
        auto y = s.run(e, tf::feed(a, ta), tf::feed(b, tb));
        expect_values("a * b - b", y, out, ref2(ta, tb, out, [](double x, double z) { return x * z - z; }), 1e-12);
    }
    const auto ta = rand_tensor<double>(r, {3, 4});
    const auto tb = rand_tensor<double>(r, {2, 1});
    REQUIRE_THROWS_AS(s.run(e, tf::feed(a, ta), tf::feed(b, tb)), tf::error);
}

namespace {
// unary minus, abs, square, relu (Full: each fetched on its own; otherwise
// one fused combination, with distinct weights so any wrong op shows)
template <class D, class T, bool Full>
void check_unary_numeric(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"a", T, tf::shape<4, 9>, D> a;
    rng_t r(seed);
    auto ta = rand_tensor<T>(r, {4, 9});
    ta[0] = T(0);  // relu and abs at 0
    tf::session s;
    using C = calc_t<T>;
    const double rt = arith_rtol<T>();
    const tf::dims out{4, 9};
    if constexpr (Full) {
        auto [n, ab, sq, re] = s.run(tf::fetch(-a, tf::abs(a), tf::square(a), tf::relu(a)), tf::feed(a, ta));
        expect_values("-a", n, out, ref1(ta, [](C x) { return -x; }), rt);
        expect_values("abs", ab, out, ref1(ta, [](C x) { return x < 0 ? -x : x; }), rt);
        expect_values("square", sq, out, ref1(ta, [](C x) { return x * x; }), rt);
        expect_values("relu", re, out, ref1(ta, [](C x) { return x > 0 ? x : C(0); }), rt);
    } else {
        auto y = s.run(tf::square(a) * 1000 + tf::relu(a) * 100 + tf::abs(-a), tf::feed(a, ta));
        expect_values("square(a) * 1000 + relu(a) * 100 + abs(-a)", y, out, ref1(ta, [](C x) {
                          return x * x * C(1000) + (x > 0 ? x : C(0)) * C(100) + (x < 0 ? -x : x);
                      }), rt);
    }
}

// exp, log, sqrt, rsqrt, sigmoid, tanh, pow
template <class D, class T>
void check_unary_floating(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"a", T, tf::shape<3, 17>, D> a;  // any sign
    tf::placeholder<"p", T, tf::shape<3, 17>, D> p;  // positive
    tf::placeholder<"e", T, tf::shape<17>, D> e;     // exponents, broadcast over rows
    rng_t r(seed);
    const auto ta = rand_tensor<T>(r, {3, 17});
    const auto tp = rand_tensor<T>(r, {3, 17}, dist::positive);
    const auto te = rand_tensor<T>(r, {17});
    tf::session s;
    auto [ex, lg, sq, rs, sg, th, pw, pw2] =
        s.run(tf::fetch(tf::exp(a), tf::log(p), tf::sqrt(p), tf::rsqrt(p), tf::sigmoid(a), tf::tanh(a), tf::pow(p, e),
                        tf::pow(p, 2.5)),
              tf::feed(a, ta), tf::feed(p, tp), tf::feed(e, te));
    const double rt = trans_rtol<T>(), at_ = trans_atol<T>();
    const tf::dims out{3, 17};
    expect_values("exp", ex, out, ref1(ta, [](double x) { return std::exp(x); }), rt, at_);
    expect_values("log", lg, out, ref1(tp, [](double x) { return std::log(x); }), rt, at_);
    expect_values("sqrt", sq, out, ref1(tp, [](double x) { return std::sqrt(x); }), rt, at_);
    expect_values("rsqrt", rs, out, ref1(tp, [](double x) { return 1.0 / std::sqrt(x); }), rt, at_);
    expect_values("sigmoid", sg, out, ref1(ta, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }), rt, at_);
    expect_values("tanh", th, out, ref1(ta, [](double x) { return std::tanh(x); }), rt, at_);
    expect_values("pow(p, e)", pw, out, ref2(tp, te, out, [](double x, double y) { return std::pow(x, y); }), rt, at_);
    expect_values("pow(p, 2.5)", pw2, out, ref1(tp, [](double x) { return std::pow(x, 2.5); }), rt, at_);
}
}  // namespace

TEMPLATE_TEST_CASE("elementwise: unary minus, abs, square, relu in every numeric dtype", "[ops][elementwise]", tf::cpu, tf::reference) {
    using D = TestType;
    check_unary_numeric<D, float, true>(71);
    check_unary_numeric<D, double, false>(72);
    check_unary_numeric<D, std::int32_t, true>(73);
    check_unary_numeric<D, std::int64_t, false>(74);
}

TEMPLATE_TEST_CASE("elementwise: exp log sqrt rsqrt sigmoid tanh pow in float and double", "[ops][elementwise]", tf::cpu, tf::reference) {
    using D = TestType;
    check_unary_floating<D, float>(81);
    check_unary_floating<D, double>(82);
}

TEMPLATE_TEST_CASE("elementwise: transcendental functions on a wide input range", "[ops][elementwise]", tf::cpu, tf::reference) {
    using D = TestType;
    // sigmoid and tanh saturate
    tf::placeholder<"a", double, tf::shape<41>, D> a;
    tf::placeholder<"f", float, tf::shape<41>, D> f;
    tf::tensor<double> ta({41});
    tf::tensor<float> tfl({41});
    for (int i = 0; i < 41; ++i) {
        ta[i] = -20.0 + i;
        tfl[i] = static_cast<float>(-20.0 + i);
    }
    tf::session s;
    auto [sd, td, sf, tfv] =
        s.run(tf::fetch(tf::sigmoid(a), tf::tanh(a), tf::sigmoid(f), tf::tanh(f)), tf::feed(a, ta),
              tf::feed(f, tfl));
    expect_values("sigmoid double", sd, {41}, ref1(ta, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }), 1e-12, 1e-15);
    expect_values("tanh double", td, {41}, ref1(ta, [](double x) { return std::tanh(x); }), 1e-12, 1e-15);
    // float: relative error bound on sigmoid(-20) = 2e-9 needs an absolute floor
    expect_values("sigmoid float", sf, {41}, ref1(tfl, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }), 1e-5, 1e-7);
    expect_values("tanh float", tfv, {41}, ref1(tfl, [](double x) { return std::tanh(x); }), 1e-5, 1e-7);
}

namespace {
// < <= > >= equal not_equal with broadcasting and ties (Full: also scalar
// operands; otherwise <, >=, equal only).
template <class D, class T, bool Full>
void check_compare(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"a", T, tf::shape<3, 1>, D> a;
    tf::placeholder<"b", T, tf::shape<1, 4>, D> b;
    rng_t r(seed);
    auto ta = rand_tensor<T>(r, {3, 1}, dist::small_int);
    auto tb = rand_tensor<T>(r, {1, 4}, dist::small_int);
    ta[1] = tb[2];  // at least one tie, or <= vs < is not tested
    const tf::dims out{3, 4};
    tf::session s;
    if constexpr (Full) {
        tf::placeholder<"c", T, tf::shape<3, 4>, D> c;
        const auto tc = rand_tensor<T>(r, {3, 4}, dist::small_int);
        auto [lt, le, gt, ge, eq, ne, lt0, ge1] =
            s.run(tf::fetch(a < b, a <= b, a > b, a >= b, tf::equal(a, b), tf::not_equal(a, b), c < 0, 1 >= c),
                  tf::feed(a, ta), tf::feed(b, tb), tf::feed(c, tc));
        STATIC_REQUIRE(std::is_same_v<decltype(lt), tf::tensor<bool>>);
        expect_values("a < b", lt, out, ref2(ta, tb, out, [](auto x, auto y) { return x < y; }));
        expect_values("a <= b", le, out, ref2(ta, tb, out, [](auto x, auto y) { return x <= y; }));
        expect_values("a > b", gt, out, ref2(ta, tb, out, [](auto x, auto y) { return x > y; }));
        expect_values("a >= b", ge, out, ref2(ta, tb, out, [](auto x, auto y) { return x >= y; }));
        expect_values("equal", eq, out, ref2(ta, tb, out, [](auto x, auto y) { return x == y; }));
        expect_values("not_equal", ne, out, ref2(ta, tb, out, [](auto x, auto y) { return x != y; }));
        expect_values("c < 0", lt0, out, ref1(tc, [](auto x) { return x < 0; }));
        expect_values("1 >= c", ge1, out, ref1(tc, [](auto x) { return 1 >= x; }));
    } else {
        auto [lt, ge, eq] = s.run(tf::fetch(a < b, a >= b, tf::equal(a, b)), tf::feed(a, ta), tf::feed(b, tb));
        expect_values("a < b", lt, out, ref2(ta, tb, out, [](auto x, auto y) { return x < y; }));
        expect_values("a >= b", ge, out, ref2(ta, tb, out, [](auto x, auto y) { return x >= y; }));
        expect_values("equal", eq, out, ref2(ta, tb, out, [](auto x, auto y) { return x == y; }));
    }
}
}  // namespace

TEMPLATE_TEST_CASE("elementwise: comparisons with broadcasting and ties, every numeric dtype", "[ops][elementwise][compare]", tf::cpu, tf::reference) {
    using D = TestType;
    check_compare<D, float, true>(91);
    check_compare<D, double, false>(92);
    check_compare<D, std::int32_t, false>(93);
    check_compare<D, std::int64_t, false>(94);
}

TEMPLATE_TEST_CASE("elementwise: logical and/or/not, && || !, bool equality, with broadcasting", "[ops][elementwise][logical]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"p", bool, tf::shape<2, 3, 4>, D> p;
    tf::placeholder<"q", bool, tf::shape<3, 1>, D> q;
    rng_t r(101);
    const auto tp = rand_tensor<bool>(r, {2, 3, 4});
    const auto tq = rand_tensor<bool>(r, {3, 1});
    const tf::dims out{2, 3, 4};
    tf::session s;
    auto [and1, or1, not1, and2, not2, orF, eq, ne, xr] =
        s.run(tf::fetch(p && q, p || q, !p, tf::logical_and(q, p), tf::logical_not(q), false || p, tf::equal(p, q),
                        tf::not_equal(p, q), tf::logical_or(p, q) && !(p && q)),
              tf::feed(p, tp), tf::feed(q, tq));
    expect_values("p && q", and1, out, ref2(tp, tq, out, [](bool x, bool y) { return x && y; }));
    expect_values("p || q", or1, out, ref2(tp, tq, out, [](bool x, bool y) { return x || y; }));
    expect_values("!p", not1, out, ref1(tp, [](bool x) { return !x; }));
    expect_values("logical_and(q, p)", and2, out, ref2(tq, tp, out, [](bool x, bool y) { return x && y; }));
    expect_values("logical_not(q)", not2, {3, 1}, ref1(tq, [](bool x) { return !x; }));
    expect_values("false || p", orF, out, ref1(tp, [](bool x) { return x; }));
    expect_values("equal(p, q)", eq, out, ref2(tp, tq, out, [](bool x, bool y) { return x == y; }));
    expect_values("not_equal(p, q)", ne, out, ref2(tp, tq, out, [](bool x, bool y) { return x != y; }));
    expect_values("xor via and/or/not", xr, out, ref2(tp, tq, out, [](bool x, bool y) { return x != y; }));
}

namespace {
// Full: four forms; otherwise where(c, x, y) only.
template <class D, class T, bool Full>
void check_where(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"c", bool, tf::shape<3, 1>, D> c;
    tf::placeholder<"x", T, tf::shape<2, 3, 4>, D> x;
    tf::placeholder<"y", T, tf::shape<4>, D> y;
    rng_t r(seed);
    const auto tc = rand_tensor<bool>(r, {3, 1});
    const auto tx = rand_tensor<T>(r, {2, 3, 4});
    const auto ty = rand_tensor<T>(r, {4});
    const tf::dims out{2, 3, 4}, out3{3, 4};
    using C = calc_t<T>;
    std::vector<double> r1, r2, r3, r4;
    for (long long o = 0; o < 24; ++o) {
        const bool cv = at(tc, out, o);
        const C xv = at(tx, out, o), yv = at(ty, out, o);
        r1.push_back(static_cast<double>(cv ? xv : yv));
        r2.push_back(static_cast<double>(cv ? xv : C(0)));
        r4.push_back(static_cast<double>(xv > yv ? xv - yv : yv * C(2)));
    }
    // where(c [3,1], 5, y [4]) -> [3,4]
    for (long long o = 0; o < 12; ++o) r3.push_back(static_cast<double>(at(tc, out3, o) ? C(5) : C(at(ty, out3, o))));
    const double rt = arith_rtol<T>();
    tf::session s;
    if constexpr (Full) {
        auto [w1, w2, w3, w4] = s.run(tf::fetch(tf::where(c, x, y), tf::where(c, x, 0), tf::where(c, 5, y),
                                                tf::where(x > y, x - y, y * 2)),
                                      tf::feed(c, tc), tf::feed(x, tx), tf::feed(y, ty));
        expect_values("where(c, x, y)", w1, out, r1, rt);
        expect_values("where(c, x, 0)", w2, out, r2, rt);
        expect_values("where(c, 5, y)", w3, out3, r3, rt);
        expect_values("where(x > y, x - y, y * 2)", w4, out, r4, rt);
    } else {
        auto w1 = s.run(tf::where(c, x, y), tf::feed(c, tc), tf::feed(x, tx), tf::feed(y, ty));
        expect_values("where(c, x, y)", w1, out, r1, rt);
    }
}
}  // namespace

TEMPLATE_TEST_CASE("elementwise: where with three-way broadcasting and scalar branches", "[ops][elementwise][where]", tf::cpu, tf::reference) {
    using D = TestType;
    check_where<D, float, true>(111);
    check_where<D, double, false>(112);
    check_where<D, std::int32_t, true>(113);
    check_where<D, std::int64_t, false>(114);
}

TEMPLATE_TEST_CASE("elementwise: cast between dtypes", "[ops][elementwise][cast]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"f", float, tf::shape<12>, D> f;
    tf::placeholder<"i", std::int32_t, tf::shape<12>, D> i;
    tf::placeholder<"b", bool, tf::shape<12>, D> b;
    tf::placeholder<"d", double, tf::shape<12>, D> d;
    tf::tensor<float> tfv({12}, {0.f, -0.f, 0.5f, -0.5f, 1.f, -1.f, 2.75f, -2.75f, 99.9f, -99.9f, 1e-3f, 7.f});
    tf::tensor<std::int32_t> ti({12}, {0, 1, -1, 2, -2, 100, -100, 7, 0, 3, -3, 123456});
    tf::tensor<bool> tb({12}, {true, false, true, true, false, false, true, false, true, false, false, true});
    tf::tensor<double> td({12}, {0.1, -0.1, 1.5, -1.5, 2.5, 3.999, -3.999, 1e10, 0.0, 1.0, -1.0, 0.3});
    tf::session s;
    auto [f2i, f2l, f2d, f2b, i2f, i2d, i2b, b2f, b2i, d2f, d2i] =
        s.run(tf::fetch(tf::cast<std::int32_t>(f), tf::cast<std::int64_t>(f), tf::cast<double>(f), tf::cast<bool>(f),
                        tf::cast<float>(i), tf::cast<double>(i), tf::cast<bool>(i), tf::cast<float>(b),
                        tf::cast<std::int32_t>(b), tf::cast<float>(d), tf::cast<std::int64_t>(d)),
              tf::feed(f, tfv), tf::feed(i, ti), tf::feed(b, tb), tf::feed(d, td));
    STATIC_REQUIRE(std::is_same_v<decltype(f2i), tf::tensor<std::int32_t>>);
    STATIC_REQUIRE(std::is_same_v<decltype(f2b), tf::tensor<bool>>);
    STATIC_REQUIRE(std::is_same_v<decltype(d2f), tf::tensor<float>>);
    const tf::dims out{12};
    expect_values("float -> int32 (truncates)", f2i, out, {0, 0, 0, 0, 1, -1, 2, -2, 99, -99, 0, 7});
    expect_values("float -> int64 (truncates)", f2l, out, {0, 0, 0, 0, 1, -1, 2, -2, 99, -99, 0, 7});
    expect_values("float -> double", f2d, out, ref1(tfv, [](double x) { return x; }));
    expect_values("float -> bool", f2b, out, {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
    expect_values("int32 -> float", i2f, out, ref1(ti, [](std::int32_t x) { return static_cast<float>(x); }));
    expect_values("int32 -> double", i2d, out, ref1(ti, [](std::int32_t x) { return static_cast<double>(x); }));
    expect_values("int32 -> bool", i2b, out, ref1(ti, [](std::int32_t x) { return x != 0; }));
    expect_values("bool -> float", b2f, out, ref1(tb, [](bool x) { return x ? 1.0 : 0.0; }));
    expect_values("bool -> int32", b2i, out, ref1(tb, [](bool x) { return x ? 1 : 0; }));
    expect_values("double -> float", d2f, out, ref1(td, [](double x) { return static_cast<double>(static_cast<float>(x)); }));
    expect_values("double -> int64 (truncates)", d2i, out, {0, 0, 1, -1, 2, 3, -3, 1e10, 0, 1, -1, 0});
}

namespace {
// Chains of several element-wise ops (fused into one pass) against the naive
// reference, over several dyn bindings of one session.
template <class D, class T>
void check_fused_chains(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"x", T, tf::shape<tf::dyn, 4>, D> x;
    tf::placeholder<"z", T, tf::shape<tf::dyn, 1>, D> z;
    tf::placeholder<"b", T, tf::shape<>, D> b;
    tf::variable<"va", T, tf::shape<4>, D> va;
    const double av[4] = {0.5, -1.25, 2.0, 0.75};
    for (int k = 0; k < 4; ++k) va.value()[k] = static_cast<T>(av[k]);
    const T bv = static_cast<T>(-0.375);

    const auto c1 = tf::sigmoid(va * x + b) * z + x * x;
    const auto c2 = tf::tanh(x) * tf::exp(-tf::abs(z)) - tf::log(tf::square(x) + 1) / (tf::sqrt(tf::abs(x)) + 2);
    const auto t = x * va + b;  // read three times: materialised once, then fused into c3
    const auto c3 = t * t - tf::relu(t) + tf::maximum(t, z);
    const auto c4 = tf::where(x > z, tf::pow(tf::abs(x) + 1, va), tf::minimum(x, z) * 2);
    const auto c5 = (x > 0 && z < 0.5) || !(x > z);
    const auto c6 = tf::cast<T>(x > 0) * x - tf::rsqrt(z * z + 1);

    const double rt = std::is_same_v<T, float> ? 1e-5 : 1e-12;
    const double at_ = rt;  // the chains cancel a little: an absolute floor of the same size
    rng_t r(seed);
    tf::session s;
    const std::vector<std::pair<long long, long long>> rows = {{3, 3}, {1, 1}, {5, 1}, {0, 1}, {2, 2}, {4, 1}, {3, 3}};
    for (const auto& [rx, rz] : rows) {
        INFO("x rows " << rx << ", z rows " << rz);
        const auto tx = rand_tensor<T>(r, {rx, 4});
        const auto tz = rand_tensor<T>(r, {rz, 1});
        const tf::dims out{rx, 4};
        const long long n = rx * 4;
        std::vector<double> w1, w2, w3, w4, w5, w6;
        for (long long o = 0; o < n; ++o) {
            const double xv = at(tx, out, o), zv = at(tz, out, o), a = double(T(av[o % 4])), bb = double(bv);
            w1.push_back(1.0 / (1.0 + std::exp(-(a * xv + bb))) * zv + xv * xv);
            w2.push_back(std::tanh(xv) * std::exp(-std::abs(zv)) - std::log(xv * xv + 1) / (std::sqrt(std::abs(xv)) + 2));
            const double tv = xv * a + bb;
            w3.push_back(tv * tv - (tv > 0 ? tv : 0.0) + (tv < zv ? zv : tv));
            w4.push_back(xv > zv ? std::pow(std::abs(xv) + 1, a) : (xv < zv ? xv : zv) * 2);
            w5.push_back(((xv > 0 && zv < 0.5) || !(xv > zv)) ? 1.0 : 0.0);
            w6.push_back((xv > 0 ? xv : 0.0) - 1.0 / std::sqrt(zv * zv + 1));
        }
        auto [y1, y2, y3, y4, y5, y6] =
            s.run(tf::fetch(c1, c2, c3, c4, c5, c6), tf::feed(x, tx), tf::feed(z, tz), tf::feed(b, scalar_tensor(bv)));
        expect_values("sigmoid(va * x + b) * z + x * x", y1, out, w1, rt, at_);
        expect_values("tanh/exp/log/sqrt chain", y2, out, w2, rt, at_);
        expect_values("t * t - relu(t) + maximum(t, z)", y3, out, w3, rt, at_);
        expect_values("where(x > z, pow(|x| + 1, va), minimum(x, z) * 2)", y4, out, w4, rt, at_);
        expect_values("(x > 0 && z < 0.5) || !(x > z)", y5, out, w5);
        expect_values("cast(x > 0) * x - rsqrt(z * z + 1)", y6, out, w6, rt, at_);
        // the same chains fetched alone: nothing else is materialised
        expect_values("c1 alone", s.run(c1, tf::feed(x, tx), tf::feed(z, tz), tf::feed(b, scalar_tensor(bv))), out, w1,
                      rt, at_);
    }
}

template <class D, class T>
void check_int_chain(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"x", T, tf::shape<tf::dyn, 3>, D> x;
    tf::placeholder<"y", T, tf::shape<3>, D> y;
    const auto e1 = (x * 3 - y) / 2 + tf::maximum(x, y) * x - tf::abs(y);
    const auto e2 = tf::where(x >= y, x * x, -y) + tf::cast<T>(tf::equal(x, y)) - tf::relu(tf::minimum(x, 0) + 5);
    rng_t r(seed);
    tf::session s;
    for (long long rows : {4, 1, 6}) {
        const auto tx = rand_tensor<T>(r, {rows, 3}, dist::small_int);
        const auto ty = rand_tensor<T>(r, {3}, dist::small_int);
        const tf::dims out{rows, 3};
        auto [y1, y2] = s.run(tf::fetch(e1, e2), tf::feed(x, tx), tf::feed(y, ty));
        expect_values("(x * 3 - y) / 2 + maximum(x, y) * x - abs(y)", y1, out, ref2(tx, ty, out, [](T a, T b) {
                          return T((a * 3 - b) / 2 + (a < b ? b : a) * a - (b < 0 ? -b : b));
                      }));
        expect_values("where(x >= y, x * x, -y) + cast(x == y) - relu(minimum(x, 0) + 5)", y2, out,
                      ref2(tx, ty, out, [](T a, T b) {
                          const T m = (a < 0 ? a : T(0)) + 5;
                          return T((a >= b ? a * a : -b) + (a == b ? 1 : 0) - (m > 0 ? m : 0));
                      }));
    }
}
}  // namespace

TEMPLATE_TEST_CASE("elementwise: fused chains of float ops vs naive reference over dyn bindings", "[ops][elementwise][fused]", tf::cpu, tf::reference) {
    using D = TestType;
    check_fused_chains<D, float>(121);
    check_fused_chains<D, double>(122);
}

TEMPLATE_TEST_CASE("elementwise: fused chains of integer ops vs naive reference", "[ops][elementwise][fused]", tf::cpu, tf::reference) {
    using D = TestType;
    check_int_chain<D, std::int32_t>(131);
    check_int_chain<D, std::int64_t>(132);
}
