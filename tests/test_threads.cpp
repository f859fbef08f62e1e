// Multi-threaded CPU kernels (session_options{.threads = n}): matmul,
// reductions, softmax, argmax and fused element-wise regions (with
// broadcasting, i.e. gathered operands) at 2, 3 and 4 threads against naive
// loops; element-wise and matmul results bit-equal to one thread, a reduction
// bit-equal across runs with the same thread count; an exception thrown in a
// worker thread reaches the caller as tf::error and the session stays usable;
// the default thread count (TYPEFLOW_NUM_THREADS, the CPU affinity).
#include <catch2/catch.hpp>

#include "support.hpp"

#include <typeflow/typeflow.hpp>

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {

constexpr int thread_counts[] = {2, 3, 4};

tf::session make_session(int threads) { return tf::session{tf::session_options{.threads = threads}}; }

template <class T>
tf::tensor<T> random(rng_t& r, const tf::dims& d, double lo = -1, double hi = 1) {
    tf::tensor<T> t(d);
    for (tf::index_t i = 0; i < t.size(); ++i) t[i] = static_cast<T>(r.uniform(lo, hi));
    return t;
}

template <class T>
bool bit_equal(const tf::tensor<T>& a, const tf::tensor<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(T) * static_cast<std::size_t>(a.size())) == 0;
}

// |got - want| <= atol + rtol |want| everywhere (reports the first miss).
template <class T>
void expect_close(const std::string& what, const tf::tensor<T>& got, const std::vector<double>& want, double rtol,
                  double atol) {
    INFO(what);
    REQUIRE(static_cast<std::size_t>(got.size()) == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double g = static_cast<double>(got[static_cast<tf::index_t>(i)]);
        if (!(std::abs(g - want[i]) <= atol + rtol * std::abs(want[i]))) {
            INFO("element " << i << ": got " << g << ", want " << want[i]);
            CHECK(false);
            return;
        }
    }
}

// C = op(A) op(B) for one product, in double.
template <class T>
std::vector<double> naive_mm(const T* a, const T* b, long m, long n, long k, bool ta, bool tb) {
    std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
    for (long i = 0; i < m; ++i)
        for (long j = 0; j < n; ++j) {
            double s = 0;
            for (long p = 0; p < k; ++p)
                s += double(ta ? a[p * m + i] : a[i * k + p]) * double(tb ? b[j * k + p] : b[p * n + j]);
            c[static_cast<std::size_t>(i * n + j)] = s;
        }
    return c;
}

}  // namespace

TEST_CASE("threads: matmul (transposes, odd shapes, vectors) equals a naive loop and one thread bit for bit",
          "[threads][matmul]") {
    tf::placeholder<"a", float, tf::shape<tf::dyn, tf::dyn>> a;
    tf::placeholder<"b", float, tf::shape<tf::dyn, tf::dyn>> b;
    struct mnk {
        long m, n, k;
    };
    // rows split, columns split (few rows), GEMV either side, shapes not divisible by the thread counts
    const mnk shapes[] = {{257, 301, 129}, {300, 200, 64}, {17, 1500, 96}, {3, 1777, 300}, {1, 3000, 300},
                          {2000, 1, 300},  {999, 35, 40},  {48, 48, 48},  {1000, 10, 128}};
    rng_t r(11);
    for (const mnk s : shapes)
        for (int form = 0; form < 4; ++form) {
            const bool ta = form & 1, tb = form & 2;
            const auto A = random<float>(r, ta ? tf::dims{s.k, s.m} : tf::dims{s.m, s.k});
            const auto B = random<float>(r, tb ? tf::dims{s.n, s.k} : tf::dims{s.k, s.n});
            const std::vector<double> want = naive_mm(A.data(), B.data(), s.m, s.n, s.k, ta, tb);
            auto run = [&](tf::session& ss) {
                if (ta && tb) return ss.run(tf::matmul(a, b, tf::transpose_ab), tf::feed(a, A), tf::feed(b, B));
                if (ta) return ss.run(tf::matmul(a, b, tf::transpose_a), tf::feed(a, A), tf::feed(b, B));
                if (tb) return ss.run(tf::matmul(a, b, tf::transpose_b), tf::feed(a, A), tf::feed(b, B));
                return ss.run(tf::matmul(a, b), tf::feed(a, A), tf::feed(b, B));
            };
            tf::session s1 = make_session(1);
            const tf::tensor<float> one = run(s1);
            const std::string what = std::to_string(s.m) + "x" + std::to_string(s.k) + " * " + std::to_string(s.k) +
                                     "x" + std::to_string(s.n) + " form " + std::to_string(form);
            expect_close(what + " threads=1", one, want, 1e-4, 1e-4);
            for (int t : thread_counts) {
                tf::session st = make_session(t);
                REQUIRE(st.threads() == t);
                const tf::tensor<float> y = run(st);
                expect_close(what + " threads=" + std::to_string(t), y, want, 1e-4, 1e-4);
                INFO(what << " threads=" << t);
                CHECK(bit_equal(y, one));
            }
        }
}

