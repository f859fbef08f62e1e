// typeflow/backend/eigen/ops/cond.hpp — CPU kernel of cond (kernel/control_flow.hpp).
#pragma once
#include <typeflow/kernel/control_flow.hpp>

namespace typeflow {

template <>
struct kernel<cpu, op::cond> : detail::host_cond_kernel {};

}  // namespace typeflow
