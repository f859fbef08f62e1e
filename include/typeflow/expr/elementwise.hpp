// typeflow/expr/elementwise.hpp — shape, dtype and device rules shared by
// element-wise ops (numpy broadcasting, one dtype, one device).
#pragma once
#include <string_view>
#include <type_traits>

#include <typeflow/core/config.hpp>
#include <typeflow/expr/diagnostics.hpp>
#include <typeflow/expr/scalar_math.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/node.hpp>

namespace typeflow {

/// The value type, shape and device an op yields.
template <class V, class S, class D>
struct result_traits {
    using value_type = V;
    using shape_type = S;
    using device = D;
};

/// dtype rules: which operand dtypes an element-wise op takes (`requirement`,
/// a require:: check; `check`, the same as a static_assert) and what it yields.
namespace rule {
struct numeric {  // arithmetic on numbers, same dtype out
    template <class Op, class T>
    static constexpr bool check() { return check::numeric<Op, T>(); }
    template <class Op, class T>
    using requirement = require::numeric<Op, T>;
    template <class T>
    using result = T;
};
struct floating {  // transcendental functions
    template <class Op, class T>
    static constexpr bool check() { return check::floating<Op, T>(); }
    template <class Op, class T>
    using requirement = require::floating<Op, T>;
    template <class T>
    using result = T;
};
struct logical {  // bool in, bool out
    template <class Op, class T>
    static constexpr bool check() { return check::boolean<Op, T>(); }
    template <class Op, class T>
    using requirement = require::boolean<Op, T>;
    template <class T>
    using result = bool;
};
struct ordering {  // <, <=, >, >= on numbers, bool out
    template <class Op, class T>
    static constexpr bool check() { return check::numeric<Op, T>(); }
    template <class Op, class T>
    using requirement = require::numeric<Op, T>;
    template <class T>
    using result = bool;
};
struct equality {  // ==, != on any dtype, bool out
    template <class Op, class T>
    static constexpr bool check() { return true; }
    template <class Op, class T>
    using requirement = require::that<true, void>;
    template <class T>
    using result = bool;
};
}  // namespace rule

/// An operand as a shape and dtype rule sees it: its dtype, shape and device.
/// Rules take these instead of the operands' own types, so a rule is
/// instantiated once per distinct signature, not once per node (whose type,
/// and so every entity keyed on it, spells its whole subgraph).
template <class V, class S, class D>
struct operand_sig : detail::expression_base {
    using value_type = V;
    using shape_type = S;
    using device = D;
};
template <class A>
using operand_sig_t = operand_sig<value_type_t<A>, shape_t<A>, device_t<A>>;

/// Rule of a unary element-wise op: same shape and device, dtype by Rule.
template <class Op, class Rule, class A>
constexpr auto unary_rule() {
    using failure = require::first_failure_t<typename Rule::template requirement<Op, value_type_t<A>>>;
    if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
    else return result_traits<typename Rule::template result<value_type_t<A>>, shape_t<A>, device_t<A>>{};
}

/// Rule of a binary element-wise op: one device, one dtype, broadcast shapes.
template <class Op, class Rule, class A, class B>
constexpr auto binary_rule() {
    using failure = require::first_failure_t<require::same_device<Op, device_t<A>, device_t<B>>,
                                             require::same_dtype<Op, value_type_t<A>, value_type_t<B>>,
                                             typename Rule::template requirement<Op, value_type_t<A>>,
                                             require::broadcast<Op, shape_t<A>, shape_t<B>>>;
    if constexpr (!std::is_void_v<failure>) {
        return rule_failed<failure>{};
    } else {
        constexpr broadcast_result r = broadcast_dims(shape_t<A>::value, shape_t<B>::value);
        return result_traits<typename Rule::template result<value_type_t<A>>, shape_from_dims<r.out>, device_t<A>>{};
    }
}

/// Declares the tag of a unary element-wise op: its name, dtype rule and
/// scalar function (an expression in `a`, usable on host and device).
#define TYPEFLOW_UNARY_OP(NAME, RULE, SCALAR)                                   \
    struct NAME {                                                               \
        static constexpr op_kind kind = op_kind::elementwise;                   \
        static constexpr std::string_view name = #NAME;                         \
        template <class A>                                                      \
        using traits = decltype(unary_rule<NAME, rule::RULE, operand_sig_t<A>>()); \
        template <class A>                                                      \
        TYPEFLOW_HOST_DEVICE static constexpr auto apply(A a) { return SCALAR; } \
    };
/// Declares the tag of a binary element-wise op (scalar function of `a`, `b`).
#define TYPEFLOW_BINARY_OP(NAME, RULE, SCALAR)                                  \
    struct NAME {                                                               \
        static constexpr op_kind kind = op_kind::elementwise;                   \
        static constexpr std::string_view name = #NAME;                         \
        template <class A, class B>                                             \
        using traits = decltype(binary_rule<NAME, rule::RULE, operand_sig_t<A>, operand_sig_t<B>>()); \
        template <class A>                                                      \
        TYPEFLOW_HOST_DEVICE static constexpr auto apply(A a, A b) { return SCALAR; } \
    };

/// Operands of a binary op: two expressions, or one and an arithmetic scalar.
template <class A, class B>
concept binary_operands = (operand<A> && (operand<B> || std::is_arithmetic_v<meta::remove_cvref_t<B>>)) ||
                          (std::is_arithmetic_v<meta::remove_cvref_t<A>> && operand<B>);

/// Builds a binary node (make_node), turning an arithmetic operand into a
/// scalar of the other operand's dtype and device.
template <class Op, class A, class B>
decltype(auto) make_binary(const A& a, const B& b) {
    if constexpr (detail::is_misuse_v<A> || detail::is_misuse_v<B> || (expression<A> && expression<B>)) {
        return make_node<Op>(a, b);
    } else if constexpr (expression<A>) {
        using S = scalar<value_type_t<A>, device_t<A>>;
        return make_node<Op>(a, S(static_cast<value_type_t<A>>(b)));
    } else {
        using S = scalar<value_type_t<B>, device_t<B>>;
        return make_node<Op>(S(static_cast<value_type_t<B>>(a)), b);
    }
}

}  // namespace typeflow
