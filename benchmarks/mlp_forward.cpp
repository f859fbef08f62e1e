// benchmarks/mlp_forward.cpp — the forward pass of a 3-layer MLP,
// 784-256-128-10 with ReLU, batch 256, logits (no softmax):
//
//     logits = relu(relu(X W1 + b1) W2 + b2) W3 + b3
//
// typeflow (one session::run per iteration, X fed as a view of a row-major
// Eigen matrix) against the same model written by hand in Eigen with
// row-major matrices and every output preallocated:
//
//     H1.noalias() = X * W1;   H1 = (H1.rowwise() + b1).cwiseMax(0);
//     H2.noalias() = H1 * W2;  H2 = (H2.rowwise() + b2).cwiseMax(0);
//     L.noalias()  = H2 * W3;  L.rowwise() += b3;
//
// (The bias and ReLU run in place on the product: written as one expression,
// `((X*W1).rowwise() + b1).cwiseMax(0)`, Eigen would allocate a temporary for
// the product on every call; the hand-written peer avoids that.)
// The Eigen peer uses copies of typeflow's initial weights; the logits must
// agree within 1e-4 (relative) or the program exits 1. typeflow runs in a
// session of 1 thread and in one of 2 (session_options{.threads}); the Eigen
// peer runs on one thread (Eigen's own threaded GEMM needs OpenMP,
// Eigen::setNbThreads, which this build does not use).
#include <cstdio>
#include <cstring>
#include <random>

#include <Eigen/Core>
#include <typeflow/typeflow.hpp>

#include "bench_util.hpp"

namespace tf = typeflow;
using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using rowvec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

template <class V>
mat to_mat(const V& v) {
    const auto& t = v.value();
    return Eigen::Map<const mat>(t.data(), t.dims()[0], t.dims()[1]);
}
template <class V>
rowvec to_row(const V& v) {
    const auto& t = v.value();
    return Eigen::Map<const rowvec>(t.data(), t.size());
}

int main() {
    constexpr long batch = 256;

    tf::placeholder<"x", float, tf::shape<tf::dyn, 784>> x;
    tf::variable<"W1", float, tf::shape<784, 256>> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<256>> b1{tf::init::uniform{-0.1, 0.1}};
    tf::variable<"W2", float, tf::shape<256, 128>> W2{tf::init::glorot_uniform{}};
    tf::variable<"b2", float, tf::shape<128>> b2{tf::init::uniform{-0.1, 0.1}};
    tf::variable<"W3", float, tf::shape<128, 10>> W3{tf::init::glorot_uniform{}};
    tf::variable<"b3", float, tf::shape<10>> b3{tf::init::uniform{-0.1, 0.1}};
    auto h1 = tf::relu(tf::matmul(x, W1) + b1);
    auto h2 = tf::relu(tf::matmul(h1, W2) + b2);
    auto logits = tf::matmul(h2, W3) + b3;

    mat X(batch, 784);
    {
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> u(0.f, 1.f);
        for (long i = 0; i < X.size(); ++i) X.data()[i] = u(rng);
    }
    const mat eW1 = to_mat(W1), eW2 = to_mat(W2), eW3 = to_mat(W3);
    const rowvec eb1 = to_row(b1), eb2 = to_row(b2), eb3 = to_row(b3);
    mat H1(batch, 256), H2(batch, 128), L(batch, 10);

    tf::session s{tf::session_options{.threads = 1}}, s2{tf::session_options{.threads = 2}};
    const auto xv = tf::view(X);
    auto run_tf = [&] { return s.run(logits, tf::feed(x, xv)); };
    auto run_tf2 = [&] { return s2.run(logits, tf::feed(x, xv)); };
    auto run_eigen = [&] {
        H1.noalias() = X * eW1;
        H1 = (H1.rowwise() + eb1).cwiseMax(0.f);
        H2.noalias() = H1 * eW2;
        H2 = (H2.rowwise() + eb2).cwiseMax(0.f);
        L.noalias() = H2 * eW3;
        L.rowwise() += eb3;
    };

    // correctness
    run_eigen();
    {
        const tf::tensor<float> t = run_tf();
        if (!(t.dims() == tf::dims{batch, 10})) {
            std::fprintf(stderr, "mlp_forward: typeflow logits have shape %s\n", tf::to_string(t.dims()).c_str());
            return 1;
        }
        const double w = bench::tolerance_ratio(t.data(), L.data(), L.size(), 1e-4, 1e-5);
        if (w > 1) {
            std::fprintf(stderr, "mlp_forward: typeflow differs from Eigen (worst error %.3g x tolerance)\n", w);
            return 1;
        }
        std::fprintf(stderr, "mlp_forward: typeflow == eigen within tolerance (worst %.3g of it); arena %zu bytes\n", w,
                     s.stats().arena_bytes);
        const tf::tensor<float> t2 = run_tf2();
        if (std::memcmp(t2.data(), t.data(), sizeof(float) * static_cast<std::size_t>(t.size())) != 0) {
            std::fprintf(stderr, "mlp_forward: typeflow at 2 threads differs from 1 thread\n");
            return 1;
        }
    }

    double sink = 0;
    long k = 0;
    std::vector<bench::contender> cs{
        {"typeflow",
         [&] {
             const tf::tensor<float> t = run_tf();  // released at once: the next run reuses its buffer
             sink += t[(k++ * 97) % (batch * 10)];
         }},
        {"eigen",
         [&] {
             run_eigen();
             bench::do_not_optimize(L.data());
             sink += L.data()[(k++ * 97) % (batch * 10)];
         }},
        {"typeflow_2t",
         [&] {
             const tf::tensor<float> t = run_tf2();
             sink += t[(k++ * 97) % (batch * 10)];
         }},
    };
    bench::measure(cs);
    if (s.stats().rebinds != 1 || s.stats().plans_built != 1) {
        std::fprintf(stderr, "mlp_forward: the session re-planned (%zu plans, %zu rebinds)\n", s.stats().plans_built,
                     s.stats().rebinds);
        return 1;
    }
    bench::report_threads("mlp_forward", cs[0], cs[1], cs[2], 2);
    std::fprintf(stderr, "  (checksum %g)\n", sink);
    return 0;
}
