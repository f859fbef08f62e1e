// dropout, moments, batch_normalization and layer_normalization on every
// device: dropout's masks (their fraction, the scale of the kept elements,
// reproducibility across sessions, devices and thread counts, a new mask at
// each run, the identity at rate 0, rate checks) and its gradient against
// central finite differences of the same masks; the normalisations against
// naive loops in double written here, and their gradients against central
// finite differences in double.
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;
using namespace tftest;
using tf::shape;

namespace {

// A tensor of extents d, uniform in [lo, hi) and never zero (so a zero in a
// dropout's output means a dropped element).
template <class T>
tf::tensor<T> nonzero_tensor(rng_t& r, const tf::dims& d, double lo, double hi) {
    tf::tensor<T> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) {
        double v = r.uniform(lo, hi);
        while (v == 0) v = r.uniform(lo, hi);
        t[i] = static_cast<T>(v);
    }
    return t;
}

template <class T>
std::vector<double> as_vector(const tf::tensor<T>& t) {
    std::vector<double> v(static_cast<std::size_t>(t.size()));
    for (tf::index_t i = 0; i < t.size(); ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(t[i]);
    return v;
}
// a == b, element by element (a CHECK on the vectors would print them whole)
bool equal(const std::vector<double>& a, const std::vector<double>& b) { return a == b; }

double zero_fraction(const std::vector<double>& v) {
    double z = 0;
    for (double e : v) z += e == 0;
    return z / static_cast<double>(v.size());
}

// Checks that y is x * s where mask is s, and 0 where mask is 0 (bit-exact),
// with s = 1 / (1 - rate) rounded to T; returns the fraction dropped.
template <class T>
double check_dropped(const tf::tensor<T>& x, const tf::tensor<T>& y, const tf::tensor<T>& mask, double rate) {
    REQUIRE(x.dims() == y.dims());
    REQUIRE(x.dims() == mask.dims());
    const T s = static_cast<T>(1.0 / (1.0 - rate));
    long long dropped = 0, bad = 0;
    for (tf::index_t i = 0; i < x.size(); ++i) {
        if (mask[i] == T(0)) {
            ++dropped;
            bad += y[i] != T(0);
        } else {
            bad += mask[i] != s || y[i] != static_cast<T>(x[i] * s);
        }
    }
    CHECK(bad == 0);
    return static_cast<double>(dropped) / static_cast<double>(x.size());
}

// The largest |a - b| / max(1, |b|) between two equally long vectors.
double worst_error(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double w = 0;
    for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
    return w;
}

}  // namespace

// ---- dropout ----------------------------------------------------------------

TEMPLATE_TEST_CASE("dropout: about rate of the elements are dropped, the kept ones scaled by 1/(1-rate) exactly",
                   "[ops][dropout]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(1);
    tf::placeholder<"x", float, shape<tf::dyn, 1000>, D> x;
    const auto tx = nonzero_tensor<float>(r, {200, 1000}, -3, 3);
    const double n = 200000;
    for (double rate : {0.1, 0.3, 0.5, 0.9}) {
        INFO("rate " << rate);
        const float rf = static_cast<float>(rate);
        auto m = tf::dropout_mask(x, rf, 11);
        tf::session s;
        auto [y, tm] = s.run(tf::fetch(x * m, m), tf::feed(x, tx));
        const double dropped = check_dropped(tx, y, tm, static_cast<double>(rf));
        CHECK(std::abs(dropped - rate) < 5 * std::sqrt(rate * (1 - rate) / n));
        // tf::dropout(x, rate, seed) is x * dropout_mask(x, rate, seed): the same masks
        tf::session s2;
        const auto y2 = s2.run(tf::dropout(x, rf, 11), tf::feed(x, tx));
        CHECK(equal(as_vector(y2), as_vector(y)));
    }
    // static rate and seed: the same masks as the run-time form of the same rate and seed
    tf::session s;
    auto [y, tm] = s.run(tf::fetch(tf::dropout<0.5, 11>(x), tf::dropout_mask<0.5, 11>(x)), tf::feed(x, tx));
    CHECK(std::abs(check_dropped(tx, y, tm, 0.5) - 0.5) < 5 * std::sqrt(0.25 / n));
    tf::session s2;
    CHECK(equal(as_vector(s2.run(tf::dropout(x, 0.5f, 11), tf::feed(x, tx))), as_vector(y)));
    // double
    tf::placeholder<"xd", double, shape<300, 300>, D> xd;
    const auto txd = nonzero_tensor<double>(r, {300, 300}, -1, 1);
    auto [yd, md] = s.run(tf::fetch(tf::dropout<0.2, 3>(xd), tf::dropout_mask<0.2, 3>(xd)), tf::feed(xd, txd));
    CHECK(std::abs(check_dropped(txd, yd, md, 0.2) - 0.2) < 5 * std::sqrt(0.16 / 90000));
}

