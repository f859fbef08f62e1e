// matmul: 2-D and batched, transpose flags, dyn extents, int32, fused inputs
// and consumers, against a naive triple loop in double written here.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {


template <class T>
tf::tensor<T> rand_tensor(rng_t& r, const tf::dims& d) {
    return uniform_tensor<T>(r, d, -9, 9, -2, 2);
}

std::vector<long long> extents(const tf::dims& d) { return std::vector<long long>(d.d.begin(), d.d.begin() + d.rank); }

// The reference product: values and, per element, sum |a_ik * b_kj| (the
// scale of the rounding error).
struct ref_mm {
    std::vector<long long> dims;
    std::vector<double> values, scale;
};

// Elements of a (and b) given as functions of the flat tensor: ga(batch, i, k).
// a: [..., ar, ac], b: [..., br, bc]; batch extents equal, or one operand 2-D.
template <class A, class B>
ref_mm naive_matmul(const tf::tensor<A>& a, const tf::tensor<B>& b, bool ta, bool tb) {
    const auto da = extents(a.dims()), db = extents(b.dims());
    REQUIRE(da.size() >= 2);
    REQUIRE(db.size() >= 2);
    const long long ar = da[da.size() - 2], ac = da[da.size() - 1];
    const long long br = db[db.size() - 2], bc = db[db.size() - 1];
    const long long m = ta ? ac : ar, k = ta ? ar : ac, kb = tb ? bc : br, n = tb ? br : bc;
    REQUIRE(k == kb);
    const auto& big = da.size() >= db.size() ? da : db;
    ref_mm r;
    long long batches = 1;
    for (std::size_t i = 0; i + 2 < big.size(); ++i) {
        r.dims.push_back(big[i]);
        batches *= big[i];
    }
    if (da.size() > 2 && db.size() > 2) REQUIRE(da.size() == db.size());
    r.dims.push_back(m);
    r.dims.push_back(n);
    const long long sa = da.size() > 2 ? ar * ac : 0, sb = db.size() > 2 ? br * bc : 0;
    for (long long bt = 0; bt < batches; ++bt)
        for (long long i = 0; i < m; ++i)
            for (long long j = 0; j < n; ++j) {
                double acc = 0, sc = 0;
                for (long long p = 0; p < k; ++p) {
                    const double x = static_cast<double>(a[bt * sa + (ta ? p * ac + i : i * ac + p)]);
                    const double y = static_cast<double>(b[bt * sb + (tb ? j * bc + p : p * bc + j)]);
                    acc += x * y;
                    sc += std::abs(x * y);
                }
                r.values.push_back(acc);
                r.scale.push_back(sc);
            }
    return r;
}

template <class T>
double mm_rtol() {
    return std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, double> ? 1e-12 : 0.0;
}

template <class T>
void expect_mm(const std::string& what, const tf::tensor<T>& got, const ref_mm& want) {
    INFO(what);
    REQUIRE(extents(got.dims()) == want.dims);
    REQUIRE(static_cast<std::size_t>(got.size()) == want.values.size());
    const double rt = mm_rtol<T>();
    long long bad = 0, first = -1;
    for (std::size_t i = 0; i < want.values.size(); ++i) {
        const double g = static_cast<double>(got[static_cast<tf::index_t>(i)]);
        if (!(std::abs(g - want.values[i]) <= rt * (want.scale[i] + 1e-30) ||
              (rt == 0 && g == want.values[i]))) {
            if (first < 0) first = static_cast<long long>(i);
            ++bad;
        }
    }
    if (bad) {
        std::ostringstream msg;
        msg.precision(17);
        msg << what << ": " << bad << " of " << want.values.size() << " elements differ; first at flat index "
            << first << ": got " << static_cast<double>(got[first]) << ", want "
            << want.values[static_cast<std::size_t>(first)];
        FAIL_CHECK(msg.str());
    } else {
        SUCCEED();
    }
}

