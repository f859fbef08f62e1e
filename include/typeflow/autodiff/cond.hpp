// typeflow/autodiff/cond.hpp — conditionals: tf::cond and tf::switch_case.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <typeflow/autodiff/grad.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/let.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/graph/topo.hpp>

namespace typeflow::diagnostic {
template <class ThenShape, class ElseShape>
struct cond_branch_shapes_differ;
template <class ThenType, class ElseType>
struct cond_branch_dtypes_differ;
template <class ThenDevice, class ElseDevice>
struct cond_branch_devices_differ;
template <class PredicateType, class PredicateShape>
struct cond_predicate_is_not_a_scalar_bool;
template <class IndexType, class IndexShape>
struct switch_case_index_is_not_a_scalar_integer;
}  // namespace typeflow::diagnostic

namespace typeflow {
namespace detail {
// The shape both branches of a cond agree on: equal extents, or dyn on one side
// (the other's extent, checked at run time); `ok` false when they cannot agree.
struct cond_shape_result {
    dims out;
    bool ok = true;
};
constexpr cond_shape_result cond_shape(dims a, dims b) {
    cond_shape_result r;
    if (a.rank != b.rank) {
        r.ok = false;
        return r;
    }
    r.out.rank = a.rank;
    for (std::size_t i = 0; i < a.rank; ++i) {
        if (a.d[i] != dyn && b.d[i] != dyn && a.d[i] != b.d[i]) r.ok = false;
        r.out.d[i] = a.d[i] == dyn ? b.d[i] : a.d[i];
    }
    if (!r.ok) r.out = a;
    return r;
}
}  // namespace detail

namespace op {
/// node<cond, Pred, Then, Else, Leaves...>: the value of Then when the scalar
/// bool Pred is true, else the value of Else. Only the taken branch runs: the
/// nodes that only that branch reads are computed inside the cond's step (the
/// plan's branch contexts, runtime/plan.hpp). Leaves are the floating-point
/// variables and placeholders the branches read (their extents only): the
/// children through which the gradient of each branch flows, as a cond itself.
struct cond {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "cond";
    static constexpr bool conditional = true;
    static constexpr unsigned extents_only_inputs = ~0u << 3;
    template <class P, class A, class B, class... L>
    static constexpr auto rule() {
        constexpr detail::cond_shape_result r = detail::cond_shape(shape_t<A>::value, shape_t<B>::value);
        using failure = require::first_failure_t<
            require::that<std::is_same_v<value_type_t<P>, bool> && shape_t<P>::numel == 1,
                          diagnostic::cond_predicate_is_not_a_scalar_bool<value_type_t<P>, shape_t<P>>>,
            require::that<std::is_same_v<value_type_t<A>, value_type_t<B>>,
                          diagnostic::cond_branch_dtypes_differ<value_type_t<A>, value_type_t<B>>>,
            require::that<std::is_same_v<device_t<A>, device_t<B>>,
                          diagnostic::cond_branch_devices_differ<device_t<A>, device_t<B>>>,
            require::same_device<cond, device_t<P>, device_t<A>>,
            require::that<r.ok, diagnostic::cond_branch_shapes_differ<shape_t<A>, shape_t<B>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<A>, shape_from_dims<r.out>, device_t<A>>{};
    }
    template <class... C>
    using traits = decltype(rule<operand_sig_t<C>...>());
    /// The taken branch's extents; the branches must agree where dyn (both are
    /// known before the run, whichever is taken).
    template <class... D>
        requires(std::is_same_v<D, dims> && ...)
    static dims infer(const dims&, const dims& a, const dims& b, const D&...) {
        if (!(a == b))
            typeflow::detail::raise(typeflow::detail::message()
                                    << "cond: the branches' extents differ in this run: then " << a << ", else " << b);
        return a;
    }
};
}  // namespace op

namespace detail {
// The floating-point variables, placeholders and tf::expr objects of a graph's
// node list: the leaves a cond's gradient flows to.
// identity(stop_gradient(x)): how a gradient passes in a value computed
// elsewhere (scan's gradient passes each step's carry and row so), a target
// of that gradient inside whatever the step holds; a cond keeps it as it
// keeps a leaf, so its gradient reaches it too.
template <class T>
inline constexpr bool is_grad_entry_v = false;
template <class X>
inline constexpr bool is_grad_entry_v<node<op::identity, node<op::stop_gradient, X>>> = true;
template <class F>  // one in a tf::let (scan's gradient passes its carries so)
inline constexpr bool is_grad_entry_v<let_node<F>> = is_grad_entry_v<typename let_node<F>::value_expression>;
template <class T>
inline constexpr bool cond_leaf_v = [] {
    if constexpr (is_grad_entry_v<T>) return std::is_floating_point_v<value_type_t<T>>;
    else if constexpr (!T::is_leaf) return false;
    else if constexpr (!std::is_floating_point_v<value_type_t<T>>) return false;
    else return is_variable_v<T> || is_placeholder_v<T> || requires { T::expand_graph; };
}();
// The leaves a cond's gradient can reach below expressions Es...: where a
// walk goes that keeps a grad entry without going below it, and does not go
// below any stop_gradient, through which nothing flows. (Below a scan's grad
// entries lies the whole forward scan: the full node list of a gradient
// step's cond is many times longer, and its leaves add nothing.)
template <class T>
inline constexpr bool stops_gradient_v = false;
template <class X>
inline constexpr bool stops_gradient_v<node<op::stop_gradient, X>> = true;
// The children of N that a gradient flows into: all but a loop's counter,
// body and condition (children 1-3; a loop's gradient recomputes its step,
// so no adjoint enters the body: the grad entries of a gradient's own loops
// lie there, and read the loop's counter).
template <class N>
inline constexpr bool is_loop_node_v = requires { N::op::loop_kind; };
template <class L, bool Loop>
struct gradient_children_of {
    using type = L;
};
template <class C0, class C1, class C2, class C3, class... Cs>
struct gradient_children_of<meta::list<C0, C1, C2, C3, Cs...>, true> {
    using type = meta::list<C0, Cs...>;
};
template <class N>
using gradient_children_t = typename gradient_children_of<meta::children_t<N>, is_loop_node_v<N>>::type;
// Where the walk keeps a node without going below it.
template <class N>
inline constexpr bool gradient_stops_v = N::is_leaf || is_grad_entry_v<N> || stops_gradient_v<N>;

// A list of leaves without repeats, grown by a fold over references:
// declared functions only, so no class (not even a std::conditional) holds a
// partial list per step.
template <class L>
struct leaf_set : meta::compile_time_only {
    using list = L;
};
template <class T>
struct leaf_one;
template <class... As, class B>
    requires(__is_same(As, B) || ...)
leaf_set<meta::list<As...>>& operator+(leaf_set<meta::list<As...>>&, leaf_one<B>&);
template <class... As, class B>
    requires(!(__is_same(As, B) || ...))
leaf_set<meta::list<As..., B>>& operator+(leaf_set<meta::list<As...>>&, leaf_one<B>&);
template <class... As, class... Bs>
auto operator+(leaf_set<meta::list<As...>>& a, leaf_set<meta::list<Bs...>>&)
    -> decltype((a + ... + std::declval<leaf_one<Bs>&>()));
template <class... Ls>
using leaf_union_t = typename meta::remove_reference_t<decltype((std::declval<leaf_set<meta::list<>>&>() + ... +
                                                                std::declval<Ls&>()))>::list;
// The leaves below node N, in the order a depth-first walk first meets them:
// one class per node type, memoised by the compiler and shared by every cond
// whose branches hold N. A walk whose state is the list of nodes seen so far
// makes a class per step that spells that list: with -g, GCC writes a name
// for every class it instantiates, and those names were most of a -g build's
// memory (a scan whose step holds a cond: 555 MB of names).
template <class N, bool Stop = gradient_stops_v<N>>
struct gradient_leaves : meta::compile_time_only {
    using type = meta::if_t<cond_leaf_v<N>, meta::list<N>, meta::list<>>;
};
template <class L>
struct gradient_leaves_of;
template <class... Cs>
struct gradient_leaves_of<meta::list<Cs...>> : meta::compile_time_only {
    using type = leaf_union_t<leaf_set<typename gradient_leaves<Cs>::type>...>;
};
template <class N>
struct gradient_leaves<N, false> : meta::compile_time_only {
    using type = typename gradient_leaves_of<gradient_children_t<N>>::type;
};
template <class... Es>
using cond_gradient_leaves_t = leaf_union_t<leaf_set<typename gradient_leaves<Es>::type>...>;

// The nodes of list L that are cond leaves (cond_leaf_v), in order.
template <class T>
using cond_leaf_pick = leaf_set<meta::if_t<cond_leaf_v<T>, meta::list<T>, meta::list<>>>;
template <class L>
struct cond_leaves;
template <class... Ts>
struct cond_leaves<meta::list<Ts...>> : meta::compile_time_only {
    using type = leaf_union_t<cond_leaf_pick<Ts>...>;
};

// Finds one object of each leaf type Ls... below an expression: a walk over the
// node objects that visits each distinct node once. With Gradient, the walk
// goes where gradient_nodes_t's does: not below a grad entry or a
// stop_gradient (a cond's leaves, found there; a scan's are found anywhere).
template <bool Gradient, class... Ls>
struct basic_leaf_finder {
    const void* found[sizeof...(Ls) + 1] = {};
    pod_vector<const void*> seen;
    template <class E>
    void visit(const E& e) {
        if constexpr (E::is_leaf) {
            constexpr std::size_t k = meta::first_true({__is_same(E, Ls)...});
            if constexpr (k < sizeof...(Ls))
                if (!found[k]) found[k] = &e;
        } else {
            if constexpr (is_grad_entry_v<E>) {  // kept, and so are the leaves below it
                constexpr std::size_t k = meta::first_true({__is_same(E, Ls)...});
                if constexpr (k < sizeof...(Ls))
                    if (!found[k]) found[k] = &e;
            }
            if constexpr (Gradient && (is_grad_entry_v<E> || stops_gradient_v<E>)) return;
            const void* id = e.identity();
            for (const void* s : seen)
                if (s == id) return;
            seen.push_back(id);
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                ((Gradient && is_loop_node_v<E> && I >= 1 && I <= 3 ? void() : visit(e.template child<I>())), ...);
            }(std::make_index_sequence<meta::children_t<E>::size>{});
        }
    }
};
template <class... Ls>
using leaf_finder = basic_leaf_finder<false, Ls...>;
template <class P, class A, class B, class... Ls>
decltype(auto) make_cond(const P& p, const A& a, const B& b, meta::list<Ls...>) {
    basic_leaf_finder<true, Ls...> f;
    f.visit(a);
    f.visit(b);
    return [&]<std::size_t... K>(std::index_sequence<K...>) -> decltype(auto) {
        return make_node<op::cond>(p, a, b, *static_cast<const Ls*>(f.found[K])...);
    }(std::index_sequence_for<Ls...>{});
}
// The adjoint of x through y, when y's adjoint is `seed` (an expression of
// y's extents that is not part of y's graph, so the cost's own graph is all
// that grad walks).
template <class Y, class S, class X>
auto seeded_grad(const Y& y, const S& seed, const X& x) {
    if constexpr (autodiff::has_erased<typename graph::graph_of<Y>::nodes>::value) {
        return grad(sum(y * stop_gradient(seed)), x);  // through tf::expr: at run time
    } else {
        autodiff::builder<Y, S> b(y, seed);
        return b.of(x);
    }
}
// The adjoint of leaf x through branch e, whose adjoint is g.
template <class E, class G, class X>
auto branch_adjoint(const E& e, const G& g, const X& x) {
    if constexpr (std::is_floating_point_v<value_type_t<E>> &&
                  meta::index_of<graph::topo_t<E>, X>::value < graph::topo_t<E>::size)
        return seeded_grad(e, broadcast_like(g, e), x);
    else
        return broadcast_like(literal<value_type_t<X>, 0, 1, device_t<X>>{}, x);
}
}  // namespace detail

