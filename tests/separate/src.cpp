// tests/separate/src.cpp — typeflow's plain runtime code and its io layer's,
// compiled once for this program (TYPEFLOW_SEPARATE_COMPILATION is defined
// for every file).
#include <typeflow/io/src.hpp>
#include <typeflow/src.hpp>