template <class D, class T, class SA, class SB>
void check_2d(std::uint32_t seed) {
    tf::placeholder<"a", T, SA, D> a;
    tf::placeholder<"b", T, SB, D> b;
    rng_t r(seed);
    const auto ta = rand_tensor<T>(r, SA::value), tb = rand_tensor<T>(r, SB::value);
    tf::session s;
    const auto y = s.run(tf::matmul(a, b), tf::feed(a, ta), tf::feed(b, tb));
    expect_mm("matmul " + tf::to_string(SA::value) + " x " + tf::to_string(SB::value), y, naive_matmul(ta, tb, false, false));
}

// All four transpose-flag combinations: a is given as [m,k] or [k,m], b as [k,n] or [n,k].
template <class D, class T, tf::index_t M, tf::index_t K, tf::index_t N>
void check_transpose_flags(std::uint32_t seed) {
    tf::placeholder<"a", T, tf::shape<M, K>, D> a;
    tf::placeholder<"at", T, tf::shape<K, M>, D> at;
    tf::placeholder<"b", T, tf::shape<K, N>, D> b;
    tf::placeholder<"bt", T, tf::shape<N, K>, D> bt;
    rng_t r(seed);
    const auto ta = rand_tensor<T>(r, {M, K}), tat = rand_tensor<T>(r, {K, M});
    const auto tb = rand_tensor<T>(r, {K, N}), tbt = rand_tensor<T>(r, {N, K});
    tf::session s;
    auto [y0, ya, yb, yab] = s.run(tf::fetch(tf::matmul(a, b), tf::matmul(at, b, tf::transpose_a),
                                             tf::matmul(a, bt, tf::transpose_b), tf::matmul(at, bt, tf::transpose_ab)),
                                   tf::feed(a, ta), tf::feed(at, tat), tf::feed(b, tb), tf::feed(bt, tbt));
    expect_mm("a b", y0, naive_matmul(ta, tb, false, false));
    expect_mm("a^T b", ya, naive_matmul(tat, tb, true, false));
    expect_mm("a b^T", yb, naive_matmul(ta, tbt, false, true));
    expect_mm("a^T b^T", yab, naive_matmul(tat, tbt, true, true));
}

}  // namespace

TEMPLATE_TEST_CASE("matmul: 2-D products of several shapes in float", "[ops][matmul]", tf::cpu, tf::reference) {
    using D = TestType;
    check_2d<D, float, tf::shape<3, 4>, tf::shape<4, 5>>(1);
    check_2d<D, float, tf::shape<1, 7>, tf::shape<7, 3>>(2);   // 1 x K
    check_2d<D, float, tf::shape<5, 6>, tf::shape<6, 1>>(3);   // K x 1
    check_2d<D, float, tf::shape<1, 1>, tf::shape<1, 1>>(4);
    check_2d<D, float, tf::shape<1, 9>, tf::shape<9, 1>>(5);   // a dot product
    check_2d<D, float, tf::shape<6, 1>, tf::shape<1, 4>>(6);   // an outer product
    check_2d<D, float, tf::shape<17, 33>, tf::shape<33, 9>>(7);
}

TEMPLATE_TEST_CASE("matmul: 2-D products in double and int32", "[ops][matmul]", tf::cpu, tf::reference) {
    using D = TestType;
    check_2d<D, double, tf::shape<3, 4>, tf::shape<4, 5>>(11);
    check_2d<D, double, tf::shape<40, 70>, tf::shape<70, 30>>(12);
    check_2d<D, std::int32_t, tf::shape<3, 4>, tf::shape<4, 2>>(13);
    check_2d<D, std::int32_t, tf::shape<1, 8>, tf::shape<8, 6>>(14);
    check_2d<D, std::int64_t, tf::shape<5, 3>, tf::shape<3, 4>>(15);
}

