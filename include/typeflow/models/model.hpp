// typeflow/models/model.hpp — a compiled model (Keras' model.compile): the
// model with a loss, an optimizer and metrics, its training and inference
// graphs built once at compile time, and fit / evaluate / predict over
// datasets, with callbacks, checkpoints and a progress bar.
//
//   auto model = cnn{}.compile(tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>{},
//                              tf::optimizers::adam{}, tf::metrics::accuracy{});
//   model.fit(train, {.epochs = 2, .callbacks = {tf::models::tensorboard("logs")}});
//   auto results = model.evaluate(test);          // results.at("accuracy")
//
// A dataset is anything a range-for walks whose elements hold (inputs,
// labels) for std::get<0> / std::get<1>: tf::data pipelines, or a
// std::vector<std::pair<tensor, tensor>>. Inputs are [batch, extents...] of
// the model's dtype; labels are what the loss takes (int32 [batch] for the
// sparse losses).
#pragma once
#include <array>
#include <optional>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <typeflow/core/tensor.hpp>
#include <typeflow/expr/leaves.hpp>
#include <typeflow/io/saver.hpp>
#include <typeflow/models/callbacks.hpp>
#include <typeflow/models/losses.hpp>
#include <typeflow/models/optimizers.hpp>
#include <typeflow/models/functional.hpp>
#include <typeflow/models/sequential.hpp>
#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/session.hpp>

