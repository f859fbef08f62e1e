// typeflow/backend/reference/ops/normalization.hpp — no reference kernels:
// moments, batch_normalization and layer_normalization
// (expr/ops/normalization.hpp) are compositions of reductions and
// element-wise ops, which the reference backend already runs.
#pragma once
#include <typeflow/expr/ops/normalization.hpp>
