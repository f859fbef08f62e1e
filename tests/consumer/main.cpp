// Built against an installed typeflow (find_package(typeflow) + typeflow::typeflow).
// TODO(lead): make this use the public API (build a tiny graph, run it, check the result).
#include <typeflow/typeflow.hpp>

int main() { return 0; }
