// typeflow/backend/reference/reference.hpp — the reference backend (device
// `typeflow::reference`): naive loops that the CPU backend is tested against.
#pragma once
#include <typeflow/backend/reference/fused.hpp>
#include <typeflow/backend/reference/ops/apply.hpp>
#include <typeflow/backend/reference/ops/array.hpp>
#include <typeflow/backend/reference/ops/cond.hpp>
#include <typeflow/backend/reference/ops/conv.hpp>
#include <typeflow/backend/reference/ops/gather.hpp>
#include <typeflow/backend/reference/ops/gradient_ops.hpp>
#include <typeflow/backend/reference/ops/group.hpp>
#include <typeflow/backend/reference/ops/linalg.hpp>
#include <typeflow/backend/reference/ops/loop.hpp>
#include <typeflow/backend/reference/ops/matmul.hpp>
#include <typeflow/backend/reference/ops/nn.hpp>
#include <typeflow/backend/reference/ops/normalization.hpp>
#include <typeflow/backend/reference/ops/pool.hpp>
#include <typeflow/backend/reference/ops/random.hpp>
#include <typeflow/backend/reference/ops/reduce.hpp>
#include <typeflow/backend/reference/ops/rnn.hpp>
#include <typeflow/backend/reference/ops/transpose.hpp>
