// fit() with the mirrored strategy (compile(loss, dist::mirrored(comm,
// optimizer), metrics)), run under typeflow-launch with 1 to 4 tasks. Every
// task fits a Keras-style classifier (double precision, Adam) on its shard
// of a planted 3-class data set, batched so that the tasks' batches of one
// step together are one global batch of 12 (the last of 1 row: the other
// tasks' data runs out first); the same model fitted in one
// process on the whole data set in global batches is the reference. Checks:
// every epoch's loss and accuracy equal the reference's (summation order
// apart), the final weights equal the reference's and are the same bits on
// every task, the first step copies the chief's weights (each task starts
// from its own), evaluate over the tasks' shards gives the whole data set's
// figures, train_on_batch reports global figures, a checkpoint of the
// distributed model (optimizer slots included) restores bit-exactly, and a
// functional model of two outputs logs the same per-output losses and
// accuracy as single-process fit.
//
//   fit_mirrored_test <epochs>
#include <typeflow/dist.hpp>
#include <typeflow/data.hpp>
#include <typeflow/models.hpp>
#include <typeflow/distributed/mirrored.hpp>

#include "mlp_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

namespace tf = typeflow;
namespace tfd = typeflow::dist;
namespace L = tf::layers;

namespace {
using tfd_test::expect;

using classifier = tf::models::sequential<L::input<double, 4>, L::dense<8, L::tanh>, L::dense<3>>;
using ce = tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>;
// 97 rows: the last global batch is row 96 alone, so on 2 to 4 tasks every
// task but the chief runs out of data one step before it and steps with no
// examples (fit's any_task)
constexpr int rows = 97, global_batch = 12, steps_per_epoch = 9;

// Row i: 4 features, and the class whose planted linear score is largest.
void planted(tf::tensor<double>& x, tf::tensor<std::int32_t>& y) {
    x = tf::tensor<double>({rows, 4});
    y = tf::tensor<std::int32_t>({rows});
    for (int i = 0; i < rows; ++i) {
        double f[4], best = -1e300;
        for (int j = 0; j < 4; ++j) x[i * 4 + j] = f[j] = std::sin(0.37 * i + 1.3 * j);
        for (int c = 0; c < 3; ++c) {
            double s = 0;
            for (int j = 0; j < 4; ++j) s += std::cos(1.1 * c + 0.7 * j) * f[j];
            if (s > best) best = s, y[i] = c;
        }
    }
}
template <class M>
void salt(M& m, double s) {  // weights of the task's own, which the first step replaces
    auto& k0 = const_cast<std::remove_cvref_t<decltype(m.model().template layer<0>().kernel)>&>(m.model().template layer<0>().kernel);
    auto& k1 = const_cast<std::remove_cvref_t<decltype(m.model().template layer<1>().kernel)>&>(m.model().template layer<1>().kernel);
    tfd_test::init(k0, s);
    tfd_test::init(k1, s + 1);
}
// A functional model of two outputs (a class and a regression head, the
// losses weighted 1 and 0.5) through fit with the strategy: every epoch's
// loss, per-output losses and accuracy equal single-process fit's.
void two_heads(tfd::collective& c, const tf::tensor<double>& x, const tf::tensor<std::int32_t>& y, int epochs) {
    const int rank = c.rank(), tasks = c.size();
    using X = tf::tensor<double>;
    using Y = std::tuple<tf::tensor<std::int32_t>, tf::tensor<double>>;
    // rows [lo, hi) with stride `step`: (x, (class, 0.5 x0 - x3))
    const auto part = [&](int lo, int hi, int step) {
        const int n = std::max(0, (hi - lo + step - 1) / step);
        X bx({n, 4});
        tf::tensor<std::int32_t> yc({n});
        tf::tensor<double> yr({n, 1});
        for (int k = 0; k < n; ++k) {
            const int i = lo + k * step;
            for (int j = 0; j < 4; ++j) bx[k * 4 + j] = x[i * 4 + j];
            yc[k] = y[i];
            yr[k] = 0.5 * x[i * 4] - x[i * 4 + 3];
        }
        return std::pair<X, Y>{bx, Y{yc, yr}};
    };
    std::vector<std::pair<X, Y>> mine, all;
    for (int b = 0; b < rows; b += global_batch) {
        const int hi = std::min(b + global_batch, rows);  // a task may have no rows of the last batch
        mine.push_back(part(b + rank, hi, tasks));
        all.push_back(part(b, hi, 1));
    }
    const auto make = [](auto opt) {
        tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> in;
        L::layer<"enc", L::dense<8, L::tanh>> enc;
        L::layer<"cls", L::dense<3>> cls;
        L::layer<"reg", L::dense<1>> reg;
        auto net = tf::models::functional(tf::models::inputs(in), [=](auto mode) {
            auto h = enc(in, mode);
            return tf::models::outputs<"cls", "reg">(cls(h, mode), reg(h, mode));
        });
        return net.compile(tf::models::per_output(ce{}, tf::losses::mean_squared_error{}).weighted({1.0, 0.5}), opt,
                           tf::metrics::accuracy{});
    };
    auto model = make(tfd::mirrored(c, tf::optimizers::adam{.learning_rate = 0.02}));
    auto ref = make(tf::optimizers::adam{.learning_rate = 0.02});
    model.train_op().broadcast_variables();  // what the first step does, here to give the reference the same start
    ref.restore_weights(model.snapshot_weights());
    const auto h = model.fit(mine, {.epochs = epochs, .verbose = 0});
    const auto hr = ref.fit(all, {.epochs = epochs, .verbose = 0});
    double worst = 0;
    for (const char* k : {"loss", "cls_loss", "reg_loss", "cls_accuracy"})
        for (int e = 0; e < epochs; ++e)
            worst = std::max(worst, std::fabs(h[k][static_cast<std::size_t>(e)] - hr[k][static_cast<std::size_t>(e)]));
    const auto ev = model.evaluate(all), evr = ref.evaluate(all);
    const double worst_eval = std::fabs(ev.at("loss") - evr.at("loss"));
    expect(h["reg_loss"].back() < 0.5 * h["reg_loss"].front(), "two heads: the regression loss did not halve");
    expect(worst <= 1e-12, "two heads: epoch logs differ from single-process fit by " + std::to_string(worst));
    expect(worst_eval <= 1e-10, "two heads: evaluated losses differ by " + std::to_string(worst_eval));
    if (rank == 0)
        std::printf("fit mirrored, two heads: tasks=%d loss %.6f -> %.6f cls_accuracy %.4f max_log_diff=%.3g eval_diff=%.3g\n", tasks,
                    h["loss"].front(), h["loss"].back(), h["cls_accuracy"].back(), worst, worst_eval);
}
template <class A, class B>
double worst_diff(const A& a, const B& b) {
    using tfd_test::max_rel_diff;
    const auto& ma = a.model();
    const auto& mb = b.model();
    return std::max({max_rel_diff(ma.template layer<0>().kernel, mb.template layer<0>().kernel),
                     max_rel_diff(ma.template layer<0>().bias, mb.template layer<0>().bias),
                     max_rel_diff(ma.template layer<1>().kernel, mb.template layer<1>().kernel),
                     max_rel_diff(ma.template layer<1>().bias, mb.template layer<1>().bias)});
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: fit_mirrored_test <epochs>\n");
        return 2;
    }
    const int epochs = std::atoi(argv[1]);
    try {
        tfd::ring_collective c(tfd::cluster_spec::from_env());
        const int rank = c.rank(), tasks = c.size();
        tf::tensor<double> x;
        tf::tensor<std::int32_t> y;
        planted(x, y);
        const auto all = tf::data::from_tensors(x, y);

        auto model = classifier{}.compile(ce{}, tfd::mirrored(c, tf::optimizers::adam{.learning_rate = 0.02}),
                                          tf::metrics::accuracy{});
        auto ref = classifier{}.compile(ce{}, tf::optimizers::adam{.learning_rate = 0.02}, tf::metrics::accuracy{});
        salt(model, 0);
        salt(ref, 0);  // the chief's values: what the first step gives every task
        if (rank > 0) salt(model, 10 * rank);
        model.set_threads(1);
        ref.set_threads(1);

        // rows rank, rank + tasks, ...: batch j of every task together is rows [12 j, 12 j + 12)
        const auto mine = all.shard(tasks, rank).batch(global_batch / tasks);
        const auto h = model.fit(mine, {.epochs = epochs, .verbose = 0});
        const auto hr = ref.fit(all.batch(global_batch), {.epochs = epochs, .verbose = 0});

        double worst_log = 0;
        for (const char* k : {"loss", "accuracy"})
            for (int e = 0; e < epochs; ++e)
                worst_log = std::max(worst_log, std::fabs(h[k][static_cast<std::size_t>(e)] - hr[k][static_cast<std::size_t>(e)]));
        const double worst = worst_diff(model, ref);
        const auto& m = model.model();
        const bool same = tfd_test::bits_agree(c, m.layer<0>().kernel, m.layer<0>().bias, m.layer<1>().kernel, m.layer<1>().bias);
        expect(h["loss"].back() < 0.5 * h["loss"].front(), "the loss did not halve");
        expect(worst_log <= 1e-12, "epoch logs differ from single-process fit by " + std::to_string(worst_log));
        expect(worst <= 1e-10, "weights differ from single-process fit by " + std::to_string(worst));
        expect(same, "the tasks' weights differ");
        expect(model.iterations() == epochs * steps_per_epoch, "steps: " + std::to_string(model.iterations()));

        // evaluate: each task's shard, summed over every task: the whole data set's figures
        const auto ev = model.evaluate(all.shard(tasks, rank).batch(5));
        const auto evr = ref.evaluate(all.batch(global_batch));
        const double worst_eval = std::max(std::fabs(ev.at("loss") - evr.at("loss")), std::fabs(ev.at("accuracy") - evr.at("accuracy")));
        expect(worst_eval <= 1e-12, "evaluate over the tasks' shards differs from single-process evaluate by " +
                                        std::to_string(worst_eval));

        // train_on_batch: the loss and accuracy of the global batch
        tf::tensor<double> bx({global_batch / tasks, 4});
        tf::tensor<std::int32_t> by({global_batch / tasks});
        for (int i = 0; i < global_batch / tasks; ++i) {
            for (int j = 0; j < 4; ++j) bx[i * 4 + j] = x[(rank + tasks * i) * 4 + j];
            by[i] = y[rank + tasks * i];
        }
        tf::tensor<double> gx({global_batch, 4});
        tf::tensor<std::int32_t> gy({global_batch});
        for (int i = 0; i < global_batch * 4; ++i) gx[i] = x[i];
        for (int i = 0; i < global_batch; ++i) gy[i] = y[i];
        const auto before = ref.test_on_batch(gx, gy);  // the reference holds the same weights
        const auto l = model.train_on_batch(bx, by);
        expect(std::fabs(l.at("loss") - before.at("loss")) <= 1e-12 && std::fabs(l.at("accuracy") - before.at("accuracy")) <= 1e-12,
               "train_on_batch: loss " + std::to_string(l.at("loss")) + " accuracy " + std::to_string(l.at("accuracy")) +
                   ", the global batch's: " + std::to_string(before.at("loss")) + " " + std::to_string(before.at("accuracy")));

        // a checkpoint holds the weights and Adam's slots: a step after
        // restoring it gives the same bits as the step after saving it
        const auto dir = std::filesystem::temp_directory_path() /
                         ("tf_fit_mirrored_" + std::to_string(::getpid()) + "_" + std::to_string(rank));
        const std::string path = model.save_checkpoint(dir.string(), model.iterations());
        model.train_on_batch(bx, by);
        const tf::tensor<double> k0 = m.layer<0>().kernel.value().clone();
        model.train_on_batch(bx, by);
        model.load_checkpoint(path);
        model.train_on_batch(bx, by);
        const auto& k1 = m.layer<0>().kernel.value();
        expect(std::equal(k0.data(), k0.data() + k0.size(), k1.data()), "a step after load_checkpoint differs from the step after save");
        std::filesystem::remove_all(dir);

        two_heads(c, x, y, epochs);
        if (rank == 0)
            std::printf("fit mirrored: tasks=%d epochs=%d loss %.6f -> %.6f accuracy %.4f max_weight_diff=%.3g max_log_diff=%.3g "
                        "identical=%s\n",
                        tasks, epochs, h["loss"].front(), h["loss"].back(), h["accuracy"].back(), worst, worst_log,
                        same ? "yes" : "NO");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fit_mirrored_test: %s\n", e.what());
        return 1;
    }
    if (tfd_test::failures == 0) std::printf("fit mirrored: OK\n");
    return tfd_test::failures == 0 ? 0 : 1;
}
