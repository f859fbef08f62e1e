# Compile-fail cases of the queue graph ops (queue_op_cases.cpp; include()d from
# CMakeLists.txt beside this file, which defines typeflow_compile_fail).
typeflow_compile_fail(dequeue_shape_count queue_op_cases.cpp TF_FAIL_dequeue_shape_count
  "typeflow: dequeue: give one static shape per component of the queue's elements")
typeflow_compile_fail(dequeue_dyn_shape queue_op_cases.cpp TF_FAIL_dequeue_dyn_shape
  "typeflow: dequeue: the element shapes must be static")
typeflow_compile_fail(dequeue_many_zero queue_op_cases.cpp TF_FAIL_dequeue_many_zero
  "typeflow: dequeue_many: N must be positive")
typeflow_compile_fail(enqueue_count queue_op_cases.cpp TF_FAIL_enqueue_count
  "typeflow: enqueue: give one expression per component of the queue's elements")
typeflow_compile_fail(enqueue_dtype queue_op_cases.cpp TF_FAIL_enqueue_dtype
  "typeflow: enqueue: a component's dtype differs from the queue's")
typeflow_compile_fail(enqueue_device queue_op_cases.cpp TF_FAIL_enqueue_device
  "typeflow: enqueue: queues hold host tensors")
