// typeflow/backend/cuda/ops/gather.hpp — gather (embedding_lookup),
// indexed_slices (its gradient) and sparse_apply (an optimizer's update of
// the rows a batch touches) on a GPU. A gather is a thread per result
// element. The two others sort the occurrences of the indices by row with
// CUB's radix sort, which is stable, so each distinct row's terms are added
// in the CPU kernels' order and results match them bit for bit; a sparse
// update does work in proportion to the rows in the batch, not the table.
// An index outside [0, extent) is the CPU's tf::error, naming the first bad
// index as the CPU does, raised when the run's work is done; a sparse update
// with a bad index writes no row. The element functions are host-and-device
// code over an executor: tests/cuda/test_cuda_gather_host.cu runs them on the
// host against the CPU kernels.
#pragma once
#include <cub/device/device_radix_sort.cuh>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include <typeflow/backend/cuda/runtime.hpp>
#include <typeflow/core/config.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::cuda::gather {

using key_t = unsigned long long;

// ---- atomics that are plain operations on the host (its executor runs one element at a time) ----
TYPEFLOW_HOST_DEVICE inline void atomic_min_u64(key_t* p, key_t v) {
#ifdef __CUDA_ARCH__
    atomicMin(p, v);
#else
    if (v < *p) *p = v;
#endif
}
TYPEFLOW_HOST_DEVICE inline void atomic_add_u64(key_t* p, key_t v) {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v;
#endif
}
/// True for the first report of this run's work (the error word keeps it).
TYPEFLOW_HOST_DEVICE inline bool claim(error_word* e, int code) {
#ifdef __CUDA_ARCH__
    return atomicCAS(&e->code, 0, code) == 0;
#else
    if (e->code != 0) return false;
    e->code = code;
    return true;
#endif
}

/// The occurrences of P index lists along one axis of a tensor: list k's
/// count[k] indices (int32, or int64 where wide[k]), each used at every one
/// of `outer` positions. Occurrence s is (list, outer position, index) in
/// row-major order, the order in which the CPU kernels add them.
template <std::size_t P>
struct occurrences {
    const void* idx[P]{};
    bool wide[P]{};
    index_t count[P]{};
    index_t first_index[P + 1]{};  // flat position of list k's first index among all lists'
    index_t first_occ[P + 1]{};    // ... and of its first occurrence
    index_t outer = 1, extent = 0;

    TYPEFLOW_HOST_DEVICE index_t indices() const { return first_index[P]; }
    TYPEFLOW_HOST_DEVICE index_t total() const { return first_occ[P]; }
    /// The key of occurrences whose index is bad (past every row's).
    TYPEFLOW_HOST_DEVICE key_t sentinel() const { return static_cast<key_t>(outer) * static_cast<key_t>(extent); }
    TYPEFLOW_HOST_DEVICE std::size_t list_of_index(index_t t) const {
        std::size_t k = 0;
        while (k + 1 < P && t >= first_index[k + 1]) ++k;
        return k;
    }
    TYPEFLOW_HOST_DEVICE std::size_t list_of(index_t s) const {
        std::size_t k = 0;
        while (k + 1 < P && s >= first_occ[k + 1]) ++k;
        return k;
    }
    /// Index j of list k.
    TYPEFLOW_HOST_DEVICE long long at(std::size_t k, index_t j) const {
        return wide[k] ? static_cast<long long>(static_cast<const std::int64_t*>(idx[k])[j])
                       : static_cast<long long>(static_cast<const std::int32_t*>(idx[k])[j]);
    }
    TYPEFLOW_HOST_DEVICE bool bad(long long i) const { return i < 0 || i >= static_cast<long long>(extent); }
};
/// The occurrences of the index lists at `ind` (their extents `id`; int64
/// where `wide`), used along `axis` of a tensor of extents `pd`.
template <std::size_t P>
occurrences<P> occurrences_of(const dims& pd, std::size_t axis, const void* const* ind, const bool* wide, const dims* const* id) {
    occurrences<P> o;
    const auto g = typeflow::detail::gather_geometry_of(pd, dims{}, axis);
    o.outer = g.outer;
    o.extent = g.extent;
    for (std::size_t k = 0; k < P; ++k) {
        o.idx[k] = ind[k];
        o.wide[k] = wide[k];
        o.count[k] = id[k]->numel();
        o.first_index[k + 1] = o.first_index[k] + o.count[k];
        o.first_occ[k + 1] = o.first_occ[k] + o.outer * o.count[k];
    }
    return o;
}