TEMPLATE_TEST_CASE("matmul: all four transpose-flag combinations", "[ops][matmul][transpose]", tf::cpu, tf::reference) {
    using D = TestType;
    check_transpose_flags<D, double, 3, 4, 5>(21);
    check_transpose_flags<D, float, 2, 7, 3>(22);
    check_transpose_flags<D, double, 1, 6, 1>(23);
    check_transpose_flags<D, std::int32_t, 4, 3, 2>(24);
}

// The kernel takes one of four paths by size (backend/eigen/ops/matmul.hpp):
// a plain loop when m + n + k < 20, GEMV when n or m is 1, else GEMM.
TEMPLATE_TEST_CASE("matmul: each kernel path (small loop, GEMV on either side, GEMM) with each transpose pair",
          "[ops][matmul][transpose]", tf::cpu, tf::reference) {
    using D = TestType;
    check_transpose_flags<D, double, 9, 5, 5>(31);    // m + n + k = 19: the loop
    check_transpose_flags<D, double, 10, 5, 5>(32);   // 20: GEMM
    check_transpose_flags<D, double, 1, 40, 30>(33);  // m = 1: GEMV on op(B)^T
    check_transpose_flags<D, double, 30, 40, 1>(34);  // n = 1: GEMV on op(A)
    check_transpose_flags<D, double, 1, 40, 1>(35);   // a dot product through GEMV
    check_transpose_flags<D, double, 20, 30, 25>(36);
    check_transpose_flags<D, float, 64, 100, 48>(37);
    check_transpose_flags<D, float, 1, 33, 70>(38);
    check_transpose_flags<D, float, 70, 33, 1>(39);
    check_transpose_flags<D, std::int32_t, 1, 30, 20>(40);
    check_transpose_flags<D, std::int32_t, 20, 30, 1>(41);
    check_transpose_flags<D, std::int64_t, 24, 16, 20>(42);
}

TEMPLATE_TEST_CASE("matmul: dyn batch rows of a placeholder times a variable, across runs", "[ops][matmul][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>, D> x;
    tf::variable<"W", float, tf::shape<4, 3>, D> W{tf::init::glorot_uniform{}};
    const auto y = tf::matmul(x, W);
    const auto yt = tf::matmul(W, x, tf::transpose_ab);  // (x W)^T = W^T x^T: [3, rows]
    rng_t r(31);
    tf::session s;
    for (long long rows : {5, 1, 0, 8, 2}) {
        INFO("rows " << rows);
        const auto tx = rand_tensor<float>(r, {rows, 4});
        auto [v, vt] = s.run(tf::fetch(y, yt), tf::feed(x, tx));
        expect_mm("x W", v, naive_matmul(tx, W.value(), false, false));
        expect_mm("W^T x^T", vt, naive_matmul(W.value(), tx, true, true));
    }
}

TEMPLATE_TEST_CASE("matmul: dyn inner extent, including 0 (result is zeros) and a mismatch error", "[ops][matmul][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", double, tf::shape<2, tf::dyn>, D> a;
    tf::placeholder<"b", double, tf::shape<tf::dyn, 3>, D> b;
    const auto y = tf::matmul(a, b);
    rng_t r(41);
    tf::session s;
    for (long long k : {4, 0, 1, 6}) {
        INFO("k " << k);
        const auto ta = rand_tensor<double>(r, {2, k}), tb = rand_tensor<double>(r, {k, 3});
        const auto v = s.run(y, tf::feed(a, ta), tf::feed(b, tb));
        expect_mm("a b", v, naive_matmul(ta, tb, false, false));
        if (k == 0)
            for (tf::index_t i = 0; i < v.size(); ++i) CHECK(v[i] == 0.0);
    }
    const auto ta = rand_tensor<double>(r, {2, 4}), tb = rand_tensor<double>(r, {5, 3});
    REQUIRE_THROWS_AS(s.run(y, tf::feed(a, ta), tf::feed(b, tb)), tf::error);
}

