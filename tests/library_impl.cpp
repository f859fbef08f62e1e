// tests/library_impl.cpp — the plain (non-template) code of the runtime, io
// and models layers, compiled once for the unit tests (tests/CMakeLists.txt:
// TYPEFLOW_UNIT_TESTS_SEPARATE). The test files are then built with
// TYPEFLOW_SEPARATE_COMPILATION and compile only the headers: the float and
// double matrix products, the plan's and the checkpoint code are not compiled
// again in each of them.
#include <typeflow/src.hpp>
#include <typeflow/io/src.hpp>
#include <typeflow/models/src.hpp>