TEST_CASE("threads: batched matmul (few and many batches, a shared right operand)", "[threads][matmul]") {
    tf::placeholder<"a", double, tf::shape<tf::dyn, tf::dyn, tf::dyn>> a;
    tf::placeholder<"b", double, tf::shape<tf::dyn, tf::dyn, tf::dyn>> b;
    tf::placeholder<"w", double, tf::shape<tf::dyn, tf::dyn>> w;
    rng_t r(12);
    for (const long batches : {2L, 7L}) {
        const long m = 130, k = 70, n = 90;
        const auto A = random<double>(r, {batches, m, k});
        const auto B = random<double>(r, {batches, k, n});
        const auto W = random<double>(r, {k, n});
        std::vector<double> want, want_w;
        for (long i = 0; i < batches; ++i) {
            const auto c = naive_mm(A.data() + i * m * k, B.data() + i * k * n, m, n, k, false, false);
            want.insert(want.end(), c.begin(), c.end());
            const auto cw = naive_mm(A.data() + i * m * k, W.data(), m, n, k, false, false);
            want_w.insert(want_w.end(), cw.begin(), cw.end());
        }
        tf::session s1 = make_session(1);
        const auto [y1, yw1] =
            s1.run(tf::fetch(tf::matmul(a, b), tf::matmul(a, w)), tf::feed(a, A), tf::feed(b, B), tf::feed(w, W));
        for (int t : thread_counts) {
            tf::session st = make_session(t);
            const auto [y, yw] =
                st.run(tf::fetch(tf::matmul(a, b), tf::matmul(a, w)), tf::feed(a, A), tf::feed(b, B), tf::feed(w, W));
            INFO("batches " << batches << " threads=" << t);
            expect_close("a b", y, want, 1e-12, 1e-12);
            expect_close("a w", yw, want_w, 1e-12, 1e-12);
            CHECK(bit_equal(y, y1));
            CHECK(bit_equal(yw, yw1));
        }
    }
}

