// Reductions (sum, mean, max, min, prod over axis subsets, keepdims, negative
// axes), argmax / argmin, empty reductions and reductions of fused
// expressions, checked against naive loops written here.
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


enum class dist {
    any,        // floats in [-3, 3), ints in [-20, 20]
    prod_safe,  // |v| in [0.5, 1.5) (floats) or one of -2, -1, 1, 2 (ints): products stay in range
    small_int,  // integers in [-2, 2]: many ties
};

template <class T>
tf::tensor<T> rand_tensor(rng_t& r, const tf::dims& d, dist k = dist::any) {
    tf::tensor<T> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) {
        double v = 0;
        switch (k) {
            case dist::any: v = std::is_integral_v<T> ? double(r.integer(-20, 20)) : r.uniform(-3, 3); break;
            case dist::prod_safe:
                if constexpr (std::is_integral_v<T>) {
                    const long long c[4] = {-2, -1, 1, 2};
                    v = double(c[r.integer(0, 3)]);
                } else {
                    v = r.uniform(0.5, 1.5) * (r.integer(0, 1) ? 1 : -1);
                }
                break;
            case dist::small_int: v = double(r.integer(-2, 2)); break;
        }
        t[i] = static_cast<T>(v);
    }
    return t;
}

template <class T>
std::string dtype_tag() {
    return std::string(tf::dtype_name(tf::dtype_of<T>));
}

// ---------------------------------------------------------------------------
// Reference reduction: plain loops over every input element
// ---------------------------------------------------------------------------
enum class red { sum, mean, max, min, prod };

const char* red_name(red r) {
    switch (r) {
        case red::sum: return "sum";
        case red::mean: return "mean";
        case red::max: return "max";
        case red::min: return "min";
        case red::prod: return "prod";
    }
    return "?";
}

struct ref_result {
    std::vector<long long> dims;
    std::vector<double> values;
};

// Reduces t over the axes marked in `reduced` (already normalised).
template <class T>
ref_result ref_reduce(const tf::tensor<T>& t, red r, const std::vector<bool>& reduced, bool keep) {
    using C = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    const auto in = extents(t.dims());
    const std::size_t rank = in.size();
    ref_result res;
    std::vector<long long> kept;  // extents of the output without keepdims
    long long count = 1;
    for (std::size_t i = 0; i < rank; ++i) {
        if (reduced[i]) {
            count *= in[i];
            if (keep) res.dims.push_back(1);
        } else {
            kept.push_back(in[i]);
            res.dims.push_back(in[i]);
        }
    }
    long long out_n = 1;
    for (long long e : kept) out_n *= e;
    std::vector<C> acc(static_cast<std::size_t>(out_n));
    std::vector<bool> seen(static_cast<std::size_t>(out_n), false);
    for (auto& a : acc) a = r == red::prod ? C(1) : C(0);
    std::vector<long long> idx(rank, 0);
    for (long long flat = 0; flat < t.size(); ++flat) {
        long long rem = flat;
        for (std::size_t i = rank; i-- > 0;) {
            idx[i] = rem % in[i];
            rem /= in[i];
        }
        long long o = 0;
        for (std::size_t i = 0; i < rank; ++i)
            if (!reduced[i]) o = o * in[i] + idx[i];
        const C v = C(t[flat]);
        C& a = acc[static_cast<std::size_t>(o)];
        switch (r) {
            case red::sum:
            case red::mean: a = a + v; break;
            case red::prod: a = a * v; break;
            case red::max: a = !seen[static_cast<std::size_t>(o)] || v > a ? v : a; break;
            case red::min: a = !seen[static_cast<std::size_t>(o)] || v < a ? v : a; break;
        }
        seen[static_cast<std::size_t>(o)] = true;
    }
    for (auto& a : acc) {
        if (r == red::mean) {
            if constexpr (std::is_integral_v<T>) a = static_cast<C>(a / static_cast<C>(count));  // truncates
            else a = a / static_cast<C>(count);
        }
        res.values.push_back(static_cast<double>(a));
    }
    return res;
}

// A reduction spec: keepdims and the axes as written (maybe negative, maybe none).
template <bool Keep, tf::index_t... A>
struct spec {};

