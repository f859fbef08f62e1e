# Benchmarks of the distributed runtime; included by cmake/dist.cmake.
set(_bd ${TYPEFLOW_DIST_DIR}/benchmarks/dist)
add_executable(bench_dist_typeflow ${_bd}/bench_typeflow.cpp)
target_link_libraries(bench_dist_typeflow PRIVATE typeflow_dist)
target_compile_options(bench_dist_typeflow PRIVATE -O2)
add_executable(bench_dist_tcp_ring ${_bd}/bench_tcp_ring.cpp)
target_link_libraries(bench_dist_tcp_ring PRIVATE typeflow_dist)
target_compile_options(bench_dist_tcp_ring PRIVATE -O2)