namespace {

enum class red { sum, mean, max, min, prod };

// Naive reduction of a rank-3 tensor over the axes in `mask`.
std::vector<double> naive_reduce(const tf::tensor<double>& x, red k, std::array<bool, 3> mask) {
    const auto& d = x.dims();
    const long e[3] = {d[0], d[1], d[2]};
    long oe[3];
    for (int i = 0; i < 3; ++i) oe[i] = mask[static_cast<std::size_t>(i)] ? 1 : e[i];
    const long on = oe[0] * oe[1] * oe[2];
    const double init = k == red::prod ? 1.0 : k == red::max ? -INFINITY : k == red::min ? INFINITY : 0.0;
    std::vector<double> out(static_cast<std::size_t>(on), init);
    long count = 1;
    for (int i = 0; i < 3; ++i)
        if (mask[static_cast<std::size_t>(i)]) count *= e[i];
    for (long i = 0; i < e[0]; ++i)
        for (long j = 0; j < e[1]; ++j)
            for (long l = 0; l < e[2]; ++l) {
                const long o = ((mask[0] ? 0 : i) * oe[1] + (mask[1] ? 0 : j)) * oe[2] + (mask[2] ? 0 : l);
                double& y = out[static_cast<std::size_t>(o)];
                const double v = x[(i * e[1] + j) * e[2] + l];
                switch (k) {
                    case red::sum:
                    case red::mean: y += v; break;
                    case red::prod: y *= v; break;
                    case red::max: y = std::max(y, v); break;
                    case red::min: y = std::min(y, v); break;
                }
            }
    if (k == red::mean)
        for (double& y : out) y /= double(count);
    return out;
}

template <red K, bool Keep, tf::index_t... Ax, class X>
auto reduce_op(const X& x) {
    if constexpr (Keep) {
        if constexpr (K == red::sum) return tf::sum<Ax...>(x, tf::keepdims);
        else if constexpr (K == red::mean) return tf::mean<Ax...>(x, tf::keepdims);
        else if constexpr (K == red::max) return tf::max<Ax...>(x, tf::keepdims);
        else if constexpr (K == red::min) return tf::min<Ax...>(x, tf::keepdims);
        else return tf::prod<Ax...>(x, tf::keepdims);
    } else {
        if constexpr (K == red::sum) return tf::sum<Ax...>(x);
        else if constexpr (K == red::mean) return tf::mean<Ax...>(x);
        else if constexpr (K == red::max) return tf::max<Ax...>(x);
        else if constexpr (K == red::min) return tf::min<Ax...>(x);
        else return tf::prod<Ax...>(x);
    }
}

// One reduction at threads 1..4: each within tolerance of the naive loop,
// reproducible for a thread count (two runs, two sessions), and bit-equal to
// one thread unless every axis is reduced (chunked partial results).
template <red K, bool Keep, tf::index_t... Ax>
void check_reduction(const tf::tensor<double>& X, const std::string& what) {
    tf::placeholder<"x", double, tf::shape<tf::dyn, tf::dyn, tf::dyn>> x;
    std::array<bool, 3> mask{};
    if constexpr (sizeof...(Ax) == 0) mask = {true, true, true};
    else ((mask[static_cast<std::size_t>(Ax)] = true), ...);
    const bool full = mask[0] && mask[1] && mask[2];
    const std::vector<double> want = naive_reduce(X, K, mask);
    // a sum of n terms of size <= 1 is off by about n ulp at worst
    const double tol = K == red::sum ? 1e-12 * double(X.size()) : 1e-12;
    auto node = reduce_op<K, Keep, Ax...>(x);
    tf::session s1 = make_session(1);
    const tf::tensor<double> one = s1.run(node, tf::feed(x, X));
    expect_close(what + " threads=1", one, want, 1e-9, tol);
    for (int t : thread_counts) {
        tf::session st = make_session(t), again = make_session(t);
        const tf::tensor<double> y = st.run(node, tf::feed(x, X));
        const tf::tensor<double> y2 = st.run(node, tf::feed(x, X));
        const tf::tensor<double> y3 = again.run(node, tf::feed(x, X));
        expect_close(what + " threads=" + std::to_string(t), y, want, 1e-9, tol);
        INFO(what << " threads=" << t);
        CHECK(bit_equal(y, y2));
        CHECK(bit_equal(y, y3));
        if (!full) CHECK(bit_equal(y, one));
    }
}

}  // namespace

TEST_CASE("threads: reductions over all, some axes, keepdims, sum, mean, max, min, prod", "[threads][reduce]") {
    rng_t r(13);
    const auto X = random<double>(r, {61, 50, 47});              // 143,350 elements: up to 4 parts
    const auto P = random<double>(r, {61, 50, 47}, 0.999, 1.001);  // products stay in range
    check_reduction<red::sum, false>(X, "sum all");
    check_reduction<red::mean, false>(X, "mean all");
    check_reduction<red::max, false>(X, "max all");
    check_reduction<red::min, false>(X, "min all");
    check_reduction<red::prod, false>(P, "prod all");
    check_reduction<red::sum, true>(X, "sum all keepdims");
    check_reduction<red::sum, false, 0>(X, "sum<0>");
    check_reduction<red::mean, true, 0>(X, "mean<0> keepdims");
    check_reduction<red::max, false, 1>(X, "max<1>");
    check_reduction<red::min, true, 2>(X, "min<2> keepdims");
    check_reduction<red::prod, false, 2>(P, "prod<2>");
    check_reduction<red::sum, false, 0, 1>(X, "sum<0,1>");
    check_reduction<red::mean, false, 1, 2>(X, "mean<1,2>");
    check_reduction<red::sum, true, 0, 2>(X, "sum<0,2> keepdims");
    check_reduction<red::max, false, 0, 1, 2>(X, "max<0,1,2>");
}