template <red R, bool Keep, tf::index_t... A, class X>
auto make_reduction(spec<Keep, A...>, const X& x) {
    if constexpr (Keep) {
        if constexpr (R == red::sum) return tf::sum<A...>(x, tf::keepdims);
        else if constexpr (R == red::mean) return tf::mean<A...>(x, tf::keepdims);
        else if constexpr (R == red::max) return tf::max<A...>(x, tf::keepdims);
        else if constexpr (R == red::min) return tf::min<A...>(x, tf::keepdims);
        else return tf::prod<A...>(x, tf::keepdims);
    } else {
        if constexpr (R == red::sum) return tf::sum<A...>(x);
        else if constexpr (R == red::mean) return tf::mean<A...>(x);
        else if constexpr (R == red::max) return tf::max<A...>(x);
        else if constexpr (R == red::min) return tf::min<A...>(x);
        else return tf::prod<A...>(x);
    }
}

template <bool Keep, tf::index_t... A>
std::string spec_name(red r, spec<Keep, A...>) {
    std::string s = red_name(r);
    s += "<";
    [[maybe_unused]] const char* sep = "";
    ((s += sep + std::to_string(A), sep = ","), ...);
    s += ">";
    if (Keep) s += " keepdims";
    return s;
}

template <bool Keep, tf::index_t... A>
std::vector<bool> spec_mask(spec<Keep, A...>, std::size_t rank) {
    std::vector<bool> m(rank, sizeof...(A) == 0);
    ((m[static_cast<std::size_t>(A < 0 ? A + static_cast<tf::index_t>(rank) : A)] = true), ...);
    return m;
}

template <class T>
double sum_rtol() {
    return std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, double> ? 1e-12 : 0.0;
}
template <class T>
double sum_atol() {  // float sums of values in [-3, 3) cancel: an absolute floor
    return std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, double> ? 1e-12 : 0.0;
}

// Every axis subset of a rank-3 tensor, with and without keepdims, plus
// negative and unordered axes.
using rank3_specs = std::tuple<spec<false>, spec<false, 0>, spec<false, 1>, spec<false, 2>, spec<false, 0, 1>,
                               spec<false, 0, 2>, spec<false, 1, 2>, spec<false, 0, 1, 2>, spec<true>, spec<true, 0>,
                               spec<true, 1>, spec<true, 2>, spec<true, 0, 1>, spec<true, 0, 2>, spec<true, 1, 2>,
                               spec<true, 0, 1, 2>, spec<false, -1>, spec<true, -2>, spec<false, -3, -1>,
                               spec<false, 2, 0>, spec<true, -1, 0>>;

template <class D, red R, class T, class... Sp>
void check_all_subsets(std::tuple<Sp...>, std::uint32_t seed) {
    INFO(std::string(red_name(R)) + " " + dtype_tag<T>());
    tf::placeholder<"x", T, tf::shape<2, 3, 4>, D> x;
    rng_t r(seed);
    const auto tx = rand_tensor<T>(r, {2, 3, 4}, R == red::prod ? dist::prod_safe : dist::any);
    tf::session s;
    const auto results = s.run(tf::fetch(make_reduction<R>(Sp{}, x)...), tf::feed(x, tx));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        (([&] {
             using S = std::tuple_element_t<I, std::tuple<Sp...>>;
             constexpr bool keep = []<bool K, tf::index_t... A>(spec<K, A...>) { return K; }(S{});
             const ref_result want = ref_reduce(tx, R, spec_mask(S{}, 3), keep);
             expect_values(spec_name(R, S{}), std::get<I>(results), want.dims, want.values, sum_rtol<T>(),
                           sum_atol<T>());
         }()),
         ...);
    }(std::index_sequence_for<Sp...>{});
}

template <class D, class T>
void check_all_reductions(std::uint32_t seed) {
    check_all_subsets<D, red::sum, T>(rank3_specs{}, seed);
    check_all_subsets<D, red::mean, T>(rank3_specs{}, seed + 1);
    check_all_subsets<D, red::max, T>(rank3_specs{}, seed + 2);
    check_all_subsets<D, red::min, T>(rank3_specs{}, seed + 3);
    check_all_subsets<D, red::prod, T>(rank3_specs{}, seed + 4);
}

}  // namespace

