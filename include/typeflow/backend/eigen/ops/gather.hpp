// typeflow/backend/eigen/ops/gather.hpp — CPU kernels of gather (row copies,
// split over threads for large gathers), indexed_slices (zeros, then the
// values' rows added at their indices) and sparse_apply (the rows present in
// a sparse gradient, each distinct row updated once with its summed gradient;
// the work is proportional to the rows in the batch, not to the table).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::eigen::detail {
/// Elements a thread copies or updates at least in the gather kernels.
inline constexpr index_t gather_grain = 1 << 15;

/// Parts of [0, n) units of `per` elements each for ctx.par: one part unless
/// the work is large and there are threads.
inline index_t gather_unit_grain(index_t per) { return std::max<index_t>(1, gather_grain / std::max<index_t>(per, 1)); }

/// Adds n elements of src into dst.
template <class T>
inline void add_row(T* dst, const T* src, index_t n) {
    for (index_t j = 0; j < n; ++j) dst[j] += src[j];
}

/// One occurrence of a row in a sparse update: the row, its order among all
/// occurrences, and its gradient row.
struct sparse_entry {
    index_t row, seq;
    const void* src;
};
}  // namespace typeflow::backend::eigen::detail

namespace typeflow {

template <int Axis>
struct kernel<cpu, op::gather<Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        namespace bd = backend::eigen::detail;
        const auto g = typeflow::detail::gather_geometry_of(ctx.dims_of(n.template child<0>()),
                                                            ctx.dims_of(n.template child<1>()), op::gather<Axis>::axis);
        const T* p = ctx.input(n.template child<0>());
        const auto* idx = ctx.input(n.template child<1>());
        typeflow::detail::check_indices(op::gather<Axis>::name, idx, g.count, g.extent);
        const index_t rows = g.outer * g.count;
        const std::size_t bytes = static_cast<std::size_t>(g.inner) * sizeof(T);
        auto block = [&](index_t r0, index_t r1) {
            for (index_t r = r0; r < r1; ++r) {
                const index_t o = r / g.count, j = r % g.count;
                if (bytes)
                    std::memcpy(out + r * g.inner, p + (o * g.extent + static_cast<index_t>(idx[j])) * g.inner, bytes);
            }
        };
        if (ctx.par.threads > 1 && rows * g.inner >= 2 * bd::gather_grain)
            ctx.par.for_range(rows, bd::gather_unit_grain(g.inner), [&](std::size_t, index_t b, index_t e) { block(b, e); });
        else
            block(0, rows);
    }
};

template <int Axis>
struct kernel<cpu, op::indexed_slices<Axis>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        namespace bd = backend::eigen::detail;
        const dims& pd = ctx.dims_of(n.template child<0>());
        const index_t total = pd.numel();
        if (ctx.par.threads > 1 && total >= 2 * bd::gather_grain)
            ctx.par.for_range(total, bd::gather_grain, [&](std::size_t, index_t b, index_t e) {
                std::memset(static_cast<void*>(out + b), 0, static_cast<std::size_t>(e - b) * sizeof(T));
            });
        else if (total)
            std::memset(static_cast<void*>(out), 0, static_cast<std::size_t>(total) * sizeof(T));
        // each (values, indices) pair in order; duplicates add up
        auto add = [&](const auto& vc, const auto& ic) {
            const auto g = typeflow::detail::gather_geometry_of(pd, ctx.dims_of(ic), op::indexed_slices<Axis>::axis);
            const T* v = ctx.input(vc);
            const auto* idx = ctx.input(ic);
            typeflow::detail::check_indices(op::indexed_slices<Axis>::name, idx, g.count, g.extent);
            auto outer = [&](index_t o0, index_t o1) {  // distinct outer positions write disjoint memory
                for (index_t o = o0; o < o1; ++o)
                    for (index_t j = 0; j < g.count; ++j)
                        bd::add_row(out + (o * g.extent + static_cast<index_t>(idx[j])) * g.inner,
                                    v + (o * g.count + j) * g.inner, g.inner);
            };
            if (ctx.par.threads > 1 && g.outer > 1 && g.outer * g.count * g.inner >= 2 * bd::gather_grain)
                ctx.par.for_range(g.outer, bd::gather_unit_grain(g.count * g.inner),
                                  [&](std::size_t, index_t b, index_t e) { outer(b, e); });
            else
                outer(0, g.outer);
        };
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (add(n.template child<1 + 2 * K>(), n.template child<2 + 2 * K>()), ...);
        }(std::make_index_sequence<(meta::children_t<N>::size - 1) / 2>{});
    }
};

