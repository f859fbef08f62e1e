// typeflow/backend/eigen/ops/normalization.hpp — no CPU kernels: moments,
// batch_normalization and layer_normalization (expr/ops/normalization.hpp)
// are compositions of reductions and element-wise ops, which this backend
// already runs (the element-wise parts fuse into one pass). The header stays
// so that a fused kernel, should one pay off, has its place.
#pragma once
#include <typeflow/expr/ops/normalization.hpp>
