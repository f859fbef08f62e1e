# Compile-fail cases of the pooling ops (pool_cases.cpp; include()d from
# CMakeLists.txt beside this file, which defines typeflow_compile_fail).
# Each first error line names the op (with its window, strides and padding)
# and the shapes or dtypes.
set(_s "typeflow::shape")
set(_pad "typeflow::padding_mode::[a-z]+")
typeflow_compile_fail(pool_rank pool_cases.cpp TF_FAIL_pool_rank
  "pool_needs_rank_4<typeflow::op::max_pool2d<2, 2, 2, 2, ${_pad}>, ${_s}<8, 8, 3> >")
typeflow_compile_fail(pool_float pool_cases.cpp TF_FAIL_pool_float
  "needs_floating_point<typeflow::op::max_pool2d<2, 2, 2, 2, ${_pad}>, int>")
typeflow_compile_fail(pool_window pool_cases.cpp TF_FAIL_pool_window
  "pool_window_larger_than_input<typeflow::op::avg_pool2d<9, 9, 9, 9, ${_pad}>, ${_s}<-1, 8, 8, 3> >")
typeflow_compile_fail(pool_strides pool_cases.cpp TF_FAIL_pool_strides
  "pool_window_and_strides_must_be_positive<typeflow::op::max_pool2d<2, 2, 0, 1, ${_pad}> >")
typeflow_compile_fail(pool_grad_shape pool_cases.cpp TF_FAIL_pool_grad_shape
  "pool_gradient_shape_differs<typeflow::op::max_pool2d_grad<2, 2, 2, 2, ${_pad}>, ${_s}<-1, 8, 8, 3>, ${_s}<-1, 4, 4, 3> >")
typeflow_compile_fail(pool_grad_grad_shape pool_cases.cpp TF_FAIL_pool_grad_grad_shape
  "pool_gradient_shape_differs<typeflow::op::max_pool2d_grad_grad<2, 2, 2, 2, ${_pad}>, ${_s}<-1, 4, 4, 3>, ${_s}<-1, 8, 8, 3> >")
typeflow_compile_fail(pool_grad_dtype pool_cases.cpp TF_FAIL_pool_grad_dtype
  "dtypes_differ<typeflow::op::avg_pool2d_grad<2, 2, 2, 2, ${_pad}>, float, double>")
typeflow_compile_fail(pool_grad_device pool_cases.cpp TF_FAIL_pool_grad_device
  "devices_differ<typeflow::op::max_pool2d_grad<2, 2, 2, 2, ${_pad}>, typeflow::cpu, typeflow::reference>")
typeflow_compile_fail(pool_global_rank pool_cases.cpp TF_FAIL_pool_global_rank
  "pool_needs_rank_4<typeflow::op::global_avg_pool2d, ${_s}<8, 8, 3> >")
typeflow_compile_fail(pool_global_float pool_cases.cpp TF_FAIL_pool_global_float
  "needs_floating_point<typeflow::op::global_max_pool2d, int>")
