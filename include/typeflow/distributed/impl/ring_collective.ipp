#pragma once
#include <typeflow/distributed/ring_collective.hpp>

#include <algorithm>
#include <cstring>

namespace typeflow::dist {
namespace detail {

#if defined(__GNUC__) || defined(__clang__)
/// dst[i] = acc[i] + local[i] (then / d when `divide`), 32 bytes at a time
/// with the compiler's vector extensions (the plain loop is left scalar at
/// -O2 because dst may alias an input). Element-wise IEEE operations, so the
/// bits equal the scalar loop's. dst may equal acc or local (same indices).
template <class T, bool divide>
TYPEFLOW_DIST_DECL void add_vec(T* dst, const T* acc, const T* local, std::size_t n, T d) {
    typedef T V __attribute__((vector_size(32)));
    constexpr std::size_t L = sizeof(V) / sizeof(T);
    const std::size_t nv = n - n % (2 * L);
    for (std::size_t i = 0; i < nv; i += 2 * L) {
        V a0, a1, b0, b1;
        std::memcpy(&a0, acc + i, sizeof(V));
        std::memcpy(&a1, acc + i + L, sizeof(V));
        std::memcpy(&b0, local + i, sizeof(V));
        std::memcpy(&b1, local + i + L, sizeof(V));
        a0 += b0;
        a1 += b1;
        if constexpr (divide) {
            a0 /= d;
            a1 /= d;
        }
        std::memcpy(dst + i, &a0, sizeof(V));
        std::memcpy(dst + i + L, &a1, sizeof(V));
    }
    for (std::size_t i = nv; i < n; ++i) {
        const T x = static_cast<T>(acc[i] + local[i]);
        dst[i] = divide ? static_cast<T>(x / d) : x;
    }
}
#endif

/// dst = max (`max`) or min of acc and local, element-wise; NaN wins. For
/// bool: any, all.
template <class T> inline void reduce_extreme(bool max, T* dst, const T* acc, const T* local, std::size_t n) {
    if (max) {
        for (std::size_t i = 0; i < n; ++i) {
            const T a = acc[i], b = local[i];
            dst[i] = (a > b || a != a) ? a : b; // NaN wins
        }
    } else {
        for (std::size_t i = 0; i < n; ++i) {
            const T a = acc[i], b = local[i];
            dst[i] = (a < b || a != a) ? a : b;
        }
    }
}

template <class T>
TYPEFLOW_DIST_DECL void reduce_typed(reduce_op op, T* dst, const T* acc, const T* local, std::size_t n, bool mean_final, int ranks) {
    switch (op) {
    case reduce_op::sum:
    case reduce_op::mean:
#if defined(__GNUC__) || defined(__clang__)
        if (mean_final) add_vec<T, true>(dst, acc, local, n, static_cast<T>(ranks));
        else add_vec<T, false>(dst, acc, local, n, T{});
        return;
#endif
        if (mean_final) {
            const T d = static_cast<T>(ranks);
            for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<T>(acc[i] + local[i]) / d);
        } else {
            for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(acc[i] + local[i]);
        }
        return;
    case reduce_op::max:
    case reduce_op::min: return reduce_extreme(op == reduce_op::max, dst, acc, local, n);
    }
}

/// dst = op(acc, local) elementwise (then / ranks for a final mean). dst may
/// alias acc or local.
TYPEFLOW_DIST_DECL void reduce(dtype t, reduce_op op, void* dst, const void* acc, const void* local, std::size_t n, bool mean_final,
                               int ranks) {
    switch (t) {
    case dtype::float32:
        return reduce_typed(op, static_cast<float*>(dst), static_cast<const float*>(acc), static_cast<const float*>(local), n, mean_final, ranks);
    case dtype::float64:
        return reduce_typed(op, static_cast<double*>(dst), static_cast<const double*>(acc), static_cast<const double*>(local), n, mean_final, ranks);
    case dtype::int32:
        return reduce_typed(op, static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(acc), static_cast<const std::int32_t*>(local), n, mean_final, ranks);
    case dtype::int64:
        return reduce_typed(op, static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(acc), static_cast<const std::int64_t*>(local), n, mean_final, ranks);
    case dtype::boolean: // max and min only (check_op refuses sum and mean)
        return reduce_extreme(op == reduce_op::max, static_cast<bool*>(dst), static_cast<const bool*>(acc), static_cast<const bool*>(local), n);
    }
}

} // namespace detail

