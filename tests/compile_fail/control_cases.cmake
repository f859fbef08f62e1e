# Compile-fail cases of tf::cond, tf::switch_case, tf::while_loop and tf::scan (control_cases.cpp;
# include()d from CMakeLists.txt beside this file, which defines
# typeflow_compile_fail). Each first error line names both shapes or dtypes.
set(_s "typeflow::shape")
typeflow_compile_fail(cond_shapes control_cases.cpp TF_FAIL_cond_shapes
  "cond_branch_shapes_differ<${_s}<2, 3>, ${_s}<3, 2> >")
typeflow_compile_fail(cond_dtypes control_cases.cpp TF_FAIL_cond_dtypes
  "cond_branch_dtypes_differ<float, double>")
typeflow_compile_fail(cond_predicate_shape control_cases.cpp TF_FAIL_cond_predicate_shape
  "cond_predicate_is_not_a_scalar_bool<bool, ${_s}<3> >")
typeflow_compile_fail(cond_predicate_dtype control_cases.cpp TF_FAIL_cond_predicate_dtype
  "cond_predicate_is_not_a_scalar_bool<float, ${_s}<> >")
typeflow_compile_fail(cond_not_expression control_cases.cpp TF_FAIL_cond_not_expression
  "typeflow: cond: each branch must return a graph expression")
typeflow_compile_fail(switch_index control_cases.cpp TF_FAIL_switch_index
  "switch_case_index_is_not_a_scalar_integer<float, ${_s}<> >")
typeflow_compile_fail(while_body_shape control_cases.cpp TF_FAIL_while_body_shape
  "while_loop_body_changes_the_shape<${_s}<2, 3>, ${_s}<3, 2> >")
typeflow_compile_fail(while_body_dtype control_cases.cpp TF_FAIL_while_body_dtype
  "while_loop_body_changes_the_dtype<float, double>")
typeflow_compile_fail(while_condition control_cases.cpp TF_FAIL_while_condition
  "while_loop_condition_is_not_a_scalar_bool<float, ${_s}<> >")
typeflow_compile_fail(scan_scalar control_cases.cpp TF_FAIL_scan_scalar
  "scan_elems_have_no_leading_axis<${_s}<> >")
typeflow_compile_fail(scan_rows_rank control_cases.cpp TF_FAIL_scan_rows_rank
  "typeflow: scan with independent_rows: the rows and the carry need a batch axis")
typeflow_compile_fail(scan_rows_static control_cases.cpp TF_FAIL_scan_rows_static
  "typeflow: scan with independent_rows: the extents after the batch axis must be static")
typeflow_compile_fail(lstm_input control_cases.cpp TF_FAIL_lstm_input
  "layer_input_does_not_fit<typeflow::layers::layer<.*\"rnn\".*, typeflow::layers::lstm<3>.*>, ${_s}<2, 3>, typeflow::layers::expects::batch_time_features>")
typeflow_compile_fail(lstm_units control_cases.cpp TF_FAIL_lstm_units
  "typeflow: layers::lstm: the number of units must be positive")
typeflow_compile_fail(gru_units control_cases.cpp TF_FAIL_gru_units
  "typeflow: layers::gru: the number of units must be positive")
typeflow_compile_fail(simple_rnn_units control_cases.cpp TF_FAIL_simple_rnn_units
  "typeflow: layers::simple_rnn: the number of units must be positive")
typeflow_compile_fail(while_in_while_grad control_cases.cpp TF_FAIL_while_in_while_grad
  "typeflow: grad: a tf::while_loop inside a tf::scan's step or a tf::while_loop's body has no gradient yet")
typeflow_compile_fail(while_vars_dtype control_cases.cpp TF_FAIL_while_vars_dtype
  "typeflow: while_loop/scan: the loop variables of a tuple must share one dtype")
typeflow_compile_fail(while_vars_dyn control_cases.cpp TF_FAIL_while_vars_dyn
  "typeflow: while_loop/scan: the loop variables of a tuple need static shapes")
typeflow_compile_fail(while_vars_arity control_cases.cpp TF_FAIL_while_vars_arity
  "typeflow: while_loop/scan: with a tuple of loop variables, the function returns a std::tuple of their next values")
typeflow_compile_fail(while_vars_shape control_cases.cpp TF_FAIL_while_vars_shape
  "while_loop_body_changes_the_shape<${_s}<2, 3>, ${_s}<3, 2> >")
typeflow_compile_fail(while_vars_body_dtype control_cases.cpp TF_FAIL_while_vars_body_dtype
  "while_loop_body_changes_the_dtype<float, double>")
typeflow_compile_fail(scan_vars_shape control_cases.cpp TF_FAIL_scan_vars_shape
  "while_loop_body_changes_the_shape<${_s}<3>, ${_s}<> >")
typeflow_compile_fail(map_fn_scalar control_cases.cpp TF_FAIL_map_fn_scalar
  "map_fn_elems_have_no_leading_axis<${_s}<> >")
typeflow_compile_fail(map_fn_dyn control_cases.cpp TF_FAIL_map_fn_dyn
  "map_fn_result_needs_a_static_shape<${_s}<-1, 3> >")
