// typeflow/expr/ops/reduce.hpp — reductions sum, mean, max, min, prod over
// chosen axes (keepdims optional), and argmax / argmin over one axis.
#pragma once
#include <array>
#include <limits>
#include <string>

#include <typeflow/core/axes.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/reshape.hpp>

namespace typeflow {

/// Which reduction a reduce node computes.
enum class reduction { sum, mean, max, min, prod };

/// Ask a reduction to keep reduced axes with extent 1.
struct keepdims_t {};
inline constexpr keepdims_t keepdims{};

namespace detail {
constexpr std::string_view reduction_name(reduction r) {
    switch (r) {
        case reduction::sum: return "sum";
        case reduction::mean: return "mean";
        case reduction::max: return "max";
        case reduction::min: return "min";
        case reduction::prod: return "prod";
    }
    return "?";
}
}  // namespace detail

namespace op {
template <reduction R, bool Keep, index_t... Axes>
struct reduce {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = detail::reduction_name(R);
    static constexpr reduction which = R;
    static constexpr bool keep = Keep;
    /// True when, on a matrix, it is the sum of its rows (a bias gradient:
    /// autodiff's reduce over the broadcast axis, kept, then a reshape).
    static constexpr bool sums_matrix_rows = [] {
        const detail::axis_mask m = detail::make_axis_mask<Axes...>(2);
        return R == reduction::sum && m.ok && m.reduced[0] && !m.reduced[1];
    }();
    template <class A>
    static constexpr auto rule() {
        constexpr detail::axis_mask m = detail::make_axis_mask<Axes...>(shape_t<A>::rank);
        using failure = require::first_failure_t<
            require::numeric<reduce, value_type_t<A>>,
            // an axis is out of range or given twice
            require::that<m.ok, diagnostic::axis_out_of_range<reduce, shape_t<A>>>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = detail::reduced_dims(shape_t<A>::value, m, Keep);
            return result_traits<value_type_t<A>, shape_from_dims<out>, device_t<A>>{};
        }
    }
    template <class A>
    using traits = decltype(rule<A>());
    static dims infer(const dims& a) { return detail::reduced_dims(a, detail::make_axis_mask<Axes...>(a.rank), Keep); }
};

template <bool IsMax, index_t Axis>
struct arg_reduce {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = IsMax ? "argmax" : "argmin";
    static constexpr bool is_max = IsMax;
    template <class A>
    static constexpr auto rule() {
        constexpr detail::axis_mask m = detail::make_axis_mask<Axis>(shape_t<A>::rank);
        constexpr bool nonempty = !m.ok || shape_t<A>::value.d[axis(shape_t<A>::rank)] != 0;
        using failure = require::first_failure_t<
            require::numeric<arg_reduce, value_type_t<A>>,
            // the axis is out of range
            require::that<m.ok, diagnostic::axis_out_of_range<arg_reduce, shape_t<A>>>,
            // the reduced axis has extent 0, so there is no element to pick
            require::that<nonempty, diagnostic::axis_is_empty<arg_reduce, shape_t<A>>>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else {
            constexpr dims out = detail::reduced_dims(shape_t<A>::value, m, false);
            return result_traits<std::int64_t, shape_from_dims<out>, device_t<A>>{};
        }
    }
    template <class A>
    using traits = decltype(rule<A>());
    static constexpr std::size_t axis(std::size_t rank) {
        return static_cast<std::size_t>(normalize_axis(Axis, rank));
    }
    // an empty axis (a dyn extent bound to 0) has no index to return
    static dims infer(const dims& a) {
        if (a.d[axis(a.rank)] == 0)
            typeflow::detail::raise(typeflow::detail::message()
                                    << name << ": no index to pick along the empty axis "
                                    << static_cast<long long>(axis(a.rank)) << " of shape " << a);
        return detail::reduced_dims(a, detail::make_axis_mask<Axis>(a.rank), false);
    }
};
}  // namespace op

