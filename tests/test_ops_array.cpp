// The array ops: concat, slice, split, stack, unstack, pad (CONSTANT, REFLECT,
// SYMMETRIC), tile and flatten, against naive index loops written here, on
// every device; their static shapes, run-time errors, gradients (against
// central finite differences in double, first and second order), dyn
// extents (a batch of 0 included) and results across thread counts.
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {

using tf::dyn;
using tf::shape;
using ll = long long;
using ext_t = std::vector<ll>;

template <class E>
tf::dims sdims(const E&) {
    return tf::shape_t<E>::value;
}

// ---- a naive n-d array and the ops on it, with index arithmetic of its own ----
struct nd {
    ext_t ext;
    std::vector<double> v;
};
ll count_of(const ext_t& e) {
    ll n = 1;
    for (ll x : e) n *= x;
    return n;
}
ext_t unflat(const ext_t& e, ll f) {
    ext_t i(e.size());
    for (std::size_t a = e.size(); a-- > 0;) {
        i[a] = f % e[a];
        f /= e[a];
    }
    return i;
}
ll flat(const ext_t& e, const ext_t& i) {
    ll f = 0;
    for (std::size_t a = 0; a < e.size(); ++a) f = f * e[a] + i[a];
    return f;
}
template <class T>
nd nd_of(const tf::tensor<T>& t) {
    nd r{extents(t.dims()), {}};
    for (tf::index_t i = 0; i < t.size(); ++i) r.v.push_back(static_cast<double>(t[i]));
    return r;
}
// out[i] = x[src(i)] over every index i of the extents e
template <class F>
nd gather(const nd& x, const ext_t& e, F&& src) {
    nd r{e, {}};
    for (ll f = 0; f < count_of(e); ++f) r.v.push_back(x.v[static_cast<std::size_t>(flat(x.ext, src(unflat(e, f))))]);
    return r;
}
std::size_t norm_axis(int axis, std::size_t rank) { return static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(rank) : axis); }

nd ref_concat(const std::vector<nd>& in, int axis) {
    const std::size_t ax = norm_axis(axis, in[0].ext.size());
    nd r{in[0].ext, {}};
    r.ext[ax] = 0;
    for (const nd& x : in) r.ext[ax] += x.ext[ax];
    for (ll f = 0; f < count_of(r.ext); ++f) {
        ext_t i = unflat(r.ext, f);
        std::size_t k = 0;
        while (i[ax] >= in[k].ext[ax]) i[ax] -= in[k++].ext[ax];
        r.v.push_back(in[k].v[static_cast<std::size_t>(flat(in[k].ext, i))]);
    }
    return r;
}
nd ref_slice(const nd& x, const ext_t& begin, ext_t size) {
    for (std::size_t a = 0; a < size.size(); ++a)
        if (size[a] == -1) size[a] = x.ext[a] - begin[a];
    return gather(x, size, [&](ext_t i) {
        for (std::size_t a = 0; a < i.size(); ++a) i[a] += begin[a];
        return i;
    });
}
nd ref_expand(nd x, int axis) {
    x.ext.insert(x.ext.begin() + static_cast<std::ptrdiff_t>(norm_axis(axis, x.ext.size() + 1)), 1);
    return x;
}
enum class mode { constant, reflect, symmetric };
// the input index each output index of one axis reads (-1: the constant)
std::vector<ll> pad_map(ll e, ll before, ll after, mode m) {
    std::vector<ll> map;
    for (ll k = before; k >= 1; --k) map.push_back(m == mode::constant ? -1 : m == mode::reflect ? k : k - 1);
    for (ll j = 0; j < e; ++j) map.push_back(j);
    for (ll k = 1; k <= after; ++k) map.push_back(m == mode::constant ? -1 : m == mode::reflect ? e - 1 - k : e - k);
    return map;
}
nd ref_pad(const nd& x, const std::vector<std::pair<ll, ll>>& p, mode m, double value = 0) {
    std::vector<std::vector<ll>> maps;
    ext_t e;
    for (std::size_t a = 0; a < x.ext.size(); ++a) {
        maps.push_back(pad_map(x.ext[a], p[a].first, p[a].second, m));
        e.push_back(static_cast<ll>(maps.back().size()));
    }
    nd r{e, {}};
    for (ll f = 0; f < count_of(e); ++f) {
        ext_t i = unflat(e, f);
        bool inside = true;
        for (std::size_t a = 0; a < i.size(); ++a) {
            i[a] = maps[a][static_cast<std::size_t>(i[a])];
            inside = inside && i[a] >= 0;
        }
        r.v.push_back(inside ? x.v[static_cast<std::size_t>(flat(x.ext, i))] : value);
    }
    return r;
}
nd ref_tile(const nd& x, const ext_t& m) {
    ext_t e = x.ext;
    for (std::size_t a = 0; a < e.size(); ++a) e[a] *= m[a];
    return gather(x, e, [&](ext_t i) {
        for (std::size_t a = 0; a < i.size(); ++a) i[a] %= x.ext[a];
        return i;
    });
}

template <class T>
void expect_nd(const std::string& what, const tf::tensor<T>& got, const nd& want) {
    expect_values(what, got, want.ext, want.v);
}

// distinct values (a wrong index shows); integers for integer T
template <class T>
tf::tensor<T> rand_tensor(rng_t& r, const tf::dims& d) {
    return uniform_tensor<T>(r, d, -1000, 1000, -3, 3);
}

template <class T>
bool same_bits(const tf::tensor<T>& a, const tf::tensor<T>& b) {
    return a.dims() == b.dims() && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0;
}

using P11_22 = tf::paddings<tf::pad_width{1, 1}, tf::pad_width{2, 2}>;  // the spelling without braced template arguments

}  // namespace

// ---------------------------------------------------------------- static shapes

