// typeflow/expr/ops/to_device.hpp — the explicit transfer node to<D>(e)
// (TensorFlow's Send/Recv pair): a copy, run by the destination device's
// kernel.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
/// node<to<To, From>, A>: A's value (on device From) copied to device To.
/// Always materialised (a transfer is a kernel of the destination device,
/// never fused away).
template <device_c To, class From = void>
struct to {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "to";
    template <class A>
    using traits = result_traits<value_type_t<A>, shape_t<A>, To>;
    static dims infer(const dims& a) { return a; }
};
}  // namespace op

/// The value of e, placed on device To.
template <device_c To, operand A>
decltype(auto) to(const A& a) {
    return make_node<op::to<To, device_t<meta::remove_cvref_t<A>>>>(a);
}

/// to<D>: the gradient moves back to the input's device.
template <device_c To, class Src>
struct gradient<op::to<To, Src>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        using From = device_t<meta::remove_cvref_t<decltype(n.template child<0>())>>;
        if constexpr (std::is_same_v<From, To>) return g;
        else return to<From>(g);
    }
};

}  // namespace typeflow
