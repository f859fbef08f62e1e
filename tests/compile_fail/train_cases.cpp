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
#if defined(TF_FAIL_grad_no_rule) || defined(TF_FAIL_grad_int_cost) || defined(TF_FAIL_minimize_expr) || defined(TF_FAIL_minimize_no_variable) || \
    defined(TF_FAIL_global_step_float) || defined(TF_FAIL_literal_zero_den) || defined(TF_FAIL_zero_gradient_warning)
    (void)bad;
#endif
}
