# Compile-fail check, run by CTest as `cmake -D... -P cmake/compile_fail.cmake`
# (registered by typeflow_compile_fail() in tests/CMakeLists.txt).
#
# Inputs (-D):
#   CXX          the C++ compiler
#   SOURCE       the source file to compile (with -fsyntax-only)
#   FLAGS_FILE   one compiler argument per line (-std=..., -I..., -D...), written
#                by file(GENERATE) from typeflow::typeflow's usage requirements
#   EXTRA_FLAGS  optional ;-list of more arguments (the user's CMAKE_CXX_FLAGS)
#   EXPECT       "pch": precompiles the header SOURCE into OUTPUT (GCC's .gch),
#                with the same flags as the checks; "fail": passes only if
#                compiling with -D<DEFINE> fails and the
#                first output line containing "error:" matches the regex in
#                REGEX_FILE (a CMake regular expression: no \d, no lazy
#                quantifiers; escape [ ] ( ) . * + ? | ^ $ with a backslash);
#                "pass": passes only if compiling without the define succeeds.
#   DEFINE       the macro that turns the error on (EXPECT=fail)
#   REGEX_FILE   file holding the regex (EXPECT=fail)
#   MAX_OUTPUT_BYTES  optional (EXPECT=fail): the compiler's whole output
#                (stdout and stderr) must not be longer than this many bytes
#   FORBID_FILE  optional (EXPECT=fail): file holding a regex that no output
#                line containing "error:" may match (e.g. "Eigen::": no error
#                from inside Eigen after the diagnostic)
#   PCH_DIR      optional: a directory of precompiled headers
#                (<dir>/typeflow/<header>.gch, made with EXPECT=pch), searched
#                first. GCC takes one when it is the source's first include and
#                was made with the same flags and macros, and otherwise parses
#                the header; a .gch older than any header is not used. Only
#                the time changes (about 1 s a check instead of 4), not the
#                diagnostics: -Wno-ignored-attributes stands in for the pragma
#                in Eigen's headers that GCC 12 does not keep in a .gch.

foreach(_var CXX SOURCE FLAGS_FILE EXPECT)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "compile_fail.cmake: ${_var} is not set")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/flags_file.cmake)
typeflow_read_flags_file("${FLAGS_FILE}" _args)
if(DEFINED EXTRA_FLAGS)
  list(APPEND _args ${EXTRA_FLAGS})
endif()
list(APPEND _args -fdiagnostics-color=never)

# English diagnostics whatever the locale, so "error:" can be found.
set(ENV{LC_ALL} C)
set(ENV{LANG} C)

if(EXPECT STREQUAL "pch")
  if(NOT DEFINED OUTPUT OR OUTPUT STREQUAL "")
    message(FATAL_ERROR "compile_fail.cmake: EXPECT=pch needs OUTPUT")
  endif()
  get_filename_component(_dir "${OUTPUT}" DIRECTORY)
  file(MAKE_DIRECTORY "${_dir}")
  execute_process(
    COMMAND "${CXX}" ${_args} -Wno-ignored-attributes -x c++-header "${SOURCE}" -o "${OUTPUT}.tmp"
    RESULT_VARIABLE _rc
    OUTPUT_VARIABLE _out
    ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "precompiling ${SOURCE} failed (exit ${_rc})")
  endif()
  file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
  return()
endif()

list(APPEND _args -fsyntax-only)
if(DEFINED PCH_DIR AND NOT PCH_DIR STREQUAL "" AND IS_DIRECTORY "${PCH_DIR}")
  set(_fresh TRUE)
  file(GLOB_RECURSE _pchs "${PCH_DIR}/*.gch")
  if(NOT _pchs)
    set(_fresh FALSE)
  endif()
  if(DEFINED PCH_HEADERS_DIR)
    file(GLOB_RECURSE _headers "${PCH_HEADERS_DIR}/*.hpp" "${PCH_HEADERS_DIR}/*.ipp")
    foreach(_p IN LISTS _pchs)
      foreach(_h IN LISTS _headers)
        if("${_h}" IS_NEWER_THAN "${_p}")
          set(_fresh FALSE)
          break()
        endif()
      endforeach()
    endforeach()
  endif()
  if(_fresh)
    list(PREPEND _args "-I${PCH_DIR}")
    list(APPEND _args -Wno-ignored-attributes)
  endif()
