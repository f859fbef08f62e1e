# Compile-fail cases of the checks no other case file reached
# (coverage_cases.cpp and session_cases.cpp; include()d from CMakeLists.txt
# beside this file, which defines typeflow_compile_fail): the losses and one_hot, the linear-algebra ops, the
# convolution's strides and dilations, a cond over two devices, a loop of no
# variables, a gradient with respect to an integer expression, a layer
# hyperparameter out of range, an empty dataset element, a parameter-server
# loss that is not a scalar, a map or filter function that is mutable or
# returns no tensors, a monitored session's float step, a view of a
# column-major matrix, make_outputs on an op of one output. Each first error
# line names the op and the shapes, dtypes or devices, or says what is wrong.
set(_s "typeflow::shape")
set(_sparse "typeflow::op::sparse_softmax_cross_entropy")
typeflow_compile_fail(loss_sparse_labels_shape coverage_cases.cpp TF_FAIL_loss_sparse_labels_shape
  "labels_do_not_match_logits<${_sparse}, ${_s}<-1, 10>, ${_s}<-1, 2> >")
typeflow_compile_fail(loss_sparse_class_count coverage_cases.cpp TF_FAIL_loss_sparse_class_count
  "class_count_must_be_static<${_sparse}, ${_s}<4, -1> >")
typeflow_compile_fail(loss_sparse_float_labels coverage_cases.cpp TF_FAIL_loss_sparse_float_labels
  "needs_integer<${_sparse}, float>")
typeflow_compile_fail(loss_softmax_shapes coverage_cases.cpp TF_FAIL_loss_softmax_shapes
  "shapes_differ<typeflow::op::softmax_cross_entropy, ${_s}<-1, 10>, ${_s}<-1, 9> >")
typeflow_compile_fail(loss_sigmoid_shapes coverage_cases.cpp TF_FAIL_loss_sigmoid_shapes
  "shapes_differ<typeflow::op::sigmoid_cross_entropy, ${_s}<-1, 10>, ${_s}<-1, 9> >")
typeflow_compile_fail(one_hot_float_labels coverage_cases.cpp TF_FAIL_one_hot_float_labels
  "needs_integer<typeflow::op::one_hot<10, float>, float>")
typeflow_compile_fail(one_hot_depth coverage_cases.cpp TF_FAIL_one_hot_depth
  "static assertion failed: typeflow: one_hot: Depth must be positive")
typeflow_compile_fail(linalg_batch coverage_cases.cpp TF_FAIL_linalg_batch
  "not_a_matrix<typeflow::op::matrix_inverse, ${_s}<2, 3, 3> >")
typeflow_compile_fail(linalg_not_square coverage_cases.cpp TF_FAIL_linalg_not_square
  "matrix_is_not_square<typeflow::op::determinant<false>, ${_s}<2, 3> >")
typeflow_compile_fail(linalg_solve_rows coverage_cases.cpp TF_FAIL_linalg_solve_rows
  "matrix_rows_differ<typeflow::op::solve, ${_s}<3, 3>, ${_s}<4, 2> >")
typeflow_compile_fail(conv_stride_zero coverage_cases.cpp TF_FAIL_conv_stride_zero
  "static assertion failed: typeflow: conv2d: strides must be positive")
typeflow_compile_fail(conv_dilation_zero coverage_cases.cpp TF_FAIL_conv_dilation_zero
  "static assertion failed: typeflow: conv2d: dilations must be positive")
typeflow_compile_fail(cond_branch_devices coverage_cases.cpp TF_FAIL_cond_branch_devices
  "cond_branch_devices_differ<typeflow::cpu, typeflow::reference>")
typeflow_compile_fail(loop_no_variables coverage_cases.cpp TF_FAIL_loop_no_variables
  "static assertion failed: typeflow: while_loop/scan: a tuple of loop variables needs at least one")
typeflow_compile_fail(grad_int_expression coverage_cases.cpp TF_FAIL_grad_int_expression
  "grad_wrt_integer_expression<typeflow::node<typeflow::op::cast<int>, .*, int>")
typeflow_compile_fail(layer_hyperparameter coverage_cases.cpp TF_FAIL_layer_hyperparameter
  "static assertion failed: typeflow: layers: a hyperparameter is negative or too large")
typeflow_compile_fail(data_from_no_tensors coverage_cases.cpp TF_FAIL_data_from_no_tensors
  "static assertion failed: typeflow: data::from_tensors: give at least one tensor")
typeflow_compile_fail(data_empty_element coverage_cases.cpp TF_FAIL_data_empty_element
  "static assertion failed: typeflow: data::dataset: an element has at least one component")
typeflow_compile_fail(ps_loss_not_scalar session_cases.cpp TF_FAIL_ps_loss_not_scalar
  "static assertion failed: typeflow: parameter_servers: the loss must be a scalar")
typeflow_compile_fail(data_map_mutable coverage_cases.cpp TF_FAIL_data_map_mutable
  "static assertion failed: typeflow: data::map: the function must be callable as const \\(no mutable lambda\\)")
typeflow_compile_fail(data_filter_mutable coverage_cases.cpp TF_FAIL_data_filter_mutable
  "static assertion failed: typeflow: data::filter: the predicate must be callable as const")
typeflow_compile_fail(data_map_result coverage_cases.cpp TF_FAIL_data_map_result
  "static assertion failed: typeflow: data::map: the function must return a tf::tensor<T> or a std::tuple of tf::tensor")
typeflow_compile_fail(monitored_step_float session_cases.cpp TF_FAIL_monitored_step_float
  "static assertion failed: typeflow: monitored_session: the global step must be an integer scalar variable")
typeflow_compile_fail(view_col_major coverage_cases.cpp TF_FAIL_view_col_major
  "static assertion failed: typeflow: view: a matrix must be row-major to be viewed as a tensor without a copy")
typeflow_compile_fail(make_outputs_single coverage_cases.cpp TF_FAIL_make_outputs_single
  "static assertion failed: typeflow: make_outputs: the op has one output \\(use make_node\\)")
