// typeflow/expr/ops/to_device.hpp — the explicit transfer node to<D>(e)
// (TensorFlow's Send/Recv pair).
#pragma once
#include <typeflow/expr/elementwise.hpp>

namespace typeflow {
namespace op {
template <device_c To>
struct to {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "to";
    template <class A>
    using traits = result_traits<value_type_t<A>, shape_t<A>, To>;
    static auto array(const auto& a) { return a; }
};
}  // namespace op

/// The value of e, placed on device To.
template <device_c To, expression A>
auto to(A&& a) {
    return make_node<op::to<To>>(std::forward<A>(a));
}

}  // namespace typeflow
