// Compile-fail cases of the layers and models: each TF_FAIL_<name> block is
// one misuse that must not compile (see model_cases.cmake for the first
// error line each must give). Without a define, everything here compiles:
// the positive control.
#include <typeflow/models.hpp>

namespace tf = typeflow;
namespace L = tf::layers;

int main() {
    // The valid twins of the cases below.
    using ok_cnn = tf::models::sequential<L::input<float, 8, 8, 1>, L::conv2d<4, 3, L::relu>, L::max_pool2d<2>, L::flatten,
                                          L::dense<10>>;
    static_assert(ok_cnn::params == (3 * 3 * 4 + 4) + (3 * 3 * 4 * 10 + 10));
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>> x;
    tf::placeholder<"img", float, tf::shape<tf::dyn, 8, 8, 1>> img;
    L::layer<"d", L::dense<2>> d;
    auto ok_net = tf::models::functional(tf::models::inputs(x), [=](auto mode) { return tf::models::outputs(d(x, mode)); });
    auto ok_model = ok_net.compile(tf::losses::mean_squared_error{}, tf::optimizers::sgd{});
    (void)ok_model;
#ifdef TF_FAIL_model_chain
    using bad = tf::models::sequential<L::input<float, 8, 8, 1>, L::conv2d<4, 3, L::relu>, L::dense<10>>;  // no flatten
    bad m;
#endif
#ifdef TF_FAIL_model_chain_first
    using bad = tf::models::sequential<L::input<float, 64>, L::conv2d<4, 3>>;  // a dense input into a convolution
    bad m;
#endif
#ifdef TF_FAIL_layer_input
    L::layer<"dense_on_image", L::dense<3>> dense_on_image;
    auto bad = dense_on_image(img, tf::inference);
#endif
#ifdef TF_FAIL_dense_units
    using bad = tf::models::sequential<L::input<float, 4>, L::dense<0>>;
    bad m;
#endif
#ifdef TF_FAIL_conv_filters
    using bad = tf::models::sequential<L::input<float, 8, 8, 1>, L::conv2d<0, 3>>;
    bad m;
#endif
#ifdef TF_FAIL_pool_size
    using bad = tf::models::sequential<L::input<float, 8, 8, 1>, L::max_pool2d<0>>;
    bad m;
#endif
#ifdef TF_FAIL_model_empty
    tf::models::sequential<L::input<float, 4>> m;
#endif
#ifdef TF_FAIL_per_output_count
    auto bad = ok_net.compile(tf::models::per_output(tf::losses::mean_squared_error{}, tf::losses::mean_squared_error{}),
                              tf::optimizers::sgd{});
#endif
#ifdef TF_FAIL_output_count
    auto bad = tf::models::outputs(x, x, x, x, x, x, x, x, x);
#endif
    (void)img;
}
