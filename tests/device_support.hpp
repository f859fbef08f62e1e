// Graphs that the device tests (test_device_memory.cpp, cuda/test_cuda.cu)
// run on a device D and on the cpu and compare.
#pragma once
#include <typeflow/typeflow.hpp>

#include <vector>

namespace tftest {
namespace tf = typeflow;

/// Four steps of each optimizer with slots (adam, rmsprop, adagrad, Nesterov
/// momentum) on a small loss, from weights w0, on device D: the final weights
/// of each, one after the other.
template <class D>
std::vector<float> optimize_on(const tf::tensor<float>& w0, const tf::tensor<float>& xv) {
    std::vector<float> out;
    const auto run = [&](auto make_opt) {
        tf::placeholder<"x", float, tf::shape<4, 3>, D> x;
        tf::variable<"w", float, tf::shape<3, 2>, D> w;
        w.load(w0.view());
        auto loss = tf::sum(tf::tanh(tf::matmul(x, w)) * tf::matmul(x, w));
        auto step = make_opt().minimize(loss);
        tf::session s;
        for (int i = 0; i < 4; ++i) s.run(step, tf::feed(x, xv));
        for (float v : w.value().to_vector()) out.push_back(v);
    };
    run([] { return tf::train::adam(0.05f); });
    run([] { return tf::train::rmsprop(0.05f); });
    run([] { return tf::train::adagrad(0.1f); });
    run([] { return tf::train::momentum(0.1f, {.momentum = 0.9, .nesterov = true}); });
    return out;
}

}  // namespace tftest
