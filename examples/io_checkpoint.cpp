// Checkpoints, a monitored training session and summaries (docs/io.md).
// A "job" trains a linear model for 150 steps and stops; a second job
// restarts from its checkpoint and trains to 300 steps, logging and writing
// TensorBoard summaries. Exits 0 when the second job resumed at step 150 and
// the model fits y = 3 x0 - 2 x1 + 1.
#include <typeflow/io.hpp>
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace tf = typeflow;

// readme-begin
const tf::placeholder<"x", double, tf::shape<tf::dyn, 2>> x;
const tf::placeholder<"y", double, tf::shape<tf::dyn, 1>> y;

// One training job: restores the latest checkpoint in ckpt_dir, trains until
// the global step reaches last_step, saves every 50 steps and at the end.
std::int64_t job(const std::string& ckpt_dir, const std::string& log_dir, std::int64_t last_step) {
    tf::variable<"W", double, tf::shape<2, 1>> W;
    tf::variable<"b", double, tf::shape<1>> b;
    tf::variable<"global_step", std::int64_t, tf::shape<>> step;
    auto loss = tf::mean(tf::square(tf::matmul(x, W) + b - y));
    auto train = tf::train::adam(0.05).minimize(loss, tf::train::global_step(step));

    tf::io::saver saver(train);  // W, b, their Adam slots W/m, W/v, W/t, ..., and global_step
    tf::io::summary_writer summaries(log_dir);
    tf::train::monitored_session session({.checkpoint_dir = ckpt_dir, .save_every_steps = 50}, saver, step,
                                         tf::train::stop_at_step_hook(last_step),
                                         tf::train::logging_hook(100, std::cout),
                                         tf::train::nan_guard_hook(),
                                         tf::train::summary_hook(summaries, 10));
    const std::int64_t start = session.step();
    std::printf("job: starting at step %lld%s\n", static_cast<long long>(start),
                session.restored_from() ? (" (restored " + *session.restored_from() + ")").c_str() : "");

    tf::tensor<double> xs({4, 2}, {0, 0, 1, 0, 0, 1, 1, 1});
    tf::tensor<double> ys({4, 1}, {1, 4, -1, 2});
    while (!session.should_stop())
        session.run(tf::train::fetch_names{"loss"}, tf::fetch(loss, train), tf::feed(x, xs), tf::feed(y, ys));
    session.close();  // saves the last step
    std::printf("job: stopped at step %lld, W = [%.4f, %.4f], b = %.4f\n", static_cast<long long>(session.step()),
                W.value()[0], W.value()[1], b.value()[0]);
    return start;
}
// readme-end

int main() {
    const std::string root = "io_checkpoint_example";
    std::filesystem::remove_all(root);
    job(root + "/ckpt", root + "/logs", 150);                            // the first job stops at 150
    const auto resumed_at = job(root + "/ckpt", root + "/logs", 300);    // the restart resumes there

    // What is on disk: the newest checkpoint and its table of contents.
    const auto last = tf::io::latest_checkpoint(root + "/ckpt");
    tf::io::checkpoint_reader reader(*last);
    std::printf("%s holds %zu tensors:", last->c_str(), reader.tensors().size());
    for (const auto& t : reader.tensors()) std::printf(" %s%s", t.name.c_str(), tf::to_string(t.shape).c_str());
    std::printf("\nsummaries in %s/logs (tensorboard --logdir %s/logs)\n", root.c_str(), root.c_str());

    // A restore into a fresh model with another shape fails as a whole and names the variable.
    tf::variable<"W", double, tf::shape<3, 1>> wrong;
    try {
        tf::io::saver(wrong).restore(*last, {.allow_unused = true});
    } catch (const tf::error& e) {
        std::printf("%s\n", e.what());
    }
    tf::variable<"W", double, tf::shape<2, 1>> W;
    tf::variable<"b", double, tf::shape<1>> b;
    tf::io::saver(W, b).restore(*last, {.allow_unused = true});  // just the weights (fine-tuning style)
    const bool ok = resumed_at == 150 && std::abs(W.value()[0] - 3) < 1e-2 && std::abs(W.value()[1] + 2) < 1e-2 &&
                    std::abs(b.value()[0] - 1) < 1e-2;
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
