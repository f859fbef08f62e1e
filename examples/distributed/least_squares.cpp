// Data-parallel training of a typeflow graph with the distributed runtime:
// every task holds a shard of 64 noisy points around y = 3x - 1, the mirrored
// strategy averages the tasks' gradients of the mean squared error with
// all_reduce, and every task applies the same update. All tasks end with the
// same weights, bit for bit, and those are the least-squares line of all 64
// points (no shard alone has that line). Run it with the launcher:
//   build/typeflow-launch -n 4 build/dist_least_squares
// Exits 1 if the weights miss the closed-form fit or the tasks disagree.
// readme-begin
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/mirrored.hpp>

#include <cmath>
#include <cstdio>
#include <span>

namespace tf = typeflow;
namespace tfd = typeflow::dist;

int main() {
    // typeflow-launch sets TYPEFLOW_CONFIG: the cluster, this task, the secret.
    tfd::ring_collective comm(tfd::cluster_spec::from_env());
    const int rank = comm.rank(), tasks = comm.size();

    // Point i of 64: x = i/64, y = 3x - 1 + noise; task r holds i = r, r + tasks, ...
    const int points = 64;
    auto x_of = [](int i) { return static_cast<float>(i) / 64; };
    auto y_of = [&](int i) { return 3 * x_of(i) - 1 + 0.25f * std::sin(1.7f * static_cast<float>(i)); };
    const tf::index_t mine = (points - rank + tasks - 1) / tasks;
    tf::tensor<float> xs({mine}), ys({mine});
    for (int i = rank, k = 0; i < points; i += tasks, ++k) {
        xs[k] = x_of(i);
        ys[k] = y_of(i);
    }

    // The model and its loss on this task's points.
    tf::placeholder<"x", float, tf::shape<tf::dyn>> x;
    tf::placeholder<"y", float, tf::shape<tf::dyn>> y;
    tf::variable<"slope", float, tf::shape<>> a;
    tf::variable<"intercept", float, tf::shape<>> b;
    auto loss = tf::mean(tf::square(x * a + b - y));

    // Each step averages the tasks' gradients with all_reduce, weighted by
    // their points, and applies the same update everywhere.
    auto step = tfd::mirrored(comm, tf::train::sgd(0.5f)).minimize(loss);
    step.broadcast_variables();  // start from the chief's values
    tf::session s;
    for (int k = 0; k < 600; ++k) step.run(s, tf::feed(x, xs), tf::feed(y, ys));
    const float w[2] = {a.value().item(), b.value().item()};

    // The reference: the closed-form least-squares line of all points.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < points; ++i) {
        sx += x_of(i), sy += y_of(i), sxx += double(x_of(i)) * x_of(i), sxy += double(x_of(i)) * y_of(i);
    }
    const double slope = (points * sxy - sx * sy) / (points * sxx - sx * sx), intercept = (sy - slope * sx) / points;
    const bool fit = std::fabs(w[0] - slope) < 1e-3 && std::fabs(w[1] - intercept) < 1e-3;

    // Every task holds the same bits: the largest and smallest agree.
    float hi[2] = {w[0], w[1]}, lo[2] = {w[0], w[1]};
    comm.all_reduce(std::span<float>(hi), tfd::reduce_op::max);
    comm.all_reduce(std::span<float>(lo), tfd::reduce_op::min);
    const bool same = hi[0] == lo[0] && hi[1] == lo[1];
    if (rank == 0)
        std::printf("y = %.4f x %+.4f on %d tasks (least squares: %.4f x %+.4f; same on all tasks: %s)\n", w[0], w[1],
                    tasks, slope, intercept, same ? "yes" : "no");
    return same && fit ? 0 : 1;
}
// readme-end
