# Compile-fail cases of dropout, the normalisations and their layers
# (norm_cases.cpp; include()d from CMakeLists.txt beside this file, which
# defines typeflow_compile_fail). Each first error line names the op (with
# its rate and seed) and the shapes or dtypes, or states the layer's rule.
set(_s "typeflow::shape")
set(_fed "typeflow::op::dropout_mask_fed")
typeflow_compile_fail(norm_dropout_rate norm_cases.cpp TF_FAIL_norm_dropout_rate
  "dropout_rate_outside_0_1<typeflow::op::dropout_mask<1[.]0e[+]0, 0> >")
typeflow_compile_fail(norm_dropout_float norm_cases.cpp TF_FAIL_norm_dropout_float
  "needs_floating_point<typeflow::op::dropout_mask<5[.]0e-1, 0>, int>")
typeflow_compile_fail(norm_dropout_fed_float norm_cases.cpp TF_FAIL_norm_dropout_fed_float
  "needs_floating_point<${_fed}, int>")
typeflow_compile_fail(norm_dropout_rate_scalar norm_cases.cpp TF_FAIL_norm_dropout_rate_scalar
  "dropout_rate_must_be_scalar<${_fed}, ${_s}<3> >")
typeflow_compile_fail(norm_dropout_rate_dtype norm_cases.cpp TF_FAIL_norm_dropout_rate_dtype
  "dtypes_differ<${_fed}, float, double>")
typeflow_compile_fail(norm_dropout_rate_type norm_cases.cpp TF_FAIL_norm_dropout_rate_type
  "static assertion failed: typeflow: dropout: the rate must be a number or a scalar expression")
typeflow_compile_fail(norm_moments_float norm_cases.cpp TF_FAIL_norm_moments_float
  "needs_floating_point<typeflow::op::moments, int>")
typeflow_compile_fail(norm_batch_norm_shape norm_cases.cpp TF_FAIL_norm_batch_norm_shape
  "normalization_parameter_does_not_fit<typeflow::op::batch_normalization, ${_s}<-1, 8, 8, 3>, ${_s}<4> >")
typeflow_compile_fail(norm_batch_norm_dtype norm_cases.cpp TF_FAIL_norm_batch_norm_dtype
  "dtypes_differ<typeflow::op::batch_normalization, float, double>")
typeflow_compile_fail(norm_layer_norm_shape norm_cases.cpp TF_FAIL_norm_layer_norm_shape
  "normalization_parameter_does_not_fit<typeflow::op::layer_normalization, ${_s}<-1, 8, 8, 3>, ${_s}<4> >")
typeflow_compile_fail(norm_layer_dropout_rate norm_cases.cpp TF_FAIL_norm_layer_dropout_rate
  "static assertion failed: typeflow: layers::dropout: the rate must be in \\[0, 1\\)")
typeflow_compile_fail(norm_layer_batch_norm_momentum norm_cases.cpp TF_FAIL_norm_layer_batch_norm_momentum
  "static assertion failed: typeflow: layers::batch_norm: the momentum must be in \\[0, 1\\]")
typeflow_compile_fail(norm_layer_batch_norm_epsilon norm_cases.cpp TF_FAIL_norm_layer_batch_norm_epsilon
  "static assertion failed: typeflow: layers::batch_norm: epsilon must be positive")
typeflow_compile_fail(norm_layer_norm_epsilon norm_cases.cpp TF_FAIL_norm_layer_norm_epsilon
  "static assertion failed: typeflow: layers::layer_norm: epsilon must be positive")
typeflow_compile_fail(norm_layer_dyn_channels norm_cases.cpp TF_FAIL_norm_layer_dyn_channels
  "layer_shapes_do_not_chain<typeflow::layers::input<float, -1>, ${_s}<-1, -1>, typeflow::layers::batch_norm<>, typeflow::layers::expects::batch_and_features>")
