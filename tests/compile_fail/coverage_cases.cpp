// Compile-fail cases of the checks no other case file reached: the losses
// and one_hot (expr/ops/nn.hpp), the linear-algebra ops (expr/ops/linalg.hpp),
// the convolution's attributes (expr/ops/conv.hpp), a cond whose branches
// are on two devices (autodiff/cond.hpp), a loop of no variables
// (autodiff/loop.hpp), a gradient with respect to an integer expression
// (autodiff/grad.hpp), a layer hyperparameter out of range
// (layers/normalization.hpp), the input pipeline's empty element
// and its map and filter functions (data/dataset.hpp, data/from_tensors.hpp,
// data/map.hpp), a view of a column-major Eigen matrix
// (backend/eigen/interop.hpp) and make_outputs on an op of one output
// (expr/ops/outputs.hpp). The cases that need the distributed runtime's and
// the monitored session's headers are in session_cases.cpp. Each TF_FAIL_<name>
// block is one misuse that must not compile; the first error line must name
// the op and the shapes, dtypes or devices, or say what is wrong
// (coverage_cases.cmake beside this file). Without a define, everything here
// compiles: that is the positive control.
#include <typeflow/models.hpp>  // first: the checks' precompiled header (tests/CMakeLists.txt)
#include <typeflow/data.hpp>
#include <typeflow/backend/eigen/interop.hpp>
#include <typeflow/typeflow.hpp>

#include <Eigen/Core>

#include <cstdint>
#include <tuple>

namespace tf = typeflow;
namespace L = tf::layers;

