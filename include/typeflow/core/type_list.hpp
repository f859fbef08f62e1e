// typeflow/core/type_list.hpp — small, constant-depth type-list utilities.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>

namespace typeflow::meta {

// the size lives in a base keyed on the count alone: a static member of
// list<T...> would be an entity whose mangled name spells every element
template <std::size_t N>
struct list_size {
    static constexpr std::size_t size = N;
};
/// A base for classes that only compute types and are never constructed.
/// GCC writes a class with a virtual function into the debug information
/// only where its vtable is emitted, and no object of these ever needs one,
/// so a -g build skips their names, which spell nodes, subgraphs and sets of
/// nodes (about 2 KB of compiler memory per class without -g).
struct compile_time_only {
    virtual void typeflow_compile_time_only_() {}
};

/// A list of types; never constructed (a compile_time_only class).
template <class... T>
struct list : list_size<sizeof...(T)>, compile_time_only {};

/// One element of a set (a base of set and of the graph walk's sets). Not
/// dynamic: made so, a -g build took no less memory and three times as long.
template <class T>
struct tag {};

#if defined(__has_builtin)
#if __has_builtin(__remove_cvref)
#define TYPEFLOW_BUILTIN_REMOVE_CVREF 1
#endif
#endif
#ifdef TYPEFLOW_BUILTIN_REMOVE_CVREF
/// std::remove_cvref_t through the compiler's builtin.
template <class T>
using remove_cvref_t = __remove_cvref(T);
#else
template <class T>
struct remove_cvref : compile_time_only {
    using type = T;
};
template <class T>
struct remove_cvref<const T> : compile_time_only {
    using type = T;
};
template <class T>
struct remove_cvref<volatile T> : compile_time_only {
    using type = T;
};
template <class T>
struct remove_cvref<const volatile T> : compile_time_only {
    using type = T;
};
template <class T>
struct remove_cvref<T&> : remove_cvref<T> {};
template <class T>
struct remove_cvref<T&&> : remove_cvref<T> {};
/// std::remove_cvref_t, through compile_time_only classes: the standard's
/// classes spell the node types they strip in a -g build's names.
template <class T>
using remove_cvref_t = typename remove_cvref<T>::type;
#endif

template <class T>
struct remove_reference : compile_time_only {
    using type = T;
};
template <class T>
struct remove_reference<T&> : compile_time_only {
    using type = T;
};
template <class T>
struct remove_reference<T&&> : compile_time_only {
    using type = T;
};
/// std::remove_reference_t, through compile_time_only classes (as remove_cvref_t).
template <class T>
using remove_reference_t = typename remove_reference<T>::type;

template <bool B>
struct if_c : compile_time_only {
    template <class A, class Else>
    using type = A;
};
template <>
struct if_c<false> : compile_time_only {
    template <class A, class Else>
    using type = Else;
};
/// std::conditional_t, keyed on the flag alone: no class names the two types.
template <bool B, class A, class Else>
using if_t = typename if_c<B>::template type<A, Else>;

/// A set with O(1) membership: inherits tag<T> for each element.
template <class... T>
struct set : tag<T>... {};

template <class S, class T>
inline constexpr bool contains_v = __is_base_of(tag<T>, S);

template <class L, class T>
struct push_back;
template <class... Ts, class T>
struct push_back<list<Ts...>, T> {
    using type = list<Ts..., T>;
};

// Position of T in a list: one pack expansion of std::is_same_v (a compiler
// builtin comparing canonical types). Deducing T against one base per element
// (an "index map") looks O(1), but GCC 12's deduction compares deep types
// structurally, which is exponential in the depth of a graph with shared
// children.
/// Position of the first true flag (n when none).
constexpr std::size_t first_true(std::initializer_list<bool> flags) noexcept {
    std::size_t i = 0;
    for (bool f : flags) {
        if (f) return i;
        ++i;
    }
    return i;
}
/// Sum of the first n values.
constexpr std::size_t sum_first(std::initializer_list<std::size_t> values, std::size_t n) noexcept {
    std::size_t s = 0, i = 0;
    for (std::size_t v : values) {
        if (i++ == n) break;
        s += v;
    }
    return s;
}

// Position of T in a list: one pack expansion of __is_same (a compiler builtin
// comparing canonical types). Deducing T against one base per element (an
// "index map") looks O(1), but GCC 12's deduction compares deep types
// structurally, which is exponential in the depth of a graph with shared
// children. The value comes from an integral_constant base: a static member or
// variable template of its own would be an entity whose mangled name spells
// the whole list, and GCC mangles every instantiated entity (quadratic in the
// name's length), which dominated compile time for deep graphs.
//
// index_of<L, T> is an alias of integral_constant<size_t, position>, made by
// a member alias of a class instantiated once per list: a class per (list, T)
// would be a type whose debug name spells the whole list, and a graph of N
// nodes looks up each node, so its -g build held N copies of an O(N) name
// (tests/deep_chain, 160 steps: 2.26x the -O2 build's memory).
template <class L>
struct index_map;
template <class... Ts>
struct index_map<list<Ts...>> : compile_time_only {
    template <class T>
    using index = std::integral_constant<std::size_t, first_true({__is_same(T, Ts)...})>;
};
/// Position of T in list L (L's size when T is not an element).
template <class L, class T>
using index_of = typename index_map<L>::template index<T>;
/// Position of T in list L (T must be an element).
template <class L, class T>
inline constexpr std::size_t index_of_v = index_of<L, T>::value;

// The I-th type of a pack by overload resolution against one base per
// element: std::tuple_element (libstdc++ 12) recurses three elements at a
// time, and each step instantiates a class holding the rest of the pack, so
// one lookup in a graph of N nodes cost O(N^2) in time and memory. Here the
// index (compared first) rejects every base but one without looking at its type.
template <std::size_t I, class T>
struct indexed : compile_time_only {
    using type = T;
};
template <class Seq, class... T>
struct indexer;
template <std::size_t... I, class... T>
struct indexer<std::index_sequence<I...>, T...> : indexed<I, T>... {};
template <std::size_t I, class T>
indexed<I, T> select_indexed(const indexed<I, T>&);

/// The I-th type of a pack, without recursion.
template <std::size_t I, class... T>
using at_t = typename decltype(select_indexed<I>(indexer<std::index_sequence_for<T...>, T...>{}))::type;
/// The I-th type of a list.
template <std::size_t I, class L>
struct list_at;
template <std::size_t I, class... T>
struct list_at<I, list<T...>> : compile_time_only {
    using type = at_t<I, T...>;
};
template <std::size_t I, class L>
using list_at_t = typename list_at<I, L>::type;

}  // namespace typeflow::meta