namespace typeflow::models {

/// What fit() returns: every epoch's logs, by name (Keras' History.history).
class history {
public:
    /// Adds an epoch's logs (a name new this epoch gets NaN for the epochs before).
    TYPEFLOW_DECL void append(const logs& l);
    /// The values of `name`, one per epoch; a tf::error when none was logged.
    TYPEFLOW_DECL const std::vector<double>& operator[](const std::string& name) const;
    /// Epochs run.
    int epochs() const noexcept { return epochs_; }
    const std::vector<std::pair<std::string, std::vector<double>>>& values() const noexcept { return values_; }

private:
    std::vector<std::pair<std::string, std::vector<double>>> values_;
    int epochs_ = 0;
};

namespace detail {
/// Batches per pass of ds, or -1 when it does not say.
template <class DS>
std::int64_t steps_of(const DS& ds) {
    if constexpr (requires { ds.cardinality(); }) return static_cast<std::int64_t>(ds.cardinality());
    else if constexpr (requires { ds.size(); }) return static_cast<std::int64_t>(ds.size());
    else return -1;
}
/// Running means of the loss and metrics over an epoch, weighted by batch size.
struct running_means {
    std::vector<double> sum;
    double count = 0;
    TYPEFLOW_DECL void add(const std::vector<double>& v, double n);
    TYPEFLOW_DECL double mean(std::size_t i) const;
};

/// What fit()'s loop (fit_loop, compiled once) asks of a compiled model and
/// its data: one small class per dataset type.
class fit_source {
public:
    /// Starts a pass over the training data.
    virtual void begin_epoch() = 0;
    /// Moves to the next batch; false when the pass is over (with a
    /// strategy: over on every task).
    virtual bool next() = 0;
    /// Trains on that batch: its loss and metrics into `values`, the examples
    /// it had (every task's, with a strategy) into `examples`.
    virtual void step(std::vector<double>& values, double& examples) = 0;
    /// The loss and metrics on the validation data into `l`; false without validation data.
    virtual bool validate(logs& l) = 0;

protected:
    ~fit_source() = default;
};
/// A copy of every tensor of a saver, and putting it back (into the
/// variables' own storage): EarlyStopping's restore_best_weights.
TYPEFLOW_DECL std::shared_ptr<void> snapshot(const io::saver& s);
TYPEFLOW_DECL void restore(const io::saver& s, const std::shared_ptr<void>& snapshot);
/// fit()'s epochs and batches, with the progress bar and the callbacks.
TYPEFLOW_DECL history fit_loop(model_handle& m, const std::vector<std::string>& names, std::int64_t steps,
                               fit_options o, fit_source& src);
}  // namespace detail

/// One loss per output of a functional model, with weights (Keras'
/// loss={...}, loss_weights={...}): the loss trained is the weighted sum.
template <class... L>
struct per_output_t {
    std::array<double, sizeof...(L)> weights;
    /// The same losses with these weights.
    per_output_t weighted(std::array<double, sizeof...(L)> w) const { return {w}; }
};
/// per_output(loss_0, loss_1, ...): loss k for output k, each of weight 1.
template <class... L>
per_output_t<L...> per_output(L...) {
    per_output_t<L...> p;
    p.weights.fill(1.0);
    return p;
}

namespace detail {
template <class Loss, std::size_t M>
struct loss_list {  // one loss for every output
    template <std::size_t K>
    using at = Loss;
    static std::array<double, M> weights(const Loss&) {
        std::array<double, M> w;
        w.fill(1.0);
        return w;
    }
};
template <class... L, std::size_t M>
struct loss_list<per_output_t<L...>, M> {
    static_assert(sizeof...(L) == M, "typeflow: compile: per_output gives a number of losses other than the model's outputs");
    template <std::size_t K>
    using at = meta::at_t<K, L...>;
    static std::array<double, M> weights(const per_output_t<L...>& p) { return p.weights; }
};
template <class T>
concept tuple_like = requires { std::tuple_size<meta::remove_cvref_t<T>>::value; };
template <class T>
inline constexpr bool is_tensor_v = false;
template <class T>
inline constexpr bool is_tensor_v<tensor<T>> = true;
// Item I of a dataset element's inputs or labels: a tensor, or a tuple of them.
template <std::size_t I, class X>
const auto& item(const X& x) {
    if constexpr (tuple_like<X>) return std::get<I>(x);
    else return x;
}
/// A compiled model's graphs: the training loss, its step, its per-output
/// losses, metrics (graph nodes only with a strategy) and outputs, and the
/// same in inference mode.
template <class Total, class Step, class Parts, class Metrics, class EvalOutputs, class EvalTotal, class EvalParts,
          class EvalMetrics, class Outputs>
struct graph_set {
    Total total;
    Step step;
    Parts parts;
    Metrics metrics;
    EvalOutputs eval_outputs;
    EvalTotal eval_total;
    EvalParts eval_parts;
    EvalMetrics eval_metrics;
    Outputs outputs;
};
/// An optimizer that trains through a distribution strategy
/// (dist::mirrored(comm, optimizer)): its step is run with the session, not
/// fetched, and reports the loss and metrics over every task's examples.
template <class Opt>
concept strategy_optimizer = requires { typename Opt::strategy_tag; };
// The labels' shape for output Out of loss L (a static member first: GCC 12
// crashes on shape_from_dims<L::label_dims(...)> in a dependent context).
template <class L, class Out>
struct label_shape {
    static constexpr dims value = L::label_dims(shape_t<Out>::value);
    using type = shape_from_dims<value>;
};
// "labels" for a model of one output, else "labels_<K>".
template <std::size_t K, std::size_t M>
constexpr auto label_name() {
    if constexpr (M == 1) return fixed_string("labels");
    else return concat<"labels_", layers::detail::digits<K>()>();
}
}  // namespace detail

/// A model with its loss, optimizer and metrics (see the file comment).
/// The model is a sequential or a functional model; its copies share the
/// variables. A compiled model is move-only (it owns its session).
template <class Model, class Loss, class Opt, class... Metrics>
class compiled_model : public model_handle {
public:
    using model_type = Model;
    using input_placeholders = meta::remove_cvref_t<decltype(std::declval<const Model&>().input_placeholders())>;
    using outputs_type = decltype(std::declval<const Model&>().outputs(training));
    /// The dtype and device of the (first) output: the learning rate's and the loss's.
    using value_type = value_type_t<std::tuple_element_t<0, outputs_type>>;
    using device = device_t<std::tuple_element_t<0, outputs_type>>;
    static constexpr std::size_t input_count = std::tuple_size_v<input_placeholders>;
    static constexpr std::size_t output_count = std::tuple_size_v<outputs_type>;
    using losses = detail::loss_list<Loss, output_count>;

private:
    template <std::size_t K>
    using output_t = std::tuple_element_t<K, outputs_type>;
    template <std::size_t K>
    using loss_t = typename losses::template at<K>;
    template <std::size_t K>
    using label_placeholder_t =
        placeholder<detail::label_name<K, output_count>(),
                    typename loss_t<K>::template label_type<value_type_t<output_t<K>>>,
                    typename detail::label_shape<loss_t<K>, output_t<K>>::type, device_t<output_t<K>>>;
    template <class Seq>
    struct labels_of;
    template <std::size_t... K>
    struct labels_of<std::index_sequence<K...>> {
        using type = std::tuple<label_placeholder_t<K>...>;
    };
    static constexpr auto outs = std::make_index_sequence<output_count>{};
    static constexpr auto ins = std::make_index_sequence<input_count>{};
    // The metrics are graph nodes only where a distribution strategy reduces
    // them over the tasks; otherwise they come from the fetched outputs
    // (metrics' batch_mean), which costs no graph, plan or kernel of their own.
    static constexpr bool graph_metrics = detail::strategy_optimizer<Opt>;
    // A sequential model whose layers are the same in both modes (no dropout or
    // batch normalisation: its layers tell the modes apart in their types) is
    // evaluated by the training step's plan, run for its losses and outputs alone.
    static constexpr bool eval_by_training_plan =
        !graph_metrics && detail::is_sequential_v<Model> &&
        std::is_same_v<outputs_type, decltype(std::declval<const Model&>().outputs(inference))>;

public:
    /// The label placeholders: "labels" for a model of one output, else
    /// "labels_0", "labels_1", ...
    using label_placeholders = typename labels_of<std::make_index_sequence<output_count>>::type;
    /// The optimizer's learning rate, a variable that checkpoints keep.
    using learning_rate_variable = non_trainable_variable<"learning_rate", value_type, shape<>, device>;

