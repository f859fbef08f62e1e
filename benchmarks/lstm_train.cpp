// benchmarks/lstm_train.cpp — an LSTM(128) layer's training step, timed in
// typeflow; the peer is TensorFlow's Keras (benchmarks/tensorflow/lstm_keras.py),
// run in the same invocation of scripts/bench_tf.sh, which joins the lines
// into ratios.
//
// Workload (at 1 and 2 threads, `lstm_train_step threads=<n> typeflow=<us>`):
//   lstm_train_step  LSTM(128) over sequences [64, 50, 64] (batch 64, 50
//                    steps, 64 features: an embedding's width), Dense(1),
//                    mean squared error, one Adam step (Keras: train_on_batch)
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <typeflow/layers/core.hpp>
#include <typeflow/layers/recurrent.hpp>
#include <typeflow/typeflow.hpp>

#include "bench_util.hpp"

namespace tf = typeflow;

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    if (!only.empty() && only != "lstm_train_step") return 0;
    std::mt19937 rng(7);
    std::normal_distribution<float> n01(0.f, 1.f);
    tf::tensor<float> xb({64, 50, 64}), yb({64, 1});
    for (long i = 0; i < xb.size(); ++i) xb[i] = n01(rng);
    for (long i = 0; i < yb.size(); ++i) yb[i] = n01(rng);
    for (int threads : {1, 2}) {
        tf::placeholder<"x", float, tf::shape<tf::dyn, 50, 64>> x;
        tf::placeholder<"y", float, tf::shape<tf::dyn, 1>> y;
        tf::layers::lstm<128>::bind<"lstm", tf::dims{tf::dyn, 50, 64}, float, tf::cpu> lstm;
        tf::layers::dense<1>::bind<"dense", tf::dims{tf::dyn, 128}, float, tf::cpu> dense;
        auto loss = tf::mean(tf::square(dense(lstm(x, tf::training), tf::training) - y));
        auto step = tf::train::adam(0.001f).minimize(loss);
        tf::session s{tf::session_options{.threads = threads}};
        std::vector<bench::contender> cs{
            {"typeflow", [&] { bench::do_not_optimize(s.run(tf::fetch(loss, step), tf::feed(x, xb), tf::feed(y, yb))); }}};
        bench::measure(cs);
        std::printf("lstm_train_step threads=%d typeflow=%.1f\n", threads, cs[0].median());
        std::fflush(stdout);
    }
}
