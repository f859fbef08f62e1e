#pragma once
// typeflow::dist::mirrored — synchronous data parallelism for typeflow graphs
// (TensorFlow's MultiWorkerMirroredStrategy): every task holds the whole
// model, computes the gradients of its shard of the batch, the gradients are
// averaged over all tasks' examples with one all_reduce, and every task
// applies the same update with the wrapped optimizer.
//
// Include it after <typeflow/typeflow.hpp> and <typeflow/dist.hpp>:
//
//     tfd::ring_collective comm(tfd::cluster_spec::from_env());
//     auto strategy = tfd::mirrored(comm, tf::train::adam(1e-3));
//     auto step = strategy.minimize(loss);        // or minimize(loss, vars...)
//     step.broadcast_variables();                 // the chief's initial values everywhere
//     for (...) double l = step.run(s, tf::feed(x, my_rows), tf::feed(y, my_labels));
#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/fixed_string.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/distributed/collective.hpp>
#include <typeflow/distributed/error.hpp>
#include <typeflow/distributed/example_count.hpp>
#include <typeflow/distributed/placement.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/expr/ops/array.hpp>
#include <typeflow/expr/ops/matmul.hpp>
#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/session.hpp>
#include <typeflow/train/optimizers.hpp>

namespace typeflow::dist {

namespace detail {
/// The placeholder through which the averaged gradient of variable V reaches
/// the update.
template <class V>
using mirrored_grad_t =
    placeholder<typeflow::concat<V::fixed_name, "/mirrored_grad">(), value_type_t<V>, shape_t<V>, device_t<V>>;

/// A gradient of more than this many bytes that is a product a^T g (a dense
/// layer's weights) is computed and summed in chunks of rows of about this
/// size, so that a chunk's all_reduce runs while the next chunk's product does.
inline constexpr std::size_t mirrored_chunk_bytes = std::size_t{256} << 10;

// The chunks of rows in which a mirrored step computes the gradient G of
// variable V: 1, or for G = matmul(a, g, transpose_a), as many as
// min_max_partitioner<8, mirrored_chunk_bytes> cuts V into (each at least
// mirrored_chunk_bytes, at most 8), their rows split as shard_begin splits
// a partitioned variable's.
template <class V, class G>
struct mirrored_chunks : std::integral_constant<std::size_t, 1> {};
template <class V, class A, class Gr>
    requires(shape_t<V>::rank == 2 && shape_t<A>::rank == 2)
struct mirrored_chunks<V, node<op::matmul<true, false>, A, Gr>>
    : std::integral_constant<std::size_t, min_max_partitioner<8, mirrored_chunk_bytes>::template shards<
                                              placed_var<V>::rows, placed_var<V>::row_bytes>> {};
// Gradient g of variable V as the tuple of the pieces a mirrored step
// fetches: itself, or its chunks, chunk k the product of a's columns
// [shard_begin(k), shard_begin(k + 1)) and gr (those rows of g).
template <class V, class G>
auto mirrored_pieces(const G& g) {
    constexpr std::size_t C = mirrored_chunks<V, G>::value;
    if constexpr (C == 1) {
        return std::tuple<G>(g);
    } else {
        constexpr std::size_t m = placed_var<V>::rows;
        return [&]<std::size_t... k>(std::index_sequence<k...>) {
            return std::make_tuple(typeflow::matmul(
                typeflow::slice<0, shard_begin(m, C, k)>(
                    g.template child<0>(), typeflow::sizes<-1, shard_begin(m, C, k + 1) - shard_begin(m, C, k)>),
                g.template child<1>(), typeflow::transpose_a)...);
        }(std::make_index_sequence<C>{});
    }
}
template <std::size_t... C>
constexpr std::array<std::size_t, sizeof...(C)> seq_array(std::index_sequence<C...>) {
    return {C...};
}
}  // namespace detail

/// How a mirrored step groups gradients into all_reduce calls.
struct mirrored_options {
    /// Largest bucket: gradients are summed in buckets of at most this many
    /// bytes (a larger variable is a bucket of its own), filled from the last
    /// variable to the first, roughly the order in which back-propagation
    /// finishes them. Each bucket's all_reduce starts as soon as its last
    /// gradient is computed, while the rest of the backward pass runs. A
    /// dense layer's weight gradient over 256 KiB comes in chunks of rows of
    /// at least 256 KiB (detail::mirrored_chunk_bytes; at most 8, as
    /// min_max_partitioner cuts a variable), each bucketed like a gradient
    /// of its own. Every task must use the same value.
    std::size_t bucket_bytes = std::size_t{256} << 10;
    /// true: the buckets are summed on a thread of the step's own while the
    /// backward pass goes on. false: on the caller's thread after it (no
    /// second thread; what a machine with no core to spare per task wants,
    /// see benchmarks/RESULTS-dist.md). The results are the same bits.
    bool overlap = true;
};

namespace detail {
/// The state a mirrored step shares with its communication thread.
struct mirrored_comm {
    struct bucket {
        bool is_float = true;
        std::size_t begin = 0, end = 0;  // elements of floats or doubles
        std::size_t pending = 0;         // gradient pieces not yet packed in this step
        std::size_t vars = 0;            // gradient pieces (whole gradients or chunks of rows) it holds
    };
    collective* comm = nullptr;
    std::vector<float> floats;
    std::vector<double> doubles;  // [0] the loss times the examples, [1] the examples, [2, 2 + E) the metrics
                                  // times the examples, then gradients
    std::vector<bucket> buckets;  // in the order of their all_reduce; bucket 0 is the loss and example count

