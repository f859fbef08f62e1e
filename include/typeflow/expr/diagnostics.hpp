// typeflow/expr/diagnostics.hpp — compile-time checks with readable first errors.
//
// A diagnostic is an incomplete type whose name states the problem and whose
// template arguments are the op and both shapes, dtypes or devices.
//
// The built-in ops' rules use the `require` checks below: a rule that does not
// hold yields rule_failed<Diag> (expr/op.hpp) instead of failing where it is
// evaluated, and make_node returns a misuse (expr/node.hpp), so the compiler's
// first error is in the user's own statement, e.g.
//   'typeflow::diagnostic::shapes_do_not_broadcast<typeflow::op::add,
//    typeflow::shape<2, 3>, typeflow::shape<4> > y' has incomplete type
// with no "In instantiation of" / "required from" lines (those print the
// operands' full types, exponential in the depth of a residual graph), and
// nothing after it: later uses of `y` are ignored and no kernel is
// instantiated for the bad node.
//
// The `check` functions are for custom ops (docs/ops.md): on failure they
// declare a variable of the diagnostic type, so the first error line reads
//   'typeflow::diagnostic::shapes_do_not_broadcast<...> error' has incomplete type
// and then a static_assert explains what to do.
#pragma once
#include <type_traits>

#include <typeflow/core/device.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/type_list.hpp>

namespace typeflow::diagnostic {
template <class Op, class ShapeA, class ShapeB>
struct shapes_do_not_broadcast;
template <class Op, class ShapeA, class ShapeB>
struct inner_dimensions_differ;
template <class Op, class ShapeA, class ShapeB>
struct batch_dimensions_differ;
template <class Op, class Shape>
struct rank_too_small;
template <class Op, class FromShape, class ToShape>
struct element_counts_differ;
template <class Op, class Shape>
struct bad_target_shape;
template <class Op, class Shape>
struct axis_out_of_range;
template <class Op, class Shape>
struct axis_is_empty;
template <class Op, class Shape>
struct not_a_permutation;
template <class Op, class Shape>
struct extent_is_not_one;
template <class Op, class TypeA, class TypeB>
struct dtypes_differ;
template <class Op, class Type>
struct needs_floating_point;
template <class Op, class Type>
struct needs_numeric;
template <class Op, class Type>
struct needs_bool;
template <class Op, class DeviceA, class DeviceB>
struct devices_differ;
template <class Placeholder, class Type>
struct feed_dtype_differs;
template <class Variable, class Shape>
struct variable_shape_must_be_static;
}  // namespace typeflow::diagnostic

namespace typeflow::check {

/// Operands of one op must have one dtype.
template <class Op, class A, class B>
constexpr bool same_dtype() {
    constexpr bool ok = std::is_same_v<A, B>;
    if constexpr (!ok) {
        diagnostic::dtypes_differ<Op, A, B> error;
    }
    static_assert(ok, "typeflow: operands of this op have different dtypes; convert one with tf::cast<T>(e)");
    return ok;
}

/// Operands of one op must live on one device.
template <class Op, class A, class B>
constexpr bool same_device() {
    constexpr bool ok = std::is_same_v<A, B>;
    if constexpr (!ok) {
        diagnostic::devices_differ<Op, A, B> error;
    }
    static_assert(ok, "typeflow: operands of this op are on different devices; move one with tf::to<Device>(e)");
    return ok;
}

template <class Op, class T>
constexpr bool floating() {
    constexpr bool ok = floating_c<T>;
    if constexpr (!ok) {
        diagnostic::needs_floating_point<Op, T> error;
    }
    static_assert(ok, "typeflow: this op needs a floating-point operand (float or double); use tf::cast<float>(e)");
    return ok;
}

template <class Op, class T>
constexpr bool numeric() {
    constexpr bool ok = numeric_c<T>;
    if constexpr (!ok) {
        diagnostic::needs_numeric<Op, T> error;
    }
    static_assert(ok, "typeflow: this op needs a numeric operand, not bool; use tf::cast<T>(e) or tf::where");
    return ok;
}

template <class Op, class T>
constexpr bool boolean() {
    constexpr bool ok = std::is_same_v<T, bool>;
    if constexpr (!ok) {
        diagnostic::needs_bool<Op, T> error;
    }
    static_assert(ok, "typeflow: this op needs a bool operand; compare first (e.g. x > 0)");
    return ok;
}

/// The broadcast shape of A and B (numpy rules), or a compile error naming both.
template <class Op, shape_c A, shape_c B>
constexpr auto broadcast() {
    constexpr broadcast_result r = broadcast_dims(A::value, B::value);
    if constexpr (!r.ok) {
        diagnostic::shapes_do_not_broadcast<Op, A, B> error;
    }
    static_assert(r.ok, "typeflow: operand shapes do not broadcast (numpy rules: extents must be equal or 1)");
    return shape_from_dims<r.out>{};
}

}  // namespace typeflow::check

namespace typeflow::require {

/// A condition of an op's rule and the diagnostic that names its failure.
template <bool Ok, class Diag>
struct that {
    static constexpr bool ok = Ok;
    using diagnostic = Diag;
};
/// Operands of one op have one dtype (convert one with tf::cast<T>(e)).
template <class Op, class A, class B>
using same_dtype = that<std::is_same_v<A, B>, diagnostic::dtypes_differ<Op, A, B>>;
/// Operands of one op live on one device (move one with tf::to<Device>(e)).
template <class Op, class A, class B>
using same_device = that<std::is_same_v<A, B>, diagnostic::devices_differ<Op, A, B>>;
/// float or double (use tf::cast<float>(e)).
template <class Op, class T>
using floating = that<floating_c<T>, diagnostic::needs_floating_point<Op, T>>;
/// A number, not bool (use tf::cast<T>(e) or tf::where).
template <class Op, class T>
using numeric = that<numeric_c<T>, diagnostic::needs_numeric<Op, T>>;
/// bool (compare first, e.g. x > 0).
template <class Op, class T>
using boolean = that<std::is_same_v<T, bool>, diagnostic::needs_bool<Op, T>>;
/// A and B broadcast (numpy rules: extents equal or 1).
template <class Op, shape_c A, shape_c B>
using broadcast = that<broadcast_dims(A::value, B::value).ok, diagnostic::shapes_do_not_broadcast<Op, A, B>>;

/// Holds when Failure (a first_failure_t) is void; else names it.
template <class Failure>
using none = that<std::is_void_v<Failure>, Failure>;

/// The diagnostic of the first of R... that does not hold, or void.
template <class... R>
struct first_failure {
    using type = void;
};
template <class R, class... Rest>
struct first_failure<R, Rest...> {
    using type = meta::if_t<R::ok, typename first_failure<Rest...>::type, typename R::diagnostic>;
};
template <class... R>
using first_failure_t = typename first_failure<R...>::type;

}  // namespace typeflow::require