TEST_CASE("array ops: static shapes follow TensorFlow's rules, dyn where an operand's is", "[ops][array]") {
    tf::placeholder<"x", float, shape<dyn, 3, 4>> x;
    tf::placeholder<"y", float, shape<2, dyn, 4>> y;
    tf::placeholder<"z", float, shape<2, 5, 4>> z;
    tf::placeholder<"w", float, shape<2, 3, 4>> w;
    // concat: the axis adds up (dyn if one is dyn); other axes take the known extent
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::concat<0>(x, w))>, shape<dyn, 3, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::concat<1>(y, z))>, shape<2, dyn, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::concat<-2>(z, z, z))>, shape<2, 15, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::concat<-1>(x, y))>, shape<2, 3, 8>>);
    // slice: -1 runs to the end (dyn on a dyn axis)
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::slice<0, 1, 2>(x, tf::sizes<-1, 2, 1>))>, shape<dyn, 2, 1>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::slice<1, 0, 0>(z))>, shape<1, 5, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::slice<0, 0, 0>(z, tf::sizes<2, 0, 4>))>, shape<2, 0, 4>>);
    // split
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<std::tuple_element_t<1, decltype(tf::split<2, 2>(x))>>, shape<dyn, 3, 2>>);
    STATIC_REQUIRE(std::tuple_size_v<decltype(tf::split<0, 4>(x))> == 4);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<std::tuple_element_t<0, decltype(tf::split<0, 2>(x))>>, shape<dyn, 3, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<std::tuple_element_t<1, decltype(tf::split<1>(z, tf::sizes<1, -1, 0>))>>,
                                  shape<2, 4, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<std::tuple_element_t<0, decltype(tf::split<1>(y, tf::sizes<1, -1>))>>,
                                  shape<2, 1, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<std::tuple_element_t<1, decltype(tf::split<1>(y, tf::sizes<1, -1>))>>,
                                  shape<2, dyn, 4>>);
    // stack and unstack
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::stack<0>(x, x))>, shape<2, dyn, 3, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::stack<-1>(z, z, z))>, shape<2, 5, 4, 3>>);
    STATIC_REQUIRE(std::tuple_size_v<decltype(tf::unstack<1>(x))> == 3);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<std::tuple_element_t<2, decltype(tf::unstack<-2>(x))>>, shape<dyn, 4>>);
    // pad, tile, flatten
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::pad<tf::paddings<{1, 2}, {0, 0}, {3, 0}>>(x))>, shape<dyn, 3, 7>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::tile<2, 1, 3>(y))>, shape<4, dyn, 12>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::tile<0, 0, 1>(y))>, shape<0, 0, 4>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::flatten(x))>, shape<dyn, 12>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::flatten(y))>, shape<2, dyn>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::flatten(tf::slice<0, 0, 0>(z, tf::sizes<2, 0, 4>)))>, shape<2, 0>>);
    tf::placeholder<"v", int, shape<7>> v;
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::flatten(v))>, shape<7, 1>>);
    STATIC_REQUIRE(std::is_same_v<tf::value_type_t<decltype(tf::concat<0>(v, v))>, int>);
}

// ---------------------------------------------------------------- concat

TEMPLATE_TEST_CASE("concat: every axis, negative axes, three operands, zero-size operands", "[ops][array][concat]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    rng_t r(1);
    tf::placeholder<"a", float, shape<2, 3, 4>, D> a;
    tf::placeholder<"b", float, shape<2, 3, 5>, D> b;
    tf::placeholder<"c", float, shape<2, 1, 4>, D> c;
    tf::placeholder<"d", float, shape<3, 3, 4>, D> d;
    tf::placeholder<"e", float, shape<2, 3, 0>, D> e;
    tf::placeholder<"f", float, shape<0, 3, 4>, D> f;
    const auto ta = rand_tensor<float>(r, sdims(a)), tb = rand_tensor<float>(r, sdims(b)), tc = rand_tensor<float>(r, sdims(c)),
               td = rand_tensor<float>(r, sdims(d)), te = rand_tensor<float>(r, sdims(e)), tf_ = rand_tensor<float>(r, sdims(f));
    const nd A = nd_of(ta), B = nd_of(tb), C = nd_of(tc), Dn = nd_of(td), E = nd_of(te), F = nd_of(tf_);
    tf::session s;
    auto [v0, v1, v2, v3, v4, v5, v6, v7] =
        s.run(tf::fetch(tf::concat<0>(a, d), tf::concat<1>(a, c, a), tf::concat<2>(a, b), tf::concat<-1>(b, a, e),
                        tf::concat<-3>(f, a, f), tf::concat<-2>(c, a), tf::concat<0>(a, a, d, a), tf::concat<2>(e, e)),
              tf::feed(a, ta), tf::feed(b, tb), tf::feed(c, tc), tf::feed(d, td), tf::feed(e, te), tf::feed(f, tf_));
    expect_nd("concat<0>(a, d)", v0, ref_concat({A, Dn}, 0));
    expect_nd("concat<1>(a, c, a)", v1, ref_concat({A, C, A}, 1));
    expect_nd("concat<2>(a, b)", v2, ref_concat({A, B}, 2));
    expect_nd("concat<-1>(b, a, e)", v3, ref_concat({B, A, E}, -1));
    expect_nd("concat<-3>(f, a, f)", v4, ref_concat({F, A, F}, -3));
    expect_nd("concat<-2>(c, a)", v5, ref_concat({C, A}, -2));
    expect_nd("concat<0>(a, a, d, a)", v6, ref_concat({A, A, Dn, A}, 0));
    expect_nd("concat<2>(e, e): empty", v7, ref_concat({E, E}, 2));
}

TEMPLATE_TEST_CASE("concat: int and double, rank 1, odd sizes", "[ops][array][concat]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(2);
    tf::placeholder<"i", std::int32_t, shape<7>, D> i;
    tf::placeholder<"j", std::int32_t, shape<1>, D> j;
    tf::placeholder<"m", double, shape<5, 3>, D> m;
    tf::placeholder<"n", double, shape<5, 11>, D> n;
    const auto ti = rand_tensor<std::int32_t>(r, sdims(i)), tj = rand_tensor<std::int32_t>(r, sdims(j));
    const auto tm = rand_tensor<double>(r, sdims(m)), tn = rand_tensor<double>(r, sdims(n));
    tf::session s;
    auto [v0, v1, v2] = s.run(tf::fetch(tf::concat<0>(i, j, i), tf::concat<-1>(j, i), tf::concat<1>(n, m, n)), tf::feed(i, ti),
                              tf::feed(j, tj), tf::feed(m, tm), tf::feed(n, tn));
    expect_nd("int concat<0>(i, j, i)", v0, ref_concat({nd_of(ti), nd_of(tj), nd_of(ti)}, 0));
    expect_nd("int concat<-1>(j, i)", v1, ref_concat({nd_of(tj), nd_of(ti)}, -1));
    expect_nd("double concat<1>(n, m, n)", v2, ref_concat({nd_of(tn), nd_of(tm), nd_of(tn)}, 1));
}

