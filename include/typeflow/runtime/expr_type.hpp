// typeflow/runtime/expr_type.hpp — the class tf::expr<T, S, D>: an expression
// whose type is a short tag (dtype, shape, device), not the graph below it
// (runtime/expr.hpp gathers it with its normal form and backpropagation).
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

#include <typeflow/core/device.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/pod_vector.hpp>
#include <typeflow/expr/diagnostics.hpp>
#include <typeflow/autodiff/grad.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/graph/topo.hpp>
#include <typeflow/runtime/plan.hpp>

namespace typeflow::diagnostic {
template <class ExprShape, class ExpressionShape>
struct expr_shape_does_not_fit;
template <class ExprType, class ExpressionType>
struct expr_dtype_differs;
template <class ExprDevice, class ExpressionDevice>
struct expr_device_differs;
}  // namespace typeflow::diagnostic

namespace typeflow {
template <value_type_c T, shape_c S, device_c D>
class expr;

namespace runtime {
/// Adjoints found while differentiating through tf::expr objects: each a
/// tf::expr (held here) keyed by what it is the adjoint of (a tf::expr's or a
/// variable's identity, a placeholder's feed key).
class grad_sink {
public:
    struct entry {
        const void* key;
        expr_ref value;
        std::uint32_t prev;  // the previous entry of the same key, or none
    };
    static constexpr std::uint32_t none = typeflow::detail::key_map::none;
    grad_sink() = default;
    grad_sink(const grad_sink&) = delete;
    grad_sink& operator=(const grad_sink&) = delete;
    ~grad_sink() {
        for (const entry& e : entries_) typeflow::detail::node_handle release(e.value.state);
    }
    /// Adds an adjoint of `key` (shares r).
    void add(const void* key, expr_ref r) {
        r.state->refs.fetch_add(1, std::memory_order_relaxed);
        const auto k = static_cast<std::uint32_t>(entries_.size());
        const std::uint32_t prev = last_.find(key, 0);
        entries_.push_back({key, r, prev});
        if (prev == none) last_.insert(key, 0, k);
        else last_.set(key, 0, k);
    }
    /// The last entry of `key` (follow entry::prev for the others), or none.
    std::uint32_t last(const void* key) const noexcept { return last_.find(key, 0); }
    const entry& operator[](std::uint32_t k) const noexcept { return entries_[k]; }

private:
    typeflow::detail::pod_vector<entry> entries_;
    typeflow::detail::key_map last_;
};

namespace detail {
template <class R>
void backward_of(const void* root, const expr_ref* seeds, std::size_t n, grad_sink& out);
template <class T, bool Leaf = T::is_leaf>
struct has_rule : std::true_type {};
template <class T>
struct has_rule<T, false> : std::bool_constant<typeflow::detail::autodiff::complete_v<gradient<typename T::op>>> {};
template <class L>
struct all_have_rules;
template <class... Ts>
struct all_have_rules<meta::list<Ts...>> : std::bool_constant<(has_rule<Ts>::value && ...)> {};
// The graph of expression type R, and its vector-Jacobian product when
// Backward and R can be differentiated (floating point, every op with a rule).
template <class R, bool Backward>
struct erased_tables {
    using G = graph::graph_of<R>;
    static constexpr backward_fn backward = []() -> backward_fn {
        if constexpr (Backward && std::is_floating_point_v<value_type_t<R>> && all_have_rules<typename G::nodes>::value)
            return &backward_of<R>;
        else
            return nullptr;
    }();
    static constexpr erased_graph value{graph_tables<G>::value, backward};
};
// A tf::expr hiding a leaf: its adjoints go to the leaf's key (a variable's or
// tf::expr's identity, a placeholder's feed key) as they come.
template <class L>
void leaf_backward(const void* root, const expr_ref* seeds, std::size_t n, grad_sink& out);
template <class L, bool Backward>
struct leaf_tables {
    static constexpr erased_graph value{graph_tables<graph::graph_of<L>>::value,
                                        Backward && std::is_floating_point_v<value_type_t<L>> ? &leaf_backward<L>
                                                                                               : nullptr};
};
template <class E>
struct normal_form;
}  // namespace detail
}  // namespace runtime

namespace detail {
struct no_backward_t {};
// What the gradient code needs of a tf::expr's internals.
struct expr_access {
    template <class E>
    static runtime::expr_ref ref(const E& e) noexcept {
        return {e.h_.get(), e.g_};
    }
    // a tf::expr of type E sharing r's state (a tf::expr of another static shape)
    template <class E>
    static E adopt(const runtime::expr_ref& r) noexcept {
        return E(r);
    }
    // hides x in a tf::expr of type E without a vector-Jacobian product (no
    // further instantiation: the adjoints grad makes are not differentiated again)
    template <class E, class X>
    static E erase(const X& x) {
        if constexpr (std::is_base_of_v<E, X>) return E(x);  // E itself, or a slot (which is its tf::expr)
        else return E(x, no_backward_t{});
    }
};

// S fits R: the same rank, and each extent equal or dyn in S.
template <class S, class R>
constexpr bool shape_fits() {
    constexpr dims s = S::value, r = R::value;
    if (s.rank != r.rank) return false;
    for (std::size_t i = 0; i < s.rank; ++i)
        if (s.d[i] != dyn && s.d[i] != r.d[i]) return false;
    return true;
}
}  // namespace detail

/// An expression of element type T, static shape S and device D whose type
/// does not spell the graph below it, like std::function for graphs:
///
///     tf::expr<float, tf::shape<tf::dyn, 16>> h = x;
///     for (int k = 0; k < 100; ++k) h = tf::tanh(h * w + h);
///
/// It keeps the expression it was made from (sharing its nodes) and the
/// compile-time tables of that expression's graph, built once per expression
/// type. A session expands it at run time, so graphs of any depth, and depths
/// known only at run time, compile in the time of one step. S may leave an
/// extent of the expression tf::dyn, never the reverse. A tf::expr is
/// identified by object (as an anonymous constant is): fusion and common
/// subexpressions stop at it. `tf::grad` differentiates through it: each
/// hidden expression type gets its vector-Jacobian product compiled once, and
/// the adjoints cross the tf::expr objects at run time; such a gradient is a
/// tf::expr itself (and is not differentiated again). The variables,
/// placeholders and tf::expr objects an expression reads are not part of the
/// type it is hidden as, only their dtypes, shapes and positions, so that
/// expressions of one structure (the steps of a chain, layers of one shape)
/// share one graph and one vector-Jacobian product.
template <value_type_c T, shape_c S, device_c D = cpu>
class expr : public detail::leaf_base {
public:
    using value_type = T;
    using shape_type = S;
    using device = D;
    static constexpr bool pure = false;