    std::mutex mu;
    std::condition_variable cv;
    std::vector<unsigned char> ready;  // per bucket, in this step
    std::uint64_t started = 0, finished = 0;  // steps
    bool cancel = false, stop = false;
    std::exception_ptr failure;
    std::thread thread;

    ~mirrored_comm() {
        {
            std::lock_guard lk(mu);
            stop = true;
        }
        cv.notify_all();
        if (thread.joinable()) thread.join();
    }
    void mark_ready(std::size_t b) {
        {
            std::lock_guard lk(mu);
            ready[b] = 1;
        }
        cv.notify_all();
    }
    void begin_step() {
        if (!thread.joinable()) thread = std::thread([this] { loop(); });
        {
            std::lock_guard lk(mu);
            std::fill(ready.begin(), ready.end(), 0);
            for (bucket& b : buckets) b.pending = b.vars;
            cancel = false;
            failure = nullptr;
            ++started;
        }
        cv.notify_all();
    }
    /// all_reduce of bucket b, then its division by the examples of all tasks
    /// (`total`, which bucket 0 sets).
    void reduce(std::size_t b, double& total) {
        const bucket& k = buckets[b];
        if (k.end == k.begin) return;
        if (k.is_float) {
            comm->all_reduce(std::span<float>(floats.data() + k.begin, k.end - k.begin));
            if (total > 0)
                for (std::size_t i = k.begin; i < k.end; ++i) floats[i] = static_cast<float>(static_cast<double>(floats[i]) / total);
        } else {
            comm->all_reduce(std::span<double>(doubles.data() + k.begin, k.end - k.begin));
            if (b == 0) total = doubles[1];
            else if (total > 0)
                for (std::size_t i = k.begin; i < k.end; ++i) doubles[i] /= total;
        }
    }
    /// Waits for this step's buckets; rethrows what the thread met.
    void end_step(bool cancelled) {
        std::unique_lock lk(mu);
        if (cancelled) cancel = true;
        cv.notify_all();
        cv.wait(lk, [&] { return finished == started; });
        if (failure) std::rethrow_exception(std::exchange(failure, nullptr));
    }

private:
    void loop() {
        std::uint64_t step = 0;
        for (;;) {
            {
                std::unique_lock lk(mu);
                cv.wait(lk, [&] { return stop || started > step; });
                if (stop) return;
                step = started;
            }
            try {
                double total = 0;
                for (std::size_t b = 0; b < buckets.size(); ++b) {
                    {
                        std::unique_lock lk(mu);
                        cv.wait(lk, [&] { return ready[b] || cancel || stop; });
                        if (!ready[b]) break;
                    }
                    reduce(b, total);
                }
            } catch (...) {
                std::lock_guard lk(mu);
                failure = std::current_exception();
            }
            {
                std::lock_guard lk(mu);
                finished = step;
            }
            cv.notify_all();
        }
    }
};
}  // namespace detail

/// One training step of a mirrored strategy over the variables Vs...
/// (see mirrored_strategy::minimize), reporting the scalar metrics in the
/// std::tuple Metrics; Chunks (a std::index_sequence) holds the chunks of
/// rows each variable's gradient comes in.
template <class Loss, class Metrics, class Fetch, class Apply, class Chunks, class... Vs>
class mirrored_step {
    static constexpr std::size_t N = sizeof...(Vs);
    static constexpr std::size_t E = std::tuple_size_v<Metrics>;
    static constexpr std::array<std::size_t, N> chunks_ = detail::seq_array(Chunks{});
    static constexpr std::size_t P = [] {  // the gradient pieces fetched
        std::size_t p = 0;
        for (const std::size_t c : chunks_) p += c;
        return p;
    }();

public:
    using loss_type = value_type_t<Loss>;

