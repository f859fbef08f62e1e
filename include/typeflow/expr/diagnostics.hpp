// typeflow/expr/diagnostics.hpp — compile-time checks with readable first errors.
//
// Each check, on failure, first declares a variable of an incomplete type whose
// name states the problem and carries the op and both shapes, dtypes or
// devices, so the compiler's first error line reads e.g.
//   'typeflow::diagnostic::shapes_do_not_broadcast<typeflow::op::add,
//    typeflow::shape<2, 3>, typeflow::shape<4> > error' has incomplete type
// and then a static_assert explains what to do.
#pragma once
#include <typeflow/core/device.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>

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
