# Packaging test, run by CTest as `cmake -D... -P cmake/consumer_test.cmake`
# (the install_consumer test in tests/CMakeLists.txt):
#   1. cmake --install <typeflow build> --prefix <PREFIX>   (a fresh temp prefix)
#   2. configure tests/consumer with CMAKE_PREFIX_PATH=<PREFIX> (find_package only)
#   3. check that typeflow was found in <PREFIX>, not in the source tree or elsewhere
#   4. build the consumer and run it (through the consumer's own CTest tests):
#      main.cpp with typeflow::typeflow, and one program per component in
#      COMPONENTS (find_package(typeflow REQUIRED COMPONENTS ...)): io.cpp,
#      distributed.cpp, cuda.cpp with typeflow::io / ::distributed / ::cuda
#   5. configurations that must FAIL with a message saying why: a component
#      that does not exist, io without Cereal, distributed without OpenSSL,
#      cuda without the CUDA toolkit (CMAKE_DISABLE_FIND_PACKAGE_<dep> hides a
#      dependency that is installed)
#
# Inputs (-D): TYPEFLOW_BUILD_DIR PREFIX CONSUMER_SOURCE CONSUMER_BUILD GENERATOR CXX
#              CONFIG (may be empty) CTEST MAKE_PROGRAM Eigen3_DIR BLA_VENDOR (optional)
#              COMPONENTS (optional: components to require, separated by ',')
#              JOBS (optional: parallel jobs for the consumer's build)
#              SKIP_INSTALL (optional: PREFIX already holds the package; scripts/vcpkg_check.sh)

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

file(REMOVE_RECURSE "${CONSUMER_BUILD}" "${CONSUMER_BUILD}-fail")
if(NOT SKIP_INSTALL)
  file(REMOVE_RECURSE "${PREFIX}")
  run_step("install typeflow into ${PREFIX}"
    "${CMAKE_COMMAND}" --install "${TYPEFLOW_BUILD_DIR}" --prefix "${PREFIX}" --config "${CONFIG}")
endif()
if(NOT DEFINED COMPONENTS)
  set(COMPONENTS "")
endif()
string(REPLACE "," ";" COMPONENTS "${COMPONENTS}")

set(_configure
  "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE}"
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
string(REPLACE ";" "," _components_arg "${COMPONENTS}")
run_step("configure tests/consumer with find_package(typeflow COMPONENTS ${_components_arg})"
  ${_configure} -B "${CONSUMER_BUILD}" "-DTYPEFLOW_CONSUMER_COMPONENTS=${_components_arg}")

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

set(_parallel)
if(DEFINED JOBS AND NOT JOBS STREQUAL "")
  set(_parallel --parallel ${JOBS})
endif()
run_step("build the consumer"
  "${CMAKE_COMMAND}" --build "${CONSUMER_BUILD}" --config "${CONFIG}" ${_parallel})
# One test per component asked for, besides the plain consumer.
execute_process(COMMAND "${CTEST}" --test-dir "${CONSUMER_BUILD}" -C "${CONFIG}" -N
                OUTPUT_VARIABLE _listed RESULT_VARIABLE _rc)
foreach(_c consumer ${COMPONENTS})
  if(NOT _c STREQUAL "consumer")
    set(_c consumer_${_c})
  endif()
  if(NOT _listed MATCHES "Test +#[0-9]+: ${_c}\n")
    message(FATAL_ERROR "install_consumer: the consumer has no test ${_c}:\n${_listed}")
  endif()
endforeach()
run_step("run the consumer"
  "${CTEST}" --test-dir "${CONSUMER_BUILD}" -C "${CONFIG}"
  --output-on-failure --no-tests=error)

# Configurations that must fail, and say why. The message is matched with
# its white space folded (CMake rewraps a package's NOT_FOUND_MESSAGE).
function(expect_failure what)
  cmake_parse_arguments(PARSE_ARGV 1 _x "" "" "ARGS;EXPECT")
  message(STATUS "install_consumer: ${what} must fail")
  file(REMOVE_RECURSE "${CONSUMER_BUILD}-fail")
  execute_process(COMMAND ${_configure} -B "${CONSUMER_BUILD}-fail" ${_x_ARGS}
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  string(REGEX REPLACE "[ \t\r\n]+" " " _text "${_out}${_err}")
  if(_rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what}: configuring succeeded, expected a failure:\n${_out}${_err}")
  endif()
  foreach(_re IN LISTS _x_EXPECT)
    if(NOT _text MATCHES "${_re}")
      message(FATAL_ERROR "install_consumer: ${what}: the error does not match '${_re}':\n${_err}")
    endif()
  endforeach()
  message(STATUS "install_consumer: ${what}: failed as expected")
endfunction()

expect_failure("find_package(typeflow REQUIRED COMPONENTS io bogus)"
  ARGS "-DTYPEFLOW_CONSUMER_COMPONENTS=io,bogus"
  EXPECT "Reason given by package:" "typeflow has no component 'bogus' \\(its components: io, distributed, cuda\\)")
expect_failure("the io component without Cereal"
  ARGS "-DTYPEFLOW_CONSUMER_COMPONENTS=io" -DCMAKE_DISABLE_FIND_PACKAGE_cereal=ON
       "-DTYPEFLOW_CEREAL_INCLUDE_DIR=${CONSUMER_BUILD}-fail/no-cereal-here"
  EXPECT "typeflow component 'io' needs, and could not find:.* - Cereal \\(cereal/cereal.hpp, Debian package libcereal-dev")
expect_failure("the distributed component without OpenSSL"
  ARGS "-DTYPEFLOW_CONSUMER_COMPONENTS=distributed" -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON
  EXPECT "typeflow component 'distributed' needs, and could not find:.* - OpenSSL libcrypto \\(OpenSSL::Crypto, Debian package libssl-dev")
expect_failure("the cuda component without the CUDA toolkit"
  ARGS "-DTYPEFLOW_CONSUMER_COMPONENTS=cuda" -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
  EXPECT "typeflow component 'cuda' needs, and could not find:.* - the CUDA toolkit \\(CUDAToolkit: cudart, cublas, cublasLt, Debian package nvidia-cuda-toolkit")
file(REMOVE_RECURSE "${CONSUMER_BUILD}-fail")
