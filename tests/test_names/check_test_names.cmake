# Fails when a Catch2 test case name in DIR/*.cpp holds a ';': CTest splits a
# registered name there, and both halves then match no test case.
# Run: cmake -DDIR=<dir> -P check_test_names.cmake
file(GLOB _files ${DIR}/*.cpp)
set(_bad 0)
foreach(_f IN LISTS _files)
  file(READ ${_f} _text)
  string(REGEX MATCH "TEST_CASE\\(\"[^\"\n]*;[^\"\n]*\"" _hit "${_text}")
  if(_hit)
    get_filename_component(_name ${_f} NAME)
    message("${_name}: a test case name holds ';' (CTest would split it): ${_hit}")
    set(_bad 1)
  endif()
endforeach()
if(_bad)
  message(FATAL_ERROR "test case names must not hold ';'")
endif()