    /// Hides expression `e` (which it shares).
    template <expression E>
        requires(!std::is_base_of_v<expr, meta::remove_cvref_t<E>>)
    expr(const E& e)  // NOLINT(google-explicit-constructor): `tf::expr<...> h = a + b;`
        : h_(detail::new_node_state(1)) {
        init<E, true>(e);
    }

    const void* identity() const noexcept { return h_.get(); }
    /// The graph it hides and the object of that graph's root (for plans).
    static const runtime::subgraph* expand_graph(const void* obj, const void** root) noexcept {
        const expr& e = *static_cast<const expr*>(obj);
        *root = e.h_.get()->slots()[0].bytes;
        return &e.g_->g;
    }

protected:
    /// Shares r's state.
    explicit expr(const runtime::expr_ref& r) noexcept : h_(r.state), g_(r.g) {
        h_.get()->refs.fetch_add(1, std::memory_order_relaxed);
    }

private:
    friend struct detail::expr_access;
    template <class E>
    expr(const E& e, detail::no_backward_t) : h_(detail::new_node_state(1)) {
        init<E, false>(e);
    }
    template <class E, bool Backward>
    void init(const E& e) {
        static_assert(check<E>());
        using nodes = typename graph::graph_of<E>::nodes;
        static_assert(sizeof(runtime::detail::check_devices<nodes, runtime::detail::all_have_backends<nodes>::value>) > 0);
        if constexpr (E::is_leaf) {
            g_ = &runtime::detail::leaf_tables<E, Backward>::value;
            detail::child_ops<E>::type::store(h_.get(), &e);
        } else if constexpr (Backward && runtime::detail::normal_form<E>::applies) {
            // hidden as its normal form (see runtime::detail::normal_form)
            using R = typename runtime::detail::normal_form<E>::type;
            g_ = &runtime::detail::erased_tables<R, true>::value;
            const R r = runtime::detail::normal_form<E>::make(e);
            detail::child_ops<R>::type::store(h_.get(), &r);
        } else {
            g_ = &runtime::detail::erased_tables<E, Backward>::value;
            detail::child_ops<E>::type::store(h_.get(), &e);
        }
    }

    template <class E>
    static constexpr bool check() {
        constexpr bool type_ok = std::is_same_v<value_type_t<E>, T>;
        if constexpr (!type_ok) {
            diagnostic::expr_dtype_differs<T, value_type_t<E>> error;
        }
        static_assert(type_ok, "typeflow: expr: the expression's dtype differs from the tf::expr's");
        constexpr bool device_ok = std::is_same_v<device_t<E>, D>;
        if constexpr (!device_ok) {
            diagnostic::expr_device_differs<D, device_t<E>> error;
        }
        static_assert(device_ok, "typeflow: expr: the expression's device differs from the tf::expr's");
        constexpr bool shape_ok = detail::shape_fits<S, shape_t<E>>();
        if constexpr (!shape_ok) {
            diagnostic::expr_shape_does_not_fit<S, shape_t<E>> error;
        }
        static_assert(shape_ok,
                      "typeflow: expr: the expression's shape does not fit the tf::expr's (same rank; each extent "
                      "equal, or tf::dyn in the tf::expr)");
        return type_ok && device_ok && shape_ok;
    }

    detail::node_handle h_;                     // a state whose one slot holds the hidden expression
    const runtime::erased_graph* g_ = nullptr;  // that expression's graph and vector-Jacobian product
};

namespace detail {
/// The K-th distinct variable, placeholder or tf::expr type that a hidden
/// expression reads, in that expression's normal form: a tf::expr (of the
/// leaf's dtype, shape and device) sharing a state that hides the leaf.
template <std::size_t K, value_type_c T, shape_c S, device_c D>
class expr_slot : public expr<T, S, D> {
public:
    explicit expr_slot(const runtime::expr_ref& r) noexcept : expr<T, S, D>(r) {}
};

template <class T>
inline constexpr bool is_expr_v = false;
template <class T, class S, class D>
inline constexpr bool is_expr_v<expr<T, S, D>> = true;
template <std::size_t K, class T, class S, class D>
inline constexpr bool is_expr_v<expr_slot<K, T, S, D>> = true;
}  // namespace detail

}  // namespace typeflow