TYPEFLOW_DIST_DECL ring_collective::ring_collective(transport& t)
                : t_(&t), timeout_(t.options().op_timeout), segment_bytes_(t.options().segment_bytes) {}

TYPEFLOW_DIST_DECL ring_collective::ring_collective(const cluster_spec& spec)
                : owned_(std::make_unique<transport>(spec)), t_(owned_.get()), timeout_(owned_->options().op_timeout),
                  segment_bytes_(owned_->options().segment_bytes) {}

TYPEFLOW_DIST_DECL void ring_collective::set_segment_bytes(std::size_t bytes) {
    if (bytes == 0 || bytes > t_->options().max_frame_bytes)
        throw error("segment size " + std::to_string(bytes) + " outside 1.." + std::to_string(t_->options().max_frame_bytes));
    segment_bytes_ = bytes;
}

TYPEFLOW_DIST_DECL int ring_collective::rank() const noexcept { return t_->rank(); }
TYPEFLOW_DIST_DECL int ring_collective::size() const noexcept { return t_->size(); }
TYPEFLOW_DIST_DECL void ring_collective::set_timeout(std::chrono::milliseconds t) {
    // The range of transport_options::op_timeout: `now + t` cannot overflow.
    if (t.count() < 1 || t.count() > transport_options::max_duration_count)
        throw error("set_timeout: " + std::to_string(t.count()) + " ms is outside the allowed range 1.." +
                    std::to_string(transport_options::max_duration_count) + " ms");
    timeout_ = t;
}

TYPEFLOW_DIST_DECL std::chrono::steady_clock::time_point ring_collective::deadline() const {
    send_deadline_ = std::chrono::steady_clock::now() + timeout_;
    return send_deadline_;
}

TYPEFLOW_DIST_DECL request ring_collective::snd(int peer, const frame_header& h, const void* payload) {
    return t_->send(peer, h, payload, send_deadline_);
}

TYPEFLOW_DIST_DECL void ring_collective::wait_on(const request& r, std::chrono::steady_clock::time_point deadline) {
    try {
        t_->wait(r, deadline);
    } catch (const peer_lost& e) {
        t_->abort(std::string("a collective needs every task: ") + e.what());
        throw error(t_->failure());
    }
}

TYPEFLOW_DIST_DECL frame_header ring_collective::header(op_code code, dtype t, std::uint8_t red, std::size_t total, std::size_t off,
                                                        std::size_t n) const {
    frame_header h;
    h.type = frame_type::data;
    h.op = code;
    h.dtype_code = wire_code(t);
    h.reduce_code = red;
    h.epoch = t_->epoch();
    h.seq = seq_;
    h.count = total;
    h.offset = off;
    h.length = n * dtype_size(t);
    return h;
}

namespace detail {
TYPEFLOW_DIST_DECL void check_args(const char* what, const void* a, const void* b, std::size_t count, dtype t) {
    if (wire_code(t) == 0) throw error(std::string(what) + ": unknown dtype " + std::to_string(static_cast<int>(t)));
    if (count && (!a || !b)) throw error(std::string(what) + ": null buffer");
}
TYPEFLOW_DIST_DECL void check_op(const char* what, reduce_op op, dtype t) {
    if (op != reduce_op::sum && op != reduce_op::mean && op != reduce_op::max && op != reduce_op::min)
        throw error(std::string(what) + ": unknown reduction " + std::to_string(static_cast<int>(op)));
    if (t == dtype::boolean && (op == reduce_op::sum || op == reduce_op::mean))
        throw error(std::string(what) + ": " + std::string(name_of(op)) + " of bool is not defined; use max (any) or min (all)");
}
/// Splits [b, e) into pieces of at most `seg` elements; an empty range gives one empty piece.
template <class F> inline void for_segments(std::size_t b, std::size_t e, std::size_t seg, F&& f) {
    if (b == e) return f(b, e);
    for (std::size_t x = b; x < e; x += seg) f(x, std::min(e, x + seg));
}
} // namespace detail

