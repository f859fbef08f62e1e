# typeflow_read_flags_file(<file> <out-var>): the compiler arguments of a flags
# file written by tests/CMakeLists.txt (one per line, from typeflow::typeflow's
# usage requirements), without the blank lines and the bare "-I" / "-D" lines
# that empty lists leave. Included by the cmake -P checks that compile sources.
function(typeflow_read_flags_file file out)
  set(_args)
  file(STRINGS "${file}" _lines)
  foreach(_line IN LISTS _lines)
    string(STRIP "${_line}" _line)
    if(_line STREQUAL "" OR _line STREQUAL "-I" OR _line STREQUAL "-D")
      continue()
    endif()
    list(APPEND _args "${_line}")
  endforeach()
  set(${out} "${_args}" PARENT_SCOPE)
endfunction()
