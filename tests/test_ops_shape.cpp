// Shape ops: transpose (2-D, 3-D, 4-D permutations), reshape (static, -1,
// dyn), expand_dims, squeeze, and chains of views feeding element-wise ops and
// matmul, against naive index math written here.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {


template <class T>
tf::tensor<T> rand_tensor(rng_t& r, const tf::dims& d) {
    return uniform_tensor<T>(r, d, -50, 50, -3, 3);
}

// A tensor whose element at flat index i is i (every element distinct: a
// wrong index shows).
template <class T>
tf::tensor<T> iota_tensor(const tf::dims& d) {
    tf::tensor<T> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) t[i] = static_cast<T>(i);
    return t;
}

template <class T>
std::vector<double> values_of(const tf::tensor<T>& t) {
    std::vector<double> v;
    for (tf::index_t i = 0; i < t.size(); ++i) v.push_back(static_cast<double>(t[i]));
    return v;
}

// Reference permutation: output axis i is input axis perm[i].
struct ref_t {
    std::vector<long long> dims;
    std::vector<double> values;
};
template <class T>
ref_t ref_transpose(const tf::tensor<T>& t, const std::vector<std::size_t>& perm) {
    const auto in = extents(t.dims());
    const std::size_t rank = in.size();
    ref_t r;
    for (std::size_t i = 0; i < rank; ++i) r.dims.push_back(in[perm[i]]);
    std::vector<long long> in_stride(rank, 1);
    for (std::size_t i = rank - 1; i-- > 0;) in_stride[i] = in_stride[i + 1] * in[i + 1];
    long long n = 1;
    for (long long e : r.dims) n *= e;
    std::vector<long long> j(rank, 0);
    for (long long o = 0; o < n; ++o) {
        long long rem = o;
        for (std::size_t i = rank; i-- > 0;) {
            j[i] = rem % r.dims[i];
            rem /= r.dims[i];
        }
        long long off = 0;
        for (std::size_t i = 0; i < rank; ++i) off += j[i] * in_stride[perm[i]];  // in[perm[i]] = j[i]
        r.values.push_back(static_cast<double>(t[off]));
    }
    return r;
}

// transpose<P...>(x) for every P in Perms, in one run.
template <std::size_t... P>
struct perm {};

template <class D, class T, class S, class... Ps>
void check_permutations(std::tuple<Ps...>, std::uint32_t seed) {
    tf::placeholder<"x", T, S, D> x;
    rng_t r(seed);
    const auto tx = rand_tensor<T>(r, S::value);
    tf::session s;
    const auto results = s.run(tf::fetch([&]<std::size_t... P>(perm<P...>) { return tf::transpose<P...>(x); }(Ps{})...),
                               tf::feed(x, tx));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (([&] {
             const auto p = []<std::size_t... P>(perm<P...>) { return std::vector<std::size_t>{P...}; }(
                 std::tuple_element_t<I, std::tuple<Ps...>>{});
             std::string name = "transpose<";
             for (std::size_t k = 0; k < p.size(); ++k) name += (k ? "," : "") + std::to_string(p[k]);
             name += "> of " + tf::to_string(S::value);
             const ref_t w = ref_transpose(tx, p);
             expect_values(name, std::get<I>(results), w.dims, w.values);
         }()),
         ...);
    }(std::index_sequence_for<Ps...>{});
}

}  // namespace

TEMPLATE_TEST_CASE("shape: 2-D transpose and transpose<1,0>", "[ops][shape][transpose]", tf::cpu, tf::reference) {
    using D = TestType;
    check_permutations<D, float, tf::shape<3, 5>>(std::tuple<perm<1, 0>>{}, 1);
    check_permutations<D, std::int32_t, tf::shape<1, 7>>(std::tuple<perm<1, 0>>{}, 2);
    tf::placeholder<"x", double, tf::shape<4, 6>, D> x;
    rng_t r(3);
    const auto tx = rand_tensor<double>(r, {4, 6});
    tf::session s;
    const auto y = s.run(tf::transpose(x), tf::feed(x, tx));
    const ref_t w = ref_transpose(tx, {1, 0});
    expect_values("transpose(x) of [4,6]", y, w.dims, w.values);
}