TEMPLATE_TEST_CASE("reduce: sum/mean/max/min/prod over every axis subset of a rank-3 float tensor", "[ops][reduce]", tf::cpu, tf::reference) {
    using D = TestType;
    check_all_reductions<D, float>(100);
}
TEMPLATE_TEST_CASE("reduce: sum/mean/max/min/prod over every axis subset of a rank-3 double tensor", "[ops][reduce]", tf::cpu, tf::reference) {
    using D = TestType;
    check_all_reductions<D, double>(200);
}
TEMPLATE_TEST_CASE("reduce: sum/mean/max/min/prod over every axis subset of a rank-3 int32 tensor", "[ops][reduce]", tf::cpu, tf::reference) {
    using D = TestType;
    check_all_reductions<D, std::int32_t>(300);
}
TEMPLATE_TEST_CASE("reduce: sum/mean/max/min/prod over every axis subset of a rank-3 int64 tensor", "[ops][reduce]", tf::cpu, tf::reference) {
    using D = TestType;
    check_all_reductions<D, std::int64_t>(400);
}

TEMPLATE_TEST_CASE("reduce: integer mean truncates toward zero", "[ops][reduce]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", std::int32_t, tf::shape<3, 2>, D> x;
    tf::tensor<std::int32_t> tx({3, 2}, {1, 2, -1, -2, 7, 0});
    tf::session s;
    auto [m1, m0] = s.run(tf::fetch(tf::mean<1>(x), tf::mean<0>(x)), tf::feed(x, tx));
    expect_values("mean<1>", m1, {3}, {1, -1, 3});   // 3/2, -3/2, 7/2
    expect_values("mean<0>", m0, {2}, {2, 0});       // 7/3, 0/3
}

TEMPLATE_TEST_CASE("reduce: all-axes reductions of rank 1, 2 and 4 tensors give rank-0 results", "[ops][reduce]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"a", double, tf::shape<7>, D> a;
    tf::placeholder<"b", std::int64_t, tf::shape<5, 6>, D> b;
    tf::placeholder<"c", float, tf::shape<2, 3, 2, 5>, D> c;
    rng_t r(500);
    const auto ta = rand_tensor<double>(r, {7});
    const auto tb = rand_tensor<std::int64_t>(r, {5, 6});
    const auto tc = rand_tensor<float>(r, {2, 3, 2, 5});
    tf::session s;
    auto [sa, pa, mb, nb, sb, mc, xc, kc] =
        s.run(tf::fetch(tf::sum(a), tf::prod(a), tf::max(b), tf::min(b), tf::sum(b), tf::mean(c), tf::max<0, 1, 2, 3>(c),
                        tf::sum(c, tf::keepdims)),
              tf::feed(a, ta), tf::feed(b, tb), tf::feed(c, tc));
    const std::vector<bool> all1(1, true), all2(2, true), all4(4, true);
    auto check = [](const std::string& what, const auto& got, const ref_result& w, double rt, double at) {
        expect_values(what, got, w.dims, w.values, rt, at);
    };
    check("sum(a)", sa, ref_reduce(ta, red::sum, all1, false), 1e-12, 1e-12);
    check("prod(a)", pa, ref_reduce(ta, red::prod, all1, false), 1e-12, 1e-12);
    check("max(b)", mb, ref_reduce(tb, red::max, all2, false), 0, 0);
    check("min(b)", nb, ref_reduce(tb, red::min, all2, false), 0, 0);
    check("sum(b)", sb, ref_reduce(tb, red::sum, all2, false), 0, 0);
    check("mean(c)", mc, ref_reduce(tc, red::mean, all4, false), 1e-5, 1e-6);
    check("max<0,1,2,3>(c)", xc, ref_reduce(tc, red::max, all4, false), 0, 0);
    check("sum(c, keepdims)", kc, ref_reduce(tc, red::sum, all4, true), 1e-5, 1e-5);
    CHECK(sa.rank() == 0);
    CHECK(kc.rank() == 4);
}

TEMPLATE_TEST_CASE("reduce: long rows and columns (vectorised paths)", "[ops][reduce]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, tf::shape<37, 301>, D> x;
    tf::placeholder<"d", double, tf::shape<301, 37>, D> d;
    rng_t r(600);
    const auto tx = rand_tensor<float>(r, {37, 301});
    const auto td = rand_tensor<double>(r, {301, 37});
    tf::session s;
    auto [s1, s0, m1, d0, d1] =
        s.run(tf::fetch(tf::sum<1>(x), tf::sum<0>(x), tf::max<-1>(x), tf::mean<0>(d), tf::min<1>(d)), tf::feed(x, tx),
              tf::feed(d, td));
    auto w = ref_reduce(tx, red::sum, {false, true}, false);
    expect_values("sum<1> float [37,301]", s1, w.dims, w.values, 1e-5, 1e-4);
    w = ref_reduce(tx, red::sum, {true, false}, false);
    expect_values("sum<0> float [37,301]", s0, w.dims, w.values, 1e-5, 1e-4);
    w = ref_reduce(tx, red::max, {false, true}, false);
    expect_values("max<-1> float [37,301]", m1, w.dims, w.values);
    w = ref_reduce(td, red::mean, {true, false}, false);
    expect_values("mean<0> double [301,37]", d0, w.dims, w.values, 1e-12, 1e-12);
    w = ref_reduce(td, red::min, {false, true}, false);
    expect_values("min<1> double [301,37]", d1, w.dims, w.values);
}

