// Compile-fail cases of the pooling ops (expr/ops/pool.hpp): each
// TF_FAIL_<name> block is one misuse that must not compile; the first error
// line must name the op and the shapes or dtypes (pool_cases.cmake beside
// this file). Without a define, everything here compiles: that is the
// positive control.
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main() {
    tf::placeholder<"img", float, tf::shape<tf::dyn, 8, 8, 3>> img;
    tf::placeholder<"hwc", float, tf::shape<8, 8, 3>> hwc;
    tf::placeholder<"pixels", int, tf::shape<tf::dyn, 8, 8, 3>> pixels;
    tf::placeholder<"dy", float, tf::shape<tf::dyn, 4, 4, 3>> dy;
    tf::placeholder<"dy8", float, tf::shape<tf::dyn, 8, 8, 3>> dy8;
    tf::placeholder<"ddy", double, tf::shape<tf::dyn, 4, 4, 3>> ddy;
    tf::placeholder<"rdy", float, tf::shape<tf::dyn, 4, 4, 3>, tf::reference> rdy;

    // the valid twins of the cases below
    auto ok_max = tf::max_pool2d<2>(img);
    auto ok_avg = tf::avg_pool2d<3, 3>(img, tf::strides<1, 1>, tf::padding::same);
    auto ok_window = tf::avg_pool2d<9>(img, tf::padding::same);
    auto ok_float = tf::max_pool2d<2>(tf::cast<float>(pixels));
    auto ok_grad = tf::max_pool2d_grad<2>(img, dy);
    auto ok_avg_grad = tf::avg_pool2d_grad<2>(img, tf::cast<float>(ddy));
    auto ok_grad_grad = tf::max_pool2d_grad_grad<2>(img, dy8);
    auto ok_device = tf::max_pool2d_grad<2>(img, tf::to<tf::cpu>(rdy));
    auto ok_global = tf::global_avg_pool2d(img) + tf::global_max_pool2d(img);
    (void)ok_max, (void)ok_avg, (void)ok_window, (void)ok_float, (void)ok_grad, (void)ok_avg_grad;
    (void)ok_grad_grad, (void)ok_device, (void)ok_global;

#ifdef TF_FAIL_pool_rank
    auto bad = tf::max_pool2d<2>(hwc);  // no batch axis
#endif
#ifdef TF_FAIL_pool_float
    auto bad = tf::max_pool2d<2>(pixels);
#endif
#ifdef TF_FAIL_pool_window
    auto bad = tf::avg_pool2d<9>(img);  // a 9x9 VALID window on 8x8 images
#endif
#ifdef TF_FAIL_pool_strides
    auto bad = tf::max_pool2d<2>(img, tf::strides<0, 1>);
#endif
#ifdef TF_FAIL_pool_grad_shape
    auto bad = tf::max_pool2d_grad<2>(img, dy8);  // the pooled shape is [?, 4, 4, 3]
#endif
#ifdef TF_FAIL_pool_grad_grad_shape
    auto bad = tf::max_pool2d_grad_grad<2>(img, dy);  // g has x's shape [?, 8, 8, 3]
#endif
#ifdef TF_FAIL_pool_grad_dtype
    auto bad = tf::avg_pool2d_grad<2>(img, ddy);
#endif
#ifdef TF_FAIL_pool_grad_device
    auto bad = tf::max_pool2d_grad<2>(img, rdy);
#endif
#ifdef TF_FAIL_pool_global_rank
    auto bad = tf::global_avg_pool2d(hwc);
#endif
#ifdef TF_FAIL_pool_global_float
    auto bad = tf::global_max_pool2d(pixels);
#endif
#if defined(TF_FAIL_pool_rank) || defined(TF_FAIL_pool_float) || defined(TF_FAIL_pool_window) || \
    defined(TF_FAIL_pool_strides) || defined(TF_FAIL_pool_grad_shape) || defined(TF_FAIL_pool_grad_grad_shape) || \
    defined(TF_FAIL_pool_grad_dtype) || defined(TF_FAIL_pool_grad_device) || defined(TF_FAIL_pool_global_rank) || \
    defined(TF_FAIL_pool_global_float)
    (void)bad;
#endif
    (void)hwc, (void)pixels, (void)dy, (void)dy8, (void)ddy, (void)rdy;
    return 0;
}