TEMPLATE_TEST_CASE("shape: 2-D identity permutation transpose<0,1> keeps the elements", "[ops][shape][transpose]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, tf::shape<2, 3>, D> x;
    const auto tx = iota_tensor<float>({2, 3});
    tf::session s;
    const auto y = s.run(tf::transpose<0, 1>(x), tf::feed(x, tx));
    expect_values("transpose<0,1> of [2,3]", y, {2, 3}, {0, 1, 2, 3, 4, 5});
}

TEMPLATE_TEST_CASE("shape: all six permutations of a 3-D tensor", "[ops][shape][transpose]", tf::cpu, tf::reference) {
    using D = TestType;
    using all3 = std::tuple<perm<0, 1, 2>, perm<0, 2, 1>, perm<1, 0, 2>, perm<1, 2, 0>, perm<2, 0, 1>, perm<2, 1, 0>>;
    check_permutations<D, double, tf::shape<2, 3, 4>>(all3{}, 11);
    check_permutations<D, std::int64_t, tf::shape<3, 1, 5>>(all3{}, 12);
}

TEMPLATE_TEST_CASE("shape: 4-D permutations and reversed axes", "[ops][shape][transpose]", tf::cpu, tf::reference) {
    using D = TestType;
    using some4 = std::tuple<perm<3, 2, 1, 0>, perm<2, 0, 3, 1>, perm<0, 1, 3, 2>, perm<1, 0, 2, 3>, perm<3, 0, 1, 2>>;
    check_permutations<D, float, tf::shape<2, 3, 4, 5>>(some4{}, 21);
    tf::placeholder<"x", float, tf::shape<2, 3, 4, 5>, D> x;
    rng_t r(22);
    const auto tx = rand_tensor<float>(r, {2, 3, 4, 5});
    tf::session s;
    const auto y = s.run(tf::transpose(x), tf::feed(x, tx));
    const ref_t w = ref_transpose(tx, {3, 2, 1, 0});
    expect_values("transpose(x) of [2,3,4,5]", y, w.dims, w.values);
}

TEMPLATE_TEST_CASE("shape: transpose of dyn placeholders across runs", "[ops][shape][transpose][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, tf::shape<tf::dyn, 3>, D> x;
    tf::placeholder<"z", double, tf::shape<2, tf::dyn, 4>, D> z;
    const auto e1 = tf::transpose(x);
    const auto e2 = tf::transpose<1, 2, 0>(z);
    rng_t r(31);
    tf::session s;
    for (long long n : {5, 1, 0, 3}) {
        INFO("n " << n);
        const auto tx = rand_tensor<double>(r, {n, 3}), tz = rand_tensor<double>(r, {2, n, 4});
        auto [y1, y2] = s.run(tf::fetch(e1, e2), tf::feed(x, tx), tf::feed(z, tz));
        ref_t w = ref_transpose(tx, {1, 0});
        expect_values("transpose(x [n,3])", y1, w.dims, w.values);
        w = ref_transpose(tz, {1, 2, 0});
        expect_values("transpose<1,2,0>(z [2,n,4])", y2, w.dims, w.values);
    }
}

TEMPLATE_TEST_CASE("shape: reshape static, with -1, and of a dyn placeholder", "[ops][shape][reshape]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, tf::shape<2, 3, 4>, D> x;
    const auto tx = iota_tensor<float>({2, 3, 4});
    const auto flat = values_of(tx);
    tf::session s;
    auto [r1, r2, r3, r4, r5, r6] =
        s.run(tf::fetch(tf::reshape<6, 4>(x), tf::reshape<-1>(x), tf::reshape<4, -1>(x), tf::reshape<2, -1, 3>(x),
                        tf::reshape<1, 24, 1>(x), tf::reshape<3, 2, 2, 2>(x)),
              tf::feed(x, tx));
    expect_values("reshape<6,4>", r1, {6, 4}, flat);
    expect_values("reshape<-1>", r2, {24}, flat);
    expect_values("reshape<4,-1>", r3, {4, 6}, flat);
    expect_values("reshape<2,-1,3>", r4, {2, 4, 3}, flat);
    expect_values("reshape<1,24,1>", r5, {1, 24, 1}, flat);
    expect_values("reshape<3,2,2,2>", r6, {3, 2, 2, 2}, flat);

    // a dyn placeholder: the -1 is inferred at run time
    tf::placeholder<"d", std::int32_t, tf::shape<tf::dyn, 4>, D> d;
    const auto e1 = tf::reshape<-1, 2>(d);
    const auto e2 = tf::reshape<2, -1>(d);
    const auto e3 = tf::reshape<-1>(d);
    for (long long rows : {3, 1, 0, 6}) {
        INFO("rows " << rows);
        const auto td = iota_tensor<std::int32_t>({rows, 4});
        auto [y1, y2, y3] = s.run(tf::fetch(e1, e2, e3), tf::feed(d, td));
        expect_values("reshape<-1,2>(d)", y1, {rows * 2, 2}, values_of(td));
        expect_values("reshape<2,-1>(d)", y2, {2, rows * 2}, values_of(td));
        expect_values("reshape<-1>(d)", y3, {rows * 4}, values_of(td));
    }
    // 5 rows: 20 elements cannot form [2, ?] with... they can; [3, ?] cannot
    const auto e4 = tf::reshape<3, -1>(d);
    const auto t5 = iota_tensor<std::int32_t>({5, 4});
    REQUIRE_THROWS_AS(s.run(e4, tf::feed(d, t5)), tf::error);
    const auto t3 = iota_tensor<std::int32_t>({3, 4});
    expect_values("reshape<3,-1>(d [3,4])", s.run(e4, tf::feed(d, t3)), {3, 4}, values_of(t3));
}

