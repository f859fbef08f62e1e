// The tour shown in README.md: the lines between the markers are checked to
// appear verbatim in the README (test docs.readme_in_sync).
#include <cstdio>

// readme-begin
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

int main() {
    // Leaves: a placeholder is fed per run (dyn: extent bound at run time),
    // a variable persists across runs.
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::variable<"W", float, tf::shape<3, 2>> W{tf::init::glorot_uniform{}};
    tf::variable<"b", float, tf::shape<2>> b{tf::init::constant{0.5}};

    // Ops build a graph whose shape is its type: nothing runs yet.
    auto h = tf::relu(tf::matmul(x, W) + b);        // [?,3] x [3,2] + [2] -> [?,2]
    auto total = tf::sum(h);                         // a scalar
    auto grow = tf::assign_add(b, tf::mean<0>(h));   // stateful: writes b after the run
    // tf::matmul(W, x) would not compile: the first error names matmul and both shapes.

    tf::session s;
    tf::tensor<float> batch({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    auto [hv, tv, bv] = s.run(tf::fetch(h, total, grow), tf::feed(x, batch));
    std::printf("h is %s, sum %g, new b[0] %g\n", tf::to_string(hv.dims()).c_str(), tv.item(), bv[0]);

    // A wrong feed is a run-time tf::error naming the placeholder and both shapes.
    try {
        s.run(h, tf::feed(x, tf::tensor<float>({4, 5})));
    } catch (const tf::error& e) {
        std::printf("%s\n", e.what());
    }
}
// readme-end
