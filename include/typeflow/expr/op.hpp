// typeflow/expr/op.hpp — what an op tag is: the concept every op of the
// graph models, and the one place its optional parts are read.
//
// An op is a tag type (its static attributes as template arguments, e.g.
// op::reduce<sum, false, 1>) that node<Op, Children...> applies to children.
// It provides, in this layer:
//   - `kind` (op_kind): element-wise (fused into its consumer's pass), view
//     (aliases its input with new extents), kernel (materialised by a
//     backend kernel);
//   - `name`: a short string for errors, DOT output and descriptors;
//   - `traits<C...>`: its shape and dtype rule over the children's types,
//     with value_type, shape_type and device (and `control_inputs` when its
//     leading children only order execution); a rule that does not hold
//     either is rule_failed<Diag> (Diag: a diagnostic type naming the op and
//     the operands; make_node then returns a misuse that fails in the caller's
//     own statement, see expr/node.hpp), or, in a custom op, declares a
//     diagnostic type and static_asserts (expr/diagnostics.hpp);
//   - element-wise ops: `apply(scalars...)`, a scalar functor usable on host
//     and device (TYPEFLOW_HOST_DEVICE);
//   - kernel and view ops: `infer(const dims&...)` (or `infer_static<In...>`)
//     giving the run-time extents from the children's;
//   - optionally `is_assign` (writes its variable child);
//   - kernel ops, optionally: `extents_only_inputs`, a bit per child whose
//     extents alone the kernel reads (never its elements), so that child gets
//     no buffer for it; and `forwards(const dims&...)`, true when for these
//     extents the result is child 0's elements unchanged, so the runtime
//     aliases child 0 instead of running the kernel (a sum over no axes);
//     `writes_first`/`writes_end`, the children [first, end) its kernel
//     writes where they are (variables; sparse_apply), so that their copies
//     on a device become the newer ones.
// Its gradient rule is gradient<Op>::vjp<I>(node, adjoint) (expr/gradient.hpp),
// in the op's own header. Each backend provides kernel<Device, Op> for kernel
// ops (kernel/kernel.hpp) and may give element-wise ops a faster form of
// their own (backend/eigen/elementwise.hpp). docs/ops.md walks through
// adding one.
#pragma once
#include <string_view>
#include <type_traits>

namespace typeflow {

/// How the runtime treats an op.
enum class op_kind {
    leaf,         // placeholder, variable, constant: has storage of its own
    elementwise,  // fused into its consumer's single pass
    view,         // same elements, new extents (reshape): aliases its input
    kernel,       // materialised by a backend kernel (matmul, reductions, ...)
};

/// The part an element-wise op can take in a matrix product's epilogue
/// (`add(matmul(x, w), b)`, `relu(add(...))`, kernel/kernel.hpp); `none` for
/// every op but the builtin add and relu, whatever a user op is named.
enum class epilogue_role : unsigned char { none, bias_add, relu };
template <class Op>
inline constexpr epilogue_role epilogue_role_of = epilogue_role::none;

/// The traits of an op whose rule does not hold for the children: only the
/// diagnostic type that names the problem, its op and its operands' shapes,
/// dtypes or devices (expr/diagnostics.hpp; expr/ops/ build them with
/// require::first_failure_t).
template <class Diag>
struct rule_failed {
    using diagnostic = Diag;
};
namespace detail {
template <class T>
inline constexpr bool is_rule_failed_v = false;
template <class Diag>
inline constexpr bool is_rule_failed_v<rule_failed<Diag>> = true;
}  // namespace detail

/// An op tag: a kind and a name (its rule is checked where it is applied).
template <class Op>
concept op_tag = requires {
    { Op::kind } -> std::convertible_to<op_kind>;
    { Op::name } -> std::convertible_to<std::string_view>;
};

/// An op tag whose shape and dtype rule accepts children C...
template <class Op, class... C>
concept op_for = op_tag<Op> && requires {
    typename Op::template traits<C...>::value_type;
    typename Op::template traits<C...>::shape_type;
    typename Op::template traits<C...>::device;
};

/// The name of an op ("op" for a type that is not an op tag, "" for none).
template <class Op>
inline constexpr std::string_view op_name_v = "op";
template <op_tag Op>
inline constexpr std::string_view op_name_v<Op> = Op::name;
template <>
inline constexpr std::string_view op_name_v<void> = "";

/// The children (a bit per position) whose extents alone a kernel op reads.
template <class Op>
inline constexpr unsigned extents_only_inputs_v = 0;
template <class Op>
    requires requires { Op::extents_only_inputs; }
inline constexpr unsigned extents_only_inputs_v<Op> = Op::extents_only_inputs;

/// True for ops that write their variable child (assign, assign_add, assign_sub).
template <class Op>
struct is_assign_op : std::false_type {};
template <class Op>
    requires requires { Op::is_assign; }
struct is_assign_op<Op> : std::bool_constant<Op::is_assign> {};

/// True for updates computed and written under the update lock at the end of
/// the run (op::locked_update, an optimizer's use_locking).
template <class Op>
struct is_locked_update_op : std::false_type {};
template <class Op>
    requires requires { Op::is_locked_update; }
struct is_locked_update_op<Op> : std::bool_constant<Op::is_locked_update> {};

}  // namespace typeflow