TEMPLATE_TEST_CASE("matmul: batched 3-D and 4-D products", "[ops][matmul][batched]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", double, tf::shape<2, 3, 4>, D> a;
    tf::placeholder<"b", double, tf::shape<2, 4, 5>, D> b;
    tf::placeholder<"c", float, tf::shape<2, 3, 2, 4>, D> c;
    tf::placeholder<"d", float, tf::shape<2, 3, 4, 3>, D> d;
    tf::placeholder<"e", double, tf::shape<2, 3, 5>, D> e;  // times b transposed
    rng_t r(51);
    const auto ta = rand_tensor<double>(r, {2, 3, 4}), tb = rand_tensor<double>(r, {2, 4, 5});
    const auto tc = rand_tensor<float>(r, {2, 3, 2, 4}), td = rand_tensor<float>(r, {2, 3, 4, 3});
    const auto te = rand_tensor<double>(r, {2, 3, 5});
    tf::session s;
    auto [ab, cd, cdt, eb] =
        s.run(tf::fetch(tf::matmul(a, b), tf::matmul(c, d), tf::matmul(d, c, tf::transpose_ab),
                        tf::matmul(e, b, tf::transpose_b)),
              tf::feed(a, ta), tf::feed(b, tb), tf::feed(c, tc), tf::feed(d, td), tf::feed(e, te));
    expect_mm("[2,3,4] x [2,4,5]", ab, naive_matmul(ta, tb, false, false));
    expect_mm("[2,3,2,4] x [2,3,4,3]", cd, naive_matmul(tc, td, false, false));
    expect_mm("[2,3,4,3]^T x [2,3,2,4]^T", cdt, naive_matmul(td, tc, true, true));
    expect_mm("[2,3,5] x [2,4,5]^T", eb, naive_matmul(te, tb, false, true));
}

TEMPLATE_TEST_CASE("matmul: batched operand times a 2-D operand on either side", "[ops][matmul][batched]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", float, tf::shape<3, 2, 4>, D> a;
    tf::placeholder<"w", float, tf::shape<4, 5>, D> w;
    tf::placeholder<"v", float, tf::shape<6, 2>, D> v;
    tf::placeholder<"q", float, tf::shape<2, 2, 3, 4>, D> q;
    tf::placeholder<"wt", float, tf::shape<5, 4>, D> wt;
    rng_t r(61);
    const auto ta = rand_tensor<float>(r, {3, 2, 4}), tw = rand_tensor<float>(r, {4, 5});
    const auto tv = rand_tensor<float>(r, {6, 2}), tq = rand_tensor<float>(r, {2, 2, 3, 4});
    const auto twt = rand_tensor<float>(r, {5, 4});
    tf::session s;
    auto [aw, va, qw, awt] = s.run(
        tf::fetch(tf::matmul(a, w), tf::matmul(v, a), tf::matmul(q, w), tf::matmul(a, wt, tf::transpose_b)),
        tf::feed(a, ta), tf::feed(w, tw), tf::feed(v, tv), tf::feed(q, tq), tf::feed(wt, twt));
    expect_mm("[3,2,4] x [4,5]", aw, naive_matmul(ta, tw, false, false));
    expect_mm("[6,2] x [3,2,4]", va, naive_matmul(tv, ta, false, false));
    expect_mm("[2,2,3,4] x [4,5]", qw, naive_matmul(tq, tw, false, false));
    expect_mm("[3,2,4] x [5,4]^T", awt, naive_matmul(ta, twt, false, true));
}