    mirrored_step(collective& comm, Fetch fetch, Apply apply, const mirrored_options& o, const Vs&... vars)
        : fetch_(std::move(fetch)), apply_(std::move(apply)), vars_(vars...), overlap_(o.overlap),
          st_(std::make_unique<detail::mirrored_comm>()) {
        st_->comm = &comm;
        plan_buckets(o.bucket_bytes);
    }

    /// Runs one step on session s with this task's feeds: computes the loss
    /// and the gradients of this task's examples (the first feed's leading
    /// extent counts them), averages both over every task's examples (tasks
    /// may hold different numbers, even none), and applies the averaged
    /// gradients. The gradients are summed bucket by bucket on a thread of the
    /// step's own, each bucket as soon as back-propagation has finished it.
    /// Returns the loss over the whole global batch, the same on every task.
    /// Every task must call it in the same order; a task that fails or
    /// disagrees fails the others with a dist::error.
    template <class... Feeds>
    loss_type run(session& s, const Feeds&... feeds) {
        const double count = static_cast<double>(detail::example_count(feeds...));
        detail::mirrored_comm& st = *st_;
        if (!overlap_) {
            for (auto& b : st.buckets) b.pending = b.vars;
            if (count > 0) {
                s.run_streaming(fetch_, [&](std::size_t k, const void* data) { pack_one(k, data, count); }, feeds...);
            } else {
                std::fill(st.floats.begin(), st.floats.end(), 0.0f);
                std::fill(st.doubles.begin(), st.doubles.end(), 0.0);
            }
            double total = 0;
            for (std::size_t b = 0; b < st.buckets.size(); ++b) st.reduce(b, total);
            return apply(s);
        }
        st.begin_step();
        try {
            if (count > 0) {
                // fetch 0 is the loss, 1..E the metrics, then the gradients' pieces from the last variable's
                s.run_streaming(fetch_, [&](std::size_t k, const void* data) { on_ready(k, data, count); }, feeds...);
            } else {  // zeros, not the NaN of a mean over no examples
                std::fill(st.floats.begin(), st.floats.end(), 0.0f);
                std::fill(st.doubles.begin(), st.doubles.end(), 0.0);
                for (std::size_t b = 0; b < st.buckets.size(); ++b) st.mark_ready(b);
            }
        } catch (...) {
            st.end_step(true);
            throw;
        }
        st.end_step(false);
        return apply(s);
    }

    /// The metrics of the last run (minimize_reporting's), each its mean over
    /// every task's examples: the same on every task.
    const std::array<double, E>& metrics() const noexcept { return metrics_; }
    /// The examples of the last run, summed over every task.
    double examples() const noexcept { return st_->doubles[1]; }

    /// True when `mine` is true on any task (one small all_reduce; every task
    /// must call it): how tasks whose data ran out keep stepping, with no
    /// examples, until every task's has (fit() calls it before each step).
    bool any_task(bool mine) const {
        std::int32_t v = mine ? 1 : 0;
        st_->comm->all_reduce(std::span<std::int32_t>(&v, 1), reduce_op::max);
        return v != 0;
    }

