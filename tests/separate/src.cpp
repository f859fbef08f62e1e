// tests/separate/src.cpp — typeflow's plain runtime code, compiled once for
// this program (TYPEFLOW_SEPARATE_COMPILATION is defined for every file).
#include <typeflow/src.hpp>