TEMPLATE_TEST_CASE("concat: a dyn batch across runs (including 0), on and off the axis", "[ops][array][concat][dyn]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, shape<dyn, 3>, D> x;
    tf::placeholder<"y", float, shape<dyn, 2>, D> y;
    tf::placeholder<"z", float, shape<4, 3>, D> z;
    tf::session s;
    for (ll batch : {3, 1, 0, 5}) {
        INFO("batch " << batch);
        rng_t r(10 + std::uint32_t(batch));
        const auto tx = rand_tensor<float>(r, {batch, 3}), ty = rand_tensor<float>(r, {batch, 2}), tz = rand_tensor<float>(r, {4, 3});
        auto [v0, v1, v2] = s.run(tf::fetch(tf::concat<0>(x, z, x), tf::concat<1>(x, y), tf::concat<-1>(y, x, y)), tf::feed(x, tx),
                                  tf::feed(y, ty), tf::feed(z, tz));
        expect_nd("concat<0>(x, z, x)", v0, ref_concat({nd_of(tx), nd_of(tz), nd_of(tx)}, 0));
        expect_nd("concat<1>(x, y)", v1, ref_concat({nd_of(tx), nd_of(ty)}, 1));
        expect_nd("concat<-1>(y, x, y)", v2, ref_concat({nd_of(ty), nd_of(tx), nd_of(ty)}, -1));
    }
}

TEMPLATE_TEST_CASE("concat: dyn extents that differ off the axis are a run-time error naming the op and the shapes",
                   "[ops][array][concat][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, shape<dyn, 3>, D> x;
    tf::placeholder<"y", float, shape<dyn, 2>, D> y;
    tf::session s;
    REQUIRE_THROWS_WITH(s.run(tf::concat<1>(x, y), tf::feed(x, tf::tensor<float>({2, 3})), tf::feed(y, tf::tensor<float>({3, 2}))),
                        Catch::Contains("concat") && Catch::Contains("[2,3]") && Catch::Contains("[3,2]"));
    REQUIRE_NOTHROW(s.run(tf::concat<1>(x, y), tf::feed(x, tf::tensor<float>({3, 3})), tf::feed(y, tf::tensor<float>({3, 2}))));
}

// ---------------------------------------------------------------- slice

TEMPLATE_TEST_CASE("slice: begin and size per axis, -1 to the end, empty boxes, rank 1 to 4", "[ops][array][slice]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    rng_t r(3);
    tf::placeholder<"v", float, shape<9>, D> v;
    tf::placeholder<"m", float, shape<5, 7>, D> m;
    tf::placeholder<"t", float, shape<4, 5, 6>, D> t;
    tf::placeholder<"q", float, shape<2, 3, 4, 5>, D> q;
    const auto tv = rand_tensor<float>(r, sdims(v)), tm = rand_tensor<float>(r, sdims(m)), tt = rand_tensor<float>(r, sdims(t)),
               tq = rand_tensor<float>(r, sdims(q));
    const nd V = nd_of(tv), M = nd_of(tm), T = nd_of(tt), Q = nd_of(tq);
    tf::session s;
    auto [v0, v1, v2, v3, v4, v5, v6, v7, v8, v9] =
        s.run(tf::fetch(tf::slice<2>(v, tf::sizes<5>), tf::slice<8>(v), tf::slice<1, 2>(m, tf::sizes<3, -1>),
                        tf::slice<0, 0>(m, tf::sizes<5, 7>), tf::slice<4, 6>(m, tf::sizes<1, 1>),
                        tf::slice<1, 0, 3>(t, tf::sizes<2, -1, 2>), tf::slice<0, 2, 0>(t, tf::sizes<4, 2, 6>),
                        tf::slice<1, 1, 1, 1>(q, tf::sizes<1, 2, 2, 3>), tf::slice<2, 0>(m, tf::sizes<0, 7>),
                        tf::slice<9>(v)),
              tf::feed(v, tv), tf::feed(m, tm), tf::feed(t, tt), tf::feed(q, tq));
    expect_nd("slice<2>(v, 5)", v0, ref_slice(V, {2}, {5}));
    expect_nd("slice<8>(v)", v1, ref_slice(V, {8}, {-1}));
    expect_nd("slice<1, 2>(m, 3, -1)", v2, ref_slice(M, {1, 2}, {3, -1}));
    expect_nd("slice<0, 0>(m, whole)", v3, ref_slice(M, {0, 0}, {5, 7}));
    expect_nd("slice<4, 6>(m, 1, 1): the last element", v4, ref_slice(M, {4, 6}, {1, 1}));
    expect_nd("slice<1, 0, 3>(t, 2, -1, 2)", v5, ref_slice(T, {1, 0, 3}, {2, -1, 2}));
    expect_nd("slice<0, 2, 0>(t, 4, 2, 6): middle axis", v6, ref_slice(T, {0, 2, 0}, {4, 2, 6}));
    expect_nd("slice<1, 1, 1, 1>(q)", v7, ref_slice(Q, {1, 1, 1, 1}, {1, 2, 2, 3}));
    expect_nd("slice<2, 0>(m, 0, 7): empty", v8, ref_slice(M, {2, 0}, {0, 7}));
    expect_nd("slice<9>(v): empty at the end", v9, ref_slice(V, {9}, {-1}));
}

TEMPLATE_TEST_CASE("slice: int dtype, a dyn batch across runs (including 0), a box outside a dyn extent is a run-time error",
                   "[ops][array][slice][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", std::int64_t, shape<dyn, 6>, D> x;
    tf::session s;
    for (ll batch : {4, 1, 0, 7}) {
        INFO("batch " << batch);
        rng_t r(20 + std::uint32_t(batch));
        const auto tx = rand_tensor<std::int64_t>(r, {batch, 6});
        auto [v0, v1] = s.run(tf::fetch(tf::slice<0, 1>(x, tf::sizes<-1, 4>), tf::slice<0, 5>(x)), tf::feed(x, tx));
        expect_nd("slice<0, 1>(x, -1, 4)", v0, ref_slice(nd_of(tx), {0, 1}, {-1, 4}));
        expect_nd("slice<0, 5>(x)", v1, ref_slice(nd_of(tx), {0, 5}, {-1, -1}));
        if (batch >= 2) {
            const auto v2 = s.run(tf::slice<1, 0>(x, tf::sizes<1, 6>), tf::feed(x, tx));
            expect_nd("slice<1, 0>(x, 1, 6)", v2, ref_slice(nd_of(tx), {1, 0}, {1, 6}));
        }
    }
    REQUIRE_THROWS_WITH(s.run(tf::slice<1, 0>(x, tf::sizes<2, 6>), tf::feed(x, tf::tensor<std::int64_t>({2, 6}))),
                        Catch::Contains("slice") && Catch::Contains("[1,0]") && Catch::Contains("[2,6]"));
    REQUIRE_THROWS_WITH(s.run(tf::slice<3, 0>(x), tf::feed(x, tf::tensor<std::int64_t>({2, 6}))),
                        Catch::Contains("slice") && Catch::Contains("[3,0]"));
}

