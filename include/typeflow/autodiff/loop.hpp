// typeflow/autodiff/loop.hpp — loops: tf::while_loop, tf::scan and tf::map_fn.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <tuple>
#include <utility>

#include <memory>
#include <mutex>
#include <vector>

#include <typeflow/autodiff/grad.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/autodiff/cond.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/expr/ops/reduce.hpp>
#include <typeflow/expr/ops/array.hpp>
#include <typeflow/expr/ops/cast.hpp>
#include <typeflow/expr/ops/compare.hpp>
#include <typeflow/expr/ops/gradient_ops.hpp>
#include <typeflow/expr/ops/logical.hpp>
#include <typeflow/expr/ops/reshape.hpp>

namespace typeflow::diagnostic {
template <class LoopVarShape, class BodyShape>
struct while_loop_body_changes_the_shape;
template <class LoopVarType, class BodyType>
struct while_loop_body_changes_the_dtype;
template <class ConditionType, class ConditionShape>
struct while_loop_condition_is_not_a_scalar_bool;
template <class ElemsShape>
struct scan_elems_have_no_leading_axis;
template <class ElemsShape>
struct map_fn_elems_have_no_leading_axis;
template <class ResultShape>
struct map_fn_result_needs_a_static_shape;
template <std::size_t Variables>
struct loop_function_returns_no_tuple_of_its_variables;
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
    static constexpr bool loop_state = true;  // what a loop's body reads (graph::node_flags::in_loop)
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
    static constexpr bool loop_state = true;  // what a loop's body reads (graph::node_flags::in_loop)
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
    static constexpr unsigned extents_only_inputs = Stacked ? (1u << 4) | (~0u << 5) : (~0u << 5);
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
struct is_pure<node<op::loop_var<Tag, false>, C...>> : std::false_type, meta::compile_time_only {};
template <class Tag, class D>
struct is_pure<node<op::loop_counter<Tag, D, false>>> : std::false_type, meta::compile_time_only {};
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

/// The functions of a tf::while_loop, kept for its gradient (a leaf no
/// kernel reads, identified by object: its iteration limit is a run-time
/// value). The box also keeps the gradient's forward graph once built.
template <class CondFn, class BodyFn, device_c D>
struct while_fn : detail::leaf_base {
    struct box {
        box(CondFn c, BodyFn b, std::int64_t n) : cond(std::move(c)), body(std::move(b)), maximum_iterations(n) {}
        bool flag = true;
        CondFn cond;
        BodyFn body;
        std::int64_t maximum_iterations = 0;
        mutable std::mutex m;
        mutable std::shared_ptr<void> forward;  // the gradient's forward graph (detail::while_forward)
        mutable const void* forward_scan = nullptr;  // the identity of its scan
        const bool* data() const noexcept { return &flag; }
    };
    using value_type = bool;
    using shape_type = shape<>;
    using device = D;
    static constexpr bool pure = false;
    std::shared_ptr<const box> data;
    const void* identity() const noexcept { return data.get(); }
    /// The scan a gradient recomputes the loop with, once built: a plan that
    /// runs both has the loop write the scan's rows (the loop runs once).
    const void* linked_node() const {
        std::lock_guard<std::mutex> lock(data->m);
        return data->forward_scan;
    }
};

/// 0, 1, ..., n - 1 as an int32 tensor [n], n known at run time (what a while
/// loop's gradient scans over: its iterations up to maximum_iterations).
template <device_c D>
struct iota_leaf : detail::leaf_base {
    struct box {
        std::vector<std::int32_t> values;
        const std::int32_t* data() const noexcept { return values.data(); }
    };
    using value_type = std::int32_t;
    using shape_type = shape<dyn>;
    using device = D;
    static constexpr bool pure = false;
    std::shared_ptr<const box> data;
    const void* identity() const noexcept { return data.get(); }
    dims runtime_dims() const { return dims{static_cast<index_t>(data->values.size())}; }
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
    if constexpr (requires { f(i, x); }) return f(i, x);
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
// Ls... then the types of M not among them.
template <class L, class M>
struct merge_leaves;
template <class... Ls>
struct merge_leaves<meta::list<Ls...>, meta::list<>> {
    using type = meta::list<Ls...>;
};
template <class... Ls, class M, class... Ms>
struct merge_leaves<meta::list<Ls...>, meta::list<M, Ms...>>
    : merge_leaves<meta::if_t<(std::is_same_v<M, Ls> || ...), meta::list<Ls...>, meta::list<Ls..., M>>,
                   meta::list<Ms...>> {};
// A while loop that keeps its functions and the floating-point leaves its
// body and condition read (found through probes), for its gradient.
template <class V, class N, class B, class C, class L, class K, class PB, class PC, class... Ls>
decltype(auto) make_while(const V& v, const N& n, const B& b, const C& c, const L& l, const K& keep, const PB& pb,
                          const PC& pc, meta::list<Ls...>) {
    leaf_finder<Ls...> f;
    f.visit(pb);
    f.visit(pc);
    return [&]<std::size_t... J>(std::index_sequence<J...>) -> decltype(auto) {
        return make_node<op::loop<false>>(v, n, b, c, l, keep, *static_cast<const Ls*>(f.found[J])...);
    }(std::index_sequence_for<Ls...>{});
}
// The type of the node tf::while_loop builds for (CondFn, BodyFn, Init).
template <class CondFn, class BodyFn, class Init>
struct while_node_types {
    using D = device_t<Init>;
    using V = meta::remove_cvref_t<decltype(make_node<op::loop_var<BodyFn, false>>(std::declval<const Init&>()))>;
    using I = node<op::loop_counter<BodyFn, D, false>>;
    using B = meta::remove_cvref_t<decltype(call_loop_fn(std::declval<BodyFn&>(), std::declval<const I&>(), std::declval<const V&>()))>;
    using C = meta::remove_cvref_t<decltype(call_loop_fn(std::declval<CondFn&>(), std::declval<const I&>(), std::declval<const V&>()))>;
    using PX = loop_probe<value_type_t<Init>, shape_t<Init>, D, 0>;
    using PI = loop_probe<std::int32_t, shape<>, D, 2>;
    using PB = meta::remove_cvref_t<decltype(call_loop_fn(std::declval<BodyFn&>(), std::declval<const PI&>(), std::declval<const PX&>()))>;
    using PC = meta::remove_cvref_t<decltype(call_loop_fn(std::declval<CondFn&>(), std::declval<const PI&>(), std::declval<const PX&>()))>;
    using L = typename merge_leaves<typename cond_leaves<graph::topo_t<PB>>::type, typename cond_leaves<graph::topo_t<PC>>::type>::type;
    using type = meta::remove_cvref_t<decltype(make_while(
        std::declval<const V&>(), std::declval<const I&>(), std::declval<const B&>(), std::declval<const C&>(),
        std::declval<const scalar<std::int64_t, D>&>(), std::declval<const while_fn<CondFn, BodyFn, D>&>(),
        std::declval<const PB&>(), std::declval<const PC&>(), L{}))>;
};
template <class CondFn, class BodyFn, class Init>
using while_node_t = typename while_node_types<CondFn, BodyFn, Init>::type;
// CondFn, BodyFn and Init of while node N.
template <class N>
struct while_node_args;
template <class Init, class I, class B, class C, class L, class CondFn, class BodyFn, class D, class... Ls>
struct while_node_args<node<op::loop<false>, node<op::loop_var<BodyFn, false>, Init>, I, B, C, L, while_fn<CondFn, BodyFn, D>, Ls...>> {
    using cond_fn = CondFn;
    using body_fn = BodyFn;
    using init = Init;
};
// What tf::while_loop returns: its node in a tf::let (a view of the
// variable's final value), named by CondFn, BodyFn and Init: the nodes that
// read the loop, and its gradient, spell that name instead of the loop's
// children.
template <class CondFn, class BodyFn, class Init>
struct while_let {
    const void* n;
    const while_node_t<CondFn, BodyFn, Init>& operator()() const {
        return *static_cast<const while_node_t<CondFn, BodyFn, Init>*>(n);
    }
};
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
/// tf::grad differentiates through it (reverse-mode over the iterations, as
/// tf::scan; the gradient's work grows with maximum_iterations, so give a
/// tight bound). The result is the loop in a tf::let (a view of the final
/// value, named by the two functions and init's type, so graphs that read it
/// keep short type names).
///
///     auto x = tf::while_loop([](const auto& x) { return tf::sum(x) < 100.f; },
///                             [](const auto& x) { return x * 2.f; }, x0, 50);
template <operand Init, class CondFn, class BodyFn>
decltype(auto) while_loop(CondFn cond_fn, BodyFn body_fn, const Init& init, std::int64_t maximum_iterations) {
    if constexpr (detail::is_misuse_v<Init>) {
        return init;
    } else {
        using Tag = BodyFn;  // its iteration limit is an anonymous constant: identified by object
        using D = device_t<Init>;
        const auto v = make_node<op::loop_var<Tag, false>>(init);
        const node<op::loop_counter<Tag, D, false>> i(detail::children_tag{});
        decltype(auto) b = detail::call_loop_fn(body_fn, i, v);
        decltype(auto) c = detail::call_loop_fn(cond_fn, i, v);
        if constexpr (detail::is_misuse_v<meta::remove_reference_t<decltype(b)>> ||
                      detail::is_misuse_v<meta::remove_reference_t<decltype(c)>>) {
            return detail::make_loop<false>(v, i, b, c, scalar<std::int64_t, D>{maximum_iterations});
        } else {
            // the leaves the body and the condition read themselves (not through the variable)
            const detail::loop_probe<value_type_t<Init>, shape_t<Init>, D, 0> px;
            const detail::loop_probe<std::int32_t, shape<>, D, 2> pi;
            const auto pb = detail::call_loop_fn(body_fn, pi, px);
            const auto pc = detail::call_loop_fn(cond_fn, pi, px);
            using L = typename detail::merge_leaves<
                typename detail::cond_leaves<graph::topo_t<meta::remove_cvref_t<decltype(pb)>>>::type,
                typename detail::cond_leaves<graph::topo_t<meta::remove_cvref_t<decltype(pc)>>>::type>::type;
            using K = while_fn<CondFn, BodyFn, D>;
            K keep;
            keep.data = std::shared_ptr<const typename K::box>(new typename K::box(cond_fn, body_fn, maximum_iterations));
            const auto n = detail::make_while(v, i, b, c, scalar<std::int64_t, D>{maximum_iterations}, keep, pb, pc, L{});
            static_assert(std::is_same_v<meta::remove_cvref_t<decltype(n)>, detail::while_node_t<CondFn, BodyFn, Init>>);
            return let(detail::while_let<CondFn, BodyFn, Init>{&n});
        }
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
// The graph of a scan's step (fn applied to the carry and the row), as a
// tf::let: the scan's type, spelled by every node that reads it (and by its
// gradient hundreds of times), then names fn, elems and init once instead of
// spelling the step's graph, which spells the carry and the row at each use.
// Taken by address (const void*): a closure's name also spells its
// function's parameters.
template <bool Pure, class Fn, class Elems, class Init>
auto scan_body(const void* b) {
    using V = meta::remove_cvref_t<decltype(make_node<op::loop_var<Fn, Pure>>(std::declval<const Init&>()))>;
    using I = node<op::loop_counter<Fn, device_t<Init>, Pure>>;
    using B = meta::remove_cvref_t<decltype(std::declval<Fn&>()(std::declval<const V&>(),
                                                                gather(std::declval<const Elems&>(), std::declval<const I&>())))>;
    return let([b] { return *static_cast<const B*>(b); });
}
// The type of the scan node make_scan_of builds.
template <bool Pure, bool Rows, class Fn, class Elems, class Init>
struct scan_node_types {
    using D = device_t<Init>;
    using V = meta::remove_cvref_t<decltype(make_node<op::loop_var<Fn, Pure>>(std::declval<const Init&>()))>;
    using I = node<op::loop_counter<Fn, D, Pure>>;
    using Row = decltype(gather(std::declval<const Elems&>(), std::declval<const I&>()));
    using Body = decltype(scan_body<Pure, Fn, Elems, Init>(nullptr));
    using Probe = meta::remove_cvref_t<decltype(std::declval<Fn&>()(
        std::declval<const loop_probe<value_type_t<Init>, shape_t<Init>, D, 0>&>(),
        std::declval<const loop_probe<value_type_t<Row>, shape_t<Row>, D, 1>&>()))>;
    using L = typename cond_leaves<graph::topo_t<Probe>>::type;
    using type = meta::remove_cvref_t<decltype(make_scan(std::declval<const V&>(), std::declval<const I&>(),
                                                        std::declval<const Body&>(), std::declval<const Elems&>(),
                                                        std::declval<const scan_fn<Fn, D, Rows>&>(),
                                                        std::declval<const Probe&>(), L{}))>;
};
template <bool Pure, bool Rows, class Fn, class Elems, class Init>
using scan_node_t = typename scan_node_types<Pure, Rows, Fn, Elems, Init>::type;
// What tf::scan returns: its node in a tf::let (a view of the stacked
// carries), named by fn, elems and init: every node that reads the scan, and
// its gradient, spell that name instead of the scan's children.
template <bool Pure, bool Rows, class Fn, class Elems, class Init>
auto scan_let(const void* n) {
    return let([n] { return *static_cast<const scan_node_t<Pure, Rows, Fn, Elems, Init>*>(n); });
}
template <bool Pure, bool Rows, class Fn, class Elems, class Init>
decltype(auto) make_scan_of(Fn& fn, const Elems& elems, const Init& init) {
    {
        using Tag = Fn;
        using D = device_t<Init>;
        const auto v = make_node<op::loop_var<Tag, Pure>>(init);
        const node<op::loop_counter<Tag, D, Pure>> i(detail::children_tag{});
        using Row = decltype(gather(elems, i));
        decltype(auto) b = fn(v, gather(elems, i));
        if constexpr (detail::is_misuse_v<meta::remove_reference_t<decltype(b)>>) {
            return b;
        } else if constexpr (Pure && !is_pure_v<meta::remove_cvref_t<decltype(b)>>) {
            return make_scan_of<false, Rows>(fn, elems, init);  // a step holding anonymous constants
        } else {
            // the variables and placeholders the step reads (not through the carry or the row)
            const auto probe = fn(detail::loop_probe<value_type_t<Init>, shape_t<Init>, D, 0>{},
                                  detail::loop_probe<value_type_t<Row>, shape_t<Row>, D, 1>{});
            using L = typename detail::cond_leaves<graph::topo_t<meta::remove_cvref_t<decltype(probe)>>>::type;
            scan_fn<Fn, D, Rows> keep;
            keep.data = std::make_shared<const typename scan_fn<Fn, D, Rows>::box>(typename scan_fn<Fn, D, Rows>::box{true, fn});
            const auto body = scan_body<Pure, Fn, Elems, Init>(&b);
            static_assert(std::is_same_v<typename decltype(body)::value_expression, meta::remove_cvref_t<decltype(b)>>);
            const auto n = detail::make_scan(v, i, body, elems, keep, probe, L{});
            static_assert(std::is_same_v<meta::remove_cvref_t<decltype(n)>, scan_node_t<Pure, Rows, Fn, Elems, Init>>);
            return scan_let<Pure, Rows, Fn, Elems, Init>(&n);
        }
    }
}
}  // namespace detail

namespace detail {
// The flat concatenation of its operands (one operand: itself).
template <class A, class... R>
auto joint_concat(const A& a, const R&... r) {
    if constexpr (sizeof...(R) == 0) return a;
    else return concat<0>(a, r...);
}
// reshape<D...>(x) for S = shape<D...> (static extents).
template <class S>
struct reshape_to;
template <index_t... D>
struct reshape_to<shape<D...>> {
    template <class X>
    static decltype(auto) of(const X& x) {
        return reshape<D...>(x);
    }
    // x [n, prod(D...)] as [n, D...]
    template <class X>
    static decltype(auto) rows_of(const X& x) {
        return reshape<-1, D...>(x);
    }
};
template <class T, std::size_t N>
inline constexpr bool tuple_of_size_v = false;
template <class... T, std::size_t N>
inline constexpr bool tuple_of_size_v<std::tuple<T...>, N> = sizeof...(T) == N;
// Several loop variables (or scan carries) as one flat vector: their
// elements in order, each with a static shape and one dtype. A loop over the
// flat vector is a loop over all of them, and its gradient the gradient of
// each.
template <class... V>
struct loop_vars_layout {
    static constexpr std::size_t count = sizeof...(V);
    static constexpr std::array<index_t, sizeof...(V)> numel{shape_t<V>::numel...};
    template <std::size_t K>
    static constexpr index_t offset = [] {
        index_t o = 0;
        for (std::size_t k = 0; k < K; ++k) o += numel[k];
        return o;
    }();
    template <std::size_t K>
    using at = meta::at_t<K, V...>;
    // variable K of a flat carry
    template <std::size_t K, class X>
    static decltype(auto) unpack(const X& flat) {
        return reshape_to<shape_t<at<K>>>::of(slice<offset<K>>(flat, sizes<numel[K]>));
    }
    // variable K of stacked flat carries [n, total]: [n, its extents...]
    template <std::size_t K, class X>
    static decltype(auto) unpack_rows(const X& flat) {
        return reshape_to<shape_t<at<K>>>::rows_of(slice<0, offset<K>>(flat, sizes<-1, numel[K]>));
    }
    // the initial values as one flat vector
    static auto pack_init(const std::tuple<V...>& init) {
        return std::apply([](const auto&... v) { return joint_concat(reshape<-1>(v)...); }, init);
    }
    template <class X>
    static auto unpack_all(const X& flat) {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return std::make_tuple(unpack<K>(flat)...);
        }(std::make_index_sequence<count>{});
    }
    template <class X>
    static auto unpack_all_rows(const X& flat) {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return std::make_tuple(unpack_rows<K>(flat)...);
        }(std::make_index_sequence<count>{});
    }
    // the values of a tuple (one per variable) as one flat vector, or the
    // first misuse: a value of another dtype or shape than its variable's
    // (the loop's own diagnostics, as for one variable)
    template <class R>
    static decltype(auto) pack(const R& r) {
        if constexpr (is_misuse_v<R>) {
            return r;
        } else {
            static_assert(tuple_of_size_v<R, count>,
                          "typeflow: while_loop/scan: with a tuple of loop variables, the function returns a std::tuple "
                          "of their next values, one per variable");
            if constexpr (tuple_of_size_v<R, count>) return pack_checked(r, std::make_index_sequence<count>{});
            else return misuse<diagnostic::loop_function_returns_no_tuple_of_its_variables<count>>();
        }
    }
    template <class R, std::size_t... K>
    static decltype(auto) pack_checked(const R& r, std::index_sequence<K...>) {
        using E = std::tuple<meta::remove_cvref_t<std::tuple_element_t<K, R>>...>;
        constexpr std::array<bool, count> dtype_ok{
            std::is_same_v<value_type_t<at<K>>, value_type_t<std::tuple_element_t<K, E>>>...};
        constexpr std::array<bool, count> shape_ok{fits(shape_t<at<K>>::value, shape_t<std::tuple_element_t<K, E>>::value)...};
        constexpr std::size_t bad_dtype = first_false(dtype_ok), bad_shape = first_false(shape_ok);
        if constexpr (bad_dtype < count) {
            return misuse<diagnostic::while_loop_body_changes_the_dtype<value_type_t<at<bad_dtype>>,
                                                                       value_type_t<std::tuple_element_t<bad_dtype, E>>>>();
        } else if constexpr (bad_shape < count) {
            return misuse<diagnostic::while_loop_body_changes_the_shape<shape_t<at<bad_shape>>,
                                                                       shape_t<std::tuple_element_t<bad_shape, E>>>>();
        } else {
            return joint_concat(reshape<-1>(std::get<K>(r))...);
        }
    }
    // a value of extents b can be variable of extents v: same rank, and equal where both are static
    static constexpr bool fits(dims v, dims b) {
        if (v.rank != b.rank) return false;
        for (std::size_t i = 0; i < v.rank; ++i)
            if (v.d[i] != dyn && b.d[i] != dyn && v.d[i] != b.d[i]) return false;
        return true;
    }
    template <std::size_t N>
    static constexpr std::size_t first_false(const std::array<bool, N>& a) {
        for (std::size_t k = 0; k < N; ++k)
            if (!a[k]) return k;
        return N;
    }
};
// What a tuple of loop variables must be: expressions of one dtype with static shapes.
template <class V0 = void, class... V>
inline constexpr bool loop_vars_one_dtype = (std::is_same_v<value_type_t<V0>, value_type_t<V>> && ...);
template <>
inline constexpr bool loop_vars_one_dtype<void> = true;
template <class... V>
inline constexpr bool loop_vars_static = (shape_t<V>::is_static && ...);
// What a loop over the flat vector gives, unpacked (a misuse as it is).
template <class R, class U>
decltype(auto) unpack_flat(R&& r, U unpack) {
    if constexpr (is_misuse_v<meta::remove_reference_t<R>>) return std::forward<R>(r);
    else return unpack(r);
}
// Checks a tuple of loop variables (a class: its assertions fire where it is named).
template <class... V>
struct loop_vars_check {
    static_assert(sizeof...(V) > 0, "typeflow: while_loop/scan: a tuple of loop variables needs at least one");
    static_assert(loop_vars_one_dtype<V...>,
                  "typeflow: while_loop/scan: the loop variables of a tuple must share one dtype (cast them, or "
                  "use the loop's iteration argument for an integer counter)");
    static_assert(loop_vars_static<V...>, "typeflow: while_loop/scan: the loop variables of a tuple need static shapes");
    static constexpr bool ok = sizeof...(V) > 0 && loop_vars_one_dtype<V...> && loop_vars_static<V...>;
};
// f(i, vars...) or f(vars...), the variables unpacked from a flat carry
template <class Lay, class F, class I, class X>
decltype(auto) call_vars_fn(F& f, const I& i, const X& flat) {
    return [&]<std::size_t... K>(std::index_sequence<K...>) -> decltype(auto) {
        if constexpr (requires { f(i, Lay::template unpack<K>(flat)...); })
            return f(i, Lay::template unpack<K>(flat)...);
        else
            return f(Lay::template unpack<K>(flat)...);
    }(std::make_index_sequence<Lay::count>{});
}
}  // namespace detail

/// tf::while_loop over several loop variables (TensorFlow's loop_vars):
/// `init` is a std::tuple of expressions of one dtype with static shapes;
/// `cond_fn(a, b, ...)` and `body_fn(a, b, ...)` take them (or the
/// iteration first, `body_fn(i, a, b, ...)`), and the body returns a
/// std::tuple of their next values, each of its variable's shape and dtype
/// (a compile-time error names the first that is not). Returns a std::tuple
/// of the final values; tf::grad differentiates through it as through one
/// variable.
///
///     auto [x, v] = tf::while_loop([](const auto& x, const auto&) { return tf::sum(x) < 10.f; },
///                                  [](const auto& x, const auto& v) { return std::make_tuple(x + v, v * 2.f); },
///                                  std::make_tuple(x0, v0), 20);
template <class CondFn, class BodyFn, operand... Init>
decltype(auto) while_loop(CondFn cond_fn, BodyFn body_fn, const std::tuple<Init...>& init, std::int64_t maximum_iterations) {
    if constexpr ((detail::is_misuse_v<Init> || ...)) {
        return detail::first_misuse<Init...>();
    } else if constexpr (!detail::loop_vars_check<Init...>::ok) {
        return init;  // reported
    } else {
        using Lay = detail::loop_vars_layout<Init...>;
        const auto flat_init = Lay::pack_init(init);
        auto flat_cond = [cond_fn](const auto& i, const auto& v) -> decltype(auto) {
            return detail::call_vars_fn<Lay>(cond_fn, i, v);
        };
        auto flat_body = [body_fn](const auto& i, const auto& v) -> decltype(auto) {
            return Lay::pack(detail::call_vars_fn<Lay>(body_fn, i, v));
        };
        return detail::unpack_flat(while_loop(flat_cond, flat_body, flat_init, maximum_iterations),
                                   [](const auto& f) { return Lay::unpack_all(f); });
    }
}

/// tf::scan with several carries (TensorFlow's tf.scan with a tuple
/// initializer): `init` is a std::tuple of expressions of one dtype with
/// static shapes, `fn(a, b, ..., row)` takes the carries and a row of
/// `elems` and returns a std::tuple of the next carries. Returns a std::tuple
/// of the stacked carries, each [rows of elems, its extents...].
///
///     auto [sums, prods] = tf::scan([](const auto& s, const auto& p, const auto& x) { return std::make_tuple(s + x, p * x); },
///                                   xs, std::make_tuple(s0, p0));
template <operand Elems, class Fn, operand... Init>
decltype(auto) scan(Fn fn, const Elems& elems, const std::tuple<Init...>& init) {
    if constexpr (detail::is_misuse_v<Elems>) {
        return elems;
    } else if constexpr ((detail::is_misuse_v<Init> || ...)) {
        return detail::first_misuse<Init...>();
    } else if constexpr (!detail::loop_vars_check<Init...>::ok) {
        return init;  // reported
    } else {
        using Lay = detail::loop_vars_layout<Init...>;
        const auto flat_init = Lay::pack_init(init);
        auto flat_fn = [fn](const auto& v, const auto& x) -> decltype(auto) {
            return Lay::pack(
                std::apply([&](const auto&... c) -> decltype(auto) { return fn(c..., x); }, Lay::unpack_all(v)));
        };
        return detail::unpack_flat(scan(flat_fn, elems, flat_init), [](const auto& f) { return Lay::unpack_all_rows(f); });
    }
}

/// Applies `fn` to every row of `elems` (its leading axis) and stacks the
/// results (TensorFlow's tf.map_fn): result[i] = fn(elems[i]), of extent
/// elems' on axis 0 (dyn allowed: one plan serves every length). fn's result
/// needs a static shape; its dtype may differ from elems'. Built on
/// tf::scan, so tf::grad differentiates through it.
///
///     // xs: [?, 3, 4]; norms: [?, 3], each row's norms
///     auto norms = tf::map_fn([](const auto& x) { return tf::sqrt(tf::sum<1>(x * x)); }, xs);
template <operand Elems, class Fn>
decltype(auto) map_fn(Fn fn, const Elems& elems) {
    if constexpr (detail::is_misuse_v<Elems>) {
        return elems;
    } else if constexpr (shape_t<Elems>::rank == 0) {
        return detail::misuse<diagnostic::map_fn_elems_have_no_leading_axis<shape_t<Elems>>>();
    } else {
        using D = device_t<Elems>;
        using Row = decltype(gather(elems, std::declval<const node<op::loop_counter<Fn, D, true>>&>()));
        using Out = meta::remove_cvref_t<decltype(fn(std::declval<const detail::loop_probe<value_type_t<Row>, shape_t<Row>, D, 1>&>()))>;
        if constexpr (detail::is_misuse_v<Out>) {
            return fn(detail::loop_probe<value_type_t<Row>, shape_t<Row>, D, 1>{});
        } else if constexpr (!shape_t<Out>::is_static) {
            return detail::misuse<diagnostic::map_fn_result_needs_a_static_shape<shape_t<Out>>>();
        } else {
            using T = value_type_t<Out>;
            constant_tensor<T, shape_t<Out>, D> zero;
            zero.data = std::make_shared<const tensor<T>>(shape_t<Out>::value);
            return scan([fn](const auto&, const auto& x) -> decltype(auto) { return fn(x); }, elems, zero);
        }
    }
}

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
// A loop (Stacked: a scan) whose step sees the carry and the iteration t,
// limited by `limit` (a scan: the scanned tensor; else an int64 count). A
// step holding anonymous constants makes the variable and counter
// identified by object.
template <bool Stacked, class Tag, bool Pure = true, class L, class I, class F>
auto indexed_loop_of(const L& limit, const I& init, F step) {
    using D = device_t<I>;
    const auto v = make_node<op::loop_var<Tag, Pure>>(init);
    const node<op::loop_counter<Tag, D, Pure>> t(children_tag{});
    const auto b = step(v, t);
    if constexpr (Pure && !is_pure_v<meta::remove_cvref_t<decltype(b)>>) return indexed_loop_of<Stacked, Tag, false>(limit, init, step);
    else return make_node<op::loop<Stacked>>(v, t, b, literal<bool, 1, 1, D>{}, limit);
}
// A scan over elems' leading axis whose step sees the carry and the iteration t.
template <class Tag, bool Pure = true, class E, class I, class F>
auto indexed_scan(const E& elems, const I& init, F step) {
    return indexed_loop_of<true, Tag, Pure>(elems, init, step);
}
// A loop of `count` iterations whose step sees the carry and the iteration
// t, giving the final carry (not stacked).
template <class Tag, bool Pure = true, class C, class I, class F>
auto indexed_loop(const C& count, const I& init, F step) {
    return indexed_loop_of<false, Tag, Pure>(cast<std::int64_t>(count), init, step);
}
// The address of rule_type_tag<T>: a key that names type T (autodiff::rule_memo).
template <class T>
inline constexpr char rule_type_tag = 0;
// The leaves a loop node N keeps (children 6..: the variables and
// placeholders its step reads), for its gradient.
template <class N>
struct loop_leaves {
    static constexpr std::size_t count = meta::children_t<N>::size - 6;
    template <std::size_t K>
    using at = meta::list_at_t<6 + K, meta::children_t<N>>;
    // where leaf K's elements start in the joint carry (the variable's: offset<count>)
    template <std::size_t K>
    static constexpr index_t offset = [] {
        return []<std::size_t... J>(std::index_sequence<J...>) {
            return (index_t{0} + ... + shape_t<at<J>>::numel);
        }(std::make_index_sequence<K>{});
    }();
};
// Whether the adjoints of a loop's carry and leaves can all come from one
// reverse loop whose carry holds them side by side (build_scan_joint,
// build_while_joint): the leaves it keeps are of its dtype with static
// extents, and its body reads no tf::expr (whose adjoints are found at run
// time, by a builder of their own).
template <class N>
constexpr bool joint_ok() {
    using B = meta::list_at_t<2, meta::children_t<N>>;
    return !autodiff::has_erased<typename graph::graph_of<B>::nodes>::value &&
           []<std::size_t... K>(std::index_sequence<K...>) {
               return ((std::is_same_v<value_type_t<typename loop_leaves<N>::template at<K>>, value_type_t<N>> &&
                        shape_t<typename loop_leaves<N>::template at<K>>::is_static) &&
                       ...);
           }(std::make_index_sequence<loop_leaves<N>::count>{});
}
// A piece of loop node n's gradient (n's adjoint is g) that build() makes,
// built once per loop and adjoint while a gradient is built (kept by the
// builder: autodiff::rule_memo), so the adjoints of the loop's children share it.
template <class N, class G, class F>
const auto& kept_piece(const N& n, const G& g, F build) {
    using E = decltype(build());
    return autodiff::rule_memo::get<E>(n.template child<5>().data.get(), &rule_type_tag<E>, g.identity(), build);
}
// The let tf::scan returned for scan node n (detail::scan_let): a scan's
// gradient reads the stacked carries through it, so its nodes spell the
// let's short name instead of the scan's. One per scan and adjoint.
template <class N>
struct scan_let_args;
template <class Tag, bool Pure, class Init, class I, class B, class C, class E, class Fn, class D, bool Rows, class... Ls>
struct scan_let_args<node<op::loop<true>, node<op::loop_var<Tag, Pure>, Init>, I, B, C, E, scan_fn<Fn, D, Rows>, Ls...>> {
    static auto make(const void* n) { return scan_let<Pure, Rows, Fn, E, Init>(n); }
};
template <class N, class G>
const auto& scan_value(const N& n, const G& g) {
    return kept_piece(n, g, [&] {
        auto s = scan_let_args<N>::make(&n);
        static_assert(std::is_same_v<typename decltype(s)::value_expression, N>);
        return s;
    });
}
// The carry entering step r of the scan under s: init for step 0, else
// the stacked carry of step r - 1.
template <class S, class R>
auto carry_before(const S& s, const R& r) {
    using D = device_t<S>;
    const literal<std::int32_t, 0, 1, D> zero;
    const literal<std::int32_t, 1, 1, D> one;
    const auto& init = s.template child<0>().template child<0>().template child<0>();
    return where(equal(r, zero), init, gather(s, maximum(r - one, zero)));
}
// The step function a scan node N keeps.
template <class N>
using scan_step_fn_t = meta::remove_cvref_t<decltype(std::declval<const N&>().template child<5>().data->fn)>;
// The trip count of scan node n (its rows), an int32 scalar.
template <class N>
auto scan_length(const N& n) {
    return cast<std::int32_t>(make_node<op::reduced_count<0>>(n.template child<4>()));
}
// Piece K of a step recomputed by a scan's gradient, as the value of a
// tf::let named by S (the scan's let), T (the gradient loop's counter),
// Rev (that loop runs from the last step) and K: 0 the step's index
// (len - 1 - t), 1 the carry entering it and 2 its row (both cut from the
// gradient), 3 the step function applied to them. The step's gradient reads
// them many times; its nodes spell these names, not the pieces' graphs.
template <class S, class T, bool Rev, int K>
struct scan_piece;
template <class S, class T, bool Rev, int K>
struct scan_piece_raw;
template <class S, class T, bool Rev, int K>
using scan_piece_t = meta::remove_cvref_t<decltype(let(std::declval<const scan_piece<S, T, Rev, K>&>()))>;
// the step's index: piece 0 when Rev, else the counter itself
template <class S, class T, bool Rev>
struct scan_index {
    using type = T;
};
template <class S, class T>
struct scan_index<S, T, true> {
    using type = scan_piece_t<S, T, true, 0>;
};
template <class S, class T, bool Rev>
using scan_index_t = typename scan_index<S, T, Rev>::type;
template <class S, class T>
struct scan_piece_raw<S, T, true, 0> {
    using N = typename S::value_expression;
    using type = meta::remove_cvref_t<decltype(scan_length(std::declval<const N&>()) -
                                              literal<std::int32_t, 1, 1, device_t<N>>{} - std::declval<const T&>())>;
};
template <class S, class T, bool Rev>
struct scan_piece_raw<S, T, Rev, 1> {
    using type = meta::remove_cvref_t<decltype(identity(
        stop_gradient(carry_before(std::declval<const S&>(), std::declval<const scan_index_t<S, T, Rev>&>()))))>;
};
template <class S, class T, bool Rev>
struct scan_piece_raw<S, T, Rev, 2> {
    using N = typename S::value_expression;
    using type = meta::remove_cvref_t<decltype(identity(stop_gradient(
        gather(std::declval<const N&>().template child<4>(), std::declval<const scan_index_t<S, T, Rev>&>()))))>;
};
template <class S, class T, bool Rev>
struct scan_piece_raw<S, T, Rev, 3> {
    using N = typename S::value_expression;
    using type = meta::remove_cvref_t<decltype(std::declval<const N&>().template child<5>().data->fn(
        std::declval<const scan_piece_t<S, T, Rev, 1>&>(), std::declval<const scan_piece_t<S, T, Rev, 2>&>()))>;
};
template <class S, class T, bool Rev, int K>
struct scan_piece {
    using raw = typename scan_piece_raw<S, T, Rev, K>::type;
    const void* p;  // the piece's expression, while the let is made
    const raw& operator()() const { return *static_cast<const raw*>(p); }
};
// Step t of the scan under s (scan_value) recomputed, or step len - 1 - t
// when Rev (len: the scan's trip count, scan_length): its index (r), the
// stand-ins for the carry entering it (c) and its row (x), and the step
// function applied to them (y), each a scan_piece.
template <class S, class T, bool Rev>
struct scan_step {
    scan_index_t<S, T, Rev> r;
    scan_piece_t<S, T, Rev, 1> c;
    scan_piece_t<S, T, Rev, 2> x;
    scan_piece_t<S, T, Rev, 3> y;
};
template <bool Rev, class S, class T, class L = int>
scan_step<S, T, Rev> recomputed_step(const S& s, const T& t, const L& len = 0) {
    const auto& n = s.template child<0>();
    const auto r = [&] {
        if constexpr (Rev) {
            const auto e = len - literal<std::int32_t, 1, 1, device_t<S>>{} - t;
            static_assert(std::is_same_v<meta::remove_cvref_t<decltype(e)>, typename scan_piece_raw<S, T, true, 0>::type>);
            return let(scan_piece<S, T, true, 0>{&e});
        } else {
            return t;
        }
    }();
    const auto ce = identity(stop_gradient(carry_before(s, r)));
    const auto c = let(scan_piece<S, T, Rev, 1>{&ce});
    const auto xe = identity(stop_gradient(gather(n.template child<4>(), r)));
    const auto x = let(scan_piece<S, T, Rev, 2>{&xe});
    const auto ye = n.template child<5>().data->fn(c, x);
    return {r, c, x, let(scan_piece<S, T, Rev, 3>{&ye})};
}
// What every adjoint of scan node n reads (n's adjoint is g): g broadcast to
// n's extents (gy), the trip count (len) and a zero carry (zc), built once
// per scan and adjoint while a gradient is built (kept by the builder:
// autodiff::rule_memo), so that a node identified by object (a cost holding
// an anonymous constant) stays one object in every piece.
template <class S, class G>
auto build_scan_parts(const S& s, const G& g) {
    const auto& n = s.template child<0>();
    using D = device_t<S>;
    const auto& init = n.template child<0>().template child<0>();
    const auto gy = broadcast_like(g, s);  // [T, carry]
    const auto len = scan_length(n);
    const auto zc = broadcast_like(literal<value_type_t<S>, 0, 1, D>{}, init);
    return std::tuple<decltype(gy), decltype(len), decltype(zc)>(gy, len, zc);
}
// The adjoints of scan node n's carries, from the last step back: row s is
// that of the carry entering step T-1-s. Each step is a fresh copy of the
// step function, applied to the stacked carry and row of that step and
// differentiated with the adjoint as its seed. In a tf::let (the nodes that
// read it spell the let's name, not the reverse scan's graph), built by a
// function of N and the parts alone, so the scans that read it for each
// child are of one type.
template <class S, class P>
auto build_scan_back(const void* sp, const void* pp) {  // by address: the let's name spells S and P once
    const S& sv = *static_cast<const S*>(sp);
    const auto& n = sv.template child<0>();
    const P& parts = *static_cast<const P*>(pp);
    using Fn = meta::remove_cvref_t<decltype(n.template child<5>().data->fn)>;
    const auto& [gy, len, zc] = parts;
    return let([&] {
        return indexed_scan<scan_grad_tag<Fn, 0>>(n.template child<4>(), zc, [&](const auto& a, const auto& s) {
            const auto st = recomputed_step<true>(sv, s, len);
            return seeded_grad(st.y, gather(gy, st.r) + a, st.c);
        });
    });
}
// One reverse loop over the steps, from the last, whose carry is [each
// leaf's adjoint so far, flattened..., the carry's adjoint]: each step
// recomputes the step function once, and one builder gives its adjoints of
// the carry and of every leaf (one backward pass through the step). Not
// stacked: only its final value is read. Returns that final carry.
template <class S, class P>
auto build_scan_joint(const void* sp, const void* pp) {  // by address, as build_scan_back
    const S& sv = *static_cast<const S*>(sp);
    const P& parts = *static_cast<const P*>(pp);
    using N = typename S::value_expression;
    const N& n = sv.template child<0>();
    using Fn = meta::remove_cvref_t<decltype(n.template child<5>().data->fn)>;
    using D = device_t<N>;
    using C = value_type_t<N>;
    using L = loop_leaves<N>;
    constexpr index_t off_c = L::template offset<L::count>;
    const auto& [gy, len, zc] = parts;
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
        const auto start =
            joint_concat(reshape<-1>(broadcast_like(literal<C, 0, 1, D>{}, n.template child<6 + K>()))..., reshape<-1>(zc));
        return let([&] {
            return indexed_loop<scan_grad_tag<Fn, 3>>(len, start, [&](const auto& v, const auto& s) {
                const auto st = recomputed_step<true>(sv, s, len);
                const auto seed = gather(gy, st.r) + reshape_like(slice<off_c>(v, sizes<-1>), st.c);
                autodiff::builder<meta::remove_cvref_t<decltype(st.y)>, meta::remove_cvref_t<decltype(seed)>> grads(st.y, seed);
                return joint_concat(slice<L::template offset<K>>(v, sizes<shape_t<typename L::template at<K>>::numel>) +
                                        reshape<-1>(grads.of(n.template child<6 + K>()))...,
                                    reshape<-1>(grads.of(st.c)));
            });
        });
    }(std::make_index_sequence<L::count>{});
}
// e [time, batch, ...] as [time * batch, ...] (static extents after the batch axis).
template <class E>
auto flat_rows(const E& e) {
    using S = shape_t<E>;
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
        static_assert(((S::value.d[K + 2] != dyn) && ...),
                      "typeflow: scan with independent_rows: the extents after the batch axis must be static");
        return reshape<-1, S::value.d[K + 2]...>(e);
    }(std::make_index_sequence<S::rank - 2>{});
}
// A scan with independent rows, differentiated every step at once: the
// carries entering the steps, flattened to [time * batch, ...] and cut from
// the gradient (stop_gradient), as a tf::let whose name spells S (the
// scan's let) once: the step's gradient reads it many times. By address: see scan_body.
template <class S>
auto rows_carries(const void* sp) {
    const S& sv = *static_cast<const S*>(sp);
    return let([&sv] {
        using N = typename S::value_expression;
        const N& n = sv.template child<0>();
        const auto zc = broadcast_like(literal<value_type_t<N>, 0, 1, device_t<N>>{}, n.template child<0>().template child<0>());
        const auto carries = indexed_scan<scan_grad_tag<scan_step_fn_t<N>, 1>>(
            n.template child<4>(), zc, [&](const auto&, const auto& t) { return carry_before(sv, t); });
        return identity(stop_gradient(flat_rows(carries)));
    });
}
// The adjoints of the steps' results (n's adjoint is g: its row, and what
// the later steps send back through the reverse scan), flattened as
// rows_carries, as a tf::let whose name spells S and G once.
template <class S, class G>
auto rows_seeds(const void* sp, const void* gp) {
    const S& sv = *static_cast<const S*>(sp);
    const G& g = *static_cast<const G*>(gp);
    return let([&sv, &g] {
        using N = typename S::value_expression;
        const N& n = sv.template child<0>();
        using Fn = scan_step_fn_t<N>;
        using D = device_t<N>;
        const literal<std::int32_t, 0, 1, D> zero;
        const literal<std::int32_t, 1, 1, D> one;
        const literal<std::int32_t, 2, 1, D> two;
        const auto& parts = kept_piece(n, g, [&] { return build_scan_parts(sv, g); });
        const auto& [gy, len, zc] = parts;
        const auto& back = kept_piece(n, g, [&] { return build_scan_back<S, meta::remove_cvref_t<decltype(parts)>>(&sv, &parts); });
        const auto seeds = indexed_scan<scan_grad_tag<Fn, 2>>(n.template child<4>(), zc, [&](const auto&, const auto& t) {
            return gather(gy, t) + where(equal(t, len - one), zc, gather(back, maximum(len - two - t, zero)));
        });
        return flat_rows(seeds);
    });
}
// The adjoint of child I of scan node n (n's adjoint is g): reverse-mode
// through the iterations, recomputing each step from the stacked carries
// (a fresh copy of the step, built from the kept step function). The
// initial carry's and the leaves' adjoints come from the joint reverse loop
// when it applies; the rows' adjoints (and the rest) read the reverse scan.
template <std::size_t I, class N, class G>
auto scan_adjoint_expr(const N& n, const G& g) {
    const auto& v = n.template child<0>();
    const auto& init = v.template child<0>();
    const auto& elems = n.template child<4>();
    const auto& fn = n.template child<5>().data->fn;
    using Fn = meta::remove_cvref_t<decltype(fn)>;
    using D = device_t<N>;
    using i32 = std::int32_t;
    constexpr bool rows = meta::remove_cvref_t<decltype(n.template child<5>())>::independent_rows;
    const literal<i32, 0, 1, D> zero;
    const literal<i32, 1, 1, D> one;
    const literal<i32, 2, 1, D> two;
    const auto& sv = scan_value(n, g);
    using S = meta::remove_cvref_t<decltype(sv)>;
    const auto& parts = kept_piece(n, g, [&] { return build_scan_parts(sv, g); });
    using P = meta::remove_cvref_t<decltype(parts)>;
    const auto& gy = std::get<0>(parts);  // [T, carry]
    const auto& len = std::get<1>(parts);
    const auto& zc = std::get<2>(parts);
    if constexpr (!rows && I != 4 && joint_ok<N>()) {
        using L = loop_leaves<N>;
        const auto& joint = kept_piece(n, g, [&] { return build_scan_joint<S, P>(&sv, &parts); });
        if constexpr (I == 0) {
            return reshape_like(slice<L::template offset<L::count>>(joint, sizes<-1>), init);
        } else {
            const auto& p = n.template child<I>();
            return reshape_like(slice<L::template offset<I - 6>>(joint, sizes<shape_t<meta::remove_cvref_t<decltype(p)>>::numel>), p);
        }
    } else {
        const auto& back = kept_piece(n, g, [&] { return build_scan_back<S, P>(&sv, &parts); });
        if constexpr (I == 0) {
            return cond(len > zero, [&] { return gather(back, maximum(len - one, zero)); }, [&] { return zc; });
        } else if constexpr (rows) {
            // every step at once: the carries entering the steps, the rows and the steps' adjoints,
            // stacked [time, batch, ...] and flattened to [time * batch, ...]
            const auto x = identity(stop_gradient(flat_rows(elems)));
            const auto y = fn(rows_carries<S>(&sv), x);
            const auto seeds = rows_seeds<S, G>(&sv, &g);
            if constexpr (I == 4) return reshape_like(seeded_grad(y, seeds, x), elems);
            else return seeded_grad(y, seeds, n.template child<I>());
        } else {
            // the adjoint of step t's result: its row of g and what the later steps send back
            const auto adj_at = [&](const auto& t) {
                return gather(gy, t) + where(equal(t, len - one), zc, gather(back, maximum(len - two - t, zero)));
            };
            if constexpr (I == 4) {
                // zeros of a row's extents (sum<0>, not row 0: there may be no rows)
                const auto zr = broadcast_like(literal<value_type_t<decltype(elems)>, 0, 1, D>{}, sum<0>(elems));
                return indexed_scan<scan_grad_tag<Fn, 4>>(elems, zr, [&](const auto&, const auto& t) {
                    const auto st = recomputed_step<false>(sv, t);
                    return seeded_grad(st.y, adj_at(t), st.x);
                });
            } else {
                const auto& p = n.template child<I>();
                const auto zp = broadcast_like(literal<value_type_t<decltype(p)>, 0, 1, D>{}, p);
                const auto steps = indexed_scan<scan_grad_tag<Fn, I>>(elems, zp, [&](const auto&, const auto& t) {
                    return seeded_grad(recomputed_step<false>(sv, t).y, adj_at(t), p);
                });
                return sum<0>(steps);
            }
        }
    }
}
// scan_adjoint_expr<I>(n, g) as a tf::let named by I, the scan's let (S) and
// G: the gradient's later nodes (through the ops that made elems, into the
// variables) spell that name, not the adjoint's graph. By address: see scan_body.
template <std::size_t I, class S, class G>
auto scan_adjoint_let(const void* r) {
    using R = decltype(scan_adjoint_expr<I>(std::declval<const typename S::value_expression&>(), std::declval<const G&>()));
    return let([r] { return *static_cast<const R*>(r); });
}
template <std::size_t I, class N, class G>
auto scan_adjoint(const N& n, const G& g) {
    const auto r = scan_adjoint_expr<I>(n, g);
    return scan_adjoint_let<I, meta::remove_cvref_t<decltype(scan_value(n, g))>, G>(&r);
}
}  // namespace detail