    /// Sums v over every task, in place (every task must call it): how
    /// evaluate() turns each task's sums into the global ones.
    void sum_over_tasks(std::span<double> v) const { st_->comm->all_reduce(v, reduce_op::sum); }

    /// Copies the values of every variable this step trains from task `root`
    /// to every task (start training from one set of initial values).
    void broadcast_variables(int root = 0) const {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (broadcast_one(typeflow::detail::get_child<K>(vars_), root), ...);
        }(std::index_sequence_for<Vs...>{});
    }

    /// The all_reduce calls of one step: the loss and example count, then the
    /// gradient buckets.
    std::size_t buckets() const noexcept { return st_->buckets.size(); }
    /// The update every task runs: its variables and optimizer slots are the
    /// state a checkpoint saves (io::saver(step.apply_op())).
    const Apply& apply_op() const noexcept { return apply_; }

private:
    template <class V>
    static constexpr bool is_float = std::is_same_v<value_type_t<V>, float>;

    // variables from the last to the first, a chunked gradient's rows in
    // order, each dtype's buckets cut at `cap` bytes
    void plan_buckets(std::size_t cap) {
        detail::mirrored_comm& st = *st_;
        constexpr bool floats[N] = {is_float<Vs>...};
        constexpr std::size_t sizes[N] = {shape_t<Vs>::numel...};
        constexpr std::size_t rows[N] = {detail::placed_var<Vs>::rows...};
        st.buckets.push_back({false, 0, 2 + E, 1 + E, 1 + E});
        std::size_t nf = 0, nd = 2 + E;
        std::size_t open[2] = {~std::size_t{0}, ~std::size_t{0}};  // the bucket being filled, per dtype
        std::size_t p = 0;
        for (std::size_t j = N; j-- > 0;) {
            const bool f = floats[j];
            const std::size_t elem = f ? sizeof(float) : sizeof(double);
            std::size_t& next = f ? nf : nd;
            at_[j] = next;
            const std::size_t C = chunks_[j];
            for (std::size_t c = 0; c < C; ++c, ++p) {  // its rows as detail::mirrored_pieces cuts them
                const auto r = static_cast<std::size_t>(detail::shard_begin(rows[j], C, c + 1) - detail::shard_begin(rows[j], C, c));
                const std::size_t n = C == 1 ? sizes[j] : r * (sizes[j] / rows[j]);
                std::size_t& o = open[f];
                if (o == ~std::size_t{0} || (st.buckets[o].end - st.buckets[o].begin + n) * elem > cap) {
                    o = st.buckets.size();
                    st.buckets.push_back({f, next, next, 0, 0});
                }
                piece_var_[p] = j;
                piece_at_[p] = next;
                piece_n_[p] = n;
                next += n;
                st.buckets[o].end = next;
                ++st.buckets[o].vars;
                bucket_of_[p] = o;
            }
        }
        st.floats.assign(nf, 0.0f);
        st.doubles.assign(nd, 0.0);
        st.ready.assign(st.buckets.size(), 0);
    }