/// The value rows of P lists: list k's values are [outer, count[k], inner].
template <class T, std::size_t P>
struct value_lists {
    const T* v[P]{};
    index_t inner = 1;
    TYPEFLOW_HOST_DEVICE const T* row(const occurrences<P>& o, index_t s) const {
        const std::size_t k = o.list_of(s);
        return v[k] + (s - o.first_occ[k]) * inner;
    }
};

// ---- the element functions (an executor runs f(e) for e < n) ----

/// p[e] = v.
struct fill_fn {
    key_t* p;
    key_t v;
    TYPEFLOW_HOST_DEVICE void operator()(index_t e) const { p[e] = v; }
};

/// Element e of gather<Axis>(params, idx) (one list); a bad index gives 0 and
/// is noted in `first_bad`.
template <class T>
struct gather_fn {
    const T* p;
    T* out;
    occurrences<1> o;
    index_t inner;
    key_t* first_bad;
    TYPEFLOW_HOST_DEVICE void operator()(index_t e) const {
        const index_t row = e / inner, r = e % inner;
        const index_t j = row % o.count[0], outer = row / o.count[0];
        const long long i = o.at(0, j);
        if (o.bad(i)) {
            atomic_min_u64(first_bad, static_cast<key_t>(j));
            out[e] = T(0);
            return;
        }
        out[e] = p[(outer * o.extent + static_cast<index_t>(i)) * inner + r];
    }
};

/// keys[s] = the row occurrence s adds to (outer position times extent plus
/// index; the sentinel for a bad index), seq[s] = s; bad indices are noted.
template <std::size_t P>
struct keys_fn {
    occurrences<P> o;
    key_t* keys;
    index_t* seq;
    key_t* first_bad;
    TYPEFLOW_HOST_DEVICE void operator()(index_t s) const {
        const std::size_t k = o.list_of(s);
        const index_t local = s - o.first_occ[k];
        const index_t outer = local / o.count[k], j = local % o.count[k];
        const long long i = o.at(k, j);
        seq[s] = s;
        if (o.bad(i)) {
            if (outer == 0) atomic_min_u64(first_bad, static_cast<key_t>(o.first_index[k] + j));
            keys[s] = o.sentinel();
            return;
        }
        keys[s] = static_cast<key_t>(outer) * static_cast<key_t>(o.extent) + static_cast<key_t>(i);
    }
};

/// Reports the first bad index (the CPU's error: its position in its list,
/// its value, the extent) to the error word.
template <std::size_t P>
struct report_fn {
    occurrences<P> o;
    const key_t* first_bad;
    error_word* err;
    const char* what;
    long long what_len;
    TYPEFLOW_HOST_DEVICE void operator()(index_t) const {
        const key_t t = *first_bad;
        if (t >= static_cast<key_t>(o.indices()) || !claim(err, error_index_out_of_range)) return;
        const std::size_t k = o.list_of_index(static_cast<index_t>(t));
        const index_t j = static_cast<index_t>(t) - o.first_index[k];
        err->a = j;
        err->b = o.at(k, j);
        err->c = o.extent;
        err->what = what;
        err->what_len = what_len;
    }
};

/// True when sorted occurrence s is the first of its row (and the row is one).
template <std::size_t P>
TYPEFLOW_HOST_DEVICE bool starts_row(const occurrences<P>& o, const key_t* keys, index_t s) {
    return keys[s] < o.sentinel() && (s == 0 || keys[s - 1] != keys[s]);
}

/// indexed_slices: column c of each distinct row, the sum of its
/// occurrences' values from zero in occurrence order (out is zero elsewhere).
template <class T, std::size_t P>
struct slices_fn {
    occurrences<P> o;
    value_lists<T, P> v;
    const key_t* keys;
    const index_t* seq;
    T* out;
    TYPEFLOW_HOST_DEVICE void operator()(index_t e) const {
        const index_t s = e / v.inner, c = e % v.inner, m = o.total();
        if (!starts_row(o, keys, s)) return;
        T acc = T(0);
        for (index_t t = s; t < m && keys[t] == keys[s]; ++t) acc += v.row(o, seq[t])[c];
        out[static_cast<index_t>(keys[s]) * v.inner + c] = acc;
    }
};

