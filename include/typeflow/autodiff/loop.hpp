// typeflow/autodiff/loop.hpp — loops: tf::while_loop and tf::scan.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <memory>

#include <typeflow/autodiff/grad.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/autodiff/cond.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/expr/ops/reduce.hpp>

namespace typeflow::diagnostic {
template <class LoopVarShape, class BodyShape>
struct while_loop_body_changes_the_shape;
template <class LoopVarType, class BodyType>
struct while_loop_body_changes_the_dtype;
template <class ConditionType, class ConditionShape>
struct while_loop_condition_is_not_a_scalar_bool;
template <class ElemsShape>
struct scan_elems_have_no_leading_axis;
}  // namespace typeflow::diagnostic

namespace typeflow {
namespace op {
/// node<loop_var<Tag, Pure>, Init>: the value a loop carries from one
/// iteration to the next (TensorFlow's Enter/Merge/NextIteration): Init
/// before the first iteration, then each iteration's body. Tag (the body's
/// closure type) makes it a type of its own. A loop whose nodes are all
/// identified by type (Pure) is one computation however often it is built;
/// otherwise its variable and counter are identified by object, and so is
/// every node that depends on them.
template <class Tag, bool Pure = true>
struct loop_var {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "loop_var";
    template <class I>
    struct traits {
        using value_type = value_type_t<I>;
        using shape_type = shape_t<I>;
        using device = device_t<I>;
    };
    static dims infer(const dims& d) { return d; }
};
/// node<loop_counter<Tag, D, Pure>>: a loop's iteration, 0, 1, ... (an int32 scalar).
template <class Tag, class D, bool Pure = true>
struct loop_counter {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "loop_counter";
    template <class... C>
    struct traits {
        using value_type = std::int32_t;
        using shape_type = shape<>;
        using device = D;
    };
    static dims infer() { return dims{}; }
};
/// node<loop<Stacked>, Var, Counter, Body, Cond, Limit>: runs Body into Var
/// while Cond holds, at most Limit times (a scalar int64), and gives Var's
/// final value; Stacked (tf::scan): Limit is the scanned tensor, whose
/// leading extent is the trip count, Cond is true, and the result stacks
/// every iteration's value on a new leading axis. The nodes only the loop
/// reads run inside its step, once per iteration (runtime/plan.hpp); those
/// that do not depend on Var or Counter run once, before it.
template <bool Stacked>
struct loop {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = Stacked ? "scan" : "while_loop";
    static constexpr std::uint8_t loop_kind = Stacked ? 2 : 1;
    static constexpr unsigned extents_only_inputs = Stacked ? (1u << 4) | (~0u << 5) : 0u;
    template <class V, class N, class B, class C, class L, class... X>
    static constexpr auto rule() {
        constexpr dims v = shape_t<V>::value, b = shape_t<B>::value;
        constexpr bool fits = [&] {
            if (v.rank != b.rank) return false;
            for (std::size_t i = 0; i < v.rank; ++i)
                if (v.d[i] != dyn && b.d[i] != dyn && v.d[i] != b.d[i]) return false;
            return true;
        }();
        using failure = require::first_failure_t<
            require::that<std::is_same_v<value_type_t<V>, value_type_t<B>>,
                          diagnostic::while_loop_body_changes_the_dtype<value_type_t<V>, value_type_t<B>>>,
            require::that<fits, diagnostic::while_loop_body_changes_the_shape<shape_t<V>, shape_t<B>>>,
            require::that<std::is_same_v<value_type_t<C>, bool> && shape_t<C>::numel == 1,
                          diagnostic::while_loop_condition_is_not_a_scalar_bool<value_type_t<C>, shape_t<C>>>,
            require::same_device<loop, device_t<V>, device_t<B>>>;
        if constexpr (!std::is_void_v<failure>) {
            return rule_failed<failure>{};
        } else if constexpr (Stacked) {
            constexpr dims out = [&] {
                dims o;
                o.rank = v.rank + 1;
                o.d[0] = shape_t<L>::value.d[0];
                for (std::size_t i = 0; i < v.rank; ++i) o.d[i + 1] = v.d[i];
                return o;
            }();
            return result_traits<value_type_t<V>, shape_from_dims<out>, device_t<V>>{};
        } else {
            return result_traits<value_type_t<V>, shape_t<V>, device_t<V>>{};
        }
    }
    template <class... C>
    using traits = decltype(rule<operand_sig_t<C>...>());
    template <class... D>
        requires(std::is_same_v<D, dims> && ...)
    static dims infer(const dims& v, const dims&, const dims& b, const dims&, const dims& l, const D&...) {
        if (!(b == v))
            typeflow::detail::raise(typeflow::detail::message()
                                    << name << ": the body turns the loop variable's extents " << v << " into " << b);
        if constexpr (!Stacked) {
            return v;
        } else {
            dims o;
            o.rank = v.rank + 1;
            o.d[0] = l.d[0];
            for (std::size_t i = 0; i < v.rank; ++i) o.d[i + 1] = v.d[i];
            return o;
        }
    }
};
}  // namespace op

namespace detail {
template <class Tag, class... C>
struct is_pure<node<op::loop_var<Tag, false>, C...>> : std::false_type {};
template <class Tag, class D>
struct is_pure<node<op::loop_counter<Tag, D, false>>> : std::false_type {};
}  // namespace detail

/// The step function of a tf::scan, kept for the scan's gradient (which
/// builds fresh copies of the step). A leaf that no kernel reads, identified
/// by its type (the step's closure type), so that the pieces of one scan's
/// gradient, built once per variable, are one computation.
template <class Fn, device_c D, bool IndependentRows = false>
struct scan_fn : detail::leaf_base {
    static constexpr bool independent_rows = IndependentRows;
    struct box {
        bool flag = true;
        Fn fn;
        const bool* data() const noexcept { return &flag; }
    };
    using value_type = bool;
    using shape_type = shape<>;
    using device = D;
    static constexpr bool pure = true;
    std::shared_ptr<const box> data;
    const void* identity() const noexcept { return data.get(); }
};

namespace detail {
/// Stand-ins for a scan step's carry (K = 0) and row (K = 1): the step
/// applied to them shows which variables and placeholders the step itself
/// reads (never run).
template <class T, class S, class D, int K>
struct loop_probe : leaf_base {
    using value_type = T;
    using shape_type = S;
    using device = D;
    static constexpr bool pure = true;
    const void* identity() const noexcept { return nullptr; }
};
// f(i, x) or f(x)
template <class F, class I, class X>
decltype(auto) call_loop_fn(F& f, const I& i, const X& x) {
    if constexpr (std::is_invocable_v<F&, const I&, const X&>) return f(i, x);
    else return f(x);
}
template <class V, class N, class B, class E, class K, class P, class... Ls>
decltype(auto) make_scan(const V& v, const N& n, const B& b, const E& elems, const K& keep, const P& probe,
                         meta::list<Ls...>) {
    leaf_finder<Ls...> f;
    f.visit(probe);
    return [&]<std::size_t... J>(std::index_sequence<J...>) -> decltype(auto) {
        return make_node<op::loop<true>>(v, n, b, literal<bool, 1, 1, device_t<V>>{}, elems, keep,
                                         *static_cast<const Ls*>(f.found[J])...);
    }(std::index_sequence_for<Ls...>{});
}
template <bool Stacked, class V, class N, class B, class C, class L>
decltype(auto) make_loop(const V& v, const N& n, const B& b, const C& c, const L& l) {
    if constexpr (is_misuse_v<B>) return b;
    else if constexpr (is_misuse_v<C>) return c;
    else return make_node<op::loop<Stacked>>(v, n, b, c, l);
}
}  // namespace detail

/// Runs `body_fn` on a loop variable while `cond_fn` holds, at most
/// `maximum_iterations` times, and gives the variable's final value
/// (TensorFlow's tf.while_loop). The variable starts as `init`; `body_fn(x)`
/// returns its next value, of the same dtype and shape (a compile-time error
/// names both shapes otherwise; dyn extents are checked at run time), and
/// `cond_fn(x)` a scalar bool. Either may also take the iteration first:
/// `body_fn(i, x)`, with i an int32 scalar expression (0, 1, ...). The body
/// and condition are built once; each iteration runs the nodes that depend
/// on the variable or the iteration, and the rest run once, before the loop.
/// Not differentiable yet (tf::grad through it is a compile error).
///
///     auto x = tf::while_loop([](const auto& x) { return tf::sum(x) < 100.f; },
///                             [](const auto& x) { return x * 2.f; }, x0, 50);
template <operand Init, class CondFn, class BodyFn>
decltype(auto) while_loop(CondFn cond_fn, BodyFn body_fn, const Init& init, std::int64_t maximum_iterations) {
    if constexpr (detail::is_misuse_v<Init>) {
        return init;
    } else {
        using Tag = BodyFn;  // its iteration limit is an anonymous constant: identified by object
        const auto v = make_node<op::loop_var<Tag, false>>(init);
        const node<op::loop_counter<Tag, device_t<Init>, false>> i(detail::children_tag{});
        decltype(auto) b = detail::call_loop_fn(body_fn, i, v);
        decltype(auto) c = detail::call_loop_fn(cond_fn, i, v);
        return detail::make_loop<false>(v, i, b, c, scalar<std::int64_t, device_t<Init>>{maximum_iterations});
    }
}

/// Says that a scan's step treats axis 0 of its carry and of its row as a
/// batch of independent examples (as the cells of recurrent layers do):
/// tf::scan(fn, elems, init, tf::independent_rows). The gradient then
/// evaluates the step for every iteration at once, as one batch of
/// time x batch rows, instead of once per iteration; only the adjoint of the
/// carry runs step by step.
struct independent_rows_t {};
inline constexpr independent_rows_t independent_rows{};

namespace detail {
template <bool Pure, bool Rows, class Fn, class Elems, class Init>
decltype(auto) make_scan_of(Fn& fn, const Elems& elems, const Init& init);
}  // namespace detail

/// Applies `fn(carry, x)` to the rows x of `elems` (its leading axis) in
/// order, the carry starting as `init`, and stacks each step's carry on a new
/// leading axis (TensorFlow's tf.scan with an initializer): the result's
/// extent on axis 0 is elems', known at run time when it is dyn (one plan
/// serves every length). fn returns the new carry, of init's dtype and shape.
///
///     // xs: [?, 4]; acc0: [4]; sums: [?, 4], the running sums of the rows
///     auto sums = tf::scan([](const auto& acc, const auto& x) { return acc + x; }, xs, acc0);
template <operand Elems, operand Init, class Fn>
decltype(auto) scan(Fn fn, const Elems& elems, const Init& init) {
    if constexpr (detail::is_misuse_v<Elems>) {
        return elems;
    } else if constexpr (detail::is_misuse_v<Init>) {
        return init;
    } else if constexpr (shape_t<Elems>::rank == 0) {
        return detail::misuse<diagnostic::scan_elems_have_no_leading_axis<shape_t<Elems>>>();
    } else {
        return detail::make_scan_of<true, false>(fn, elems, init);
    }
}

/// tf::scan whose step treats axis 0 of its carry and row as independent
/// examples (see independent_rows_t): the same values, a faster gradient.
template <operand Elems, operand Init, class Fn>
decltype(auto) scan(Fn fn, const Elems& elems, const Init& init, independent_rows_t) {
    if constexpr (detail::is_misuse_v<Elems>) {
        return elems;
    } else if constexpr (detail::is_misuse_v<Init>) {
        return init;
    } else if constexpr (shape_t<Elems>::rank < 2 || shape_t<Init>::rank < 1) {
        static_assert(shape_t<Elems>::rank >= 2 && shape_t<Init>::rank >= 1,
                      "typeflow: scan with independent_rows: the rows and the carry need a batch axis");
        return elems;
    } else {
        return detail::make_scan_of<true, true>(fn, elems, init);
    }
}

namespace detail {
template <bool Pure, bool Rows, class Fn, class Elems, class Init>
decltype(auto) make_scan_of(Fn& fn, const Elems& elems, const Init& init) {
    {
        using Tag = Fn;
        using D = device_t<Init>;
        const auto v = make_node<op::loop_var<Tag, Pure>>(init);
        const node<op::loop_counter<Tag, D, Pure>> i(detail::children_tag{});
        using Row = decltype(gather(elems, i));
        decltype(auto) b = fn(v, gather(elems, i));
        if constexpr (detail::is_misuse_v<std::remove_reference_t<decltype(b)>>) {
            return b;
        } else if constexpr (Pure && !is_pure_v<std::remove_cvref_t<decltype(b)>>) {
            return make_scan_of<false, Rows>(fn, elems, init);  // a step holding anonymous constants
        } else {
            // the variables and placeholders the step reads (not through the carry or the row)
            const auto probe = fn(detail::loop_probe<value_type_t<Init>, shape_t<Init>, D, 0>{},
                                  detail::loop_probe<value_type_t<Row>, shape_t<Row>, D, 1>{});
            using L = typename detail::cond_leaves<graph::topo_t<std::remove_cvref_t<decltype(probe)>>>::type;
            scan_fn<Fn, D, Rows> keep;
            keep.data = std::make_shared<const typename scan_fn<Fn, D, Rows>::box>(typename scan_fn<Fn, D, Rows>::box{true, fn});
            return detail::make_scan(v, i, b, elems, keep, probe, L{});
        }
    }
}
}  // namespace detail

/// loop_var: the adjoint of the carried value's start goes to the initial value.
template <class Tag, bool Pure>
struct gradient<op::loop_var<Tag, Pure>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        return g;
    }
};
template <class Tag, class D, bool Pure>
struct gradient<op::loop_counter<Tag, D, Pure>> : no_gradient {};