TEMPLATE_TEST_CASE("dropout: each run draws a new mask, a new session draws the same sequence again", "[ops][dropout]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(2);
    tf::placeholder<"x", float, shape<tf::dyn, 64>, D> x;
    const auto tx = nonzero_tensor<float>(r, {100, 64}, 1, 2);
    const auto y = tf::dropout<0.4, 5>(x);
    std::vector<std::vector<double>> first;
    {
        tf::session s;
        for (int k = 0; k < 4; ++k) first.push_back(as_vector(s.run(y, tf::feed(x, tx))));
    }
    for (int k = 1; k < 4; ++k) {
        // two independent masks differ where one keeps and the other drops: 2 r (1 - r) of the elements
        double differ = 0;
        for (std::size_t i = 0; i < first[0].size(); ++i) differ += (first[k][i] == 0) != (first[k - 1][i] == 0);
        differ /= static_cast<double>(first[0].size());
        CHECK(std::abs(differ - 0.48) < 5 * std::sqrt(0.48 * 0.52 / 6400));
    }
    tf::session again;
    for (int k = 0; k < 4; ++k) CHECK(equal(as_vector(again.run(y, tf::feed(x, tx))), first[static_cast<std::size_t>(k)]));
    // another seed, other masks
    tf::session other;
    CHECK(!equal(as_vector(other.run(tf::dropout<0.4, 6>(x), tf::feed(x, tx))), first[0]));
    // the run counter survives a new batch size: element i of run k depends on (seed, k, i) alone
    tf::session grown;
    grown.run(y, tf::feed(x, tx));
    const auto big = as_vector(grown.run(y, tf::feed(x, nonzero_tensor<float>(r, {150, 64}, 1, 2))));
    tf::session small;
    small.run(y, tf::feed(x, tx));
    const auto part = as_vector(small.run(y, tf::feed(x, nonzero_tensor<float>(r, {30, 64}, 1, 2))));
    for (std::size_t i = 0; i < part.size(); ++i) REQUIRE((part[i] == 0) == (big[i] == 0));
    CHECK((part[0] == 0) == (first[1][0] == 0));  // (the first two are equal by construction, not by chance)
}

TEST_CASE("dropout: the masks are equal on both devices and for every thread count", "[ops][dropout]") {
    rng_t r(3);
    tf::placeholder<"x", float, shape<tf::dyn, 1000>> xc;
    tf::placeholder<"x", float, shape<tf::dyn, 1000>, tf::reference> xr;
    const auto tx = nonzero_tensor<float>(r, {300, 1000}, -1, 1);  // 300000 elements: several threads' ranges
    std::vector<std::vector<double>> want;
    {
        tf::session s;
        for (int k = 0; k < 3; ++k) want.push_back(as_vector(s.run(tf::dropout_mask<0.3, 17>(xr), tf::feed(xr, tx))));
    }
    for (int threads : {1, 2, 3, 4, 7}) {
        INFO(threads << " threads");
        tf::session s{tf::session_options{.threads = threads}};
        for (int k = 0; k < 3; ++k)
            CHECK(equal(as_vector(s.run(tf::dropout_mask<0.3, 17>(xc), tf::feed(xc, tx))), want[static_cast<std::size_t>(k)]));
    }
    // the run-time form too
    tf::session sr, sc{tf::session_options{.threads = 3}};
    CHECK(equal(as_vector(sr.run(tf::dropout_mask(xr, 0.3f, 17), tf::feed(xr, tx))),
                as_vector(sc.run(tf::dropout_mask(xc, 0.3f, 17), tf::feed(xc, tx)))));
}

