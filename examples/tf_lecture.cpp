// The first program of the classic TensorFlow lecture, in typeflow:
//
//   W = tf.Variable(tf.random_uniform((100, 784), -1, 1))
//   b = tf.Variable(tf.zeros((100, 1)))
//   x = tf.placeholder(tf.float32, (784, None))
//   h = tf.nn.relu(tf.matmul(W, x) + b)
//   for step in range(5): sess.run(h, {x: batch})
//
// Each batch's result is checked against a plain loop; the program exits
// non-zero on a mismatch.
#include <cmath>
#include <cstdio>
#include <random>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    tf::variable<"W", float, tf::shape<100, 784>> W{tf::init::uniform{-1.0, 1.0}};
    tf::variable<"b", float, tf::shape<100, 1>> b{tf::init::zeros{}};
    tf::placeholder<"x", float, tf::shape<784, tf::dyn>> x;

    auto h = tf::relu(tf::matmul(W, x) + b);  // a type: nothing runs yet

    tf::session sess;
    std::mt19937 rng(2024);
    std::uniform_real_distribution<float> pixel(0.f, 1.f);
    int bad = 0;
    for (int step = 0; step < 5; ++step) {
        const tf::index_t batch = 8 + step;  // a run-time batch size
        tf::tensor<float> xb({784, batch});
        for (tf::index_t i = 0; i < xb.size(); ++i) xb[i] = pixel(rng);

        tf::tensor<float> hv = sess.run(h, tf::feed(x, xb));

        double mean = 0, worst = 0;
        for (tf::index_t r = 0; r < 100; ++r)
            for (tf::index_t c = 0; c < batch; ++c) {
                double ref = b.value()(r, 0);
                for (tf::index_t k = 0; k < 784; ++k) ref += double(W.value()(r, k)) * xb(k, c);
                ref = std::max(ref, 0.0);
                worst = std::max(worst, std::abs(ref - hv(r, c)) / (1 + std::abs(ref)));
                mean += hv(r, c);
            }
        mean /= double(100 * batch);
        std::printf("step %d: h is [%lld x %lld], mean activation %.4f, max rel. error vs loop %.2e\n", step,
                    static_cast<long long>(hv.dims()[0]), static_cast<long long>(hv.dims()[1]), mean, worst);
        if (!(worst < 1e-4)) ++bad;  // float sums of 784 products
    }
    return bad == 0 ? 0 : 1;
}
