#pragma once
// typeflow::dist::parameter_servers — training with variables on
// parameter-server tasks (TensorFlow's between-graph replication with
// replica_device_setter and SyncReplicasOptimizer): every task builds the
// same model; the ps tasks hold the variables, placed at compile time
// (distributed/placement.hpp), and run the optimizer and its slots; each
// step, every worker pulls the current values, computes the gradients of its
// examples and pushes them; each ps averages the pushes of the step over
// all workers' examples and applies one update (ps_mode::sync), or applies
// each push alone as it arrives (ps_mode::async). With backup workers
// (TensorFlow's SyncReplicasOptimizer with total_num_replicas = N + b), a
// synchronous step takes the first N of the N + b workers' pushes and drops
// the late ones as stale, so one slow worker does not hold the others.
//
// Include it after <typeflow/typeflow.hpp> and <typeflow/dist.hpp>:
//
//     tfd::transport t(tfd::cluster_spec::from_env());   // workers and ps tasks
//     auto training = tfd::parameter_servers<tfd::ps_placement<2, tfd::greedy_by_bytes>>(t, tf::train::adam(1e-3))
//                         .minimize(loss);
//     tf::session s;
//     if (t.spec().task.type == tfd::role::ps) training.serve(s);   // until every worker has finished
//     else {
//         for (...) training.run(s, tf::feed(x, my_rows), tf::feed(y, my_labels));
//         training.finish();
//     }
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/fixed_string.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/distributed/cluster_spec.hpp>
#include <typeflow/distributed/error.hpp>
#include <typeflow/distributed/example_count.hpp>
#include <typeflow/distributed/frame.hpp>
#include <typeflow/distributed/placement.hpp>
#include <typeflow/distributed/ps_messages.hpp>
#include <typeflow/distributed/transport.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/gather.hpp>
#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/session.hpp>
#include <typeflow/train/optimizers.hpp>

namespace typeflow::dist {

/// The compile-time part of a parameter-server strategy: NumPs ps tasks (the
/// cluster must have exactly that many), a placement strategy and a
/// partitioner (see placement.hpp).
template <int NumPs, class Strategy = greedy_by_bytes, class Partitioner = no_partitioner>
struct ps_placement {
    template <class... Vs>
    using of = placement<NumPs, Strategy, Partitioner, Vs...>;
    static constexpr int ps_tasks = NumPs;
};

/// How a ps applies the workers' gradients.
enum class ps_mode {
    /// One update per round from every worker's push, averaged over all their
    /// examples: the same result as one process on the whole batch.
    sync,
    /// Each push is applied alone as soon as it arrives (TensorFlow's default
    /// between-graph training): no worker waits for another, and a worker's
    /// gradient may come from values others have updated since (stale).
    async,
};

/// Counters of a ps_training object on one task.
struct ps_stats {
    std::uint64_t rounds = 0;          ///< ps: requests served; worker: requests made
    std::uint64_t bytes_sent = 0;      ///< payload bytes of every frame sent (values, steps, gradients, requests)
    std::uint64_t bytes_received = 0;  ///< and received
    double update_seconds = 0;         ///< ps: time in the optimizer's update
    std::uint64_t stale_pushes = 0;    ///< ps with backup workers: pushes dropped because their step had passed
    std::uint64_t lost_workers = 0;    ///< ps, async or with backup workers: workers that died, went silent or were refused
};

/// Calls a ps_training object makes at fixed points, for what runs beside
/// training (ps_checkpoints installs them). Each may be empty.
struct ps_hooks {
    /// ps: when serve starts; returns the step to count from (a restored checkpoint's).
    std::function<std::int64_t(session&)> on_serve;
    /// ps: after each update, with the new step count.
    std::function<void(session&, std::int64_t)> on_update;
    /// worker: after each answer to a pull or step has arrived.
    std::function<void()> on_values;
};

namespace detail {
/// The placeholder through which a ps feeds the averaged gradient of V to the update.
template <class V>
using ps_grad_t = placeholder<typeflow::concat<V::fixed_name, "/ps_grad">(), value_type_t<V>, shape_t<V>, device_t<V>>;

/// The placeholders through which a ps feeds a sparse gradient of V (an
/// embedding table read by gather): the summed rows, and their row ids.
template <class S>
struct ps_rows_shape;
template <index_t D0, index_t... D>
struct ps_rows_shape<shape<D0, D...>> {
    using type = shape<dyn, D...>;
};
template <class V>
using ps_rows_t = placeholder<typeflow::concat<V::fixed_name, "/ps_rows">(), value_type_t<V>,
                              typename ps_rows_shape<shape_t<V>>::type, device_t<V>>;
template <class V>
using ps_ids_t = placeholder<typeflow::concat<V::fixed_name, "/ps_ids">(), std::int64_t, shape<dyn>, device_t<V>>;

/// The (values, indices) pairs of gradient G of V when it is sparse (an
/// axis-0 indexed_slices of V), else 0.
template <class G, class V>
constexpr std::size_t ps_pairs() {
    if constexpr (is_indexed_slices_of<G, V>::value) return (meta::children_t<G>::size - 1) / 2;
    else return 0;
}
/// What a worker fetches for gradient g of V: g itself, or a sparse one's
/// (values, indices) pairs.
template <class V, class G>
auto ps_grad_pack(const G& g) {
    if constexpr (constexpr std::size_t n = ps_pairs<G, V>(); n > 0)
        return [&]<std::size_t... Q>(std::index_sequence<Q...>) {
            return std::tuple_cat(std::make_tuple(g.template child<1 + 2 * Q>(), g.template child<2 + 2 * Q>())...);
        }(std::make_index_sequence<n>{});
    else return std::make_tuple(g);
}
/// A sparse gradient's indices (nothing for a dense one): what a worker
/// evaluates before it pulls, to pull only those rows.
template <class V, class G>
auto ps_ids_pack(const G& g) {
    if constexpr (constexpr std::size_t n = ps_pairs<G, V>(); n > 0)
        return [&]<std::size_t... Q>(std::index_sequence<Q...>) {
            return std::make_tuple(g.template child<2 + 2 * Q>()...);
        }(std::make_index_sequence<n>{});
    else return std::tuple<>();
}
/// The gradient a ps applies to V: the averaged dense gradient, or the summed
/// rows at their ids (which the optimizer applies sparsely).
template <class G, class V>
auto ps_apply_grad(const V& v) {
    if constexpr (ps_pairs<G, V>() > 0) return typeflow::indexed_slices<0>(v, ps_rows_t<V>{}, ps_ids_t<V>{});
    else return (void)v, ps_grad_t<V>{};
}

/// The peers of a ps strategy: the ranks of the ps tasks and of the workers
/// (chief included). Its frames carry seq 0: the order of the protocol, the
/// same for every strategy object on a transport, sets what comes next, and
/// every other header field is checked.
struct ps_channels {
    transport* t = nullptr;
    std::vector<int> ps, workers;

