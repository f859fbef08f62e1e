// typeflow/expr/grad.hpp — compile-time reverse-mode differentiation:
// tf::grad(y, xs...) builds the gradient of y with respect to each x as more
// graph.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_set>

#include <typeflow/core/error.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/expr/ops/arithmetic.hpp>
#include <typeflow/expr/ops/assign.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/ops/control.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/logical.hpp>
#include <typeflow/expr/ops/math.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/expr/ops/reshape.hpp>
#include <typeflow/expr/ops/to_device.hpp>
#include <typeflow/expr/ops/transpose.hpp>
#include <typeflow/expr/ops/where.hpp>
#include <typeflow/graph/topo.hpp>

namespace typeflow::diagnostic {
template <class Op>
struct op_has_no_gradient_rule;
template <class Expr, class Type>
struct gradient_needs_floating_point_cost;
}  // namespace typeflow::diagnostic

namespace typeflow {

/// The gradients of one cost with respect to several expressions, in order;
/// usable with structured bindings: `auto [dW, db] = tf::grad(loss, W, b);`.
template <class... Gs>
struct gradients : detail::children_of<Gs...> {
    explicit gradients(Gs... g) : detail::children_of<Gs...>(std::move(g)...) {}
    template <std::size_t I>
    const auto& get() const noexcept {
        return detail::get_child<I>(*this);
    }
};

namespace detail::autodiff {

template <class T, class = void>
inline constexpr bool complete_v = false;
template <class T>
inline constexpr bool complete_v<T, std::void_t<decltype(sizeof(T))>> = true;

template <class Op>
constexpr bool has_rule() {
    constexpr bool ok = complete_v<gradient<Op>>;
    if constexpr (!ok) {
        diagnostic::op_has_no_gradient_rule<Op> error;
    }
    static_assert(ok, "typeflow: grad: this op has no gradient rule (specialise typeflow::gradient<Op>)");
    return ok;
}

/// One way into a node: parent index and the child slot it reads.
struct use {
    std::size_t parent = 0, slot = 0;
};

template <class Nodes>
struct node_at;
template <class... Ts>
struct node_at<meta::list<Ts...>> {
    template <std::size_t I>
    using type = meta::at_t<I, Ts...>;
};

// The uses (parent, slot) of node I, for data edges.
template <class G, std::size_t I>
constexpr auto uses_of() {
    constexpr std::size_t count = [] {
        std::size_t c = 0;
        for (const graph::edge& e : G::edges)
            if (e.child == I && !e.control) ++c;
        return c;
    }();
    std::array<use, count> u{};
    std::size_t k = 0, slot = 0, prev = static_cast<std::size_t>(-1);
    for (const graph::edge& e : G::edges) {
        if (e.parent != prev) {
            prev = e.parent;
            slot = 0;
        }
        if (e.child == I && !e.control) u[k++] = use{e.parent, slot};
        ++slot;
    }
    return u;
}

// The contribution of a vjp to child C, summed over the axes it was broadcast
// along, with C's rank.
struct sum_plan {
    std::array<index_t, max_rank> axes{};
    std::size_t n = 0;
};
constexpr sum_plan broadcast_axes(const dims& child, const dims& got) {
    sum_plan p;
    const std::size_t lead = got.rank - child.rank;
    for (std::size_t i = 0; i < got.rank; ++i) {
        if (i < lead) p.axes[p.n++] = static_cast<index_t>(i);
        else if (child.d[i - lead] == 1 && got.d[i] != 1) p.axes[p.n++] = static_cast<index_t>(i);
    }
    return p;
}
constexpr std::size_t dyn_count(const dims& d) {
    std::size_t c = 0;
    for (std::size_t i = 0; i < d.rank; ++i) c += d.d[i] == dyn;
    return c;
}

template <class C, class V>
auto unbroadcast(const C& child, const V& v) {
    if constexpr (ad::is_zero_v<V>) {
        return ad::zero{};
    } else if constexpr (std::is_same_v<shape_t<C>, shape_t<V>>) {
        return v;
    } else {
        constexpr dims st = shape_t<C>::value, sv = shape_t<V>::value;
        if constexpr (sv.rank < st.rank) {
            return broadcast_like(v, child);
        } else {
            constexpr sum_plan p = broadcast_axes(st, sv);
            auto r = [&]<std::size_t... K>(std::index_sequence<K...>) {
                if constexpr (sizeof...(K) == 0) return v;
                else return make_node<op::reduce<reduction::sum, true, p.axes[K]...>>(v);
            }(std::make_index_sequence<p.n>{});
            if constexpr (sv.rank == st.rank) {
                return r;
            } else if constexpr (dyn_count(st) <= 1) {
                return [&]<std::size_t... K>(std::index_sequence<K...>) {
                    return make_node<op::reshape<(st.d[K] == dyn ? index_t{-1} : st.d[K])...>>(r);
                }(std::make_index_sequence<st.rank>{});
            } else {
                return reshape_like(r, child);
            }
        }
    }
}

// Builds adjoints over the distinct nodes of y, children of a node after the
// node (reverse topological order), memoised per node.
template <class Y>
class builder {
    using G = graph::graph_of<Y>;
    static constexpr std::size_t N = G::size;
    template <std::size_t I>
    using at = typename node_at<typename G::nodes>::template type<I>;

public:
    explicit builder(const Y& y) {
        std::unordered_set<const void*> seen;
        walk(y, seen);
    }

