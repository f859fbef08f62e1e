// Property test of tf::grad: random composite expressions, drawn at compile
// time by a seeded generator over the op set (element-wise ops, broadcasting
// between shapes [3,4], [4], [3,1] and [], reductions with keepdims, matmul,
// where), whose gradients with respect to every variable must match central
// finite differences. Each test file checks one range of seeds on cpu, and
// the first ten of them again on the reference device.
#pragma once
#include <catch2/catch.hpp>

#include "grad_check.hpp"

#include <cstdint>
#include <utility>

#include <typeflow/typeflow.hpp>

namespace tftest::property {
namespace tf = typeflow;

constexpr std::uint64_t mix(std::uint64_t x) {  // splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

template <class Dev>
struct leaves {
    tf::variable<"a", double, tf::shape<3, 4>, Dev> a{tf::init::uniform{-1.5, 1.5, 1}};
    tf::variable<"b", double, tf::shape<4>, Dev> b{tf::init::uniform{-1.5, 1.5, 2}};
    tf::variable<"c", double, tf::shape<3, 1>, Dev> c{tf::init::uniform{-1.5, 1.5, 3}};
    tf::variable<"s", double, tf::shape<>, Dev> s{tf::init::uniform{-1.5, 1.5, 4}};
    tf::variable<"m", double, tf::shape<4, 4>, Dev> m{tf::init::uniform{-0.7, 0.7, 5}};
};

template <class Dev, long long N, long long Den = 1>
using lit = tf::literal<double, N, Den, Dev>;

template <std::uint64_t R, class Dev>
auto leaf(const leaves<Dev>& L) {
    if constexpr (R % 5 == 0) return L.a;
    else if constexpr (R % 5 == 1) return L.b;
    else if constexpr (R % 5 == 2) return L.c;
    else if constexpr (R % 5 == 3) return L.s;
    else return L.a * lit<Dev, 1, 2>{};
}

inline constexpr int op_count = 22;

template <std::uint64_t S, int D, class Dev>
auto gen(const leaves<Dev>& L) {
    constexpr std::uint64_t r = mix(S);
    if constexpr (D == 0 || r % 6 == 0) {
        return leaf<(r >> 12)>(L);
    } else {
        constexpr int op = static_cast<int>((r >> 20) % op_count);
        auto x = gen<mix(S + 1), D - 1>(L);
        using X = decltype(x);
        constexpr std::size_t rank = tf::shape_t<X>::rank;
        if constexpr (op == 0) return x + gen<mix(S + 2), D - 1>(L);
        else if constexpr (op == 1) return x - gen<mix(S + 2), D - 1>(L);
        else if constexpr (op == 2) return x * gen<mix(S + 2), D - 1>(L);
        else if constexpr (op == 3) return x / (lit<Dev, 3, 2>{} + tf::square(gen<mix(S + 2), D - 1>(L)));
        else if constexpr (op == 4) return tf::tanh(x);
        else if constexpr (op == 5) return tf::sigmoid(x);
        else if constexpr (op == 6) return tf::exp(tf::tanh(x));
        else if constexpr (op == 7) return tf::log(lit<Dev, 3, 2>{} + tf::square(x));
        else if constexpr (op == 8) return tf::sqrt(lit<Dev, 1>{} + tf::square(x));
        else if constexpr (op == 9) return tf::sin(x) * tf::cos(x * lit<Dev, 1, 3>{});
        else if constexpr (op == 10) return -tf::square(x) * lit<Dev, 1, 4>{};
        else if constexpr (op == 11) return tf::maximum(x, gen<mix(S + 2), D - 1>(L));
        else if constexpr (op == 12) return tf::minimum(x, gen<mix(S + 2), D - 1>(L));
        else if constexpr (op == 13) return tf::abs(x);
        else if constexpr (op == 14) return tf::relu(x);
        else if constexpr (op == 15) {
            auto y = gen<mix(S + 2), D - 1>(L);
            return tf::where(x > y, x * y, tf::tanh(y));
        } else if constexpr (op == 16) {
            if constexpr (rank >= 1) return tf::sum<-1>(x, tf::keepdims);
            else return x * x;
        } else if constexpr (op == 17) {
            if constexpr (rank >= 1) return tf::mean<0>(x, tf::keepdims);
            else return tf::tanh(x);
        } else if constexpr (op == 18) {
            if constexpr (rank >= 1) return tf::max<-1>(x, tf::keepdims);
            else return tf::sigmoid(x);
        } else if constexpr (op == 19) {
            if constexpr (rank == 2 && tf::shape_t<X>::value.d[1] == 4) return tf::matmul(x, L.m);
            else return x * lit<Dev, 2>{};
        } else if constexpr (op == 20) {
            return tf::pow(lit<Dev, 1>{} + tf::square(x), lit<Dev, 3, 2>{});
        } else {
            if constexpr (rank >= 1) return tf::sum(tf::tanh(x));
            else return tf::square(x);
        }
    }
}

/// Checks the random expression number Seed; y = sum(f * w) for random w.
template <std::uint64_t Seed, class Dev>
void check_one(leaves<Dev>& L, int& failures) {
    auto f = gen<mix(Seed * 7919 + 17), 4>(L);
    using F = decltype(f);
    auto w = [] {
        tf::tensor<double> t(tf::shape_t<F>::value);
        tf::init::uniform{-1, 1, Seed + 1000}(t, "w");
        return t;
    }();
    tf::constant_tensor<double, tf::shape_t<F>, Dev> c;
    c.data = tf::constant<tf::shape_t<F>>(w).data;
    auto y = tf::sum(f * c);
    const grad_error e = check_gradients_one_plan(y, L.a, L.b, L.c, L.s, L.m);
    if (!(e.worst <= 1e-6)) {
        ++failures;
        UNSCOPED_INFO("seed " << Seed << ": worst error " << e.worst << " at " << e.where);
    }
}

/// Checks seeds First + K... with every leaf on device Dev.
template <std::uint64_t First, class Dev = tf::cpu, std::size_t... K>
int check_range(std::index_sequence<K...>) {
    leaves<Dev> L;
    int failures = 0;
    (check_one<First + K>(L, failures), ...);
    return failures;
}

}  // namespace tftest::property
