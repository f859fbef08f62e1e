// benchmarks/while_grad.cpp — the gradient of a tf::while_loop, timed in
// typeflow against the same recurrence written by hand with Eigen (stacked
// states forward, the chain rule backward) in the same run; the second peer
// is TensorFlow (benchmarks/tensorflow/while_grad_tf.py: tf.while_loop in a
// tf.function under a GradientTape), run by scripts/bench_tf.sh, which joins
// the lines into ratios.
//
// Workload: h <- tanh(h W + b) while the iteration is below 20 (at most 20),
// h0 [32, 64], W [64, 64], b [64], float; a step computes y = sum(h^2) and its
// gradients with respect to W, b and h0. Prints, for 1 and 2 threads,
//   while_grad_step threads=<n> typeflow=<us> eigen=<us> ratio=<eigen/typeflow>
// (the Eigen peer runs on one thread: Eigen's own threaded products need
// OpenMP, which the benchmarks are not built with).
#include <Eigen/Core>
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

// The same step by hand: the states stacked forward, then back through them.
struct by_hand {
    mat W, h0, dW, dh;
    rowvec b, db;
    std::vector<mat> hs = std::vector<mat>(iterations + 1);
    float y = 0;
    void step() {
        hs[0] = h0;
        for (int t = 0; t < iterations; ++t) {
            hs[t + 1].noalias() = hs[t] * W;
            hs[t + 1] = (hs[t + 1].rowwise() + b).array().tanh().matrix();
        }
        y = hs[iterations].squaredNorm();
        mat g = 2.f * hs[iterations], dz(batch, units);
        dW.setZero(units, units);
        db.setZero(units);
        for (int t = iterations; t-- > 0;) {
            dz = (g.array() * (1.f - hs[t + 1].array().square())).matrix();
            dW.noalias() += hs[t].transpose() * dz;
            db += dz.colwise().sum();
            g.noalias() = dz * W.transpose();
        }
        dh = g;
    }
};
}  // namespace

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    if (!only.empty() && only != "while_grad_step") return 0;
    Eigen::setNbThreads(1);
    for (int threads : {1, 2}) {
        tf::variable<"W", float, tf::shape<units, units>> W{tf::init::normal{0.f, 0.1f, 71}};
        tf::variable<"b", float, tf::shape<units>> b{tf::init::normal{0.f, 0.1f, 72}};
        tf::variable<"h0", float, tf::shape<batch, units>> h0{tf::init::normal{0.f, 1.f, 73}};
        auto h = tf::while_loop([](const auto& i, const auto&) { return i < iterations; },
                                [&](const auto& v) { return tf::tanh(tf::matmul(v, W) + b); }, h0, iterations);
        auto y = tf::sum(tf::square(h));
        auto [gW, gb, gh] = tf::grad(y, W, b, h0);
        const auto f = tf::fetch(y, gW, gb, gh);
        tf::session s{tf::session_options{.threads = threads}};

        by_hand e;
        e.W = Eigen::Map<const mat>(W.value().data(), units, units);
        e.b = Eigen::Map<const rowvec>(b.value().data(), units);
        e.h0 = Eigen::Map<const mat>(h0.value().data(), batch, units);
        // both compute the same figures (checked once, loosely: float sums in other orders)
        {
            auto r = s.run(f);
            e.step();
            const float y_tf = std::get<0>(r)[0], dw_tf = std::get<1>(r)[5], dh_tf = std::get<3>(r)[7];
            if (std::abs(y_tf - e.y) > 1e-3f * std::abs(e.y) || std::abs(dw_tf - e.dW(0, 5)) > 1e-3f * (1 + std::abs(e.dW(0, 5))) ||
                std::abs(dh_tf - e.dh(0, 7)) > 1e-3f * (1 + std::abs(e.dh(0, 7)))) {
                std::fprintf(stderr, "while_grad: typeflow and the Eigen peer disagree: y %g / %g, dW %g / %g, dh0 %g / %g\n",
                             y_tf, e.y, dw_tf, e.dW(0, 5), dh_tf, e.dh(0, 7));
                return 1;
            }
        }
        std::vector<bench::contender> cs{{"typeflow", [&] { bench::do_not_optimize(s.run(f)); }},
                                         {"eigen", [&] {
                                              e.step();
                                              bench::do_not_optimize(e.dW.data());
                                          }}};
        bench::measure(cs);
        std::printf("while_grad_step threads=%d typeflow=%.1f eigen=%.1f ratio=%.3f\n", threads, cs[0].median(),
                    cs[1].median(), cs[1].median() / cs[0].median());
        std::fflush(stdout);
    }
}
