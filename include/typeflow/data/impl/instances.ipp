// typeflow/data/impl/instances.ipp — the explicit instantiations that
// data/instances.hpp declares extern under TYPEFLOW_SEPARATE_COMPILATION
// (included by typeflow/src.hpp).
#pragma once
#include <typeflow/data/instances.hpp>

TYPEFLOW_DATA_INSTANCES(template)
