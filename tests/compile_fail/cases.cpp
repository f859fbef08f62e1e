// Compile-fail cases: each TF_FAIL_<name> block is one misuse that must not
// compile; the first error line must name the op and both shapes, dtypes or
// devices (see CMakeLists.txt beside this file). Without a define, everything
// here compiles: that is the positive control.
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

namespace my {
// An op with a CPU kernel and no reference kernel.
struct cpu_only {
    static constexpr tf::op_kind kind = tf::op_kind::kernel;
    static constexpr std::string_view name = "cpu_only";
    template <class A>
    using traits = tf::result_traits<tf::value_type_t<A>, tf::shape_t<A>, tf::device_t<A>>;
    static tf::dims infer(const tf::dims& a) { return a; }
};
// A tag with a shape rule but no name: not an op tag (expr/op.hpp).
struct nameless {
    static constexpr tf::op_kind kind = tf::op_kind::elementwise;
    template <class A>
    using traits = tf::result_traits<tf::value_type_t<A>, tf::shape_t<A>, tf::device_t<A>>;
};
}  // namespace my
template <>
struct tf::kernel<tf::cpu, my::cpu_only> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, tf::value_type_t<N>* out) {
        const auto count = ctx.dims_of(n.template child<0>()).numel();
        for (tf::index_t i = 0; i < count; ++i) out[i] = ctx.input(n.template child<0>())[i];
    }
};