// ---------------------------------------------------------------- split

TEMPLATE_TEST_CASE("split: equal parts and sizes, negative axes, zero-size parts", "[ops][array][split]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(4);
    tf::placeholder<"x", double, shape<4, 6, 3>, D> x;
    const auto tx = rand_tensor<double>(r, sdims(x));
    const nd X = nd_of(tx);
    tf::session s;
    {
        auto [a, b, c] = tf::split<1, 3>(x);
        auto [p, q] = tf::split<-3, 2>(x);
        auto [only] = tf::split<2, 1>(x);
        auto [v0, v1, v2, v3, v4, v5] = s.run(tf::fetch(a, b, c, p, q, only), tf::feed(x, tx));
        expect_nd("split<1, 3> part 0", v0, ref_slice(X, {0, 0, 0}, {4, 2, 3}));
        expect_nd("split<1, 3> part 1", v1, ref_slice(X, {0, 2, 0}, {4, 2, 3}));
        expect_nd("split<1, 3> part 2", v2, ref_slice(X, {0, 4, 0}, {4, 2, 3}));
        expect_nd("split<-3, 2> part 0", v3, ref_slice(X, {0, 0, 0}, {2, 6, 3}));
        expect_nd("split<-3, 2> part 1", v4, ref_slice(X, {2, 0, 0}, {2, 6, 3}));
        expect_nd("split<2, 1>", v5, X);
    }
    {
        auto [a, b, c, d] = tf::split<-1>(x, tf::sizes<1, 0, -1, 1>);
        auto [p, q] = tf::split<1>(x, tf::sizes<5, 1>);
        auto [v0, v1, v2, v3, v4, v5] = s.run(tf::fetch(a, b, c, d, p, q), tf::feed(x, tx));
        expect_nd("sizes 1,0,-1,1 part 0", v0, ref_slice(X, {0, 0, 0}, {4, 6, 1}));
        expect_nd("sizes 1,0,-1,1 part 1 (empty)", v1, ref_slice(X, {0, 0, 1}, {4, 6, 0}));
        expect_nd("sizes 1,0,-1,1 part 2 (the rest)", v2, ref_slice(X, {0, 0, 1}, {4, 6, 1}));
        expect_nd("sizes 1,0,-1,1 part 3", v3, ref_slice(X, {0, 0, 2}, {4, 6, 1}));
        expect_nd("sizes 5,1 part 0", v4, ref_slice(X, {0, 0, 0}, {4, 5, 3}));
        expect_nd("sizes 5,1 part 1", v5, ref_slice(X, {0, 5, 0}, {4, 1, 3}));
    }
}

TEMPLATE_TEST_CASE("split: int dtype on a dyn axis across runs (including 0), parts that do not fit are run-time errors",
                   "[ops][array][split][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", std::int32_t, shape<dyn, 2>, D> x;
    auto [a, b] = tf::split<0, 2>(x);
    auto [p, q] = tf::split<0>(x, tf::sizes<1, -1>);
    tf::session s;
    for (ll batch : {6, 2, 0, 4}) {
        INFO("batch " << batch);
        rng_t r(30 + std::uint32_t(batch));
        const auto tx = rand_tensor<std::int32_t>(r, {batch, 2});
        const nd X = nd_of(tx);
        auto [v0, v1] = s.run(tf::fetch(a, b), tf::feed(x, tx));
        expect_nd("split<0, 2> part 0", v0, ref_slice(X, {0, 0}, {batch / 2, 2}));
        expect_nd("split<0, 2> part 1", v1, ref_slice(X, {batch / 2, 0}, {batch / 2, 2}));
        if (batch >= 1) {
            auto [v2, v3] = s.run(tf::fetch(p, q), tf::feed(x, tx));
            expect_nd("sizes 1,-1 part 0", v2, ref_slice(X, {0, 0}, {1, 2}));
            expect_nd("sizes 1,-1 part 1", v3, ref_slice(X, {1, 0}, {-1, 2}));
        }
    }
    REQUIRE_THROWS_WITH(s.run(a, tf::feed(x, tf::tensor<std::int32_t>({3, 2}))),
                        Catch::Contains("split") && Catch::Contains("[3,2]") && Catch::Contains("2 equal parts"));
    REQUIRE_THROWS_WITH(s.run(q, tf::feed(x, tf::tensor<std::int32_t>({0, 2}))), Catch::Contains("split") && Catch::Contains("[0,2]"));
    tf::placeholder<"y", float, shape<3, dyn>, D> y;
    auto [u, w] = tf::split<1>(y, tf::sizes<2, 3>);
    REQUIRE_THROWS_WITH(s.run(w, tf::feed(y, tf::tensor<float>({3, 4}))), Catch::Contains("split") && Catch::Contains("[2,3]"));
    const auto vu = s.run(u, tf::feed(y, tf::tensor<float>({3, 5})));
    REQUIRE(vu.dims() == tf::dims{3, 2});
}

// ---------------------------------------------------------------- stack / unstack