    explicit compiled_model(Model m, Loss loss = {}, Opt o = {}, session_options so = {})
        : model_(std::move(m)), lr_(init::constant{o.learning_rate}), opt_(o),
          g_(build(model_, y_, lr_, opt_, losses::weights(loss))), session_(std::make_unique<session>(so)) {
        names_.push_back("loss");
        std::vector<std::string> out_names;
        if constexpr (output_count > 1) {
            for (auto n : model_.output_names()) out_names.emplace_back(n);
            for (auto& n : out_names) names_.push_back(n + "_loss");
        }
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            const auto add = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) {
                const auto one = [&]<class Mt>(Mt*) {
                    if constexpr (Mt::template applies_to<loss_t<k>>)
                        names_.push_back(output_count > 1 ? out_names[k] + "_" + std::string(Mt::name) : std::string(Mt::name));
                };
                (one(static_cast<Metrics*>(nullptr)), ...);
            };
            (add(std::integral_constant<std::size_t, K>{}), ...);
        }(outs);
    }

    /// The model (its layers and variables).
    const Model& model() const noexcept { return model_; }
    /// The placeholders the graphs read.
    const input_placeholders& inputs() const noexcept { return model_.input_placeholders(); }
    const label_placeholders& labels() const noexcept { return y_; }
    /// The training graph's total loss, its update op, and the inference outputs (a tuple).
    const auto& loss() const noexcept { return g_.total; }
    /// (With a strategy's optimizer, the strategy's step.)
    const auto& train_op() const noexcept { return g_.step; }
    const auto& outputs() const noexcept { return g_.eval_outputs; }
    /// The names of the values train_on_batch, evaluate and fit log, in order:
    /// "loss", per-output losses ("<output>_loss") when there are several
    /// outputs, then each output's metrics ("accuracy", or "<output>_accuracy").
    const std::vector<std::string>& log_names() const noexcept { return names_; }
    /// Runs the graphs on n threads from now on (0: every hardware thread).
    void set_threads(int n) { session_ = std::make_unique<session>(session_options{.threads = n}); }

    /// One training step on a batch (inputs: a tensor, or a tuple with one
    /// tensor per input; labels likewise per output); returns its loss and metrics.
    template <class X, class Y>
    logs train_on_batch(const X& x, const Y& y) {
        logs l;
        name_values(l, train_step(x, y), "");
        return l;
    }
    /// Loss and metrics of a batch in inference mode (no update).
    template <class X, class Y>
    logs test_on_batch(const X& x, const Y& y) {
        logs l;
        name_values(l, test_step(x, y), "");
        return l;
    }

    /// Trains on ds for o.epochs epochs (see fit_options), calling the callbacks.
    template <class DS>
    history fit(DS&& ds, fit_options o = {}) {
        return fit_impl(ds, static_cast<int*>(nullptr), std::move(o));
    }
    /// The same, evaluating on `validation` after every epoch ("val_loss", "val_<metric>").
    template <class DS, class VDS>
    history fit(DS&& ds, VDS&& validation, fit_options o = {}) {
        return fit_impl(ds, &validation, std::move(o));
    }

    /// The mean loss and metrics over ds in inference mode. With a
    /// strategy's optimizer, over every task's ds (each task passes its own;
    /// every task must call it).
    template <class DS>
    logs evaluate(DS&& ds, const callback_list& callbacks = {}) {
        logs l;
        for (auto& c : callbacks) c->model = this, c->on_test_begin(l);
        detail::running_means r;
        r.sum.assign(names_.size(), 0.0);
        for (auto&& e : ds) r.add(test_step(std::get<0>(e), std::get<1>(e)), batch_of(std::get<0>(e)));
        if constexpr (detail::strategy_optimizer<Opt>) {  // the count rides with the sums
            r.sum.push_back(r.count);
            g_.step.sum_over_tasks(r.sum);
            r.count = r.sum.back();
            r.sum.pop_back();
        }
        for (std::size_t i = 0; i < names_.size(); ++i) l.set(names_[i], r.mean(i));
        for (auto& c : callbacks) c->on_test_end(l), c->model = nullptr;
        return l;
    }

    /// The model's output for a batch of inputs (inference mode): a tensor,
    /// or a tuple of tensors for a model of several outputs.
    template <class X>
        requires(detail::is_tensor_v<X> || detail::tuple_like<X>)
    auto predict(const X& x) {
        auto r = run_with_inputs(x, std::apply([](const auto&... o) { return fetch(o...); }, outputs()));
        if constexpr (output_count == 1) return std::move(std::get<0>(r));
        else return r;
    }
    /// The outputs for every element of ds (its inputs, or (inputs, labels)),
    /// stacked along the batch axis.
    template <class DS>
        requires(!detail::is_tensor_v<meta::remove_cvref_t<DS>> && !detail::tuple_like<DS>)
    auto predict(DS&& ds) {
        std::vector<tensor<value_type_t<output_t<0>>>> parts;
        index_t rows = 0;
        for (auto&& e : ds) {
            if constexpr (output_count == 1) parts.push_back(predict(input_of(e)));
            else parts.push_back(std::get<0>(predict(input_of(e))));
            rows += parts.back().dims()[0];
        }
        dims d = shape_t<output_t<0>>::value;
        d.d[0] = rows;
        tensor<value_type_t<output_t<0>>> out(d);
        auto* p = out.data();
        for (auto& t : parts) p = std::copy(t.data(), t.data() + t.size(), p);
        return out;
    }

    /// Writes the model's weights (not the optimizer's state) to one file.
    void save_weights(const std::string& path) const { weights_saver().write(path); }
    /// Loads the model's weights from a file of save_weights or a checkpoint
    /// of save_checkpoint / model_checkpoint (whose optimizer state is left
    /// aside). Every weight must be there; on any error nothing changes.
    void load_weights(const std::string& path) { weights_saver().restore(path, io::restore_options{.allow_unused = true}); }
    /// Restores weights, optimizer state and learning rate from a checkpoint
    /// of save_checkpoint (to resume training).
    void load_checkpoint(const std::string& path) { checkpoint_saver(5).restore(path); }

    // model_handle
    double learning_rate() const override { return static_cast<double>(lr_.value()[0]); }
    void set_learning_rate(double lr) override { lr_.state().value[0] = static_cast<value_type>(lr); }
    std::string save_checkpoint(const std::string& dir, std::int64_t step, std::size_t keep = 5) override {
        return checkpoint_saver(keep).save(dir, step);
    }
    std::shared_ptr<void> snapshot_weights() const override { return detail::snapshot(weights_saver()); }
    void restore_weights(const std::shared_ptr<void>& snapshot) override { detail::restore(weights_saver(), snapshot); }
    std::int64_t iterations() const override { return iterations_; }