namespace detail {
template <class Fn, std::size_t K>
struct scan_grad_tag {};
// A scan over elems' leading axis whose step sees the carry and the iteration t.
template <class Tag, bool Pure = true, class E, class I, class F>
auto indexed_scan(const E& elems, const I& init, F step) {
    using D = device_t<I>;
    const auto v = make_node<op::loop_var<Tag, Pure>>(init);
    const node<op::loop_counter<Tag, D, Pure>> t(children_tag{});
    const auto b = step(v, t);
    if constexpr (Pure && !is_pure_v<std::remove_cvref_t<decltype(b)>>) return indexed_scan<Tag, false>(elems, init, step);
    else return make_node<op::loop<true>>(v, t, b, literal<bool, 1, 1, D>{}, elems);
}
// The adjoint of child I of scan node n (n's adjoint is g): reverse-mode
// through the iterations, recomputing each step from the stacked carries
// (a fresh copy of the step, built from the kept step function).
template <std::size_t I, class N, class G>
auto scan_adjoint(const N& n, const G& g) {
    const auto& v = n.template child<0>();
    const auto& init = v.template child<0>();
    const auto& elems = n.template child<4>();
    const auto& fn = n.template child<5>().data->fn;
    using Fn = std::remove_cvref_t<decltype(fn)>;
    using D = device_t<N>;
    using C = value_type_t<N>;
    using i32 = std::int32_t;
    const literal<i32, 0, 1, D> zero;
    const literal<i32, 1, 1, D> one;
    const literal<i32, 2, 1, D> two;
    const auto gy = broadcast_like(g, n);  // [T, carry]
    const auto len = cast<i32>(make_node<op::reduced_count<0>>(elems));
    const auto zc = broadcast_like(literal<C, 0, 1, D>{}, init);
    // the carry entering step t, and step t's row
    const auto carry_at = [&](const auto& t) { return where(equal(t, zero), init, gather(n, maximum(t - one, zero))); };
    const auto row_at = [&](const auto& t) { return gather(elems, t); };
    // the adjoints of the carries, from the last step back: row s is that of the carry entering step T-1-s
    const auto back = indexed_scan<scan_grad_tag<Fn, 0>>(elems, zc, [&](const auto& a, const auto& s) {
        const auto r = len - one - s;
        const auto c = identity(stop_gradient(carry_at(r)));
        const auto y = fn(c, identity(stop_gradient(row_at(r))));
        return seeded_grad(y, gather(gy, r) + a, c);
    });
    if constexpr (I == 0) {
        return cond(len > zero, [&] { return gather(back, maximum(len - one, zero)); }, [&] { return zc; });
    } else if constexpr (std::remove_cvref_t<decltype(n.template child<5>())>::independent_rows) {
        // every step at once: the carries entering the steps, the rows and the steps' adjoints,
        // stacked [time, batch, ...] and flattened to [time * batch, ...]
        const auto adj_at = [&](const auto& t) {
            return gather(gy, t) + where(equal(t, len - one), zc, gather(back, maximum(len - two - t, zero)));
        };
        const auto carries = indexed_scan<scan_grad_tag<Fn, 1>>(elems, zc, [&](const auto&, const auto& t) { return carry_at(t); });
        const auto seeds = indexed_scan<scan_grad_tag<Fn, 2>>(elems, zc, [&](const auto&, const auto& t) { return adj_at(t); });
        const auto flat = [](const auto& e) {
            using S = shape_t<std::remove_cvref_t<decltype(e)>>;
            return [&]<std::size_t... K>(std::index_sequence<K...>) {
                static_assert(((S::value.d[K + 2] != dyn) && ...),
                              "typeflow: scan with independent_rows: the extents after the batch axis must be static");
                return reshape<-1, S::value.d[K + 2]...>(e);
            }(std::make_index_sequence<S::rank - 2>{});
        };
        const auto x = identity(stop_gradient(flat(elems)));
        const auto y = fn(identity(stop_gradient(flat(carries))), x);
        if constexpr (I == 4) return reshape_like(seeded_grad(y, flat(seeds), x), elems);
        else return seeded_grad(y, flat(seeds), n.template child<I>());
    } else {
        // the adjoint of step t's result: its row of g and what the later steps send back
        const auto adj_at = [&](const auto& t) {
            return gather(gy, t) + where(equal(t, len - one), zc, gather(back, maximum(len - two - t, zero)));
        };
        if constexpr (I == 4) {
            // zeros of a row's extents (sum<0>, not row 0: there may be no rows)
            const auto zr = broadcast_like(literal<value_type_t<decltype(elems)>, 0, 1, D>{}, sum<0>(elems));
            return indexed_scan<scan_grad_tag<Fn, 4>>(elems, zr, [&](const auto&, const auto& t) {
                const auto x = identity(stop_gradient(row_at(t)));
                const auto y = fn(identity(stop_gradient(carry_at(t))), x);
                return seeded_grad(y, adj_at(t), x);
            });
        } else {
            const auto& p = n.template child<I>();
            const auto zp = broadcast_like(literal<value_type_t<decltype(p)>, 0, 1, D>{}, p);
            const auto steps = indexed_scan<scan_grad_tag<Fn, I>>(elems, zp, [&](const auto&, const auto& t) {
                const auto y = fn(identity(stop_gradient(carry_at(t))), identity(stop_gradient(row_at(t))));
                return seeded_grad(y, adj_at(t), p);
            });
            return sum<0>(steps);
        }
    }
}
}  // namespace detail

/// scan: reverse-mode through the iterations. A reverse scan carries the
/// adjoint of the carry back from the last step; the adjoints of the rows and
/// of the variables and placeholders the step reads are scans over the steps
/// (the latter summed). Each step is recomputed from the stacked carries,
/// with a fresh copy of the step function. A scan made by a gradient is not
/// differentiated again.
template <>
struct gradient<op::loop<true>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        constexpr bool kept = N::children_list::size > 5;
        if constexpr (I == 1 || I == 2 || I == 3 || I == 5 || !kept || !std::is_floating_point_v<value_type_t<N>>) {
            return ad::zero{};
        } else if constexpr (I == 4 && !std::is_floating_point_v<value_type_t<meta::list_at_t<4, typename N::children_list>>>) {
            return ad::zero{};
        } else {
            return detail::scan_adjoint<I>(n, g);
        }
    }
};

}  // namespace typeflow