    ps_channels(transport& tr, int num_ps) : t(&tr) {
        const cluster_spec& spec = tr.spec();
        for (int r = 0; r < spec.size(); ++r) (spec.task_of(r).type == role::ps ? ps : workers).push_back(r);
        if (static_cast<int>(ps.size()) != num_ps)
            throw error("parameter servers: the model is placed on " + std::to_string(num_ps) + " ps tasks, the cluster has " +
                        std::to_string(ps.size()));
        if (workers.empty()) throw error("parameter servers: the cluster has no worker");
    }
    frame_header header(op_code op, dtype d, std::uint64_t seq, std::uint64_t count, std::uint64_t offset,
                        std::uint64_t n) const {
        frame_header h;
        h.type = frame_type::data;
        h.op = op;
        h.dtype_code = wire_code(d);
        h.epoch = t->epoch();
        h.seq = seq;
        h.count = count;
        h.offset = offset;
        h.length = n * dtype_size(d);
        return h;
    }
    std::size_t segment_elems(dtype d) const {
        return std::max<std::size_t>(1, t->options().segment_bytes / dtype_size(d));
    }
    /// Sends `count` elements as one message (frames of at most segment_bytes).
    std::uint64_t bytes_sent = 0, bytes_received = 0;
    template <class T>
    void send(std::vector<request>& out, int peer, op_code op, const T* p, std::size_t count) {
        bytes_sent += count * sizeof(T);
        const std::uint64_t seq = 0;
        const std::size_t seg = segment_elems(dtype_of<T>);
        for (std::size_t at = 0; at < count; at += seg)
            out.push_back(t->send(peer, header(op, dtype_of<T>, seq, count, at, std::min(seg, count - at)), p + at));
    }
    /// Receives such a message into `p`.
    template <class T>
    void recv(std::vector<request>& out, int peer, op_code op, T* p, std::size_t count) {
        bytes_received += count * sizeof(T);
        const std::uint64_t seq = 0;
        const std::size_t seg = segment_elems(dtype_of<T>);
        for (std::size_t at = 0; at < count; at += seg)
            out.push_back(t->recv(peer, header(op, dtype_of<T>, seq, count, at, std::min(seg, count - at)), p + at));
    }
    /// Receives such a message piece by piece: f(first element, piece, elements)
    /// as each piece is read (on any of the transport's threads), nothing stored.
    template <class T, class F>
    void recv_each(std::vector<request>& out, int peer, op_code op, T* scratch, std::size_t count, F f) {
        bytes_received += count * sizeof(T);
        const std::size_t seg = segment_elems(dtype_of<T>);
        for (std::size_t at = 0; at < count; at += seg)
            out.push_back(t->recv(peer, header(op, dtype_of<T>, 0, count, at, std::min(seg, count - at)), scratch + at,
                                  [f, at](std::size_t off, const std::byte* piece, std::size_t bytes) {
                                      f(at + off / sizeof(T), reinterpret_cast<const T*>(piece), bytes / sizeof(T));
                                  }));
    }
    void wait_all(std::vector<request>& rs) {
        const auto deadline = std::chrono::steady_clock::now() + t->options().op_timeout;
        for (const request& r : rs) t->wait(r, deadline);
        rs.clear();
    }
};

}  // namespace detail

/// Parameter-server training of the variables Vs... (see the top of this
/// header and parameter_servers). P is the placement; Pairs (an
/// index_sequence) gives, for each variable, the (values, indices) pairs of
/// its gradient when that is sparse (an embedding table read by gather), else 0.
template <class P, class Pairs, class Loss, class Fetch, class IdsFetch, class Apply, class... Vs>
class ps_training {
    static constexpr std::size_t N = sizeof...(Vs);

public:
    using placement_type = P;
    using loss_type = value_type_t<Loss>;
    /// The model's fingerprint (names, dtypes and shapes of the variables, and
    /// their placement): a worker whose fingerprint differs from a ps's is
    /// refused with an error naming both.
    static constexpr std::uint64_t fingerprint = P::fingerprint;

    ps_training(transport& t, int num_ps, Fetch fetch, IdsFetch ids, Apply apply, const Vs&... vars)
        : ch_(t, num_ps), fetch_(std::move(fetch)), ids_fetch_(std::move(ids)), apply_(std::move(apply)), vars_(vars...) {
        for (std::size_t q = 0; q < ch_.ps.size(); ++q) req_[q].assign(2 + sparse_on(static_cast<int>(q)), 0);
        // workers never talk to each other: one that dies is the ps tasks' concern
        if (t.spec().task.type != role::ps)
            for (int w : ch_.workers)
                if (w != t.rank()) t.tolerate_loss(w);
    }

    // ---- workers ----

    /// One step with this worker's feeds (the first feed's leading extent
    /// counts its examples, possibly none): pulls the current values of every
    /// variable into this task's copies, computes the loss and the gradients,
    /// pushes them to the ps tasks that hold each shard. Returns this worker's
    /// loss (0 without examples). The same code for both ps modes; with
    /// ps_mode::sync a round waits for every worker that has not finished.
    /// A table with a sparse gradient (read only by gather) moves only the
    /// rows this step's indices touch, both ways: the indices are evaluated
    /// first (from the feeds), the touched rows pulled, and their gradient
    /// rows, summed per row, pushed.
    template <class... Feeds>
    loss_type run(session& s, const Feeds&... feeds) {
        const double n = static_cast<double>(detail::example_count(feeds...));
        if constexpr (any_sparse) {
            if (n > 0) collect_touched(s.run(ids_fetch_, feeds...));
            else
                for (auto& t : touched_) t.clear();
        }
        request_all(detail::ps_request::step);
        receive_values();
        std::vector<request> rs;
        double loss = 0;
        if (n > 0) {
            auto res = s.run(fetch_, feeds...);
            loss = static_cast<double>(std::get<0>(res)[0]);
            if constexpr (any_sparse) build_push_rows(res);
            for (std::size_t q = 0; q < ch_.ps.size(); ++q) {
                set_head(q, n, loss * n);
                ch_.send(rs, ch_.ps[q], op_code::push, head_.data() + 3 * q, 3);
                for (std::size_t i = 0; i < P::shard_count; ++i)
                    if (P::shards[i].ps == static_cast<int>(q)) push_shard(rs, res, i);
            }
            ch_.wait_all(rs);  // the result tensors stay alive until their bytes are out
        } else {
            for (std::size_t q = 0; q < ch_.ps.size(); ++q) {
                set_head(q, 0, 0);
                ch_.send(rs, ch_.ps[q], op_code::push, head_.data() + 3 * q, 3);
            }
            ch_.wait_all(rs);
        }
        return static_cast<loss_type>(loss);
    }
    /// The current values of every variable (every row of the tables too),
    /// from the ps tasks, into this task's copies (after the last step, to
    /// evaluate or save the model).
    void pull() {
        request_all(detail::ps_request::pull);
        receive_values();
    }
    /// Tells the ps tasks that this worker is done; serve returns once every
    /// worker has.
    void finish() { request_all(detail::ps_request::done); }

