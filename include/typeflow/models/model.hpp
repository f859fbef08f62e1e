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
#include <chrono>
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
#include <typeflow/models/sequential.hpp>
#include <typeflow/runtime/feed.hpp>
#include <typeflow/runtime/session.hpp>

namespace typeflow::models {

/// What fit() returns: every epoch's logs, by name (Keras' History.history).
class history {
public:
    void append(const logs& l) {
        for (auto& [k, v] : l.items()) {
            auto* s = find(k);
            if (!s) {
                values_.emplace_back(k, std::vector<double>(static_cast<std::size_t>(epochs_), std::nan("")));
                s = &values_.back().second;
            }
            s->push_back(v);
        }
        ++epochs_;
        for (auto& [k, s] : values_)
            if (s.size() < static_cast<std::size_t>(epochs_)) s.push_back(std::nan(""));
    }
    /// The values of `name`, one per epoch; a tf::error when none was logged.
    const std::vector<double>& operator[](const std::string& name) const {
        for (auto& [k, s] : values_)
            if (k == name) return s;
        throw typeflow::error("history: nothing was logged as '" + name + "'");
    }
    /// Epochs run.
    int epochs() const noexcept { return epochs_; }
    const std::vector<std::pair<std::string, std::vector<double>>>& values() const noexcept { return values_; }

private:
    std::vector<double>* find(const std::string& name) {
        for (auto& [k, s] : values_)
            if (k == name) return &s;
        return nullptr;
    }
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
    void add(const std::vector<double>& v, double n) {
        if (sum.empty()) sum.assign(v.size(), 0.0);
        for (std::size_t i = 0; i < v.size(); ++i) sum[i] += v[i] * n;
        count += n;
    }
    double mean(std::size_t i) const { return count > 0 ? sum[i] / count : std::nan(""); }
};
}  // namespace detail

/// A model with its loss, optimizer and metrics (see the file comment).
/// Copies share the model's variables but not the session.
template <class Model, class Loss, class Opt, class... Metrics>
class compiled_model : public model_handle {
public:
    using model_type = Model;
    using value_type = typename Model::value_type;
    using device = typename Model::device;
    using label_type = typename Loss::template label_type<value_type>;
    using input_placeholder = typename Model::input_placeholder;
    /// The labels' extents, the batch axis first.
    static constexpr dims label_dims = Loss::label_dims(Model::output_dims);
    using label_placeholder = placeholder<"labels", label_type, shape_from_dims<label_dims>, device>;
    /// The optimizer's learning rate, a variable that checkpoints keep.
    using learning_rate_variable = non_trainable_variable<"learning_rate", value_type, shape<>, device>;

    explicit compiled_model(Model m, Opt o = {}, session_options so = {})
        : model_(std::move(m)), lr_(init::constant{o.learning_rate}), opt_(o),
          g_(build(model_, x_, y_, lr_, opt_)), session_(std::make_unique<session>(so)) {}

    /// The model (its layers and variables).
    const Model& model() const noexcept { return model_; }
    /// The placeholders the graphs read: inputs and labels.
    const input_placeholder& input() const noexcept { return x_; }
    const label_placeholder& labels() const noexcept { return y_; }
    /// The training graph's loss, its update op and the inference output.
    const auto& loss() const noexcept { return std::get<0>(g_); }
    const auto& train_op() const noexcept { return std::get<1>(g_); }
    const auto& output() const noexcept { return std::get<3>(g_); }
    /// Runs the graphs on n threads from now on (0: every hardware thread).
    void set_threads(int n) { session_ = std::make_unique<session>(session_options{.threads = n}); }