TYPEFLOW_DIST_DECL void ring_collective::reduce_scatter_ring(const std::byte* in, std::byte* out, std::size_t total, dtype t,
                                                              reduce_op op, op_code code, bool gather_after,
                                                              range (*chunk)(std::size_t, int, int, std::size_t), std::size_t param) {
    const int N = size(), r = rank(), next = (r + 1) % N, prev = (r + N - 1) % N;
    const std::size_t es = dtype_size(t);
    const std::size_t seg = std::max<std::size_t>(1, segment_bytes_ / es);
    const auto red = static_cast<std::uint8_t>(op);
    const auto dl = deadline();
    auto mod = [N](long x) { return static_cast<int>(((x % N) + N) % N); };
    auto ch = [&](int c) { return chunk(total, c, N, param); };

    // Stages: reduce-scatter steps 0..N-2, then (gather_after) all-gather
    // steps N-1..2N-3. At stage s this task sends chunk (r - s - 1) and
    // receives chunk (r - s - 2), both cut into the same segments j; sending
    // segment j at stage s > 0 needs segment j received at stage s - 1
    // (reduced with the local data during reduce-scatter, as it is during
    // the all-gather). Frames go out, and receives are posted, in wavefront
    // order (s + j, s) on every task, so each link carries the same order
    // its receiver expects, and a received segment is reduced and passed on
    // a few segments after it arrived (still in cache), instead of after the
    // whole first chunk has been sent.
    const int stages = gather_after ? 2 * N - 2 : N - 1;
    struct item {
        std::size_t b, e;
        int s, j;
    };
    auto wave = [](const item& a, const item& b) {
        return a.s + a.j != b.s + b.j ? a.s + a.j < b.s + b.j : a.s < b.s;
    };
    std::vector<item> rit; // receives, wavefront order
    for (int s = 0; s < stages; ++s) {
        auto c = ch(mod(r - s - 2));
        int j = 0;
        detail::for_segments(c.begin, c.end, seg, [&](std::size_t b, std::size_t e) { rit.push_back({b, e, s, j++}); });
    }
    std::stable_sort(rit.begin(), rit.end(), wave);
    // All receives are posted up front. A reduce-scatter receive is reduced
    // with the local data as it is read (piece by piece, while in cache)
    // into where its sum goes: `out` (all_reduce; reduce_scatter's last
    // stage), or a region of the scratch buffer (reduce_scatter's partial
    // sums, which are not part of its output); all-gather receives land
    // straight in `out`.
    const std::size_t own_begin = ch(r).begin;
    auto in_scratch = [&](const item& it) { return !gather_after && it.s < N - 2; };
    std::size_t scratch_bytes = 0;
    for (const auto& it : rit)
        if (in_scratch(it)) scratch_bytes += (it.e - it.b) * es;
    if (scratch_.size() < scratch_bytes) scratch_.resize(scratch_bytes);
    std::vector<std::byte*> dst_of(rit.size()); // where receive m's data (reduced or not) goes
    scratch_bytes = 0;
    for (std::size_t m = 0; m < rit.size(); ++m) {
        const auto& it = rit[m];
        if (in_scratch(it)) {
            dst_of[m] = scratch_.data() + scratch_bytes;
            scratch_bytes += (it.e - it.b) * es;
        } else {
            dst_of[m] = out + (gather_after || it.s > N - 2 ? it.b : it.b - own_begin) * es;
        }
    }
    // index of the receive (stage s, segment j), by stage
    std::vector<std::vector<std::size_t>> rix(static_cast<std::size_t>(stages));
    for (std::size_t m = 0; m < rit.size(); ++m) {
        auto& v = rix[static_cast<std::size_t>(rit[m].s)];
        if (v.size() <= static_cast<std::size_t>(rit[m].j)) v.resize(static_cast<std::size_t>(rit[m].j) + 1);
        v[static_cast<std::size_t>(rit[m].j)] = m;
    }
    std::vector<request> recvs(rit.size());
    for (std::size_t m = 0; m < rit.size(); ++m) {
        const auto& it = rit[m];
        const auto h = header(code, t, red, total, it.b, it.e - it.b);
        if (it.s > N - 2) {
            recvs[m] = t_->recv(prev, h, dst_of[m]);
            continue;
        }
        // dst = received op local, element by element (acc = the received
        // partial sum x[c+1] op ... op x[r-1], so the order is unchanged).
        std::byte* dst = dst_of[m];
        const std::byte* local = in + it.b * es;
        const bool div = it.s == N - 2 && op == reduce_op::mean;
        recvs[m] = t_->recv(prev, h, dst, [=](std::size_t off, const std::byte* piece, std::size_t bytes) {
            detail::reduce(t, op, dst + off, piece, local + off, bytes / es, div, N);
        });
    }

    // Actions in wavefront order: send (s, j) for every stage, and for the
    // last received stage (not passed on) "finish (s, j)", ordered as if it
    // were a send at stage s + 1.
    struct action {
        std::size_t b, e;
        int s, j;
        bool finish;
    };
    std::vector<action> acts;
    for (int s = 0; s < stages; ++s) {
        auto c = ch(mod(r - s - 1));
        int j = 0;
        detail::for_segments(c.begin, c.end, seg, [&](std::size_t b, std::size_t e) { acts.push_back({b, e, s, j++, false}); });
    }
    for (auto& it : rit)
        if (it.s == stages - 1) acts.push_back({it.b, it.e, it.s + 1, it.j, true});
    std::stable_sort(acts.begin(), acts.end(), [](const action& a, const action& b) {
        return a.s + a.j != b.s + b.j ? a.s + a.j < b.s + b.j : a.s < b.s;
    });

    std::vector<request> sends;
    sends.reserve(acts.size());
    for (const auto& a : acts) {
        const std::size_t n = a.e - a.b;
        if (a.s == 0) { // this task's own data, as it is
            sends.push_back(snd(next, header(code, t, red, total, a.b, n), in + a.b * es));
            continue;
        }
        const int rs = a.s - 1; // the stage whose receive this action needs
        const std::size_t m = rix[static_cast<std::size_t>(rs)][static_cast<std::size_t>(a.j)];
        wait_on(recvs[m], dl); // received (and reduced)
        recvs[m].reset();
        // Pass the segment on (the sender thread writes long frames while
        // this thread goes on to the next receive); the last stage's
        // segments stay here.
        if (!a.finish) sends.push_back(snd(next, header(code, t, red, total, a.b, n), dst_of[m]));
    }
    for (auto& q : sends) wait_on(q, dl);
}

