// Parameter-server training of a small MLP on Fisher's iris data: the
// variables live on the ps tasks (placed at compile time, the hidden layer's
// weights split over both), each worker trains on its share of the 120
// training flowers, and each synchronous step takes the first two of the
// three workers' gradients (one backup worker), so one slow worker does not
// hold the others. Worker 0 then pulls the trained values and reports the
// accuracy on the 30 held-out flowers (every fifth); it exits non-zero below
// 90%. Run with: typeflow-launch -n 3 --ps 2 build/dist_iris_ps
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/parameter_server.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "../data_sets.hpp"

namespace tf = typeflow;
namespace tfd = typeflow::dist;

int main() {
    // the data: features standardised, every fifth flower held out
    const examples::iris ds = examples::load_iris();
    std::vector<double> mean(4, 0), sd(4, 0);
    for (int i = 0; i < 150; ++i)
        for (int j = 0; j < 4; ++j) mean[j] += ds.x[i * 4 + j] / 150;
    for (int i = 0; i < 150; ++i)
        for (int j = 0; j < 4; ++j) sd[j] += (ds.x[i * 4 + j] - mean[j]) * (ds.x[i * 4 + j] - mean[j]) / 150;
    auto feature = [&](int i, int j) { return (ds.x[i * 4 + j] - mean[j]) / std::sqrt(sd[j]); };
// readme-begin
    tfd::transport t(tfd::cluster_spec::from_env());  // typeflow-launch -n 3 --ps 2: 3 workers, 2 ps tasks
    const bool is_ps = t.spec().task.type == tfd::role::ps;
    const int me = t.spec().task.index, workers = t.spec().size() - 2;

    // This worker's training flowers (i % 5 != 4, dealt round-robin), and the held-out ones.
    std::vector<double> xs, xt;
    std::vector<std::int32_t> ys, yt;
    for (int i = 0, k = 0; i < 150; ++i) {
        const bool held_out = i % 5 == 4, mine = !held_out && k++ % workers == me;
        if (!held_out && !mine) continue;
        for (int j = 0; j < 4; ++j) (held_out ? xt : xs).push_back(feature(i, j));
        (held_out ? yt : ys).push_back(ds.label[i]);
    }

    // Every task builds the same model; the ps tasks hold its variables.
    tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>> y;
    tf::variable<"w1", double, tf::shape<4, 16>> w1{tf::init::glorot_uniform{1}};
    tf::variable<"b1", double, tf::shape<16>> b1;
    tf::variable<"w2", double, tf::shape<16, 3>> w2{tf::init::glorot_uniform{2}};
    tf::variable<"b2", double, tf::shape<3>> b2;
    auto logits = tf::matmul(tf::tanh(tf::matmul(x, w1) + b1), w2) + b2;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y)) + 1e-2 * (tf::sum(tf::square(w1)) + tf::sum(tf::square(w2)));

    // Placed at compile time: greedy by bytes over 2 ps tasks, w1 split in two.
    using placement = tfd::ps_placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>>;
    auto training = tfd::parameter_servers<placement>(t, tf::train::adam(0.01)).minimize(loss);
    tf::session s;
    if (is_ps) {
        // synchronous steps of the first 2 of 3 workers' gradients: one backup worker
        training.serve(s, tfd::ps_mode::sync, /*backup_workers=*/1);
        return 0;
    }
    const auto n = static_cast<tf::index_t>(ys.size());
    for (int k = 0; k < 600; ++k) training.run(s, tf::feed(x, tf::view(xs, {n, 4})), tf::feed(y, tf::view(ys, {n})));
    training.pull();  // the trained values, from the ps tasks into this worker's variables
    training.finish();

    const auto m = static_cast<tf::index_t>(yt.size());
    auto predicted = s.run(tf::argmax<1>(logits), tf::feed(x, tf::view(xt, {m, 4})));
    int right = 0;
    for (tf::index_t i = 0; i < m; ++i) right += predicted[i] == yt[static_cast<std::size_t>(i)];
    const double accuracy = double(right) / double(m);
    if (me == 0)
        std::printf("iris on %d workers and 2 ps tasks (one backup): held-out accuracy %.1f%% (%d of %d)\n", workers,
                    100 * accuracy, right, static_cast<int>(m));
    return accuracy >= 0.9 ? 0 : 1;
// readme-end
}
