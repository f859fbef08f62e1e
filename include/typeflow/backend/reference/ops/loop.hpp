// typeflow/backend/reference/ops/loop.hpp — reference kernels of the loop ops
// (kernel/control_flow.hpp; the iterations are run by the plan).
#pragma once
#include <typeflow/kernel/control_flow.hpp>

namespace typeflow {

template <class Tag, bool Pure>
struct kernel<reference, op::loop_var<Tag, Pure>> : detail::host_copy_child0_kernel {};
template <class Tag, class D, bool Pure>
struct kernel<reference, op::loop_counter<Tag, D, Pure>> : detail::host_counter_kernel {};
template <>
struct kernel<reference, op::loop<false>> : detail::host_copy_child0_kernel {};
template <>
struct kernel<reference, op::loop<true>> : detail::host_nothing_kernel {};

}  // namespace typeflow