TYPEFLOW_DIST_DECL void ring_collective::all_gather_ring(std::byte* out, std::size_t total, dtype t, op_code code, std::uint8_t red,
                                                         range (*chunk)(std::size_t, int, int, std::size_t), std::size_t param) {
    const int N = size(), r = rank(), next = (r + 1) % N, prev = (r + N - 1) % N;
    const std::size_t es = dtype_size(t);
    const std::size_t seg = std::max<std::size_t>(1, segment_bytes_ / es);
    const auto dl = deadline();
    auto mod = [N](long x) { return static_cast<int>(((x % N) + N) % N); };
    struct item {
        std::size_t b, e;
        int s;
    };
    std::vector<item> gitems;
    for (int s = 0; s <= N - 2; ++s) {
        auto c = chunk(total, mod(r - s - 1), N, param);
        detail::for_segments(c.begin, c.end, seg, [&](std::size_t b, std::size_t e) { gitems.push_back({b, e, s}); });
    }
    std::vector<request> grecvs, sends;
    for (auto& it : gitems) grecvs.push_back(t_->recv(prev, header(code, t, red, total, it.b, it.e - it.b), out + it.b * es));
    auto own = chunk(total, r, N, param);
    detail::for_segments(own.begin, own.end, seg, [&](std::size_t b, std::size_t e) {
        sends.push_back(snd(next, header(code, t, red, total, b, e - b), out + b * es));
    });
    for (std::size_t i = 0; i < gitems.size(); ++i) {
        wait_on(grecvs[i], dl);
        const auto& it = gitems[i];
        if (it.s < N - 2) sends.push_back(snd(next, header(code, t, red, total, it.b, it.e - it.b), out + it.b * es));
    }
    for (auto& q : sends) wait_on(q, dl);
}

