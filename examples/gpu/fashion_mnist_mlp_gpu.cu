// readme-begin
// examples/gpu/fashion_mnist_mlp_gpu.cu — a 784-256-128-10 MLP trained on
// Fashion-MNIST on the GPU: the graph's leaves are placed on tf::gpu<0>, so
// every op runs there (fused element-wise kernels, cuBLAS, reductions) and
// the variables live in GPU memory; each run copies its feeds in and its
// fetches out. Built by nvcc (TYPEFLOW_ENABLE_CUDA); exits 77 without a GPU.
//
//   fashion_mnist_mlp_gpu [epochs (3)]
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <typeflow/data/mnist.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
using G = tf::gpu<0>;

int main(int argc, char** argv) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("fashion_mnist_mlp_gpu: skipped: no CUDA device\n");
        return 77;
    }
    if (!tf::data::fashion_mnist_available()) {
        std::fprintf(stderr, "Fashion-MNIST is not in %s: apt-get install dataset-fashion-mnist\n", tf::data::fashion_mnist_dir);
        return 2;
    }
    const int epochs = argc > 1 ? std::atoi(argv[1]) : 3;
    const auto fashion = tf::data::load_fashion_mnist();  // images in [0, 1], [N, 28, 28, 1]

    tf::placeholder<"x", float, tf::shape<tf::dyn, 784>, G> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, G> y;
    tf::variable<"W1", float, tf::shape<784, 256>, G> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<256>, G> b1;
    tf::variable<"W2", float, tf::shape<256, 128>, G> W2{tf::init::glorot_uniform{}};
    tf::variable<"b2", float, tf::shape<128>, G> b2;
    tf::variable<"W3", float, tf::shape<128, 10>, G> W3{tf::init::glorot_uniform{}};
    tf::variable<"b3", float, tf::shape<10>, G> b3;
    auto logits = tf::matmul(tf::relu(tf::matmul(tf::relu(tf::matmul(x, W1) + b1), W2) + b2), W3) + b3;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::momentum(0.05f, {.momentum = 0.9}).minimize(loss);
    auto correct = tf::sum(tf::cast<float>(tf::equal(tf::argmax<1>(logits), tf::cast<std::int64_t>(y))));

    tf::session s;
    const long batch = 128, n = fashion.train.labels.size();
    for (int epoch = 0; epoch < epochs; ++epoch) {
        double total = 0;
        long steps = 0;
        for (long i = 0; i + batch <= n; i += batch, ++steps) {
            const tf::tensor_view<const float> xb{fashion.train.images.data() + i * 784, tf::dims{batch, 784}};
            const tf::tensor_view<const std::int32_t> yb{fashion.train.labels.data() + i, tf::dims{batch}};
            total += std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xb), tf::feed(y, yb)))[0];
        }
        std::printf("epoch %d: loss %.4f\n", epoch + 1, total / static_cast<double>(steps));
    }
    const long m = fashion.test.labels.size();
    const tf::tensor_view<const float> xt{fashion.test.images.data(), tf::dims{m, 784}};
    const double accuracy = s.run(correct, tf::feed(x, xt), tf::feed(y, fashion.test.labels))[0] / static_cast<double>(m);
    std::printf("test accuracy %.4f\n", accuracy);
    return accuracy > 0.85 ? 0 : 1;
}
// readme-end
