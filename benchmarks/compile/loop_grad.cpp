// A loop's gradient, for benchmarks/compile_time.sh (LOOP_GRAD_ONLY=1): a
// two-unit recurrence h <- tanh(h W + b) over 5 steps, as a tf::scan
// (KIND=0), as a tf::scan whose step holds a tf::cond (KIND=1), and as a
// tf::while_loop (KIND=2), whose gradient recomputes the loop as a scan with
// a cond in its step. With GRAD=1 the program also builds and runs the gradient
// with respect to W; the difference in compile time is the gradient's.
#include <typeflow/typeflow.hpp>

#include <cstdio>

namespace tf = typeflow;

int main() {
    tf::variable<"W", double, tf::shape<2, 2>> W{tf::init::normal{0.0, 0.5, 71}};
    tf::variable<"b", double, tf::shape<2>> b{tf::init::normal{0.0, 0.5, 72}};
    tf::variable<"h0", double, tf::shape<2>> h0{tf::init::normal{0.0, 1.0, 73}};
    tf::variable<"xs", double, tf::shape<5, 2>> xs{tf::init::normal{0.0, 1.0, 74}};
    const auto cell = [&](const auto& h) { return tf::tanh(tf::reshape<2>(tf::matmul(tf::reshape<1, 2>(h), W)) + b); };
#if KIND == 0
    auto hs = tf::scan([&](const auto& h, const auto& x) { return cell(h) + x; }, xs, h0);
#elif KIND == 1
    auto hs = tf::scan(
        [&](const auto& h, const auto& x) { return tf::cond(tf::sum(x) > 0.0, [&] { return cell(h); }, [&] { return h - x; }); },
        xs, h0);
#else
    auto hs = tf::while_loop([](const auto& i, const auto&) { return i < 5; }, [&](const auto& h) { return cell(h); }, h0, 5);
#endif
    auto y = tf::sum(tf::square(hs));
    tf::session s;
#if GRAD
    auto [v, g] = s.run(tf::fetch(y, tf::grad(y, W)));
    std::printf("loop_grad kind=%d y=%.6f dW00=%.6f\n", KIND, v[0], g[0]);
#else
    std::printf("loop_grad kind=%d y=%.6f\n", KIND, s.run(y)[0]);
#endif
    return 0;
}
