// The main example, shown in README.md: the lines between the markers are
// checked to appear verbatim there (test docs.readme_in_sync).
// readme-begin
// examples/fashion_mnist_cnn.cpp — the TensorFlow lectures' Keras CNN in C++:
// Fashion-MNIST (Debian's dataset-fashion-mnist), an input pipeline with
// cache, shuffle, batch and prefetch, Conv2D-MaxPooling2D-Flatten-Dense-Dense
// with shapes checked at compile time, Adam, a progress bar, TensorBoard
// events, a checkpoint per epoch, a learning-rate schedule and a callback of
// our own; then the last checkpoint is loaded into a fresh model and
// evaluated on the test images.
//
//   fashion_mnist_cnn [epochs (2)] [output directory (./fashion_mnist_cnn_output)]
#include <cstdio>
#include <cstdlib>
#include <string>

#include <typeflow/data.hpp>
#include <typeflow/models.hpp>

namespace tf = typeflow;
namespace L = tf::layers;

// model = Sequential([Conv2D(32, 3, activation='relu', input_shape=(28, 28, 1)), MaxPooling2D(),
//                     Flatten(), Dense(64, activation='relu'), Dense(10)])
using cnn = tf::models::sequential<L::input<float, 28, 28, 1>, L::conv2d<32, 3, L::relu>, L::max_pool2d<2>, L::flatten,
                                   L::dense<64, L::relu>, L::dense<10>>;
static_assert(cnn::params == 347146);  // what Keras' model.summary() counts

// The lecture's schedule: 1e-3 for three epochs, 1e-4 until the seventh, then 1e-5.
double decay(int epoch, double) { return epoch < 3 ? 1e-3 : epoch < 7 ? 1e-4 : 1e-5; }

// A callback of our own: prints the learning rate at the end of every epoch.
struct print_lr : tf::models::callback {
    void on_epoch_end(int epoch, tf::models::logs&) override {
        std::printf("Learning rate for epoch %d is %g\n", epoch + 1, model->learning_rate());
    }
};

int main(int argc, char** argv) {
    const int epochs = argc > 1 ? std::atoi(argv[1]) : 2;
    const std::string out = argc > 2 ? argv[2] : "fashion_mnist_cnn_output";
    if (!tf::data::fashion_mnist_available()) {
        std::fprintf(stderr, "Fashion-MNIST is not in %s: apt-get install dataset-fashion-mnist\n",
                     tf::data::fashion_mnist_dir);
        return 2;
    }
    // Images scaled to [0, 1], [N, 28, 28, 1]; labels int32 0..9.
    const auto fashion = tf::data::load_fashion_mnist();
    const auto train = tf::data::from_tensors(fashion.train.images, fashion.train.labels)
                           .cache()
                           .shuffle(10000, 42)
                           .batch(64)
                           .prefetch(2);
    const auto test = tf::data::from_tensors(fashion.test.images, fashion.test.labels).batch(64);

    const tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits> loss;
    auto model = cnn{}.compile(loss, tf::optimizers::adam{}, tf::metrics::accuracy{});
    model.model().summary();

    const auto history = model.fit(train, {.epochs = epochs,
                                           .callbacks = {tf::models::tensorboard(out + "/logs"),
                                                         tf::models::model_checkpoint(out + "/checkpoints"),
                                                         tf::models::learning_rate_scheduler(decay),
                                                         std::make_shared<print_lr>()}});

    // model.load_weights(tf.train.latest_checkpoint(checkpoint_dir)); model.evaluate(eval_dataset)
    auto restored = cnn{}.compile(loss, tf::optimizers::adam{}, tf::metrics::accuracy{});
    restored.load_weights(*tf::io::latest_checkpoint(out + "/checkpoints"));
    const auto result = restored.evaluate(test);
    std::printf("Eval loss: %.4f, Eval accuracy: %.4f (after %d epochs; training accuracy %.4f)\n", result.at("loss"),
                result.at("accuracy"), epochs, history["accuracy"].back());
    return 0;
}
// readme-end