TEST_CASE("threads: softmax, log_softmax and argmax", "[threads][nn]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, tf::dyn>> x;
    rng_t r(14);
    const long rows = 700, cols = 100;
    const auto X = random<float>(r, {rows, cols}, -4, 4);
    std::vector<double> sm(static_cast<std::size_t>(rows * cols)), lsm(sm.size()), sm0(sm.size());
    std::vector<double> am, am0;
    for (long i = 0; i < rows; ++i) {
        double m = -INFINITY, s = 0;
        long best = 0;
        for (long j = 0; j < cols; ++j) {
            const double v = X[i * cols + j];
            if (v > m) m = v, best = j;
        }
        am.push_back(double(best));
        for (long j = 0; j < cols; ++j) s += std::exp(double(X[i * cols + j]) - m);
        for (long j = 0; j < cols; ++j) {
            const std::size_t q = static_cast<std::size_t>(i * cols + j);
            sm[q] = std::exp(double(X[i * cols + j]) - m) / s;
            lsm[q] = double(X[i * cols + j]) - m - std::log(s);
        }
    }
    for (long j = 0; j < cols; ++j) {  // along axis 0
        double m = -INFINITY, s = 0;
        long best = 0;
        for (long i = 0; i < rows; ++i)
            if (double(X[i * cols + j]) > m) m = X[i * cols + j], best = i;
        am0.push_back(double(best));
        for (long i = 0; i < rows; ++i) s += std::exp(double(X[i * cols + j]) - m);
        for (long i = 0; i < rows; ++i) sm0[static_cast<std::size_t>(i * cols + j)] = std::exp(double(X[i * cols + j]) - m) / s;
    }
    auto nodes = tf::fetch(tf::softmax(x), tf::log_softmax(x), tf::softmax<0>(x), tf::argmax<1>(x), tf::argmax<0>(x));
    tf::session s1 = make_session(1);
    const auto [a1, b1, c1, d1, e1] = s1.run(nodes, tf::feed(x, X));
    for (int t : thread_counts) {
        tf::session st = make_session(t);
        const auto [a, b, c, d, e] = st.run(nodes, tf::feed(x, X));
        INFO("threads=" << t);
        expect_close("softmax", a, sm, 1e-5, 1e-7);
        expect_close("log_softmax", b, lsm, 1e-5, 1e-5);
        expect_close("softmax<0>", c, sm0, 1e-5, 1e-7);
        expect_close("argmax<1>", d, am, 0, 0);
        expect_close("argmax<0>", e, am0, 0, 0);
        CHECK(bit_equal(a, a1));
        CHECK(bit_equal(b, b1));
        CHECK(bit_equal(c, c1));
    }
}

TEST_CASE("threads: fused element-wise regions with broadcasting (gathered operands)", "[threads][fused]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, tf::dyn>> x;
    tf::placeholder<"b", float, tf::shape<tf::dyn>> b;        // broadcast along rows
    tf::placeholder<"c", float, tf::shape<tf::dyn, 1>> c;     // broadcast along columns (a strided gather)
    rng_t r(15);
    for (const auto& [rows, cols] : {std::pair<long, long>{513, 257}, {3, 70001}, {40001, 3}}) {
        const auto X = random<float>(r, {rows, cols}, -2, 2);
        const auto B = random<float>(r, {cols}, -1, 1);
        const auto C = random<float>(r, {rows, 1}, -1, 1);
        auto f = tf::sigmoid(x * c + b) * x - tf::tanh(c) + b * b;
        std::vector<double> want(static_cast<std::size_t>(rows * cols));
        for (long i = 0; i < rows; ++i)
            for (long j = 0; j < cols; ++j) {
                const double xv = X[i * cols + j], cv = C[i], bv = B[j];
                want[static_cast<std::size_t>(i * cols + j)] =
                    1.0 / (1.0 + std::exp(-(xv * cv + bv))) * xv - std::tanh(cv) + bv * bv;
            }
        tf::session s1 = make_session(1);
        const tf::tensor<float> one = s1.run(f, tf::feed(x, X), tf::feed(b, B), tf::feed(c, C));
        expect_close("fused threads=1", one, want, 1e-5, 1e-5);
        for (int t : thread_counts) {
            tf::session st = make_session(t);
            const tf::tensor<float> y = st.run(f, tf::feed(x, X), tf::feed(b, B), tf::feed(c, C));
            INFO(rows << "x" << cols << " threads=" << t);
            expect_close("fused", y, want, 1e-5, 1e-5);
            CHECK(bit_equal(y, one));
        }
    }
}