TEMPLATE_TEST_CASE("stack and unstack: first, middle and last axes, negative axes, int dtype", "[ops][array][stack]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    rng_t r(5);
    tf::placeholder<"a", std::int32_t, shape<2, 3>, D> a;
    tf::placeholder<"b", std::int32_t, shape<2, 3>, D> b;
    tf::placeholder<"c", std::int32_t, shape<2, 3>, D> c;
    const auto ta = rand_tensor<std::int32_t>(r, sdims(a)), tb = rand_tensor<std::int32_t>(r, sdims(b)),
               tc = rand_tensor<std::int32_t>(r, sdims(c));
    const nd A = nd_of(ta), B = nd_of(tb), C = nd_of(tc);
    tf::session s;
    auto [v0, v1, v2, v3, v4] = s.run(tf::fetch(tf::stack<0>(a, b, c), tf::stack<1>(a, b), tf::stack<2>(a, b, c), tf::stack<-1>(c, a),
                                                tf::stack<-3>(b, a)),
                                      tf::feed(a, ta), tf::feed(b, tb), tf::feed(c, tc));
    expect_nd("stack<0>(a, b, c)", v0, ref_concat({ref_expand(A, 0), ref_expand(B, 0), ref_expand(C, 0)}, 0));
    expect_nd("stack<1>(a, b)", v1, ref_concat({ref_expand(A, 1), ref_expand(B, 1)}, 1));
    expect_nd("stack<2>(a, b, c)", v2, ref_concat({ref_expand(A, 2), ref_expand(B, 2), ref_expand(C, 2)}, 2));
    expect_nd("stack<-1>(c, a)", v3, ref_concat({ref_expand(C, 2), ref_expand(A, 2)}, 2));
    expect_nd("stack<-3>(b, a)", v4, ref_concat({ref_expand(B, 0), ref_expand(A, 0)}, 0));
    // unstack undoes stack
    const auto st = tf::stack<1>(a, b, c);
    auto [u0, u1, u2] = tf::unstack<1>(st);
    auto [w0, w1, w2] = tf::unstack<-1>(a);
    auto [x0, x1, x2, y0, y1, y2] = s.run(tf::fetch(u0, u1, u2, w0, w1, w2), tf::feed(a, ta), tf::feed(b, tb), tf::feed(c, tc));
    expect_nd("unstack<1>(stack<1>(a, b, c)) 0", x0, A);
    expect_nd("unstack<1>(stack<1>(a, b, c)) 1", x1, B);
    expect_nd("unstack<1>(stack<1>(a, b, c)) 2", x2, C);
    expect_values("unstack<-1>(a) 0", y0, ext_t{2}, {A.v[0], A.v[3]});
    expect_values("unstack<-1>(a) 1", y1, ext_t{2}, {A.v[1], A.v[4]});
    expect_values("unstack<-1>(a) 2", y2, ext_t{2}, {A.v[2], A.v[5]});
}

TEMPLATE_TEST_CASE("stack: a dyn batch across runs (including 0), shapes that differ at run time are an error",
                   "[ops][array][stack][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, shape<dyn, 3>, D> x;
    tf::placeholder<"y", float, shape<dyn, 3>, D> y;
    tf::session s;
    for (ll batch : {2, 0, 5}) {
        INFO("batch " << batch);
        rng_t r(40 + std::uint32_t(batch));
        const auto tx = rand_tensor<float>(r, {batch, 3}), ty = rand_tensor<float>(r, {batch, 3});
        auto [v0, v1] = s.run(tf::fetch(tf::stack<0>(x, y), tf::stack<-1>(x, y, x)), tf::feed(x, tx), tf::feed(y, ty));
        expect_nd("stack<0>(x, y)", v0, ref_concat({ref_expand(nd_of(tx), 0), ref_expand(nd_of(ty), 0)}, 0));
        expect_nd("stack<-1>(x, y, x)",
                  v1, ref_concat({ref_expand(nd_of(tx), 2), ref_expand(nd_of(ty), 2), ref_expand(nd_of(tx), 2)}, 2));
    }
    REQUIRE_THROWS_WITH(s.run(tf::stack<0>(x, y), tf::feed(x, tf::tensor<float>({2, 3})), tf::feed(y, tf::tensor<float>({1, 3}))),
                        Catch::Contains("concat"));
}

// ---------------------------------------------------------------- pad

TEMPLATE_TEST_CASE("pad: CONSTANT with zeros and with a value, zero paddings, int dtype, rank 1 to 3", "[ops][array][pad]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(6);
    tf::placeholder<"v", std::int32_t, shape<5>, D> v;
    tf::placeholder<"m", float, shape<3, 4>, D> m;
    tf::placeholder<"t", double, shape<2, 3, 4>, D> t;
    const auto tv = rand_tensor<std::int32_t>(r, sdims(v)), tm = rand_tensor<float>(r, sdims(m)), tt = rand_tensor<double>(r, sdims(t));
    const nd V = nd_of(tv), M = nd_of(tm), T = nd_of(tt);
    tf::session s;
    auto [v0, v1, v2, v3, v4, v5, v6] =
        s.run(tf::fetch(tf::pad<tf::paddings<{2, 3}>>(v), tf::pad<tf::paddings<{0, 1}>>(v, 7), tf::pad<P11_22>(m),
                        tf::pad<tf::paddings<{0, 0}, {0, 0}>>(m), tf::pad<tf::paddings<{0, 2}, {3, 0}>>(m, -1.5f),
                        tf::pad<tf::paddings<{1, 0}, {0, 0}, {2, 1}>>(t, 0.25), tf::pad<tf::paddings<{0, 0}, {1, 1}, {0, 0}>>(t)),
              tf::feed(v, tv), tf::feed(m, tm), tf::feed(t, tt));
    expect_nd("pad v {2,3}", v0, ref_pad(V, {{2, 3}}, mode::constant));
    expect_nd("pad v {0,1} with 7", v1, ref_pad(V, {{0, 1}}, mode::constant, 7));
    expect_nd("pad m {1,1},{2,2}", v2, ref_pad(M, {{1, 1}, {2, 2}}, mode::constant));
    expect_nd("pad m with zero paddings", v3, M);
    expect_nd("pad m {0,2},{3,0} with -1.5", v4, ref_pad(M, {{0, 2}, {3, 0}}, mode::constant, -1.5));
    expect_nd("pad t {1,0},{0,0},{2,1} with 0.25", v5, ref_pad(T, {{1, 0}, {0, 0}, {2, 1}}, mode::constant, 0.25));
    expect_nd("pad t middle axis", v6, ref_pad(T, {{0, 0}, {1, 1}, {0, 0}}, mode::constant));
}