namespace {
// argmax / argmin over each axis; data with many ties (the first index wins)
template <class D, class T>
void check_arg_reductions(std::uint32_t seed) {
    INFO(dtype_tag<T>());
    tf::placeholder<"x", T, tf::shape<3, 4, 5>, D> x;
    rng_t r(seed);
    const auto tx = rand_tensor<T>(r, {3, 4, 5}, dist::small_int);
    tf::session s;
    auto [x0, x1, x2, xm, n0, n1, n2, nm] =
        s.run(tf::fetch(tf::argmax<0>(x), tf::argmax<1>(x), tf::argmax<2>(x), tf::argmax<-2>(x), tf::argmin<0>(x),
                        tf::argmin<1>(x), tf::argmin<2>(x), tf::argmin<-1>(x)),
              tf::feed(x, tx));
    STATIC_REQUIRE(std::is_same_v<decltype(x0), tf::tensor<std::int64_t>>);
    const long long ext[3] = {3, 4, 5};
    // reference: scan along `axis`, strict comparison keeps the first best index
    auto ref = [&](int axis, bool is_max, std::vector<long long>& dims) {
        dims.clear();
        for (int i = 0; i < 3; ++i)
            if (i != axis) dims.push_back(ext[i]);
        std::vector<double> out;
        for (long long p = 0; p < dims[0]; ++p)
            for (long long q = 0; q < dims[1]; ++q) {
                long long best = 0;
                T bv{};
                for (long long l = 0; l < ext[axis]; ++l) {
                    long long id[3];
                    int k = 0;
                    for (int i = 0; i < 3; ++i) id[i] = i == axis ? l : (k++ == 0 ? p : q);
                    const T v = tx(id[0], id[1], id[2]);
                    if (l == 0 || (is_max ? v > bv : v < bv)) {
                        bv = v;
                        best = l;
                    }
                }
                out.push_back(static_cast<double>(best));
            }
        return out;
    };
    std::vector<long long> d;
    std::vector<double> w;
    w = ref(0, true, d), expect_values("argmax<0>", x0, d, w);
    w = ref(1, true, d), expect_values("argmax<1>", x1, d, w);
    w = ref(2, true, d), expect_values("argmax<2>", x2, d, w);
    w = ref(1, true, d), expect_values("argmax<-2>", xm, d, w);
    w = ref(0, false, d), expect_values("argmin<0>", n0, d, w);
    w = ref(1, false, d), expect_values("argmin<1>", n1, d, w);
    w = ref(2, false, d), expect_values("argmin<2>", n2, d, w);
    w = ref(2, false, d), expect_values("argmin<-1>", nm, d, w);
}
}  // namespace

TEMPLATE_TEST_CASE("reduce: argmax and argmin over each axis, first index on ties", "[ops][reduce][argmax]", tf::cpu, tf::reference) {
    using D = TestType;
    check_arg_reductions<D, float>(700);
    check_arg_reductions<D, std::int32_t>(701);
    check_arg_reductions<D, double>(702);
}

TEMPLATE_TEST_CASE("reduce: argmax/argmin tie-breaking on explicit data", "[ops][reduce][argmax]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", std::int64_t, tf::shape<2, 4>, D> x;
    tf::tensor<std::int64_t> tx({2, 4}, {5, 1, 5, 1, 2, 2, 2, 2});
    tf::session s;
    auto [amx, amn, amx0] = s.run(tf::fetch(tf::argmax<1>(x), tf::argmin<1>(x), tf::argmax<0>(x)), tf::feed(x, tx));
    expect_values("argmax<1>", amx, {2}, {0, 0});
    expect_values("argmin<1>", amn, {2}, {1, 0});
    expect_values("argmax<0>", amx0, {4}, {0, 1, 0, 1});
}

