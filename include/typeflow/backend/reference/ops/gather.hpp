// typeflow/backend/reference/ops/gather.hpp — reference gather, indexed_slices
// and sparse_apply: naive loops, one element at a time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

template <int Axis>
struct kernel<reference, op::gather<Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto g = typeflow::detail::gather_geometry_of(ctx.dims_of(n.template child<0>()),
                                                            ctx.dims_of(n.template child<1>()), op::gather<Axis>::axis);
        const auto* p = ctx.input(n.template child<0>());
        const auto* idx = ctx.input(n.template child<1>());
        typeflow::detail::check_indices(op::gather<Axis>::name, idx, g.count, g.extent);
        for (index_t o = 0; o < g.outer; ++o)
            for (index_t j = 0; j < g.count; ++j)
                for (index_t r = 0; r < g.inner; ++r)
                    out[(o * g.count + j) * g.inner + r] = p[(o * g.extent + static_cast<index_t>(idx[j])) * g.inner + r];
    }
};

template <int Axis>
struct kernel<reference, op::indexed_slices<Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims& pd = ctx.dims_of(n.template child<0>());
        for (index_t i = 0, e = pd.numel(); i < e; ++i) out[i] = T(0);
        auto add = [&](const auto& vc, const auto& ic) {
            const auto g = typeflow::detail::gather_geometry_of(pd, ctx.dims_of(ic), op::indexed_slices<Axis>::axis);
            const T* v = ctx.input(vc);
            const auto* idx = ctx.input(ic);
            typeflow::detail::check_indices(op::indexed_slices<Axis>::name, idx, g.count, g.extent);
            for (index_t o = 0; o < g.outer; ++o)
                for (index_t j = 0; j < g.count; ++j)
                    for (index_t r = 0; r < g.inner; ++r)
                        out[(o * g.extent + static_cast<index_t>(idx[j])) * g.inner + r] += v[(o * g.count + j) * g.inner + r];
        };
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (add(n.template child<1 + 2 * K>(), n.template child<2 + 2 * K>()), ...);
        }(std::make_index_sequence<(meta::children_t<N>::size - 1) / 2>{});
    }
};

template <class Rule, std::size_t R, std::size_t P>
struct kernel<reference, op::sparse_apply<Rule, R, P>> {
    using Op = op::sparse_apply<Rule, R, P>;
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, std::int64_t* out) {
        using T = typename meta::remove_cvref_t<decltype(n.template child<Op::var_at>())>::value_type;
        const dims& vd = ctx.dims_of(n.template child<Op::var_at>());
        const index_t rows = vd.rank ? vd.d[0] : 0, w = rows ? vd.numel() / rows : 0;
        T* var = const_cast<T*>(ctx.input(n.template child<Op::var_at>()));
        T* slot[Rule::slots + 1] = {};
        T h[Op::hypers];
        [&]<std::size_t... S, std::size_t... H>(std::index_sequence<S...>, std::index_sequence<H...>) {
            ((slot[S] = const_cast<T*>(ctx.input(n.template child<Op::slot_at + S>()))), ...);
            ((h[H] = ctx.input(n.template child<Op::hyper_at + H>())[0]), ...);
        }(std::make_index_sequence<Rule::slots>{}, std::make_index_sequence<Op::hypers>{});
        // every occurrence (row, gradient row), in order; all checked before any write
        std::vector<index_t> row;
        std::vector<const T*> src;
        auto collect = [&](const auto& vc, const auto& ic) {
            const T* v = ctx.input(vc);
            const auto* idx = ctx.input(ic);
            const index_t c = ctx.dims_of(ic).numel();
            typeflow::detail::check_indices(Op::name, idx, c, rows);
            for (index_t j = 0; j < c; ++j) row.push_back(static_cast<index_t>(idx[j])), src.push_back(v + j * w);
        };
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (collect(n.template child<Op::values_at + K>(), n.template child<Op::indices_at + K>()), ...);
        }(std::make_index_sequence<P>{});
        // each distinct row once, at its first occurrence, with the sum of its occurrences in order
        std::vector<T> g(static_cast<std::size_t>(w));
        std::int64_t distinct = 0;
        for (std::size_t a = 0; a < row.size(); ++a) {
            bool seen = false;
            for (std::size_t b = 0; b < a; ++b) seen = seen || row[b] == row[a];
            if (seen) continue;
            ++distinct;
            for (index_t j = 0; j < w; ++j) g[static_cast<std::size_t>(j)] = src[a][j];
            for (std::size_t b = a + 1; b < row.size(); ++b)
                if (row[b] == row[a])
                    for (index_t j = 0; j < w; ++j) g[static_cast<std::size_t>(j)] += src[b][j];
            T* s[Rule::slots + 1] = {};
            for (std::size_t q = 0; q < Rule::slots; ++q) s[q] = slot[q] + row[a] * w;
            Rule::row(var + row[a] * w, var + row[a] * w, s, s, h, g.data(), w);
        }
        *out = distinct;
    }
};

}  // namespace typeflow
