// typeflow/backend/reference/ops/cond.hpp — reference kernel of cond (kernel/control_flow.hpp).
#pragma once
#include <typeflow/kernel/control_flow.hpp>

namespace typeflow {

template <>
struct kernel<reference, op::cond> : detail::host_cond_kernel {};

}  // namespace typeflow