/// The slots and hyperparameters of a sparse update (the hyperparameters'
/// one element each, in device memory).
template <class T, std::size_t S, std::size_t H>
struct update_ptrs {
    T* var = nullptr;
    T* slot[S + 1]{};
    const T* h[H + 1]{};
};

/// sparse_apply: column c of each distinct row updated by Rule with the sum
/// of its occurrences' values (the first, then the others added in order, as
/// the CPU); `count` gets the distinct rows. Nothing is written when an index
/// is bad.
template <class Rule, class T, std::size_t P>
struct sparse_fn {
    occurrences<P> o;
    value_lists<T, P> v;
    const key_t* keys;
    const index_t* seq;
    const key_t* first_bad;
    update_ptrs<T, Rule::slots, (Rule::hypers + Rule::counters)> u;
    key_t* count;
    TYPEFLOW_HOST_DEVICE void operator()(index_t e) const {
        const index_t w = v.inner, s = e / w, c = e % w, m = o.total();
        if (*first_bad < static_cast<key_t>(o.indices()) || !starts_row(o, keys, s)) return;
        T g = v.row(o, seq[s])[c];
        for (index_t t = s + 1; t < m && keys[t] == keys[s]; ++t) g += v.row(o, seq[t])[c];
        const index_t at = static_cast<index_t>(keys[s]) * w + c;
        T h[(Rule::hypers + Rule::counters) + 1]{};
        if constexpr ((Rule::hypers + Rule::counters) > 0)
            for (std::size_t k = 0; k < (Rule::hypers + Rule::counters); ++k) h[k] = *u.h[k];
        T* sl[Rule::slots + 1]{};
        if constexpr (Rule::slots > 0)
            for (std::size_t k = 0; k < Rule::slots; ++k) sl[k] = u.slot[k] + at;
        Rule::row(u.var + at, u.var + at, sl, sl, h, &g, 1);
        if (c == 0) atomic_add_u64(count, 1);
    }
};

// ---- scratch: the first bad index, the keys and sequence numbers before and after the sort, the sort's own ----
struct sort_layout {
    std::size_t keys_in = 0, keys_out = 0, seq_in = 0, seq_out = 0, temp = 0, temp_bytes = 0, bytes = 0;
};
using typeflow::cuda::detail::align_up;
inline sort_layout layout_of(index_t m, std::size_t temp_bytes) {
    sort_layout l;
    const std::size_t n = static_cast<std::size_t>(m);
    l.keys_in = 256;  // after the first bad index
    l.keys_out = l.keys_in + align_up(n * sizeof(key_t));
    l.seq_in = l.keys_out + align_up(n * sizeof(key_t));
    l.seq_out = l.seq_in + align_up(n * sizeof(index_t));
    l.temp = l.seq_out + align_up(n * sizeof(index_t));
    l.temp_bytes = temp_bytes;
    l.bytes = l.temp + align_up(temp_bytes);
    return l;
}
/// Bits of the sort's keys: enough for the sentinel.
TYPEFLOW_HOST_DEVICE inline int key_bits(key_t sentinel) {
    int b = 1;
    while (b < 64 && (key_t{1} << b) <= sentinel) ++b;
    return b;
}

namespace detail {
template <class F>
__global__ void each_kernel(index_t n, const F f) {
    for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += static_cast<index_t>(gridDim.x) * blockDim.x)
        f(e);
}
}  // namespace detail

