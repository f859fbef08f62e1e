// typeflow/expr/ops/reshape.hpp — views with new extents: reshape,
// expand_dims, squeeze. They never copy: the output aliases the input.
#pragma once
#include <string>

#include <typeflow/core/axes.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow {
namespace detail {
struct reshape_result {
    dims out;
    bool target_ok = true, count_ok = true;
};
// Target extents >= 0 and at most one -1 (inferred); with a known input count
// the -1 is computed, else it stays dyn.
constexpr reshape_result reshape_dims(dims in, dims target) {
    reshape_result r;
    r.out = target;
    int inferred = -1;
    index_t known = 1;
    for (std::size_t i = 0; i < target.rank; ++i) {
        if (target.d[i] == -1) {
            if (inferred >= 0) r.target_ok = false;
            inferred = static_cast<int>(i);
        } else if (target.d[i] < 0) {
            r.target_ok = false;
        } else {
            known *= target.d[i];
        }
    }
    bool in_static = true;
    for (std::size_t i = 0; i < in.rank; ++i)
        if (in.d[i] == dyn) in_static = false;
    if (!r.target_ok || !in_static) return r;  // inferred extent stays dyn
    const index_t n = in.numel();
    if (inferred >= 0) {
        if (known == 0 || n % known != 0) r.count_ok = false;
        else r.out.d[static_cast<std::size_t>(inferred)] = n / known;
    } else if (n != known) {
        r.count_ok = false;
    }
    return r;
}
}  // namespace detail

namespace op {
template <index_t... D>
struct reshape {
    static constexpr op_kind kind = op_kind::view;
    static constexpr std::string_view name = "reshape";
    template <class A>
    static constexpr auto rule() {
        constexpr detail::reshape_result r = detail::reshape_dims(shape_t<A>::value, dims{D...});
        using failure = require::first_failure_t<
            // target extents must be >= 0 with at most one -1
            require::that<r.target_ok, diagnostic::bad_target_shape<reshape, shape<(D < 0 ? dyn : D)...>>>,
            // the element counts of the two shapes differ
            require::that<r.count_ok, diagnostic::element_counts_differ<reshape, shape_t<A>, shape<(D < 0 ? dyn : D)...>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<A>, shape_from_dims<r.out>, device_t<A>>{};
    }
    template <class A>
    using traits = decltype(rule<A>());
    static dims infer(const dims& a) {
        const detail::reshape_result r = detail::reshape_dims(a, dims{D...});
        if (!r.count_ok)
            typeflow::detail::raise(typeflow::detail::message() << "reshape: cannot reshape " << a << " into " << dims{D...});
        return r.out;
    }
};

template <index_t Axis>
struct expand_dims {
    static constexpr op_kind kind = op_kind::view;
    static constexpr std::string_view name = "expand_dims";
    static constexpr index_t norm(std::size_t rank) { return normalize_axis(Axis, rank + 1); }
    static constexpr dims expanded(dims a) {
        dims o;
        const auto at = static_cast<std::size_t>(norm(a.rank));
        for (std::size_t i = 0, j = 0; i <= a.rank; ++i) o.d[o.rank++] = i == at ? 1 : a.d[j++];
        return o;
    }
    template <class A>
    static constexpr auto rule() {
        constexpr index_t n = norm(shape_t<A>::rank);
        constexpr bool ok = n >= 0 && n <= static_cast<index_t>(shape_t<A>::rank) && shape_t<A>::rank < max_rank;
        if constexpr (!ok) {  // the axis is out of range
            return rule_failed<diagnostic::axis_out_of_range<expand_dims, shape_t<A>>>{};
        } else {
            constexpr dims out = expanded(shape_t<A>::value);
            return result_traits<value_type_t<A>, shape_from_dims<out>, device_t<A>>{};
        }
    }
    template <class A>
    using traits = decltype(rule<A>());
    static dims infer(const dims& a) { return expanded(a); }
};

template <index_t... Axes>
struct squeeze {
    static constexpr op_kind kind = op_kind::view;
    static constexpr std::string_view name = "squeeze";
    // Axes removed: those given, or (none given) every static extent of 1.
    static constexpr detail::axis_mask mask(dims s) {
        if constexpr (sizeof...(Axes) == 0) {
            detail::axis_mask m;
            for (std::size_t i = 0; i < s.rank; ++i) m.reduced[i] = s.d[i] == 1;
            return m;
        } else {
            return detail::make_axis_mask<Axes...>(s.rank);
        }
    }
    template <class A>
    static constexpr auto rule() {
        constexpr detail::axis_mask m = mask(shape_t<A>::value);
        constexpr bool ok = [&] {
            if (!m.ok) return false;
            for (std::size_t i = 0; i < shape_t<A>::rank; ++i)
                if (m.reduced[i] && shape_t<A>::value.d[i] != 1 && shape_t<A>::value.d[i] != dyn) return false;
            return true;
        }();
        if constexpr (!ok) {  // a squeezed axis is out of range or its extent is not 1
            return rule_failed<diagnostic::extent_is_not_one<squeeze, shape_t<A>>>{};
        } else {
            constexpr dims out = detail::reduced_dims(shape_t<A>::value, m, false);
            return result_traits<value_type_t<A>, shape_from_dims<out>, device_t<A>>{};
        }
    }
    template <class A>
    using traits = decltype(rule<A>());
    template <class A>
    static dims infer_static(const dims& a) {
        // the mask comes from the static shape, so a dyn extent squeezed by
        // name is checked here
        constexpr detail::axis_mask m = mask(shape_t<A>::value);
        for (std::size_t i = 0; i < a.rank; ++i)
            if (m.reduced[i] && a.d[i] != 1)
                typeflow::detail::raise(typeflow::detail::message() << "squeeze: axis " << i << " of shape " << a << " is not 1");
        return detail::reduced_dims(a, m, false);
    }
};
}  // namespace op

/// Same elements with extents D...; one extent may be -1 (inferred).
template <index_t... D, operand A>
decltype(auto) reshape(const A& a) { return make_node<op::reshape<D...>>(a); }
/// Inserts an axis of extent 1 at Axis (negative counts from the end).
template <index_t Axis, operand A>
decltype(auto) expand_dims(const A& a) { return make_node<op::expand_dims<Axis>>(a); }
/// Removes the given axes of extent 1 (all static extents of 1 when none are given).
template <index_t... Axes, operand A>
decltype(auto) squeeze(const A& a) { return make_node<op::squeeze<Axes...>>(a); }

/// Views: the gradient gets the input's extents back.
template <index_t... D>
struct gradient<op::reshape<D...>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) { return reshape_like(g, n.template child<0>()); }
};
template <index_t Axis>
struct gradient<op::expand_dims<Axis>> : gradient<op::reshape<>> {};
template <index_t... Axes>
struct gradient<op::squeeze<Axes...>> : gradient<op::reshape<>> {};

}  // namespace typeflow