TYPEFLOW_DIST_DECL void ring_collective::all_reduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op) {
    detail::check_args("all_reduce", in, out, count, t);
    detail::check_op("all_reduce", op, t);
    ++seq_;
    if (size() == 1) {
        if (in != out && count) std::memmove(out, in, count * dtype_size(t));
        return;
    }
    if (count * dtype_size(t) <= direct_bytes_ && count * dtype_size(t) <= segment_bytes_)
        return all_reduce_direct(in, out, count, t, op);
    reduce_scatter_ring(static_cast<const std::byte*>(in), static_cast<std::byte*>(out), count, t, op, op_code::all_reduce, true,
                        [](std::size_t total, int c, int n, std::size_t) {
                            return range{total * static_cast<std::size_t>(c) / static_cast<std::size_t>(n),
                                         total * static_cast<std::size_t>(c + 1) / static_cast<std::size_t>(n)};
                        },
                        0);
}

TYPEFLOW_DIST_DECL void ring_collective::all_reduce_doubling(const void* in, void* out, std::size_t count, dtype t, reduce_op op) {
    const int N = size(), r = rank();
    const std::size_t bytes = count * dtype_size(t);
    const auto dl = deadline();
    const auto h = header(op_code::all_reduce, t, static_cast<std::uint8_t>(op), count, 0, count);
    int steps = 0;
    while ((1 << steps) < N) ++steps;
    if (scratch_.size() < bytes * static_cast<std::size_t>(steps)) scratch_.resize(bytes * static_cast<std::size_t>(steps));
    auto slot = [&](int k) { return scratch_.data() + bytes * static_cast<std::size_t>(k); };
    // Every receive posted first, so a partner that is ahead lands in place.
    std::vector<request> recvs;
    for (int k = 0; k < steps; ++k) recvs.push_back(t_->recv(r ^ (1 << k), h, slot(k)));
    // Step k: exchange the partial result with the task whose rank differs
    // in bit k; both reduce (lower group) op (upper group), so the bits agree.
    const void* cur = in;
    for (int k = 0; k < steps; ++k) {
        auto sq = snd(r ^ (1 << k), h, cur);
        wait_on(sq, dl); // `out` may be `cur`: sent before it is overwritten
        wait_on(recvs[static_cast<std::size_t>(k)], dl);
        const bool low = (r & (1 << k)) == 0;
        detail::reduce(t, op, out, low ? cur : slot(k), low ? slot(k) : cur, count,
                       k == steps - 1 && op == reduce_op::mean, N);
        cur = out;
    }
}

TYPEFLOW_DIST_DECL void ring_collective::all_reduce_direct(const void* in, void* out, std::size_t count, dtype t, reduce_op op) {
    const int N = size(), r = rank();
    if ((N & (N - 1)) == 0) return all_reduce_doubling(in, out, count, t, op);
    const std::size_t bytes = count * dtype_size(t);
    const auto dl = deadline();
    const auto h = header(op_code::all_reduce, t, static_cast<std::uint8_t>(op), count, 0, count);
    if (scratch_.size() < bytes * static_cast<std::size_t>(N)) scratch_.resize(bytes * static_cast<std::size_t>(N));
    auto slot = [&](int k) { return scratch_.data() + bytes * static_cast<std::size_t>(k); };
    std::vector<request> recvs, sends;
    for (int p = 0; p < N; ++p)
        if (p != r) recvs.push_back(t_->recv(p, h, slot(p)));
    for (int k = 1; k < N; ++k) sends.push_back(snd((r + k) % N, h, in));
    for (auto& q : sends) wait_on(q, dl);
    if (bytes) std::memcpy(slot(r), in, bytes);
    for (auto& q : recvs) wait_on(q, dl);
    // out = (((x0 op x1) op x2) ... op x[N-1]), the same on every task.
    for (int k = 1; k < N; ++k)
        detail::reduce(t, op, out, k == 1 ? slot(0) : static_cast<const std::byte*>(out), slot(k), count,
                       k == N - 1 && op == reduce_op::mean, N);
}