TEMPLATE_TEST_CASE("matmul: dyn batch extent of a 3-D operand, across runs", "[ops][matmul][batched][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", double, tf::shape<tf::dyn, 3, 4>, D> a;
    tf::placeholder<"b", double, tf::shape<tf::dyn, 4, 2>, D> b;
    tf::placeholder<"w", double, tf::shape<4, 2>, D> w;
    const auto y = tf::matmul(a, b);
    const auto yw = tf::matmul(a, w);
    rng_t r(71);
    const auto tw = rand_tensor<double>(r, {4, 2});
    tf::session s;
    for (long long n : {3, 1, 0, 5}) {
        INFO("batch " << n);
        const auto ta = rand_tensor<double>(r, {n, 3, 4}), tb = rand_tensor<double>(r, {n, 4, 2});
        auto [v, vw] = s.run(tf::fetch(y, yw), tf::feed(a, ta), tf::feed(b, tb), tf::feed(w, tw));
        expect_mm("[n,3,4] x [n,4,2]", v, naive_matmul(ta, tb, false, false));
        expect_mm("[n,3,4] x [4,2]", vw, naive_matmul(ta, tw, false, false));
    }
    const auto ta = rand_tensor<double>(r, {3, 3, 4}), tb = rand_tensor<double>(r, {2, 4, 2});
    REQUIRE_THROWS_AS(s.run(tf::fetch(y, yw), tf::feed(a, ta), tf::feed(b, tb), tf::feed(w, tw)), tf::error);
}

TEMPLATE_TEST_CASE("matmul: fused element-wise inputs and consumers", "[ops][matmul][fused]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>, D> x;
    tf::variable<"W", float, tf::shape<4, 3>, D> W{tf::init::glorot_uniform{}};
    tf::variable<"bias", float, tf::shape<3>, D> bias;
    for (int j = 0; j < 3; ++j) bias.value()[j] = 0.25f * static_cast<float>(j) - 0.3f;
    const auto y1 = tf::matmul(x * 2, W + 1);
    const auto y2 = tf::relu(tf::matmul(x, W) + bias) * 2.0f;
    const auto y3 = tf::matmul(tf::sigmoid(x) - 0.5f, tf::matmul(x, W), tf::transpose_a);  // [4, 3]
    rng_t r(81);
    tf::session s;
    for (long long rows : {3, 1, 6}) {
        INFO("rows " << rows);
        const auto tx = rand_tensor<float>(r, {rows, 4});
        auto [v1, v2, v3] = s.run(tf::fetch(y1, y2, y3), tf::feed(x, tx));
        // reference inputs, computed by plain loops
        tf::tensor<double> x2({rows, 4}), sx({rows, 4}), w1({4, 3}), wd({4, 3}), xd({rows, 4});
        for (long long i = 0; i < rows * 4; ++i) {
            xd[i] = tx[i];
            x2[i] = 2.0 * tx[i];
            sx[i] = 1.0 / (1.0 + std::exp(-double(tx[i]))) - 0.5;
        }
        for (long long i = 0; i < 12; ++i) {
            wd[i] = W.value()[i];
            w1[i] = double(W.value()[i]) + 1.0;
        }
        expect_mm("matmul(x * 2, W + 1)", v1, naive_matmul(x2, w1, false, false));
        ref_mm xw = naive_matmul(xd, wd, false, false);
        ref_mm w2 = xw;
        for (std::size_t i = 0; i < w2.values.size(); ++i) {
            const double t = xw.values[i] + bias.value()[static_cast<tf::index_t>(i % 3)];
            w2.values[i] = (t > 0 ? t : 0.0) * 2;
            w2.scale[i] = 2 * (xw.scale[i] + 1.0);
        }
        expect_mm("relu(matmul(x, W) + bias) * 2", v2, w2);
        tf::tensor<double> xwt({rows, 3});
        for (long long i = 0; i < rows * 3; ++i) xwt[i] = xw.values[static_cast<std::size_t>(i)];
        ref_mm w3 = naive_matmul(sx, xwt, true, false);
        for (auto& sc : w3.scale) sc = sc * 2 + 1e-6;  // xw itself carries rounding from float
        expect_mm("matmul(sigmoid(x) - 0.5, matmul(x, W), transpose_a)", v3, w3);
    }
}
