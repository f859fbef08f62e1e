#pragma once
// What the data-parallel training tests share (mirrored_test.cpp,
// ps_test.cpp, recovery_test.cpp, fit_mirrored_test.cpp): a failure
// counter, the planted data set, deterministic initial values, the MLP and
// weight comparisons.
#include <typeflow/dist.hpp>
#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace tfd_test {
namespace tf = typeflow;

inline int failures = 0;
inline void expect(bool ok, const std::string& what) {
    if (!ok) {
        ++failures;
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    }
}

// Row i of the data set: 4 features and a target from a planted function.
template <class T>
inline void fill_rows(const std::vector<int>& rows, tf::tensor<T>& x, tf::tensor<T>& y) {
    x = tf::tensor<T>({static_cast<tf::index_t>(rows.size()), 4});
    y = tf::tensor<T>({static_cast<tf::index_t>(rows.size()), 1});
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const double i = rows[r];
        double t = 0;
        for (int j = 0; j < 4; ++j) {
            const double v = std::sin(0.37 * i + 1.3 * j);
            x[static_cast<tf::index_t>(r * 4 + j)] = static_cast<T>(v);
            t += (j + 1) * v;
        }
        y[static_cast<tf::index_t>(r)] = static_cast<T>(std::tanh(0.5 * t));
    }
}
// Deterministic initial values; `salt` makes each task's differ.
template <class V>
inline void init(V& v, double salt) {
    auto& t = v.value();
    for (tf::index_t i = 0; i < t.size(); ++i)
        t[i] = static_cast<tf::value_type_t<V>>(0.4 * std::sin(1.7 * static_cast<double>(i) + 0.9 * salt + 0.3));
}
// True when every task of c holds the same bits in each of the variables vs.
template <class... V>
bool bits_agree(typeflow::dist::collective& c, const V&... vs) {
    const auto one = [&](const auto& v) {
        using T = tf::value_type_t<std::remove_cvref_t<decltype(v)>>;
        const auto& t = v.value();
        std::vector<T> hi(t.data(), t.data() + t.size()), lo = hi;
        c.all_reduce(std::span<T>(hi), typeflow::dist::reduce_op::max);
        c.all_reduce(std::span<T>(lo), typeflow::dist::reduce_op::min);
        return hi == lo;
    };
    return (one(vs) && ...);
}
template <class A, class B>
double max_rel_diff(const A& a, const B& b) {
    double worst = 0;
    for (tf::index_t i = 0; i < a.value().size(); ++i) {
        const double x = a.value()[i], y = b.value()[i];
        worst = std::max(worst, std::fabs(x - y) / std::max(1.0, std::fabs(y)));
    }
    return worst;
}

// The MLP: 4 -> 8 (tanh) -> 1, mean squared error.
template <class X, class Y, class W1, class B1, class W2, class B2>
auto mlp_loss(const X& x, const Y& y, const W1& w1, const B1& b1, const W2& w2, const B2& b2) {
    return tf::mean(tf::square(tf::matmul(tf::tanh(tf::matmul(x, w1) + b1), w2) + b2 - y));
}

// The MLP's four variables in double precision, named <P>w1, <P>b1, <P>w2,
// <P>b2, from init salts salt, salt + 10, salt + 20, salt + 30 (salt 0: the
// values a ps starts from and single-process references use).
template <tf::fixed_string P>
struct mlp_vars {
    tf::variable<tf::concat<P, "w1">(), double, tf::shape<4, 8>> w1;
    tf::variable<tf::concat<P, "b1">(), double, tf::shape<8>> b1;
    tf::variable<tf::concat<P, "w2">(), double, tf::shape<8, 1>> w2;
    tf::variable<tf::concat<P, "b2">(), double, tf::shape<1>> b2;
    explicit mlp_vars(double salt = 0) { init(w1, salt), init(b1, salt + 10), init(w2, salt + 20), init(b2, salt + 30); }
    template <class X, class Y>
    auto loss(const X& x, const Y& y) const {
        return mlp_loss(x, y, w1, b1, w2, b2);
    }
    // the largest relative difference of any weight from `o`'s
    template <tf::fixed_string Q>
    double max_rel_diff_to(const mlp_vars<Q>& o) const {
        return std::max({max_rel_diff(w1, o.w1), max_rel_diff(b1, o.b1), max_rel_diff(w2, o.w2), max_rel_diff(b2, o.b2)});
    }
};

// The MLP trained in one process on the whole batch (xa, ya) for `steps`
// Adam(0.01) steps from the values a ps starts from (init salts 0, 10, 20,
// 30): its loss then, the reference the distributed runs must reach.
template <class X, class Y>
double single_process_loss(const X& x, const Y& y, const tf::tensor<double>& xa, const tf::tensor<double>& ya, int steps) {
    const mlp_vars<"single/"> m;
    auto loss = m.loss(x, y);
    auto step = tf::train::adam(0.01).minimize(loss);
    tf::session s;
    for (int k = 0; k < steps; ++k) s.run(step, tf::feed(x, xa), tf::feed(y, ya));
    return static_cast<double>(s.run(loss, tf::feed(x, xa), tf::feed(y, ya))[0]);
}

// A task's rows of a global batch (i = me, me + tasks, ...) and the whole
// batch (for single-process references), with their data.
struct batch_split {
    std::vector<int> mine, all;
    tf::tensor<double> xm, ym, xa, ya;
    batch_split(int batch, int tasks, int me) {
        for (int i = 0; i < batch; ++i) {
            all.push_back(i);
            if (i % tasks == me) mine.push_back(i);
        }
        fill_rows(mine, xm, ym);
        fill_rows(all, xa, ya);
    }
};

}  // namespace tfd_test