TYPEFLOW_DIST_DECL void ring_collective::reduce_scatter(const void* in, void* out, std::size_t count, dtype t, reduce_op op) {
    detail::check_args("reduce_scatter", in, out, count, t);
    detail::check_op("reduce_scatter", op, t);
    ++seq_;
    const auto N = static_cast<std::size_t>(size());
    if (N == 1) {
        if (in != out && count) std::memmove(out, in, count * dtype_size(t));
        return;
    }
    reduce_scatter_ring(static_cast<const std::byte*>(in), static_cast<std::byte*>(out), count * N, t, op,
                        op_code::reduce_scatter, false,
                        [](std::size_t, int c, int, std::size_t per) {
                            return range{per * static_cast<std::size_t>(c), per * static_cast<std::size_t>(c + 1)};
                        },
                        count);
}

TYPEFLOW_DIST_DECL void ring_collective::all_gather(const void* in, void* out, std::size_t count, dtype t) {
    detail::check_args("all_gather", in, out, count, t);
    ++seq_;
    const auto N = static_cast<std::size_t>(size());
    const std::size_t es = dtype_size(t);
    auto* own = static_cast<std::byte*>(out) + static_cast<std::size_t>(rank()) * count * es;
    if (in != own && count) std::memmove(own, in, count * es);
    if (N == 1) return;
    all_gather_ring(static_cast<std::byte*>(out), count * N, t, op_code::all_gather, 0,
                    [](std::size_t, int c, int, std::size_t per) {
                        return range{per * static_cast<std::size_t>(c), per * static_cast<std::size_t>(c + 1)};
                    },
                    count);
}

TYPEFLOW_DIST_DECL void ring_collective::broadcast(void* buf, std::size_t count, dtype t, int root) {
    detail::check_args("broadcast", buf, buf, count, t);
    if (root < 0 || root >= size())
        throw error("broadcast: root " + std::to_string(root) + " out of range 0.." + std::to_string(size() - 1));
    ++seq_;
    const int N = size(), r = rank(), next = (r + 1) % N, prev = (r + N - 1) % N;
    if (N == 1) return;
    const std::size_t es = dtype_size(t);
    const std::size_t seg = std::max<std::size_t>(1, segment_bytes_ / es);
    const auto dl = deadline();
    auto* p = static_cast<std::byte*>(buf);
    std::vector<std::pair<std::size_t, std::size_t>> items;
    detail::for_segments(0, count, seg, [&](std::size_t b, std::size_t e) { items.emplace_back(b, e); });
    std::vector<request> sends;
    if (r == root) {
        for (auto [b, e] : items) sends.push_back(snd(next, header(op_code::broadcast, t, 0, count, b, e - b), p + b * es));
    } else {
        std::vector<request> recvs;
        for (auto [b, e] : items) recvs.push_back(t_->recv(prev, header(op_code::broadcast, t, 0, count, b, e - b), p + b * es));
        for (std::size_t i = 0; i < items.size(); ++i) {
            wait_on(recvs[i], dl);
            if (next != root) {
                auto [b, e] = items[i];
                sends.push_back(snd(next, header(op_code::broadcast, t, 0, count, b, e - b), p + b * es));
            }
        }
    }
    for (auto& q : sends) wait_on(q, dl);
}

TYPEFLOW_DIST_DECL void ring_collective::barrier() {
    ++seq_;
    const int N = size(), r = rank();
    if (N == 1) return;
    // One empty frame to and from every task: returns once all have entered.
    const auto dl = deadline();
    const auto h = header(op_code::barrier, dtype::boolean, 0, 0, 0, 0); // dtype code 5, as always
    std::vector<request> recvs, sends;
    for (int p = 0; p < N; ++p)
        if (p != r) recvs.push_back(t_->recv(p, h, nullptr));
    for (int k = 1; k < N; ++k) sends.push_back(snd((r + k) % N, h, nullptr));
    for (auto& q : recvs) wait_on(q, dl);
    for (auto& q : sends) wait_on(q, dl);
}

} // namespace typeflow::dist
