// typeflow/expr/ops/gradient_ops.hpp — ops that gradient rules are built
// from: broadcast_like, reshape_like, sum_like, reduced_count, and stop_gradient.
#pragma once
#include <string>

#include <typeflow/core/axes.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow {
namespace op {
/// node<broadcast_like, G, X>: the values of G broadcast to the shape of
/// broadcasting G with X (X supplies only its extents).
struct broadcast_like {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "broadcast_like";
    template <class A, class B>
    static constexpr auto rule() {
        constexpr broadcast_result r = broadcast_dims(shape_t<A>::value, shape_t<B>::value);
        using failure = require::first_failure_t<require::same_device<broadcast_like, device_t<A>, device_t<B>>,
                                                 require::broadcast<broadcast_like, shape_t<A>, shape_t<B>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<A>, shape_from_dims<r.out>, device_t<A>>{};
    }
    template <class A, class B>
    using traits = decltype(rule<A, B>());
    template <class A, class B>
    TYPEFLOW_HOST_DEVICE static constexpr A apply(A a, B) { return a; }
};

/// node<reshape_like, G, X>: the elements of G with the extents of X (a view).
struct reshape_like {
    static constexpr op_kind kind = op_kind::view;
    static constexpr std::string_view name = "reshape_like";
    template <class A, class B>
    using traits = result_traits<value_type_t<A>, shape_t<B>, device_t<A>>;
    static dims infer(const dims& a, const dims& b) {
        if (a.numel() != b.numel())
            typeflow::detail::raise(typeflow::detail::message() << "reshape_like: cannot give the " << a.numel()
                                                                << " elements of shape " << a << " the shape " << b);
        return b;
    }
};

/// node<sum_like, G, X>: G summed over the axes along which X was broadcast
/// to G's extents (G's leading axes that X lacks, and the axes where X's
/// extent is 1 and G's is not), with X's extents (X supplies only its
/// extents). The adjoint of a broadcast operand whose dyn extents say only at
/// run time whether it was broadcast (tf::grad's unbroadcast). X gets no
/// buffer for it (only its extents are read), and in a run where nothing is
/// summed the result is G's memory (the runtime forwards it): where no
/// operand was broadcast, it costs nothing.
struct sum_like {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "sum_like";
    /// g summed to a vector's extents: on a matrix g, the sum of its rows (checked per run by the extents).
    static constexpr bool sums_matrix_rows = true;
    static constexpr unsigned extents_only_inputs = 0b10;
    template <class A, class B>
    using traits = result_traits<value_type_t<A>, shape_t<B>, device_t<A>>;
    /// The axes of g that are summed to give x's extents; ok is false when g
    /// is not a broadcast of x.
    static constexpr detail::axis_mask axes(dims g, dims x) {
        detail::axis_mask m;
        if (g.rank < x.rank) {
            m.ok = false;
            return m;
        }
        const std::size_t lead = g.rank - x.rank;
        for (std::size_t i = 0; i < g.rank; ++i) {
            if (i < lead) m.reduced[i] = true;
            else if (x.d[i - lead] == g.d[i]) continue;
            else if (x.d[i - lead] == 1) m.reduced[i] = true;
            else m.ok = false;
        }
        return m;
    }
    /// True when nothing is summed (every axis to sum has extent 1): the
    /// result is g's elements as they are.
    static bool forwards(const dims& g, const dims& x) {
        const detail::axis_mask m = axes(g, x);
        for (std::size_t i = 0; i < g.rank; ++i)
            if (m.reduced[i] && g.d[i] != 1) return false;
        return m.ok;
    }
    static dims infer(const dims& g, const dims& x) {
        if (!axes(g, x).ok)
            typeflow::detail::raise(typeflow::detail::message() << "sum_like: shape " << g
                                                                << " is not a broadcast of shape " << x);
        return x;
    }
};

/// node<reduced_count<Axes...>, X>: the number of elements of X that a
/// reduction over Axes combines into one, as a scalar of X's dtype.
template <index_t... Axes>
struct reduced_count {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "reduced_count";
    template <class A>
    using traits = result_traits<value_type_t<A>, shape<>, device_t<A>>;
    static dims infer(const dims&) { return dims{}; }
    static index_t count(const dims& a) {
        const detail::axis_mask m = detail::make_axis_mask<Axes...>(a.rank);
        index_t c = 1;
        for (std::size_t i = 0; i < a.rank; ++i)
            if (m.reduced[i]) c *= a.d[i];
        return c;
    }
};

/// node<stop_gradient, X>: the value of X, through which no gradient flows.
struct stop_gradient {
    static constexpr op_kind kind = op_kind::elementwise;
    static constexpr std::string_view name = "stop_gradient";
    template <class A>
    using traits = result_traits<value_type_t<A>, shape_t<A>, device_t<A>>;
    template <class A>
    TYPEFLOW_HOST_DEVICE static constexpr A apply(A a) { return a; }
};
}  // namespace op

/// g broadcast to the shape of x (x's values are not read).
template <operand G, operand X>
decltype(auto) broadcast_like(G&& g, X&& x) {
    return make_node<op::broadcast_like>(std::forward<G>(g), std::forward<X>(x));
}
/// The elements of g with the extents of x (a view; element counts must match).
template <operand G, operand X>
decltype(auto) reshape_like(G&& g, X&& x) {
    return make_node<op::reshape_like>(std::forward<G>(g), std::forward<X>(x));
}
/// g summed over the axes along which x was broadcast to g's extents, with
/// x's extents (x's values are not read): the inverse of broadcast_like.
template <operand G, operand X>
decltype(auto) sum_like(G&& g, X&& x) {
    return make_node<op::sum_like>(std::forward<G>(g), std::forward<X>(x));
}
/// The value of x; tf::grad treats it as a constant (TensorFlow's stop_gradient).
template <operand X>
decltype(auto) stop_gradient(X&& x) {
    return make_node<op::stop_gradient>(std::forward<X>(x));
}

template <>
struct gradient<op::broadcast_like> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        if constexpr (I == 0) return g;
        else return ad::zero{};
    }
};
template <>
struct gradient<op::reshape_like> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return reshape_like(g, n.template child<0>());
        else return ad::zero{};
    }
};
template <>
struct gradient<op::sum_like> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I == 0) return broadcast_like(g, n.template child<0>());
        else return ad::zero{};
    }
};
template <index_t... Axes>
struct gradient<op::reduced_count<Axes...>> : no_gradient {};
template <>
struct gradient<op::stop_gradient> : no_gradient {};

}  // namespace typeflow
