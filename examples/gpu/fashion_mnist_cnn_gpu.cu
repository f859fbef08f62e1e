// examples/gpu/fashion_mnist_cnn_gpu.cu — the lectures' Keras CNN
// (examples/fashion_mnist_cnn.cpp) trained on the GPU: the model's input is
// layers::input_on<tf::gpu<0>, ...>, so its variables live in GPU memory and
// its ops run there (conv2d through cuDNN, pooling, cuBLAS, fused
// element-wise kernels, Adam); the pipeline's batches are host tensors, copied
// in at each step. Built by nvcc (TYPEFLOW_ENABLE_CUDA); exits 77 without a GPU.
//
//   fashion_mnist_cnn_gpu [epochs (2)]
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <typeflow/data.hpp>
#include <typeflow/models.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
namespace L = tf::layers;

using cnn = tf::models::sequential<L::input_on<tf::gpu<0>, float, 28, 28, 1>, L::conv2d<32, 3, L::relu>, L::max_pool2d<2>, L::flatten,
                                   L::dense<64, L::relu>, L::dense<10>>;

int main(int argc, char** argv) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("fashion_mnist_cnn_gpu: skipped: no CUDA device\n");
        return 77;
    }
    if (!tf::data::fashion_mnist_available()) {
        std::fprintf(stderr, "Fashion-MNIST is not in %s: apt-get install dataset-fashion-mnist\n", tf::data::fashion_mnist_dir);
        return 2;
    }
    const int epochs = argc > 1 ? std::atoi(argv[1]) : 2;
    const auto fashion = tf::data::load_fashion_mnist();
    const auto train = tf::data::from_tensors(fashion.train.images, fashion.train.labels).cache().shuffle(10000, 42).batch(64).prefetch(2);
    const auto test = tf::data::from_tensors(fashion.test.images, fashion.test.labels).batch(64);

    const tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits> loss;
    auto model = cnn{}.compile(loss, tf::optimizers::adam{}, tf::metrics::accuracy{});
    model.model().summary();
    model.fit(train, {.epochs = epochs});
    const auto result = model.evaluate(test);
    std::printf("Eval loss: %.4f, Eval accuracy: %.4f (after %d epochs on the GPU)\n", result.at("loss"), result.at("accuracy"), epochs);
    return result.at("accuracy") >= 0.89 ? 0 : 1;
}
