// The custom training loop shown in README.md: the lines between the markers
// are checked to appear verbatim there (test docs.readme_in_sync).
// readme-begin
#include <cstdio>

#include <typeflow/data.hpp>
#include <typeflow/models.hpp>

namespace tf = typeflow;
namespace L = tf::layers;

using cnn = tf::models::sequential<L::input<float, 28, 28, 1>, L::conv2d<32, 3, L::relu>, L::max_pool2d<2>, L::flatten,
                                   L::dense<64, L::relu>, L::dense<10>>;

int main() {
    if (!tf::data::fashion_mnist_available()) return 2;  // apt-get install dataset-fashion-mnist
    const auto fashion = tf::data::load_fashion_mnist();
    const auto train = tf::data::from_tensors(fashion.train.images, fashion.train.labels).take(10000).shuffle(10000, 1).batch(64);
    const auto test = tf::data::from_tensors(fashion.test.images, fashion.test.labels).batch(1000);

    // The model called on a placeholder, in training and in inference mode.
    cnn model;
    cnn::input_placeholder images;
    tf::placeholder<"labels", std::int32_t, tf::shape<tf::dyn>> labels;
    auto logits = model(images, tf::training);
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, labels));

    // GradientTape + apply_gradients: the gradients of every trainable
    // variable the loss reaches (tf::grad), and one op applying them.
    auto optimizer = tf::train::adam(1e-3f);
    auto grads_and_vars = optimizer.compute_gradients(loss);
    auto train_step = optimizer.apply_gradients(grads_and_vars);
    auto predictions = model(images, tf::inference);

    tf::metrics::mean train_loss;
    tf::metrics::sparse_categorical_accuracy train_accuracy, test_accuracy;
    tf::session s;
    for (auto& [x, y] : train) {
        auto [l, out, _] = s.run(tf::fetch(loss, logits, train_step), tf::feed(images, x), tf::feed(labels, y));
        train_loss.update_state(l.item());
        train_accuracy.update_state(y, out);
    }
    for (auto& [x, y] : test) test_accuracy.update_state(y, s.run(predictions, tf::feed(images, x)));
    std::printf("loss %.4f, accuracy %.4f, test accuracy %.4f\n", train_loss.result(), train_accuracy.result(),
                test_accuracy.result());
}
// readme-end