private:
    template <std::size_t K, class Outs, class Ys>
    static auto loss_part(const Outs& o, const Ys& y) {
        return mean(loss_t<K>::per_example(std::get<K>(o), std::get<K>(y)));
    }
    template <std::size_t K, class Outs, class Ys>
    static auto metrics_of(const Outs& o, const Ys& y) {
        const auto one = [&]<class Mt>(Mt*) {
            if constexpr (Mt::template applies_to<loss_t<K>>)
                return std::make_tuple(mean(Mt::template per_example<loss_t<K>>(std::get<K>(o), std::get<K>(y))));
            else return std::tuple<>();
        };
        return std::tuple_cat(one(static_cast<Metrics*>(nullptr))...);
    }
    template <class Outs, class Ys, std::size_t... K>
    static auto parts_and_metrics(const Outs& o, const Ys& y, const std::array<double, output_count>& w,
                                  std::index_sequence<K...>) {
        auto parts = std::make_tuple(loss_part<K>(o, y)...);
        auto total = [&] {
            if constexpr (output_count == 1) return std::get<0>(parts);
            else return (... + (scalar<value_type, device>(static_cast<value_type>(w[K])) * std::get<K>(parts)));
        }();
        if constexpr (graph_metrics) return std::make_tuple(total, parts, std::tuple_cat(metrics_of<K>(o, y)...));
        else return std::make_tuple(total, parts, std::tuple<>());
    }
    static auto build(const Model& m, const label_placeholders& y, const learning_rate_variable& lr, const Opt& o,
                      const std::array<double, output_count>& w) {
        auto train_outs = m.outputs(training);
        auto train = parts_and_metrics(train_outs, y, w, outs);
        auto step = [&] {
            if constexpr (detail::strategy_optimizer<Opt>) {
                auto parts = [&] {
                    if constexpr (output_count == 1) return std::tuple<>();
                    else return std::get<1>(train);
                }();
                return o.make(lr).minimize_reporting(std::get<0>(train), std::tuple_cat(parts, std::get<2>(train)));
            } else {
                return o.make(lr).minimize(std::get<0>(train));
            }
        }();
        auto eval_outs = m.outputs(inference);
        auto eval = parts_and_metrics(eval_outs, y, w, outs);
        using train_t = decltype(train);
        using eval_t = decltype(eval);
        return detail::graph_set<std::tuple_element_t<0, train_t>, decltype(step), std::tuple_element_t<1, train_t>,
                                 std::tuple_element_t<2, train_t>, decltype(eval_outs), std::tuple_element_t<0, eval_t>,
                                 std::tuple_element_t<1, eval_t>, std::tuple_element_t<2, eval_t>, decltype(train_outs)>{
            std::get<0>(train), std::move(step),    std::get<1>(train), std::get<2>(train), eval_outs,
            std::get<0>(eval),  std::get<1>(eval), std::get<2>(eval),  train_outs};
    }
    using graphs = decltype(build(std::declval<const Model&>(), std::declval<const label_placeholders&>(),
                                  std::declval<const learning_rate_variable&>(), std::declval<const Opt&>(),
                                  std::declval<const std::array<double, output_count>&>()));

    template <class E>
    static const auto& input_of(const E& e) {
        if constexpr (detail::tuple_like<E> && !detail::is_tensor_v<E>) {
            if constexpr (input_count == 1 && std::tuple_size_v<E> == 1) return std::get<0>(e);
            else if constexpr (std::tuple_size_v<E> == 2 && input_count != 2) return std::get<0>(e);
            else return e;
        } else {
            return e;
        }
    }
    template <class X>
    static double batch_of(const X& x) {
        return static_cast<double>(detail::item<0>(x).dims()[0]);
    }
    // The values fetched as a fetch list: total, [parts], items of `more`..., [extra...].
    template <class Total, class Parts, class More, class... Extra>
    static auto fetch_values(const Total& total, const Parts& parts, const More& more, const Extra&... extra) {
        return [&]<std::size_t... P, std::size_t... M>(std::index_sequence<P...>, std::index_sequence<M...>) {
            return fetch(total, std::get<P>(parts)..., std::get<M>(more)..., extra...);
        }(std::make_index_sequence<output_count == 1 ? 0 : output_count>{},
          std::make_index_sequence<std::tuple_size_v<More>>{});
    }
    template <class X, class F>
    auto run_with_inputs(const X& x, const F& f) {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return session_->run(f, feed(std::get<I>(model_.input_placeholders()), detail::item<I>(x))...);
        }(ins);
    }
    // run(feeds...) with the feeds of a batch: its inputs, then its labels
    template <class X, class Y, class Run>
    auto with_feeds(const X& x, const Y& y, const Run& run) {
        return [&]<std::size_t... I, std::size_t... K>(std::index_sequence<I...>, std::index_sequence<K...>) {
            return run(feed(std::get<I>(model_.input_placeholders()), detail::item<I>(x))...,
                       feed(std::get<K>(y_), detail::item<K>(y))...);
        }(ins, outs);
    }
    template <class X, class Y, class F>
    auto run_with(const X& x, const Y& y, const F& f) {
        return with_feeds(x, y, [&](const auto&... fd) { return session_->run(f, fd...); });
    }
    template <class R, std::size_t... I>
    static std::vector<double> values(const R& r, std::index_sequence<I...>) {
        return {static_cast<double>(std::get<I>(r).item())...};
    }
    // The losses of a run that fetched (total, [parts], outputs..., [step]),
    // then each output's metrics, computed from its fetched values.
    template <class R, class Y>
    static std::vector<double> with_metrics(const R& r, const Y& y) {
        constexpr std::size_t losses_fetched = output_count > 1 ? output_count + 1 : 1;
        std::vector<double> v = values(r, std::make_index_sequence<losses_fetched>{});
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            const auto add = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) {
                const auto one = [&]<class Mt>(Mt*) {
                    if constexpr (Mt::template applies_to<loss_t<k>>)
                        v.push_back(Mt::template batch_mean<loss_t<k>>(std::get<losses_fetched + k>(r), detail::item<k>(y)));
                };
                (one(static_cast<Metrics*>(nullptr)), ...);
            };
            (add(std::integral_constant<std::size_t, K>{}), ...);
        }(outs);
        return v;
    }
    template <class X, class Y>
    std::vector<double> train_step(const X& x, const Y& y) {
        if constexpr (detail::strategy_optimizer<Opt>) {
            auto& step = g_.step;
            if (!synced_) step.broadcast_variables(), synced_ = true;  // the chief's weights everywhere
            const double l = with_feeds(x, y, [&](const auto&... fd) { return static_cast<double>(step.run(*session_, fd...)); });
            ++iterations_;
            last_examples_ = step.examples();
            std::vector<double> v{l};
            v.insert(v.end(), step.metrics().begin(), step.metrics().end());
            return v;
        } else {
            auto r = run_with(x, y, fetch_values(g_.total, g_.parts, g_.outputs, g_.step));
            ++iterations_;
            last_examples_ = batch_of(x);
            return with_metrics(r, y);
        }
    }
    // a batch of no examples for every input and label (a task whose data ran out)
    template <class Ph>
    static auto empty_of() {
        dims d = shape_t<Ph>::value;
        for (std::size_t k = 0; k < d.rank; ++k)
            if (d.d[k] == dyn) d.d[k] = 0;
        return tensor<value_type_t<Ph>>(d);
    }
    template <class Phs>
    static auto empty_batch() {
        return []<std::size_t... I>(std::index_sequence<I...>) {
            return std::make_tuple(empty_of<std::tuple_element_t<I, Phs>>()...);
        }(std::make_index_sequence<std::tuple_size_v<Phs>>{});
    }
    template <class X, class Y>
    std::vector<double> test_step(const X& x, const Y& y) {
        if constexpr (eval_by_training_plan) {
            const auto f = fetch_values(g_.total, g_.parts, g_.outputs, g_.step);
            constexpr std::size_t kept = std::tuple_size_v<decltype(std::declval<session&>().run(f))> - 1;  // all but the step
            auto r = with_feeds(x, y, [&](const auto&... fd) { return session_->run_first(kept, f, fd...); });
            return with_metrics(r, y);
        } else if constexpr (graph_metrics) {
            auto r = run_with(x, y, fetch_values(g_.eval_total, g_.eval_parts, g_.eval_metrics));
            return values(r, std::make_index_sequence<std::tuple_size_v<decltype(r)>>{});
        } else {
            auto r = run_with(x, y, fetch_values(g_.eval_total, g_.eval_parts, g_.eval_outputs));
            return with_metrics(r, y);
        }
    }
    void name_values(logs& l, const std::vector<double>& v, const std::string& prefix) const {
        for (std::size_t i = 0; i < v.size(); ++i) l.set(prefix + names_[i], v[i]);
    }

    io::saver weights_saver() const {
        io::saver s;
        std::apply([&](const auto&... o) { (s.add(o), ...); }, outputs());
        return s;
    }
    io::saver checkpoint_saver(std::size_t keep) const {
        io::saver s = [&] {
            if constexpr (detail::strategy_optimizer<Opt>) {
                // the update holds the trained variables and the slots; the outputs the rest (moving statistics)
                io::saver u(io::saver_options{.max_to_keep = keep}, train_op().apply_op());
                std::apply([&](const auto&... o) { (u.add(o), ...); }, outputs());
                return u;
            } else {
                return io::saver(io::saver_options{.max_to_keep = keep}, train_op());
            }
        }();
        s.add(lr_);
        return s;
    }

    template <class DS, class VDS>
    history fit_impl(DS& ds, VDS* validation, fit_options o) {
        using iterator = decltype(std::begin(ds));
        using sentinel = decltype(std::end(ds));
        struct source final : detail::fit_source {
            compiled_model& m;
            DS& ds;
            VDS* validation;
            std::optional<iterator> it;
            std::optional<sentinel> end;
            bool advance = false;  // the last step read *it: the next one moves on first
            source(compiled_model& cm, DS& d, VDS* v) : m(cm), ds(d), validation(v) {}
            void begin_epoch() override {
                it.reset();
                end.reset();
                it.emplace(std::begin(ds));
                end.emplace(std::end(ds));
                advance = false;
            }
            bool mine = false;  // this task has a batch (with a strategy, a task whose data ran out steps with none)
            bool next() override {
                if (advance) ++*it;
                mine = *it != *end;
                advance = mine;
                if constexpr (detail::strategy_optimizer<Opt>) return m.g_.step.any_task(mine);
                else return mine;
            }
            void step(std::vector<double>& values, double& examples) override {
                if constexpr (detail::strategy_optimizer<Opt>) {
                    if (!mine) {
                        values = m.train_step(empty_batch<input_placeholders>(), empty_batch<label_placeholders>());
                        examples = m.last_examples_;
                        return;
                    }
                }
                auto&& e = **it;
                values = m.train_step(std::get<0>(e), std::get<1>(e));
                examples = m.last_examples_;
            }
            bool validate(logs& l) override {
                if constexpr (std::is_same_v<std::remove_const_t<VDS>, int>) {
                    (void)l;
                    return false;
                } else {
                    l = m.evaluate(*validation);
                    return true;
                }
            }
        } src(*this, ds, validation);
        return detail::fit_loop(*this, names_, detail::steps_of(ds), std::move(o), src);
    }

    Model model_;
    label_placeholders y_;
    learning_rate_variable lr_;
    Opt opt_;
    graphs g_;
    std::unique_ptr<session> session_;
    std::vector<std::string> names_;
    std::int64_t iterations_ = 0;
    double last_examples_ = 0;  // of the last training step (every task's with a strategy)
    bool synced_ = false;       // a strategy's first step has broadcast the chief's weights
};

/// Keras' model.compile(loss, optimizer, metrics): the compiled model.
template <class Model, class Loss, class Opt, class... Metrics>
compiled_model<Model, Loss, Opt, Metrics...> compile(const Model& m, Loss loss, Opt o, Metrics...) {
    return compiled_model<Model, Loss, Opt, Metrics...>(m, loss, o);
}

template <class Input, class... Specs>
template <class Loss, class Opt, class... Metrics>
auto sequential<Input, Specs...>::compile(Loss l, Opt o, Metrics... m) const {
    return models::compile(*this, l, o, m...);
}

template <class... P, class Build>
template <class Loss, class Opt, class... Metrics>
auto functional_model<inputs_t<P...>, Build>::compile(Loss l, Opt o, Metrics... m) const {
    return models::compile(*this, l, o, m...);
}

}  // namespace typeflow::models

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/models/impl/model.ipp>
#endif
