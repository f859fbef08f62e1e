// typeflow/backend/eigen/kernel.hpp — the CPU kernel protocol.
#pragma once

namespace typeflow::backend::eigen {

/// kernel<Op>::run(node, ctx, out) computes a materialised node of op Op into
/// `out` (contiguous, row-major). `ctx.input(child)` gives a child's elements
/// and `ctx.dims_of(child)` its run-time extents. Specialised per op in
/// backend/eigen/ops/.
template <class Op>
struct kernel;

}  // namespace typeflow::backend::eigen
