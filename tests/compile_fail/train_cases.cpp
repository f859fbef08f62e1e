// Compile-fail cases of tf::grad and tf::train (see CMakeLists.txt beside
// this file); without a define everything compiles (the positive control).
#ifdef TF_FAIL_zero_gradient_warning  // the warning option, made an error here
#define TYPEFLOW_WARN_ZERO_GRADIENT
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#endif
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

namespace my {
// An op without a gradient rule.
struct opaque {
    static constexpr tf::op_kind kind = tf::op_kind::elementwise;
    static constexpr std::string_view name = "opaque";
    template <class A>
    using traits = tf::result_traits<tf::value_type_t<A>, tf::shape_t<A>, tf::device_t<A>>;
    static auto array(const auto& a) { return a; }
};
}  // namespace my

int main() {
    tf::placeholder<"x", float, tf::shape<2, 3>> x;
    tf::placeholder<"i", int, tf::shape<2, 3>> i;
    tf::variable<"w", float, tf::shape<3>> w;
    tf::variable<"step", std::int64_t, tf::shape<>> step;

    // the valid twins of the cases below
    auto ok_grad = tf::grad(tf::sum(x * w), w);
    auto ok_min = tf::train::sgd(0.1f).minimize(tf::sum(x * w), tf::train::global_step(step));
    tf::literal<float, 1, 2> ok_lit;
    auto ok_opaque = tf::make_node<my::opaque>(x * w);
    (void)ok_grad, (void)ok_min, (void)ok_lit, (void)ok_opaque;

#ifdef TF_FAIL_grad_no_rule
    auto bad = tf::grad(tf::sum(tf::make_node<my::opaque>(x * w)), w);
#endif
    tf::expr<float, tf::shape<2, 3>> hidden = x * w;
    auto ok_expr = tf::train::sgd(0.1f).minimize(tf::sum(hidden), w);
    (void)ok_expr;
#ifdef TF_FAIL_minimize_expr
    auto bad = tf::train::sgd(0.1f).minimize(tf::sum(hidden));
#endif
#ifdef TF_FAIL_grad_int_cost
    auto bad = tf::grad(tf::sum(i), i);
#endif
#ifdef TF_FAIL_minimize_no_variable
    auto bad = tf::train::sgd(0.1f).minimize(tf::sum(x));
#endif
#ifdef TF_FAIL_global_step_float
    auto bad = tf::train::global_step(w);
#endif
#ifdef TF_FAIL_literal_zero_den
    tf::literal<float, 1, 0> bad;
#endif
#ifdef TF_FAIL_zero_gradient_warning
    tf::variable<"unused", float, tf::shape<3>> u;
    auto bad = tf::grad(tf::sum(x * w), u);
#endif

    // Integer variables: a step counter is passed as global_step (above), and
    // an integer variable may be read by the loss; only grad and the
    // optimizers' variables to train refuse it. The valid twins:
    tf::variable<"n", int, tf::shape<3>> n;
    tf::placeholder<"lr", float, tf::shape<>> lr;
    tf::placeholder<"lr_d", double, tf::shape<>> lr_d;
    auto loss_n = tf::sum(x * w * tf::cast<float>(n));
    auto ok_int_read = tf::grad(loss_n, w);
    auto ok_gv = tf::train::sgd(lr).compute_gradients(loss_n, w);
    auto ok_apply = tf::train::adam(lr).apply_gradients(ok_gv, tf::train::global_step(step));
    auto ok_rates = tf::group(tf::train::sgd(1).minimize(loss_n), tf::train::momentum(lr_d).minimize(loss_n, w),
                              tf::train::adam(0.1).minimize(loss_n, w, tf::train::global_step(step)),
                              tf::train::adamw(lr, 0.01).minimize(loss_n),
                              tf::train::rmsprop(tf::train::exponential_decay(0.1f, step, 100, 0.9)).minimize(loss_n),
                              tf::train::adagrad(0.1f).minimize(loss_n, w));
    (void)ok_int_read, (void)ok_apply, (void)ok_rates;
#ifdef TF_FAIL_grad_int_variable
#define TF_RUN_BAD
    auto bad = tf::grad(loss_n, n);
#endif
#ifdef TF_FAIL_grad_int_variables  // several at once: the one that is wrong
    auto bad = tf::grad(tf::sum(x * w) + tf::cast<float>(step), w, step);
#endif
#ifdef TF_FAIL_grad_int_placeholder
#define TF_RUN_BAD
    auto bad = tf::grad(tf::sum(x * tf::cast<float>(i)), i);
#endif
#ifdef TF_FAIL_minimize_int_sgd
#define TF_RUN_BAD
    auto bad = tf::train::sgd(0.1f).minimize(loss_n, n);
#endif
#ifdef TF_FAIL_minimize_int_momentum
#define TF_RUN_BAD
    auto bad = tf::train::momentum(0.1f).minimize(loss_n, w, n);
#endif
#ifdef TF_FAIL_minimize_int_adam
#define TF_RUN_BAD
    auto bad = tf::train::adam(0.1f).minimize(loss_n, n, tf::train::global_step(step));
#endif
#ifdef TF_FAIL_minimize_int_adamw
#define TF_RUN_BAD
    auto bad = tf::train::adamw(0.1f, 0.01).minimize(loss_n, n);
#endif
#ifdef TF_FAIL_minimize_int_rmsprop
#define TF_RUN_BAD
    auto bad = tf::train::rmsprop(0.1f).minimize(loss_n, n);
#endif
#ifdef TF_FAIL_minimize_int_adagrad
#define TF_RUN_BAD
    auto bad = tf::train::adagrad(0.1f).minimize(loss_n, n);
#endif
#ifdef TF_FAIL_minimize_step_as_variable  // the step counter not wrapped in global_step
#define TF_RUN_BAD
    auto bad = tf::train::sgd(0.1f).minimize(loss_n, step);
#endif
#ifdef TF_FAIL_minimize_placeholder
#define TF_RUN_BAD
    auto bad = tf::train::sgd(0.1f).minimize(loss_n, x);
#endif
#ifdef TF_FAIL_compute_gradients_int
    auto bad = tf::train::adam(0.1f).compute_gradients(loss_n, w, n);
#endif
#ifdef TF_FAIL_apply_gradients_int
#define TF_RUN_BAD
    auto gv = tf::train::grads_and_vars<tf::train::grad_and_var<decltype(ok_grad), decltype(n)>>({ok_grad, n});
    auto bad = tf::train::rmsprop(0.1f).apply_gradients(gv);
#endif
#ifdef TF_FAIL_sgd_rate_shape
#define TF_RUN_BAD
    auto bad = tf::train::sgd(tf::placeholder<"lr_vec", float, tf::shape<3>>{}).minimize(loss_n, w);
#endif
#ifdef TF_FAIL_adam_rate_shape
#define TF_RUN_BAD
    auto bad = tf::train::adam(w * 0.1f).minimize(loss_n, w);
#endif
#ifdef TF_FAIL_momentum_rate_shape
#define TF_RUN_BAD
    auto bad = tf::train::momentum(tf::placeholder<"lr1", float, tf::shape<1>>{}).minimize(loss_n, w);
#endif
#ifdef TF_FAIL_sgd_rate_dtype
#define TF_RUN_BAD
    auto bad = tf::train::sgd(tf::placeholder<"lr_b", bool, tf::shape<>>{}).minimize(loss_n, w);
#endif
#ifdef TF_FAIL_adam_rate_type
#define TF_RUN_BAD
    auto bad = tf::train::adam("0.1").minimize(loss_n, w);
#endif
#if defined(TF_FAIL_grad_no_rule) || defined(TF_FAIL_grad_int_cost) || defined(TF_FAIL_minimize_expr) || defined(TF_FAIL_minimize_no_variable) || \
    defined(TF_FAIL_global_step_float) || defined(TF_FAIL_literal_zero_den) || defined(TF_FAIL_zero_gradient_warning) || \
    defined(TF_FAIL_grad_int_variable) || defined(TF_FAIL_grad_int_variables) || defined(TF_FAIL_grad_int_placeholder) || \
    defined(TF_FAIL_minimize_int_sgd) || defined(TF_FAIL_minimize_int_momentum) || defined(TF_FAIL_minimize_int_adam) || \
    defined(TF_FAIL_minimize_int_adamw) || defined(TF_FAIL_minimize_int_rmsprop) || defined(TF_FAIL_minimize_int_adagrad) || \
    defined(TF_FAIL_minimize_step_as_variable) || defined(TF_FAIL_minimize_placeholder) || \
    defined(TF_FAIL_compute_gradients_int) || defined(TF_FAIL_apply_gradients_int) || defined(TF_FAIL_sgd_rate_shape) || \
    defined(TF_FAIL_adam_rate_shape) || defined(TF_FAIL_momentum_rate_shape) || defined(TF_FAIL_sgd_rate_dtype) || \
    defined(TF_FAIL_adam_rate_type)
    (void)bad;
#endif
#ifdef TF_RUN_BAD  // what a failed grad or minimize gives runs: no second error
    tf::session s;
    (void)s.run(bad);
#endif
}
