#pragma once
// typeflow::dist::placement — which parameter-server task holds each
// variable (or each shard of a partitioned variable), computed at compile
// time from the variables' names, shapes and dtypes. Every task derives the
// same table with no coordination, whatever order the variables were created
// or listed in:
//
//     using P = tfd::placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<3>,
//                              decltype(w1), decltype(b1), decltype(w2)>;
//     static_assert(P::ps_of<decltype(w1)>(0) == 0);
//     for (const tfd::placed_shard& s : P::shards) ...   // var, shard, rows, bytes, ps
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <typeflow/core/fixed_string.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/leaves.hpp>

namespace typeflow::dist {

/// One piece of a variable on a ps task: rows [row_begin, row_end) of its
/// first dimension (all of it unless the variable is partitioned).
struct placed_shard {
    std::size_t var = 0;    ///< the variable's position in the placement's list
    std::size_t shard = 0;  ///< its shard, 0 .. shards of that variable - 1
    index_t row_begin = 0, row_end = 0;
    std::size_t bytes = 0;
    int ps = 0;             ///< the ps task (index among the ps tasks) that holds it
    friend constexpr bool operator==(const placed_shard&, const placed_shard&) = default;
};

// ---- placement strategies (TensorFlow's replica_device_setter ps_strategy) ----

/// Shards in order of (variable name, shard), dealt to ps 0, 1, ..., P-1, 0, ...
struct round_robin {};
/// Shards from the largest (bytes; ties by name, then shard), each to the ps
/// holding the fewest bytes so far (ties: the lowest index). TensorFlow's
/// GreedyLoadBalancingStrategy takes variables in creation order; sorting
/// first makes the table independent of it and bounds the largest load by
/// 4/3 of the best possible (longest-processing-time-first).
struct greedy_by_bytes {};

// ---- partitioners (TensorFlow's tf.compat.v1 partitioners, along axis 0) ----

/// Every variable in one piece.
struct no_partitioner {
    template <std::size_t Rows, std::size_t RowBytes>
    static constexpr std::size_t shards = 1;
};
/// Shards along the first dimension: min(Shards, its extent) of them
/// (tf.compat.v1.fixed_size_partitioner).
template <std::size_t Shards>
struct fixed_size_partitioner {
    static_assert(Shards >= 1, "typeflow: fixed_size_partitioner needs at least one shard");
    template <std::size_t Rows, std::size_t RowBytes>
    static constexpr std::size_t shards = std::min(Shards, Rows);
};
/// As many shards as keep each at least MinSliceBytes, at most MaxPartitions
/// (tf.compat.v1.min_max_variable_partitioner): rows per shard =
/// max(1, MinSliceBytes / bytes per row), shards = min(MaxPartitions,
/// ceil(rows / rows per shard)).
template <std::size_t MaxPartitions, std::size_t MinSliceBytes = std::size_t{256} << 10>
struct min_max_partitioner {
    static_assert(MaxPartitions >= 1, "typeflow: min_max_partitioner needs MaxPartitions >= 1");
    template <std::size_t Rows, std::size_t RowBytes>
    static constexpr std::size_t shards = [] {
        const std::size_t per = std::max<std::size_t>(1, RowBytes ? MinSliceBytes / RowBytes : Rows);
        return std::min(MaxPartitions, (Rows + per - 1) / per);
    }();
};

namespace detail {
template <class V>
struct placed_var {
    using S = shape_t<V>;
    static constexpr std::string_view name = V::fixed_name.view();
    static constexpr std::size_t elem = sizeof(value_type_t<V>);
    static constexpr std::size_t rows = S::rank == 0 ? 1 : static_cast<std::size_t>(S::value.d[0]);
    static constexpr std::size_t row_bytes = rows ? static_cast<std::size_t>(S::numel) * elem / rows : 0;
};

/// Rows of shard k of n over `rows` rows: the first rows % n shards get one more.
constexpr index_t shard_begin(std::size_t rows, std::size_t n, std::size_t k) {
    const std::size_t base = rows / n, extra = rows % n;
    return static_cast<index_t>(k * base + std::min(k, extra));
}

/// 64-bit FNV-1a, for fingerprints.
constexpr std::uint64_t fnv1a(std::uint64_t h, std::string_view s) {
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}
constexpr std::uint64_t fnv1a(std::uint64_t h, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
    return h;
}
}  // namespace detail

/// The placement of Vars... on NumPs ps tasks with Strategy (round_robin,
/// greedy_by_bytes) after Partitioner (no_partitioner,
/// fixed_size_partitioner<N>, min_max_partitioner<Max, MinBytes>) cut them:
/// a table fixed at compile time.
template <int NumPs, class Strategy, class Partitioner, class... Vars>
struct placement {
    static_assert(NumPs >= 1, "typeflow: placement needs at least one ps task");
    static_assert(sizeof...(Vars) >= 1, "typeflow: placement of no variables");
    static_assert((variable_c<Vars> && ...), "typeflow: placement: every entry must be a tf::variable type");
    static_assert(std::is_same_v<Strategy, round_robin> || std::is_same_v<Strategy, greedy_by_bytes>,
                  "typeflow: placement strategy must be tfd::round_robin or tfd::greedy_by_bytes");

