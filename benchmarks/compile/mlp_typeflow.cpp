// benchmarks/compile/mlp_typeflow.cpp — compile-time subject (see
// ../compile_time.sh): a 3-layer MLP forward pass 784-256-128-10 with ReLU,
// batch 256, in typeflow. A complete program: builds the model, runs it a few
// times through a session and prints a checksum of the logits.
// Its twin mlp_eigen.cpp computes the same model by hand in Eigen.
#include <cstdio>
#include <random>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    constexpr long batch = 256;
    tf::placeholder<"x", float, tf::shape<tf::dyn, 784>> x;
    tf::variable<"W1", float, tf::shape<784, 256>> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<256>> b1{tf::init::zeros{}};
    tf::variable<"W2", float, tf::shape<256, 128>> W2{tf::init::glorot_uniform{}};
    tf::variable<"b2", float, tf::shape<128>> b2{tf::init::zeros{}};
    tf::variable<"W3", float, tf::shape<128, 10>> W3{tf::init::glorot_uniform{}};
    tf::variable<"b3", float, tf::shape<10>> b3{tf::init::zeros{}};
    auto h1 = tf::relu(tf::matmul(x, W1) + b1);
    auto h2 = tf::relu(tf::matmul(h1, W2) + b2);
    auto logits = tf::matmul(h2, W3) + b3;

    tf::tensor<float> xb({batch, 784});
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (long i = 0; i < xb.size(); ++i) xb[i] = u(rng);

    tf::session s;
    double sum = 0;
    for (int it = 0; it < 5; ++it) {
        const tf::tensor<float> out = s.run(logits, tf::feed(x, xb));
        for (long i = 0; i < out.size(); ++i) sum += out[i];
    }
    std::printf("checksum %.6f\n", sum);
    return 0;
}