int main() {
    tf::placeholder<"z", float, tf::shape<tf::dyn, 10>> z;
    tf::placeholder<"z9", float, tf::shape<tf::dyn, 9>> z9;
    tf::placeholder<"zd", float, tf::shape<4, tf::dyn>> zd;
    tf::placeholder<"labels", std::int32_t, tf::shape<tf::dyn>> labels;
    tf::placeholder<"labels2", std::int32_t, tf::shape<tf::dyn, 2>> labels2;
    tf::placeholder<"flabels", float, tf::shape<tf::dyn>> flabels;
    tf::placeholder<"m", double, tf::shape<3, 3>> m;
    tf::placeholder<"m23", double, tf::shape<2, 3>> m23;
    tf::placeholder<"m333", double, tf::shape<2, 3, 3>> m333;
    tf::placeholder<"b", double, tf::shape<3, 2>> b;
    tf::placeholder<"b42", double, tf::shape<4, 2>> b42;
    tf::placeholder<"img", float, tf::shape<tf::dyn, 8, 8, 3>> img;
    tf::variable<"k", float, tf::shape<3, 3, 3, 4>> k{tf::init::zeros{}};
    tf::placeholder<"p", bool, tf::shape<>> p;
    tf::placeholder<"x", float, tf::shape<2, 3>> x;
    tf::placeholder<"xr", float, tf::shape<2, 3>, tf::reference> xr;
    tf::variable<"w", float, tf::shape<2, 3>> w{tf::init::zeros{}};
    tf::placeholder<"f", float, tf::shape<tf::dyn, 5>> f;

    // the valid twins of the cases below
    [[maybe_unused]] auto ok_sparse = tf::sparse_softmax_cross_entropy(z, labels);
    [[maybe_unused]] auto ok_softmax = tf::softmax_cross_entropy(z, tf::one_hot<10>(labels));
    [[maybe_unused]] auto ok_sigmoid = tf::sigmoid_cross_entropy(z, z);
    [[maybe_unused]] auto ok_inverse = tf::matrix_inverse(m);
    [[maybe_unused]] auto ok_det = tf::matrix_determinant(m);
    [[maybe_unused]] auto ok_solve = tf::solve(m, b);
    [[maybe_unused]] auto ok_conv = tf::conv2d(img, k, tf::strides<2, 1>, tf::padding::same, tf::dilations<1, 2>);
    [[maybe_unused]] auto ok_cond = tf::cond(p, [&] { return x; }, [&] { return tf::to<tf::cpu>(xr); });
    [[maybe_unused]] auto ok_while = tf::while_loop([](const auto& a) { return tf::sum(a) < 9.f; },
                                                    [](const auto& a) { return std::make_tuple(a * 2.f); },
                                                    std::make_tuple(x), 5);
    const auto xi = tf::cast<std::int32_t>(x * w);
    [[maybe_unused]] auto ok_grad = tf::grad(tf::sum(tf::cast<float>(xi) * w), w);
    tf::layers::layer<"norm", L::layer_norm<1e-5>> norm;
    [[maybe_unused]] auto ok_norm = norm(f, tf::training);
    const tf::tensor<float> t({4, 5});
    [[maybe_unused]] auto ok_data = tf::data::from_tensors(t);
    [[maybe_unused]] auto ok_map = ok_data.map([](const tf::tensor<float>& r) { return r; });
    [[maybe_unused]] auto ok_filter = ok_data.filter([](const tf::tensor<float>&) { return true; });
    const Eigen::Matrix<float, 2, 3, Eigen::RowMajor> row_major = Eigen::Matrix<float, 2, 3, Eigen::RowMajor>::Zero();
    const Eigen::Matrix<float, 2, 3> col_major = Eigen::Matrix<float, 2, 3>::Zero();
    [[maybe_unused]] auto ok_view = tf::view(row_major);
    (void)col_major;

#ifdef TF_FAIL_loss_sparse_labels_shape
    [[maybe_unused]] auto bad = tf::sparse_softmax_cross_entropy(z, labels2);  // labels [?, 2] for logits [?, 10]
#endif
#ifdef TF_FAIL_loss_sparse_class_count
    [[maybe_unused]] auto bad = tf::sparse_softmax_cross_entropy(zd, labels);  // the classes are dyn
#endif
#ifdef TF_FAIL_loss_sparse_float_labels
    [[maybe_unused]] auto bad = tf::sparse_softmax_cross_entropy(z, flabels);
#endif
#ifdef TF_FAIL_loss_softmax_shapes
    [[maybe_unused]] auto bad = tf::softmax_cross_entropy(z, z9);  // 10 classes against 9
#endif
#ifdef TF_FAIL_loss_sigmoid_shapes
    [[maybe_unused]] auto bad = tf::sigmoid_cross_entropy(z, z9);
#endif
#ifdef TF_FAIL_one_hot_float_labels
    [[maybe_unused]] auto bad = tf::one_hot<10>(flabels);
#endif
#ifdef TF_FAIL_one_hot_depth
    [[maybe_unused]] auto bad = tf::one_hot<0>(labels);
#endif
#ifdef TF_FAIL_linalg_batch
    [[maybe_unused]] auto bad = tf::matrix_inverse(m333);  // a batch of matrices
#endif
#ifdef TF_FAIL_linalg_not_square
    [[maybe_unused]] auto bad = tf::matrix_determinant(m23);
#endif
#ifdef TF_FAIL_linalg_solve_rows
    [[maybe_unused]] auto bad = tf::solve(m, b42);  // 4 rows on the right for a 3 x 3 system
#endif
#ifdef TF_FAIL_conv_stride_zero
    [[maybe_unused]] auto bad = tf::conv2d(img, k, tf::strides<0, 1>);
#endif
#ifdef TF_FAIL_conv_dilation_zero
    [[maybe_unused]] auto bad = tf::conv2d(img, k, tf::strides<1, 1>, tf::padding::valid, tf::dilations<1, 0>);
#endif
#ifdef TF_FAIL_cond_branch_devices
    [[maybe_unused]] auto bad = tf::cond(p, [&] { return x; }, [&] { return xr; });
#endif
#ifdef TF_FAIL_loop_no_variables
    [[maybe_unused]] auto bad = tf::while_loop([]() { return tf::scalar<bool>(false); }, []() { return std::make_tuple(); },
                                               std::make_tuple(), 5);
#endif
#ifdef TF_FAIL_grad_int_expression
    [[maybe_unused]] auto bad = tf::grad(tf::sum(tf::cast<float>(xi) * w), xi);
#endif
#ifdef TF_FAIL_layer_hyperparameter
    tf::layers::layer<"big", L::layer_norm<1e19>> big;  // epsilon past what a decimal literal holds
    [[maybe_unused]] auto bad = big(f, tf::training);
#endif
#ifdef TF_FAIL_data_from_no_tensors
    [[maybe_unused]] auto bad = tf::data::from_tensors<>();
#endif
#ifdef TF_FAIL_data_empty_element
    [[maybe_unused]] tf::data::dataset<> bad;
#endif
#ifdef TF_FAIL_data_map_mutable
    [[maybe_unused]] auto bad = ok_data.map([n = 0](const tf::tensor<float>& r) mutable { return ++n, r; });
#endif
#ifdef TF_FAIL_data_filter_mutable
    [[maybe_unused]] auto bad = ok_data.filter([n = 0](const tf::tensor<float>&) mutable { return ++n % 2 == 0; });
#endif
#ifdef TF_FAIL_data_map_result
    [[maybe_unused]] auto bad = ok_data.map([](const tf::tensor<float>& r) { return r.size(); });  // a number
#endif
#ifdef TF_FAIL_view_col_major
    [[maybe_unused]] auto bad = tf::view(col_major);
#endif
#ifdef TF_FAIL_make_outputs_single
    [[maybe_unused]] auto bad = tf::make_outputs<tf::op::relu>(x);
#endif
    return 0;
}
