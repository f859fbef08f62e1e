// benchmarks/mlp_train.cpp — one full training step of a 3-layer MLP,
// 784-256-128-10 with ReLU, batch 256, softmax cross-entropy with integer
// labels, plain SGD (forward + backward + update):
//
//   typeflow:  step = tf::train::sgd(lr).minimize(mean(sparse_softmax_cross_entropy(logits, y)))
//              one session::run(fetch(loss, step)) per iteration
//   eigen:     the same step written by hand (row-major, preallocated, in place)
//   libtorch:  the same model with autograd and a hand-written SGD update
//              (only when the build found libtorch: TYPEFLOW_HAVE_TORCH)
//
// typeflow runs in a session of 1 thread and in one of 2
// (session_options{.threads}); the peers run single-threaded (OpenBLAS too;
// Eigen's own threaded GEMM needs OpenMP, Eigen::setNbThreads, which this
// build does not use) from the same initial weights; after one step the
// updated weights of typeflow and Eigen (and libtorch) must agree within 1e-4
// (relative) or the program exits 1.
#include <cstdio>
#include <random>

#include <Eigen/Core>
#include <typeflow/typeflow.hpp>

#ifdef TYPEFLOW_HAVE_TORCH
#include <torch/torch.h>
#endif

#include "bench_util.hpp"

namespace tf = typeflow;

// OpenBLAS (libtorch's BLAS, and typeflow's and Eigen's with
// -DTYPEFLOW_USE_BLAS=ON) starts one thread per core unless told otherwise;
// torch::set_num_threads does not reach it. Bound weakly: absent without OpenBLAS.
extern "C" __attribute__((weak)) void openblas_set_num_threads(int);

using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using rowvec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

namespace {
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

// The hand-written training step.
struct eigen_mlp {
    mat W1, W2, W3;
    rowvec b1, b2, b3;
    mat H1, H2, L, D3, D2, D1, G1, G2, G3;
    rowvec g1, g2, g3;
    float lr;
    eigen_mlp(mat w1, rowvec bb1, mat w2, rowvec bb2, mat w3, rowvec bb3, long batch, float rate)
        : W1(std::move(w1)), W2(std::move(w2)), W3(std::move(w3)), b1(std::move(bb1)), b2(std::move(bb2)),
          b3(std::move(bb3)), H1(batch, 256), H2(batch, 128), L(batch, 10), D3(batch, 10), D2(batch, 128),
          D1(batch, 256), G1(784, 256), G2(256, 128), G3(128, 10), lr(rate) {}
    float step(const mat& X, const std::vector<std::int32_t>& y) {
        const long B = X.rows();
        H1.noalias() = X * W1;
        H1 = (H1.rowwise() + b1).cwiseMax(0.f);
        H2.noalias() = H1 * W2;
        H2 = (H2.rowwise() + b2).cwiseMax(0.f);
        L.noalias() = H2 * W3;
        L.rowwise() += b3;
        // softmax cross-entropy and its gradient (P - onehot) / B
        float loss = 0;
        for (long i = 0; i < B; ++i) {
            auto row = L.row(i);
            const float m = row.maxCoeff();
            const float lse = std::log((row.array() - m).exp().sum()) + m;
            loss += lse - row(y[static_cast<std::size_t>(i)]);
            D3.row(i) = ((row.array() - lse).exp() / float(B)).matrix();
            D3(i, y[static_cast<std::size_t>(i)]) -= 1.f / float(B);
        }
        G3.noalias() = H2.transpose() * D3;
        g3 = D3.colwise().sum();
        D2.noalias() = D3 * W3.transpose();
        D2 = (H2.array() > 0.f).select(D2, 0.f);
        G2.noalias() = H1.transpose() * D2;
        g2 = D2.colwise().sum();
        D1.noalias() = D2 * W2.transpose();
        D1 = (H1.array() > 0.f).select(D1, 0.f);
        G1.noalias() = X.transpose() * D1;
        g1 = D1.colwise().sum();
        W1 -= lr * G1;
        b1 -= lr * g1;
        W2 -= lr * G2;
        b2 -= lr * g2;
        W3 -= lr * G3;
        b3 -= lr * g3;
        return loss / float(B);
    }
};
}  // namespace