endif()

if(EXPECT STREQUAL "fail")
  if(NOT DEFINED DEFINE OR DEFINE STREQUAL "" OR NOT DEFINED REGEX_FILE)
    message(FATAL_ERROR "compile_fail.cmake: EXPECT=fail needs DEFINE and REGEX_FILE")
  endif()
  file(READ "${REGEX_FILE}" REGEX)
  list(APPEND _args "-D${DEFINE}")
elseif(NOT EXPECT STREQUAL "pass")
  message(FATAL_ERROR "compile_fail.cmake: EXPECT must be 'pch', 'fail' or 'pass', not '${EXPECT}'")
endif()
execute_process(
  COMMAND "${CXX}" ${_args} "${SOURCE}"
  RESULT_VARIABLE _rc
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _out)

string(REPLACE ";" " " _cmdline "${CXX};${_args};${SOURCE}")

if(EXPECT STREQUAL "pass")
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "control compile FAILED (exit ${_rc}); the source must compile without the define.\n"
                        "command: ${_cmdline}")
  endif()
  message(STATUS "control compile succeeded: ${SOURCE}")
  return()
endif()

if(_rc EQUAL 0)
  message("${_out}")
  message(FATAL_ERROR "compilation SUCCEEDED with -D${DEFINE}, but it must fail.\n"
                      "command: ${_cmdline}")
endif()

# The first line that contains "error:" (GCC and Clang: "file:line:col: error: ...",
# "fatal error: ..."). Lines before it ("In file included from", "In instantiation
# of") carry no "error:".
string(REGEX MATCH "[^\n]*error:[^\n]*" _first_error "${_out}")
if(_first_error STREQUAL "")
  message("${_out}")
  message(FATAL_ERROR "compilation failed (exit ${_rc}) but printed no line containing 'error:'.\n"
                      "command: ${_cmdline}")
endif()

if(NOT _first_error MATCHES "${REGEX}")
  message("${_out}")
  message(FATAL_ERROR "the first error does not match the expected regex.\n"
                      "  first error: ${_first_error}\n"
                      "  regex:       ${REGEX}\n"
                      "command: ${_cmdline}")
endif()
string(LENGTH "${_out}" _bytes)
if(DEFINED MAX_OUTPUT_BYTES AND NOT MAX_OUTPUT_BYTES STREQUAL "" AND _bytes GREATER MAX_OUTPUT_BYTES)
  string(SUBSTRING "${_out}" 0 4000 _head)
  message("${_head}\n[... ${_bytes} bytes in all]")
  message(FATAL_ERROR "the compiler printed ${_bytes} bytes, more than MAX_OUTPUT_BYTES=${MAX_OUTPUT_BYTES}.\n"
                      "  first error: ${_first_error}\n"
                      "command: ${_cmdline}")
endif()

if(DEFINED FORBID_FILE AND NOT FORBID_FILE STREQUAL "")
  file(READ "${FORBID_FILE}" _forbid)
  string(REGEX MATCHALL "[^\n]*error:[^\n]*" _error_lines "${_out}")
  foreach(_line IN LISTS _error_lines)
    if(_line MATCHES "${_forbid}")
      message("${_out}")
      message(FATAL_ERROR "an error line matches the forbidden regex.\n"
                          "  line:  ${_line}\n"
                          "  regex: ${_forbid}\n"
                          "command: ${_cmdline}")
    endif()
  endforeach()
endif()
message(STATUS "failed as expected (${_bytes} bytes of output); first error: ${_first_error}")