/// scan: reverse-mode through the iterations. One reverse loop carries the
/// adjoints of the carry and of the variables and placeholders the step reads
/// back from the last step; the rows' adjoints are a scan over the steps
/// reading a reverse scan of the carry's. Each step is recomputed from the
/// stacked carries, with a fresh copy of the step function (detail::scan_adjoint).
/// A scan made by a gradient is not differentiated again.
namespace detail {
template <class T>
inline constexpr bool is_while_node_v = false;
template <class... C>
inline constexpr bool is_while_node_v<node<op::loop<false>, C...>> = true;
template <class L>
struct holds_while;
template <class... Ts>
struct holds_while<meta::list<Ts...>> : std::bool_constant<(is_while_node_v<Ts> || ...)>, meta::compile_time_only {};
// True when loop node N's body (child 2) holds a while_loop.
template <class N>
inline constexpr bool body_holds_while_v = holds_while<graph::topo_t<meta::list_at_t<2, meta::children_t<N>>>>::value;
// Whether loop node N can be differentiated; a compile error when not (its
// body holds a while_loop), after which the rule stops.
template <class N>
constexpr bool differentiable_loop() {
    static_assert(!body_holds_while_v<N>,
                  "typeflow: grad: a tf::while_loop inside a tf::scan's step or a tf::while_loop's body has no "
                  "gradient yet; write the inner loop as a tf::scan");
    return !body_holds_while_v<N>;
}
}  // namespace detail