TEMPLATE_TEST_CASE("pad: REFLECT and SYMMETRIC, the largest paddings they allow", "[ops][array][pad]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(7);
    tf::placeholder<"m", float, shape<3, 4>, D> m;
    tf::placeholder<"t", std::int32_t, shape<2, 3, 5>, D> t;
    const auto tm = rand_tensor<float>(r, sdims(m));
    const auto tt = rand_tensor<std::int32_t>(r, sdims(t));
    const nd M = nd_of(tm), T = nd_of(tt);
    constexpr auto reflect = tf::pad_mode::reflect;
    constexpr auto symmetric = tf::pad_mode::symmetric;
    tf::session s;
    auto [v0, v1, v2, v3, v4, v5] =
        s.run(tf::fetch(tf::pad<P11_22, reflect>(m), tf::pad<P11_22, symmetric>(m), tf::pad<tf::paddings<{2, 2}, {3, 3}>, reflect>(m),
                        tf::pad<tf::paddings<{3, 3}, {4, 4}>, symmetric>(m),
                        tf::pad<tf::paddings<{1, 0}, {0, 2}, {4, 1}>, reflect>(t),
                        tf::pad<tf::paddings<{0, 2}, {3, 1}, {0, 5}>, symmetric>(t)),
              tf::feed(m, tm), tf::feed(t, tt));
    expect_nd("reflect m {1,1},{2,2}", v0, ref_pad(M, {{1, 1}, {2, 2}}, mode::reflect));
    expect_nd("symmetric m {1,1},{2,2}", v1, ref_pad(M, {{1, 1}, {2, 2}}, mode::symmetric));
    expect_nd("reflect m, the largest paddings", v2, ref_pad(M, {{2, 2}, {3, 3}}, mode::reflect));
    expect_nd("symmetric m, the largest paddings", v3, ref_pad(M, {{3, 3}, {4, 4}}, mode::symmetric));
    expect_nd("reflect t", v4, ref_pad(T, {{1, 0}, {0, 2}, {4, 1}}, mode::reflect));
    expect_nd("symmetric t", v5, ref_pad(T, {{0, 2}, {3, 1}, {0, 5}}, mode::symmetric));
}

TEMPLATE_TEST_CASE("pad: a dyn batch across runs (including 0), REFLECT paddings too large for a dyn extent are a run-time error",
                   "[ops][array][pad][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, shape<dyn, 3>, D> x;
    tf::session s;
    for (ll batch : {3, 0, 1, 4}) {
        INFO("batch " << batch);
        rng_t r(50 + std::uint32_t(batch));
        const auto tx = rand_tensor<float>(r, {batch, 3});
        auto [v0, v1] = s.run(tf::fetch(tf::pad<P11_22>(x, 2.f), tf::pad<tf::paddings<{0, 0}, {2, 1}>, tf::pad_mode::reflect>(x)),
                              tf::feed(x, tx));
        expect_nd("pad x {1,1},{2,2} with 2", v0, ref_pad(nd_of(tx), {{1, 1}, {2, 2}}, mode::constant, 2));
        expect_nd("reflect x {0,0},{2,1}", v1, ref_pad(nd_of(tx), {{0, 0}, {2, 1}}, mode::reflect));
    }
    REQUIRE_THROWS_WITH(s.run(tf::pad<tf::paddings<{2, 0}, {0, 0}>, tf::pad_mode::reflect>(x), tf::feed(x, tf::tensor<float>({2, 3}))),
                        Catch::Contains("pad") && Catch::Contains("[2,3]"));
    REQUIRE_NOTHROW(s.run(tf::pad<tf::paddings<{2, 0}, {0, 0}>, tf::pad_mode::symmetric>(x), tf::feed(x, tf::tensor<float>({2, 3}))));
}

// ---------------------------------------------------------------- tile

TEMPLATE_TEST_CASE("tile: multiples of 0, 1 and more, rank 0 to 3, int dtype, a dyn batch (including 0)", "[ops][array][tile]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(8);
    tf::placeholder<"v", std::int32_t, shape<3>, D> v;
    tf::placeholder<"m", float, shape<2, 3>, D> m;
    tf::placeholder<"t", double, shape<2, 1, 3>, D> t;
    const auto tv = rand_tensor<std::int32_t>(r, sdims(v)), tm = rand_tensor<float>(r, sdims(m)), tt = rand_tensor<double>(r, sdims(t));
    const nd V = nd_of(tv), M = nd_of(tm), T = nd_of(tt);
    tf::session s;
    auto [v0, v1, v2, v3, v4, v5, v6] =
        s.run(tf::fetch(tf::tile<4>(v), tf::tile<2, 3>(m), tf::tile<1, 1>(m), tf::tile<3, 1>(m), tf::tile<0, 2>(m),
                        tf::tile<2, 5, 2>(t), tf::tile<>(tf::sum(v))),
              tf::feed(v, tv), tf::feed(m, tm), tf::feed(t, tt));
    expect_nd("tile<4>(v)", v0, ref_tile(V, {4}));
    expect_nd("tile<2, 3>(m)", v1, ref_tile(M, {2, 3}));
    expect_nd("tile<1, 1>(m)", v2, M);
    expect_nd("tile<3, 1>(m)", v3, ref_tile(M, {3, 1}));
    expect_nd("tile<0, 2>(m): empty", v4, ref_tile(M, {0, 2}));
    expect_nd("tile<2, 5, 2>(t)", v5, ref_tile(T, {2, 5, 2}));
    expect_values("tile<>(scalar)", v6, ext_t{}, {V.v[0] + V.v[1] + V.v[2]});

    tf::placeholder<"x", float, shape<dyn, 2>, D> x;
    for (ll batch : {3, 0, 1}) {
        INFO("batch " << batch);
        const auto tx = rand_tensor<float>(r, {batch, 2});
        auto [w0, w1] = s.run(tf::fetch(tf::tile<2, 3>(x), tf::tile<1, 0>(x)), tf::feed(x, tx));
        expect_nd("tile<2, 3>(x)", w0, ref_tile(nd_of(tx), {2, 3}));
        expect_nd("tile<1, 0>(x)", w1, ref_tile(nd_of(tx), {1, 0}));
    }
}

// ---------------------------------------------------------------- flatten

TEMPLATE_TEST_CASE("flatten: rank 1 to 4, dyn batch (including 0) and dyn inner extents, into a matmul", "[ops][array][flatten]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(9);
    tf::placeholder<"v", std::int32_t, shape<5>, D> v;
    tf::placeholder<"x", float, shape<dyn, 2, 3, 2>, D> x;
    tf::placeholder<"y", float, shape<2, dyn>, D> y;
    tf::variable<"w", float, shape<12, 3>, D> w{tf::init::uniform{-1, 1, 9}};
    tf::session s;
    const auto tv = rand_tensor<std::int32_t>(r, sdims(v));
    const auto v0 = s.run(tf::flatten(v), tf::feed(v, tv));
    expect_values("flatten(v)", v0, ext_t{5, 1}, nd_of(tv).v);
    for (ll batch : {2, 0, 3}) {
        INFO("batch " << batch);
        const auto tx = rand_tensor<float>(r, {batch, 2, 3, 2});
        const auto ty = rand_tensor<float>(r, {2, batch + 1});
        auto [f, fy, mm, tw] =
            s.run(tf::fetch(tf::flatten(x), tf::flatten(y), tf::matmul(tf::flatten(x * 2.f), w), w), tf::feed(x, tx), tf::feed(y, ty));
        expect_values("flatten(x)", f, ext_t{batch, 12}, nd_of(tx).v);
        expect_values("flatten(y)", fy, ext_t{2, batch + 1}, nd_of(ty).v);
        std::vector<double> want;
        for (ll i = 0; i < batch; ++i)
            for (ll j = 0; j < 3; ++j) {
                double acc = 0;
                for (ll k = 0; k < 12; ++k) acc += 2.0 * double(tx[i * 12 + k]) * double(tw[k * 3 + j]);
                want.push_back(acc);
            }
        expect_values("matmul(flatten(2x), w)", mm, ext_t{batch, 3}, want, 1e-5, 1e-5);
    }
}