TEMPLATE_TEST_CASE("dropout: rate 0 is the identity, a rate below 0 or from 1 up is a tf::error", "[ops][dropout]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    rng_t r(4);
    tf::placeholder<"x", double, shape<tf::dyn, 50>, D> x;
    const auto tx = nonzero_tensor<double>(r, {40, 50}, -1, 1);
    static_assert(std::is_same_v<decltype(tf::dropout<0.0>(x)), decltype(x)>);
    tf::session s;
    CHECK(equal(as_vector(s.run(tf::dropout(x, 0.0), tf::feed(x, tx))), as_vector(tx)));
    CHECK_THROWS_WITH(tf::dropout(x, 1.0), Catch::Contains("dropout: the rate 1 is outside [0, 1)"));
    CHECK_THROWS_AS(tf::dropout(x, -0.25), tf::error);
    CHECK_THROWS_AS(tf::dropout(x, std::nan("")), tf::error);
    // float: 0.99999999 rounds to 1
    tf::placeholder<"xf", float, shape<3>, D> xf;
    CHECK_THROWS_AS(tf::dropout(xf, 0.99999999), tf::error);
    // a rate fed at run time is checked at every run
    tf::placeholder<"rate", double, shape<>, D> rate;
    const auto y = tf::dropout(x, rate, 8);
    auto fed = [&](double v) {
        tf::tensor<double> t(tf::dims{});
        t[0] = v;
        return s.run(y, tf::feed(x, tx), tf::feed(rate, t));
    };
    CHECK(equal(as_vector(fed(0.0)), as_vector(tx)));
    const auto y25 = fed(0.25);
    CHECK(std::abs(zero_fraction(as_vector(y25)) - 0.25) < 0.05);
    CHECK_THROWS_WITH(fed(1.0), Catch::Contains("dropout: the rate 1 is outside [0, 1)"));
    CHECK_THROWS_WITH(fed(-1e-9), Catch::Contains("outside [0, 1)"));
    CHECK(std::abs(zero_fraction(as_vector(fed(0.75))) - 0.75) < 0.05);
}

TEMPLATE_TEST_CASE("dropout: the gradient is dy * mask of the same run and matches finite differences", "[ops][dropout][grad]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(5);
    tf::variable<"x", double, shape<6, 7>, D> x;
    x.load(nonzero_tensor<double>(r, {6, 7}, -2, 2));
    const auto c = tf::constant<shape<6, 7>, D>(nonzero_tensor<double>(r, {6, 7}, -1, 1));
    const auto y = tf::sum(c * tf::dropout<0.4, 21>(x));  // a scalar
    const auto mask = tf::dropout_mask<0.4, 21>(x);       // the same node as the one inside y (same type)
    const auto dx = tf::grad(y, x);
    const auto tc = tf::session{}.run(c);
    // the gradient of every run is c * that run's mask
    tf::session s;
    std::vector<double> first_mask;
    for (int k = 0; k < 3; ++k) {
        auto [tm, tdx] = s.run(tf::fetch(mask, dx));
        if (k == 0) first_mask = as_vector(tm);
        long long bad = 0, dropped = 0;
        for (tf::index_t i = 0; i < tm.size(); ++i) {
            bad += tdx[i] != tc[i] * tm[i];
            dropped += tm[i] == 0;
        }
        CHECK(bad == 0);
        CHECK(dropped > 0);
        CHECK(dropped < tm.size());
    }
    // central differences of the first run's function: a new session draws the first run's mask again
    const auto y0 = [&] { return tf::session{}.run(y)[0]; };
    tf::session s0;
    const auto analytic = as_vector(s0.run(dx));
    CHECK(equal(as_vector(s0.run(mask)), first_mask));  // another fetch list, another plan: its own runs, from the first
    std::vector<double> numeric(analytic.size());
    auto& tx = x.value();
    for (tf::index_t i = 0; i < tx.size(); ++i) {
        const double x0 = tx[i], h = 1e-6 * std::max(1.0, std::abs(x0));
        tx[i] = x0 + h;
        const double yp = y0();
        tx[i] = x0 - h;
        const double ym = y0();
        tx[i] = x0;
        numeric[static_cast<std::size_t>(i)] = (yp - ym) / (2 * h);
    }
    CHECK(worst_error(analytic, numeric) < 1e-6);
}

