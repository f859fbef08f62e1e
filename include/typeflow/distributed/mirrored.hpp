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
#include <cstddef>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/fixed_string.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/distributed/collective.hpp>
#include <typeflow/distributed/error.hpp>
#include <typeflow/expr/leaves.hpp>
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

/// The examples this task's run covers: the leading extent of the first feed
/// (1 for a scalar feed or none).
inline index_t example_count() noexcept { return 1; }
template <class F0, class... F>
index_t example_count(const F0& f, const F&...) noexcept {
    return f.data.dims.rank ? f.data.dims.d[0] : 1;
}
}  // namespace detail

/// One training step of a mirrored strategy over the variables Vs...
/// (see mirrored_strategy::minimize).
template <class Loss, class Fetch, class Apply, class... Vs>
class mirrored_step {
public:
    using loss_type = value_type_t<Loss>;

    mirrored_step(collective& comm, Fetch fetch, Apply apply, const Vs&... vars)
        : comm_(&comm), fetch_(std::move(fetch)), apply_(std::move(apply)), vars_(vars...) {}

    /// Runs one step on session s with this task's feeds: computes the loss
    /// and the gradients of this task's examples (the first feed's leading
    /// extent counts them), averages both over every task's examples (tasks
    /// may hold different numbers, even none), and applies the averaged
    /// gradients. Returns the loss over the whole global batch, the same on
    /// every task. Every task must call it in the same order; a task that
    /// fails or disagrees fails the others with a dist::error.
    template <class... Feeds>
    loss_type run(session& s, const Feeds&... feeds) {
        const double count = static_cast<double>(detail::example_count(feeds...));
        // one buffer per dtype: every float gradient, then every double one and
        // the loss and example count (as sums weighted by the examples; a task
        // without examples adds zeros, not the NaN of a mean over none)
        std::size_t nf = 0, nd = 2;
        (((std::is_same_v<value_type_t<Vs>, float> ? nf : nd) += shape_t<Vs>::numel), ...);
        floats_.assign(nf, 0.0f);
        doubles_.assign(nd, 0.0);
        if (count > 0) {
            auto res = s.run(fetch_, feeds...);
            std::size_t of = 0, od = 2;
            [&]<std::size_t... K>(std::index_sequence<K...>) {
                (pack(std::get<K + 1>(res), count, of, od), ...);
            }(std::index_sequence_for<Vs...>{});
            doubles_[0] = static_cast<double>(std::get<0>(res)[0]) * count;
            doubles_[1] = count;
        }
        if (nf) comm_->all_reduce(std::span<float>(floats_));
        comm_->all_reduce(std::span<double>(doubles_));
        const double total = doubles_[1];
        if (!(total > 0)) throw error("mirrored: no task fed any example in this step");
        for (float& g : floats_) g = static_cast<float>(static_cast<double>(g) / total);
        for (std::size_t i = 2; i < doubles_.size(); ++i) doubles_[i] /= total;
        // the update, from the averaged gradients (each variable's offset
        // first: the arguments of one call are evaluated in no fixed order)
        std::size_t at[sizeof...(Vs)];
        std::size_t of = 0, od = 2, k = 0;
        ((at[k++] = std::is_same_v<value_type_t<Vs>, float> ? std::exchange(of, of + shape_t<Vs>::numel)
                                                            : std::exchange(od, od + shape_t<Vs>::numel)),
         ...);
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            s.run(apply_, grad_feed<Vs>(at[K])...);
        }(std::index_sequence_for<Vs...>{});
        return static_cast<loss_type>(doubles_[0] / total);
    }

    /// Copies the values of every variable this step trains from task `root`
    /// to every task (start training from one set of initial values).
    void broadcast_variables(int root = 0) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (broadcast_one(typeflow::detail::get_child<K>(vars_), root), ...);
        }(std::index_sequence_for<Vs...>{});
    }

private:
    template <class T>
    void pack(const tensor<T>& g, double count, std::size_t& of, std::size_t& od) {
        if constexpr (std::is_same_v<T, float>) {
            for (index_t i = 0; i < g.size(); ++i) floats_[of++] = static_cast<float>(static_cast<double>(g[i]) * count);
        } else {
            for (index_t i = 0; i < g.size(); ++i) doubles_[od++] = static_cast<double>(g[i]) * count;
        }
    }
    template <class V>
    feed_entry<detail::mirrored_grad_t<V>> grad_feed(std::size_t at) const {
        using T = value_type_t<V>;
        const T* p;
        if constexpr (std::is_same_v<T, float>) p = floats_.data() + at;
        else p = doubles_.data() + at;
        return feed(detail::mirrored_grad_t<V>{}, tensor_view<const T>{p, shape_t<V>::value});
    }
    template <class V>
    void broadcast_one(const V& v, int root) {
        tensor<value_type_t<V>>& t = const_cast<V&>(v).value();
        comm_->broadcast(std::span<value_type_t<V>>(t.data(), static_cast<std::size_t>(t.size())), root);
    }

    collective* comm_;
    Fetch fetch_;
    Apply apply_;
    typeflow::detail::children_of<Vs...> vars_;
    std::vector<float> floats_;
    std::vector<double> doubles_;
};

/// Synchronous data parallelism over the tasks of `comm` with optimizer Opt
/// (see the top of this header). Variables of float and double dtype.
template <class Opt>
class mirrored_strategy {
public:
    mirrored_strategy(collective& comm, Opt opt) : comm_(&comm), opt_(std::move(opt)) {}

    /// The training step of `loss` over `vars` (every trainable variable the
    /// loss reaches when none are given): a mirrored_step to run.
    template <expression L, variable_c... Vs>
    auto minimize(const L& loss, const Vs&... vars) const {
        return make_step(loss, opt_.compute_gradients(loss, vars...));
    }

    const Opt& optimizer() const noexcept { return opt_; }

private:
    template <class L, class... P>
    auto make_step(const L& loss, const train::grads_and_vars<P...>& gv) const {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            using Vars = meta::list<std::remove_cvref_t<decltype(gv.template get<K>().var)>...>;
            return make_step_of(loss, gv, Vars{}, std::index_sequence<K...>{});
        }(std::index_sequence_for<P...>{});
    }
    template <class L, class... P, class... Vs, std::size_t... K>
    auto make_step_of(const L& loss, const train::grads_and_vars<P...>& gv, meta::list<Vs...>,
                      std::index_sequence<K...>) const {
        static_assert(((std::is_same_v<value_type_t<Vs>, float> || std::is_same_v<value_type_t<Vs>, double>) && ...),
                      "typeflow: mirrored: the variables to train must be float or double");
        static_assert(shape_t<L>::numel == 1, "typeflow: mirrored: the loss must be a scalar");
        auto fetch_all = fetch(loss, gv.template get<K>().grad...);
        auto apply = opt_.apply_gradients(train::grads_and_vars<train::grad_and_var<detail::mirrored_grad_t<Vs>, Vs>...>(
            train::grad_and_var<detail::mirrored_grad_t<Vs>, Vs>{detail::mirrored_grad_t<Vs>{}, gv.template get<K>().var}...));
        return mirrored_step<L, decltype(fetch_all), decltype(apply), Vs...>(*comm_, std::move(fetch_all), std::move(apply),
                                                                           gv.template get<K>().var...);
    }

    collective* comm_;
    Opt opt_;
};

/// mirrored(comm, optimizer): see mirrored_strategy.
template <class Opt>
mirrored_strategy<Opt> mirrored(collective& comm, Opt opt) {
    return mirrored_strategy<Opt>(comm, std::move(opt));
}

}  // namespace typeflow::dist