/// The value of `then_fn()` when the scalar bool `pred` is true, else the
/// value of `else_fn()` (TensorFlow's tf.cond). Both branches are built once,
/// as expressions of one dtype and device and agreeing shapes (a compile-time
/// error names both shapes; dyn extents are checked at run time); only the
/// taken branch runs: a node that only the other branch reads (an assign, a
/// costly subgraph) is not computed. Nodes the branches share with the rest of
/// the graph are computed as the rest of the graph needs them. The gradient
/// flows through the taken branch only.
///
///     auto y = tf::cond(tf::sum(x) > 0.f, [&] { return x * 2.f; }, [&] { return -x; });
template <operand P, class Then, class Else>
    requires detail::nullary<Then> && detail::nullary<Else>
decltype(auto) cond(const P& pred, Then then_fn, Else else_fn) {
    using A = meta::remove_cvref_t<decltype(then_fn())>;
    using B = meta::remove_cvref_t<decltype(else_fn())>;
    if constexpr (detail::is_misuse_v<P>) {
        return pred;
    } else if constexpr (detail::is_misuse_v<A>) {
        return then_fn();
    } else if constexpr (detail::is_misuse_v<B>) {
        return else_fn();
    } else if constexpr (!expression<A> || !expression<B>) {
        static_assert(expression<A> && expression<B>, "typeflow: cond: each branch must return a graph expression");
        return pred;
    } else {
        const A a = then_fn();
        const B b = else_fn();
        using L = detail::cond_gradient_leaves_t<A, B>;
        return detail::make_cond(pred, a, b, L{});
    }
}

