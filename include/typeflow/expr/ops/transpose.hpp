// typeflow/expr/ops/transpose.hpp — axis permutation: transpose<P...>(x).
#pragma once
#include <utility>

#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>

namespace typeflow {
namespace op {
template <std::size_t... P>
struct permute {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "transpose";
    static constexpr std::array<std::size_t, sizeof...(P)> perm{P...};
    static constexpr bool valid(std::size_t rank) {
        if (sizeof...(P) != rank) return false;
        std::array<bool, max_rank> seen{};
        for (std::size_t p : perm) {
            if (p >= rank || seen[p]) return false;
            seen[p] = true;
        }
        return true;
    }
    static constexpr dims permuted(dims a) {
        dims o;
        o.rank = a.rank;
        for (std::size_t i = 0; i < sizeof...(P); ++i) o.d[i] = a.d[perm[i]];
        return o;
    }
    template <class A>
    static constexpr auto rule() {
        constexpr bool ok = valid(shape_t<A>::rank);
        if constexpr (!ok) {  // the axes must be a permutation of 0..rank-1
            return rule_failed<diagnostic::not_a_permutation<permute, shape_t<A>>>{};
        } else {
            constexpr dims out = permuted(shape_t<A>::value);
            return result_traits<value_type_t<A>, shape_from_dims<out>, device_t<A>>{};
        }
    }
    template <class A>
    using traits = decltype(rule<A>());
    static dims infer(const dims& a) { return permuted(a); }
};

template <class Seq>
struct reversed_permute;
template <std::size_t... I>
struct reversed_permute<std::index_sequence<I...>> {
    using type = permute<(sizeof...(I) - 1 - I)...>;
};
}  // namespace op

/// Permutes axes: output axis i is input axis P[i].
template <std::size_t... P, operand A>
    requires(sizeof...(P) > 0)
decltype(auto) transpose(const A& a) {
    return make_node<op::permute<P...>>(a);
}
/// Reverses the axes (the matrix transpose for 2-D tensors).
template <operand A>
decltype(auto) transpose(const A& a) {
    if constexpr (detail::is_misuse_v<A>) {
        return detail::first_misuse<A>();
    } else {
        using P = typename op::reversed_permute<std::make_index_sequence<shape_t<A>::rank>>::type;
        return make_node<P>(a);
    }
}

/// transpose: the gradient is transposed back by the inverse permutation.
template <std::size_t... P>
struct gradient<op::permute<P...>> {
    static constexpr std::array<std::size_t, sizeof...(P)> inverse = [] {
        std::array<std::size_t, sizeof...(P)> q{};
        constexpr std::array<std::size_t, sizeof...(P)> p{P...};
        for (std::size_t i = 0; i < p.size(); ++i) q[p[i]] = i;
        return q;
    }();
    template <std::size_t I, class N, class G>
    static auto vjp(const N&, const G& g) {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return make_node<op::permute<inverse[K]...>>(g);
        }(std::make_index_sequence<sizeof...(P)>{});
    }
};

}  // namespace typeflow