TEMPLATE_TEST_CASE("reduce: dyn rows including an empty reduction (0 rows)", "[ops][reduce][dyn]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", double, tf::shape<tf::dyn, 3>, D> x;
    tf::placeholder<"i", std::int32_t, tf::shape<tf::dyn, 3>, D> xi;
    const auto s0 = tf::sum<0>(x);
    const auto sall = tf::sum(x);
    const auto s1 = tf::sum<1>(x);
    const auto p0 = tf::prod<0>(x);
    const auto i0 = tf::sum<0>(xi, tf::keepdims);
    const auto imax = tf::max<1>(xi);
    rng_t r(800);
    tf::session s;
    for (long long rows : {4, 0, 1, 0, 6}) {
        INFO("rows " << rows);
        const auto tx = rand_tensor<double>(r, {rows, 3}, dist::prod_safe);
        const auto ti = rand_tensor<std::int32_t>(r, {rows, 3});
        auto [y0, yall, y1, yp, yi, ym] = s.run(tf::fetch(s0, sall, s1, p0, i0, imax), tf::feed(x, tx), tf::feed(xi, ti));
        auto w = ref_reduce(tx, red::sum, {true, false}, false);
        expect_values("sum<0>", y0, w.dims, w.values, 1e-12, 1e-12);
        w = ref_reduce(tx, red::sum, {true, true}, false);
        expect_values("sum", yall, w.dims, w.values, 1e-12, 1e-12);
        w = ref_reduce(tx, red::sum, {false, true}, false);
        expect_values("sum<1>", y1, w.dims, w.values, 1e-12, 1e-12);
        w = ref_reduce(tx, red::prod, {true, false}, false);
        expect_values("prod<0>", yp, w.dims, w.values, 1e-12, 1e-12);
        w = ref_reduce(ti, red::sum, {true, false}, true);
        expect_values("int sum<0> keepdims", yi, w.dims, w.values);
        w = ref_reduce(ti, red::max, {false, true}, false);
        expect_values("int max<1>", ym, w.dims, w.values);
        if (rows == 0) {  // explicit: an empty sum is 0, an empty product 1
            expect_values("empty sum<0>", y0, {3}, {0, 0, 0});
            expect_values("empty sum", yall, {}, {0});
            expect_values("empty prod<0>", yp, {3}, {1, 1, 1});
            expect_values("empty int sum<0> keepdims", yi, {1, 3}, {0, 0, 0});
        }
    }
}

TEMPLATE_TEST_CASE("reduce: reductions of fused expressions and fused uses of reductions", "[ops][reduce][fused]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 5>, D> x;
    tf::placeholder<"d", double, tf::shape<3, 4, 2>, D> d;
    const auto e1 = tf::sum<1>(x * x + 1);
    const auto e2 = x - tf::mean<1>(x, tf::keepdims);                     // a reduction broadcast back
    const auto e3 = tf::max<0>(tf::relu(x) * 2) + tf::min<0>(x);           // two reductions fused
    const auto e4 = tf::sum<0>(tf::sum<2>(tf::exp(d) - d));                 // reduction of a reduction
    const auto e5 = tf::mean<-1>(tf::square(d - tf::mean<-1>(d, tf::keepdims)));  // variance
    const auto e6 = tf::argmax<1>(x * -1.0f);
    rng_t r(900);
    tf::session s;
    const auto td = rand_tensor<double>(r, {3, 4, 2});
    for (long long rows : {4, 1, 7}) {
        INFO("rows " << rows);
        const auto tx = rand_tensor<float>(r, {rows, 5});
        auto [y1, y2, y3, y4, y5, y6] = s.run(tf::fetch(e1, e2, e3, e4, e5, e6), tf::feed(x, tx), tf::feed(d, td));
        std::vector<double> w1, w2, w3, w6;
        for (long long i = 0; i < rows; ++i) {
            double acc = 0, m = 0;
            for (long long j = 0; j < 5; ++j) {
                acc += double(tx(i, j)) * tx(i, j) + 1;
                m += tx(i, j);
            }
            w1.push_back(acc);
            m /= 5;
            long long best = 0;
            for (long long j = 0; j < 5; ++j) {
                w2.push_back(double(tx(i, j)) - m);
                if (-tx(i, j) > -tx(i, best)) best = j;
            }
            w6.push_back(double(best));
        }
        for (long long j = 0; j < 5; ++j) {
            double mx = 0, mn = 0;
            for (long long i = 0; i < rows; ++i) {
                const double v = tx(i, j), rv = (v > 0 ? v : 0) * 2;
                mx = i == 0 || rv > mx ? rv : mx;
                mn = i == 0 || v < mn ? v : mn;
            }
            w3.push_back(mx + mn);
        }
        std::vector<double> w4(4, 0.0), w5;
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 4; ++b) {
                double m = 0;
                for (int c = 0; c < 2; ++c) {
                    w4[b] += std::exp(td(a, b, c)) - td(a, b, c);
                    m += td(a, b, c);
                }
                m /= 2;
                double v = 0;
                for (int c = 0; c < 2; ++c) v += (td(a, b, c) - m) * (td(a, b, c) - m);
                w5.push_back(v / 2);
            }
        expect_values("sum<1>(x * x + 1)", y1, {rows}, w1, 1e-5, 1e-5);
        expect_values("x - mean<1>(x, keepdims)", y2, {rows, 5}, w2, 1e-5, 1e-5);
        expect_values("max<0>(relu(x) * 2) + min<0>(x)", y3, {5}, w3, 1e-5, 1e-6);
        expect_values("sum<0>(sum<2>(exp(d) - d))", y4, {4}, w4, 1e-12, 1e-12);
        expect_values("mean<-1>(square(d - mean<-1>(d, keepdims)))", y5, {3, 4}, w5, 1e-12, 1e-12);
        expect_values("argmax<1>(x * -1)", y6, {rows}, w6);
    }
}

