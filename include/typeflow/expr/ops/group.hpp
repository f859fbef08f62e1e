// typeflow/expr/ops/group.hpp — group(ops...): one node that runs several
// ops (an optimizer's updates), with the value `true`.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
/// node<group, C...>: runs every child; its value is a bool scalar, true.
/// Assignments among the children are applied at the end of the run, like
/// any other (reads before writes).
struct group {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "group";
    template <class... C>
    struct traits {
        using value_type = bool;
        using shape_type = shape<>;
        using device = device_t<meta::at_t<0, C...>>;
    };
    template <class... D>
    static dims infer(const D&...) {
        return dims{};
    }
};
}  // namespace op

/// One node that runs all of xs (TensorFlow's tf.group); its value is true.
template <operand... Xs>
    requires(sizeof...(Xs) > 0)
decltype(auto) group(Xs&&... xs) {
    return make_node<op::group>(std::forward<Xs>(xs)...);
}

template <>
struct gradient<op::group> : no_gradient {};

}  // namespace typeflow
