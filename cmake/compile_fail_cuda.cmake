# Compile-fail check of the CUDA backend's static_asserts, run by CTest as
# `cmake -D... -P cmake/compile_fail_cuda.cmake`: compiles SOURCE with NVCC
# (-c, into a scratch object) and FLAGS (a ;-list), with -D<DEFINE> when
# DEFINE is set. With DEFINE it passes only if the compile fails and its output
# matches REGEX; without, only if it compiles (the positive control).
foreach(_var NVCC SOURCE)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "compile_fail_cuda.cmake: ${_var} is not set")
  endif()
endforeach()
set(_args ${FLAGS})
if(DEFINE)
  list(APPEND _args -D${DEFINE})
endif()
get_filename_component(_stem "${SOURCE}" NAME_WE)
execute_process(COMMAND ${NVCC} ${_args} -c ${SOURCE} -o ${CMAKE_CURRENT_BINARY_DIR}/${_stem}_${DEFINE}.o
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT DEFINE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "the control of ${SOURCE} does not compile:\n${_out}")
  endif()
  return()
endif()
if(_rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} with -D${DEFINE} compiled; it must not")
endif()
if(NOT _out MATCHES "${REGEX}")
  message(FATAL_ERROR "${SOURCE} with -D${DEFINE} failed without the expected message (${REGEX}):\n${_out}")
endif()
message(STATUS "${DEFINE}: failed with the expected message")