int main() {
    constexpr long batch = 256;
    constexpr float lr = 0.05f;
    Eigen::setNbThreads(1);
    if (openblas_set_num_threads) {
        openblas_set_num_threads(1);
        std::fprintf(stderr, "mlp_train: OpenBLAS limited to 1 thread\n");
    }
#ifdef EIGEN_USE_BLAS
    std::fprintf(stderr, "mlp_train: typeflow and eigen call the BLAS (EIGEN_USE_BLAS)\n");
#endif

    tf::placeholder<"x", float, tf::shape<tf::dyn, 784>> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>> y;
    tf::variable<"W1", float, tf::shape<784, 256>> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<256>> b1{tf::init::uniform{-0.1, 0.1}};
    tf::variable<"W2", float, tf::shape<256, 128>> W2{tf::init::glorot_uniform{}};
    tf::variable<"b2", float, tf::shape<128>> b2{tf::init::uniform{-0.1, 0.1}};
    tf::variable<"W3", float, tf::shape<128, 10>> W3{tf::init::glorot_uniform{}};
    tf::variable<"b3", float, tf::shape<10>> b3{tf::init::uniform{-0.1, 0.1}};
    auto h1 = tf::relu(tf::matmul(x, W1) + b1);
    auto h2 = tf::relu(tf::matmul(h1, W2) + b2);
    auto logits = tf::matmul(h2, W3) + b3;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::sgd(lr).minimize(loss);
    // the same model with each layer behind a tf::expr (same variables; its own session)
    tf::expr<float, tf::shape<tf::dyn, 256>> e1 = tf::relu(tf::matmul(x, W1) + b1);
    tf::expr<float, tf::shape<tf::dyn, 128>> e2 = tf::relu(tf::matmul(e1, W2) + b2);
    tf::expr<float, tf::shape<tf::dyn, 10>> elogits = tf::matmul(e2, W3) + b3;
    auto loss_e = tf::mean(tf::sparse_softmax_cross_entropy(elogits, y));
    auto step_e = tf::train::sgd(lr).minimize(loss_e, W1, b1, W2, b2, W3, b3);

    mat X(batch, 784);
    std::vector<std::int32_t> labels(batch);
    {
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> u(0.f, 1.f);
        for (long i = 0; i < X.size(); ++i) X.data()[i] = u(rng);
        for (auto& l : labels) l = static_cast<std::int32_t>(rng() % 10);
    }
    eigen_mlp ref(to_mat(W1), to_row(b1), to_mat(W2), to_row(b2), to_mat(W3), to_row(b3), batch, lr);

    tf::session s{tf::session_options{.threads = 1}}, s2{tf::session_options{.threads = 2}};
    const auto xv = tf::view(X);
    const auto yv = tf::view(labels, {batch});
    auto run_tf = [&] { return std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xv), tf::feed(y, yv))); };
    auto run_tf2 = [&] { return std::get<0>(s2.run(tf::fetch(loss, step), tf::feed(x, xv), tf::feed(y, yv))); };
    tf::session s_expr{tf::session_options{.threads = 1}};
    auto run_expr = [&] {
        return std::get<0>(s_expr.run(tf::fetch(loss_e, step_e), tf::feed(x, xv), tf::feed(y, yv)));
    };

#ifdef TYPEFLOW_HAVE_TORCH
    torch::set_num_threads(1);
    torch::NoGradGuard* no_grad = nullptr;
    (void)no_grad;
    auto T = [](const mat& m) { return torch::from_blob(const_cast<float*>(m.data()), {m.rows(), m.cols()}).clone(); };
    auto Tv = [](const rowvec& v) { return torch::from_blob(const_cast<float*>(v.data()), {v.size()}).clone(); };
    std::vector<torch::Tensor> tp{T(ref.W1).requires_grad_(), Tv(ref.b1).requires_grad_(), T(ref.W2).requires_grad_(),
                                  Tv(ref.b2).requires_grad_(), T(ref.W3).requires_grad_(), Tv(ref.b3).requires_grad_()};
    const torch::Tensor tx = torch::from_blob(X.data(), {batch, 784});
    std::vector<std::int64_t> labels64(labels.begin(), labels.end());
    const torch::Tensor ty = torch::from_blob(labels64.data(), {batch}, torch::kInt64);
    auto run_torch = [&] {
        auto th1 = torch::relu(torch::addmm(tp[1], tx, tp[0]));
        auto th2 = torch::relu(torch::addmm(tp[3], th1, tp[2]));
        auto tl = torch::addmm(tp[5], th2, tp[4]);
        auto tloss = torch::nn::functional::cross_entropy(tl, ty);
        for (auto& p : tp) p.mutable_grad() = torch::Tensor();
        tloss.backward();
        torch::NoGradGuard guard;
        for (auto& p : tp) p.sub_(p.grad(), lr);
        return tloss.item<float>();
    };
