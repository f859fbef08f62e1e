// The main example's CNN (examples/fashion_mnist_cnn.cpp, the lectures' Keras
// model) trained with parameter servers (TensorFlow's between-graph
// replication): every task builds the same model from its layers; its
// variables live on the 2 ps tasks, placed at compile time (greedy by bytes,
// each variable in 2 fixed-size shards), and Adam's update runs there. Each
// worker reads its shard of the 60,000 Fashion-MNIST training images in
// batches of 64 / workers, and each synchronous step averages all workers'
// gradients: one global batch of 64 a step, as the single-process example
// trains. Worker 0 then pulls the trained weights and reports the accuracy on
// the 10,000 test images. Exits 2 without the data set, 1 below 0.85 after a
// full epoch (2 workers: 0.879).
//
//   typeflow-launch -n 2 --ps 2 build/dist_fashion_mnist_cnn_ps [steps (one epoch)]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include <typeflow/data.hpp>
#include <typeflow/dist.hpp>
#include <typeflow/models.hpp>
#include <typeflow/distributed/parameter_server.hpp>

namespace tf = typeflow;
namespace tfd = typeflow::dist;
namespace L = tf::layers;

using cnn = tf::models::sequential<L::input<float, 28, 28, 1>, L::conv2d<32, 3, L::relu>, L::max_pool2d<2>, L::flatten,
                                   L::dense<64, L::relu>, L::dense<10>>;

int main(int argc, char** argv) {
    const tf::index_t steps = argc > 1 ? std::atol(argv[1]) : -1;  // -1: one pass over the worker's shard
    if (!tf::data::fashion_mnist_available()) {
        std::fprintf(stderr, "Fashion-MNIST is not in %s: apt-get install dataset-fashion-mnist\n",
                     tf::data::fashion_mnist_dir);
        return 2;
    }
    tfd::transport t(tfd::cluster_spec::from_env());  // typeflow-launch -n 2 --ps 2: 2 workers, 2 ps tasks
    const bool is_ps = t.spec().task.type == tfd::role::ps;
    const int me = t.spec().task.index, workers = t.spec().size() - 2;
    if (64 % workers != 0) {
        if (me == 0 && !is_ps) std::fprintf(stderr, "the global batch of 64 does not split over %d workers\n", workers);
        return 2;
    }

    // The model's layers own "conv2d/kernel", ..., "dense_1/bias"; the ps tasks hold them.
    const cnn model;
    const auto& x = std::get<0>(cnn::input_placeholders());  // [?, 28, 28, 1]
    tf::placeholder<"labels", std::int32_t, tf::shape<tf::dyn>> y;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(model(x, tf::training), y));
    using placement = tfd::ps_placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>>;
    auto training = tfd::parameter_servers<placement>(t, tf::train::adam(1e-3)).minimize(loss);
    tf::session s;
    if (is_ps) {
        training.serve(s, tfd::ps_mode::sync);  // until every worker has finished
        return 0;
    }

    const auto fashion = tf::data::load_fashion_mnist();
    const auto train = tf::data::from_tensors(fashion.train.images, fashion.train.labels)
                           .shard(workers, me)
                           .shuffle(10000, 42)
                           .batch(64 / workers)
                           .take(steps);
    int done = 0;
    for (const auto& e : train) training.run(s, tf::feed(x, std::get<0>(e)), tf::feed(y, std::get<1>(e))), ++done;
    training.pull();  // the trained values, from the ps tasks into this worker's variables
    training.finish();
    if (me != 0) return 0;

    const auto predicted = tf::argmax<1>(model(x, tf::inference));
    tf::index_t right = 0;
    for (const auto& e : tf::data::from_tensors(fashion.test.images, fashion.test.labels).batch(1000)) {
        const auto p = s.run(predicted, tf::feed(x, std::get<0>(e)));
        const auto& labels = std::get<1>(e);
        for (tf::index_t i = 0; i < labels.size(); ++i) right += p[i] == labels[i];
    }
    const double accuracy = static_cast<double>(right) / static_cast<double>(fashion.test.labels.size());
    std::printf("%d workers, 2 ps tasks, %d steps: Eval accuracy: %.4f\n", workers, done, accuracy);
    return steps >= 0 || accuracy >= 0.85 ? 0 : 1;
}
