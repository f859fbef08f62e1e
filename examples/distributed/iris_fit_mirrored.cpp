// A Keras-style model trained with fit() on several tasks (TensorFlow's
// MultiWorkerMirroredStrategy): the optimizer is wrapped in
// tfd::mirrored(comm, ...), each task feeds its shard of Fisher's iris
// training flowers, and every step averages the gradients, the loss and the
// accuracy over all tasks' examples, so every task holds the same weights.
// The chief logs one line per epoch (verbose 2) and reports the accuracy on the 30
// held-out flowers (every fifth); each task exits non-zero below 90%.
// Run with: typeflow-launch -n 2 build/dist_iris_fit_mirrored
#include <typeflow/data.hpp>
#include <typeflow/dist.hpp>
#include <typeflow/models.hpp>
#include <typeflow/distributed/mirrored.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "../data_sets.hpp"

namespace tf = typeflow;
namespace tfd = typeflow::dist;
namespace L = tf::layers;

int main() {
    // the data: features standardised; every fifth flower held out
    const examples::iris ds = examples::load_iris();
    double mean[4] = {}, sd[4] = {};
    for (int i = 0; i < 150; ++i)
        for (int j = 0; j < 4; ++j) mean[j] += ds.x[i * 4 + j] / 150;
    for (int i = 0; i < 150; ++i)
        for (int j = 0; j < 4; ++j) sd[j] += (ds.x[i * 4 + j] - mean[j]) * (ds.x[i * 4 + j] - mean[j]) / 150;
    tf::tensor<float> x_train({120, 4}), x_test({30, 4});
    tf::tensor<std::int32_t> y_train({120}), y_test({30});
    for (int i = 0, tr = 0, te = 0; i < 150; ++i) {
        const bool held_out = i % 5 == 4;
        const int k = held_out ? te++ : tr++;
        for (int j = 0; j < 4; ++j)
            (held_out ? x_test : x_train)[k * 4 + j] = static_cast<float>((ds.x[i * 4 + j] - mean[j]) / std::sqrt(sd[j]));
        (held_out ? y_test : y_train)[k] = ds.label[i];
    }
// readme-begin
    tfd::ring_collective comm(tfd::cluster_spec::from_env());  // typeflow-launch -n 2
    const int rank = comm.rank(), tasks = comm.size();

    using net = tf::models::sequential<L::input<float, 4>, L::dense<16, L::relu>, L::dense<3>>;
    auto model = net{}.compile(tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>{},
                               tfd::mirrored(comm, tf::optimizers::adam{.learning_rate = 0.01}),
                               tf::metrics::accuracy{});

    // Each task's share of the 120 flowers, in batches that together make
    // one global batch of 24 per step; the first step copies the chief's
    // initial weights to every task.
    const auto train = tf::data::from_tensors(x_train, y_train).shard(tasks, rank).shuffle(120, 7).batch(24 / tasks);
    const auto h = model.fit(train, {.epochs = 40, .verbose = rank == 0 ? 2 : 0});

    const auto test = model.evaluate(tf::data::from_tensors(x_test, y_test).batch(30));
    if (rank == 0)
        std::printf("%d tasks: training loss %.3f, accuracy %.3f; held-out accuracy %.3f\n", tasks, h["loss"].back(),
                    h["accuracy"].back(), test.at("accuracy"));
    return test.at("accuracy") >= 0.9 ? 0 : 1;
// readme-end
}