#endif

    // correctness: one step from the same weights
    {
        const mat w1_before = ref.W1;
        const float le = ref.step(X, labels);
        const float lt = run_tf()[0];
        const double wl = std::abs(le - lt) / std::abs(le);
        const double w = bench::tolerance_ratio(W1.value().data(), ref.W1.data(), ref.W1.size(), 1e-4, 1e-6);
        const double w3 = bench::tolerance_ratio(W3.value().data(), ref.W3.data(), ref.W3.size(), 1e-4, 1e-6);
        if (wl > 1e-4 || w > 1 || w3 > 1) {
            std::fprintf(stderr, "mlp_train: typeflow differs from Eigen (loss %g vs %g; W1 %.3g, W3 %.3g x tolerance)\n",
                         lt, le, w, w3);
            return 1;
        }
        std::fprintf(stderr, "mlp_train: loss %g; typeflow == eigen after one step (W1 %.3g, W3 %.3g of tolerance)\n", lt,
                     w, w3);
#ifdef TYPEFLOW_HAVE_TORCH
        const float lq = run_torch();
        const double wq = bench::tolerance_ratio(tp[0].data_ptr<float>(), ref.W1.data(), ref.W1.size(), 1e-4, 1e-6);
        if (std::abs(lq - le) > 1e-4 * std::abs(le) || wq > 1) {
            std::fprintf(stderr, "mlp_train: libtorch differs from Eigen (loss %g vs %g; W1 %.3g x tolerance)\n", lq, le,
                         wq);
            return 1;
        }
        std::fprintf(stderr, "mlp_train: libtorch == eigen after one step (W1 %.3g of tolerance)\n", wq);
#endif
        (void)w1_before;
        // the tf::expr model: same loss, then the same step as the auto-typed one
        tf::session check;
        const auto [la, le2] = check.run(tf::fetch(loss, loss_e), tf::feed(x, xv), tf::feed(y, yv));
        const float l_auto = la.item(), l_expr = le2.item();
        if (std::abs(l_auto - l_expr) > 1e-6f * std::abs(l_auto)) {
            std::fprintf(stderr, "mlp_train: the tf::expr model's loss %g differs from %g\n", l_expr, l_auto);
            return 1;
        }
    }

    double sink = 0;
    std::vector<bench::contender> cs{
        {"typeflow", [&] { sink += run_tf()[0]; }},
        {"eigen", [&] { sink += ref.step(X, labels); }},
        {"typeflow_2t", [&] { sink += run_tf2()[0]; }},
    };
#ifdef TYPEFLOW_HAVE_TORCH
    cs.emplace_back("libtorch", [&] { sink += run_torch(); });
#endif
    cs.emplace_back("typeflow_expr", [&] { sink += run_expr()[0]; });
    bench::measure(cs);
    if (s.stats().rebinds != 1 || s.stats().plans_built != 1 || s2.stats().plans_built != 1) {
        std::fprintf(stderr, "mlp_train: the session re-planned (%zu plans, %zu rebinds)\n", s.stats().plans_built,
                     s.stats().rebinds);
        return 1;
    }
    bench::report_threads("mlp_train", cs[0], cs[1], cs[2], 2);
#ifdef TYPEFLOW_HAVE_TORCH
    bench::report("mlp_train", cs[0], cs[3]);  // typeflow= 1 thread
#else
    std::fprintf(stderr, "mlp_train: libtorch was not found at build time; that peer is skipped\n");
#endif
    bench::report("mlp_train_expr", cs.back(), cs[1]);  // layers behind tf::expr (typeflow= that model)
    std::fprintf(stderr, "  (checksum %g)\n", sink);
    return 0;
}
