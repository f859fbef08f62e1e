// benchmarks/bench_util.hpp — the timing harness shared by the benchmarks
// (a header, so benchmarks/CMakeLists.txt does not build it on its own).
//
// Method: every contender is a callable doing one iteration. Each is warmed
// up, then its iteration count is calibrated so that one measurement lasts at
// least `min_seconds`. Then `rounds` rounds are run; in each round every
// contender is measured once, in an order rotated from round to round
// (interleaving, so that a burst of load from other processes hits every
// contender alike). The figure reported is the median over the rounds of the
// time per iteration; the spread (min..max) goes to stderr.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

using clock_type = std::chrono::steady_clock;

/// Keeps a value alive in the optimiser's eyes.
template <class T>
inline void do_not_optimize(const T& v) {
    asm volatile("" : : "r,m"(v) : "memory");
}
inline void clobber_memory() { asm volatile("" : : : "memory"); }

struct contender {
    contender(std::string n, std::function<void()> f) : name(std::move(n)), run(std::move(f)) {}
    std::string name;
    std::function<void()> run;  // one iteration
    long iters = 1;
    std::vector<double> us;  // per-iteration microseconds, one per round
    double median() const {
        std::vector<double> v = us;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
    double min() const { return *std::min_element(us.begin(), us.end()); }
    double max() const { return *std::max_element(us.begin(), us.end()); }
};

inline double seconds_of(const std::function<void()>& f, long iters) {
    const auto t0 = clock_type::now();
    for (long i = 0; i < iters; ++i) f();
    clobber_memory();
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Environment overrides: BENCH_ROUNDS, BENCH_MIN_SECONDS.
inline int env_int(const char* name, int def) {
    const char* s = std::getenv(name);
    return s ? std::atoi(s) : def;
}
inline double env_double(const char* name, double def) {
    const char* s = std::getenv(name);
    return s ? std::atof(s) : def;
}

inline void measure(std::vector<contender>& cs, int rounds = 0, double min_seconds = 0) {
    if (rounds <= 0) rounds = env_int("BENCH_ROUNDS", 9);
    if (min_seconds <= 0) min_seconds = env_double("BENCH_MIN_SECONDS", 0.5);
    for (contender& c : cs) {  // warm-up and calibration
        c.run();
        long n = 1;
        for (;;) {
            const double s = seconds_of(c.run, n);
            if (s >= min_seconds / 4) {
                c.iters = std::max<long>(1, static_cast<long>(std::ceil(n * min_seconds / s)));
                break;
            }
            n *= 2;
        }
    }
    for (int r = 0; r < rounds; ++r)
        for (std::size_t k = 0; k < cs.size(); ++k) {
            contender& c = cs[(k + static_cast<std::size_t>(r)) % cs.size()];
            c.us.push_back(seconds_of(c.run, c.iters) * 1e6 / static_cast<double>(c.iters));
        }
    for (const contender& c : cs)
        std::fprintf(stderr, "  [%s] %d rounds x %ld iters: median %.1f us, min %.1f, max %.1f (spread %.1f%%)\n",
                     c.name.c_str(), rounds, c.iters, c.median(), c.min(), c.max(),
                     100.0 * (c.max() - c.min()) / c.median());
}

/// The result line: `<workload> typeflow=<us> <peer>=<us> ratio=<peer/typeflow>`.
inline void report(const char* workload, const contender& tf, const contender& peer) {
    const double t = tf.median(), p = peer.median();
    std::printf("%s typeflow=%.1f %s=%.1f ratio=%.3f\n", workload, t, peer.name.c_str(), p, p / t);
    std::fflush(stdout);
}

/// The result lines of a run at 1 and n threads:
///   `<workload> threads=1 typeflow=<us> <peer>=<us> ratio=<peer/typeflow>`
///   `<workload> threads=<n> typeflow=<us> speedup=<t1/tn>`
/// (the peer, hand-written Eigen, runs on one thread: see the benchmarks).
inline void report_threads(const char* workload, const contender& tf1, const contender& peer, const contender& tfn,
                           int n) {
    const double t1 = tf1.median(), p = peer.median(), tn = tfn.median();
    std::printf("%s threads=1 typeflow=%.1f %s=%.1f ratio=%.3f\n", workload, t1, peer.name.c_str(), p, p / t1);
    std::printf("%s threads=%d typeflow=%.1f speedup=%.3f\n", workload, n, tn, t1 / tn);
    std::fflush(stdout);
}

/// Largest |a-b| / (atol + rtol*|b|); <= 1 means within tolerance.
template <class A, class B>
double tolerance_ratio(const A* a, const B* b, long n, double rtol, double atol) {
    double worst = 0;
    for (long i = 0; i < n; ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        const double lim = atol + rtol * std::abs(static_cast<double>(b[i]));
        if (!(d <= lim)) worst = std::max(worst, std::isnan(d) ? INFINITY : d / lim);
        else worst = std::max(worst, d / lim);
    }
    return worst;
}

}  // namespace bench