    /// The step ps 0 was at when it answered this worker's last pull or step
    /// (the updates applied so far; after a restart, where training resumes).
    std::int64_t step() const noexcept { return steps_[0]; }
    /// Installs `h` (see ps_hooks).
    void set_hooks(ps_hooks h) { hooks_ = std::move(h); }
    /// The transport and the ranks of the ps tasks and of the workers.
    const detail::ps_channels& channels() const noexcept { return ch_; }
    /// The update a ps runs (its variables and optimizer slots are the state to save).
    const Apply& apply_op() const noexcept { return apply_; }

    /// Counters so far.
    ps_stats stats() const noexcept { return {rounds_, ch_.bytes_sent, ch_.bytes_received, update_seconds_, stale_, lost_}; }

    // ---- ps tasks ----

    /// Serves the workers until every one has finished: each round, answers
    /// every worker's pull with the step number and the values of the shards
    /// this ps holds (of a table's shards, the rows the worker asked for),
    /// sums the pushed gradients of those shards weighted by each worker's
    /// examples (in worker order, so every run gives the same bits), and
    /// applies the optimizer to the average (to a table, sparsely: only the
    /// rows pushed). Returns the number of updates applied. A worker with a
    /// different model (fingerprint) fails the cluster with an error naming
    /// both fingerprints.
    ///
    /// With `backup_workers` = b > 0 (ps_mode::sync only), a step aggregates
    /// the first W - b pushes of the W workers (fewer once workers have
    /// finished: never more than are still training), whichever come first;
    /// a push computed from an older step's values is dropped as stale
    /// (stats().stale_pushes), and a worker whose push this step already
    /// counted waits for the update before its next pull is answered.
    ///
    /// With ps_mode::async, each worker is served on its own: its push is
    /// applied alone as soon as it arrives, and its next request answered at
    /// once. Workers run the same code in every mode.
    ///
    /// In both of those modes the ps goes on without a worker that dies,
    /// stays silent for the heartbeat timeout or sends a bad message (the
    /// latter is told why and fails): it is logged and counted
    /// (stats().lost_workers), a push it had half sent is dropped (in sync
    /// mode with the step's other pushes, whose workers then compute it
    /// again), and a step needs no more pushes than workers remain. In sync
    /// mode without backup workers every step needs every worker, so such a
    /// worker fails the cluster instead.
    std::size_t serve(session& s, ps_mode mode = ps_mode::sync, int backup_workers = 0) {
        const cluster_spec& spec = ch_.t->spec();
        if (spec.task.type != role::ps) throw error("parameter servers: serve() runs on ps tasks, this is " + spec.task.name());
        const int W = static_cast<int>(ch_.workers.size());
        if (backup_workers < 0 || backup_workers >= W)
            throw error("parameter servers: " + std::to_string(backup_workers) + " backup workers of " + std::to_string(W) +
                        " workers (0 .. " + std::to_string(W - 1) + " allowed)");
        if (backup_workers > 0 && mode != ps_mode::sync)
            throw error("parameter servers: backup workers need ps_mode::sync");
        me_ = spec.task.index;
        mine_.clear();
        for (std::size_t i = 0; i < P::shard_count; ++i)
            if (P::shards[i].ps == me_) mine_.push_back(i);
        tables_.clear();
        for (std::size_t i : mine_)
            if (sparse_shard(i)) tables_.push_back({P::shards[i].row_begin, P::shards[i].row_end});
        prepare_ps_buffers();
        step_ = hooks_.on_serve ? hooks_.on_serve(s) : 0;
        tolerant_ = mode == ps_mode::async || backup_workers > 0;
        for (int w : ch_.workers) ch_.t->tolerate_loss(w, tolerant_);
        if (tolerant_) return serve_polling(s, mode, backup_workers);
        std::vector<char> active(ch_.workers.size(), 1);
        std::vector<request> rs;
        for (;;) {
            std::vector<std::size_t> asking;
            for (std::size_t w = 0; w < ch_.workers.size(); ++w)
                if (active[w]) {
                    asking.push_back(w);
                    post_request(rs, w);
                }
            if (asking.empty()) return static_cast<std::size_t>(step_);
            ch_.wait_all(rs);
            std::vector<std::size_t> answering;
            for (std::size_t w : asking) {
                ++rounds_;
                const auto kind = check_request(w);
                if (kind == detail::ps_request::done) active[w] = 0;
                else {
                    post_ids(rs, w);
                    answering.push_back(w);
                }
            }
            ch_.wait_all(rs);
            std::vector<std::size_t> stepping;
            for (std::size_t w : answering) {
                check_ids(w);
                send_values(rs, w);
                if (wkind_[w] == detail::ps_request::step) stepping.push_back(w);
            }
            ch_.wait_all(rs);  // the values are out before the update changes them
            if (stepping.empty()) continue;
            // the pushes, in worker order
            double total = 0;
            std::vector<double> head(3);
            for (std::size_t w : stepping) {
                ch_.recv(rs, ch_.workers[w], op_code::push, head.data(), 3);
                ch_.wait_all(rs);
                check_head(w, head.data(), false);
                if (head[0] == 0) continue;
                total += head[0];
                // summed into the accumulators as the pieces arrive (one
                // worker at a time: the same order, the same bits, every run)
                for (std::size_t i : mine_) recv_shard(rs, w, i, head[0]);
                ch_.wait_all(rs);
            }
            if (!(total > 0)) throw error("parameter servers: no worker fed any example in this step");
            update(s, total);
        }
    }

private:
    // ---- the placement, at compile time ----
    static constexpr std::array<std::size_t, N> pairs =
        []<std::size_t... Q>(std::index_sequence<Q...>) { return std::array<std::size_t, N>{Q...}; }(Pairs{});
    static constexpr bool any_sparse = [] {
        for (std::size_t k = 0; k < N; ++k)
            if (pairs[k] > 0) return true;
        return false;
    }();
    static constexpr bool sparse_shard(std::size_t i) { return pairs[P::shards[i].var] > 0; }
    // the number of sparse shards on ps q, and shard i's place among those of its ps
    static constexpr std::size_t sparse_on(int q) {
        std::size_t n = 0;
        for (std::size_t i = 0; i < P::shard_count; ++i) n += P::shards[i].ps == q && sparse_shard(i);
        return n;
    }
    static constexpr std::size_t sparse_slot(std::size_t i) {
        std::size_t n = 0;
        for (std::size_t j = 0; j < i; ++j) n += P::shards[j].ps == P::shards[i].ps && sparse_shard(j);
        return n;
    }
    // where variable k's gradient starts in the fetch's results (after the loss), and its indices in the ids fetch's
    static constexpr std::size_t fetch_at(std::size_t k) {
        std::size_t at = 1;
        for (std::size_t j = 0; j < k; ++j) at += pairs[j] ? 2 * pairs[j] : 1;
        return at;
    }
    static constexpr std::size_t ids_at(std::size_t k) {
        std::size_t at = 0;
        for (std::size_t j = 0; j < k; ++j) at += pairs[j];
        return at;
    }