    /// Shards of each variable, in list order.
    static constexpr std::array<std::size_t, sizeof...(Vars)> shards_per_var = {
        Partitioner::template shards<detail::placed_var<Vars>::rows, detail::placed_var<Vars>::row_bytes>...};
    static constexpr std::size_t shard_count =
        (std::size_t{0} + ... + Partitioner::template shards<detail::placed_var<Vars>::rows, detail::placed_var<Vars>::row_bytes>);

private:
    static constexpr std::array<std::string_view, sizeof...(Vars)> names_ = {detail::placed_var<Vars>::name...};
    static constexpr std::array<std::size_t, sizeof...(Vars)> rows_ = {detail::placed_var<Vars>::rows...};
    static constexpr std::array<std::size_t, sizeof...(Vars)> row_bytes_ = {detail::placed_var<Vars>::row_bytes...};

    static constexpr std::array<placed_shard, shard_count> compute() {
        std::array<placed_shard, shard_count> out{};
        std::size_t n = 0;
        for (std::size_t v = 0; v < sizeof...(Vars); ++v)
            for (std::size_t k = 0; k < shards_per_var[v]; ++k) {
                placed_shard s;
                s.var = v;
                s.shard = k;
                s.row_begin = detail::shard_begin(rows_[v], shards_per_var[v], k);
                s.row_end = detail::shard_begin(rows_[v], shards_per_var[v], k + 1);
                s.bytes = static_cast<std::size_t>(s.row_end - s.row_begin) * row_bytes_[v];
                out[n++] = s;
            }
        // the order the strategy takes them in, from names and sizes only
        std::array<std::size_t, shard_count> order{};
        for (std::size_t i = 0; i < shard_count; ++i) order[i] = i;
        auto by_name = [&](std::size_t a, std::size_t b) {
            const placed_shard &x = out[a], &y = out[b];
            if (names_[x.var] != names_[y.var]) return names_[x.var] < names_[y.var];
            return x.shard < y.shard;
        };
        if constexpr (std::is_same_v<Strategy, round_robin>) {
            std::sort(order.begin(), order.end(), by_name);
            for (std::size_t i = 0; i < shard_count; ++i) out[order[i]].ps = static_cast<int>(i % NumPs);
        } else {
            std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
                if (out[a].bytes != out[b].bytes) return out[a].bytes > out[b].bytes;
                return by_name(a, b);
            });
            std::array<std::size_t, NumPs> load{};
            for (std::size_t i : order) {
                int best = 0;
                for (int p = 1; p < NumPs; ++p)
                    if (load[p] < load[best]) best = p;
                out[i].ps = best;
                load[best] += out[i].bytes;
            }
        }
        return out;
    }
    template <class V, std::size_t... I>
    static constexpr std::size_t index_of(std::index_sequence<I...>) {
        std::size_t r = sizeof...(Vars);
        ((std::is_same_v<V, Vars> && r == sizeof...(Vars) ? (r = I, true) : false), ...);
        return r;
    }

public:
    /// Every shard, variables in list order and each variable's shards in row order.
    static constexpr std::array<placed_shard, shard_count> shards = compute();

    /// Bytes each ps task holds.
    static constexpr std::array<std::size_t, NumPs> load_bytes = [] {
        std::array<std::size_t, NumPs> l{};
        for (const placed_shard& s : shards) l[static_cast<std::size_t>(s.ps)] += s.bytes;
        return l;
    }();

    /// Position of variable V in the list.
    template <class V>
    static constexpr std::size_t index_of() {
        constexpr std::size_t i = index_of<V>(std::index_sequence_for<Vars...>{});
        static_assert(i < sizeof...(Vars), "typeflow: placement: the variable is not in this placement");
        return i;
    }
    /// The ps task holding shard k of variable V.
    template <class V>
    static constexpr int ps_of(std::size_t k = 0) {
        constexpr std::size_t v = index_of<V>();
        std::size_t first = 0;
        for (std::size_t i = 0; i < v; ++i) first += shards_per_var[i];
        return shards[first + k].ps;
    }

    /// A hash of every variable's name, dtype size and shape, and of the
    /// table: tasks built from different models (or placements) disagree.
    static constexpr std::uint64_t fingerprint = [] {
        std::uint64_t h = 14695981039346656037ull;
        ((h = detail::fnv1a(detail::fnv1a(detail::fnv1a(detail::fnv1a(h, detail::placed_var<Vars>::name), 0x3b),
                                          detail::placed_var<Vars>::elem),
                            static_cast<std::uint64_t>(shape_t<Vars>::numel))),
         ...);
        for (const placed_shard& s : shards)
            h = detail::fnv1a(detail::fnv1a(detail::fnv1a(h, s.var), static_cast<std::uint64_t>(s.row_begin)),
                              static_cast<std::uint64_t>(s.ps));
        return h;
    }();

    /// The table, one line per shard: "w1[0, 262) 401,408 bytes -> ps:1".
    static std::string describe() {
        std::string out;
        for (const placed_shard& s : shards) {
            std::string bytes = std::to_string(s.bytes);
            for (int i = static_cast<int>(bytes.size()) - 3; i > 0; i -= 3) bytes.insert(static_cast<std::size_t>(i), ",");
            out += std::string(names_[s.var]) + "[" + std::to_string(s.row_begin) + ", " + std::to_string(s.row_end) + ") " +
                   bytes + " bytes -> ps:" + std::to_string(s.ps) + "\n";
        }
        return out;
    }
};

}  // namespace typeflow::dist
