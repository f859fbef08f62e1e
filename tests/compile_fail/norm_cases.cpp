// Compile-fail cases of dropout, the normalisations and their layers
// (expr/ops/random.hpp, expr/ops/normalization.hpp, layers/dropout.hpp,
// layers/normalization.hpp): each TF_FAIL_<name> block is one misuse that
// must not compile (see norm_cases.cmake for the first error line each must
// give). Without a define, everything here compiles: the positive control.
#include <typeflow/models.hpp>

namespace tf = typeflow;
namespace L = tf::layers;

int main() {
    tf::placeholder<"img", float, tf::shape<tf::dyn, 8, 8, 3>> img;
    tf::placeholder<"pixels", int, tf::shape<tf::dyn, 8, 8, 3>> pixels;
    tf::placeholder<"rate", float, tf::shape<>> rate;
    tf::placeholder<"rates", float, tf::shape<3>> rates;
    tf::placeholder<"drate", double, tf::shape<>> drate;
    tf::variable<"c", float, tf::shape<3>> c;
    tf::variable<"c4", float, tf::shape<4>> c4;
    tf::variable<"cd", double, tf::shape<3>> cd;

    // the valid twins of the cases below
    auto ok_dropout = tf::dropout<0.5>(img) + tf::dropout<0.0, 3>(img) + tf::dropout(img, 0.5f) + tf::dropout(img, rate, 7);
    auto ok_moments = tf::moments<0, 1, 2>(img);
    auto ok_bn = tf::batch_normalization(img, ok_moments.mean, ok_moments.variance, c, c, 1e-3f);
    auto ok_ln = tf::layer_normalization(img, c, c, 1e-3f);
    using ok_model = tf::models::sequential<L::input<float, 8, 8, 3>, L::batch_norm<>, L::dropout<0.5>, L::layer_norm<>,
                                            L::flatten, L::dense<2>>;
    static_assert(ok_model::params == 4 * 3 + 2 * 3 + (192 * 2 + 2));
    ok_model m;
    auto ok_out = m(img, tf::training) + m(img, tf::inference);
    (void)ok_dropout, (void)ok_bn, (void)ok_ln, (void)ok_out;

#ifdef TF_FAIL_norm_dropout_rate
    auto bad = tf::dropout<1.0>(img);  // the rate must be below 1
#endif
#ifdef TF_FAIL_norm_dropout_float
    auto bad = tf::dropout<0.5>(pixels);
#endif
#ifdef TF_FAIL_norm_dropout_fed_float
    auto bad = tf::dropout(pixels, 0.5f);
#endif
#ifdef TF_FAIL_norm_dropout_rate_scalar
    auto bad = tf::dropout(img, rates);  // one rate per channel is not a thing
#endif
#ifdef TF_FAIL_norm_dropout_rate_dtype
    auto bad = tf::dropout(img, drate);
#endif
#ifdef TF_FAIL_norm_dropout_rate_type
    auto bad = tf::dropout(img, "0.5");
#endif
#ifdef TF_FAIL_norm_moments_float
    auto bad = tf::moments<0>(pixels);
#endif
#ifdef TF_FAIL_norm_batch_norm_shape
    auto bad = tf::batch_normalization(img, c, c, c4, c, 1e-3f);  // 4 offsets for 3 channels
#endif
#ifdef TF_FAIL_norm_batch_norm_dtype
    auto bad = tf::batch_normalization(img, c, cd, c, c, 1e-3f);
#endif
#ifdef TF_FAIL_norm_layer_norm_shape
    auto bad = tf::layer_normalization(img, c4, c, 1e-3f);
#endif
#ifdef TF_FAIL_norm_layer_dropout_rate
    L::dropout<1.5>::bind<"dropout", tf::dims{tf::dyn, 3}, float, tf::cpu> bad;
#endif
#ifdef TF_FAIL_norm_layer_batch_norm_momentum
    L::batch_norm<1.5>::bind<"bn", tf::dims{tf::dyn, 3}, float, tf::cpu> bad;
#endif
#ifdef TF_FAIL_norm_layer_batch_norm_epsilon
    L::batch_norm<0.99, 0.0>::bind<"bn", tf::dims{tf::dyn, 3}, float, tf::cpu> bad;
#endif
#ifdef TF_FAIL_norm_layer_norm_epsilon
    L::layer_norm<-1e-3>::bind<"ln", tf::dims{tf::dyn, 3}, float, tf::cpu> bad;
#endif
#ifdef TF_FAIL_norm_layer_dyn_channels
    using bad_model = tf::models::sequential<L::input<float, tf::dyn>, L::batch_norm<>>;
    bad_model bad;  // the channels (last extent) must be static
#endif
    return 0;
}
