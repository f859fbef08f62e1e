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
#include <typeflow/distributed/transport.hpp>
#include <typeflow/expr/leaves.hpp>
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
};

namespace detail {
/// The placeholder through which a ps feeds the averaged gradient of V to the update.
template <class V>
using ps_grad_t = placeholder<typeflow::concat<V::fixed_name, "/ps_grad">(), value_type_t<V>, shape_t<V>, device_t<V>>;

/// What a worker asks of the ps tasks.
enum class ps_request : std::int64_t { done = 0, step = 1, pull = 2 };

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
/// header and parameter_servers). P is the placement.
template <class P, class Loss, class Fetch, class Apply, class... Vs>
class ps_training {
    static constexpr std::size_t N = sizeof...(Vs);

public:
    using placement_type = P;
    using loss_type = value_type_t<Loss>;
    /// The model's fingerprint (names, dtypes and shapes of the variables, and
    /// their placement): a worker whose fingerprint differs from a ps's is
    /// refused with an error naming both.
    static constexpr std::uint64_t fingerprint = P::fingerprint;

    ps_training(transport& t, int num_ps, Fetch fetch, Apply apply, const Vs&... vars)
        : ch_(t, num_ps), fetch_(std::move(fetch)), apply_(std::move(apply)), vars_(vars...) {}

    // ---- workers ----

    /// One step with this worker's feeds (the first feed's leading extent
    /// counts its examples, possibly none): pulls the current values of every
    /// variable into this task's copies, computes the loss and the gradients,
    /// pushes them to the ps tasks that hold each shard. Returns this worker's
    /// loss (0 without examples). The same code for both ps modes; with
    /// ps_mode::sync a round waits for every worker that has not finished.
    template <class... Feeds>
    loss_type run(session& s, const Feeds&... feeds) {
        const double n = static_cast<double>(detail::example_count(feeds...));
        request_all(detail::ps_request::step);
        receive_values();
        std::vector<request> rs;
        double loss = 0;
        if (n > 0) {
            auto res = s.run(fetch_, feeds...);
            loss = static_cast<double>(std::get<0>(res)[0]);
            for (std::size_t p = 0; p < ch_.ps.size(); ++p) {
                set_head(p, n, loss * n);
                ch_.send(rs, ch_.ps[p], op_code::push, head_.data() + 3 * p, 3);
            }
            [&]<std::size_t... K>(std::index_sequence<K...>) {
                (push_grads<K>(rs, std::get<K + 1>(res)), ...);
            }(std::index_sequence_for<Vs...>{});
            ch_.wait_all(rs);  // the result tensors stay alive until their bytes are out
        } else {
            for (std::size_t p = 0; p < ch_.ps.size(); ++p) {
                set_head(p, 0, 0);
                ch_.send(rs, ch_.ps[p], op_code::push, head_.data() + 3 * p, 3);
            }
            ch_.wait_all(rs);
        }
        return static_cast<loss_type>(loss);
    }
    /// The current values of every variable, from the ps tasks, into this
    /// task's copies (after the last step, to evaluate or save the model).
    void pull() {
        request_all(detail::ps_request::pull);
        receive_values();
    }
    /// Tells the ps tasks that this worker is done; serve returns once every
    /// worker has.
    void finish() { request_all(detail::ps_request::done); }

    /// Counters so far.
    ps_stats stats() const noexcept { return {rounds_, ch_.bytes_sent, ch_.bytes_received, update_seconds_, stale_}; }

    // ---- ps tasks ----