/// Runs the element functions on GPU N, sorts with CUB, keeps scratch in
/// device memory; errors are raised when the run's work is done.
template <int N>
struct gpu_exec {
    using scratch = device_scratch;
    template <class F>
    static void each(index_t n, const F& f, std::string_view what) {
        if (n <= 0) return;
        device_context& c = context<N>();
        detail::each_kernel<F><<<grid_for(static_cast<std::size_t>(n), 256), 256, 0, c.stream>>>(n, f);
        check_launch(what);
    }
    static void* reserve(scratch& s, std::size_t bytes, std::string_view what) { return s.reserve(context<N>(), bytes, what); }
    static void zero(void* p, std::size_t bytes, std::string_view what) {
        if (bytes) check(cudaMemsetAsync(p, 0, bytes, context<N>().stream), what, "cudaMemsetAsync");
    }
    static std::size_t sort_bytes(index_t m, int bits, std::string_view what) {
        std::size_t b = 0;
        check(cub::DeviceRadixSort::SortPairs(nullptr, b, static_cast<const key_t*>(nullptr), static_cast<key_t*>(nullptr),
                                              static_cast<const index_t*>(nullptr), static_cast<index_t*>(nullptr), m, 0, bits),
              what, "cub::DeviceRadixSort::SortPairs (size)");
        return b;
    }
    static void sort(void* temp, std::size_t temp_bytes, const key_t* kin, key_t* kout, const index_t* vin, index_t* vout, index_t m,
                     int bits, std::string_view what) {
        check(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, kin, kout, vin, vout, m, 0, bits, context<N>().stream), what,
              "cub::DeviceRadixSort::SortPairs");
    }
    static error_word* err() { return device_error_word(context<N>()); }
    static void reported() {}  // raised when the run's work is done (finish)
};

/// The first bad index's slot, set past every index, and the report after `f`.
template <class Exec, std::size_t P>
struct bad_index {
    key_t* first;
    bad_index(void* scratch, const occurrences<P>& o, std::string_view what) : first(static_cast<key_t*>(scratch)) {
        Exec::each(1, fill_fn{first, static_cast<key_t>(o.indices())}, what);
    }
    void report(const occurrences<P>& o, std::string_view what) const {
        Exec::each(1, report_fn<P>{o, first, Exec::err(), what.data(), static_cast<long long>(what.size())}, what);
        Exec::reported();
    }
};

/// The occurrences' keys and sequence numbers, sorted by key (stable);
/// returns the layout, with the scratch at `base`.
template <class Exec, std::size_t P>
sort_layout sort_occurrences(typename Exec::scratch& st, const occurrences<P>& o, std::byte*& base, std::string_view what) {
    const index_t m = o.total();
    const int bits = key_bits(o.sentinel());
    const sort_layout l = layout_of(m, m > 0 ? Exec::sort_bytes(m, bits, what) : 0);
    base = static_cast<std::byte*>(Exec::reserve(st, l.bytes, what));
    bad_index<Exec, P> bad(base, o, what);
    auto* kin = reinterpret_cast<key_t*>(base + l.keys_in);
    auto* sin = reinterpret_cast<index_t*>(base + l.seq_in);
    Exec::each(m, keys_fn<P>{o, kin, sin, bad.first}, what);
    if (m > 0)
        Exec::sort(base + l.temp, l.temp_bytes, kin, reinterpret_cast<key_t*>(base + l.keys_out), sin,
                   reinterpret_cast<index_t*>(base + l.seq_out), m, bits, what);
    bad.report(o, what);
    return l;
}

/// True when the index node C has int64 elements (int32 otherwise).
template <class C>
inline constexpr bool wide_v = std::is_same_v<value_type_t<meta::remove_cvref_t<C>>, std::int64_t>;

// ---- the kernels, over an executor (gpu_exec<N>; the host tests run them with one that loops on the host) ----

template <class Exec, int Axis>
struct gather_kernel {
    using state = typename Exec::scratch;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        constexpr std::string_view what = op::gather<Axis>::name;
        const dims& pd = ctx.dims_of(n.template child<0>());
        const dims* id[] = {&ctx.dims_of(n.template child<1>())};
        const void* ind[] = {ctx.input(n.template child<1>())};
        const bool wide[] = {wide_v<decltype(n.template child<1>())>};
        const auto o = occurrences_of<1>(pd, op::gather<Axis>::axis, ind, wide, id);
        const index_t inner = typeflow::detail::gather_geometry_of(pd, *id[0], op::gather<Axis>::axis).inner;
        bad_index<Exec, 1> bad(Exec::reserve(ctx.template state<state>(), 256, what), o, what);
        Exec::each(o.total() * inner, gather_fn<T>{ctx.input(n.template child<0>()), out, o, inner, bad.first}, what);
        bad.report(o, what);
    }
};

