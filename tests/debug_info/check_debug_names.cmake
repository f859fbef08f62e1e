# Debug-information check, run by CTest as `cmake -D... -P check_debug_names.cmake`
# (registered in tests/CMakeLists.txt, GCC only).
#
# Compiles SOURCE with -O0 -g -fno-eliminate-unused-debug-types, which makes
# GCC write out every debug entry it built, used or not, and reads the names in
# the object file: none may contain a string of ABSENT (the library's
# compile-time-only classes, meta::compile_time_only: GCC builds no entry for
# them), and each string of PRESENT must occur (a control: the names are read).
#
# Inputs (-D): CXX, SOURCE, FLAGS_FILE (one compiler argument per line, as for
# cmake/compile_fail.cmake), OUTPUT (the object file), ABSENT and PRESENT
# (comma-separated lists of plain strings).
foreach(_var CXX SOURCE FLAGS_FILE OUTPUT ABSENT PRESENT)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "check_debug_names.cmake: ${_var} is not set")
  endif()
endforeach()
string(REPLACE "," ";" ABSENT "${ABSENT}")
string(REPLACE "," ";" PRESENT "${PRESENT}")
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/flags_file.cmake)
typeflow_read_flags_file("${FLAGS_FILE}" _args)
# A fresh build tree has no directory for the object yet.
get_filename_component(_out_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_out_dir}")
execute_process(
  COMMAND ${CXX} ${_args} -O0 -g -fno-eliminate-unused-debug-types -c ${SOURCE} -o ${OUTPUT}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "check_debug_names.cmake: compiling ${SOURCE} failed (${_rc}):\n${_out}")
endif()
set(_failed FALSE)
foreach(_name IN LISTS ABSENT)
  file(STRINGS "${OUTPUT}" _hits REGEX "${_name}" LIMIT_COUNT 1)
  if(_hits)
    list(GET _hits 0 _hit)
    string(SUBSTRING "${_hit}" 0 200 _hit)
    message(SEND_ERROR "debug information of ${SOURCE} names '${_name}': ${_hit}...")
    set(_failed TRUE)
  endif()
endforeach()
foreach(_name IN LISTS PRESENT)
  file(STRINGS "${OUTPUT}" _hits REGEX "${_name}" LIMIT_COUNT 1)
  if(NOT _hits)
    message(SEND_ERROR "debug information of ${SOURCE} does not name '${_name}' (the control)")
    set(_failed TRUE)
  endif()
endforeach()
file(REMOVE "${OUTPUT}")
if(NOT _failed)
  message(STATUS "debug names: OK")
endif()
