// typeflow/expr/ops/cast.hpp — element-wise dtype conversion: cast<T>(e).
#pragma once
#include <typeflow/expr/elementwise.hpp>

namespace typeflow {
namespace op {
template <value_type_c To>
struct cast {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "cast";
    template <class A>
    using traits = result_traits<To, shape_t<A>, device_t<A>>;
    static auto array(const auto& a) { return a.template cast<To>(); }
};
}  // namespace op

/// Converts each element to To (float to int truncates toward zero; nonzero is true).
template <value_type_c To, expression A>
auto cast(A&& a) {
    return make_node<op::cast<To>>(std::forward<A>(a));
}

}  // namespace typeflow
