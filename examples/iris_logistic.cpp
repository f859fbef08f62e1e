// Softmax (multinomial logistic) regression on Fisher's iris data, trained
// with each optimizer of tf::train on a fixed split: every fifth flower is
// held out (30 of 150, 10 per species). Features are standardised with the
// training rows' mean and deviation. Prints the held-out accuracy of each
// optimizer and exits non-zero unless the best reaches 95% and every
// optimizer is within 1% of the best. The loss is the mean cross-entropy plus
// 0.0005 |W|^2 (strictly convex), so every optimizer heads for one minimiser.
#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "data_sets.hpp"

namespace tf = typeflow;

namespace {
struct split {
    std::vector<double> xtr, xte;
    std::vector<std::int32_t> ytr, yte;
};

split make_split(const examples::iris& ds) {
    split s;
    std::vector<double> mean(4, 0), sd(4, 0);
    int ntr = 0;
    for (int i = 0; i < 150; ++i)
        if (i % 5 != 4) {
            ++ntr;
            for (int j = 0; j < 4; ++j) mean[j] += ds.x[i * 4 + j];
        }
    for (double& m : mean) m /= ntr;
    for (int i = 0; i < 150; ++i)
        if (i % 5 != 4)
            for (int j = 0; j < 4; ++j) sd[j] += (ds.x[i * 4 + j] - mean[j]) * (ds.x[i * 4 + j] - mean[j]);
    for (double& v : sd) v = std::sqrt(v / ntr);
    for (int i = 0; i < 150; ++i) {
        auto& x = i % 5 == 4 ? s.xte : s.xtr;
        auto& y = i % 5 == 4 ? s.yte : s.ytr;
        for (int j = 0; j < 4; ++j) x.push_back((ds.x[i * 4 + j] - mean[j]) / sd[j]);
        y.push_back(ds.label[i]);
    }
    return s;
}

// Trains a fresh model with optimizer `opt` for `steps` full-batch steps and
// returns the held-out accuracy.
template <class Opt>
std::pair<double, double> train(const char* name, const split& d, Opt opt, int steps) {
    tf::placeholder<"x", double, tf::shape<tf::dyn, 4>> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>> y;
    tf::variable<"W", double, tf::shape<4, 3>> W{tf::init::glorot_uniform{1}};
    tf::variable<"b", double, tf::shape<3>> b;
    auto logits = tf::matmul(x, W) + b;
    // L2-regularised, so that the loss has one minimiser every optimizer can reach
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y)) + tf::sum(tf::square(W)) * 0.0005;
    auto step = opt.minimize(loss);
    auto predicted = tf::argmax<1>(logits);
    const tf::index_t ntr = static_cast<tf::index_t>(d.ytr.size());
    tf::session s;
    double l = 0;
    for (int k = 0; k < steps; ++k) {
        auto [lv, st] = s.run(tf::fetch(loss, step), tf::feed(x, tf::view(d.xtr, {ntr, 4})),
                              tf::feed(y, tf::view(d.ytr, {ntr})));
        l = lv[0];
    }
    const auto accuracy = [&](const std::vector<double>& xs, const std::vector<std::int32_t>& ys) {
        const tf::index_t n = static_cast<tf::index_t>(ys.size());
        auto p = s.run(predicted, tf::feed(x, tf::view(xs, {n, 4})));
        int right = 0;
        for (tf::index_t i = 0; i < n; ++i) right += p[i] == ys[static_cast<std::size_t>(i)];
        return double(right) / double(n);
    };
    const double tr = accuracy(d.xtr, d.ytr), te = accuracy(d.xte, d.yte);
    std::printf("  %-10s loss %.4f  train accuracy %5.1f%%  held-out accuracy %5.1f%%\n", name, l, 100 * tr, 100 * te);
    return {te, l};
}
}  // namespace

int main() {
    const split d = make_split(examples::load_iris());
    constexpr int steps = 2000;
    std::printf("iris: softmax regression, %zu training and %zu held-out flowers, %d full-batch steps\n", d.ytr.size(),
                d.yte.size(), steps);
    std::vector<std::pair<double, double>> res;
    res.push_back(train("sgd", d, tf::train::sgd(0.5), steps));
    res.push_back(train("momentum", d, tf::train::momentum(0.2, {.momentum = 0.9}), steps));
    res.push_back(train("nesterov", d, tf::train::momentum(0.2, {.momentum = 0.9, .nesterov = true}), steps));
    res.push_back(train("adam", d, tf::train::adam(0.05), steps));
    res.push_back(train("adamw", d, tf::train::adamw(0.05, 1e-4), steps));
    res.push_back(train("rmsprop", d, tf::train::rmsprop(0.02), steps));
    res.push_back(train("adagrad", d, tf::train::adagrad(0.5), steps));
    double best = 0, worst = 1, lbest = 1e300, lworst = 0;
    for (const auto& [a, l] : res) {
        best = std::max(best, a);
        worst = std::min(worst, a);
        lbest = std::min(lbest, l);
        lworst = std::max(lworst, l);
    }
    const bool ok = best >= 0.95 && best - worst <= 0.01 && lworst <= 1.01 * lbest;
    std::printf("best held-out accuracy %.1f%% (goal >= 95%%), worst %.1f%% (goal within 1%% of the best);\n"
                "final losses %.4f..%.4f (goal within 1%% of the lowest)\n",
                100 * best, 100 * worst, lbest, lworst);
    std::printf("%s\n", ok ? "iris: OK" : "iris: FAILED");
    return ok ? 0 : 1;
}