// ---------------------------------------------------------------- gradients

TEMPLATE_TEST_CASE("array ops: gradients match finite differences", "[ops][array][grad]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"a", double, shape<2, 3, 4>, D> a{tf::init::uniform{-1, 1, 1}};
    tf::variable<"b", double, shape<2, 2, 4>, D> b{tf::init::uniform{-1, 1, 2}};
    tf::variable<"c", double, shape<2, 3, 1>, D> c{tf::init::uniform{-1, 1, 3}};
    tf::variable<"m", double, shape<3, 4>, D> m{tf::init::uniform{-1, 1, 4}};
    const auto sq = [](const auto& e) { return tf::sum(tf::square(e) * tf::sin(e)); };  // uneven adjoints
    TFTEST_CHECK_GRAD("concat<1>(a, b, a)", sq(tf::concat<1>(a, b, a)), a, b);
    TFTEST_CHECK_GRAD("concat<-1>(c, a, c)", sq(tf::concat<-1>(c, a, c)), a, c);
    TFTEST_CHECK_GRAD("concat<0>(a, a)", sq(tf::concat<0>(a, a)), a);
    TFTEST_CHECK_GRAD("slice<1, 0, 1>(a, 1, -1, 2)", sq(tf::slice<1, 0, 1>(a, tf::sizes<1, -1, 2>)), a);
    TFTEST_CHECK_GRAD("slice<0, 2>(m)", sq(tf::slice<0, 2>(m)), m);
    {
        auto [p, q, u] = tf::split<-1>(a, tf::sizes<1, 2, 1>);
        TFTEST_CHECK_GRAD("split sizes: two parts", sq(p) + tf::sum(q * 3.0), a);
        TFTEST_CHECK_GRAD("split sizes: one part", sq(u), a);
        auto [h0, h1] = tf::split<0, 2>(a);
        TFTEST_CHECK_GRAD("split<0, 2>: both parts", sq(h0 * h1), a);
    }
    TFTEST_CHECK_GRAD("stack<1>(m, m * m)", sq(tf::stack<1>(m, m * m)), m);
    {
        auto [r0, r1, r2] = tf::unstack<0>(m);
        TFTEST_CHECK_GRAD("unstack<0>(m)", sq(r0 * r2 + r1), m);
    }
    TFTEST_CHECK_GRAD("pad constant", sq(tf::pad<P11_22>(m, 0.5)), m);
    TFTEST_CHECK_GRAD("pad reflect", sq(tf::pad<tf::paddings<{2, 1}, {3, 2}>, tf::pad_mode::reflect>(m)), m);
    TFTEST_CHECK_GRAD("pad symmetric", sq(tf::pad<tf::paddings<{1, 0}, {0, 0}, {4, 3}>, tf::pad_mode::symmetric>(a)), a);
    TFTEST_CHECK_GRAD("tile<2, 1, 3>(c)", sq(tf::tile<2, 1, 3>(c)), c);
    TFTEST_CHECK_GRAD("tile<3, 2>(m)", sq(tf::tile<3, 2>(m)), m);
    TFTEST_CHECK_GRAD("tile<1, 0>(m): no tiles", sq(tf::tile<1, 0>(m)) + sq(m), m);
    TFTEST_CHECK_GRAD("flatten(a)", sq(tf::matmul(tf::flatten(a), tf::transpose(tf::flatten(a)))), a);
}

TEMPLATE_TEST_CASE("array ops: gradients of their gradient ops (second order) match finite differences", "[ops][array][grad]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"a", double, shape<2, 3>, D> a{tf::init::uniform{-1, 1, 5}};
    tf::variable<"b", double, shape<2, 2>, D> b{tf::init::uniform{-1, 1, 6}};
    const auto sq = [](const auto& e) { return tf::sum(tf::square(e)); };
    const auto cube = [](const auto& e) { return tf::sum(e * e * e); };
    // through concat_part and its gradient
    auto [ga, gb] = tf::grad(cube(tf::concat<1>(a, b)), a, b);
    TFTEST_CHECK_GRAD("d/da |d/da cube(concat(a, b))|^2", sq(ga), a);
    TFTEST_CHECK_GRAD("d/db |d/db cube(concat(a, b))|^2", sq(gb), b);
    // through place (slice's gradient)
    auto gs = tf::grad(cube(tf::slice<0, 1>(a, tf::sizes<2, 2>)), a);
    TFTEST_CHECK_GRAD("second order through slice", sq(gs), a);
    // through unpad and pad_grad
    auto gp = tf::grad(cube(tf::pad<tf::paddings<{1, 1}, {1, 2}>>(a)), a);
    TFTEST_CHECK_GRAD("second order through a constant pad", sq(gp), a);
    auto gr = tf::grad(cube(tf::pad<tf::paddings<{1, 1}, {2, 1}>, tf::pad_mode::reflect>(a)), a);
    TFTEST_CHECK_GRAD("second order through a reflect pad", sq(gr), a);
    // through tile_grad
    auto gt = tf::grad(cube(tf::tile<2, 3>(a)), a);
    TFTEST_CHECK_GRAD("second order through tile", sq(gt), a);
}

