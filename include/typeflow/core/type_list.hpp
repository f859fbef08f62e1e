// typeflow/core/type_list.hpp — small, constant-depth type-list utilities.
#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace typeflow::meta {

template <class... T>
struct list {
    static constexpr std::size_t size = sizeof...(T);
};

template <class T>
struct tag {};

/// A set with O(1) membership: inherits tag<T> for each element.
template <class... T>
struct set : tag<T>... {};

template <class S, class T>
inline constexpr bool contains_v = std::is_base_of_v<tag<T>, S>;

template <class L, class T>
struct push_back;
template <class... Ts, class T>
struct push_back<list<Ts...>, T> {
    using type = list<Ts..., T>;
};

// index lookup in O(1) instantiations per query: a map inheriting one entry per element
template <class T, std::size_t I>
struct index_entry {};
template <class L, class Seq>
struct index_map_impl;
template <class... Ts, std::size_t... I>
struct index_map_impl<list<Ts...>, std::index_sequence<I...>> : index_entry<Ts, I>... {};
template <class L>
struct index_map;
template <class... Ts>
struct index_map<list<Ts...>> : index_map_impl<list<Ts...>, std::index_sequence_for<Ts...>> {};

template <class T, std::size_t I>
constexpr std::size_t index_lookup(const index_entry<T, I>*) {
    return I;
}
/// Position of T in list L (T must be an element).
template <class L, class T>
inline constexpr std::size_t index_of_v = index_lookup<T>(static_cast<const index_map<L>*>(nullptr));

/// The I-th type of a pack, without recursion.
template <std::size_t I, class... T>
using at_t = std::tuple_element_t<I, std::tuple<T...>>;

}  // namespace typeflow::meta

