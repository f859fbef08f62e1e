// typeflow/runtime/checks.hpp — run-time checks of feeds, extents and names.
// Plain functions, compiled once per translation unit rather than once per
// node type.
#pragma once
#include <typeflow/core/config.hpp>
#include <string>
#include <string_view>

#include <typeflow/core/dtype.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/pod_vector.hpp>
#include <typeflow/core/shape.hpp>

namespace typeflow::runtime {

/// A variable's name and the identity of its storage.
struct named_storage {
    std::string_view name;  // static: a variable's compile-time name
    const void* id;
};
/// Records that variable `name` is `id`; a tf::error when another variable
/// of that name was recorded.
TYPEFLOW_DECL void register_variable(typeflow::detail::pod_vector<named_storage>& names, std::string_view name,
                                     const void* id);

/// Checks one placeholder's feed (`fed` false: none was given).
TYPEFLOW_DECL void check_feed(std::string_view name, dtype dt, const dims& want, bool fed, const dims& got,
                       const void* data);

/// Refuses a run that feeds placeholder `name` more than once.
[[noreturn]] TYPEFLOW_DECL void raise_fed_twice(std::string_view name);

/// Checks the extents a run computed for a node (op `op`, elements of
/// elem_size bytes, dtype dt): every extent >= 0, and the element count and
/// byte count fit (see count_elements).
TYPEFLOW_DECL void check_extents(std::string_view op, dtype dt, std::size_t elem_size, const dims& d);

/// A tf::error: `bytes` bytes for `what` (a run's arena, a kernel's
/// workspace, a fetch's result) could not be allocated; it names the node
/// `op` whose buffer is the largest of them (or the only one), its shape and dtype.
[[noreturn]] TYPEFLOW_DECL void raise_allocation_failed(std::string_view what, std::size_t bytes, std::string_view op,
                                                        const dims& d, dtype dt);

/// The numpy broadcast of n operand extents, or an error naming op and all shapes.
TYPEFLOW_DECL dims broadcast_operands(std::string_view op, const dims* const* ds, std::size_t n);

/// Checks that a value of extents e fits variable `var` of extents v.
TYPEFLOW_DECL void check_assign_fits(std::string_view op, std::string_view var, const dims& v, const dims& e);

}  // namespace typeflow::runtime

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/runtime/impl/checks.ipp>
#endif
