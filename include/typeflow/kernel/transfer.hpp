// typeflow/kernel/transfer.hpp — the transfer kernel between devices whose
// tensors live in host memory (cpu, reference): a copy. A device with memory
// of its own (a GPU) provides the kernels of transfers to and from it.
#pragma once
#include <cstring>

#include <typeflow/core/device.hpp>
#include <typeflow/expr/ops/to_device.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <device_c To, class From>
    requires host_memory_v<To> && host_memory_v<From>
struct kernel<To, op::to<To, From>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto& a = n.template child<0>();
        const auto count = static_cast<std::size_t>(ctx.dims_of(a).numel());
        if (count) std::memcpy(out, ctx.input(a), count * sizeof(value_type_t<N>));
    }
};

}  // namespace typeflow