    /// Serves the workers until every one has finished: each round, answers
    /// every worker's pull with the step number and the values of the shards
    /// this ps holds, sums the pushed gradients of those shards weighted by
    /// each worker's examples (in worker order, so every run gives the same
    /// bits), and applies the optimizer to the average. Returns the number of
    /// updates applied. A worker with a different model (fingerprint) fails
    /// the cluster with an error naming both fingerprints.
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
    std::size_t serve(session& s, ps_mode mode = ps_mode::sync, int backup_workers = 0) {
        const cluster_spec& spec = ch_.t->spec();
        if (spec.task.type != role::ps) throw error("parameter servers: serve() runs on ps tasks, this is " + spec.task.name());
        const int W = static_cast<int>(ch_.workers.size());
        if (backup_workers < 0 || backup_workers >= W)
            throw error("parameter servers: " + std::to_string(backup_workers) + " backup workers of " + std::to_string(W) +
                        " workers (0 .. " + std::to_string(W - 1) + " allowed)");
        if (backup_workers > 0 && mode != ps_mode::sync)
            throw error("parameter servers: backup workers need ps_mode::sync");
        const int me = spec.task.index;
        std::vector<std::size_t> mine;  // the shards this ps holds
        for (std::size_t i = 0; i < P::shard_count; ++i)
            if (P::shards[i].ps == me) mine.push_back(i);
        prepare_grad_buffers();
        step_ = 0;
        if (mode == ps_mode::async || backup_workers > 0) return serve_polling(s, mine, mode, backup_workers);
        std::vector<char> active(ch_.workers.size(), 1);
        std::vector<std::int64_t> req(2 * ch_.workers.size());
        std::vector<request> rs;
        for (;;) {
            std::vector<std::size_t> asking;
            for (std::size_t w = 0; w < ch_.workers.size(); ++w)
                if (active[w]) {
                    asking.push_back(w);
                    ch_.recv(rs, ch_.workers[w], op_code::pull, req.data() + 2 * w, 2);
                }
            if (asking.empty()) return static_cast<std::size_t>(step_);
            ch_.wait_all(rs);
            std::vector<std::size_t> stepping;
            for (std::size_t w : asking) {
                ++rounds_;
                const auto kind = check_request(w, req.data() + 2 * w);
                if (kind == detail::ps_request::done) {
                    active[w] = 0;
                    continue;
                }
                send_values(rs, w, mine);
                if (kind == detail::ps_request::step) stepping.push_back(w);
            }
            ch_.wait_all(rs);  // the values are out before the update changes them
            if (stepping.empty()) continue;
            // the pushes, in worker order
            std::fill(acc_.begin(), acc_.end(), 0.0);
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
                for (std::size_t i : mine) recv_shard(rs, ch_.workers[w], i, head[0]);
                ch_.wait_all(rs);
            }
            if (!(total > 0)) throw error("parameter servers: no worker fed any example in this step");
            update(s, mine, total);
        }
    }

private:
    // a request's fingerprint and kind, checked; throws (after failing the cluster) when wrong
    detail::ps_request check_request(std::size_t w, const std::int64_t* req) {
        const auto kind = static_cast<detail::ps_request>(req[0]);
        const auto fp = static_cast<std::uint64_t>(req[1]);
        std::string why;
        if (fp != fingerprint)
            why = "parameter servers: " + ch_.t->peer_name(ch_.workers[w]) + " runs a different model: fingerprint " + hex(fp) +
                  ", this ps (" + ch_.t->spec().task.name() + ") has " + hex(fingerprint);
        else if (kind != detail::ps_request::step && kind != detail::ps_request::pull && kind != detail::ps_request::done)
            why = "parameter servers: " + ch_.t->peer_name(ch_.workers[w]) + " sent an unknown request " + std::to_string(req[0]);
        if (!why.empty()) refuse(why);
        return kind;
    }
    // a push's head {examples, loss * examples, step}: examples neither
    // negative nor NaN; the step one this ps has given out (any earlier one
    // when `earlier_ok`, else the current one)
    void check_head(std::size_t w, const double* head, bool earlier_ok) {
        const std::string who = "parameter servers: " + ch_.t->peer_name(ch_.workers[w]);
        if (!(head[0] >= 0)) refuse(who + " pushed " + std::to_string(head[0]) + " examples");
        const double step = head[2];
        if (!(step >= 0 && step <= static_cast<double>(step_) && step == std::floor(step)) ||
            (!earlier_ok && step != static_cast<double>(step_)))
            refuse(who + " pushed gradients of step " + std::to_string(step) + ", this ps (" + ch_.t->spec().task.name() +
                   ") is at step " + std::to_string(step_));
    }
    // fails the cluster (the workers learn why) and throws
    [[noreturn]] void refuse(const std::string& why) {
        ch_.t->abort(why);
        throw error(why);
    }
    // the optimizer's update from the accumulated gradients, averaged over `total` examples
    void update(session& s, const std::vector<std::size_t>& mine, double total) {
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i : mine) average(i, total);
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            s.run(apply_, grad_feed<K>()...);
        }(std::index_sequence_for<Vs...>{});
        update_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++step_;
    }
    // ps_mode::async, and ps_mode::sync with backup workers: every worker's
    // messages are awaited at once (polled), and handled as they come
    std::size_t serve_polling(session& s, const std::vector<std::size_t>& mine, ps_mode mode, int backups) {
        // per worker: what it is expected to send next, and the receives posted for it
        enum class expect { request, head, grads, stale, held, done };
        const bool async = mode == ps_mode::async;
        const std::size_t W = ch_.workers.size();
        std::vector<expect> state(W, expect::request);
        std::vector<std::vector<request>> posted(W);
        std::vector<std::int64_t> req(2 * W);
        std::vector<double> head(3 * W);
        std::vector<std::int64_t> counted(W, -1);  // sync: the step whose update counts the worker's push
        std::size_t active = W;
        int contributions = 0;  // sync: pushes counted this step
        double total = 0;       // sync: their examples
        int busy = -1;  // the worker whose gradients are being summed (into acc_: one worker at a time)
        std::vector<std::size_t> queued;  // workers whose head came while another's gradients were arriving
        std::vector<request> rs;
        auto post_request = [&](std::size_t w) {
            state[w] = expect::request;
            ch_.recv(posted[w], ch_.workers[w], op_code::pull, req.data() + 2 * w, 2);
        };
        auto answer = [&](std::size_t w, detail::ps_request kind) {
            send_values(rs, w, mine);
            ch_.wait_all(rs);  // out before an update changes them
            if (kind == detail::ps_request::pull) post_request(w);
            else {
                state[w] = expect::head;
                ch_.recv(posted[w], ch_.workers[w], op_code::push, head.data() + 3 * w, 3);
            }
        };
        auto post_grads = [&](std::size_t w) {
            if (!async && head[3 * w + 2] != static_cast<double>(step_)) {  // its step passed while it queued
                state[w] = expect::stale;
                ++stale_;
                for (std::size_t i : mine) discard_shard(posted[w], ch_.workers[w], i);
                return;
            }
            busy = static_cast<int>(w);
            state[w] = expect::grads;
            if (async) std::fill(acc_.begin(), acc_.end(), 0.0);
            for (std::size_t i : mine) recv_shard(posted[w], ch_.workers[w], i, async ? 1.0 : head[3 * w]);
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
            update(s, mine, total);
            std::fill(acc_.begin(), acc_.end(), 0.0);
            contributions = 0;
            total = 0;
            for (std::size_t w = 0; w < W; ++w)
                if (state[w] == expect::held) answer(w, detail::ps_request::step);
            next_queued();  // their step has passed: dropped
        };
        for (std::size_t w = 0; w < W; ++w) post_request(w);
        while (active > 0) {
            bool progressed = false;
            for (std::size_t w = 0; w < W; ++w) {
                if (state[w] == expect::done || state[w] == expect::held || posted[w].empty()) continue;
                bool all = true;
                for (const request& r : posted[w]) all = all && ch_.t->test(r);
                if (!all) continue;
                progressed = true;
                posted[w].clear();
                if (state[w] == expect::request) {
                    ++rounds_;
                    const auto kind = check_request(w, req.data() + 2 * w);
                    if (kind == detail::ps_request::done) {
                        state[w] = expect::done;
                        --active;
                        maybe_update();  // the step may need fewer pushes now
                    } else if (!async && kind == detail::ps_request::step && counted[w] == step_)
                        state[w] = expect::held;  // its push is in this step: it waits for the update
                    else answer(w, kind);
                } else if (state[w] == expect::head) {
                    const double n = head[3 * w];
                    check_head(w, head.data() + 3 * w, true);
                    if (!async && head[3 * w + 2] != static_cast<double>(step_)) {  // computed from older values
                        ++stale_;
                        if (n == 0) post_request(w);
                        else {
                            state[w] = expect::stale;
                            for (std::size_t i : mine) discard_shard(posted[w], ch_.workers[w], i);
                        }
                    } else if (n == 0) {
                        if (!async) {
                            counted[w] = step_;
                            ++contributions;
                        }
                        post_request(w);
                        maybe_update();
                    } else if (busy < 0) post_grads(w);
                    else queued.push_back(w);
                } else if (state[w] == expect::stale) post_request(w);
                else {  // its gradients are in
                    busy = -1;
                    post_request(w);
                    if (async) update(s, mine, 1.0);  // one update from them alone
                    else {
                        counted[w] = step_;
                        ++contributions;
                        total += head[3 * w];
                    }
                    maybe_update();
                    next_queued();
                }
            }
            if (ch_.t->failed()) throw error(ch_.t->failure());
            // a short sleep, not yield: on a loaded machine a yield gives the
            // core away for a whole time slice
            if (!progressed) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        return static_cast<std::size_t>(step_);
    }

    template <std::size_t K>
    using var_t = std::tuple_element_t<K, std::tuple<Vs...>>;
    static std::string hex(std::uint64_t v) {
        char b[19];
        std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
        return b;
    }
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

    void request_all(detail::ps_request kind) {
        ++rounds_;
        std::vector<request> rs;
        for (std::size_t p = 0; p < ch_.ps.size(); ++p) {
            req_[2 * p] = static_cast<std::int64_t>(kind);
            req_[2 * p + 1] = static_cast<std::int64_t>(fingerprint);
            ch_.send(rs, ch_.ps[p], op_code::pull, req_.data() + 2 * p, 2);
        }
        ch_.wait_all(rs);
    }
    // every ps's step number, and every shard from the ps that holds it,
    // straight into this task's variables
    void receive_values() {
        std::vector<request> rs;
        for (std::size_t p = 0; p < ch_.ps.size(); ++p) {
            ch_.recv(rs, ch_.ps[p], op_code::pull, steps_.data() + p, 1);
            for (std::size_t i = 0; i < P::shard_count; ++i)
                if (P::shards[i].ps == static_cast<int>(p))
                    with_var(P::shards[i].var, [&](auto k) {
                        auto& t = const_cast<var_t<decltype(k)::value>&>(typeflow::detail::get_child<decltype(k)::value>(vars_)).value();
                        ch_.recv(rs, ch_.ps[p], op_code::pull, t.data() + shard_at(i), shard_size(i));
                    });
        }
        ch_.wait_all(rs);
    }
    // the push head for ps p: examples, loss * examples, and the step of the values it was computed from
    void set_head(std::size_t p, double n, double loss_sum) {
        head_[3 * p] = n;
        head_[3 * p + 1] = loss_sum;
        head_[3 * p + 2] = static_cast<double>(steps_[p]);
    }
    template <std::size_t K, class T>
    void push_grads(std::vector<request>& rs, const tensor<T>& g) {
        for (std::size_t p = 0; p < ch_.ps.size(); ++p)
            for (std::size_t i = 0; i < P::shard_count; ++i)
                if (P::shards[i].var == K && P::shards[i].ps == static_cast<int>(p))
                    ch_.send(rs, ch_.ps[p], op_code::push, g.data() + shard_at(i), shard_size(i));
    }

    // ps side
    // the answer to worker w's pull: this ps's step, then the values of its shards
    void send_values(std::vector<request>& rs, std::size_t w, const std::vector<std::size_t>& mine) {
        ch_.send(rs, ch_.workers[w], op_code::pull, &step_, 1);
        for (std::size_t i : mine) send_shard(rs, ch_.workers[w], i);
    }
    // receives a stale push's gradient rows of shard i and drops them
    void discard_shard(std::vector<request>& rs, int worker, std::size_t i) {
        with_var(P::shards[i].var, [&](auto k) {
            using T = value_type_t<var_t<decltype(k)::value>>;
            T* scratch = reinterpret_cast<T*>(scratch_.data()) + buffer_at(i);
            ch_.recv_each(rs, worker, op_code::push, scratch, shard_size(i), [](std::size_t, const T*, std::size_t) {});
        });
    }
    void send_shard(std::vector<request>& rs, int worker, std::size_t i) {
        with_var(P::shards[i].var, [&](auto k) {
            const auto& t = typeflow::detail::get_child<decltype(k)::value>(vars_).value();
            ch_.send(rs, worker, op_code::pull, t.data() + shard_at(i), shard_size(i));
        });
    }
    // acc += n * the worker's gradient rows of shard i
    void recv_shard(std::vector<request>& rs, int worker, std::size_t i, double n) {
        with_var(P::shards[i].var, [&](auto k) {
            using T = value_type_t<var_t<decltype(k)::value>>;
            T* scratch = reinterpret_cast<T*>(scratch_.data()) + buffer_at(i);
            double* a = acc_.data() + buffer_at(i);
            ch_.recv_each(rs, worker, op_code::push, scratch, shard_size(i), [a, n](std::size_t at, const T* g, std::size_t m) {
                for (std::size_t e = 0; e < m; ++e) a[at + e] += n * static_cast<double>(g[e]);
            });
        });
    }
    void average(std::size_t i, double total) {
        with_var(P::shards[i].var, [&](auto k) {
            using T = value_type_t<var_t<decltype(k)::value>>;
            T* out = std::get<decltype(k)::value>(grads_).data() + shard_at(i);
            const double* a = acc_.data() + buffer_at(i);
            for (std::size_t e = 0; e < shard_size(i); ++e) out[e] = static_cast<T>(a[e] / total);
        });
    }
    void prepare_grad_buffers() {
        acc_.assign(buffer_at(P::shard_count), 0.0);
        scratch_.assign(buffer_at(P::shard_count), 0.0);  // doubles: room for either dtype, aligned
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((std::get<K>(grads_).assign(static_cast<std::size_t>(shape_t<Vs>::numel), value_type_t<Vs>{})), ...);
        }(std::index_sequence_for<Vs...>{});
    }
    template <std::size_t K>
    auto grad_feed() const {
        using V = var_t<K>;
        return feed(detail::ps_grad_t<V>{},
                    tensor_view<const value_type_t<V>>{std::get<K>(grads_).data(), shape_t<V>::value});
    }

    detail::ps_channels ch_;
    std::uint64_t rounds_ = 0;
    double update_seconds_ = 0;
    Fetch fetch_;
    Apply apply_;
    typeflow::detail::children_of<Vs...> vars_;
    std::vector<std::int64_t> req_ = std::vector<std::int64_t>(2 * ch_.ps.size());
    std::vector<double> head_ = std::vector<double>(3 * ch_.ps.size());
    std::vector<std::int64_t> steps_ = std::vector<std::int64_t>(ch_.ps.size());  // worker: each ps's step at the last pull
    std::int64_t step_ = 0;    // ps: updates applied
    std::uint64_t stale_ = 0;  // ps: stale pushes dropped
    std::tuple<std::vector<value_type_t<Vs>>...> grads_;  // ps: the averaged gradients fed to the update (zeros elsewhere)
    std::vector<double> acc_, scratch_;

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
            using Vars = meta::list<std::remove_cvref_t<decltype(gv.template get<K>().var)>...>;
            return make_of(loss, gv, Vars{}, std::index_sequence<K...>{});
        }(std::index_sequence_for<G...>{});
    }
    template <class L, class... G, class... Vs, std::size_t... K>
    auto make_of(const L& loss, const train::grads_and_vars<G...>& gv, meta::list<Vs...>, std::index_sequence<K...>) const {
        using P = typename PS::template of<Vs...>;
        auto fetch_all = fetch(loss, gv.template get<K>().grad...);
        auto apply = opt_.apply_gradients(train::grads_and_vars<train::grad_and_var<detail::ps_grad_t<Vs>, Vs>...>(
            train::grad_and_var<detail::ps_grad_t<Vs>, Vs>{detail::ps_grad_t<Vs>{}, gv.template get<K>().var}...));
        return ps_training<P, L, decltype(fetch_all), decltype(apply), Vs...>(*t_, PS::ps_tasks, std::move(fetch_all),
                                                                           std::move(apply), gv.template get<K>().var...);
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
