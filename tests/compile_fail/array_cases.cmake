# Compile-fail cases of the array ops (array_cases.cpp): concat, slice, split,
# stack, unstack, pad, tile, flatten. The first error line names the op and
# the operand shapes (or, for a bad attribute, the static_assert's text).
set(_s "typeflow::shape")
typeflow_compile_fail(array_concat_rank array_cases.cpp TF_FAIL_array_concat_rank
  "operand_ranks_differ<typeflow::op::concat<0>, ${_s}<2, 3>, ${_s}<3> >")
typeflow_compile_fail(array_concat_axis array_cases.cpp TF_FAIL_array_concat_axis
  "axis_out_of_range<typeflow::op::concat<2>, ${_s}<2, 3> >")
typeflow_compile_fail(array_concat_extents array_cases.cpp TF_FAIL_array_concat_extents
  "extents_differ_off_axis<typeflow::op::concat<0>, ${_s}<2, 3>, ${_s}<2, 4> >")
typeflow_compile_fail(array_concat_dtype array_cases.cpp TF_FAIL_array_concat_dtype
  "dtypes_differ<typeflow::op::concat<0>, float, double>")
typeflow_compile_fail(array_concat_device array_cases.cpp TF_FAIL_array_concat_device
  "devices_differ<typeflow::op::concat<0>, typeflow::cpu, typeflow::gpu<0> >")
typeflow_compile_fail(array_slice_rank array_cases.cpp TF_FAIL_array_slice_rank
  "attribute_count_differs_from_rank<typeflow::op::slice<typeflow::op::begin_tag<0>, typeflow::sizes_tag<1> >, ${_s}<2, 3> >")
typeflow_compile_fail(array_slice_bounds array_cases.cpp TF_FAIL_array_slice_bounds
  "slice_outside_operand<typeflow::op::slice<typeflow::op::begin_tag<1, 1>, typeflow::sizes_tag<2, 1> >, ${_s}<2, 3> >")
typeflow_compile_fail(array_slice_begin array_cases.cpp TF_FAIL_array_slice_begin
  "static assertion failed: typeflow: slice: begin must be >= 0")
typeflow_compile_fail(array_sizes array_cases.cpp TF_FAIL_array_sizes
  "static assertion failed: typeflow: sizes: an extent must be >= 0, or -1")
typeflow_compile_fail(array_split_axis array_cases.cpp TF_FAIL_array_split_axis
  "axis_out_of_range<typeflow::op::split<2, typeflow::equal_parts<2> >, ${_s}<2, 3> >")
typeflow_compile_fail(array_split_divisible array_cases.cpp TF_FAIL_array_split_divisible
  "extent_not_divisible_into_parts<typeflow::op::split<1, typeflow::equal_parts<2> >, ${_s}<2, 3> >")
typeflow_compile_fail(array_split_sizes array_cases.cpp TF_FAIL_array_split_sizes
  "split_sizes_do_not_add_up<typeflow::op::split<1, typeflow::sizes_tag<1, 1> >, ${_s}<2, 3> >")
typeflow_compile_fail(array_split_rest array_cases.cpp TF_FAIL_array_split_rest
  "static assertion failed: typeflow: split: at most one size may be -1")
typeflow_compile_fail(array_split_zero array_cases.cpp TF_FAIL_array_split_zero
  "static assertion failed: typeflow: split: the number of parts must be positive")
typeflow_compile_fail(array_stack_rank array_cases.cpp TF_FAIL_array_stack_rank
  "operand_ranks_differ<typeflow::op::stack<0>, ${_s}<2, 3>, ${_s}<3> >")
typeflow_compile_fail(array_stack_axis array_cases.cpp TF_FAIL_array_stack_axis
  "axis_out_of_range<typeflow::op::stack<3>, ${_s}<2, 3> >")
typeflow_compile_fail(array_stack_shapes array_cases.cpp TF_FAIL_array_stack_shapes
  "stacked_shapes_differ<typeflow::op::stack<0>, ${_s}<2, 3>, ${_s}<2, 4> >")
typeflow_compile_fail(array_unstack_axis array_cases.cpp TF_FAIL_array_unstack_axis
  "axis_out_of_range<typeflow::op::unstack<2>, ${_s}<2, 3> >")
typeflow_compile_fail(array_unstack_dyn array_cases.cpp TF_FAIL_array_unstack_dyn
  "extent_must_be_static<typeflow::op::unstack<0>, ${_s}<-1, 3> >")
typeflow_compile_fail(array_pad_rank array_cases.cpp TF_FAIL_array_pad_rank
  "attribute_count_differs_from_rank<typeflow::op::pad<typeflow::paddings<typeflow::pad_width{1, 1}>, typeflow::pad_mode::constant>, ${_s}<2, 3> >")
typeflow_compile_fail(array_pad_reflect array_cases.cpp TF_FAIL_array_pad_reflect
  "paddings_too_large<typeflow::op::pad<typeflow::paddings<typeflow::pad_width{2, 0}, typeflow::pad_width{0, 0}>, typeflow::pad_mode::reflect>, ${_s}<2, 3> >")
typeflow_compile_fail(array_pad_negative array_cases.cpp TF_FAIL_array_pad_negative
  "static assertion failed: typeflow: pad: paddings must be >= 0")
typeflow_compile_fail(array_tile_rank array_cases.cpp TF_FAIL_array_tile_rank
  "attribute_count_differs_from_rank<typeflow::op::tile<2>, ${_s}<2, 3> >")
typeflow_compile_fail(array_tile_negative array_cases.cpp TF_FAIL_array_tile_negative
  "static assertion failed: typeflow: tile: multiples must be >= 0")
typeflow_compile_fail(array_flatten_rank array_cases.cpp TF_FAIL_array_flatten_rank
  "rank_too_small<typeflow::op::flatten, ${_s}<> >")