    // the update from the averaged gradients; the loss over every task's examples
    loss_type apply(session& s) {
        const detail::mirrored_comm& st = *st_;
        const double total = st.doubles[1];
        if (!(total > 0)) throw error("mirrored: no task fed any example in this step");
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            s.run(apply_, grad_feed<Vs>(at_[K])...);
        }(std::index_sequence_for<Vs...>{});
        for (std::size_t i = 0; i < E; ++i) metrics_[i] = st.doubles[2 + i] / total;
        return static_cast<loss_type>(st.doubles[0] / total);
    }

    // fetch k of this task's run (0 the loss, 1..E the metrics, then the
    // gradients' pieces from the last variable's), times its examples, into
    // its bucket; returns the bucket when that was its last value
    std::size_t pack_one(std::size_t k, const void* data, double count) {
        detail::mirrored_comm& st = *st_;
        if (k <= E) {
            if (k == 0) {
                st.doubles[0] = static_cast<double>(*static_cast<const loss_type*>(data)) * count;
                st.doubles[1] = count;
            } else {
                st.doubles[1 + k] = metric_value(k - 1, data, std::make_index_sequence<E>{}) * count;
            }
            return --st.buckets[0].pending == 0 ? 0 : ~std::size_t{0};
        }
        const std::size_t p = k - E - 1;
        pack_dispatch(piece_var_[p], data, piece_n_[p], piece_at_[p], count, std::index_sequence_for<Vs...>{});
        return --st.buckets[bucket_of_[p]].pending == 0 ? bucket_of_[p] : ~std::size_t{0};
    }
    void on_ready(std::size_t k, const void* data, double count) {
        if (const std::size_t b = pack_one(k, data, count); b != ~std::size_t{0}) st_->mark_ready(b);
    }

    template <std::size_t... I>
    static double metric_value(std::size_t i, const void* data, std::index_sequence<I...>) {
        double v = 0;
        ((I == i ? (v = static_cast<double>(*static_cast<const value_type_t<std::tuple_element_t<I, Metrics>>*>(data)), 0) : 0),
         ...);
        return v;
    }
    template <std::size_t... K>
    void pack_dispatch(std::size_t j, const void* data, std::size_t n, std::size_t at, double count, std::index_sequence<K...>) {
        ((K == j ? pack<value_type_t<Vs>>(data, n, at, count) : void()), ...);
    }
    template <class T>
    void pack(const void* data, std::size_t n, std::size_t at, double count) {
        const T* g = static_cast<const T*>(data);
        if constexpr (std::is_same_v<T, float>) {
            float* out = st_->floats.data() + at;
            for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<double>(g[i]) * count);
        } else {
            double* out = st_->doubles.data() + at;
            for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(g[i]) * count;
        }
    }
    template <class V>
    feed_entry<detail::mirrored_grad_t<V>> grad_feed(std::size_t at) const {
        using T = value_type_t<V>;
        const T* p;
        if constexpr (std::is_same_v<T, float>) p = st_->floats.data() + at;
        else p = st_->doubles.data() + at;
        return feed(detail::mirrored_grad_t<V>{}, tensor_view<const T>{p, shape_t<V>::value});
    }
    template <class V>
    void broadcast_one(const V& v, int root) const {
        tensor<value_type_t<V>>& t = const_cast<V&>(v).value();
        st_->comm->broadcast(std::span<value_type_t<V>>(t.data(), static_cast<std::size_t>(t.size())), root);
    }

    Fetch fetch_;
    Apply apply_;
    typeflow::detail::children_of<Vs...> vars_;
    std::size_t at_[N] = {};         // each gradient's first element in its dtype's buffer
    std::size_t piece_var_[P] = {};  // each fetched piece's variable,
    std::size_t piece_at_[P] = {};   // its first element in its dtype's buffer,
    std::size_t piece_n_[P] = {};    // its elements
    std::size_t bucket_of_[P] = {};  // and its bucket
    bool overlap_ = true;
    std::array<double, E> metrics_{};
    std::unique_ptr<detail::mirrored_comm> st_;
};

/// Synchronous data parallelism over the tasks of `comm` with optimizer Opt
/// (see the top of this header). Variables of float and double dtype.
template <class Opt>
class mirrored_strategy {
public:
    mirrored_strategy(collective& comm, Opt opt, mirrored_options o = {})
        : comm_(&comm), opt_(std::move(opt)), options_(o) {}

    /// The training step of `loss` over `vars` (every trainable variable the
    /// loss reaches when none are given): a mirrored_step to run.
    template <expression L, variable_c... Vs>
    auto minimize(const L& loss, const Vs&... vars) const {
        return make_step(loss, std::tuple<>{}, opt_.compute_gradients(loss, vars...));
    }
    /// The same, also averaging the scalar expressions in the tuple `metrics`
    /// (accuracy, say) over every task's examples in the same all_reduce as
    /// the loss: the step's metrics() after each run.
    template <expression L, class... M, variable_c... Vs>
    auto minimize_reporting(const L& loss, const std::tuple<M...>& metrics, const Vs&... vars) const {
        static_assert(((shape_t<M>::numel == 1) && ...), "typeflow: mirrored: every metric must be a scalar");
        return make_step(loss, metrics, opt_.compute_gradients(loss, vars...));
    }