// ---- moments and the normalisations ------------------------------------------

namespace {
// Mean and biased variance over the axes `reduced` (flags) of a row-major
// tensor of extents d, in double; the result in the order of the kept axes.
struct naive_moments {
    std::vector<double> mean, variance;
};
naive_moments moments_of(const std::vector<double>& x, const std::vector<long long>& d, const std::vector<bool>& reduced) {
    // the output index of each input element
    const std::size_t rank = d.size();
    std::vector<long long> idx(rank, 0);
    std::vector<long long> out_of(x.size());
    long long outs = 1;
    for (std::size_t a = 0; a < rank; ++a)
        if (!reduced[a]) outs *= d[a];
    for (std::size_t e = 0; e < x.size(); ++e) {
        long long o = 0;
        for (std::size_t a = 0; a < rank; ++a)
            if (!reduced[a]) o = o * d[a] + idx[a];
        out_of[e] = o;
        for (std::size_t a = rank; a-- > 0;) {
            if (++idx[a] < d[a]) break;
            idx[a] = 0;
        }
    }
    naive_moments m;
    m.mean.assign(static_cast<std::size_t>(outs), 0.0);
    m.variance.assign(static_cast<std::size_t>(outs), 0.0);
    std::vector<double> count(static_cast<std::size_t>(outs), 0.0);
    for (std::size_t e = 0; e < x.size(); ++e) m.mean[out_of[e]] += x[e], count[out_of[e]] += 1;
    for (std::size_t o = 0; o < m.mean.size(); ++o) m.mean[o] /= count[o];
    for (std::size_t e = 0; e < x.size(); ++e) m.variance[out_of[e]] += std::pow(x[e] - m.mean[out_of[e]], 2);
    for (std::size_t o = 0; o < m.mean.size(); ++o) m.variance[o] /= count[o];
    return m;
}
}  // namespace