TEST_CASE("threads: an error thrown in a worker thread reaches the caller, the session stays usable",
          "[threads][error]") {
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>> y;
    const long n = 100000;
    tf::tensor<std::int32_t> good({n}), bad({n});
    for (long i = 0; i < n; ++i) good[i] = bad[i] = static_cast<std::int32_t>(i % 10);
    bad[n - 5] = 10;  // in the last block: a worker's
    auto oh = tf::one_hot<10, float>(y);
    for (int t : thread_counts) {
        tf::session s = make_session(t);
        INFO("threads=" << t);
        for (int rep = 0; rep < 2; ++rep) {
            REQUIRE_THROWS_AS(s.run(oh, tf::feed(y, bad)), tf::error);
            const tf::tensor<float> ok = s.run(oh, tf::feed(y, good));
            REQUIRE(ok.size() == n * 10);
            bool right = true;
            for (long i = 0; i < n && right; ++i)
                for (long j = 0; j < 10; ++j) right = right && ok[i * 10 + j] == (j == i % 10 ? 1.f : 0.f);
            CHECK(right);
        }
        try {
            s.run(oh, tf::feed(y, bad));
        } catch (const tf::error& e) {
            CHECK(std::string(e.what()).find("label 10 at flat index 99995") != std::string::npos);
        }
    }
}

// TYPEFLOW_NUM_THREADS set to v for the scope (unset when v is null), then put back.
struct scoped_num_threads {
    std::string old;
    bool had = false;
    explicit scoped_num_threads(const char* v) {
        if (const char* e = std::getenv("TYPEFLOW_NUM_THREADS")) old = e, had = true;
        if (v) ::setenv("TYPEFLOW_NUM_THREADS", v, 1);
        else ::unsetenv("TYPEFLOW_NUM_THREADS");
    }
    ~scoped_num_threads() {
        if (had) ::setenv("TYPEFLOW_NUM_THREADS", old.c_str(), 1);
        else ::unsetenv("TYPEFLOW_NUM_THREADS");
    }
};

TEST_CASE("threads: a session's default threads: TYPEFLOW_NUM_THREADS, else the CPUs this process may run on",
          "[threads][default]") {
    {
        scoped_num_threads env(nullptr);
        // what the system says this thread may run on, counted here on its own
        cpu_set_t allowed;
        CPU_ZERO(&allowed);
        REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
        CHECK(tf::session{}.threads() == CPU_COUNT(&allowed));
        // restricted to one CPU (taskset -c <cpu>): one thread
        int first = 0;
        while (!CPU_ISSET(first, &allowed)) ++first;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
        const int restricted = tf::session{}.threads();
        REQUIRE(sched_setaffinity(0, sizeof allowed, &allowed) == 0);
        CHECK(restricted == 1);
    }
    {
        scoped_num_threads env("3");
        tf::session s;
        CHECK(s.threads() == 3);
        CHECK(tf::session{tf::session_options{.threads = 2}}.threads() == 2);  // an explicit count wins
        // and the kernels use them: a matmul on 3 threads equals the naive loop
        rng_t r(5);
        tf::placeholder<"a", double, tf::shape<tf::dyn, 37>> a;
        tf::variable<"w", double, tf::shape<37, 29>> w{tf::init::uniform{-1, 1}};
        const tf::tensor<double> av = random<double>(r, {61, 37});
        const tf::tensor<double> got = s.run(tf::matmul(a, w), tf::feed(a, av));
        const tf::tensor<double> wv = s.run(w);
        double worst = 0;
        for (long i = 0; i < 61; ++i)
            for (long j = 0; j < 29; ++j) {
                double want = 0;
                for (long k = 0; k < 37; ++k) want += av[i * 37 + k] * wv[k * 29 + j];
                worst = std::max(worst, std::abs(got[i * 29 + j] - want));
            }
        CHECK(worst < 1e-12);
    }
    for (const char* bad : {"0", "-2", "two", "4x", ""}) {
        INFO("TYPEFLOW_NUM_THREADS='" << bad << "'");
        scoped_num_threads env(bad);
        try {
            tf::session s;
            FAIL("accepted");
        } catch (const tf::error& e) {
            const std::string m = e.what();
            CHECK(m.find("TYPEFLOW_NUM_THREADS is '" + std::string(bad) + "'") != std::string::npos);
            CHECK(m.find("positive integer") != std::string::npos);
        }
    }
}
