// tf::expr, as shown in README.md: the lines between the markers are checked
// to appear verbatim in the README (test docs.readme_in_sync).
#include <cstdio>
#include <cstdlib>

// readme-begin
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

// A layer in its own function: the caller sees a short type, not the graph.
tf::expr<float, tf::shape<tf::dyn, 16>> step(const tf::expr<float, tf::shape<tf::dyn, 16>>& h,
                                             const tf::variable<"w", float, tf::shape<16>>& w) {
    return tf::tanh(h * w + h);
}

int main(int argc, char** argv) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 16>> x;
    tf::variable<"w", float, tf::shape<16>> w{tf::init::constant{0.25}};

    // A residual chain whose depth is known only at run time: every step has
    // one type, so the program compiles the step once.
    const int depth = argc > 1 ? std::atoi(argv[1]) : 100;
    tf::expr<float, tf::shape<tf::dyn, 16>> h = x;
    for (int k = 0; k < depth; ++k) h = step(h, w);
    // The same chain in one line: tf::repeat applies a block n times.
    const auto r = tf::repeat(depth, x, [&](const auto& v) { return tf::tanh(v * w + v); });

    tf::session s;
    tf::tensor<float> batch({2, 16});
    for (tf::index_t i = 0; i < batch.size(); ++i) batch[i] = 0.01f * static_cast<float>(i);
    const auto [out, out_r] = s.run(tf::fetch(tf::sum(h), tf::sum(r)), tf::feed(x, batch));
    std::printf("depth %d: sum %.5f, with tf::repeat %.5f\n", depth, out.item(), out_r.item());
    return out.item() == out_r.item() ? 0 : 1;
}
// readme-end
