// typeflow/expr/ops/assign.hpp — stateful ops: assign, assign_add, assign_sub.
//
// Order inside one run: every read of a variable sees the value it had when
// the run began, and writes are applied after all other work, in topological
// order (the later of two writes to one variable wins) — unless a control
// dependency (with_dependencies) asks for a write first; such a write is
// applied as soon as it is computed. The value of an assign node is the
// variable's new value. A locked update (op::locked_update) is computed at the
// end of the run, under a lock, and written at once.
#pragma once
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {

enum class assign_mode { set, add, sub };

namespace op {
template <assign_mode M>
struct assign {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr bool is_assign = true;
    static constexpr assign_mode mode = M;
    static constexpr std::string_view name = M == assign_mode::set ? "assign"
                                             : M == assign_mode::add ? "assign_add"
                                                                     : "assign_sub";
    template <class V, class E>
    static constexpr auto rule() {
        constexpr broadcast_result r = broadcast_dims(shape_t<V>::value, shape_t<E>::value);
        // the value's shape broadcasts to the variable's shape
        constexpr bool fits = r.ok && r.out == shape_t<V>::value;
        using failure = require::first_failure_t<
            require::same_device<assign, device_t<V>, device_t<E>>, require::same_dtype<assign, value_type_t<V>, value_type_t<E>>,
            require::that<M == assign_mode::set || numeric_c<value_type_t<V>>, diagnostic::needs_numeric<assign, value_type_t<V>>>,
            require::that<fits, diagnostic::shapes_do_not_broadcast<assign, shape_t<V>, shape_t<E>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<V>, shape_t<V>, device_t<V>>{};
    }
    template <class V, class E>
    using traits = decltype(rule<V, E>());
    template <class A>
    TYPEFLOW_HOST_DEVICE static constexpr A apply(A v, A e) {
        if constexpr (M == assign_mode::set) return e;
        else if constexpr (M == assign_mode::add) return A(v + e);
        else return A(v - e);
    }
};
}  // namespace op

/// Sets variable v to e (broadcast to v's shape) at the end of the run.
template <variable_c V, operand E>
decltype(auto) assign(const V& v, E&& e) {
    return make_node<op::assign<assign_mode::set>>(v, std::forward<E>(e));
}
/// Adds e to variable v at the end of the run.
template <variable_c V, class E>
decltype(auto) assign_add(const V& v, E&& e) {
    return make_node<op::assign<assign_mode::add>>(v, as_operand<value_type_t<V>, device_t<V>>(std::forward<E>(e)));
}
/// Subtracts e from variable v at the end of the run.
template <variable_c V, class E>
decltype(auto) assign_sub(const V& v, E&& e) {
    return make_node<op::assign<assign_mode::sub>>(v, as_operand<value_type_t<V>, device_t<V>>(std::forward<E>(e)));
}
/// Sets variable v to the scalar e.
template <variable_c V, class E>
    requires std::is_arithmetic_v<meta::remove_cvref_t<E>>
decltype(auto) assign(const V& v, E e) {
    return make_node<op::assign<assign_mode::set>>(v, as_operand<value_type_t<V>, device_t<V>>(e));
}

/// Assignments have no gradient (as in TensorFlow).
template <assign_mode M>
struct gradient<op::assign<M>> : no_gradient {};

namespace op {
/// An update op (assign, assign_add, assign_sub, apply_dense) made atomic:
/// computed and written at the end of the run under the process's update
/// lock, so it reads the variable's and the slots' values as the lock finds
/// them and no concurrent locked update is lost (TensorFlow's
/// use_locking=True). The kernels are Inner's.
template <class Inner>
struct locked_update : Inner {
    static_assert(Inner::is_assign, "typeflow: locked_update: only an update op can be locked");
    static constexpr bool is_locked_update = true;
};
}  // namespace op
template <class Inner>
struct gradient<op::locked_update<Inner>> : no_gradient {};

}  // namespace typeflow
