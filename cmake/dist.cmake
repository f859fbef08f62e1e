# typeflow distributed runtime (include/typeflow/dist): targets, tests, benchmarks.
# Included from the top-level CMakeLists.txt, which defines the INTERFACE
# target `typeflow` (include dir include/, cxx_std_20) and calls enable_testing().
#
#   typeflow_dist        INTERFACE: typeflow + Boost headers (Asio) + OpenSSL::Crypto + Threads
#   typeflow-launch      the local launcher (tools/typeflow-launch.cpp)
#   dist_* tests         registered with CTest (label "dist")
#   bench_dist_*         benchmarks (built when Gloo / MPI are found)

set(TYPEFLOW_DIST_DIR ${CMAKE_CURRENT_LIST_DIR}/..)

find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(Boost 1.81 REQUIRED CONFIG)

add_library(typeflow_dist INTERFACE)
target_link_libraries(typeflow_dist INTERFACE typeflow Boost::headers OpenSSL::Crypto Threads::Threads)
target_compile_definitions(typeflow_dist INTERFACE BOOST_ASIO_NO_DEPRECATED)

add_executable(typeflow-launch ${TYPEFLOW_DIST_DIR}/tools/typeflow-launch.cpp)
target_compile_features(typeflow-launch PRIVATE cxx_std_20)
target_link_libraries(typeflow-launch PRIVATE typeflow)

option(TYPEFLOW_DIST_TESTS "Build the distributed runtime's tests" ON)
if(TYPEFLOW_DIST_TESTS)
  include(${CMAKE_CURRENT_LIST_DIR}/dist-tests.cmake)
endif()

option(TYPEFLOW_DIST_BENCHMARKS "Build the distributed runtime's benchmarks" ON)
if(TYPEFLOW_DIST_BENCHMARKS)
  include(${CMAKE_CURRENT_LIST_DIR}/dist-benchmarks.cmake OPTIONAL)
endif()