    // a request's fingerprint, kind and row counts, checked (ps_messages.hpp); refused when wrong
    detail::ps_request check_request(std::size_t w) {
        const std::string why = detail::ps_check_request(wreq_[w], fingerprint, tables_, ch_.t->spec().task.name(), wkind_[w],
                                                         wids_at_[w]);
        if (!why.empty()) refuse(w, "parameter servers: " + ch_.t->peer_name(ch_.workers[w]) + why);
        return wkind_[w];
    }
    // the row ids a request announced, once received: increasing, inside their shards
    void check_ids(std::size_t w) {
        const std::string why = detail::ps_check_ids(wids_[w], wids_at_[w], tables_);
        if (!why.empty()) refuse(w, "parameter servers: " + ch_.t->peer_name(ch_.workers[w]) + why);
    }
    // a push's head {examples, loss * examples, step}: see ps_check_head
    void check_head(std::size_t w, const double* head, bool earlier_ok) {
        const std::string why = detail::ps_check_head(head, step_, earlier_ok, ch_.t->spec().task.name());
        if (!why.empty()) refuse(w, "parameter servers: " + ch_.t->peer_name(ch_.workers[w]) + why);
    }
    // worker w sent something wrong: drops it (it learns why) and throws
    // peer_lost when workers may be lost, else fails the cluster (every
    // task learns why) and throws
    [[noreturn]] void refuse(std::size_t w, const std::string& why) {
        if (tolerant_) {
            ch_.t->drop(ch_.workers[w], why);
            throw peer_lost(ch_.workers[w], why);
        }
        ch_.t->abort(why);
        throw error(why);
    }
    // zeroes every accumulated gradient (a push cut off part way)
    void clear_acc() {
        std::fill(acc_.begin(), acc_.end(), 0.0);
        std::fill(marks_.begin(), marks_.end(), char{0});
        for (auto& rows : step_rows_) rows.clear();
    }
    // the optimizer's update from the accumulated gradients, averaged over `total` examples
    void update(session& s, double total) {
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i : mine_)
            if (!sparse_shard(i)) average(i, total);
        if constexpr (any_sparse) gather_sparse(total);
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            std::apply([&](const auto&... f) { s.run(apply_, f...); }, std::tuple_cat(apply_feeds<K>()...));
        }(std::index_sequence_for<Vs...>{});
        update_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++step_;
        if (hooks_.on_update) hooks_.on_update(s, step_);
    }
    // ps_mode::async, and ps_mode::sync with backup workers: every worker's
    // messages are awaited at once (polled), and handled as they come
    std::size_t serve_polling(session& s, ps_mode mode, int backups) {
        // per worker: what it is expected to send next, and the receives posted for it
        enum class expect { request, ids, head, grads, stale, held, done };
        const bool async = mode == ps_mode::async;
        const std::size_t W = ch_.workers.size();
        std::vector<expect> state(W, expect::request);
        std::vector<std::vector<request>> posted(W);
        std::vector<double> head(3 * W);
        std::vector<std::int64_t> counted(W, -1);  // sync: the step whose update counts the worker's push
        std::size_t active = W;
        int contributions = 0;  // sync: pushes counted this step
        double total = 0;       // sync: their examples
        int busy = -1;  // the worker whose gradients are being summed (into acc_: one worker at a time)
        std::vector<std::size_t> queued;  // workers whose head came while another's gradients were arriving
        std::vector<std::size_t> gone;    // workers lost (dead, silent or refused), not yet let go
        std::vector<request> rs;
        auto next_request = [&](std::size_t w) {
            state[w] = expect::request;
            post_request(posted[w], w);
        };
        auto answer = [&](std::size_t w) {
            try {
                send_values(rs, w);
                ch_.wait_all(rs);  // out before an update changes them
            } catch (const peer_lost&) {
                rs.clear();
                gone.push_back(w);
                return;
            }
            if (wkind_[w] == detail::ps_request::pull) next_request(w);
            else {
                state[w] = expect::head;
                ch_.recv(posted[w], ch_.workers[w], op_code::push, head.data() + 3 * w, 3);
            }
        };
        auto drop = [&](std::size_t w) {  // a push whose step has passed
            ++stale_;
            if (head[3 * w] == 0) return next_request(w);
            state[w] = expect::stale;
            for (std::size_t i : mine_) discard_shard(posted[w], w, i);
        };
        auto post_grads = [&](std::size_t w) {
            if (!async && head[3 * w + 2] != static_cast<double>(step_)) return drop(w);  // its step passed while it queued
            busy = static_cast<int>(w);
            state[w] = expect::grads;
            for (std::size_t i : mine_) recv_shard(posted[w], w, i, async ? 1.0 : head[3 * w]);
        };
        auto next_queued = [&] {
            while (busy < 0 && !queued.empty()) {
                const std::size_t next = queued.front();
                queued.erase(queued.begin());
                post_grads(next);
            }
        };
        // sync: one update once the step has its pushes (at most as many as workers still training)
        auto maybe_update = [&] {
            if (async || contributions == 0 || busy >= 0) return;
            const int need = std::min<int>(static_cast<int>(W) - backups, static_cast<int>(active));
            if (contributions < need) return;
            if (!(total > 0)) throw error("parameter servers: no worker fed any example in this step");
            update(s, total);
            contributions = 0;
            total = 0;
            for (std::size_t w = 0; w < W; ++w)
                if (state[w] == expect::held) answer(w);
            next_queued();  // their step has passed: dropped
        };
        // a request (and the row ids it announced) is in
        auto requested = [&](std::size_t w) {
            check_ids(w);
            if (!async && wkind_[w] == detail::ps_request::step && counted[w] == step_)
                state[w] = expect::held;  // its push is in this step: it waits for the update
            else answer(w);
        };
        // worker w is gone: what it was pushing is dropped, no step waits for it
        auto let_go = [&](std::size_t w) {
            if (state[w] == expect::done) return;
            if (busy == static_cast<int>(w)) {  // its gradients were part summed: the sum is void
                busy = -1;
                clear_acc();
                if (!async) {  // and with it the step's other pushes: their workers compute them again
                    contributions = 0;
                    total = 0;
                    std::fill(counted.begin(), counted.end(), -1);
                    for (std::size_t v = 0; v < W; ++v)
                        if (state[v] == expect::held && v != w) answer(v);
                }
            }
            queued.erase(std::remove(queued.begin(), queued.end(), w), queued.end());
            posted[w].clear();
            state[w] = expect::done;
            --active;
            ++lost_;
            maybe_update();
            next_queued();
        };
        for (std::size_t w = 0; w < W; ++w) next_request(w);
        while (active > 0) {
            bool progressed = false;
            for (std::size_t w = 0; w < W; ++w) try {
                if (state[w] == expect::done || state[w] == expect::held || posted[w].empty()) continue;
                bool all = true;
                for (const request& r : posted[w]) all = all && ch_.t->test(r);
                if (!all) continue;
                progressed = true;
                posted[w].clear();
                if (state[w] == expect::request) {
                    ++rounds_;
                    if (check_request(w) == detail::ps_request::done) {
                        state[w] = expect::done;
                        --active;
                        maybe_update();  // the step may need fewer pushes now
                    } else {
                        post_ids(posted[w], w);
                        if (!posted[w].empty()) state[w] = expect::ids;
                        else requested(w);
                    }
                } else if (state[w] == expect::ids) requested(w);
                else if (state[w] == expect::head) {
                    const double n = head[3 * w];
                    check_head(w, head.data() + 3 * w, true);
                    if (!async && head[3 * w + 2] != static_cast<double>(step_)) drop(w);  // computed from older values
                    else if (n == 0) {
                        if (!async) {
                            counted[w] = step_;
                            ++contributions;
                        }
                        next_request(w);
                        maybe_update();
                    } else if (busy < 0) post_grads(w);
                    else queued.push_back(w);
                } else if (state[w] == expect::stale) next_request(w);
                else {  // its gradients are in
                    busy = -1;
                    next_request(w);
                    if (async) update(s, 1.0);  // one update from them alone
                    else {
                        counted[w] = step_;
                        ++contributions;
                        total += head[3 * w];
                    }
                    maybe_update();
                    next_queued();
                }
            } catch (const peer_lost& e) {  // w's request, or one that handling w led to, found its worker gone
                const auto v = static_cast<std::size_t>(std::find(ch_.workers.begin(), ch_.workers.end(), e.peer()) - ch_.workers.begin());
                if (v == W) throw;
                gone.push_back(v);
            }
            for (std::size_t k = 0; k < gone.size(); ++k) {  // letting one go may find another gone
                progressed = true;
                let_go(gone[k]);
            }
            gone.clear();
            if (ch_.t->failed()) throw error(ch_.t->failure());
            // a short sleep, not yield: on a loaded machine a yield gives the
            // core away for a whole time slice
            if (!progressed) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        return static_cast<std::size_t>(step_);
    }

    template <std::size_t K>
    using var_t = std::tuple_element_t<K, std::tuple<Vs...>>;
    // the shard's first element and element count in its variable
    static constexpr std::size_t shard_at(std::size_t i) {
        const placed_shard& s = P::shards[i];
        return static_cast<std::size_t>(s.row_begin) * row_elems(s.var);
    }
    static constexpr std::size_t shard_size(std::size_t i) {
        const placed_shard& s = P::shards[i];
        return static_cast<std::size_t>(s.row_end - s.row_begin) * row_elems(s.var);
    }
    // shard i's first element in acc_ and scratch_ (every shard, in table order)
    static constexpr std::size_t buffer_at(std::size_t i) {
        std::size_t at = 0;
        for (std::size_t j = 0; j < i; ++j) at += shard_size(j);
        return at;
    }
    static constexpr std::size_t row_elems(std::size_t v) {
        constexpr std::size_t numel[N] = {static_cast<std::size_t>(shape_t<Vs>::numel)...};
        constexpr std::size_t rows[N] = {(shape_t<Vs>::rank == 0 ? 1 : static_cast<std::size_t>(shape_t<Vs>::value.d[0]))...};
        return rows[v] ? numel[v] / rows[v] : 0;
    }
    // calls f(variable K) for the variable of shard i
    template <class F>
    void with_var(std::size_t v, F&& f) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((K == v ? (f(std::integral_constant<std::size_t, K>{}), void()) : void()), ...);
        }(std::index_sequence_for<Vs...>{});
    }
    template <std::size_t K>
    auto& var_value() {
        return const_cast<var_t<K>&>(typeflow::detail::get_child<K>(vars_)).value();
    }

    // ---- worker side ----
    // to every ps: the request (kind, fingerprint, and per table shard there:
    // the rows it asks for, -1 for all), then the row ids
    void request_all(detail::ps_request kind) {
        ++rounds_;
        std::vector<request> rs;
        for (std::size_t q = 0; q < ch_.ps.size(); ++q) {
            std::vector<std::int64_t>& req = req_[q];
            req[0] = static_cast<std::int64_t>(kind);
            req[1] = static_cast<std::int64_t>(fingerprint);
            req_ids_[q].clear();
            for (std::size_t i = 0; i < P::shard_count; ++i)
                if (P::shards[i].ps == static_cast<int>(q) && sparse_shard(i)) {
                    std::int64_t& n = req[2 + sparse_slot(i)];
                    if (kind == detail::ps_request::step) {
                        n = static_cast<std::int64_t>(touched_[i].size());
                        req_ids_[q].insert(req_ids_[q].end(), touched_[i].begin(), touched_[i].end());
                    } else n = kind == detail::ps_request::pull ? -1 : 0;
                }
            ch_.send(rs, ch_.ps[q], op_code::pull, req.data(), req.size());
            ch_.send(rs, ch_.ps[q], op_code::pull, req_ids_[q].data(), req_ids_[q].size());
        }
        ch_.wait_all(rs);
    }
    // every ps's step number, and every shard from the ps that holds it,
    // straight into this task's variables (a table's touched rows through a buffer)
    void receive_values() {
        std::vector<request> rs;
        for (std::size_t q = 0; q < ch_.ps.size(); ++q) {
            ch_.recv(rs, ch_.ps[q], op_code::pull, steps_.data() + q, 1);
            const bool rows_only = req_[q][0] == static_cast<std::int64_t>(detail::ps_request::step);
            for (std::size_t i = 0; i < P::shard_count; ++i)
                if (P::shards[i].ps == static_cast<int>(q))
                    with_var(P::shards[i].var, [&](auto k) {
                        auto& t = var_value<decltype(k)::value>();
                        using T = value_type_t<var_t<decltype(k)::value>>;
                        if (sparse_shard(i) && rows_only) {
                            const std::size_t m = touched_[i].size() * row_elems(P::shards[i].var);
                            rows_[i].resize(m * sizeof(T) / sizeof(double) + 1);
                            ch_.recv(rs, ch_.ps[q], op_code::pull, reinterpret_cast<T*>(rows_[i].data()), m);
                        } else ch_.recv(rs, ch_.ps[q], op_code::pull, t.data() + shard_at(i), shard_size(i));
                    });
        }
        ch_.wait_all(rs);
        if (hooks_.on_values) hooks_.on_values();
        if constexpr (any_sparse)  // the pulled rows into the tables
            for (std::size_t i = 0; i < P::shard_count; ++i)
                if (sparse_shard(i) && req_[P::shards[i].ps][0] == static_cast<std::int64_t>(detail::ps_request::step))
                    with_var(P::shards[i].var, [&](auto k) {
                        using T = value_type_t<var_t<decltype(k)::value>>;
                        T* t = var_value<decltype(k)::value>().data();
                        const T* r = reinterpret_cast<const T*>(rows_[i].data());
                        const std::size_t re = row_elems(P::shards[i].var);
                        for (std::size_t j = 0; j < touched_[i].size(); ++j)
                            std::copy(r + j * re, r + (j + 1) * re, t + static_cast<std::size_t>(touched_[i][j]) * re);
                    });
    }
    // the push head for ps q: examples, loss * examples, and the step of the values it was computed from
    void set_head(std::size_t q, double n, double loss_sum) {
        head_[3 * q] = n;
        head_[3 * q + 1] = loss_sum;
        head_[3 * q + 2] = static_cast<double>(steps_[q]);
    }
    // shard i's gradient to its ps: a slice of the dense gradient, or the summed rows of a table's touched rows
    template <class Res>
    void push_shard(std::vector<request>& rs, const Res& res, std::size_t i) {
        with_var(P::shards[i].var, [&](auto k) {
            constexpr std::size_t K = decltype(k)::value;
            using T = value_type_t<var_t<K>>;
            const int peer = ch_.ps[static_cast<std::size_t>(P::shards[i].ps)];
            if constexpr (pairs[K] > 0)
                ch_.send(rs, peer, op_code::push, reinterpret_cast<const T*>(rows_[i].data()),
                         touched_[i].size() * row_elems(K));
            else ch_.send(rs, peer, op_code::push, std::get<fetch_at(K)>(res).data() + shard_at(i), shard_size(i));
        });
    }
    // the rows of each table that this step's indices touch, sorted, per shard
    template <class IdsRes>
    void collect_touched(const IdsRes& ids) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (collect_var<K>(ids, std::make_index_sequence<pairs[K]>{}), ...);
        }(std::index_sequence_for<Vs...>{});
    }
    template <std::size_t K, class IdsRes, std::size_t... Q>
    void collect_var(const IdsRes& ids, std::index_sequence<Q...>) {
        if constexpr (sizeof...(Q) > 0) {
            constexpr std::int64_t rows = shape_t<var_t<K>>::value.d[0];
            std::vector<std::int64_t> all;
            auto add = [&](const auto& t) {
                for (std::size_t e = 0; e < static_cast<std::size_t>(t.size()); ++e) {
                    const auto id = static_cast<std::int64_t>(t.data()[e]);
                    if (id < 0 || id >= rows)
                        throw error("parameter servers: index " + std::to_string(id) + " of " + std::string(var_t<K>::name()) +
                                    " outside [0, " + std::to_string(rows) + ")");
                    all.push_back(id);
                }
            };
            (add(std::get<ids_at(K) + Q>(ids)), ...);
            std::sort(all.begin(), all.end());
            all.erase(std::unique(all.begin(), all.end()), all.end());
            for (std::size_t i = 0; i < P::shard_count; ++i)
                if (P::shards[i].var == K) {
                    const auto b = std::lower_bound(all.begin(), all.end(), P::shards[i].row_begin);
                    const auto e = std::lower_bound(all.begin(), all.end(), P::shards[i].row_end);
                    touched_[i].assign(b, e);
                }
        }
    }
    // each table's gradient rows summed per touched row, per shard, into rows_
    template <class Res>
    void build_push_rows(const Res& res) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (push_rows_var<K>(res, std::make_index_sequence<pairs[K]>{}), ...);
        }(std::index_sequence_for<Vs...>{});
    }
    template <std::size_t K, class Res, std::size_t... Q>
    void push_rows_var(const Res& res, std::index_sequence<Q...>) {
        if constexpr (sizeof...(Q) > 0) {
            using T = value_type_t<var_t<K>>;
            constexpr std::size_t re = row_elems(K);
            for (std::size_t i = 0; i < P::shard_count; ++i)
                if (P::shards[i].var == K) {
                    rows_[i].assign(touched_[i].size() * re * sizeof(T) / sizeof(double) + 1, 0.0);
                    std::fill_n(reinterpret_cast<T*>(rows_[i].data()), touched_[i].size() * re, T{});
                }
            auto add = [&](const auto& values, const auto& ids) {
                for (std::size_t j = 0; j < static_cast<std::size_t>(ids.size()); ++j) {
                    const auto id = static_cast<std::int64_t>(ids.data()[j]);
                    for (std::size_t i = 0; i < P::shard_count; ++i)
                        if (P::shards[i].var == K && id >= P::shards[i].row_begin && id < P::shards[i].row_end) {
                            const auto at = static_cast<std::size_t>(
                                std::lower_bound(touched_[i].begin(), touched_[i].end(), id) - touched_[i].begin());
                            T* r = reinterpret_cast<T*>(rows_[i].data()) + at * re;
                            const T* v = values.data() + j * re;
                            for (std::size_t c = 0; c < re; ++c) r[c] += v[c];
                        }
                }
            };
            (add(std::get<fetch_at(K) + 2 * Q>(res), std::get<fetch_at(K) + 2 * Q + 1>(res)), ...);
        }
    }

    // ---- ps side ----
    void post_request(std::vector<request>& rs, std::size_t w) {
        ch_.recv(rs, ch_.workers[w], op_code::pull, wreq_[w].data(), wreq_[w].size());
    }
    // the row ids worker w's request announced (nothing to post when none)
    void post_ids(std::vector<request>& rs, std::size_t w) {
        wids_[w].resize(wids_at_[w].back());
        ch_.recv(rs, ch_.workers[w], op_code::pull, wids_[w].data(), wids_[w].size());
    }
    // the answer to worker w's pull: this ps's step, then the values of its shards (a table's: the rows asked for)
    void send_values(std::vector<request>& rs, std::size_t w) {
        const int worker = ch_.workers[w];
        ch_.send(rs, worker, op_code::pull, &step_, 1);
        std::size_t slot = 0, at = 0;
        for (std::size_t i : mine_) {
            if (sparse_shard(i) && wkind_[w] == detail::ps_request::step) {
                const std::size_t b = wids_at_[w][slot], e = wids_at_[w][slot + 1];
                with_var(P::shards[i].var, [&](auto k) {
                    using T = value_type_t<var_t<decltype(k)::value>>;
                    const T* t = var_value<decltype(k)::value>().data();
                    const std::size_t re = row_elems(P::shards[i].var);
                    T* out = reinterpret_cast<T*>(wrows_[w].data()) + at;
                    for (std::size_t j = b; j < e; ++j)
                        std::copy(t + static_cast<std::size_t>(wids_[w][j]) * re, t + (static_cast<std::size_t>(wids_[w][j]) + 1) * re,
                                  out + (j - b) * re);
                    ch_.send(rs, worker, op_code::pull, static_cast<const T*>(out), (e - b) * re);
                    at += (e - b) * re;
                });
            } else send_shard(rs, worker, i);
            slot += sparse_shard(i);
        }
    }
    // how many gradient elements of shard i worker w pushes: the whole shard, or the rows it pulled
    std::size_t pushed_size(std::size_t w, std::size_t i) const {
        if (!sparse_shard(i)) return shard_size(i);
        const std::size_t slot = sparse_slot(i);
        return (wids_at_[w][slot + 1] - wids_at_[w][slot]) * row_elems(P::shards[i].var);
    }
    // receives a stale push's gradient rows of shard i and drops them
    void discard_shard(std::vector<request>& rs, std::size_t w, std::size_t i) {
        with_var(P::shards[i].var, [&](auto k) {
            using T = value_type_t<var_t<decltype(k)::value>>;
            T* scratch = reinterpret_cast<T*>(scratch_.data()) + buffer_at(i);
            ch_.recv_each(rs, ch_.workers[w], op_code::push, scratch, pushed_size(w, i), [](std::size_t, const T*, std::size_t) {});
        });
    }
    void send_shard(std::vector<request>& rs, int worker, std::size_t i) {
        with_var(P::shards[i].var, [&](auto k) {
            const auto& t = typeflow::detail::get_child<decltype(k)::value>(vars_).value();
            ch_.send(rs, worker, op_code::pull, t.data() + shard_at(i), shard_size(i));
        });
    }
    // acc += n * worker w's gradient of shard i (of a table's shard: the rows it pulled)
    void recv_shard(std::vector<request>& rs, std::size_t w, std::size_t i, double n) {
        with_var(P::shards[i].var, [&](auto k) {
            using T = value_type_t<var_t<decltype(k)::value>>;
            T* scratch = reinterpret_cast<T*>(scratch_.data()) + buffer_at(i);
            double* a = acc_.data() + buffer_at(i);
            if (!sparse_shard(i)) {
                ch_.recv_each(rs, ch_.workers[w], op_code::push, scratch, shard_size(i),
                              [a, n](std::size_t at, const T* g, std::size_t m) {
                                  for (std::size_t e = 0; e < m; ++e) a[at + e] += n * static_cast<double>(g[e]);
                              });
                return;
            }
            const std::int64_t* ids = wids_[w].data() + wids_at_[w][sparse_slot(i)];
            const std::size_t re = row_elems(P::shards[i].var);
            const std::int64_t rb = P::shards[i].row_begin;
            char* mark = marks_.data() + buffer_at(i);  // a row's mark at its first element
            std::vector<std::int64_t>* rows = &step_rows_[i];
            ch_.recv_each(rs, ch_.workers[w], op_code::push, scratch, pushed_size(w, i),
                          [a, n, ids, re, rb, mark, rows](std::size_t at, const T* g, std::size_t m) {
                              for (std::size_t e = 0; e < m; ++e) {
                                  const std::size_t el = at + e, j = el / re, c = el % re;
                                  const auto r = static_cast<std::size_t>(ids[j] - rb);
                                  a[r * re + c] += n * static_cast<double>(g[e]);
                                  if (c == 0 && !mark[r * re]) {
                                      mark[r * re] = 1;
                                      rows->push_back(ids[j]);
                                  }
                              }
                          });
        });
    }
    void average(std::size_t i, double total) {
        with_var(P::shards[i].var, [&](auto k) {
            using T = value_type_t<var_t<decltype(k)::value>>;
            T* out = std::get<decltype(k)::value>(grads_).data() + shard_at(i);
            double* a = acc_.data() + buffer_at(i);
            for (std::size_t e = 0; e < shard_size(i); ++e) {
                out[e] = static_cast<T>(a[e] / total);
                a[e] = 0;
            }
        });
    }
    // each table's pushed rows (of the shards here), averaged, with their ids, for the sparse update; the accumulators cleared
    void gather_sparse(double total) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((pairs[K] > 0 ? (gather_sparse_var<K>(total), void()) : void()), ...);
        }(std::index_sequence_for<Vs...>{});
    }
    template <std::size_t K>
    void gather_sparse_var(double total) {
        using T = value_type_t<var_t<K>>;
        constexpr std::size_t re = row_elems(K);
        auto& out = std::get<K>(grads_);
        auto& ids = sparse_ids_[K];
        out.clear();
        ids.clear();
        for (std::size_t i : mine_)
            if (P::shards[i].var == K) {
                double* a = acc_.data() + buffer_at(i);
                char* mark = marks_.data() + buffer_at(i);
                const std::int64_t rb = P::shards[i].row_begin;
                for (const std::int64_t id : step_rows_[i]) {
                    const auto r = static_cast<std::size_t>(id - rb);
                    for (std::size_t c = 0; c < re; ++c) {
                        out.push_back(static_cast<T>(a[r * re + c] / total));
                        a[r * re + c] = 0;
                    }
                    mark[r * re] = 0;
                    ids.push_back(id);
                }
                step_rows_[i].clear();
            }
    }
    void prepare_ps_buffers() {
        acc_.assign(buffer_at(P::shard_count), 0.0);
        scratch_.assign(buffer_at(P::shard_count), 0.0);  // doubles: room for either dtype, aligned
        marks_.assign(buffer_at(P::shard_count), 0);      // a table row's mark at its first element
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((std::get<K>(grads_).assign(pairs[K] > 0 ? 0 : static_cast<std::size_t>(shape_t<Vs>::numel), value_type_t<Vs>{})),
             ...);
        }(std::index_sequence_for<Vs...>{});
        const std::size_t W = ch_.workers.size();
        wreq_.assign(W, std::vector<std::int64_t>(2 + sparse_on(me_)));
        wkind_.assign(W, detail::ps_request::done);
        wids_.assign(W, {});
        wids_at_.assign(W, std::vector<std::size_t>(1, 0));
        std::size_t table_elems = 0;  // room for every table row this ps holds, per worker
        for (std::size_t i : mine_)
            if (sparse_shard(i)) table_elems += shard_size(i);
        wrows_.assign(W, std::vector<double>(table_elems + 1));
    }
    // the feeds of variable K's gradient for the update
    template <std::size_t K>
    auto apply_feeds() const {
        using V = var_t<K>;
        using T = value_type_t<V>;
        if constexpr (pairs[K] > 0) {
            dims d = shape_t<V>::value;
            d[0] = static_cast<index_t>(sparse_ids_[K].size());
            return std::make_tuple(feed(detail::ps_rows_t<V>{}, tensor_view<const T>{std::get<K>(grads_).data(), d}),
                                   feed(detail::ps_ids_t<V>{}, tensor_view<const std::int64_t>{
                                                                   sparse_ids_[K].data(), dims{d[0]}}));
        } else return std::make_tuple(feed(detail::ps_grad_t<V>{}, tensor_view<const T>{std::get<K>(grads_).data(), shape_t<V>::value}));
    }

    detail::ps_channels ch_;
    std::uint64_t rounds_ = 0;
    double update_seconds_ = 0;
    Fetch fetch_;
    IdsFetch ids_fetch_;
    Apply apply_;
    typeflow::detail::children_of<Vs...> vars_;
    // worker
    std::vector<std::vector<std::int64_t>> req_ = std::vector<std::vector<std::int64_t>>(ch_.ps.size());
    std::vector<std::vector<std::int64_t>> req_ids_ = std::vector<std::vector<std::int64_t>>(ch_.ps.size());
    std::vector<double> head_ = std::vector<double>(3 * ch_.ps.size());
    std::vector<std::int64_t> steps_ = std::vector<std::int64_t>(ch_.ps.size());  // each ps's step at the last pull
    std::array<std::vector<std::int64_t>, P::shard_count> touched_;  // a table shard's rows this step touches, sorted
    std::array<std::vector<double>, P::shard_count> rows_;           // their pulled values, then their summed gradients
    // ps
    int me_ = -1;
    std::vector<std::size_t> mine_;  // the shards this ps holds
    std::vector<detail::ps_rows> tables_;  // the rows of its embedding-table shards, in slot order
    std::int64_t step_ = 0;          // updates applied
    std::uint64_t stale_ = 0;        // stale pushes dropped
    std::uint64_t lost_ = 0;         // workers gone while served
    bool tolerant_ = false;          // serving goes on without a worker that fails
    ps_hooks hooks_;
    std::tuple<std::vector<value_type_t<Vs>>...> grads_;  // the averaged gradients fed to the update (a table's: its rows)
    std::array<std::vector<std::int64_t>, N> sparse_ids_;  // a table's row ids for the update
    std::vector<double> acc_, scratch_;
    std::vector<char> marks_;                                         // a table row pushed this step
    std::array<std::vector<std::int64_t>, P::shard_count> step_rows_;  // the rows marked, per shard
    std::vector<std::vector<std::int64_t>> wreq_;                     // per worker: its request
    std::vector<detail::ps_request> wkind_;                           // its kind
    std::vector<std::vector<std::int64_t>> wids_;                     // the row ids it asked for
    std::vector<std::vector<std::size_t>> wids_at_;                   // where each table shard's ids start in wids_
    std::vector<std::vector<double>> wrows_;                          // the rows sent to it
};

