// typeflow/expr/ops/where.hpp — element-wise selection: where(cond, a, b).
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
struct where {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "where";
    template <class C, class A, class B>
    static constexpr auto rule() {
        constexpr broadcast_result ab = broadcast_dims(shape_t<A>::value, shape_t<B>::value);
        using S1 = shape_from_dims<ab.out>;
        using failure = require::first_failure_t<
            require::same_device<where, device_t<C>, device_t<A>>, require::same_device<where, device_t<A>, device_t<B>>,
            require::boolean<where, value_type_t<C>>, require::same_dtype<where, value_type_t<A>, value_type_t<B>>,
            require::broadcast<where, shape_t<A>, shape_t<B>>, require::broadcast<where, shape_t<C>, S1>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr broadcast_result r = broadcast_dims(shape_t<C>::value, S1::value);
            return result_traits<value_type_t<A>, shape_from_dims<r.out>, device_t<A>>{};
        }
    }
    template <class C, class A, class B>
    using traits = decltype(rule<C, A, B>());
    template <class A>
    TYPEFLOW_HOST_DEVICE static constexpr A apply(bool c, A a, A b) { return c ? a : b; }
};
}  // namespace op

/// Element-wise `cond ? a : b` with broadcasting; cond is a bool tensor.
template <operand C, class A, class B>
    requires binary_operands<A, B>
decltype(auto) where(const C& cond, const A& a, const B& b) {
    if constexpr (detail::is_misuse_v<C> || detail::is_misuse_v<A> || detail::is_misuse_v<B>) {
        return detail::first_misuse<C, A, B>();
    } else if constexpr (expression<A> && expression<B>) {
        return make_node<op::where>(cond, a, b);
    } else if constexpr (expression<A>) {
        return make_node<op::where>(cond, a,
                                    as_operand<value_type_t<A>, device_t<A>>(b));
    } else {
        return make_node<op::where>(cond, as_operand<value_type_t<B>, device_t<B>>(a),
                                    b);
    }
}

/// where: the gradient goes to the selected branch; none to the condition.
template <>
struct gradient<op::where> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return ad::zero{};
        else if constexpr (I == 1) return where(n.template child<0>(), g, ad::lit_like<0>(g));
        else return where(n.template child<0>(), ad::lit_like<0>(g), g);
    }
};

}  // namespace typeflow
