// benchmarks/cnn_train.cpp — the TensorFlow lecture's CNN on 28x28x1 images
// (Conv2D(32, 3, relu), MaxPooling2D(), Flatten(), Dense(64, relu), Dense(10);
// sparse cross entropy from logits, Adam), timed in typeflow; the peer is
// TensorFlow's Keras, timed by benchmarks/tensorflow/cnn_keras.py in the same
// run of scripts/bench_tf.sh, which joins the lines into ratios.
//
// Workloads (each at 1 and 2 threads, `<workload> threads=<n> typeflow=<us>`):
//   cnn_train_step   one training step on a batch of 64 (Keras: train_on_batch)
//   conv2d_fwd_bwd   conv2d [64,28,28,1] x [3,3,1,32] forward, and both
//                    gradients, alone (Keras: the same in a tf.function)
//   cnn_fit_epoch    one epoch of fit over 60,000 images in batches of 64
//                    (Fashion-MNIST when installed, else random images of the
//                    same shape), shuffled every epoch (Keras: model.fit on a
//                    tf.data pipeline cache().shuffle().batch(64))
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <typeflow/data.hpp>
#include <typeflow/models.hpp>

#include "bench_util.hpp"

namespace tf = typeflow;
namespace L = tf::layers;

using cnn = tf::models::sequential<L::input<float, 28, 28, 1>, L::conv2d<32, 3, L::relu>, L::max_pool2d<2>, L::flatten,
                                   L::dense<64, L::relu>, L::dense<10>>;
using ce = tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>;

namespace {
tf::tensor<float> random_images(long n, std::mt19937& rng) {
    tf::tensor<float> x({n, 28, 28, 1});
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (long i = 0; i < x.size(); ++i) x[i] = u(rng);
    return x;
}
tf::tensor<std::int32_t> random_labels(long n, std::mt19937& rng) {
    tf::tensor<std::int32_t> y({n});
    for (long i = 0; i < n; ++i) y[i] = static_cast<std::int32_t>(rng() % 10);
    return y;
}
}  // namespace

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    std::mt19937 rng(7);
    const tf::tensor<float> xb = random_images(64, rng);
    const tf::tensor<std::int32_t> yb = random_labels(64, rng);

    for (int threads : {1, 2}) {
        if (only.empty() || only == "cnn_train_step") {
            auto model = cnn{}.compile(ce{}, tf::optimizers::adam{}, tf::metrics::accuracy{});
            model.set_threads(threads);
            std::vector<bench::contender> cs{{"typeflow", [&] { bench::do_not_optimize(model.train_on_batch(xb, yb)); }}};
            bench::measure(cs);
            std::printf("cnn_train_step threads=%d typeflow=%.1f\n", threads, cs[0].median());
            std::fflush(stdout);
        }
        if (only.empty() || only == "conv2d_fwd_bwd") {
            tf::placeholder<"x", float, tf::shape<tf::dyn, 28, 28, 1>> x;
            tf::variable<"k", float, tf::shape<3, 3, 1, 32>> k{tf::init::glorot_uniform{}};
            auto y = tf::conv2d(x, k);
            auto loss = tf::sum(y);
            auto [dx, dk] = tf::grad(loss, x, k);
            tf::session s{tf::session_options{.threads = threads}};
            std::vector<bench::contender> cs{
                {"typeflow", [&] { bench::do_not_optimize(s.run(tf::fetch(y, dx, dk), tf::feed(x, xb))); }}};
            bench::measure(cs);
            std::printf("conv2d_fwd_bwd threads=%d typeflow=%.1f\n", threads, cs[0].median());
            std::fflush(stdout);
        }
    }
    if (only.empty() || only == "cnn_fit_epoch") {
        const std::string dir = "/usr/share/datasets/fashion-mnist";
        tf::tensor<float> images;
        tf::tensor<std::int32_t> labels;
        try {
            auto train = tf::data::load_fashion_mnist(tf::data::mnist_options{}, dir).train;
            images = std::move(train.images);
            labels = std::move(train.labels);
        } catch (const tf::error& e) {
            std::fprintf(stderr, "cnn_fit_epoch: %s; using random images\n", e.what());
            images = random_images(60000, rng);
            labels = random_labels(60000, rng);
        }
        for (int threads : {1, 2}) {
            auto ds = tf::data::from_tensors(images, labels).cache().shuffle(60000, 1).batch(64);
            auto model = cnn{}.compile(ce{}, tf::optimizers::adam{}, tf::metrics::accuracy{});
            model.set_threads(threads);
            model.fit(ds, {.epochs = 1, .verbose = 0});  // warm-up: plans, caches
            std::vector<double> us;
            for (int r = 0; r < bench::env_int("BENCH_EPOCHS", 3); ++r) {
                const auto t0 = bench::clock_type::now();
                model.fit(ds, {.epochs = 1, .verbose = 0});
                us.push_back(std::chrono::duration<double, std::micro>(bench::clock_type::now() - t0).count());
            }
            std::sort(us.begin(), us.end());
            std::fprintf(stderr, "  [typeflow] cnn_fit_epoch threads=%d: %zu epochs, min %.0f us, max %.0f us\n", threads,
                         us.size(), us.front(), us.back());
            std::printf("cnn_fit_epoch threads=%d typeflow=%.1f\n", threads, us[us.size() / 2]);
            std::fflush(stdout);
        }
    }
}