TEMPLATE_TEST_CASE("shape: expand_dims at each position and with negative axes", "[ops][shape][expand_dims]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, tf::shape<2, 3, 4>, D> x;
    rng_t r(41);
    const auto tx = rand_tensor<double>(r, {2, 3, 4});
    const auto v = values_of(tx);
    tf::session s;
    auto [e0, e1, e2, e3, em1, em4, em2] =
        s.run(tf::fetch(tf::expand_dims<0>(x), tf::expand_dims<1>(x), tf::expand_dims<2>(x), tf::expand_dims<3>(x),
                        tf::expand_dims<-1>(x), tf::expand_dims<-4>(x), tf::expand_dims<-2>(x)),
              tf::feed(x, tx));
    expect_values("expand_dims<0>", e0, {1, 2, 3, 4}, v);
    expect_values("expand_dims<1>", e1, {2, 1, 3, 4}, v);
    expect_values("expand_dims<2>", e2, {2, 3, 1, 4}, v);
    expect_values("expand_dims<3>", e3, {2, 3, 4, 1}, v);
    expect_values("expand_dims<-1>", em1, {2, 3, 4, 1}, v);
    expect_values("expand_dims<-4>", em4, {1, 2, 3, 4}, v);
    expect_values("expand_dims<-2>", em2, {2, 3, 1, 4}, v);

    // of a scalar and of a dyn placeholder
    tf::placeholder<"s", float, tf::shape<>, D> sc;
    tf::placeholder<"d", float, tf::shape<tf::dyn>, D> d;
    tf::tensor<float> ts{tf::dims{}};
    ts[0] = 2.5f;
    const auto td = iota_tensor<float>({5});
    auto [es, ed0, ed1] =
        s.run(tf::fetch(tf::expand_dims<0>(sc), tf::expand_dims<0>(d), tf::expand_dims<-1>(d)), tf::feed(sc, ts),
              tf::feed(d, td));
    expect_values("expand_dims<0>(scalar)", es, {1}, {2.5});
    expect_values("expand_dims<0>(d [5])", ed0, {1, 5}, values_of(td));
    expect_values("expand_dims<-1>(d [5])", ed1, {5, 1}, values_of(td));
}

