// typeflow/expr/node.hpp — the expression concept and the operation node.
#pragma once
#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/device.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/core/type_list.hpp>
#include <typeflow/expr/op.hpp>

namespace typeflow {

namespace detail {
struct expression_base {};
// Makes a node from a state built elsewhere (see runtime/expr.hpp).
struct adopt_state_tag {};
// The children of a node: a minimal tuple (one base per element, no
// constructor templates). std::tuple's constrained converting constructors
// make GCC and Clang work exponentially in the depth of a graph whose nodes
// share children (residual connections).
struct children_tag {};
template <std::size_t I, class T>
struct child_box {
    T value;
};
template <class Seq, class... C>
struct children_impl;
template <std::size_t... I, class... C>
struct children_impl<std::index_sequence<I...>, C...> : child_box<I, C>... {
    explicit children_impl(C... c) : child_box<I, C>{std::move(c)}... {}
};
template <class... C>
struct children_of : children_impl<std::index_sequence_for<C...>, C...> {
    using children_impl<std::index_sequence_for<C...>, C...>::children_impl;
};
template <std::size_t I, class T>
const T& get_child(const child_box<I, T>& b) noexcept {
    return b.value;
}

// The shared state of a node: a reference count and its children, each in a
// type-erased slot. The state, the handle and the slot code are plain
// classes and functions, so building, copying and releasing nodes compiles
// once, not once per node type (a typed box per node type, or
// std::shared_ptr's control block, would emit a dozen functions per node
// type, each with a name as long as the node's type).
inline constexpr std::size_t child_slot_bytes = 16;
struct child_slot {
    alignas(8) unsigned char bytes[child_slot_bytes];
    void (*destroy)(void*) noexcept;
};
struct node_state {
    std::atomic<long> refs{1};
    std::size_t count = 0;  // children stored so far
    node_state* next_released = nullptr;  // see release_node_state
    // the state this one stands for, when made as a copy of it with other
    // leaves (runtime/expr.hpp): its identity, and held by it
    node_state* origin = nullptr;
    const void* identity() const noexcept { return origin ? origin : this; }
    child_slot* slots() noexcept { return reinterpret_cast<child_slot*>(this + 1); }
    const child_slot* slots() const noexcept { return reinterpret_cast<const child_slot*>(this + 1); }
};
static_assert(sizeof(node_state) % alignof(child_slot) == 0);
inline node_state* new_node_state(std::size_t children) {
    void* p = ::operator new(sizeof(node_state) + children * sizeof(child_slot));
    return ::new (p) node_state;
}
// Releasing a state releases its children, which may release theirs. A
// chain of tf::expr objects built in a loop can be deeper than the call
// stack, so a state released while another is being released waits in a
// list that the outermost call empties.
TYPEFLOW_NOINLINE inline void release_node_state(node_state* s) noexcept {
    static thread_local node_state* pending = nullptr;
    static thread_local bool releasing = false;
    s->next_released = pending;
    pending = s;
    if (releasing) return;
    releasing = true;
    while (pending) {
        node_state* t = pending;
        pending = t->next_released;
        child_slot* c = t->slots();
        for (std::size_t i = t->count; i-- > 0;) c[i].destroy(c[i].bytes);
        node_state* o = t->origin;
        t->~node_state();
        ::operator delete(t);
        if (o && o->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) release_node_state(o);
    }
    releasing = false;
}
// GCC 12 reports a copy of a handle after another one released the state as
// a use after free: it cannot see that the count was above one (a known
// false positive for reference counts).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
/// A counted reference to a node_state.
class node_handle {
public:
    node_handle() = default;
    explicit node_handle(node_state* p) noexcept : p_(p) {}
    node_handle(const node_handle& o) noexcept : p_(o.p_) {
        if (p_) p_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    node_handle(node_handle&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
    node_handle& operator=(node_handle o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    ~node_handle() {
        if (p_ && p_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) release_node_state(p_);
    }
    node_state* get() const noexcept { return p_; }

private:
    node_state* p_ = nullptr;
};
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif
inline void destroy_nothing(void*) noexcept {}
// an operation node is its handle and nothing else (see node below)
inline void destroy_node_child(void* p) noexcept { static_cast<node_handle*>(p)->~node_handle(); }

// How a child is copied into a slot. An operation node child is stored by one
// plain function for every node type (its object is its node_handle); a leaf
// by a function keyed on the leaf's own (short) type. Nothing here is keyed on
// an operation node's type: every entity instantiated per node type has a
// mangled name that spells the node's whole subgraph.
struct node_child_ops {
    static void store(node_state* s, const void* c) noexcept {
        child_slot& slot = s->slots()[s->count];
        ::new (static_cast<void*>(slot.bytes)) node_handle(*static_cast<const node_handle*>(c));
        slot.destroy = &destroy_node_child;
        ++s->count;
    }
};
template <class C>
struct leaf_child_ops {
    static_assert(sizeof(C) <= child_slot_bytes && alignof(C) <= alignof(child_slot),
                  "typeflow: a graph node's child must fit a child slot (16 bytes)");
    static_assert(std::is_nothrow_copy_constructible_v<C>);
    static void destroy(void* p) noexcept { static_cast<C*>(p)->~C(); }
    static void store(node_state* s, const void* c) noexcept {
        child_slot& slot = s->slots()[s->count];
        ::new (static_cast<void*>(slot.bytes)) C(*static_cast<const C*>(c));
        if constexpr (std::is_trivially_destructible_v<C>) slot.destroy = &destroy_nothing;
        else if constexpr (requires { C::destroy_in_slot; }) slot.destroy = &C::destroy_in_slot;  // a variable: per dtype
        else slot.destroy = &destroy;
        ++s->count;
    }
};
template <class C>
struct child_ops : meta::compile_time_only {
    using type = leaf_child_ops<C>;
};
// A variable is stored as its storage class (`slot_type`, one per dtype): it
// adds nothing to it.
template <class C>
    requires requires { typename C::slot_type; }
struct child_ops<C> : meta::compile_time_only {
    static_assert(sizeof(C) == sizeof(typename C::slot_type), "typeflow: a variable type adds no data to its storage class");
    using type = leaf_child_ops<typename C::slot_type>;
};
}  // namespace detail

namespace detail {
// A misuse: what an op function returns when its op's rule does not hold
// (make_node below), a reference to the rule's diagnostic type, which is
// incomplete and volatile-qualified (no expression is). `auto x = <misuse>`
// then fails in the caller's own statement, "'typeflow::diagnostic::
// dtypes_differ<typeflow::op::add, float, double> x' has incomplete type",
// with no "required from" lines that would print the operands' types, and
// the compiler ignores every later use of x. Ops given a misuse return it, so
// one stays one error however it is used. Never defined.
template <class Diag>
const volatile Diag& misuse() noexcept;
template <class T>
inline constexpr bool is_misuse_v = false;
template <class T>
inline constexpr bool is_misuse_v<volatile T> = std::is_class_v<T>;
}  // namespace detail

/// Any typeflow graph node: a leaf or an operation node (not a misuse, whose
/// type is incomplete).
template <class E>
concept expression = !detail::is_misuse_v<meta::remove_reference_t<E>> &&
                     __is_base_of(detail::expression_base, meta::remove_cvref_t<E>);  // the builtin: no per-type entity

/// What an op function takes: an expression, or a misuse, which it returns as
/// it is (see detail::misuse). Everything else (tf::grad, fetches, sessions,
/// tf::expr) takes expressions only.
template <class E>
concept operand = detail::is_misuse_v<meta::remove_reference_t<E>> || expression<E>;

/// Element type, static shape and device of an expression.
template <expression E>
using value_type_t = typename meta::remove_cvref_t<E>::value_type;
template <expression E>
using shape_t = typename meta::remove_cvref_t<E>::shape_type;
template <expression E>
using device_t = typename meta::remove_cvref_t<E>::device;

namespace detail {
// How many leading children only order execution: from the op's traits. A
// node made directly (not through make_node) of an op whose rule does not
// hold reports the rule's diagnostic here.
template <class Traits>
constexpr std::size_t control_inputs_of() {
    if constexpr (is_rule_failed_v<Traits>) {
        typename Traits::diagnostic error;
        static_assert(!is_rule_failed_v<Traits>, "typeflow: the op's rule does not hold for these operands (see the type above)");
        return 0;
    } else if constexpr (requires { Traits::control_inputs; }) {
        return std::size_t{Traits::control_inputs};
    } else {
        return 0;
    }
}
// The static facts of a node, in a base keyed on the op alone: a static member
// of node<Op, C...> itself would be an entity whose mangled name spells the
// node's whole subgraph.
template <class Op, std::size_t Control>
struct node_facts : expression_base {
    static_assert(op_tag<Op>, "typeflow: node<Op, ...>: Op is not an op tag (it needs `kind` and `name`; see expr/op.hpp)");
    using op = Op;
    static constexpr op_kind kind = Op::kind;
    static constexpr bool is_leaf = false;
    /// Leading children that only order execution (control dependencies).
    static constexpr std::size_t control_inputs = Control;
    /// Children (a bit per position) whose extents alone the op reads.
    static constexpr unsigned extents_only_inputs = extents_only_inputs_v<Op>;
};
}  // namespace detail

/// An operation node: the op tag `Op` (static attributes) applied to the
/// children `C...`. A node is a shared handle to its immutable children, so
/// copying it is cheap and never copies tensors; its identity at run time is
/// the address of that shared state.
template <class Op, class... C>
class node : public detail::node_facts<Op, detail::control_inputs_of<typename Op::template traits<C...>>()> {
public:
    using traits = typename Op::template traits<C...>;
    using value_type = typename traits::value_type;
    using shape_type = typename traits::shape_type;
    using device = typename traits::device;

    /// Use make_node or the op functions. The tag keeps this constructor out
    /// of implicit-conversion checks between node types, which otherwise
    /// recurse through every child and cost time exponential in the depth of
    /// graphs with shared children.
    node(detail::children_tag, const C&... c) : h_(detail::new_node_state(sizeof...(C))) {
        (detail::child_ops<C>::type::store(h_.get(), &c), ...);
    }
    /// Takes over `h`, a state whose slots hold objects of types C... in order.
    node(detail::adopt_state_tag, detail::node_handle h) noexcept : h_(static_cast<detail::node_handle&&>(h)) {}

    /// Calls f(children...).
    template <class F>
    decltype(auto) apply_children(F&& f) const {
        return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
            return std::forward<F>(f)(child<I>()...);
        }(std::index_sequence_for<C...>{});
    }
    template <std::size_t I>
    const auto& child() const noexcept {
        using T = meta::at_t<I, C...>;
        return *__builtin_launder(reinterpret_cast<const T*>(h_.get()->slots()[I].bytes));
    }
    /// Address of the shared state: equal for copies of one node.
    const void* identity() const noexcept { return h_.get()->identity(); }

private:
    detail::node_handle h_;  // the only member: a child slot holding a node is destroyed as a handle
};

/// The node tf::let makes (expr/let.hpp).
template <class F>
class let_node;

namespace meta {
namespace children_detail {
template <class Op, class... C>
list<C...> of(const node<Op, C...>*);  // an operation node, or a class derived from one (let_node)
template <class N>
auto of(const N*) -> typename N::children_list;  // leaves and kernel signatures
}  // namespace children_detail
/// The children of node N as a meta::list. Not a member of node: a member
/// typedef is a debug entry of every node, whose name spells every child.
template <class N>
using children_t = decltype(children_detail::of(static_cast<const N*>(nullptr)));
}  // namespace meta

namespace detail {
template <class T>
inline constexpr bool is_node_v = false;
template <class Op, class... C>
inline constexpr bool is_node_v<node<Op, C...>> = true;
template <class Op, class... C>
struct child_ops<node<Op, C...>> : meta::compile_time_only {
    using type = node_child_ops;
};

template <class E>
struct is_pure;
}  // namespace detail

/// True when no anonymous run-time constant is reachable from E: such a node
/// is identified by its type alone and merged with every node of that type.
template <class E>
inline constexpr bool is_pure_v = detail::is_pure<E>::value;

namespace detail {
template <class E>
struct is_pure : std::bool_constant<E::pure>, meta::compile_time_only {};  // leaves say it
template <class Op, class... C>
struct is_pure<node<Op, C...>> : std::bool_constant<(is_pure<C>::value && ...)>, meta::compile_time_only {};
}  // namespace detail

namespace detail {
template <class A0, class... A>
decltype(auto) first_misuse() noexcept {
    if constexpr (is_misuse_v<A0>) return misuse<std::remove_cv_t<A0>>();
    else return first_misuse<A...>();
}
}  // namespace detail

/// Builds node<Op, decayed operands...>. When the op's rule does not hold for
/// the operands (its traits are rule_failed<Diag>), or an operand is already a
/// misuse, returns a misuse instead (detail::misuse): op functions return
/// decltype(auto), so that it reaches the caller, who gets one short error.
template <class Op, class... A>
decltype(auto) make_node(const A&... a) {
    if constexpr ((detail::is_misuse_v<A> || ...)) {
        return detail::first_misuse<A...>();
    } else if constexpr (detail::is_rule_failed_v<typename Op::template traits<A...>>) {
        return detail::misuse<typename Op::template traits<A...>::diagnostic>();
    } else {
        return node<Op, A...>(detail::children_tag{}, a...);
    }
}

}  // namespace typeflow