TEMPLATE_TEST_CASE("array ops: gradients with a dyn batch (including 0) equal those with a static one", "[ops][array][grad][dyn]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"w", double, shape<3>, D> w{tf::init::uniform{-1, 1, 7}};
    tf::placeholder<"x", double, shape<dyn, 3>, D> x;
    const auto loss = [&](const auto& xs) {
        const auto h = xs * w;  // [N, 3]
        auto [p, q] = tf::split<1>(tf::concat<0>(h, xs), tf::sizes<1, -1>);
        return tf::sum(tf::square(tf::pad<tf::paddings<{0, 0}, {2, 2}>, tf::pad_mode::symmetric>(tf::tile<1, 2>(h)))) +
               tf::sum(tf::square(tf::pad<P11_22>(h, 0.5))) +
               tf::sum(tf::square(tf::slice<0, 1>(tf::concat<1>(h, xs)))) + tf::sum(p * p) * 0.5 + tf::sum(tf::flatten(q));
    };
    const auto g_dyn = tf::grad(loss(x), w);
    tf::session s;
    for (ll batch : {3, 1, 0, 2}) {
        INFO("batch " << batch);
        rng_t r(60 + std::uint32_t(batch));
        const auto tx = rand_tensor<double>(r, {batch, 3});
        const auto got = s.run(g_dyn, tf::feed(x, tx));
        // the same graph on a placeholder of static shape
        if (batch == 3) {
            tf::placeholder<"xs", double, shape<3, 3>, D> xs;
            const auto want = s.run(tf::grad(loss(xs), w), tf::feed(xs, tx));
            expect_values("dyn vs static batch", got, ext_t{3}, nd_of(want).v, 1e-12, 1e-12);
        }
        if (batch == 0) expect_values("batch 0: sums of nothing", got, ext_t{3}, {0, 0, 0});
    }
}

TEMPLATE_TEST_CASE("array ops: inside tf::expr steps built in a loop, with their gradient", "[ops][array][grad][expr]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, shape<dyn, 4>, D> x;
    tf::variable<"w", double, shape<4>, D> w{tf::init::uniform{-1, 1, 8}};
    tf::expr<double, shape<dyn, 4>, D> h = x;
    for (int k = 0; k < 3; ++k) {
        auto [a, b] = tf::split<1, 2>(h);
        h = tf::tanh(tf::concat<1>(b * 0.5, a) * w + tf::slice<0, 0>(tf::pad<tf::paddings<{0, 0}, {1, 1}>>(h), tf::sizes<-1, 4>));
    }
    const auto loss = tf::sum(tf::square(h));
    const auto g = tf::grad(loss, w);
    const tf::tensor<double> xb({2, 4}, {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8});
    tf::session s;
    // the forward values, step by step here
    std::vector<double> hv(xb.data(), xb.data() + 8);
    for (int k = 0; k < 3; ++k) {
        std::vector<double> next(8);
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 4; ++j) {
                const double swapped = j < 2 ? 0.5 * hv[i * 4 + j + 2] : hv[i * 4 + j - 2];  // concat(b / 2, a)
                const double shifted = j == 0 ? 0.0 : hv[i * 4 + j - 1];                       // pad then slice
                next[i * 4 + j] = std::tanh(swapped * w.value()[j] + shifted);
            }
        hv = next;
    }
    double want = 0;
    for (double v : hv) want += v * v;
    auto [l, gw] = s.run(tf::fetch(loss, g), tf::feed(x, xb));
    CHECK(l.item() == Approx(want).epsilon(1e-12));
    const auto eval = [&] { return s.run(loss, tf::feed(x, xb)).item(); };
    for (tf::index_t i = 0; i < 4; ++i) {
        const double x0 = w.value()[i];
        w.value()[i] = x0 + 1e-6;
        const double p = eval();
        w.value()[i] = x0 - 1e-6;
        const double m = eval();
        w.value()[i] = x0;
        INFO("w[" << i << "]");
        CHECK(gw[i] == Approx((p - m) / 2e-6).margin(1e-7));
    }
}

// ---------------------------------------------------------------- threads

TEST_CASE("array ops: the CPU results are bitwise those of one thread for any thread count, and equal the reference",
          "[ops][array][threads]") {
    rng_t r(11);
    const auto tx = rand_tensor<float>(r, {33, 301, 7}), ty = rand_tensor<float>(r, {33, 50, 7}), tz = rand_tensor<float>(r, {1, 301, 7});
    const auto run = [&]<class D>(tf::session& s, D) {
        tf::placeholder<"x", float, shape<33, 301, 7>, D> x;
        tf::placeholder<"y", float, shape<33, 50, 7>, D> y;
        tf::placeholder<"z", float, shape<1, 301, 7>, D> z;
        auto [p, q] = tf::split<1>(x, tf::sizes<100, -1>);
        const auto wsum = [](const auto& e) { return tf::sum(e * e); };
        tf::variable<"v", float, shape<33, 301, 7>, D> v{tf::init::uniform{-1, 1, 3}};
        const auto loss = wsum(tf::pad<tf::paddings<{2, 3}, {5, 1}, {0, 6}>, tf::pad_mode::reflect>(v)) +
                          wsum(tf::tile<1, 2, 3>(v)) + wsum(tf::slice<3, 7, 1>(v, tf::sizes<20, 250, 5>)) +
                          wsum(tf::concat<0>(v, v));
        return s.run(tf::fetch(tf::concat<1>(x, y, x), tf::concat<0>(z, x, z), tf::concat<2>(x, x), tf::slice<1, 3, 2>(x, tf::sizes<30, 290, 4>),
                               p, q, tf::pad<tf::paddings<{1, 1}, {0, 4}, {3, 3}>>(x, 1.f),
                               tf::pad<tf::paddings<{1, 2}, {3, 4}, {5, 6}>, tf::pad_mode::symmetric>(x), tf::tile<2, 1, 3>(x),
                               tf::grad(loss, v)),
                     tf::feed(x, tx), tf::feed(y, ty), tf::feed(z, tz));
    };
    tf::session ref;
    const auto want = run(ref, tf::reference{});
    tf::session one{tf::session_options{.threads = 1}};
    const auto base = run(one, tf::cpu{});
    const char* names[] = {"concat<1>", "concat<0>", "concat<2>", "slice", "split 0", "split 1", "pad", "pad symmetric", "tile", "grad"};
    [&]<std::size_t... K>(std::index_sequence<K...>) {
        // copies are exact: equal to the reference; the gradient sums in another order there
        ((K + 1 < sizeof...(K) ? expect_nd(names[K], std::get<K>(base), nd_of(std::get<K>(want)))
                               : expect_values(names[K], std::get<K>(base), extents(std::get<K>(want).dims()), nd_of(std::get<K>(want)).v,
                                               1e-5, 1e-5)),
         ...);
    }(std::make_index_sequence<10>{});
    for (int threads : {2, 3, 7}) {
        INFO("threads " << threads);
        tf::session s{tf::session_options{.threads = threads}};
        const auto got = run(s, tf::cpu{});
        const auto same = [&](const char* name, const auto& g, const auto& b) {
            INFO(name);
            CHECK(same_bits(g, b));
        };
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (same(names[K], std::get<K>(got), std::get<K>(base)), ...);
        }(std::make_index_sequence<10>{});
    }
}