TEMPLATE_TEST_CASE("moments: mean and biased variance against naive loops", "[ops][norm]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(6);
    tf::placeholder<"x", double, shape<tf::dyn, 4, 5>, D> x;
    tf::placeholder<"xf", float, shape<3, 4, 5>, D> xf;
    const auto tx = uniform_tensor<double>(r, {3, 4, 5}, 0, 0, -3, 5);
    const auto txf = uniform_tensor<float>(r, {3, 4, 5}, 0, 0, -3, 5);
    const std::vector<long long> d{3, 4, 5};
    tf::session s;
    {
        auto [m, v] = tf::moments<0, 1>(x);
        auto [tm, tv] = s.run(tf::fetch(m, v), tf::feed(x, tx));
        const auto want = moments_of(as_vector(tx), d, {true, true, false});
        expect_values("mean over 0, 1", tm, tf::dims{5}, want.mean, 1e-14, 1e-14);
        expect_values("variance over 0, 1", tv, tf::dims{5}, want.variance, 1e-13, 1e-14);
    }
    {
        auto [m, v] = tf::moments<-1>(x, tf::keepdims);
        auto [tm, tv] = s.run(tf::fetch(m, v), tf::feed(x, tx));
        const auto want = moments_of(as_vector(tx), d, {false, false, true});
        expect_values("mean over -1, keepdims", tm, tf::dims{3, 4, 1}, want.mean, 1e-14, 1e-14);
        expect_values("variance over -1, keepdims", tv, tf::dims{3, 4, 1}, want.variance, 1e-13, 1e-14);
    }
    {
        auto [m, v] = tf::moments<0, 2>(x);
        auto [tm, tv] = s.run(tf::fetch(m, v), tf::feed(x, tx));
        const auto want = moments_of(as_vector(tx), d, {true, false, true});
        expect_values("mean over 0, 2", tm, tf::dims{4}, want.mean, 1e-14, 1e-14);
        expect_values("variance over 0, 2", tv, tf::dims{4}, want.variance, 1e-13, 1e-14);
    }
    {
        auto [m, v] = tf::moments<>(xf);
        auto [tm, tv] = s.run(tf::fetch(m, v), tf::feed(xf, txf));
        const auto want = moments_of(as_vector(txf), d, {true, true, true});
        expect_values("mean of all, float", tm, tf::dims{}, want.mean, 1e-5, 1e-6);
        expect_values("variance of all, float", tv, tf::dims{}, want.variance, 1e-5, 1e-6);
    }
}

namespace {
// (x - mean) / sqrt(var + eps) * scale + offset, per channel (the last axis).
std::vector<double> naive_normalize(const std::vector<double>& x, long long channels, const std::vector<double>& mean,
                                    const std::vector<double>& var, const std::vector<double>& offset,
                                    const std::vector<double>& scale, double eps, bool per_row = false) {
    std::vector<double> y(x.size());
    for (std::size_t e = 0; e < x.size(); ++e) {
        const std::size_t c = e % static_cast<std::size_t>(channels);
        const std::size_t k = per_row ? e / static_cast<std::size_t>(channels) : c;  // statistics per row or channel
        y[e] = (x[e] - mean[k]) / std::sqrt(var[k] + eps) * scale[c] + offset[c];
    }
    return y;
}
}  // namespace