TEMPLATE_TEST_CASE("reduce: a reduction read by a fused node inside a region that feeds another reduction", "[ops][reduce][fused]", tf::cpu, tf::reference) {
    using D = TestType;
    // square(d - mean) is one fused region whose output feeds sum<1>: the
    // region reads mean<1>'s buffer while writing its own
    tf::placeholder<"d", double, tf::shape<2, 2>, D> d;
    tf::tensor<double> td({2, 2}, {1, 3, 10, 20});
    tf::session s;
    const auto y = s.run(tf::sum<1>(tf::square(d - tf::mean<1>(d, tf::keepdims))), tf::feed(d, td));
    expect_values("sum<1>(square(d - mean<1>(d, keepdims)))", y, {2}, {2, 50});
}

// An empty reduced axis (a dyn extent fed as 0) has no index to return: a
// tf::error naming the op and the shape (it returned 0, an index of nothing).
// A statically empty axis is a compile error (compile_fail.argmax_empty).
TEMPLATE_TEST_CASE("reduce: argmax and argmin over an empty axis are a tf::error naming the op and the shape", "[ops][reduce][argmax]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"x", float, tf::shape<2, tf::dyn>, D> x;
    tf::session s;
    const tf::tensor<float> none({2, 0});
    CHECK_THROWS_WITH(s.run(tf::argmax<1>(x), tf::feed(x, none)), Catch::Contains("argmax") && Catch::Contains("[2,0]"));
    CHECK_THROWS_WITH(s.run(tf::argmin<-1>(x), tf::feed(x, none)), Catch::Contains("argmin") && Catch::Contains("[2,0]"));
    // along the other axis there is a (empty) result and nothing to pick from
    const tf::tensor<std::int64_t> rows = s.run(tf::argmax<0>(x), tf::feed(x, none));
    CHECK(rows.dims() == tf::dims{0});
    // and the same plan runs with elements
    const tf::tensor<float> t({2, 3}, {1, 5, 2, 7, 0, 9});
    expect_values("argmax<1>", s.run(tf::argmax<1>(x), tf::feed(x, t)), {2}, {1, 2});
    CHECK_THROWS_AS(s.run(tf::argmax<1>(x), tf::feed(x, none)), tf::error);
    expect_values("argmin<-1>", s.run(tf::argmin<-1>(x), tf::feed(x, t)), {2}, {0, 1});
    // a dyn batch of 0 rows reduced along its classes is fine
    tf::placeholder<"b", double, tf::shape<tf::dyn, 3>, D> b;
    CHECK(s.run(tf::argmax<1>(b), tf::feed(b, tf::tensor<double>({0, 3}))).dims() == tf::dims{0});
    CHECK_THROWS_WITH(s.run(tf::argmax<0>(b), tf::feed(b, tf::tensor<double>({0, 3}))),
                      Catch::Contains("argmax") && Catch::Contains("axis 0") && Catch::Contains("[0,3]"));
}