namespace detail {
template <std::size_t K, class I, class F0, class... Fs>
decltype(auto) switch_from(const I& index, F0& f0, Fs&... fs) {
    if constexpr (sizeof...(Fs) == 0) {
        return f0();
    } else {
        return cond(equal(index, literal<value_type_t<I>, K, 1, device_t<I>>{}), f0,
                    [&]() -> decltype(auto) { return switch_from<K + 1>(index, fs...); });
    }
}
}  // namespace detail

/// The branch `index` selects: branch k's value when index == k, the last
/// branch's for any other index (TensorFlow's tf.switch_case with the last
/// branch as default). index is a scalar int32 or int64; only the selected
/// branch runs. A chain of tf::cond, one per branch but the last.
///
///     auto y = tf::switch_case(i, [&] { return x; }, [&] { return x * x; }, [&] { return -x; });
template <operand I, class F0, class... Fs>
    requires(detail::nullary<F0> && (detail::nullary<Fs> && ...))
decltype(auto) switch_case(const I& index, F0 f0, Fs... fs) {
    if constexpr (detail::is_misuse_v<I>) {
        return index;
    } else {
        using T = value_type_t<I>;
        constexpr bool ok = (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) && shape_t<I>::numel == 1;
        if constexpr (!ok) return detail::misuse<diagnostic::switch_case_index_is_not_a_scalar_integer<T, shape_t<I>>>();
        else return detail::switch_from<0>(index, f0, fs...);
    }
}

/// cond: the gradient with respect to each leaf the branches read is a cond of
/// that leaf's adjoint through the then branch and through the else branch,
/// so the backward pass of the branch not taken does not run either. Nothing
/// flows to the predicate, nor to the branches' roots directly.
template <>
struct gradient<op::cond> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        if constexpr (I < 3) {
            return ad::zero{};
        } else {
            const auto& x = n.template child<I>();
            const auto ga = detail::branch_adjoint(n.template child<1>(), g, x);
            const auto gb = detail::branch_adjoint(n.template child<2>(), g, x);
            return cond(n.template child<0>(), [&] { return ga; }, [&] { return gb; });
        }
    }
};

}  // namespace typeflow