TEMPLATE_TEST_CASE("shape: squeeze of given axes and of all extents of 1", "[ops][shape][squeeze]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", float, tf::shape<2, 1, 3>, D> a;
    tf::placeholder<"b", float, tf::shape<1, 3, 1>, D> b;
    tf::placeholder<"c", std::int64_t, tf::shape<1, 2, 1, 3, 1>, D> c;
    tf::placeholder<"o", float, tf::shape<1, 1>, D> o;
    const auto ta = iota_tensor<float>({2, 1, 3});
    const auto tb = iota_tensor<float>({1, 3, 1});
    const auto tc = iota_tensor<std::int64_t>({1, 2, 1, 3, 1});
    tf::tensor<float> to({1, 1}, {4.5f});
    tf::session s;
    auto [s1, sm2, s02, sb0, sb2, sall, sc0, sc24, so] =
        s.run(tf::fetch(tf::squeeze<1>(a), tf::squeeze<-2>(a), tf::squeeze<0, 2>(b), tf::squeeze<0>(b),
                        tf::squeeze<-1>(b), tf::squeeze(c), tf::squeeze<0>(c), tf::squeeze<2, 4>(c), tf::squeeze(o)),
              tf::feed(a, ta), tf::feed(b, tb), tf::feed(c, tc), tf::feed(o, to));
    expect_values("squeeze<1>(a)", s1, {2, 3}, values_of(ta));
    expect_values("squeeze<-2>(a)", sm2, {2, 3}, values_of(ta));
    expect_values("squeeze<0,2>(b)", s02, {3}, values_of(tb));
    expect_values("squeeze<0>(b)", sb0, {3, 1}, values_of(tb));
    expect_values("squeeze<-1>(b)", sb2, {1, 3}, values_of(tb));
    expect_values("squeeze(c)", sall, {2, 3}, values_of(tc));
    expect_values("squeeze<0>(c)", sc0, {2, 1, 3, 1}, values_of(tc));
    expect_values("squeeze<2,4>(c)", sc24, {1, 2, 3}, values_of(tc));
    expect_values("squeeze(o [1,1])", so, {}, {4.5});
}

TEMPLATE_TEST_CASE("shape: squeeze of a dyn extent checks it at run time", "[ops][shape][squeeze][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, tf::shape<tf::dyn, 3>, D> x;
    tf::placeholder<"y", double, tf::shape<2, tf::dyn>, D> y;
    const auto e = tf::squeeze<0>(x);
    const auto e2 = tf::squeeze<1>(y) * 2.0;
    const auto all = tf::squeeze(y);  // squeezes only static extents of 1: none here
    tf::session s;
    const auto t1 = iota_tensor<double>({1, 3});
    expect_values("squeeze<0>(x [1,3])", s.run(e, tf::feed(x, t1)), {3}, {0, 1, 2});
    const auto t3 = iota_tensor<double>({3, 3});
    REQUIRE_THROWS_AS(s.run(e, tf::feed(x, t3)), tf::error);
    const auto t0 = iota_tensor<double>({0, 3});
    REQUIRE_THROWS_AS(s.run(e, tf::feed(x, t0)), tf::error);
    // the session still works after the errors
    expect_values("squeeze<0>(x [1,3]) again", s.run(e, tf::feed(x, t1)), {3}, {0, 1, 2});

    const auto ty1 = iota_tensor<double>({2, 1});
    expect_values("squeeze<1>(y [2,1]) * 2", s.run(e2, tf::feed(y, ty1)), {2}, {0, 2});
    const auto ty2 = iota_tensor<double>({2, 2});
    REQUIRE_THROWS_AS(s.run(e2, tf::feed(y, ty2)), tf::error);
    expect_values("squeeze(y [2,2]) keeps the dyn axis", s.run(all, tf::feed(y, ty2)), {2, 2}, {0, 1, 2, 3});
}

namespace {
double dot_ref(const std::vector<double>& a, long long ra, long long ca, const std::vector<double>& b, long long cb,
               long long i, long long j) {
    double acc = 0;
    for (long long p = 0; p < ca; ++p) acc += a[static_cast<std::size_t>(i * ca + p)] * b[static_cast<std::size_t>(p * cb + j)];
    (void)ra;
    return acc;
}
}  // namespace