    const Opt& optimizer() const noexcept { return opt_; }

private:
    template <class L, class M, class... P>
    auto make_step(const L& loss, const M& metrics, const train::grads_and_vars<P...>& gv) const {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            using Vars = meta::list<meta::remove_cvref_t<decltype(gv.template get<K>().var)>...>;
            return make_step_of(loss, metrics, gv, Vars{}, std::index_sequence<K...>{});
        }(std::index_sequence_for<P...>{});
    }
    template <class L, class M, class... P, class... Vs, std::size_t... K>
    auto make_step_of(const L& loss, const M& metrics, const train::grads_and_vars<P...>& gv, meta::list<Vs...>,
                      std::index_sequence<K...>) const {
        // (variables of other dtypes are refused by the optimizer's own check first)
        static_assert(shape_t<L>::numel == 1, "typeflow: mirrored: the loss must be a scalar");
        // the gradients from the last variable to the first, a chunked one's
        // rows in order: the node order follows the fetch list, so the last
        // layers' finish first
        auto pieces = std::tuple_cat(detail::mirrored_pieces<meta::at_t<sizeof...(K) - 1 - K, Vs...>>(
            gv.template get<sizeof...(K) - 1 - K>().grad)...);
        auto fetch_all = std::apply(
            [&](const auto&... m) { return std::apply([&](const auto&... g) { return fetch(loss, m..., g...); }, pieces); },
            metrics);
        using chunks =
            std::index_sequence<detail::mirrored_chunks<Vs, meta::remove_cvref_t<decltype(gv.template get<K>().grad)>>::value...>;
        auto apply = opt_.apply_gradients(train::grads_and_vars<train::grad_and_var<detail::mirrored_grad_t<Vs>, Vs>...>(
            train::grad_and_var<detail::mirrored_grad_t<Vs>, Vs>{detail::mirrored_grad_t<Vs>{}, gv.template get<K>().var}...));
        return mirrored_step<L, M, decltype(fetch_all), decltype(apply), chunks, Vs...>(
            *comm_, std::move(fetch_all), std::move(apply), options_, gv.template get<K>().var...);
    }

    collective* comm_;
    Opt opt_;
    mirrored_options options_;
};

/// mirrored(comm, optimizer[, options]): see mirrored_strategy.
template <class Opt>
    requires requires { typename Opt::learning_rate_type; }
mirrored_strategy<Opt> mirrored(collective& comm, Opt opt, mirrored_options o = {}) {
    return mirrored_strategy<Opt>(comm, std::move(opt), o);
}

/// A Keras-style optimizer (tf::optimizers::adam{}, ...) trained with the
/// mirrored strategy: what compile() takes to make fit() data-parallel.
///
///     auto model = net.compile(loss, tfd::mirrored(comm, tf::optimizers::adam{}), tf::metrics::accuracy{});
///     model.fit(train.shard(comm.size(), comm.rank()).batch(64 / comm.size()), {.epochs = 2});
///
/// Each task feeds its own examples; loss and metrics are averaged over every
/// task's examples and the update is the same on every task. The first
/// training step copies the chief's weights to every task.
template <class Opt>
struct mirrored_optimizer {
    using strategy_tag = void;
    collective* comm;
    Opt optimizer;
    mirrored_options options;
    double learning_rate;  // the wrapped optimizer's: compile() reads it
    /// The strategy over the optimizer with learning rate `lr`.
    template <class LR>
    auto make(const LR& lr) const {
        return mirrored_strategy<decltype(optimizer.make(lr))>(*comm, optimizer.make(lr), options);
    }
};
/// mirrored(comm, keras_optimizer[, options]): see mirrored_optimizer.
template <class Opt>
    requires(!requires { typename Opt::learning_rate_type; } && requires(const Opt& o) { o.learning_rate; })
mirrored_optimizer<Opt> mirrored(collective& comm, Opt opt, mirrored_options o = {}) {
    const double lr = static_cast<double>(opt.learning_rate);
    return mirrored_optimizer<Opt>{&comm, std::move(opt), o, lr};
}

}  // namespace typeflow::dist
