// benchmarks/while_grad.cpp — the gradients of a tf::while_loop and of a
// tf::scan, timed in typeflow against the same recurrence written by hand
// with Eigen (stacked states forward, the chain rule backward) in the same
// run; the second peer is TensorFlow (benchmarks/tensorflow/while_grad_tf.py:
// tf.while_loop and tf.scan in a tf.function under a GradientTape), run by
// scripts/bench_tf.sh, which joins the lines into ratios.
//
// Workloads, h0 [32, 64], W [64, 64], b [64], float, 20 steps:
//   while_grad_step: h <- tanh(h W + b) while the iteration is below 20 (at
//     most 20); y = sum(h^2) of the last h;
//   scan_grad_step: h <- tanh(h W + b + x_t) over the rows of xs [20, 32, 64]
//     (tf::scan); y = sum of every step's h^2.
// A step computes y and its gradients with respect to W, b and h0. Prints,
// for 1 and 2 threads,
//   <workload> threads=<n> typeflow=<us> eigen=<us> ratio=<eigen/typeflow>
// (the Eigen peer runs on one thread: Eigen's own threaded products need
// OpenMP, which the benchmarks are not built with).
#include <Eigen/Core>
#include <cstddef>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <typeflow/typeflow.hpp>

#include "bench_util.hpp"

namespace tf = typeflow;

namespace {
constexpr int batch = 32, units = 64, iterations = 20;
using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using rowvec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

// The same step by hand: the states stacked forward, then back through them
// (with rows xs: each step adds its row, and y sums every step's h^2).
struct by_hand {
    mat W, h0, dW, dh;
    rowvec b, db;
    std::vector<mat> xs;  // empty: the while loop's workload
    std::vector<mat> hs = std::vector<mat>(iterations + 1);
    float y = 0;
    void step() {
        hs[0] = h0;
        for (int t = 0; t < iterations; ++t) {
            hs[t + 1].noalias() = hs[t] * W;
            if (!xs.empty()) hs[t + 1] += xs[static_cast<std::size_t>(t)];
            hs[t + 1] = (hs[t + 1].rowwise() + b).array().tanh().matrix();
        }
        y = 0;
        for (int t = xs.empty() ? iterations : 1; t <= iterations; ++t) y += hs[t].squaredNorm();
        mat g = 2.f * hs[iterations], dz(batch, units);
        dW.setZero(units, units);
        db.setZero(units);
        for (int t = iterations; t-- > 0;) {
            dz = (g.array() * (1.f - hs[t + 1].array().square())).matrix();
            dW.noalias() += hs[t].transpose() * dz;
            db += dz.colwise().sum();
            g.noalias() = dz * W.transpose();
            if (!xs.empty() && t > 0) g += 2.f * hs[t];
        }
        dh = g;
    }
};

// Times the fetches f (y, then the gradients of W, b and h0) against e, after
// checking once that both compute the same figures (loosely: float sums in
// other orders). Returns false when they disagree.
template <class S, class F>
bool compare(const char* workload, int threads, S& s, const F& f, by_hand& e) {
    {
        auto r = s.run(f);
        e.step();
        const float y_tf = std::get<0>(r)[0], dw_tf = std::get<1>(r)[5], dh_tf = std::get<3>(r)[7];
        if (std::abs(y_tf - e.y) > 1e-3f * std::abs(e.y) || std::abs(dw_tf - e.dW(0, 5)) > 1e-3f * (1 + std::abs(e.dW(0, 5))) ||
            std::abs(dh_tf - e.dh(0, 7)) > 1e-3f * (1 + std::abs(e.dh(0, 7)))) {
            std::fprintf(stderr, "%s: typeflow and the Eigen peer disagree: y %g / %g, dW %g / %g, dh0 %g / %g\n", workload,
                         y_tf, e.y, dw_tf, e.dW(0, 5), dh_tf, e.dh(0, 7));
            return false;
        }
    }
    std::vector<bench::contender> cs{{"typeflow", [&] { bench::do_not_optimize(s.run(f)); }},
                                     {"eigen", [&] {
                                          e.step();
                                          bench::do_not_optimize(e.dW.data());
                                      }}};
    bench::measure(cs);
    std::printf("%s threads=%d typeflow=%.1f eigen=%.1f ratio=%.3f\n", workload, threads, cs[0].median(), cs[1].median(),
                cs[1].median() / cs[0].median());
    std::fflush(stdout);
    return true;
}
}  // namespace

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    if (!only.empty() && only != "while_grad_step" && only != "scan_grad_step") return 0;
    Eigen::setNbThreads(1);
    for (int threads : {1, 2}) {
        tf::variable<"W", float, tf::shape<units, units>> W{tf::init::normal{0.f, 0.1f, 71}};
        tf::variable<"b", float, tf::shape<units>> b{tf::init::normal{0.f, 0.1f, 72}};
        tf::variable<"h0", float, tf::shape<batch, units>> h0{tf::init::normal{0.f, 1.f, 73}};
        tf::variable<"xs", float, tf::shape<iterations, batch, units>> xs{tf::init::normal{0.f, 0.5f, 74}};
        tf::session s{tf::session_options{.threads = threads}};
        by_hand e;
        e.W = Eigen::Map<const mat>(W.value().data(), units, units);
        e.b = Eigen::Map<const rowvec>(b.value().data(), units);
        e.h0 = Eigen::Map<const mat>(h0.value().data(), batch, units);
        if (only.empty() || only == "while_grad_step") {
            auto h = tf::while_loop([](const auto& i, const auto&) { return i < iterations; },
                                    [&](const auto& v) { return tf::tanh(tf::matmul(v, W) + b); }, h0, iterations);
            auto y = tf::sum(tf::square(h));
            auto [gW, gb, gh] = tf::grad(y, W, b, h0);
            if (!compare("while_grad_step", threads, s, tf::fetch(y, gW, gb, gh), e)) return 1;
        }
        if (only.empty() || only == "scan_grad_step") {
            auto hs = tf::scan([&](const auto& v, const auto& x) { return tf::tanh(tf::matmul(v, W) + b + x); }, xs, h0);
            auto y = tf::sum(tf::square(hs));
            auto [gW, gb, gh] = tf::grad(y, W, b, h0);
            for (int t = 0; t < iterations; ++t)
                e.xs.push_back(Eigen::Map<const mat>(xs.value().data() + static_cast<std::ptrdiff_t>(t) * batch * units, batch, units));
            if (!compare("scan_grad_step", threads, s, tf::fetch(y, gW, gb, gh), e)) return 1;
        }
    }
}
