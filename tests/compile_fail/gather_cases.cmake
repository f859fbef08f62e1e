# Compile-fail cases of gather, indexed_slices and the embedding layer
# (gather_cases.cpp; include()d from CMakeLists.txt beside this file, which
# defines typeflow_compile_fail). Each first error line names the op and the
# shapes, dtypes or devices.
set(_s "typeflow::shape")
typeflow_compile_fail(gather_index_dtype gather_cases.cpp TF_FAIL_gather_index_dtype
  "gather_indices_must_be_int32_or_int64<typeflow::op::gather<0>, float>")
typeflow_compile_fail(gather_axis gather_cases.cpp TF_FAIL_gather_axis
  "axis_out_of_range<typeflow::op::gather<2>, ${_s}<5, 3> >")
typeflow_compile_fail(gather_scalar_params gather_cases.cpp TF_FAIL_gather_scalar_params
  "axis_out_of_range<typeflow::op::gather<0>, ${_s}<> >")
typeflow_compile_fail(gather_rank gather_cases.cpp TF_FAIL_gather_rank
  "gather_result_rank_exceeds_max_rank<typeflow::op::gather<0>, ${_s}<2, 2, 2, 2, 2, 2, 2, 2>, ${_s}<-1, 2> >")
typeflow_compile_fail(gather_device gather_cases.cpp TF_FAIL_gather_device
  "devices_differ<typeflow::op::gather<0>, typeflow::cpu, typeflow::reference>")
typeflow_compile_fail(gather_slices_shape gather_cases.cpp TF_FAIL_gather_slices_shape
  "indexed_slices_values_shape_differs<typeflow::op::indexed_slices<0>, ${_s}<-1, 2, 4>, ${_s}<-1, 2, 3> >")
typeflow_compile_fail(gather_slices_dtype gather_cases.cpp TF_FAIL_gather_slices_dtype
  "dtypes_differ<typeflow::op::indexed_slices<0>, float, double>")
typeflow_compile_fail(gather_slices_index_dtype gather_cases.cpp TF_FAIL_gather_slices_index_dtype
  "gather_indices_must_be_int32_or_int64<typeflow::op::indexed_slices<0>, float>")
typeflow_compile_fail(gather_embedding_dims gather_cases.cpp TF_FAIL_gather_embedding_dims
  "static assertion failed: typeflow: layers::embedding: the vocabulary size and the output dimension must be positive")
typeflow_compile_fail(gather_embedding_float_ids gather_cases.cpp TF_FAIL_gather_embedding_float_ids
  "gather_indices_must_be_int32_or_int64<typeflow::op::gather<0>, float>")