template <class Rule, std::size_t R, std::size_t P>
struct kernel<cpu, op::sparse_apply<Rule, R, P>> {
    using Op = op::sparse_apply<Rule, R, P>;
    using entry = backend::eigen::detail::sparse_entry;
    // the occurrences (sorted), the first occurrence of each distinct row, and
    // one gradient-row accumulator per thread (double-sized elements suffice)
    static index_t occurrences(const dims* const* in) {
        index_t m = 0;
        for (std::size_t k = 0; k < P; ++k) m += in[Op::indices_at + k]->numel();
        return m;
    }
    static index_t width(const dims& v) { return v.rank && v.d[0] ? v.numel() / v.d[0] : 0; }
    template <class Ctx>
    static std::size_t workspace_bytes(const Ctx& ctx) {
        const index_t m = occurrences(ctx.in_dims), w = width(*ctx.in_dims[Op::var_at]);
        return static_cast<std::size_t>(m) * sizeof(entry) + static_cast<std::size_t>(m + 1) * sizeof(index_t) +
               static_cast<std::size_t>(std::max(ctx.par.threads, 1)) * static_cast<std::size_t>(w) * sizeof(double) + 64;
    }

    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, std::int64_t* out) {
        using T = typename meta::remove_cvref_t<decltype(n.template child<Op::var_at>())>::value_type;
        namespace bd = backend::eigen::detail;
        const dims& vd = ctx.dims_of(n.template child<Op::var_at>());
        const index_t rows = vd.rank ? vd.d[0] : 0, w = width(vd);
        const index_t m = occurrences(ctx.in_dims);
        // writes go straight to the variable's and the slots' storage
        T* var = const_cast<T*>(ctx.input(n.template child<Op::var_at>()));
        T* slot[Rule::slots + 1] = {};
        T h[Op::hypers];
        [&]<std::size_t... S, std::size_t... H>(std::index_sequence<S...>, std::index_sequence<H...>) {
            ((slot[S] = const_cast<T*>(ctx.input(n.template child<Op::slot_at + S>()))), ...);
            ((h[H] = ctx.input(n.template child<Op::hyper_at + H>())[0]), ...);
        }(std::make_index_sequence<Rule::slots>{}, std::make_index_sequence<Op::hypers>{});
        // every index is checked before any row is written
        entry* e = static_cast<entry*>(ctx.workspace());
        index_t k = 0;
        auto collect = [&](const auto& vc, const auto& ic) {
            const T* v = ctx.input(vc);
            const auto* idx = ctx.input(ic);
            const index_t c = ctx.dims_of(ic).numel();
            typeflow::detail::check_indices(Op::name, idx, c, rows);
            for (index_t j = 0; j < c; ++j, ++k) e[k] = entry{static_cast<index_t>(idx[j]), k, v + j * w};
        };
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (collect(n.template child<Op::values_at + K>(), n.template child<Op::indices_at + K>()), ...);
        }(std::make_index_sequence<P>{});
        std::sort(e, e + m, [](const entry& a, const entry& b) { return a.row != b.row ? a.row < b.row : a.seq < b.seq; });
        index_t* first = reinterpret_cast<index_t*>(e + m);
        index_t distinct = 0;
        for (index_t j = 0; j < m; ++j)
            if (j == 0 || e[j].row != e[j - 1].row) first[distinct++] = j;
        first[distinct] = m;
        T* accs = reinterpret_cast<T*>(first + m + 1);
        // distinct rows are disjoint memory: split them over threads
        auto apply = [&](std::size_t part, index_t d0, index_t d1) {
            T* acc = accs + static_cast<index_t>(part) * w;
            T* s[Rule::slots + 1] = {};
            for (index_t d = d0; d < d1; ++d) {
                const index_t b = first[d], end = first[d + 1], r = e[b].row;
                const T* g = static_cast<const T*>(e[b].src);
                if (end - b > 1) {
                    std::memcpy(acc, g, static_cast<std::size_t>(w) * sizeof(T));
                    for (index_t j = b + 1; j < end; ++j) bd::add_row(acc, static_cast<const T*>(e[j].src), w);
                    g = acc;
                }
                if constexpr (Rule::slots > 0)
                    for (std::size_t q = 0; q < Rule::slots; ++q) s[q] = slot[q] + r * w;
                Rule::row(var + r * w, var + r * w, s, s, h, g, w);
            }
        };
        if (ctx.par.threads > 1 && distinct * w >= 2 * bd::gather_grain)
            ctx.par.for_range(distinct, bd::gather_unit_grain(w), apply);
        else
            apply(0, 0, distinct);
        *out = distinct;
    }
};

}  // namespace typeflow
