// typeflow/expr/ops/cast.hpp — element-wise dtype conversion: cast<T>(e).
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
template <value_type_c To>
struct cast {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "cast";
    template <class A>
    using traits = result_traits<To, shape_t<A>, device_t<A>>;
    template <class A>
    TYPEFLOW_HOST_DEVICE static constexpr To apply(A a) { return static_cast<To>(a); }
};
}  // namespace op

/// Converts each element to To (float to int truncates toward zero; nonzero is true).
template <value_type_c To, operand A>
decltype(auto) cast(const A& a) {
    return make_node<op::cast<To>>(a);
}

/// cast: between floating types the gradient is cast back; casts to or from
/// integers and bool have a static zero gradient.
template <value_type_c To>
struct gradient<op::cast<To>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        using From = value_type_t<meta::remove_cvref_t<decltype(n.template child<0>())>>;
        if constexpr (std::is_floating_point_v<From> && std::is_floating_point_v<To>) {
            if constexpr (std::is_same_v<From, To>) return g;
            else return cast<From>(g);
        } else {
            return ad::zero{};
        }
    }
};

}  // namespace typeflow