template <class Exec, int Axis>
struct slices_kernel {
    using state = typename Exec::scratch;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, value_type_t<Nd>* out) {
        using T = value_type_t<Nd>;
        constexpr std::size_t P = (meta::children_t<Nd>::size - 1) / 2;
        constexpr std::string_view what = op::indexed_slices<Axis>::name;
        const dims& pd = ctx.dims_of(n.template child<0>());
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            const dims* id[] = {&ctx.dims_of(n.template child<2 + 2 * K>())...};
            const void* ind[] = {ctx.input(n.template child<2 + 2 * K>())...};
            const bool wide[] = {wide_v<decltype(n.template child<2 + 2 * K>())>...};
            const auto o = occurrences_of<P>(pd, op::indexed_slices<Axis>::axis, ind, wide, id);
            value_lists<T, P> v{{ctx.input(n.template child<1 + 2 * K>())...}, 1};
            v.inner = typeflow::detail::gather_geometry_of(pd, dims{}, op::indexed_slices<Axis>::axis).inner;
            Exec::zero(out, static_cast<std::size_t>(pd.numel()) * sizeof(T), what);
            std::byte* base = nullptr;
            const sort_layout l = sort_occurrences<Exec>(ctx.template state<state>(), o, base, what);
            Exec::each(o.total() * v.inner,
                       slices_fn<T, P>{o, v, reinterpret_cast<const key_t*>(base + l.keys_out),
                                          reinterpret_cast<const index_t*>(base + l.seq_out), out},
                       what);
        }(std::make_index_sequence<P>{});
    }
};

template <class Exec, class Rule, std::size_t R, std::size_t P>
struct sparse_kernel {
    using Op = op::sparse_apply<Rule, R, P>;
    using state = typename Exec::scratch;
    template <class Nd, class Ctx>
    static void run(const Nd& n, const Ctx& ctx, std::int64_t* out) {
        using T = typename meta::remove_cvref_t<decltype(n.template child<Op::var_at>())>::value_type;
        constexpr std::string_view what = Op::name;
        const dims& vd = ctx.dims_of(n.template child<Op::var_at>());
        update_ptrs<T, Rule::slots, Op::hypers> u;
        u.var = const_cast<T*>(ctx.input(n.template child<Op::var_at>()));  // written where it is
        [&]<std::size_t... S, std::size_t... H>(std::index_sequence<S...>, std::index_sequence<H...>) {
            ((u.slot[S] = const_cast<T*>(ctx.input(n.template child<Op::slot_at + S>()))), ...);
            ((u.h[H] = ctx.input(n.template child<Op::hyper_at + H>())), ...);
        }(std::make_index_sequence<Rule::slots>{}, std::make_index_sequence<Op::hypers>{});
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            const dims* id[] = {&ctx.dims_of(n.template child<Op::indices_at + K>())...};
            const void* ind[] = {ctx.input(n.template child<Op::indices_at + K>())...};
            const bool wide[] = {wide_v<decltype(n.template child<Op::indices_at + K>())>...};
            const auto o = occurrences_of<P>(vd, 0, ind, wide, id);
            value_lists<T, P> v{{ctx.input(n.template child<Op::values_at + K>())...}, 1};
            v.inner = typeflow::detail::gather_geometry_of(vd, dims{}, 0).inner;
            Exec::zero(out, sizeof(std::int64_t), what);
            std::byte* base = nullptr;
            const sort_layout l = sort_occurrences<Exec>(ctx.template state<state>(), o, base, what);
            Exec::each(o.total() * v.inner,
                       sparse_fn<Rule, T, P>{o, v, reinterpret_cast<const key_t*>(base + l.keys_out),
                                                reinterpret_cast<const index_t*>(base + l.seq_out), reinterpret_cast<const key_t*>(base), u,
                                                reinterpret_cast<key_t*>(out)},
                       what);
        }(std::make_index_sequence<P>{});
    }
};

}  // namespace typeflow::cuda::gather

namespace typeflow {

template <int N, int Axis>
struct kernel<gpu<N>, op::gather<Axis>> : cuda::gather::gather_kernel<cuda::gather::gpu_exec<N>, Axis> {};
template <int N, int Axis>
struct kernel<gpu<N>, op::indexed_slices<Axis>> : cuda::gather::slices_kernel<cuda::gather::gpu_exec<N>, Axis> {};
template <int N, class Rule, std::size_t R, std::size_t P>
struct kernel<gpu<N>, op::sparse_apply<Rule, R, P>> : cuda::gather::sparse_kernel<cuda::gather::gpu_exec<N>, Rule, R, P> {};

}  // namespace typeflow
