// typeflow/expr/ops/outputs.hpp — ops with several outputs: output<K>(n)
// reads output K of a node whose op computes several results in one kernel.
//
// Such an op declares `static constexpr std::size_t outputs = n` (n > 1);
// its traits<C...> give output 0's value_type, shape_type and device, and
// `outputs_list`, a meta::list of result_traits, one per output; and it
// declares `static dims infer_output(std::size_t k, const dims&...)` for the
// run-time extents of outputs k >= 1. Its kernel writes output 0 to `out`
// and output k to `ctx.output(k)`. Users reach the outputs with
// make_outputs<Op>(children...), a tuple of output<K> nodes.
#pragma once
#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>

#include <typeflow/core/type_list.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/node.hpp>

namespace typeflow {
namespace op {
/// node<output<K>, N>: output K of N (a view of N's K-th result).
template <std::size_t K>
struct output {
    static constexpr op_kind kind = op_kind::view;
    static constexpr std::string_view name = "output";
    static constexpr std::size_t output_index = K;
    template <class N>
    using traits = meta::list_at_t<K, typename N::traits::outputs_list>;
};
}  // namespace op

/// The number of outputs of op Op (1 unless it declares `outputs`).
template <class Op>
inline constexpr std::size_t outputs_of_v = 1;
template <class Op>
    requires requires { Op::outputs; }
inline constexpr std::size_t outputs_of_v<Op> = Op::outputs;

/// Output K of a node of a multi-output op.
template <std::size_t K, expression N>
auto output(const N& n) {
    static_assert(outputs_of_v<typename N::op> > K, "typeflow: output<K>: the node's op has no output K");
    return make_node<op::output<K>>(n);
}

/// Op applied to a... : a tuple of its outputs (output<0>, output<1>, ...).
template <class Op, expression... A>
auto make_outputs(const A&... a) {
    static_assert(outputs_of_v<Op> > 1, "typeflow: make_outputs: the op has one output (use make_node)");
    const auto n = make_node<Op>(a...);
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::make_tuple(make_node<op::output<K>>(n)...);
    }(std::make_index_sequence<outputs_of_v<Op>>{});
}

/// No gradient flows through the outputs of a multi-output op (yet).
template <std::size_t K>
struct gradient<op::output<K>> : no_gradient {};

}  // namespace typeflow