TEMPLATE_TEST_CASE("batch_normalization and layer_normalization against naive loops", "[ops][norm]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(7);
    tf::placeholder<"x", double, shape<tf::dyn, 3, 4, 5>, D> x;
    tf::variable<"mean", double, shape<5>, D> mean;
    tf::variable<"var", double, shape<5>, D> var;
    tf::variable<"beta", double, shape<5>, D> beta;
    tf::variable<"gamma", double, shape<5>, D> gamma;
    const auto tx = uniform_tensor<double>(r, {2, 3, 4, 5}, 0, 0, -4, 6);
    mean.load(uniform_tensor<double>(r, {5}, 0, 0, -1, 1));
    var.load(uniform_tensor<double>(r, {5}, 0, 0, 0.5, 3));
    beta.load(uniform_tensor<double>(r, {5}, 0, 0, -1, 1));
    gamma.load(uniform_tensor<double>(r, {5}, 0, 0, 0.5, 2));
    const auto xs = as_vector(tx);
    tf::session s;
    // given statistics (inference), epsilon a number
    expect_values("batch_normalization", s.run(tf::batch_normalization(x, mean, var, beta, gamma, 1e-3), tf::feed(x, tx)),
                  tf::dims{2, 3, 4, 5},
                  naive_normalize(xs, 5, as_vector(mean.value()), as_vector(var.value()), as_vector(beta.value()),
                                  as_vector(gamma.value()), 1e-3),
                  1e-13, 1e-13);
    // batch statistics (training), epsilon a literal
    auto [m, v] = tf::moments<0, 1, 2>(x);
    const auto want = moments_of(xs, {2, 3, 4, 5}, {true, true, true, false});
    const auto bn = tf::batch_normalization(x, m, v, beta, gamma, tf::literal<double, 1, 100000, D>{});
    expect_values("batch_normalization with moments", s.run(bn, tf::feed(x, tx)), tf::dims{2, 3, 4, 5},
                  naive_normalize(xs, 5, want.mean, want.variance, as_vector(beta.value()), as_vector(gamma.value()), 1e-5),
                  1e-12, 1e-12);
    // layer normalisation: statistics of each row of the last axis
    const auto rows = moments_of(xs, {2, 3, 4, 5}, {false, false, false, true});
    expect_values("layer_normalization", s.run(tf::layer_normalization(x, gamma, beta, 1e-3), tf::feed(x, tx)),
                  tf::dims{2, 3, 4, 5},
                  naive_normalize(xs, 5, rows.mean, rows.variance, as_vector(beta.value()), as_vector(gamma.value()), 1e-3,
                                  true),
                  1e-12, 1e-12);
    // float
    tf::placeholder<"xf", float, shape<tf::dyn, 6>, D> xf;
    tf::variable<"gf", float, shape<6>, D> gf{tf::init::ones{}};
    tf::variable<"bf", float, shape<6>, D> bf;
    const auto txf = uniform_tensor<float>(r, {9, 6}, 0, 0, -2, 2);
    auto [mf, vf] = tf::moments<0>(xf);
    const auto yf = s.run(tf::batch_normalization(xf, mf, vf, bf, gf, 1e-3f), tf::feed(xf, txf));
    const auto wf = moments_of(as_vector(txf), {9, 6}, {true, false});
    expect_values("batch_normalization, float", yf, tf::dims{9, 6},
                  naive_normalize(as_vector(txf), 6, wf.mean, wf.variance, std::vector<double>(6, 0.0),
                                  std::vector<double>(6, 1.0), 1e-3),
                  1e-5, 1e-5);
}

TEMPLATE_TEST_CASE("normalisations: gradients match finite differences", "[ops][norm][grad]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(8);
    tf::variable<"x", double, shape<3, 2, 2, 4>, D> x;
    tf::variable<"beta", double, shape<4>, D> beta;
    tf::variable<"gamma", double, shape<4>, D> gamma;
    tf::variable<"mean", double, shape<4>, D> mean;
    tf::variable<"var", double, shape<4>, D> var;
    x.load(uniform_tensor<double>(r, {3, 2, 2, 4}, 0, 0, -2, 3));
    beta.load(uniform_tensor<double>(r, {4}, 0, 0, -1, 1));
    gamma.load(uniform_tensor<double>(r, {4}, 0, 0, 0.5, 2));
    mean.load(uniform_tensor<double>(r, {4}, 0, 0, -1, 1));
    var.load(uniform_tensor<double>(r, {4}, 0, 0, 0.5, 2));
    const auto c = tf::constant<shape<3, 2, 2, 4>, D>(uniform_tensor<double>(r, {3, 2, 2, 4}, 0, 0, -1, 1));
    {  // training mode: through the batch statistics
        auto [m, v] = tf::moments<0, 1, 2>(x);
        TFTEST_CHECK_GRAD("batch norm, batch statistics", tf::sum(c * tf::batch_normalization(x, m, v, beta, gamma, 1e-3)),
                          x, beta, gamma);
    }
    TFTEST_CHECK_GRAD("batch norm, given statistics", tf::sum(c * tf::batch_normalization(x, mean, var, beta, gamma, 1e-3)),
                      x, mean, var, beta, gamma);
    TFTEST_CHECK_GRAD("layer norm", tf::sum(c * tf::layer_normalization(x, gamma, beta, 1e-3)), x, beta, gamma);
    {
        auto [m, v] = tf::moments<0, 2>(x);
        TFTEST_CHECK_GRAD("moments", tf::sum(m * m) + tf::sum(v * tf::sqrt(v)), x);
    }
}
