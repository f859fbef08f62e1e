# Compile-fail cases of the distributed layer's compile-time parts
# (dist_cases.cpp; include()d from CMakeLists.txt beside this file).
set(_sa "static assertion failed: typeflow: ")
typeflow_compile_fail(placement_no_ps dist_cases.cpp TF_FAIL_placement_no_ps
  "${_sa}placement needs at least one ps task")
typeflow_compile_fail(placement_no_vars dist_cases.cpp TF_FAIL_placement_no_vars
  "${_sa}placement of no variables")
typeflow_compile_fail(placement_strategy dist_cases.cpp TF_FAIL_placement_strategy
  "${_sa}placement strategy must be tfd::round_robin or tfd::greedy_by_bytes")
typeflow_compile_fail(placement_not_variable dist_cases.cpp TF_FAIL_placement_not_variable
  "${_sa}placement: every entry must be a tf::variable type")
typeflow_compile_fail(placement_fixed_zero dist_cases.cpp TF_FAIL_placement_fixed_zero
  "${_sa}fixed_size_partitioner needs at least one shard")
typeflow_compile_fail(placement_min_max_zero dist_cases.cpp TF_FAIL_placement_min_max_zero
  "${_sa}min_max_partitioner needs MaxPartitions >= 1")
typeflow_compile_fail(placement_not_listed dist_cases.cpp TF_FAIL_placement_not_listed
  "${_sa}placement: the variable is not in this placement")
typeflow_compile_fail(mirrored_int dist_cases.cpp TF_FAIL_mirrored_int
  "optimizer_needs_floating_point_variable<typeflow::train::gradient_descent<float>, typeflow::variable<.*\"n\".*, int, typeflow::shape<4, 3> > >")
typeflow_compile_fail(mirrored_scalar dist_cases.cpp TF_FAIL_mirrored_scalar
  "${_sa}mirrored: the loss must be a scalar")
typeflow_compile_fail(mirrored_metric dist_cases.cpp TF_FAIL_mirrored_metric
  "${_sa}mirrored: every metric must be a scalar")
