// Compile-fail cases on the size of the diagnostics (see the section "Size of
// the diagnostics" of CMakeLists.txt beside this file): a misuse is reported
// once, by its own diagnostic, and the compiler's whole output stays small
// even when the bad node sits on a deep graph that is then run by a session
// or differentiated. Without a define, everything here compiles: that is the
// positive control.
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

namespace {
using row16 = tf::shape<tf::dyn, 16>;
tf::variable<"W0", float, tf::shape<16, 16>> W0;
tf::variable<"W1", float, tf::shape<16, 16>> W1;
tf::variable<"W2", float, tf::shape<16, 16>> W2;
tf::variable<"W3", float, tf::shape<16, 16>> W3;
tf::variable<"W4", float, tf::shape<16, 16>> W4;
tf::variable<"W5", float, tf::shape<16, 16>> W5;
tf::variable<"W6", float, tf::shape<16, 16>> W6;
tf::variable<"W7", float, tf::shape<16, 16>> W7;
tf::variable<"W8", float, tf::shape<16, 16>> W8;
tf::variable<"W9", float, tf::shape<16, 16>> W9;
tf::variable<"b0", float, tf::shape<16>> b0;
tf::variable<"b1", float, tf::shape<16>> b1;
tf::variable<"b2", float, tf::shape<16>> b2;
tf::variable<"b3", float, tf::shape<16>> b3;
tf::variable<"b4", float, tf::shape<16>> b4;
tf::variable<"b5", float, tf::shape<16>> b5;
tf::variable<"b6", float, tf::shape<16>> b6;
tf::variable<"b7", float, tf::shape<16>> b7;
tf::variable<"b8", float, tf::shape<16>> b8;
tf::variable<"b9", float, tf::shape<16>> b9;

// Ten residual blocks h = h + relu(h W_i + b_i), each with its own variables,
// so the type of the result spells all of them (twice: h is read twice).
template <class X>
auto residual10(const X& x) {
    auto h0 = x + tf::relu(tf::matmul(x, W0) + b0);
    auto h1 = h0 + tf::relu(tf::matmul(h0, W1) + b1);
    auto h2 = h1 + tf::relu(tf::matmul(h1, W2) + b2);
    auto h3 = h2 + tf::relu(tf::matmul(h2, W3) + b3);
    auto h4 = h3 + tf::relu(tf::matmul(h3, W4) + b4);
    auto h5 = h4 + tf::relu(tf::matmul(h4, W5) + b5);
    auto h6 = h5 + tf::relu(tf::matmul(h5, W6) + b6);
    auto h7 = h6 + tf::relu(tf::matmul(h6, W7) + b7);
    auto h8 = h7 + tf::relu(tf::matmul(h7, W8) + b8);
    return h8 + tf::relu(tf::matmul(h8, W9) + b9);
}
}  // namespace

int main() {
    tf::placeholder<"x", float, row16> x;
    tf::placeholder<"y", float, tf::shape<tf::dyn, 10>> y;
    tf::placeholder<"a", float, tf::shape<2, 3>> a;
    tf::placeholder<"b", double, tf::shape<2, 3>> b;
    tf::variable<"Wout", float, tf::shape<16, 10>> Wout;
    tf::variable<"Wbad", float, tf::shape<8, 10>> Wbad;
    tf::variable<"v", float, tf::shape<4>> v;
    tf::session s;
    const tf::tensor<float> xb({4, 16});
    const tf::tensor<float> yb({4, 10});

    // the valid twins of the cases below
    {
        auto sum = a + tf::cast<float>(b);
        auto [r] = s.run(tf::fetch(sum), tf::feed(a, tf::tensor<float>({2, 3})), tf::feed(b, tf::tensor<double>({2, 3})));
        (void)r;
        auto logits = tf::matmul(residual10(x), Wout);
        auto loss = tf::mean(tf::square(logits - y));
        auto [l] = s.run(tf::fetch(loss), tf::feed(x, xb), tf::feed(y, yb));
        auto [dW0, dW9] = tf::grad(loss, W0, W9);
        auto [g0, g9] = s.run(tf::fetch(dW0, dW9), tf::feed(x, xb), tf::feed(y, yb));
        (void)l, (void)g0, (void)g9;
    }

#ifdef TF_FAIL_dtype_session  // float + double, then run by a session
    auto bad = a + b;
    auto [r] = s.run(tf::fetch(bad * 2.0f), tf::feed(a, tf::tensor<float>({2, 3})), tf::feed(b, tf::tensor<double>({2, 3})));
    (void)r;
#endif
#ifdef TF_FAIL_dtype_session_inline  // the same, the bad node never named: it flows into * and the session
    auto [r] = s.run(tf::fetch((a + b) * 2.0f), tf::feed(a, tf::tensor<float>({2, 3})), tf::feed(b, tf::tensor<double>({2, 3})));
    (void)r;
#endif
#ifdef TF_FAIL_residual_matmul  // a depth-10 residual graph, then matmul with the wrong inner dimension, then run
    auto logits = tf::matmul(residual10(x), Wbad);  // [?,16] x [8,10]
    auto loss = tf::mean(tf::square(logits - y));
    auto [l] = s.run(tf::fetch(loss), tf::feed(x, xb), tf::feed(y, yb));
    (void)l;
#endif
#ifdef TF_FAIL_residual_add  // a depth-10 residual graph plus a vector of the wrong length, then run
    auto out = residual10(x) + v;  // [?,16] + [4]
    auto loss = tf::mean(tf::square(tf::matmul(out, Wout) - y));
    auto [l] = s.run(tf::fetch(loss), tf::feed(x, xb), tf::feed(y, yb));
    (void)l;
#endif
#ifdef TF_FAIL_residual_reduce  // a depth-10 residual graph summed over an axis it does not have, then run
    auto loss = tf::sum<2>(residual10(x));  // rank 2
    auto [l] = s.run(tf::fetch(loss * 2.0f), tf::feed(x, xb));
    (void)l;
#endif
#ifdef TF_FAIL_let_misuse  // a misuse inside a tf::let step stays one short error when the step is used
    auto h1 = tf::let([&] { return x + tf::relu(tf::matmul(x, W0) + b0); });
    auto h2 = tf::let([&] { return h1 + tf::relu(tf::matmul(h1, Wbad) + b1); });  // [?,16] x [8,10]
    auto [l] = s.run(tf::fetch(tf::mean(tf::square(h2))), tf::feed(x, xb));
    (void)l;
#endif
#ifdef TF_FAIL_let_not_expression  // tf::let of a lambda that returns no graph expression
    auto bad = tf::let([] { return 2.0f; });
    (void)bad;
#endif
#ifdef TF_FAIL_residual_grad  // the same misuse inside the cost given to tf::grad, then run
    auto [dW0, dW9] = tf::grad(tf::mean(tf::square(tf::matmul(residual10(x), Wbad) - y)), W0, W9);
    auto [g0, g9] = s.run(tf::fetch(dW0, dW9), tf::feed(x, xb), tf::feed(y, yb));
    (void)g0, (void)g9;
#endif
}
