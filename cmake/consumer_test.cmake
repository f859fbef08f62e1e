# Packaging test, run by CTest as `cmake -D... -P cmake/consumer_test.cmake`
# (the install_consumer test in tests/CMakeLists.txt):
#   1. cmake --install <typeflow build> --prefix <PREFIX>   (a fresh temp prefix)
#   2. configure tests/consumer with CMAKE_PREFIX_PATH=<PREFIX> (find_package only)
#   3. check that typeflow was found in <PREFIX>, not in the source tree or elsewhere
#   4. build the consumer and run it (through the consumer's own CTest test)
#
# Inputs (-D): TYPEFLOW_BUILD_DIR PREFIX CONSUMER_SOURCE CONSUMER_BUILD GENERATOR CXX
#              CONFIG (may be empty) CTEST MAKE_PROGRAM Eigen3_DIR BLA_VENDOR (optional)

foreach(_var TYPEFLOW_BUILD_DIR PREFIX CONSUMER_SOURCE CONSUMER_BUILD GENERATOR CXX)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "consumer_test.cmake: ${_var} is not set")
  endif()
endforeach()
if(NOT DEFINED CTEST OR CTEST STREQUAL "")
  get_filename_component(_bindir "${CMAKE_COMMAND}" DIRECTORY)
  set(CTEST "${_bindir}/ctest")
endif()
if(NOT DEFINED CONFIG OR CONFIG STREQUAL "")
  set(CONFIG Release)
endif()

function(run_step what)
  message(STATUS "install_consumer: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} FAILED (exit ${_rc})\ncommand: ${ARGN}")
  endif()
endfunction()

file(REMOVE_RECURSE "${PREFIX}" "${CONSUMER_BUILD}")

run_step("install typeflow into ${PREFIX}"
  "${CMAKE_COMMAND}" --install "${TYPEFLOW_BUILD_DIR}" --prefix "${PREFIX}" --config "${CONFIG}")

set(_configure
  "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE}" -B "${CONSUMER_BUILD}"
  -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX}"
  "-DCMAKE_BUILD_TYPE=${CONFIG}"
  "-DCMAKE_PREFIX_PATH=${PREFIX}"
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(DEFINED MAKE_PROGRAM AND NOT MAKE_PROGRAM STREQUAL "")
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(DEFINED Eigen3_DIR AND NOT Eigen3_DIR STREQUAL "")
  list(APPEND _configure "-DEigen3_DIR=${Eigen3_DIR}")
endif()
if(DEFINED BLA_VENDOR AND NOT BLA_VENDOR STREQUAL "")
  list(APPEND _configure "-DBLA_VENDOR=${BLA_VENDOR}")
endif()
run_step("configure tests/consumer with find_package(typeflow)" ${_configure})

# The package must come from the temp prefix.
file(STRINGS "${CONSUMER_BUILD}/CMakeCache.txt" _dir_line REGEX "^typeflow_DIR:")
string(REGEX REPLACE "^typeflow_DIR:[A-Z]+=" "" _typeflow_dir "${_dir_line}")
file(REAL_PATH "${PREFIX}" _prefix_real)
if(EXISTS "${_typeflow_dir}")
  file(REAL_PATH "${_typeflow_dir}" _typeflow_dir)
endif()
string(FIND "${_typeflow_dir}" "${_prefix_real}/" _pos)
if(NOT _pos EQUAL 0)
  message(FATAL_ERROR "install_consumer: typeflow was found in '${_typeflow_dir}', "
                      "not in the install prefix '${_prefix_real}'")
endif()
message(STATUS "install_consumer: typeflow_DIR = ${_typeflow_dir}")

run_step("build the consumer"
  "${CMAKE_COMMAND}" --build "${CONSUMER_BUILD}" --config "${CONFIG}")
run_step("run the consumer"
  "${CTEST}" --test-dir "${CONSUMER_BUILD}" -C "${CONFIG}"
  --output-on-failure --no-tests=error)
