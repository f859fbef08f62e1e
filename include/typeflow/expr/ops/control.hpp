// typeflow/expr/ops/control.hpp — control dependencies: with_dependencies.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
/// node<after, Deps..., X>: the value of X, computed after every Dep has run
/// (and an assign among them has been applied).
struct after {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "with_dependencies";
    template <class... C>
    struct traits {
        using X = meta::at_t<sizeof...(C) - 1, C...>;
        using value_type = value_type_t<X>;
        using shape_type = shape_t<X>;
        using device = device_t<X>;
        static constexpr std::size_t control_inputs = sizeof...(C) - 1;
    };
    template <class X>
    TYPEFLOW_HOST_DEVICE static constexpr X apply(X x) { return x; }  // of the value child alone
};
}  // namespace op

/// The value of x, computed only after deps have run; an assign in deps is
/// applied before x is read (TensorFlow's control_dependencies). Nodes that x
/// shares with the rest of the graph may have run earlier.
template <operand X, operand... Deps>
    requires(sizeof...(Deps) > 0)
decltype(auto) with_dependencies(X&& x, Deps&&... deps) {
    return make_node<op::after>(std::forward<Deps>(deps)..., std::forward<X>(x));
}

/// with_dependencies: the gradient goes to the value; none to the dependencies.
template <>
struct gradient<op::after> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        if constexpr (I + 1 == meta::children_t<N>::size) return g;
        else return ad::zero{};
    }
};

}  // namespace typeflow
