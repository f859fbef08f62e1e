// typeflow/backend/reference/ops/group.hpp — reference group (runs its inputs, yields true).
#pragma once
#include <typeflow/expr/ops/group.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <>
struct kernel<reference, op::group> {
    template <class N, class Ctx>
    static void run(const N&, const Ctx&, bool* out) {
        *out = true;
    }
};

}  // namespace typeflow
