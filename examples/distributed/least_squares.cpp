// Data-parallel training with the distributed runtime: every task holds a
// shard of 64 noisy points around y = 3x - 1, the gradients of the mean
// squared error are summed across tasks with all_reduce, and every task
// applies the same update. All tasks end with the same weights, bit for bit,
// and those are the least-squares line of all 64 points (no shard alone has
// that line). Run it with the launcher:
//   build/typeflow-launch -n 4 build/dist_least_squares
// Exits 1 if the weights miss the closed-form fit or the tasks disagree.
// readme-begin
#include <typeflow/dist.hpp>

#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

namespace tfd = typeflow::dist;

int main() {
    // typeflow-launch sets TYPEFLOW_CONFIG: the cluster, this task, the secret.
    tfd::ring_collective comm(tfd::cluster_spec::from_env());
    const int rank = comm.rank(), tasks = comm.size();

    // Point i of 64: x = i/64, y = 3x - 1 + noise; task r holds i = r, r + tasks, ...
    const int points = 64;
    auto x_of = [](int i) { return static_cast<float>(i) / 64; };
    auto y_of = [&](int i) { return 3 * x_of(i) - 1 + 0.25f * std::sin(1.7f * static_cast<float>(i)); };
    std::vector<float> xs, ys;
    for (int i = rank; i < points; i += tasks) {
        xs.push_back(x_of(i));
        ys.push_back(y_of(i));
    }

    float w[2] = {0, 0}; // slope and intercept, the same on every task
    for (int step = 0; step < 600; ++step) {
        float grad[2] = {0, 0}; // this shard's part of the gradient
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const float err = w[0] * xs[i] + w[1] - ys[i];
            grad[0] += 2 * err * xs[i] / points;
            grad[1] += 2 * err / points;
        }
        comm.all_reduce(std::span<float>(grad), tfd::reduce_op::sum); // the whole data set's gradient
        w[0] -= 0.5f * grad[0];
        w[1] -= 0.5f * grad[1];
    }

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