/// Parameter-server training over transport `t` with optimizer Opt and
/// placement PS (a ps_placement): see the top of this header.
template <class PS, class Opt>
class ps_strategy {
public:
    ps_strategy(transport& t, Opt opt) : t_(&t), opt_(std::move(opt)) {}

    /// The training of `loss` over `vars` (every trainable variable the loss
    /// reaches when none are given), to run on every task.
    template <expression L, variable_c... Vs>
    auto minimize(const L& loss, const Vs&... vars) const {
        static_assert(shape_t<L>::numel == 1, "typeflow: parameter_servers: the loss must be a scalar");
        const auto gv = opt_.compute_gradients(loss, vars...);
        return make(loss, gv);
    }

private:
    template <class L, class... G>
    auto make(const L& loss, const train::grads_and_vars<G...>& gv) const {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            using Vars = meta::list<meta::remove_cvref_t<decltype(gv.template get<K>().var)>...>;
            return make_of(loss, gv, Vars{}, std::index_sequence<K...>{});
        }(std::index_sequence_for<G...>{});
    }
    template <class L, class... G, class... Vs, std::size_t... K>
    auto make_of(const L& loss, const train::grads_and_vars<G...>& gv, meta::list<Vs...>, std::index_sequence<K...>) const {
        using P = typename PS::template of<Vs...>;
        using Pairs = std::index_sequence<detail::ps_pairs<meta::remove_cvref_t<decltype(gv.template get<K>().grad)>, Vs>()...>;
        auto fetch_all = std::apply([&](const auto&... e) { return fetch(loss, e...); },
                                    std::tuple_cat(detail::ps_grad_pack<Vs>(gv.template get<K>().grad)...));
        auto ids = std::tuple_cat(detail::ps_ids_pack<Vs>(gv.template get<K>().grad)...);
        auto fetch_ids = [&] {
            if constexpr (std::tuple_size_v<decltype(ids)> > 0)
                return std::apply([&](const auto&... e) { return fetch(e...); }, ids);
            else return 0;  // no table: nothing to evaluate before a pull
        }();
        auto apply = opt_.apply_gradients(
            train::grads_and_vars<train::grad_and_var<decltype(detail::ps_apply_grad<meta::remove_cvref_t<decltype(gv.template get<K>().grad)>>(
                                                          gv.template get<K>().var)),
                                                      Vs>...>(
                train::grad_and_var<decltype(detail::ps_apply_grad<meta::remove_cvref_t<decltype(gv.template get<K>().grad)>>(
                                        gv.template get<K>().var)),
                                    Vs>{detail::ps_apply_grad<meta::remove_cvref_t<decltype(gv.template get<K>().grad)>>(
                                            gv.template get<K>().var),
                                        gv.template get<K>().var}...));
        return ps_training<P, Pairs, L, decltype(fetch_all), decltype(fetch_ids), decltype(apply), Vs...>(
            *t_, PS::ps_tasks, std::move(fetch_all), std::move(fetch_ids), std::move(apply), gv.template get<K>().var...);
    }

    transport* t_;
    Opt opt_;
};

/// parameter_servers<ps_placement<NumPs, Strategy, Partitioner>>(transport, optimizer): see ps_strategy.
template <class PS, class Opt>
ps_strategy<PS, Opt> parameter_servers(transport& t, Opt opt) {
    return ps_strategy<PS, Opt>(t, std::move(opt));
}

}  // namespace typeflow::dist
