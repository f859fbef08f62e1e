// Mirrored data parallelism (typeflow/distributed/mirrored.hpp), run under
// typeflow-launch with 1 to 4 tasks. Every task trains a small MLP (double
// precision, Adam) on its rows of one global batch through the mirrored
// strategy, and the same model on the whole batch in one process (its own
// variables, its own session) as the reference. Checks, after every step:
// the mirrored loss equals the reference loss; at the end: every weight
// equals the reference within summation-order tolerance, and every task
// holds the same bits (all_reduce max and min agree). The mirrored model
// starts from rank-dependent values that broadcast_variables replaces with
// the chief's. Also a float model with momentum, and a step in which one
// task has no rows, buckets summed after the run, tasks whose buckets differ
// (an error on every task), buckets small enough that every gradient's all_reduce
// is a call of its own, and a first layer whose gradient comes in chunks of rows.
//
//   mirrored_test <global batch> <steps>
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/mirrored.hpp>

#include "mlp_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

namespace tf = typeflow;
namespace tfd = typeflow::dist;

namespace {
using tfd_test::expect;
using tfd_test::fill_rows;
using tfd_test::init;
using tfd_test::max_rel_diff;
using tfd_test::mlp_loss;
using tfd_test::bits_agree;
template <class T, tf::fixed_string P, tf::index_t H = 8, class Opt>  // H: hidden units
void train(tfd::collective& c, int batch, int steps, Opt opt, double tol, const char* what, bool one_empty,
           tfd::mirrored_options o = {}, std::size_t buckets = 2) {
    const int rank = c.rank(), tasks = c.size();
    tf::placeholder<tf::concat<P, "x">(), T, tf::shape<tf::dyn, 4>> x;
    tf::placeholder<tf::concat<P, "y">(), T, tf::shape<tf::dyn, 1>> y;
    tf::variable<tf::concat<P, "w1">(), T, tf::shape<4, H>> w1;
    tf::variable<tf::concat<P, "b1">(), T, tf::shape<H>> b1;
    tf::variable<tf::concat<P, "w2">(), T, tf::shape<H, 1>> w2;
    tf::variable<tf::concat<P, "b2">(), T, tf::shape<1>> b2;
    tf::variable<tf::concat<P, "ref_w1">(), T, tf::shape<4, H>> r1;
    tf::variable<tf::concat<P, "ref_b1">(), T, tf::shape<H>> rb1;
    tf::variable<tf::concat<P, "ref_w2">(), T, tf::shape<H, 1>> r2;
    tf::variable<tf::concat<P, "ref_b2">(), T, tf::shape<1>> rb2;
    init(w1, rank), init(b1, rank + 10), init(w2, rank + 20), init(b2, rank + 30);
    init(r1, 0), init(rb1, 10), init(r2, 20), init(rb2, 30);  // the chief's values

    // this task's rows: i = rank, rank + tasks, ... (with one_empty, the last
    // task has none: its rows go to the chief)
    std::vector<int> mine, all;
    for (int i = 0; i < batch; ++i) {
        all.push_back(i);
        const int owner = one_empty && i % tasks == tasks - 1 && tasks > 1 ? 0 : i % tasks;
        if (owner == rank) mine.push_back(i);
    }
    tf::tensor<T> xm, ym, xa, ya;
    fill_rows(mine, xm, ym);
    fill_rows(all, xa, ya);

    auto loss = mlp_loss(x, y, w1, b1, w2, b2);
    auto step = tfd::mirrored(c, opt, o).minimize(loss);
    expect(step.buckets() == buckets, std::string(what) + ": " + std::to_string(step.buckets()) + " all_reduce calls a step, not " +
                                          std::to_string(buckets));
    step.broadcast_variables();
    auto ref_loss = mlp_loss(x, y, r1, rb1, r2, rb2);
    auto ref_step = opt.minimize(ref_loss);

    tf::session s, ref;
    double worst_loss = 0, first = 0;
    for (int k = 0; k < steps; ++k) {
        const double l = step.run(s, tf::feed(x, xm), tf::feed(y, ym));
        const auto [rl, done] = ref.run(tf::fetch(ref_loss, ref_step), tf::feed(x, xa), tf::feed(y, ya));
        (void)done;
        if (k == 0) first = l;
        worst_loss = std::max(worst_loss, std::fabs(l - static_cast<double>(rl[0])) / std::max(1.0, std::fabs(l)));
    }
    const double worst = std::max({max_rel_diff(w1, r1), max_rel_diff(b1, rb1), max_rel_diff(w2, r2), max_rel_diff(b2, rb2)});
    const bool same = bits_agree(c, w1) && bits_agree(c, b1) && bits_agree(c, w2) && bits_agree(c, b2);
    const auto [l_end] = ref.run(tf::fetch(ref_loss), tf::feed(x, xa), tf::feed(y, ya));
    expect(static_cast<double>(l_end[0]) < first, std::string(what) + ": the loss did not go down");
    expect(worst <= tol, std::string(what) + ": weights differ from single-process training by " + std::to_string(worst));
    expect(worst_loss <= tol, std::string(what) + ": losses differ by " + std::to_string(worst_loss));
    expect(same, std::string(what) + ": the tasks' weights differ");
    if (rank == 0)
        std::printf("mirrored %s: tasks=%d batch=%d rows_here=%zu steps=%d max_weight_diff=%.3g max_loss_diff=%.3g "
                    "final_loss=%.6f identical=%s\n",
                    what, tasks, batch, mine.size(), steps, worst, worst_loss, static_cast<double>(l_end[0]),
                    same ? "yes" : "NO");
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: mirrored_test <global batch> <steps>\n");
        return 2;
    }
    const int batch = std::atoi(argv[1]), steps = std::atoi(argv[2]);
    try {
        tfd::ring_collective c(tfd::cluster_spec::from_env());
        train<double, "d/">(c, batch, steps, tf::train::adam(0.01), 1e-10, "double adam", false);
        train<float, "f/">(c, batch, steps, tf::train::momentum(0.05, {.momentum = 0.9}), 2e-5, "float momentum", false);
        train<double, "e/">(c, batch, 3, tf::train::sgd(0.1), 1e-12, "double sgd, one task without rows", true);
        // buckets of at most 64 bytes: b2 (8), w2 (64), b1 (64) and w1 (256, over the cap) each go alone
        train<double, "b/">(c, batch, steps, tf::train::adam(0.01), 1e-10, "double adam, 64-byte buckets", false,
                            {.bucket_bytes = 64}, 5);
        train<float, "g/">(c, batch, 3, tf::train::sgd(0.1f), 2e-5, "float sgd, 48-byte buckets, one task without rows", true,
                           {.bucket_bytes = 48}, 4);  // b2+w2 (36 bytes), b1 (32), w1 (128)
        train<double, "s/">(c, batch, steps, tf::train::adam(0.01), 1e-10, "double adam, 64-byte buckets summed after the run",
                            false, {.bucket_bytes = 64, .overlap = false}, 5);
        // a first layer of 512 KiB (4 x 16384 doubles): its gradient comes in
        // 2 chunks of rows of 256 KiB, each a bucket of its own, after
        // [b2, w2] (128 KiB) and b1 (128 KiB): 5 all_reduce calls, not 4
        train<double, "c/", 16384>(
            c, batch, 4, tf::train::adam(0.01), 1e-10, "double adam, a first layer in 2 chunks", false, {}, 5);
        train<double, "t/", 16384>(
            c, batch, 4, tf::train::adam(0.01), 1e-10, "double adam, a first layer in 2 chunks, summed after the run",
            true, {.overlap = false}, 5);
        // a step that no task feeds is an error on every task, not a division by zero
        {
            tf::placeholder<"z/x", double, tf::shape<tf::dyn, 1>> zx;
            tf::variable<"z/w", double, tf::shape<1>> zw;
            auto step = tfd::mirrored(c, tf::train::sgd(0.1)).minimize(tf::mean(zx * zw));
            tf::session s;
            bool threw = false;
            try {
                step.run(s, tf::feed(zx, tf::tensor<double>({0, 1})));
            } catch (const tfd::error& e) {
                threw = std::string(e.what()).find("no task fed any example") != std::string::npos;
            }
            expect(threw, "a step without examples on any task is a dist::error naming it");
        }
        // tasks that cut their buckets differently: every task's step fails
        // with a dist::error naming the mismatch (from the step's thread), none
        // hangs; the transport is failed after it, so this comes last
        if (c.size() > 1) {
            tf::placeholder<"m/x", double, tf::shape<tf::dyn, 4>> mx;
            tf::placeholder<"m/y", double, tf::shape<tf::dyn, 1>> my;
            tf::variable<"m/w1", double, tf::shape<4, 8>> w1;
            tf::variable<"m/b1", double, tf::shape<8>> b1;
            tf::variable<"m/w2", double, tf::shape<8, 1>> w2;
            tf::variable<"m/b2", double, tf::shape<1>> b2;
            tfd::mirrored_options o;
            if (c.rank() == 0) o.bucket_bytes = 64;
            auto step = tfd::mirrored(c, tf::train::sgd(0.1), o).minimize(mlp_loss(mx, my, w1, b1, w2, b2));
            tf::tensor<double> xm, ym;
            fill_rows({c.rank()}, xm, ym);
            tf::session s;
            std::string what;
            try {
                step.run(s, tf::feed(mx, xm), tf::feed(my, ym));
            } catch (const tfd::error& e) {
                what = e.what();
            }
            expect(what.find("mismatch") != std::string::npos,
                   "tasks with different buckets fail with a dist::error naming the mismatch, not: '" + what + "'");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mirrored_test: %s\n", e.what());
        return 1;
    }
    if (tfd_test::failures == 0) std::printf("mirrored: OK\n");
    return tfd_test::failures == 0 ? 0 : 1;
}