template <>
struct gradient<op::loop<true>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        constexpr bool kept = meta::children_t<N>::size > 5;
        if constexpr (!detail::differentiable_loop<N>()) {
            return ad::zero{};  // reported
        } else if constexpr (I == 1 || I == 2 || I == 3 || I == 5 || !kept || !std::is_floating_point_v<value_type_t<N>>) {
            return ad::zero{};
        } else if constexpr (I == 4 && !std::is_floating_point_v<value_type_t<meta::list_at_t<4, meta::children_t<N>>>>) {
            return ad::zero{};
        } else {
            return detail::scan_adjoint<I>(n, g);
        }
    }
};

}  // namespace typeflow

namespace typeflow {
namespace detail {
template <class Fn, std::size_t K>
struct while_grad_tag {};
template <class Init>
using while_x0_t = meta::remove_cvref_t<decltype(identity(stop_gradient(std::declval<const Init&>())))>;
// A step of the scan a while loop's gradient recomputes the loop with: the
// carry s is [taken, the variable's elements] (flattened); the step takes
// the body while the loop is alive and its condition holds (taken = 1), and
// copies the variable otherwise (taken = 0; a cond: only the taken side
// runs). A named type, not a closure: its name spells CondFn, BodyFn and
// Init, not the loop's graph.
template <class CondFn, class BodyFn, class Init>
struct while_step {
    CondFn cond_fn;
    BodyFn body_fn;
    while_x0_t<Init> x0;
    template <class S, class I>
    auto operator()(const S& s, const I& t) const {
        using D = device_t<Init>;
        using T = value_type_t<Init>;
        const auto x = reshape_like(slice<1>(s, sizes<-1>), x0);
        const auto alive = sum(slice<0>(s, sizes<1>)) > literal<T, 1, 2, D>{};
        return cond(
            logical_and(alive, call_loop_fn(cond_fn, t, x)),
            [&] { return concat<0>(reshape<1>(literal<T, 1, 1, D>{}), reshape<-1>(call_loop_fn(body_fn, t, x))); },
            [&] { return concat<0>(reshape<1>(literal<T, 0, 1, D>{}), reshape<-1>(x)); });
    }
};
// The forward graph a while loop's gradient reads: the loop as a tf::scan
// over its iterations 0 .. maximum_iterations - 1 (steps: while_step), the
// variable entering as x0 = identity(stop_gradient(init)).
template <class N>
auto build_while_scan(const N& n) {
    using A = while_node_args<N>;
    const auto& init = n.template child<0>().template child<0>();
    const auto& fns = *n.template child<5>().data;
    using D = device_t<N>;
    using T = value_type_t<N>;
    iota_leaf<D> iota;
    {
        auto b = std::make_shared<typename iota_leaf<D>::box>();
        b->values.resize(static_cast<std::size_t>(fns.maximum_iterations > 0 ? fns.maximum_iterations : 0));
        for (std::size_t t = 0; t < b->values.size(); ++t) b->values[t] = static_cast<std::int32_t>(t);
        iota.data = std::move(b);
    }
    const auto x0 = identity(stop_gradient(init));
    const auto start = concat<0>(reshape<1>(literal<T, 1, 1, D>{}), reshape<-1>(x0));
    return scan(while_step<typename A::cond_fn, typename A::body_fn, typename A::init>{fns.cond, fns.body, x0}, iota, start);
}
// build_while_scan of the while node at n, as a tf::let named by CondFn,
// BodyFn and Init: the nodes that read it spell that name, not the loop's.
template <class CondFn, class BodyFn, class Init>
struct while_forward_let {
    const void* n;
    auto operator()() const { return build_while_scan(*static_cast<const while_node_t<CondFn, BodyFn, Init>*>(n)); }
};
// Returns (the forward scan's stacked carries in a tf::let, x0).
template <class N>
auto build_while_forward(const N& n) {
    using A = while_node_args<N>;
    static_assert(std::is_same_v<N, while_node_t<typename A::cond_fn, typename A::body_fn, typename A::init>>);
    const auto hs = let(while_forward_let<typename A::cond_fn, typename A::body_fn, typename A::init>{&n});
    const auto x0 = identity(stop_gradient(n.template child<0>().template child<0>()));
    return std::make_pair(hs, x0);
}
// build_while_forward(n), built once per loop (kept in the loop's while_fn
// box), so the adjoints of all its children read one graph.
template <class N>
const auto& while_forward(const N& n) {
    using E = decltype(build_while_forward(n));
    const auto& box = *n.template child<5>().data;
    std::lock_guard<std::mutex> lock(box.m);
    if (!box.forward) {
        auto f = std::make_shared<E>(build_while_forward(n));
        box.forward_scan = f->first.template child<0>().template child<0>().identity();  // the scan below the lets
        box.forward = std::move(f);
    }
    return *static_cast<const E*>(box.forward.get());
}
// What a while loop's adjoints read: the variable's adjoint after the loop
// (gx), the trip count bound (len), whether step t took the body, and the
// variable entering step t, all from the loop's forward scan. Everything
// read from that scan is identified by object (its iterations are an iota
// leaf whose extent its object gives), so the gradient's loops are built with
// Pure = false at once.
template <class N, class G>
struct while_parts {
    using D = device_t<N>;
    using T = value_type_t<N>;
    using i32 = std::int32_t;
    static constexpr literal<i32, 0, 1, D> i0{};
    static constexpr literal<i32, 1, 1, D> i1{};
    const meta::remove_cvref_t<decltype(while_forward(std::declval<const N&>()).first)>& hs;
    const meta::remove_cvref_t<decltype(while_forward(std::declval<const N&>()).second)>& x0;
    decltype(broadcast_like(std::declval<const G&>(), x0)) gx;
    decltype(cast<i32>(make_node<op::reduced_count<0>>(hs))) len;
    while_parts(const N& n, const G& g)
        : hs(while_forward(n).first), x0(while_forward(n).second), gx(broadcast_like(g, x0)),
          len(cast<i32>(make_node<op::reduced_count<0>>(hs))) {}
    template <class I>
    auto took(const I& t) const {
        return sum(slice<0>(gather(hs, t), sizes<1>)) > literal<T, 1, 2, D>{};
    }
    template <class I>
    auto x_at(const I& t) const {
        return identity(stop_gradient(
            where(equal(t, i0), x0, reshape_like(slice<1>(gather(hs, maximum(t - i1, i0)), sizes<-1>), x0))));
    }
};
// The reverse scan whose row s is the adjoint of the variable entering step
// len - 1 - s: through a step that took the body, the body's adjoint of its
// variable; through a stopped step, unchanged.
template <class N, class G>
auto build_while_back(const N& n, const while_parts<N, G>& w) {
    auto body_fn = n.template child<5>().data->body;
    using Body = meta::remove_cvref_t<decltype(body_fn)>;
    // in a tf::let, as the forward scan: each leaf's scan reads it three times
    return let([&] {
        return indexed_scan<while_grad_tag<Body, 0>, false>(w.hs, w.gx, [&](const auto& a, const auto& s) {
            const auto r = w.len - w.i1 - s;
            return cond(
                w.took(r),
                [&] {
                    const auto c = w.x_at(r);
                    return branch_adjoint(call_loop_fn(body_fn, r, c), a, c);
                },
                [&] { return a; });
        });
    });
}
// One reverse loop over the steps, from the last: its carry is
// [each leaf's adjoint so far, flattened..., the variable's adjoint]. A step
// that took the body recomputes it once, and one builder gives the body's
// adjoints of its variable and of every leaf (sharing the backward pass
// through the body); a stopped step leaves the carry as it is. Not stacked:
// only its final value is read. Returns that final carry.
template <class N, class G>
auto build_while_joint(const N& n, const while_parts<N, G>& w) {
    auto body_fn = n.template child<5>().data->body;
    using Body = meta::remove_cvref_t<decltype(body_fn)>;
    using D = device_t<N>;
    using T = value_type_t<N>;
    using L = loop_leaves<N>;
    constexpr index_t off_x = L::template offset<L::count>;
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
        const auto start = joint_concat(
            reshape<-1>(broadcast_like(literal<T, 0, 1, D>{}, n.template child<6 + K>()))..., reshape<-1>(w.gx));
        return let([&] {
            return indexed_loop<while_grad_tag<Body, 0>, false>(w.len, start, [&](const auto& v, const auto& s) {
                const auto r = w.len - w.i1 - s;
                return cond(
                    w.took(r),
                    [&] {
                        const auto c = w.x_at(r);
                        const auto y = call_loop_fn(body_fn, r, c);
                        const auto a = reshape_like(slice<off_x>(v, sizes<-1>), c);
                        autodiff::builder<meta::remove_cvref_t<decltype(y)>, decltype(a)> grads(y, a);
                        return joint_concat(
                            slice<L::template offset<K>>(v, sizes<shape_t<typename L::template at<K>>::numel>) +
                                reshape<-1>(grads.of(n.template child<6 + K>()))...,
                            reshape<-1>(grads.of(c)));
                    },
                    [&] { return v; });
            });
        });
    }(std::make_index_sequence<L::count>{});
}
// while_adjoint when the leaves cannot share one loop: a reverse scan
// carries the variable's adjoint back through the steps that took the body
// (their bodies recomputed from the stacked carries); a leaf's adjoint sums
// the body's adjoints of it over those steps, a scan of its own.
template <std::size_t I, class N, class G>
auto while_adjoint_per_leaf(const N& n, const G& g, const while_parts<N, G>& w) {
    using D = device_t<N>;
    using i32 = std::int32_t;
    const auto& back = kept_piece(n, g, [&] { return build_while_back(n, w); });
    if constexpr (I == 0) {
        return cond(w.len > w.i0, [&] { return gather(back, maximum(w.len - w.i1, w.i0)); }, [&] { return w.gx; });
    } else {
        auto body_fn = n.template child<5>().data->body;
        using Body = meta::remove_cvref_t<decltype(body_fn)>;
        const literal<i32, 2, 1, D> i2;
        // the adjoint of step t's result: g after the last step, else what the later steps send back
        const auto adj_at = [&](const auto& t) {
            return where(equal(t, w.len - w.i1), w.gx, gather(back, maximum(w.len - i2 - t, w.i0)));
        };
        const auto& p = n.template child<I>();
        const auto zp = broadcast_like(literal<value_type_t<decltype(p)>, 0, 1, D>{}, p);
        // scanned over `back`'s rows: the scan reads what it scans where it runs itself, so the reverse
        // scan runs once, before it, not in the branch of each taken step that reads it (quadratic work)
        const auto steps = indexed_scan<while_grad_tag<Body, I>, false>(back, zp, [&](const auto&, const auto& t) {
            return cond(
                w.took(t), [&] { return branch_adjoint(call_loop_fn(body_fn, t, w.x_at(t)), adj_at(t), p); },
                [&] { return zp; });
        });
        return sum<0>(steps);
    }
}
// The adjoint of child I of while node n (n's adjoint is g), through the
// steps that took the body, recomputed from the forward scan's stacked
// carries: from the joint reverse loop (build_while_joint) when it applies,
// else per leaf. The condition is a bool: nothing flows through it, so the
// body alone is differentiated.
template <std::size_t I, class N, class G>
auto while_adjoint(const N& n, const G& g) {
    const while_parts<N, G> w(n, g);
    if constexpr (joint_ok<N>()) {
        using L = loop_leaves<N>;
        const auto& joint = kept_piece(n, g, [&] { return build_while_joint(n, w); });
        if constexpr (I == 0) {
            return reshape_like(slice<L::template offset<L::count>>(joint, sizes<-1>), w.x0);
        } else {
            const auto& p = n.template child<I>();
            return reshape_like(slice<L::template offset<I - 6>>(joint, sizes<shape_t<meta::remove_cvref_t<decltype(p)>>::numel>), p);
        }
    } else {
        return while_adjoint_per_leaf<I>(n, g, w);
    }
}
}  // namespace detail

/// while_loop: reverse-mode through the iterations. The loop is recomputed as
/// a scan over maximum_iterations steps that stop taking the body once the
/// condition fails (detail::build_while_forward); one reverse loop carries
/// the adjoints of the variable and of the leaves back through the steps that
/// took the body (detail::while_adjoint). The gradient's work
/// and the stacked carries it keeps grow with maximum_iterations, not with
/// the trip count: give a tight bound.
template <>
struct gradient<op::loop<false>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        constexpr bool kept = meta::children_t<N>::size > 5;
        if constexpr (!detail::differentiable_loop<N>()) {
            return ad::zero{};  // reported
        } else if constexpr ((I >= 1 && I <= 5) || !kept || !std::is_floating_point_v<value_type_t<N>>) {
            return ad::zero{};
        } else {
            return detail::while_adjoint<I>(n, g);
        }
    }
};

}  // namespace typeflow
