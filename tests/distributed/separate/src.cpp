// tests/distributed/separate/src.cpp — the distributed layer's code, compiled
// once for this program (TYPEFLOW_SEPARATE_COMPILATION is defined for every file).
#include <typeflow/distributed/src.hpp>