int main() {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 64>> x;
    tf::placeholder<"m", float, tf::shape<2, 3>> m;
    tf::placeholder<"v", float, tf::shape<4>> v;
    tf::placeholder<"d", double, tf::shape<2, 3>> d;
    tf::placeholder<"i", int, tf::shape<2, 3>> i;
    tf::placeholder<"flags", bool, tf::shape<2, 3>> flags;
    tf::variable<"W1", float, tf::shape<64, 32>> W1;
    tf::variable<"W2", float, tf::shape<32, 10>> W2;
    tf::variable<"g", float, tf::shape<2, 3>, tf::gpu<0>> g;
    tf::variable<"c", float, tf::shape<2, 3>> c;
    tf::placeholder<"img", float, tf::shape<tf::dyn, 8, 8, 3>> img;
    tf::variable<"k3", float, tf::shape<3, 3, 3, 4>> k3;
    tf::session s;

    // the valid twins of the cases below
    auto ok_add = m + c;
    auto ok_mm = tf::matmul(tf::matmul(x, W1), W2);
    auto ok_reshape = tf::reshape<3, 2>(m);
    auto ok_cast = m + tf::cast<float>(d);
    auto ok_device = tf::to<tf::gpu<0>>(c) + g;
    auto ok_exp = tf::exp(tf::cast<float>(i));
    auto ok_logic = flags && (m > 0.f);
    auto ok_sum = tf::sum<1>(m);
    auto ok_perm = tf::transpose<1, 0>(m);
    auto ok_squeeze = tf::squeeze<0>(tf::expand_dims<0>(m));
    auto ok_assign = tf::assign(c, m);
    auto ok_where = tf::where(flags, m, c);
    (void)ok_add, (void)ok_mm, (void)ok_reshape, (void)ok_cast, (void)ok_device, (void)ok_exp, (void)ok_logic;
    (void)ok_sum, (void)ok_perm, (void)ok_squeeze, (void)ok_assign, (void)ok_where;
    tf::placeholder<"e", float, tf::shape<2, 0>> e;
    auto ok_argmax_rows = tf::argmax<0>(e);  // [2,0] along its 2 rows: an empty result, nothing to pick from none
    (void)ok_argmax_rows;
    auto ok_conv = tf::conv2d(img, k3, tf::strides<2, 2>, tf::padding::same);
    auto ok_conv_dx = tf::conv2d_backprop_input(img, k3, tf::conv2d(img, k3));
    (void)ok_conv, (void)ok_conv_dx;
    tf::expr<float, tf::shape<tf::dyn, 3>> ok_expr = m * 2.0f;
    (void)ok_expr;
    s.run(ok_add, tf::feed(m, tf::tensor<float>({2, 3})));
    tf::placeholder<"r", float, tf::shape<2, 3>, tf::reference> r;
    s.run(tf::make_node<my::cpu_only>(m), tf::feed(m, tf::tensor<float>({2, 3})));  // runs on cpu
    s.run(tf::to<tf::cpu>(r) * 2.0f, tf::feed(r, tf::tensor<float>({2, 3})));
#ifdef TF_FAIL_no_kernel_for_device
    auto bad = s.run(tf::make_node<my::cpu_only>(r), tf::feed(r, tf::tensor<float>({2, 3})));  // no kernel<reference, cpu_only>
#endif

#ifdef TF_FAIL_add_shape
    auto bad = m + v;  // [2,3] + [4]
#endif
#ifdef TF_FAIL_matmul_shape
    auto bad = tf::matmul(x, W2);  // [?,64] x [32,10]
#endif
#ifdef TF_FAIL_matmul_rank
    auto bad = tf::matmul(v, W2);
#endif
#ifdef TF_FAIL_matmul_batch
    tf::placeholder<"a3", float, tf::shape<2, 3, 4>> a3;
    tf::placeholder<"b3", float, tf::shape<5, 4, 2>> b3;
    auto bad = tf::matmul(a3, b3);
#endif
#ifdef TF_FAIL_conv_channels
    tf::variable<"k2", float, tf::shape<3, 3, 2, 4>> k2;
    auto bad = tf::conv2d(img, k2);  // 3 input channels, a filter for 2
#endif
#ifdef TF_FAIL_conv_rank
    tf::placeholder<"hwc", float, tf::shape<8, 8, 3>> hwc;
    auto bad = tf::conv2d(hwc, k3);  // no batch axis
#endif
#ifdef TF_FAIL_conv_float
    tf::placeholder<"pixels", int, tf::shape<tf::dyn, 8, 8, 3>> pixels;
    tf::variable<"ik", int, tf::shape<3, 3, 3, 4>> ik;
    auto bad = tf::conv2d(pixels, ik);
#endif
#ifdef TF_FAIL_conv_window
    tf::variable<"k9", float, tf::shape<9, 9, 3, 4>> k9;
    auto bad = tf::conv2d(img, k9, tf::padding::valid);  // a 9x9 window on 8x8 images
#endif
#ifdef TF_FAIL_conv_backprop_shape
    tf::placeholder<"dy", float, tf::shape<tf::dyn, 8, 8, 5>> dy;
    auto bad = tf::conv2d_backprop_input(img, k3, dy);  // the output is [?, 6, 6, 4]
#endif
#if defined(TF_FAIL_conv_channels) || defined(TF_FAIL_conv_rank) || defined(TF_FAIL_conv_float) || \
    defined(TF_FAIL_conv_window) || defined(TF_FAIL_conv_backprop_shape)
    (void)bad;
#endif
#ifdef TF_FAIL_reshape_count
    auto bad = tf::reshape<5, 5>(m);
#endif
#ifdef TF_FAIL_reshape_target
    auto bad = tf::reshape<-1, -1>(m);
#endif
#ifdef TF_FAIL_dtype
    auto bad = m + d;  // float + double
#endif
#ifdef TF_FAIL_device
    auto bad = c + g;  // cpu + gpu<0>
#endif
#ifdef TF_FAIL_needs_float
    auto bad = tf::exp(i);
#endif
#ifdef TF_FAIL_needs_numeric
    auto bad = flags + flags;
#endif
#ifdef TF_FAIL_needs_bool
    auto bad = tf::logical_and(m, m);
#endif
#ifdef TF_FAIL_axis
    auto bad = tf::sum<2>(m);
#endif
#ifdef TF_FAIL_argmax_axis
    auto bad = tf::argmax<-3>(m);
#endif
#ifdef TF_FAIL_argmax_empty
    auto bad = tf::argmax<1>(e);  // axis 1 of [2,0] has no element
#endif
#ifdef TF_FAIL_permutation
    auto bad = tf::transpose<0, 0>(m);
#endif
#ifdef TF_FAIL_expand_axis
    auto bad = tf::expand_dims<4>(m);
#endif
#ifdef TF_FAIL_squeeze
    auto bad = tf::squeeze<0>(m);
#endif
#ifdef TF_FAIL_assign_shape
    auto bad = tf::assign(c, v);
#endif
#ifdef TF_FAIL_where_cond
    auto bad = tf::where(m, m, c);
#endif
#ifdef TF_FAIL_variable_dyn
    tf::variable<"bad", float, tf::shape<tf::dyn, 3>> bad;
#endif
#ifdef TF_FAIL_feed_dtype
    auto bad = tf::feed(m, tf::tensor<double>({2, 3}));
#endif
#ifdef TF_FAIL_feed_vector_dyn
    auto bad = tf::feed(x, std::vector<float>(64));
#endif
#ifdef TF_FAIL_session_gpu
    auto bad = s.run(g * 2.0f);
#endif
#ifdef TF_FAIL_shape_extent
    tf::shape<2, -3> bad;
#endif
#ifdef TF_FAIL_shape_rank
    tf::shape<1, 1, 1, 1, 1, 1, 1, 1, 1> bad;
#endif
#ifdef TF_FAIL_gpu_index
    tf::gpu<-1> bad;
#endif
#ifdef TF_FAIL_constant_dyn
    tf::constant_tensor<float, tf::shape<tf::dyn>> bad;
#endif
#ifdef TF_FAIL_tensor_index
    tf::tensor<float> t({2, 2});
    auto bad = t(0.5, 1);
#endif
#ifdef TF_FAIL_view_colmajor
    Eigen::MatrixXf cm(2, 2);
    auto bad = tf::view(cm);
#endif
#ifdef TF_FAIL_expr_dtype
    tf::expr<float, tf::shape<2, 3>> bad = d;
#endif
#ifdef TF_FAIL_expr_shape
    tf::expr<float, tf::shape<3, 2>> bad = m * 2.0f;
#endif
#ifdef TF_FAIL_expr_dyn
    tf::expr<float, tf::shape<4, 64>> bad = x;  // a dyn extent cannot become static
#endif
#ifdef TF_FAIL_expr_device
    tf::expr<float, tf::shape<2, 3>> bad = g;
#endif
#ifdef TF_FAIL_repeat_shape
    // a block that transposes: its result does not fit the running tf::expr's [2, 3]
    auto bad = tf::repeat(3, m, [](const auto& h) { return tf::transpose(h); });
#endif
#ifdef TF_FAIL_expr_gpu
    tf::expr<float, tf::shape<2, 3>, tf::gpu<0>> bad = g * 2.0f;  // the device fits; no backend runs it
#endif
#ifdef TF_FAIL_not_an_op
    auto bad = tf::make_node<my::nameless>(m);
#endif
#ifdef TF_FAIL_output_index
    auto bad = tf::output<1>(m * 2.0f);  // mul has one output
#endif
#ifdef TF_FAIL_make_outputs_one
    auto bad = tf::make_outputs<tf::op::add>(m, m);
#endif
#if defined(TF_FAIL_expr_dtype) || defined(TF_FAIL_expr_shape) || defined(TF_FAIL_expr_dyn) || \
    defined(TF_FAIL_expr_device) || defined(TF_FAIL_expr_gpu) || defined(TF_FAIL_repeat_shape) || \
    defined(TF_FAIL_not_an_op) || defined(TF_FAIL_output_index) || defined(TF_FAIL_make_outputs_one)
    (void)bad;
#endif
#if defined(TF_FAIL_add_shape) || defined(TF_FAIL_matmul_shape) || defined(TF_FAIL_matmul_rank) ||      \
    defined(TF_FAIL_matmul_batch) || defined(TF_FAIL_reshape_count) || defined(TF_FAIL_reshape_target) || \
    defined(TF_FAIL_dtype) || defined(TF_FAIL_device) || defined(TF_FAIL_needs_float) ||                   \
    defined(TF_FAIL_needs_numeric) || defined(TF_FAIL_needs_bool) || defined(TF_FAIL_axis) ||             \
    defined(TF_FAIL_argmax_axis) || defined(TF_FAIL_permutation) || defined(TF_FAIL_expand_axis) ||       \
    defined(TF_FAIL_squeeze) || defined(TF_FAIL_assign_shape) || defined(TF_FAIL_where_cond) ||           \
    defined(TF_FAIL_variable_dyn) || defined(TF_FAIL_feed_dtype) || defined(TF_FAIL_feed_vector_dyn) ||   \
    defined(TF_FAIL_session_gpu) || defined(TF_FAIL_shape_extent) || defined(TF_FAIL_shape_rank) ||       \
    defined(TF_FAIL_gpu_index) || defined(TF_FAIL_constant_dyn) || defined(TF_FAIL_tensor_index) ||       \
    defined(TF_FAIL_view_colmajor) || defined(TF_FAIL_no_kernel_for_device) || defined(TF_FAIL_argmax_empty)
    (void)bad;
#endif
}