TEMPLATE_TEST_CASE("shape: chains of views feeding element-wise ops and matmul", "[ops][shape][fused]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, tf::shape<2, 2, 3>, D> x;
    tf::placeholder<"m", double, tf::shape<3, 5>, D> m;
    tf::placeholder<"v", double, tf::shape<5>, D> v;
    tf::variable<"W", double, tf::shape<3, 2>, D> W{tf::init::glorot_uniform{}};
    rng_t r(51);
    const auto tx = rand_tensor<double>(r, {2, 2, 3});
    const auto tm = rand_tensor<double>(r, {3, 5});
    const auto tv = rand_tensor<double>(r, {5});
    const auto xv = values_of(tx), mv = values_of(tm), wv = values_of(W.value());
    tf::session s;
    auto [c1, c2, c3, c4, c5, c6, c7, c8] = s.run(
        tf::fetch(tf::matmul(tf::reshape<4, -1>(x), W),                         // [4,3] x [3,2]
                  tf::transpose(m) + 1,                                          // [5,3]
                  tf::matmul(tf::transpose(m), tf::reshape<3, 4>(x)),            // [5,3] x [3,4]
                  tf::expand_dims<1>(v) * tf::expand_dims<0>(v),                 // outer product [5,5]
                  tf::squeeze<1>(tf::sum<1>(m, tf::keepdims)) * 2,               // [3]
                  tf::reshape<-1>(tf::transpose(m * 2)),                         // a view of a kernel of a fused node
                  tf::transpose<1, 0, 2>(tf::reshape<2, 2, 3>(tf::reshape<-1>(x) - 1)),  // views of views
                  // [4,3] x (a [5,3] transpose viewed as [3,5]) -> [4,5] -> [2,10]
                  tf::reshape<2, 10>(tf::matmul(tf::reshape<4, 3>(x), tf::reshape<3, 5>(tf::transpose(m))) * 0.5)),
        tf::feed(x, tx), tf::feed(m, tm), tf::feed(v, tv));
    // c1: matmul(reshape<4,-1>(x), W)
    std::vector<double> w1;
    for (long long i = 0; i < 4; ++i)
        for (long long j = 0; j < 2; ++j) w1.push_back(dot_ref(xv, 4, 3, wv, 2, i, j));
    expect_values("matmul(reshape<4,-1>(x), W)", c1, {4, 2}, w1, 1e-12, 1e-12);
    // c2: transpose(m) + 1
    std::vector<double> mt, w2;
    for (long long i = 0; i < 5; ++i)
        for (long long j = 0; j < 3; ++j) mt.push_back(mv[static_cast<std::size_t>(j * 5 + i)]);
    for (double e : mt) w2.push_back(e + 1);
    expect_values("transpose(m) + 1", c2, {5, 3}, w2);
    // c3: matmul(transpose(m), reshape<3,4>(x))
    std::vector<double> w3;
    for (long long i = 0; i < 5; ++i)
        for (long long j = 0; j < 4; ++j) w3.push_back(dot_ref(mt, 5, 3, xv, 4, i, j));
    expect_values("matmul(transpose(m), reshape<3,4>(x))", c3, {5, 4}, w3, 1e-12, 1e-12);
    // c4: outer product through expand_dims
    std::vector<double> w4;
    for (long long i = 0; i < 5; ++i)
        for (long long j = 0; j < 5; ++j) w4.push_back(tv[i] * tv[j]);
    expect_values("expand_dims<1>(v) * expand_dims<0>(v)", c4, {5, 5}, w4);
    // c5: squeeze<1>(sum<1>(m, keepdims)) * 2
    std::vector<double> w5;
    for (long long i = 0; i < 3; ++i) {
        double acc = 0;
        for (long long j = 0; j < 5; ++j) acc += tm(i, j);
        w5.push_back(acc * 2);
    }
    expect_values("squeeze<1>(sum<1>(m, keepdims)) * 2", c5, {3}, w5, 1e-12, 1e-12);
    // c6: reshape<-1>(transpose(m * 2))
    std::vector<double> w6;
    for (double e : mt) w6.push_back(e * 2);
    expect_values("reshape<-1>(transpose(m * 2))", c6, {15}, w6);
    // c7: transpose<1,0,2>(reshape<2,2,3>(reshape<-1>(x) - 1))
    std::vector<double> w7;
    for (long long i = 0; i < 2; ++i)
        for (long long j = 0; j < 2; ++j)
            for (long long k = 0; k < 3; ++k) w7.push_back(tx(j, i, k) - 1);
    expect_values("transpose<1,0,2>(reshape<2,2,3>(reshape<-1>(x) - 1))", c7, {2, 2, 3}, w7);
    // c8: the flat elements of transpose(m) read as a row-major [3,5] matrix
    std::vector<double> w8;
    for (long long i = 0; i < 4; ++i)
        for (long long j = 0; j < 5; ++j) w8.push_back(dot_ref(xv, 4, 3, mt, 5, i, j) * 0.5);
    expect_values("reshape<2,10>(matmul(reshape<4,3>(x), reshape<3,5>(transpose(m))) * 0.5)", c8, {2, 10}, w8, 1e-12,
                  1e-12);
}