    /// One training step on a batch; returns its loss and metrics.
    logs train_on_batch(const tensor<value_type>& x, const tensor<label_type>& y) {
        logs l;
        const std::vector<double> v = train_step(x, y);
        name_values(l, v, "");
        return l;
    }
    /// Loss and metrics of a batch in inference mode (no update).
    logs test_on_batch(const tensor<value_type>& x, const tensor<label_type>& y) {
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

    /// The mean loss and metrics over ds in inference mode.
    template <class DS>
    logs evaluate(DS&& ds, const callback_list& callbacks = {}) {
        logs l;
        for (auto& c : callbacks) c->model = this, c->on_test_begin(l);
        detail::running_means r;
        for (auto&& e : ds) {
            const auto& x = std::get<0>(e);
            r.add(test_step(x, std::get<1>(e)), static_cast<double>(x.dims()[0]));
        }
        for (std::size_t i = 0; i < 1 + sizeof...(Metrics); ++i) set_value(l, i, r.mean(i), "");
        for (auto& c : callbacks) c->on_test_end(l);
        return l;
    }

    /// The model's output (inference mode) for a batch.
    tensor<value_type> predict(const tensor<value_type>& x) { return session_->run(output(), feed(x_, x)); }
    /// The outputs for every element of ds, stacked along the batch axis.
    template <class DS>
        requires(!std::is_same_v<std::remove_cvref_t<DS>, tensor<value_type>>)
    tensor<value_type> predict(DS&& ds) {
        std::vector<tensor<value_type>> parts;
        index_t rows = 0;
        for (auto&& e : ds) {
            parts.push_back(predict(input_of(e)));
            rows += parts.back().dims()[0];
        }
        dims d = Model::output_dims;
        d.d[0] = rows;
        tensor<value_type> out(d);
        value_type* p = out.data();
        for (auto& t : parts) p = std::copy(t.data(), t.data() + t.size(), p);
        return out;
    }

    /// Writes the model's weights (not the optimizer's state) to one file.
    void save_weights(const std::string& path) { io::saver(output()).write(path); }
    /// Loads the model's weights from a file of save_weights or a checkpoint
    /// of save_checkpoint / model_checkpoint (whose optimizer state is left
    /// aside). Every weight must be there; on any error nothing changes.
    void load_weights(const std::string& path) {
        io::saver(output()).restore(path, io::restore_options{.allow_unused = true});
    }
    /// Restores weights, optimizer state and learning rate from a checkpoint
    /// of save_checkpoint (to resume training).
    void load_checkpoint(const std::string& path) { checkpoint_saver(5).restore(path); }

    // model_handle
    double learning_rate() const override { return static_cast<double>(lr_.value()[0]); }
    void set_learning_rate(double lr) override { lr_.value()[0] = static_cast<value_type>(lr); }
    std::string save_checkpoint(const std::string& dir, std::int64_t step, std::size_t keep = 5) override {
        return checkpoint_saver(keep).save(dir, step);
    }
    std::shared_ptr<void> snapshot_weights() const override {
        auto s = std::make_shared<std::vector<std::vector<value_type>>>();
        model_.for_each_variable([&](const auto& v) {
            s->emplace_back(v.value().data(), v.value().data() + v.value().size());
        });
        return s;
    }
    void restore_weights(const std::shared_ptr<void>& snapshot) override {
        const auto& s = *static_cast<const std::vector<std::vector<value_type>>*>(snapshot.get());
        std::size_t i = 0;
        model_.for_each_variable([&](const auto& v) {
            auto& t = v.state().value;
            std::copy(s[i].begin(), s[i].end(), t.data());
            ++i;
        });
    }
    std::int64_t iterations() const override { return iterations_; }

private:
    template <class X, class Y>
    static auto build(const Model& m, const X& x, const Y& y, const learning_rate_variable& lr, const Opt& o) {
        auto out = m(x, training);
        auto loss = mean(Loss::per_example(out, y));
        auto step = o.make(lr).minimize(loss);
        auto train_metrics = std::make_tuple(mean(Metrics::template per_example<Loss>(out, y))...);
        auto eval_out = m(x, inference);
        auto eval_loss = mean(Loss::per_example(eval_out, y));
        auto eval_metrics = std::make_tuple(mean(Metrics::template per_example<Loss>(eval_out, y))...);
        return std::make_tuple(loss, step, train_metrics, eval_out, eval_loss, eval_metrics);
    }
    using graphs = decltype(build(std::declval<const Model&>(), std::declval<const input_placeholder&>(),
                                  std::declval<const label_placeholder&>(),
                                  std::declval<const learning_rate_variable&>(), std::declval<const Opt&>()));

    template <class E>
    static const auto& input_of(const E& e) {
        if constexpr (requires { std::get<0>(e); }) return std::get<0>(e);
        else return e;
    }

    std::vector<double> train_step(const tensor<value_type>& x, const tensor<label_type>& y) {
        auto r = std::apply(
            [&](const auto&... m) { return session_->run(fetch(std::get<0>(g_), m..., std::get<1>(g_)), feed(x_, x), feed(y_, y)); },
            std::get<2>(g_));
        ++iterations_;
        return values(r, std::make_index_sequence<1 + sizeof...(Metrics)>{});
    }
    std::vector<double> test_step(const tensor<value_type>& x, const tensor<label_type>& y) {
        auto r = std::apply([&](const auto&... m) { return session_->run(fetch(std::get<4>(g_), m...), feed(x_, x), feed(y_, y)); },
                            std::get<5>(g_));
        return values(r, std::make_index_sequence<1 + sizeof...(Metrics)>{});
    }
    template <class R, std::size_t... I>
    static std::vector<double> values(const R& r, std::index_sequence<I...>) {
        return {static_cast<double>(std::get<I>(r).item())...};
    }
    static void set_value(logs& l, std::size_t i, double v, const std::string& prefix) {
        static constexpr std::string_view names[] = {"loss", Metrics::name...};
        l.set(prefix + std::string(names[i]), v);
    }
    static void name_values(logs& l, const std::vector<double>& v, const std::string& prefix) {
        for (std::size_t i = 0; i < v.size(); ++i) set_value(l, i, v[i], prefix);
    }

    io::saver checkpoint_saver(std::size_t keep) const {
        io::saver s(io::saver_options{.max_to_keep = keep}, train_op());
        s.add(lr_);
        return s;
    }

    template <class DS, class VDS>
    history fit_impl(DS& ds, VDS* validation, fit_options o) {
        history h;
        progress_bar bar(o.out, o.verbose, detail::steps_of(ds));
        bar.set_epochs(o.epochs);
        callback_list cbs;
        cbs.push_back(std::shared_ptr<callback>(&bar, [](callback*) {}));
        for (auto& c : o.callbacks) cbs.push_back(c);
        for (auto& c : cbs) c->model = this;
        stop_training = false;
        logs l;
        for (auto& c : cbs) c->on_train_begin(l);
        for (int epoch = o.initial_epoch; epoch < o.epochs && !stop_training; ++epoch) {
            l.clear();
            for (auto& c : cbs) c->on_epoch_begin(epoch, l);
            detail::running_means r;
            int batch = 0;
            for (auto&& e : ds) {
                logs bl;
                for (auto& c : cbs) c->on_train_batch_begin(batch, bl);
                const auto& x = std::get<0>(e);
                r.add(train_step(x, std::get<1>(e)), static_cast<double>(x.dims()[0]));
                for (std::size_t i = 0; i < 1 + sizeof...(Metrics); ++i) set_value(bl, i, r.mean(i), "");
                for (auto& c : cbs) c->on_train_batch_end(batch, bl);
                ++batch;
                if (stop_training) break;
            }
            l.clear();
            for (std::size_t i = 0; i < 1 + sizeof...(Metrics); ++i) set_value(l, i, r.mean(i), "");
            if constexpr (!std::is_same_v<std::remove_const_t<VDS>, int>) {
                const logs v = evaluate(*validation);
                for (auto& [k, x] : v.items()) l.set("val_" + k, x);
            }
            for (auto& c : cbs) c->on_epoch_end(epoch, l);
            h.append(l);
        }
        for (auto& c : cbs) c->on_train_end(l);
        for (auto& c : cbs) c->model = nullptr;
        return h;
    }

    Model model_;
    input_placeholder x_;
    label_placeholder y_;
    learning_rate_variable lr_;
    Opt opt_;
    graphs g_;
    std::unique_ptr<session> session_;
    std::int64_t iterations_ = 0;
};

/// Keras' model.compile(loss, optimizer, metrics): the compiled model.
template <class Model, class Loss, class Opt, class... Metrics>
compiled_model<Model, Loss, Opt, Metrics...> compile(const Model& m, Loss, Opt o, Metrics...) {
    return compiled_model<Model, Loss, Opt, Metrics...>(m, o);
}

template <class Input, class... Specs>
template <class Loss, class Opt, class... Metrics>
auto sequential<Input, Specs...>::compile(Loss l, Opt o, Metrics... m) const {
    return models::compile(*this, l, o, m...);
}

}  // namespace typeflow::models
