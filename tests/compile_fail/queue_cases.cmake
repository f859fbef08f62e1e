# Compile-fail cases of the queues (queue_cases.cpp; include()d from
# CMakeLists.txt beside this file, which defines typeflow_compile_fail).
typeflow_compile_fail(queue_no_component queue_cases.cpp TF_FAIL_queue_no_component
  "typeflow: queue: an element has at least one component")