/// Sum over Axes (all when none are given): sum<1>(x), sum<0, 1>(x, keepdims).
template <index_t... Axes, operand A>
decltype(auto) sum(const A& a) { return make_node<op::reduce<reduction::sum, false, Axes...>>(a); }
template <index_t... Axes, operand A>
decltype(auto) sum(const A& a, keepdims_t) { return make_node<op::reduce<reduction::sum, true, Axes...>>(a); }
/// Mean over Axes (integer tensors: the truncated integer mean).
template <index_t... Axes, operand A>
decltype(auto) mean(const A& a) { return make_node<op::reduce<reduction::mean, false, Axes...>>(a); }
template <index_t... Axes, operand A>
decltype(auto) mean(const A& a, keepdims_t) { return make_node<op::reduce<reduction::mean, true, Axes...>>(a); }
/// Largest element over Axes.
template <index_t... Axes, operand A>
decltype(auto) max(const A& a) { return make_node<op::reduce<reduction::max, false, Axes...>>(a); }
template <index_t... Axes, operand A>
decltype(auto) max(const A& a, keepdims_t) { return make_node<op::reduce<reduction::max, true, Axes...>>(a); }
/// Smallest element over Axes.
template <index_t... Axes, operand A>
decltype(auto) min(const A& a) { return make_node<op::reduce<reduction::min, false, Axes...>>(a); }
template <index_t... Axes, operand A>
decltype(auto) min(const A& a, keepdims_t) { return make_node<op::reduce<reduction::min, true, Axes...>>(a); }
/// Product over Axes.
template <index_t... Axes, operand A>
decltype(auto) prod(const A& a) { return make_node<op::reduce<reduction::prod, false, Axes...>>(a); }
template <index_t... Axes, operand A>
decltype(auto) prod(const A& a, keepdims_t) { return make_node<op::reduce<reduction::prod, true, Axes...>>(a); }
/// Index (int64) of the largest element along Axis; the first one on ties.
template <index_t Axis, operand A>
decltype(auto) argmax(const A& a) { return make_node<op::arg_reduce<true, Axis>>(a); }
/// Index (int64) of the smallest element along Axis; the first one on ties.
template <index_t Axis, operand A>
decltype(auto) argmin(const A& a) { return make_node<op::arg_reduce<false, Axis>>(a); }

namespace detail {
// g (a reduction's output or adjoint) with the reduced axes of a rank-R input
// put back as extents of 1, so that it broadcasts against the input.
// (The axes are passed as a pack, not as an axis_mask: GCC 12 mixes up
// class-type template arguments used inside generic lambdas.)
template <std::size_t I, std::size_t R, index_t... Axes, class E>
auto with_reduced_axes(const E& e) {
    if constexpr (I == R) return e;
    else if constexpr (make_axis_mask<Axes...>(R).reduced[I])
        return with_reduced_axes<I + 1, R, Axes...>(expand_dims<static_cast<index_t>(I)>(e));
    else return with_reduced_axes<I + 1, R, Axes...>(e);
}
}  // namespace detail

/// Reductions: sum and mean spread the gradient evenly; max and min give it to
/// every element equal to the result, shared equally among ties (as
/// TensorFlow does); prod gives g * prod / x, which is not defined where an
/// element is zero.
template <reduction R, bool Keep, index_t... Axes>
struct gradient<op::reduce<R, Keep, Axes...>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        const auto& a = n.template child<0>();
        using A = meta::remove_cvref_t<decltype(a)>;
        constexpr std::size_t rank = shape_t<A>::rank;
        auto expand = [](const auto& e) {
            if constexpr (Keep || shape_t<N>::rank == 0) return e;
            else return detail::with_reduced_axes<0, rank, Axes...>(e);
        };
        if constexpr (R == reduction::sum) {
            return broadcast_like(expand(g), a);
        } else if constexpr (R == reduction::mean) {
            if constexpr (shape_t<A>::is_static) {
                constexpr index_t count = shape_t<A>::numel / (shape_t<N>::numel == 0 ? 1 : shape_t<N>::numel);
                return broadcast_like(ad::div(expand(g), ad::lit_like<count>(a)), a);
            } else {
                return broadcast_like(expand(g) / make_node<op::reduced_count<Axes...>>(a), a);
            }
        } else if constexpr (R == reduction::max || R == reduction::min) {
            using T = value_type_t<A>;
            auto hit = cast<T>(equal(a, expand(n)));
            auto ties = make_node<op::reduce<reduction::sum, true, Axes...>>(hit);
            return hit * (expand(g) / ties);
        } else {
            return ad::mul(expand(g), expand(n)) / a;
        }
    }
};
template <bool IsMax, index_t Axis>
struct gradient<op::arg_reduce<IsMax, Axis>> : no_gradient {};

}  // namespace typeflow