    template <class X>
    auto of(const X& x) {
        constexpr std::size_t i = G::template index<X>::value;
        if constexpr (i >= N) {
            return zeros(x);
        } else {
            auto a = adjoint<i>();
            if constexpr (ad::is_zero_v<decltype(a)>) return zeros(x);
            else return a;
        }
    }

private:
    template <class X>
    static auto zeros(const X& x) {
#ifdef TYPEFLOW_WARN_ZERO_GRADIENT
        unreached_warning<X>();
#endif
        return broadcast_like(literal<value_type_t<X>, 0, 1, device_t<X>>{}, x);
    }
#ifdef TYPEFLOW_WARN_ZERO_GRADIENT
    template <class X>
    [[deprecated("typeflow: grad: the cost does not depend on this expression; its gradient is a static zero")]]
    static void unreached_warning() {}
#endif

    template <class T>
    void walk(const T& obj, std::unordered_set<const void*>& seen) {
        constexpr std::size_t i = G::template index<T>::value;
        if constexpr (T::is_leaf) {
            if (!obj_[i]) obj_[i] = &obj;
        } else {
            if (!seen.insert(obj.identity()).second) return;
            if (!obj_[i]) {
                obj_[i] = &obj;
            } else if (!is_pure_v<T>) {
                throw error(std::string("grad: the cost holds two different '") + std::string(T::op::name) +
                            "' nodes of one type that differ only in anonymous constants (such as x * 2.0f and "
                            "x * 3.0f); grad identifies nodes by type. Make one of the constants a "
                            "tf::literal<T, num, den>, a placeholder or a variable");
            }
            obj.apply_children([&](const auto&... c) { (walk(c, seen), ...); });
        }
    }

    template <std::size_t I>
    const at<I>& object() const {
        return *static_cast<const at<I>*>(obj_[I]);
    }

    template <std::size_t I>
    auto compute() {
        using T = at<I>;
        if constexpr (I + 1 == N) {
            if constexpr (shape_t<T>::rank == 0) return literal<value_type_t<T>, 1, 1, device_t<T>>{};
            else return broadcast_like(literal<value_type_t<T>, 1, 1, device_t<T>>{}, object<I>());
        } else if constexpr (!ad::differentiable_v<T>) {
            return ad::zero{};
        } else {
            static constexpr auto u = uses_of<G, I>();
            return [&]<std::size_t... K>(std::index_sequence<K...>) {
                return sum(contribution<u[K].parent, u[K].slot, I>()...);
            }(std::make_index_sequence<u.size()>{});
        }
    }
    static ad::zero sum() { return {}; }
    template <class A, class... R>
    static auto sum(const A& a, const R&... r) {
        return ad::add(a, sum(r...));
    }

    template <std::size_t I>
    auto adjoint() {
        using R = decltype(compute<I>());
        if constexpr (ad::is_zero_v<R>) {
            return ad::zero{};
        } else {
            if (!adj_[I]) adj_[I] = std::shared_ptr<void>(new R(compute<I>()));
            return *static_cast<const R*>(adj_[I].get());
        }
    }

    template <std::size_t P, std::size_t Slot, std::size_t I>
    auto contribution() {
        using PT = at<P>;
        static_assert(has_rule<typename PT::op>());
        auto gp = adjoint<P>();
        if constexpr (ad::is_zero_v<decltype(gp)>) {
            return ad::zero{};
        } else {
            const PT& p = object<P>();
            return unbroadcast(p.template child<Slot>(), gradient<typename PT::op>::template vjp<Slot>(p, gp));
        }
    }

    std::array<const void*, N> obj_{};
    std::array<std::shared_ptr<void>, N> adj_{};
};

template <class Y>
constexpr bool floating_cost() {
    constexpr bool ok = std::is_floating_point_v<value_type_t<Y>>;
    if constexpr (!ok) {
        diagnostic::gradient_needs_floating_point_cost<Y, value_type_t<Y>> error;
    }
    static_assert(ok, "typeflow: grad: the cost must have a floating-point dtype");
    return ok;
}

}  // namespace detail::autodiff

/// The gradient of y with respect to x (y summed over its elements when it is
/// not a scalar, as tf.gradients does): an expression of x's shape, sharing
/// y's nodes, so that fetching y and its gradient computes y once. An x that
/// y does not depend on gets a zero gradient (a warning with
/// -DTYPEFLOW_WARN_ZERO_GRADIENT).
template <expression Y, expression X>
auto grad(const Y& y, const X& x) {
    static_assert(detail::autodiff::floating_cost<Y>());
    detail::autodiff::builder<Y> b(y);
    return b.of(x);
}
/// Gradients of y with respect to each of xs..., built in one pass.
template <expression Y, expression... Xs>
    requires(sizeof...(Xs) > 1)
auto grad(const Y& y, const Xs&... xs) {
    static_assert(detail::autodiff::floating_cost<Y>());
    detail::autodiff::builder<Y> b(y);
    return gradients<decltype(b.of(xs))...>(b.of(xs)...);
}

}  // namespace typeflow

template <class... Gs>
struct std::tuple_size<typeflow::gradients<Gs...>> : std::integral_constant<std::size_t, sizeof...(Gs)> {};
template <std::size_t I, class... Gs>
struct std::tuple_element<I, typeflow::gradients<Gs...>> {
    using type = const typeflow::meta::at_t<I, Gs...>;
};
